//! What every surface that runs a call shares: the protocol of an SQS
//! request, the action run on a shard's API (with the faults the control
//! API's rules inject, `faults.rs`), the call counted, and the answer in
//! the request's protocol; the retryable 503 of an instance that does not
//! serve, which says where the leader is; and an SNS call run and answered
//! (`sns.rs`). Surfaces use it; it uses none of them.

pub(crate) mod faults;
pub(in crate::http) mod sns;

use std::time::Instant;

use axum::http::{HeaderMap, header};
use axum::response::Response;

use self::faults::Faults;
use crate::api::{self, Action, Api, AsJson, AsTree, Input, RequestContext, Route};
use crate::error::{ErrorCode, SqsError};
use crate::http::shards::ShardFront;
use crate::http::state::AppState;
use crate::leader::Leadership;
use crate::protocol::{json, query};
use crate::queue::ReceiptHandle;
use axum::http::Uri;

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

/// What an error answer tells the trail, as an extension of its response
/// (`call::error_response`, only while the trail is on): its code, and the
/// action when the request got as far as naming one. A success needs none:
/// the admin API's calls name theirs in `x-amz-target`.
#[derive(Debug, Clone)]
pub struct Answered {
    pub action: Option<&'static str>,
    /// The permission the action needs (`Action::policy_name`).
    pub permission: Option<&'static str>,
    pub code: &'static str,
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

/// The shard of `key`, if this instance serves it now.
pub(crate) fn serving_shard<'a>(state: &'a AppState, key: &str) -> Result<&'a ShardFront, SqsError> {
    let shard = state.shard_of(key);
    match shard.leadership.is_serving() {
        true => Ok(shard),
        false => Err(not_serving(state, &shard.leadership)),
    }
}

/// Whether a GET names an SQS action in its query string (a Query call).
pub(crate) fn is_query_get(uri: &Uri) -> bool {
    uri.query()
        .is_some_and(|q| q.split('&').any(|pair| pair.starts_with("Action=")))
}

/// Runs an SQS call as `run` does, with the fault a rule injects into it:
/// its latency first, then its error instead of the call, or the call and
/// then its first received message made visible again (a duplicate).
pub(in crate::http) async fn run_with_faults(
    faults: &Faults,
    api: &Api,
    ctx: &RequestContext,
    wire: Protocol,
    action: Action,
    input: Input,
) -> Result<Output, SqsError> {
    // Without rules, the call's queue is not read out of its body.
    if faults.is_empty() {
        return run(api, ctx, wire, action, input).await;
    }
    let queue = match crate::api::route(ctx, action, &input) {
        Route::Queue(key) => Some(key),
        Route::Here => None,
    };
    let Some(fault) = faults.take(action, queue.as_deref()) else {
        return run(api, ctx, wire, action, input).await;
    };
    tokio::time::sleep(fault.latency).await;
    if let Some(error) = fault.error {
        return Err(error);
    }
    let output = run(api, ctx, wire, action, input).await?;
    if let (true, Some(queue), Some(handle)) = (fault.duplicate, &queue, first_receipt_handle(&output)) {
        // Visible again at once: the next receive delivers it again. A
        // message already deleted or received again meanwhile is left be.
        let _ = api
            .service
            .with_queue(queue, |q, now| q.change_visibility(handle, 0, now))
            .await;
    }
    Ok(output)
}

/// The receipt handle of a ReceiveMessage answer's first message.
fn first_receipt_handle(output: &Output) -> Option<ReceiptHandle> {
    let parsed;
    let tree = match output {
        Output::Json(body) => {
            parsed = serde_json::from_slice::<serde_json::Value>(body).ok()?;
            &parsed
        }
        Output::Tree(tree) => tree,
    };
    let text = tree.get("Messages")?.get(0)?.get("ReceiptHandle")?.as_str()?;
    ReceiptHandle::decode(text).ok()
}
