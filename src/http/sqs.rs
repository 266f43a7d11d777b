//! An SQS call from request to answer: its wire format told, the request
//! admitted (`admission.rs`), run on its shard's API here or sent on to the
//! shard's leader (`shard_front.rs`), counted, and answered in the
//! request's format. An instance that does not serve answers a retryable
//! 503 that says where the leader is.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;

use super::AppState;
use super::admission::{Admitted, admit};
use super::shard_front::{Handled, run_or_forward};
use crate::api::{self, Action, Api, AsJson, AsTree, Input, RequestContext};
use crate::error::{ErrorCode, SqsError};
use crate::leader::Leadership;
use crate::protocol::{json, query};

/// The wire format of a request: JSON when it names its action in
/// X-Amz-Target or says it is JSON, the Query protocol otherwise.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    Json,
    Query,
}

impl Wire {
    pub(super) fn of(headers: &HeaderMap) -> Wire {
        if json::is_json(headers) {
            Wire::Json
        } else {
            Wire::Query
        }
    }
}

/// An SQS call. It takes the request whole: axum's `HeaderMap` extractor
/// would copy every header.
pub(super) async fn sqs(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let (method, uri, headers) = (&parts.method, &parts.uri, &parts.headers);
    let started = Instant::now();
    let request_id = crate::queue::random::uuid().to_string();
    let wire = Wire::of(headers);
    let (action, result) = match admit(&state, wire, method, uri, headers, body).await {
        Err(error) => (None, Err(error)),
        Ok(admitted) if state.sharded() => {
            let action = admitted.action;
            match run_or_forward(&state, &parts, wire, admitted).await {
                Handled::Ran(result) => (Some(action), result.map(|output| (action, output))),
                Handled::Forwarded(response) => return response,
            }
        }
        Ok(admitted) if !state.first_shard().leadership.is_serving() => (
            Some(admitted.action),
            Err(not_serving(&state, &state.first_shard().leadership)),
        ),
        Ok(Admitted { action, input, .. }) => {
            let ctx = state.context(uri, headers);
            let api = &state.first_shard().api;
            let result = match state.control_api {
                true => super::control::run_with_faults(&state, api, &ctx, wire, action, input).await,
                false => run(api, &ctx, wire, action, input).await,
            };
            (Some(action), result.map(|output| (action, output)))
        }
    };
    let label = action.map_or("unknown", Action::name);
    record(&state, label, &result, started);
    match result {
        Ok((action, output)) => answer(headers, &request_id, action, output),
        Err(error) => answer_error(&state, wire, &request_id, label, &error),
    }
}

/// An action's output, rendered for the wire format of its request.
pub(super) enum Output {
    /// The JSON protocol's body.
    Json(Vec<u8>),
    /// The tree the Query protocol's answer is written from.
    Tree(serde_json::Value),
}

/// Runs an action on one shard's API, its output rendered for `wire`.
pub(super) async fn run(
    api: &Api,
    ctx: &RequestContext,
    wire: Wire,
    action: Action,
    input: Input,
) -> Result<Output, SqsError> {
    match wire {
        Wire::Json => api::dispatch::<AsJson>(api, ctx, action, input)
            .await
            .map(Output::Json),
        Wire::Query => api::dispatch::<AsTree>(api, ctx, action, input)
            .await
            .map(Output::Tree),
    }
}

/// Counts a request and its time by label and outcome (ok, or the error code).
pub(super) fn record<T>(state: &AppState, label: &str, result: &Result<T, SqsError>, started: Instant) {
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
pub(super) fn answer(headers: &HeaderMap, request_id: &str, action: Action, output: Output) -> Response {
    match output {
        Output::Json(body) => json::success(request_id, body),
        Output::Tree(tree) if accepts_json(headers) => {
            json::success_tree(request_id, &query::as_json(request_id, action, tree))
        }
        Output::Tree(tree) => query::success(request_id, action, &tree),
    }
}

/// An error in the request's wire format.
pub(super) fn answer_error(
    state: &AppState,
    wire: Wire,
    request_id: &str,
    label: &str,
    error: &SqsError,
) -> Response {
    error_response(state, request_id, label, error, |request_id, error| match wire {
        Wire::Json => json::error(request_id, error),
        Wire::Query => query::error(request_id, error),
    })
}

/// An error rendered by `render`, with what every error answer gets: an
/// internal error is logged, and a 503 says when to retry and where the
/// leader is.
pub(super) fn error_response(
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
    if error.code == ErrorCode::ServiceUnavailable {
        add_leader_headers(state, &mut response);
    }
    response
}

pub(super) fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"))
}

/// Only a serving instance (the leader, until its deadline) takes queue
/// calls; in a sharded group, one that serves some shard.
pub(super) fn serving(state: &AppState) -> Result<(), SqsError> {
    match state.shards_served() {
        0 => Err(not_serving(state, &state.first_shard().leadership)),
        _ => Ok(()),
    }
}

/// The 503 of an instance that does not serve `leadership`'s shard; the
/// leader's URL, when known, goes in the message (and, unsharded, in
/// `x-ssq-leader`: see `add_leader_headers`).
pub(super) fn not_serving(state: &AppState, leadership: &Leadership) -> SqsError {
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
