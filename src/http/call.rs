//! What every surface that runs an SQS call shares: the protocol of the
//! request, the action run on a shard's API, the call counted, and the
//! answer in the request's protocol; and the retryable 503 of an instance
//! that does not serve, which says where the leader is.

use std::time::Instant;

use axum::http::{HeaderMap, header};
use axum::response::Response;

use super::AppState;
use super::audit::Answered;
use crate::api::{self, Action, Api, AsJson, AsTree, Input, RequestContext};
use crate::error::{ErrorCode, SqsError};
use crate::leader::Leadership;
use crate::protocol::{json, query};

/// The wire format of a request: JSON when it names its action in
/// X-Amz-Target or says it is JSON, the Query protocol otherwise.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    Json,
    Query,
}

impl Protocol {
    pub(crate) fn of(headers: &HeaderMap) -> Protocol {
        if json::is_json(headers) {
            Protocol::Json
        } else {
            Protocol::Query
        }
    }
}

/// An action's output, rendered for the wire format of its request.
pub(crate) enum Output {
    /// The JSON protocol's body.
    Json(Vec<u8>),
    /// The tree the Query protocol's answer is written from.
    Tree(serde_json::Value),
}

/// Runs an action on one shard's API, its output rendered for `wire`.
pub(crate) async fn run(
    api: &Api,
    ctx: &RequestContext,
    wire: Protocol,
    action: Action,
    input: Input,
) -> Result<Output, SqsError> {
    match wire {
        Protocol::Json => api::dispatch::<AsJson>(api, ctx, action, input)
            .await
            .map(Output::Json),
        Protocol::Query => api::dispatch::<AsTree>(api, ctx, action, input)
            .await
            .map(Output::Tree),
    }
}

/// Counts a request and its time by label and outcome (ok, or the error code).
pub(crate) fn record<T>(state: &AppState, label: &str, result: &Result<T, SqsError>, started: Instant) {
    let outcome = match result {
        Ok(_) => "ok",
        Err(error) => error.code.code(),
    };
    state.metrics.requests.with_label_values(&[label, outcome]).inc();
    state
        .metrics
        .request_seconds
        .with_label_values(&[label])
        .observe(started.elapsed().as_secs_f64());
}

/// A successful answer in the request's wire format. A Query call may ask
/// for its answer as JSON (AWS negotiates the content of Query GETs by
/// their Accept header).
pub(crate) fn answer(headers: &HeaderMap, request_id: &str, action: Action, output: Output) -> Response {
    match output {
        Output::Json(body) => json::success(request_id, body),
        Output::Tree(tree) if accepts_json(headers) => {
            json::success_tree(request_id, &query::as_json(request_id, action, tree))
        }
        Output::Tree(tree) => query::success(request_id, action, &tree),
    }
}

/// An error in the request's wire format.
pub(crate) fn answer_error(
    state: &AppState,
    wire: Protocol,
    request_id: &str,
    label: &str,
    error: &SqsError,
) -> Response {
    error_response(state, request_id, label, error, |request_id, error| match wire {
        Protocol::Json => json::error(request_id, error),
        Protocol::Query => query::error(request_id, error),
    })
}

/// An error rendered by `render`, with what every error answer gets: an
/// internal error is logged, and a 503 says when to retry and where the
/// leader is.
pub(crate) fn error_response(
    state: &AppState,
    request_id: &str,
    label: &str,
    error: &SqsError,
    render: impl FnOnce(&str, &SqsError) -> Response,
) -> Response {
    if error.code == ErrorCode::InternalError {
        tracing::error!(%request_id, action = label, %error, "internal error");
    }
    let mut response = render(request_id, error);
    // For the audit trail: the error's code, and the action when the label
    // names one (not a refusal's placeholder).
    if state.audit.is_some() {
        let action = Action::from_name(label);
        response.extensions_mut().insert(Answered {
            action: action.map(Action::name),
            permission: action.map(Action::policy_name),
            code: error.code.code(),
        });
    }
    if error.code == ErrorCode::ServiceUnavailable {
        add_leader_headers(state, &mut response);
    }
    response
}

pub(crate) fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"))
}

/// Only a serving instance (the leader, until its deadline) takes queue
/// calls; in a sharded group, one that serves some shard.
pub(crate) fn serving(state: &AppState) -> Result<(), SqsError> {
    match state.shards_served() {
        0 => Err(not_serving(state, &state.first_shard().leadership)),
        _ => Ok(()),
    }
}

/// The 503 of an instance that does not serve `leadership`'s shard; the
/// leader's URL, when known, goes in the message (and, unsharded, in
/// `x-ssq-leader`: see `add_leader_headers`).
pub(crate) fn not_serving(state: &AppState, leadership: &Leadership) -> SqsError {
    let leader = match leadership.leader_url() {
        Some(url) => format!(" The leader is at {url}."),
        None => String::new(),
    };
    let message = if state.sharded() {
        format!(
            "No instance serves shard {} of this queue right now (it is moving to another instance). Retry.{leader}",
            leadership.shard()
        )
    } else {
        format!(
            "This ssq instance ({}, {}) is not serving queue calls: only the leader does. Retry; a load \
             balancer checking /ready sends requests to the leader.{leader}",
            leadership.node_id(),
            leadership.role().name(),
        )
    };
    SqsError::new(ErrorCode::ServiceUnavailable, message)
}

/// Tells a client of an instance that does not serve when to retry and,
/// in an unsharded group, where the leader is when known (a sharded group
/// has a leader per shard; the message names the one that matters).
fn add_leader_headers(state: &AppState, response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    if !state.sharded()
        && let Some(url) = state.first_shard().leadership.leader_url()
        && let Ok(value) = header::HeaderValue::from_str(&url)
    {
        headers.insert("x-ssq-leader", value);
    }
}
