//! Signing in to the operational endpoints with `--credentials`: HTTP Basic
//! authentication with an access key id and its secret, which the admin
//! page, its API, the snapshot export and `/status`'s details ask for. Only
//! a key with an admin grant signs in (the credentials file's `admin`:
//! `"all"` accounts, or its own `"account"`; every key of an `id:secret`
//! file, which has the one account), and sees and acts on what its grant
//! covers.
//!
//! Guessing is slowed ([`SignInGuard`]): after a few failed sign-ins from
//! one address, that address may try again only after a wait that doubles
//! with each failure (tries before it are refused unchecked, 429); and a
//! failed sign-in of a key id that many have failed for is answered only
//! after a like wait. The right key signs in at once from any other
//! address. Each failure is a 401 in the audit trail, each refused try a
//! 429.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;
use tokio::time::Instant;

use super::AppState;
use super::authorization::{Caller, source_of};

/// What a key's admin grant covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdminGrant {
    /// Every account, and the instance itself (the snapshot).
    All,
    /// The key's own account.
    Account,
}

/// Someone signed in to the admin page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admin {
    /// Sees and acts on every account's queues and topics; without
    /// `--credentials`, whoever reaches the page.
    OfAll,
    /// Sees and acts on one account's.
    OfAccount { key_id: String, account: String },
}

impl Admin {
    /// Whether the admin sees the queues and topics of `account`.
    pub(crate) fn sees(&self, account: &str) -> bool {
        match self {
            Admin::OfAll => true,
            Admin::OfAccount { account: own, .. } => own == account,
        }
    }

    /// Who the admin's calls are made as: an account's admin acts in its
    /// account, as its key would; an admin of all, as the instance.
    pub(crate) fn caller(&self) -> Option<Caller> {
        match self {
            Admin::OfAll => None,
            Admin::OfAccount { key_id, account } => Some(Caller {
                key_id: key_id.clone(),
                account: account.clone(),
                policy: None,
                max_queues: None,
            }),
        }
    }
}

/// An endpoint that needs an admin takes one: the request signs in, or is
/// answered with the sign-in prompt (or, while its address must wait, a
/// 429).
impl FromRequestParts<Arc<AppState>> for Admin {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<AppState>) -> Result<Admin, Response> {
        sign_in_as(state, &parts.headers, source_of(&parts.extensions)).await
    }
}

/// Who the request signs in as, if anyone may: without credentials
/// configured, anyone is an admin of all; with them, a key with an admin
/// grant, given as HTTP Basic authentication from `source`, as the guard
/// lets it try.
pub(crate) async fn sign_in_as(
    state: &AppState,
    headers: &HeaderMap,
    source: Option<IpAddr>,
) -> Result<Admin, Response> {
    let Some(credentials) = &state.credentials else {
        return Ok(Admin::OfAll);
    };
    let Some((key_id, secret)) = basic_credentials(headers.get(header::AUTHORIZATION)) else {
        return Err(sign_in());
    };
    if let Some(wait) = state.sign_ins.wait_of(source) {
        return Err(try_later(wait));
    }
    let keys = credentials.current();
    let admin = keys
        .signing_in(&key_id, &secret)
        .and_then(|key| match key.admin? {
            AdminGrant::All => Some(Admin::OfAll),
            AdminGrant::Account => Some(Admin::OfAccount {
                account: key.account.clone().unwrap_or_else(|| state.home.account.clone()),
                key_id: key_id.clone(),
            }),
        });
    match admin {
        Some(admin) => {
            state.sign_ins.succeeded(source);
            Ok(admin)
        }
        None => {
            let answer_after = state.sign_ins.failed(source, &key_id);
            tokio::time::sleep(answer_after).await;
            Err(sign_in())
        }
    }
}

/// The answer to a try the guard does not let through yet.
fn try_later(wait: Duration) -> Response {
    let seconds = wait.as_secs() + 1;
    let mut response = (
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        format!("Too many failed sign-ins from this address: try again in {seconds} s.\n"),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// Failed sign-ins that are free before the waits begin.
const FREE_FAILURES: u32 = 5;
/// The first wait, doubled with each failure after, up to the longest.
const FIRST_WAIT: Duration = Duration::from_millis(250);
const LONGEST_WAIT: Duration = Duration::from_secs(15);
/// A record is forgotten this long after its last failure.
const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);
/// The most addresses and key ids remembered each: beyond, those whose
/// waits are over go first, then the oldest.
const MAX_REMEMBERED: usize = 10_000;

/// Failed sign-ins by address and by key id, and the waits they earn.
#[derive(Default)]
pub struct SignInGuard {
    by_source: Mutex<HashMap<Source, Failures>>,
    by_key: Mutex<HashMap<String, Failures>>,
}

/// An address as the guard counts it: an IPv6 address by its /64, which
/// one host may hold whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    V4([u8; 4]),
    V6([u8; 8]),
    Unknown,
}

impl Source {
    fn of(address: Option<IpAddr>) -> Source {
        match address {
            Some(IpAddr::V4(v4)) => Source::V4(v4.octets()),
            Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => Source::V4(v4.octets()),
                None => {
                    let octets = v6.octets();
                    Source::V6(std::array::from_fn(|at| octets[at]))
                }
            },
            None => Source::Unknown,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    /// No try before this.
    until: Instant,
}

impl Failures {
    /// The wait after `count` failures.
    fn wait(count: u32) -> Duration {
        match count.checked_sub(FREE_FAILURES + 1) {
            None => Duration::ZERO,
            Some(doublings) => FIRST_WAIT
                .saturating_mul(1u32 << doublings.min(16))
                .min(LONGEST_WAIT),
        }
    }
}

impl SignInGuard {
    /// How long `source` must still wait before it may try again.
    fn wait_of(&self, source: Option<IpAddr>) -> Option<Duration> {
        let now = Instant::now();
        let by_source = self.by_source.lock().unwrap_or_else(|e| e.into_inner());
        let until = by_source.get(&Source::of(source))?.until;
        (until > now).then(|| until - now)
    }

    /// A sign-in from `source` succeeded: its address starts afresh (the
    /// key id's failures stand, which others may have made).
    fn succeeded(&self, source: Option<IpAddr>) {
        let mut by_source = self.by_source.lock().unwrap_or_else(|e| e.into_inner());
        by_source.remove(&Source::of(source));
    }

    /// A sign-in from `source` as `key_id` failed: both are counted; the
    /// address must wait its wait before it tries again, and the answer is
    /// held back the key id's wait.
    fn failed(&self, source: Option<IpAddr>, key_id: &str) -> Duration {
        let now = Instant::now();
        note(&self.by_source, Source::of(source), now);
        note(&self.by_key, key_id.chars().take(128).collect(), now).until - now
    }
}

/// Counts a failure of `who` at `now`, forgetting old records (and, past
/// the bound, the oldest), and returns the record.
fn note<K: std::hash::Hash + Eq + Clone>(
    records: &Mutex<HashMap<K, Failures>>,
    who: K,
    now: Instant,
) -> Failures {
    let mut records = records.lock().unwrap_or_else(|e| e.into_inner());
    if records.len() >= MAX_REMEMBERED && !records.contains_key(&who) {
        records
            .retain(|_, failures| now.duration_since(failures.last) < FORGET_AFTER && failures.until > now);
        if records.len() >= MAX_REMEMBERED
            && let Some(oldest) = records.iter().min_by_key(|(_, f)| f.last).map(|(k, _)| k.clone())
        {
            records.remove(&oldest);
        }
    }
    let fresh = Failures {
        count: 0,
        last: now,
        until: now,
    };
    let record = records.entry(who).or_insert(fresh);
    if now.duration_since(record.last) >= FORGET_AFTER {
        *record = fresh;
    }
    record.count += 1;
    record.last = now;
    record.until = now + Failures::wait(record.count);
    *record
}

/// The access key id and secret of an HTTP Basic `Authorization` header.
pub(crate) fn basic_credentials(authorization: Option<&HeaderValue>) -> Option<(String, String)> {
    let encoded = authorization?.to_str().ok()?.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let (key, secret) = String::from_utf8(decoded)
        .ok()?
        .split_once(':')
        .map(|(k, s)| (k.to_string(), s.to_string()))?;
    Some((key, secret))
}

/// The answer that makes a browser ask for the credentials.
pub(crate) fn sign_in() -> Response {
    let mut response = (
        axum::http::StatusCode::UNAUTHORIZED,
        "Sign in with a key of ssq's credentials (--credentials) that has an admin grant: the access key id as the user name, its secret as the password.\n",
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"ssq\", charset=\"UTF-8\""),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn an_address_that_keeps_failing_waits_ever_longer_and_others_do_not() {
        let guard = SignInGuard::default();
        let attacker = address("203.0.113.7");
        for _ in 0..FREE_FAILURES {
            assert_eq!(guard.wait_of(attacker), None);
            assert_eq!(
                guard.failed(attacker, "AKIDADMIN"),
                Duration::ZERO,
                "the first failures are free"
            );
        }
        let mut waits = Vec::new();
        for _ in 0..9 {
            guard.failed(attacker, "AKIDADMIN");
            let wait = guard.wait_of(attacker).expect("the address waits");
            assert!(
                guard.wait_of(attacker).is_some(),
                "a try within the wait is refused unchecked"
            );
            waits.push(wait.as_millis());
            tokio::time::advance(wait).await;
            assert_eq!(guard.wait_of(attacker), None, "and may try once it is over");
        }
        assert_eq!(
            waits,
            [250, 500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000]
        );
        // The same /64 is the same source; the right key from elsewhere is
        // not held up, and its success leaves the key's record standing.
        guard.failed(address("2001:db8::1"), "AKIDADMIN");
        for _ in 0..FREE_FAILURES {
            guard.failed(address("2001:db8::2"), "AKIDOTHER");
        }
        assert!(guard.wait_of(address("2001:db8::ffff")).is_some());
        assert_eq!(guard.wait_of(address("2001:db8:1::1")), None);
        assert_eq!(guard.wait_of(address("198.51.100.1")), None);
        guard.succeeded(address("198.51.100.1"));
        assert!(
            guard.failed(address("198.51.100.2"), "AKIDADMIN") >= LONGEST_WAIT,
            "a key id many failed for holds its failures' answers back"
        );
        // Fifteen quiet minutes, and the address starts afresh.
        tokio::time::advance(FORGET_AFTER).await;
        assert_eq!(guard.failed(attacker, "AKIDNEW"), Duration::ZERO);
        assert_eq!(guard.wait_of(attacker), None);
    }

    #[tokio::test(start_paused = true)]
    async fn what_it_remembers_is_bounded() {
        let guard = SignInGuard::default();
        for n in 0..(MAX_REMEMBERED as u32 + 50) {
            let source = Some(IpAddr::V4(std::net::Ipv4Addr::from(n)));
            guard.failed(source, &format!("AKID{n}"));
        }
        assert!(guard.by_source.lock().unwrap().len() <= MAX_REMEMBERED);
        assert!(guard.by_key.lock().unwrap().len() <= MAX_REMEMBERED);
    }
}
