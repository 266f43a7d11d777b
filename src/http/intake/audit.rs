//! The audit trail's layer, outside every route: it records each refused
//! request and each admin action in the trail (`audit_log.rs`), with the
//! key id it named, its account, and what its answer said (`http/call/`'s
//! [`Answered`]).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;

use super::audit_log::Line;
use crate::http::call::Answered;
use crate::http::state::AppState;

/// The layer every route is served behind (outside the host guard, so that
/// its refusals are recorded too).
pub(in crate::http) async fn audited(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(log) = &state.audit else {
        return next.run(request).await;
    };
    // Kept as they came (cheap clones): read into a line only if the
    // request is recorded.
    let method = request.method().clone();
    let uri = request.uri().clone();
    let authorization = request.headers().get(header::AUTHORIZATION).cloned();
    let target = request.headers().get("x-amz-target").cloned();
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(address)| *address);

    let response = next.run(request).await;
    let status = response.status().as_u16();
    // 429: a sign-in tried before its address's wait was over.
    let refused = status == 401 || status == 403 || status == 429;
    let resource = uri.path();
    let admin_action = resource.starts_with("/admin/api/")
        && (method == Method::POST || resource == "/admin/api/messages" || resource == "/admin/api/snapshot");
    if !refused && !admin_action {
        return response;
    }
    let target = target
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .and_then(|target| target.rsplit_once('.'))
        .map(|(_, action)| action.to_string());
    let answered = response.extensions().get::<Answered>();
    let action = answered
        .and_then(|a| a.action.map(str::to_string))
        .or(target)
        .unwrap_or_else(|| format!("{method} {resource}"));
    let key_id = key_id(authorization.as_ref(), uri.query());
    log.record(Line {
        time: crate::topic::envelope::timestamp(state.first_shard().api.service.now()),
        account: account_of(&state, key_id.as_deref()),
        key_id,
        action,
        permission: answered.and_then(|a| a.permission),
        resource: resource.to_string(),
        source: peer.map(|address| address.to_string()),
        outcome: match status {
            _ if refused => "refused",
            200..=399 => "allowed",
            _ => "failed",
        },
        status,
        code: answered.map(|a| a.code),
    });
    response
}

/// The account of the key a request names: the file's, or the instance's
/// own (also for keys it does not hold).
fn account_of(state: &AppState, key_id: Option<&str>) -> String {
    let named = state
        .credentials
        .as_ref()
        .zip(key_id)
        .and_then(|(credentials, id)| credentials.current().key(id).and_then(|key| key.account.clone()));
    named.unwrap_or_else(|| state.home.account.clone())
}

/// The access key id a request names: its signature's (header or presigned
/// query string), or the user name of an HTTP Basic sign-in. Not checked:
/// the trail records what was claimed, refused or not.
fn key_id(authorization: Option<&HeaderValue>, query: Option<&str>) -> Option<String> {
    super::sign_in::basic_credentials(authorization)
        .map(|(key, _)| key)
        .or_else(|| super::sigv4::signed_key_id(authorization, query))
}
