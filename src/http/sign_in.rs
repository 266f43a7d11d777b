//! Signing in to the operational endpoints with `--credentials`: HTTP Basic
//! authentication with an access key id and its secret, which the admin
//! page, its API, the snapshot export and `/status`'s details ask for.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;

use super::AppState;

/// With credentials configured: whether the request gives one of them, as
/// HTTP Basic authentication.
pub(crate) fn signed_in(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(credentials) = &state.credentials else {
        return true;
    };
    basic_credentials(headers.get(header::AUTHORIZATION))
        .is_some_and(|(key, secret)| credentials.current().admits(&key, &secret))
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
        "Sign in with one of ssq's credentials (--credentials): the access key id as the user name, its secret as the password.\n",
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"ssq\", charset=\"UTF-8\""),
    );
    response
}
