//! The SQS surface: a call taken in by the front door (`front_door.rs`),
//! admitted (`intake/admission.rs`), checked against the caller's policy,
//! run on its shard's API here or, in a sharded group, sent on to the
//! shard's leader (`shards/`), counted, and answered in the request's
//! protocol (`call/`). An instance that does not serve answers a
//! retryable 503 that says where the leader is.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::http::request::Parts;
use axum::response::Response;

use super::call::{Output, Protocol, answer, answer_error, not_serving, record, run};
use crate::api::{Action, RequestContext};
use crate::error::SqsError;
use crate::http::intake::admission::{Admitted, admit};
use crate::http::intake::authorization::{Caller, CallerIdentity, source_of};
use crate::http::intake::request_body::BodyPermit;
use crate::http::shards::run::{Handled, run_or_forward};
use crate::http::state::AppState;

/// When a call arrived and the id its answer carries.
pub(crate) struct Arrived {
    started: Instant,
    request_id: String,
}

impl Arrived {
    pub(crate) fn now() -> Arrived {
        Arrived {
            started: Instant::now(),
            request_id: crate::queue::random::uuid().to_string(),
        }
    }
}

/// An SQS call that could not be taken in (signature, body), counted and
/// answered in the request's protocol.
pub(crate) fn refuse(
    state: &AppState,
    parts: &Parts,
    wire: Protocol,
    arrived: Arrived,
    error: SqsError,
) -> Response {
    finish(state, parts, wire, arrived, None, Err(error))
}

/// An SQS call taken in (`front_door.rs`): admitted, checked against the
/// caller's policy, run on its shard here or sent on to its leader.
pub(crate) async fn serve(
    state: &Arc<AppState>,
    parts: &Parts,
    wire: Protocol,
    arrived: Arrived,
    (body, permit, caller): (Bytes, BodyPermit, Option<Caller>),
) -> Response {
    let (uri, headers) = (&parts.uri, &parts.headers);
    let checked = admit(wire, uri, headers, body, permit).and_then(|admitted| {
        // A key with a policy: checked here, in the context the call then
        // runs in (on this instance).
        let ctx = match caller.as_ref().filter(|caller| caller.policy.is_some()) {
            Some(caller) => Some(authorize_sqs(state, parts, caller, &admitted)?),
            None => None,
        };
        Ok((admitted, ctx))
    });
    let (action, result) = match checked {
        Err(error) => (None, Err(error)),
        Ok((admitted, _)) if state.sharded() => {
            let action = admitted.action;
            match run_or_forward(state, parts, wire, admitted, caller.as_ref()).await {
                Handled::Ran(result) => (Some(action), result.map(|output| (action, output))),
                Handled::Forwarded(response) => return response,
            }
        }
        Ok((admitted, _)) if !state.first_shard().leadership.is_serving() => (
            Some(admitted.action),
            Err(not_serving(state, &state.first_shard().leadership)),
        ),
        Ok((Admitted { action, input, .. }, ctx)) => {
            let ctx = ctx.unwrap_or_else(|| state.context(uri, headers, caller.as_ref()));
            let api = &state.first_shard().api;
            let result = match state.control.enabled {
                true => {
                    crate::http::call::run_with_faults(&state.control.faults, api, &ctx, wire, action, input)
                        .await
                }
                false => run(api, &ctx, wire, action, input).await,
            };
            (Some(action), result.map(|output| (action, output)))
        }
    };
    finish(state, parts, wire, arrived, action, result)
}

/// Counts a call and answers it in its protocol.
fn finish(
    state: &AppState,
    parts: &Parts,
    wire: Protocol,
    arrived: Arrived,
    action: Option<Action>,
    result: Result<(Action, Output), SqsError>,
) -> Response {
    let label = action.map_or("unknown", Action::name);
    record(state, label, &result, arrived.started);
    match result {
        Ok((action, output)) => answer(&parts.headers, &arrived.request_id, action, output),
        Err(error) => answer_error(state, wire, &arrived.request_id, label, &error),
    }
}

/// The caller's policy over an SQS call: its action on the queue it names
/// (the ARN), or on `*` when it names none (ListQueues). (A queue of
/// another account is refused where its URL is read.) The call's context
/// is returned for the call to run in. A call that acts on the queue its
/// QueueUrl names and runs here (not in a sharded group, where it may go
/// on to another instance) is checked where the API reads that URL: its
/// context carries the policy, so its body is not read for it twice.
fn authorize_sqs(
    state: &AppState,
    parts: &Parts,
    caller: &Caller,
    admitted: &Admitted,
) -> Result<RequestContext, SqsError> {
    let mut ctx = state.context(&parts.uri, &parts.headers, Some(caller));
    let source = source_of(&parts.extensions);
    if admitted.action.on_queue() && !state.sharded() {
        ctx.identity = Some(Box::new(CallerIdentity {
            caller: caller.clone(),
            source,
            service: state.first_shard().api.service.clone(),
        }));
        return Ok(ctx);
    }
    let resource = match crate::api::route(&ctx, admitted.action, &admitted.input) {
        crate::api::Route::Queue(key) => ctx.queue_arn(&key),
        crate::api::Route::Here => "*".to_string(),
    };
    caller.authorize(
        &state.first_shard().api.service,
        source,
        admitted.action.policy_name(),
        &resource,
    )?;
    Ok(ctx)
}
