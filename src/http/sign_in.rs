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
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|encoded| {
            base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .ok()
        })
        .and_then(|decoded| String::from_utf8(decoded).ok());
    given
        .as_deref()
        .and_then(|pair| pair.split_once(':'))
        .is_some_and(|(key, secret)| credentials.current().admits(key, secret))
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
