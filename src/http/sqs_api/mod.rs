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
use super::authorization::{Caller, CallerIdentity, source_of};
use super::call::{Protocol, answer, answer_error, not_serving, record, run};
use crate::api::{Action, RequestContext};
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
            // A key with a policy: checked here, in the context the call
            // then runs in (on this instance).
            let ctx = match caller.as_ref().filter(|caller| caller.policy.is_some()) {
                Some(caller) => Some(authorize_sqs(&state, &parts, caller, &admitted)?),
                None => None,
            };
            Ok(Ok((admitted, caller, ctx)))
        });
    let (admitted, caller, ctx) = match read {
        Ok(Err((sns_body, caller))) => {
            if let Some(caller) = &caller
                && let Err(error) = super::sns_api::authorize(&state, &parts, caller, &sns_body)
            {
                return super::sns_api::refuse(&error);
            }
            return super::sns_api::serve(&state, &parts, sns_body, caller.as_ref()).await;
        }
        Ok(Ok((admitted, caller, ctx))) => (Ok(admitted), caller, ctx),
        Err(error) => (Err(error), None, None),
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
            let ctx = ctx.unwrap_or_else(|| state.context(uri, headers, caller.as_ref()));
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
    caller.authorize(state, source, admitted.action.policy_name(), &resource)?;
    Ok(ctx)
}
