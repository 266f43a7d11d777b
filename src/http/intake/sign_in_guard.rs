//! Guessing slowed at sign-in ([`SignInGuard`]): after a few failed
//! sign-ins from one address, that address may try again only after a wait
//! that doubles with each failure; and a failed sign-in of a key id that
//! many have failed for is answered only after a like wait. What it
//! remembers is bounded. `sign_in.rs` asks it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

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
    pub(super) fn wait_of(&self, source: Option<IpAddr>) -> Option<Duration> {
        let now = Instant::now();
        let by_source = self.by_source.lock().unwrap_or_else(|e| e.into_inner());
        let until = by_source.get(&Source::of(source))?.until;
        (until > now).then(|| until - now)
    }

    /// A sign-in from `source` succeeded: its address starts afresh (the
    /// key id's failures stand, which others may have made).
    pub(super) fn succeeded(&self, source: Option<IpAddr>) {
        let mut by_source = self.by_source.lock().unwrap_or_else(|e| e.into_inner());
        by_source.remove(&Source::of(source));
    }

    /// A sign-in from `source` as `key_id` failed: both are counted; the
    /// address must wait its wait before it tries again, and the answer is
    /// held back the key id's wait.
    pub(super) fn failed(&self, source: Option<IpAddr>, key_id: &str) -> Duration {
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
