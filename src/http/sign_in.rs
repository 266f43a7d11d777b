//! Signing in to the operational endpoints with `--credentials`: HTTP Basic
//! authentication with an access key id and its secret, which the admin
//! page, its API, the snapshot export and `/status`'s details ask for. Only
//! a key with an admin grant signs in (the credentials file's `admin`:
//! `"all"` accounts, or its own `"account"`; every key of an `id:secret`
//! file, which has the one account), and sees and acts on what its grant
//! covers.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;

use super::AppState;
use super::authorization::Caller;

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

/// Who the request signs in as, if anyone may: without credentials
/// configured, anyone is an admin of all; with them, a key with an admin
/// grant, given as HTTP Basic authentication.
pub(crate) fn signed_in(state: &AppState, headers: &HeaderMap) -> Option<Admin> {
    let Some(credentials) = &state.credentials else {
        return Some(Admin::OfAll);
    };
    let (key_id, secret) = basic_credentials(headers.get(header::AUTHORIZATION))?;
    let keys = credentials.current();
    let key = keys.signing_in(&key_id, &secret)?;
    match key.admin? {
        AdminGrant::All => Some(Admin::OfAll),
        AdminGrant::Account => Some(Admin::OfAccount {
            account: key.account.clone().unwrap_or_else(|| state.home.account.clone()),
            key_id,
        }),
    }
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
