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

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;

use super::authorization::{Caller, source_of};
use super::sigv4::AdminGrant;
use crate::http::state::AppState;

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
