//! The SQS surface: a call from request to answer, its protocol told, the
//! request admitted (`admission.rs`, checking signatures with `sigv4.rs`),
//! run on its shard's API here or, in a sharded group, sent on to the
//! shard's leader (`sharded.rs`, `forward.rs`), counted, and answered in the
//! request's protocol (`call.rs`). An instance that does not serve answers a retryable
//! 503 that says where the leader is.

mod admission;
pub(crate) mod forward;
pub(in crate::http) mod sharded;
pub mod sigv4;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::response::Response;

use self::admission::{Admitted, admit};
pub(in crate::http) use self::admission::{authenticate_and_read, read_request};
use self::sharded::{Handled, run_or_forward};
use super::AppState;
use super::authorization::{Caller, source_of};
use super::call::{Protocol, answer, answer_error, not_serving, record, run};
use crate::api::Action;
use crate::error::SqsError;

/// What the SQS surface keeps of its own.
pub struct SqsApiState {
    /// Sends requests on to the leader of their shard, in a sharded group.
    pub forwarder: forward::Forwarder,
    /// How long a request for a shard with no leader waits for one (in a
    /// sharded group): about two lock-retry intervals.
    pub shard_wait: std::time::Duration,
}

/// An SQS call. It takes the request whole: axum's `HeaderMap` extractor
/// would copy every header.
pub(crate) async fn sqs(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let (method, uri, headers) = (&parts.method, &parts.uri, &parts.headers);
    let started = Instant::now();
    let request_id = crate::queue::random::uuid().to_string();
    let wire = Protocol::of(headers);
    if super::sns_api::is_unsigned_link(&parts) {
        // Its parameters are in the URL; a body is never read.
        return super::sns_api::serve(&state, &parts, Default::default(), None).await;
    }
    let read = authenticate_and_read(&state, method, uri, headers, body)
        .await
        .and_then(|(body, permit, caller)| {
            if wire == Protocol::Query && super::sns_api::claims(&parts, &body) {
                return Ok(Err((body, caller)));
            }
            let admitted = admit(wire, uri, headers, body, permit)?;
            if let Some(caller) = caller.as_ref().filter(|caller| caller.policy.is_some()) {
                authorize_sqs(&state, &parts, caller, &admitted)?;
            }
            Ok(Ok((admitted, caller)))
        });
    let (admitted, caller) = match read {
        Ok(Err((sns_body, caller))) => {
            if let Some(caller) = &caller
                && let Err(error) = super::sns_api::authorize(&state, &parts, caller, &sns_body)
            {
                return super::sns_api::refuse(&error);
            }
            return super::sns_api::serve(&state, &parts, sns_body, caller.as_ref()).await;
        }
        Ok(Ok((admitted, caller))) => (Ok(admitted), caller),
        Err(error) => (Err(error), None),
    };
    let (action, result) = match admitted {
        Err(error) => (None, Err(error)),
        Ok(admitted) if state.sharded() => {
            let action = admitted.action;
            match run_or_forward(&state, &parts, wire, admitted, caller.as_ref()).await {
                Handled::Ran(result) => (Some(action), result.map(|output| (action, output))),
                Handled::Forwarded(response) => return response,
            }
        }
        Ok(admitted) if !state.first_shard().leadership.is_serving() => (
            Some(admitted.action),
            Err(not_serving(&state, &state.first_shard().leadership)),
        ),
        Ok(Admitted { action, input, .. }) => {
            let ctx = state.context(uri, headers, caller.as_ref());
            let api = &state.first_shard().api;
            let result = match state.control.enabled {
                true => super::control_api::run_with_faults(&state, api, &ctx, wire, action, input).await,
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

/// The caller's policy over an SQS call: its action on the queue it names
/// (the ARN), or on `*` when it names none (ListQueues). (A queue of
/// another account is refused where its URL is read.)
fn authorize_sqs(
    state: &AppState,
    parts: &Parts,
    caller: &Caller,
    admitted: &Admitted,
) -> Result<(), SqsError> {
    let ctx = state.context(&parts.uri, &parts.headers, Some(caller));
    let resource = match crate::api::route(&ctx, admitted.action, &admitted.input) {
        crate::api::Route::Queue(key) => ctx.queue_arn(&key),
        crate::api::Route::Here => "*".to_string(),
    };
    let action = format!("sqs:{}", admitted.action.name());
    caller.authorize(state, source_of(&parts.extensions), &action, &resource)
}
