//! The host guard, in front of every route: a request that came by a name
//! ssq does not answer to, or from a page of another site, is refused
//! before any handler runs (`hosts.rs` says which names and why).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::hosts::check_host;
use crate::error::{ErrorCode, SqsError};
use crate::http::call::{Protocol, answer_error, is_query_get};
use crate::http::state::AppState;

/// Refuses a request that came by a name ssq does not answer to or from a
/// page of another site, or whose `Host` HTTP does not allow, before any
/// handler runs.
pub(in crate::http) async fn guard(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(bad) = check_host(&request) {
        tracing::warn!(uri = %request.uri(), %bad, "refused a request");
        return (
            StatusCode::BAD_REQUEST,
            format!("Bad request: {bad} (RFC 9112, section 3.2). Send one Host header: host[:port].\n"),
        )
            .into_response();
    }
    let path = request.uri().path();
    // Health checks come by container names and carry nothing to read.
    if path == "/health" || path == "/ready" || path == "/_localstack/health" {
        return next.run(request).await;
    }
    let headers = request.headers();
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let host = text(header::HOST.as_str());
    let refusal = if let Some(host) = host.filter(|host| !state.allowed_hosts.allows_host(host)) {
        Some(format!(
            "ssq does not answer to the host name in this request ({host:?}), so that no web page can reach it by \
             DNS rebinding. Use a loopback name or an IP address, or start ssq with --allowed-hosts naming this \
             host (or with --public-url or --advertise-url on it)."
        ))
    } else if let Some(origin) =
        text(header::ORIGIN.as_str()).filter(|o| !state.allowed_hosts.allows_origin(o, host))
    {
        Some(format!(
            "ssq does not take calls from pages of other sites (this one comes from {origin:?}). To call ssq from \
             a page of that site, start ssq with --allowed-hosts naming its host."
        ))
    } else if text("sec-fetch-site") == Some("cross-site") && !is_harmless_navigation(&request) {
        Some(
            "ssq does not take calls from pages of other sites (the browser marked this one cross-site). Open the \
             admin page from its own address instead."
                .to_string(),
        )
    } else {
        None
    };
    match refusal {
        None => next.run(request).await,
        Some(message) => refused(&state, request.method(), request.uri(), headers, message),
    }
}

/// Following a link to the admin page or one of its assets: a GET that
/// names no SQS action and reaches none of the APIs.
fn is_harmless_navigation(request: &Request) -> bool {
    let path = request.uri().path();
    request.method() == Method::GET
        && !is_query_get(request.uri())
        && !path.starts_with("/admin/api/")
        && !path.starts_with("/_aws/")
        && request
            .headers()
            .get("sec-fetch-mode")
            .is_some_and(|mode| mode == "navigate")
}

/// The refusal: SQS-shaped for an SQS call (JSON for the admin page's API,
/// which speaks the JSON protocol), text for the admin page, its assets and
/// the operational endpoints.
fn refused(
    state: &AppState,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    message: String,
) -> Response {
    tracing::warn!(%uri, %message, "refused a request");
    let path = uri.path();
    let wire = if path.starts_with("/admin/api/") {
        Protocol::Json
    } else if path.starts_with("/admin/")
        || (method == Method::GET && !is_query_get(uri) && !path.starts_with("/_aws/"))
    {
        return (StatusCode::FORBIDDEN, format!("{message}\n")).into_response();
    } else {
        Protocol::of(headers)
    };
    let request_id = crate::queue::random::uuid().to_string();
    answer_error(
        state,
        wire,
        &request_id,
        "refused",
        &SqsError::new(ErrorCode::AccessDenied, message),
    )
}
