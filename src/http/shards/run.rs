//! How a request reaches the instance that leads its shard in a sharded
//! group (SQS's by their queue's shard, SNS's on the first shard): run here when this instance serves the shard, else sent
//! on to the leader (`forward.rs`), waiting out a shard that is moving
//! from one instance to another.

use std::time::Instant;

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;

use super::forward;
use crate::api::{self, Route};
use crate::error::{ErrorCode, SqsError};
use crate::http::call::{Output, Protocol, answer_error, not_serving, run};
use crate::http::intake::admission::Admitted;
use crate::http::intake::authorization::Caller;
use crate::http::shards::ShardFront;
use crate::http::state::AppState;

/// What became of a request in a sharded group.
pub(in crate::http) enum Handled {
    /// It ran here.
    Ran(Result<Output, SqsError>),
    /// It was sent on; this is the leader's answer, or ours when the
    /// leader could not be reached.
    Forwarded(Response),
}

/// In a sharded group: runs the request if this instance serves its
/// queue's shard, else sends it on to that shard's leader. A request that
/// was forwarded to us is never sent on again. While the shard has no
/// leader that answers (it is moving: released by one instance, not yet
/// taken by the next), the request waits for one, polling, for up to
/// `shard_wait` (about two lock-retry intervals) before it gets a 503, so
/// that a hand-off costs clients no error.
pub(in crate::http) async fn run_or_forward(
    state: &AppState,
    parts: &Parts,
    wire: Protocol,
    admitted: Admitted,
    caller: Option<&Caller>,
) -> Handled {
    let Admitted {
        action, input, body, ..
    } = admitted;
    let ctx = state.context(&parts.uri, &parts.headers, caller);
    let shard = match api::route(&ctx, action, &input) {
        Route::Here => state.first_shard(),
        Route::Queue(key) => {
            match on_leader(state, state.shard_of(&key), parts, &body, wire, action.name()).await {
                Leader::Here(shard) => shard,
                Leader::Answered(response) => return Handled::Forwarded(response),
                Leader::NotServing(error) => return Handled::Ran(Err(error)),
            }
        }
    };
    Handled::Ran(run(&shard.api, &ctx, wire, action, input).await)
}

/// Where a request for `shard` is answered.
pub(in crate::http) enum Leader<'a> {
    /// This instance serves the shard: run it here.
    Here(&'a ShardFront),
    /// The leader's answer, or ours when the leader could not be reached.
    Answered(Response),
    /// Nobody serves the shard (or the request was forwarded to us and we
    /// do not): a 503.
    NotServing(SqsError),
}

/// Finds the instance that leads `shard` for a request (`action` names it
/// in errors): this one, or the leader it is sent on to (a request that
/// was forwarded to us is never sent on again). While the shard has no
/// leader that answers (it is moving: released by one instance, not yet
/// taken by the next), the request waits for one, polling, for up to
/// `shard_wait`, so that a hand-off costs clients no error.
pub(in crate::http) async fn on_leader<'a>(
    state: &AppState,
    shard: &'a ShardFront,
    parts: &Parts,
    body: &Bytes,
    wire: Protocol,
    action: &str,
) -> Leader<'a> {
    let deadline = Instant::now() + state.forwarding.shard_wait;
    loop {
        if shard.leadership.is_serving() {
            return Leader::Here(shard);
        }
        if parts.headers.contains_key(forward::FORWARDED) {
            return Leader::NotServing(not_serving(state, &shard.leadership));
        }
        let forwarded = forward_to_leader(state, shard, parts, body.clone()).await;
        match forwarded {
            Forwarded::Answered(response) => return Leader::Answered(response),
            pending if Instant::now() >= deadline => return pending.into_leader(state, shard, wire, action),
            _ => tokio::time::sleep(SHARD_POLL).await,
        }
    }
}

/// How often a request waiting for a moving shard looks for its leader.
const SHARD_POLL: std::time::Duration = std::time::Duration::from_millis(25);

/// What one try at sending a request on to its shard's leader gave.
enum Forwarded {
    /// The leader's answer (not a 503).
    Answered(Response),
    /// The instance named as leader answered 503: it no longer serves the
    /// shard, or not yet.
    Unavailable(Response),
    /// The leader could not be reached.
    Unreachable { target: String, error: String },
    /// No instance holds the shard's lock.
    NoLeader,
}

impl Forwarded {
    /// The answer once the wait for a leader is over.
    fn into_leader<'a>(
        self,
        state: &AppState,
        shard: &ShardFront,
        wire: Protocol,
        action: &str,
    ) -> Leader<'a> {
        match self {
            Forwarded::Answered(response) | Forwarded::Unavailable(response) => Leader::Answered(response),
            Forwarded::Unreachable { target, error } => {
                tracing::debug!(%error, shard = shard.leadership.shard(), "could not forward a request");
                let error = SqsError::new(
                    ErrorCode::ServiceUnavailable,
                    format!(
                        "The queue's shard ({}) is led by the instance at {target}, which could not be reached ({error}). \
                         Retry: another instance takes the shard over if that one is gone.",
                        shard.leadership.shard()
                    ),
                );
                let request_id = crate::queue::random::uuid().to_string();
                Leader::Answered(answer_error(state, wire, &request_id, action, &error))
            }
            Forwarded::NoLeader => Leader::NotServing(not_serving(state, &shard.leadership)),
        }
    }
}

/// Sends the request on to its shard's leader. The leader this instance
/// last saw may be unknown, gone, or handing the shard off (it answers
/// 503): then the lock in Redis is read, and the request sent once more if
/// it names another leader.
async fn forward_to_leader(state: &AppState, shard: &ShardFront, parts: &Parts, body: Bytes) -> Forwarded {
    let mut url = shard.leadership.leader_url();
    let mut last = Forwarded::NoLeader;
    for attempt in 0..2 {
        if attempt == 1 || url.is_none() {
            let current = shard.look_up_leader().await;
            if attempt == 1 && current == url {
                break;
            }
            url = current;
        }
        let Some(target) = &url else { break };
        last = match state
            .forwarding
            .forwarder
            .forward(target, parts, body.clone(), &state.metrics)
            .await
        {
            Ok(response) if response.status() != StatusCode::SERVICE_UNAVAILABLE => {
                return Forwarded::Answered(response);
            }
            Ok(response) => Forwarded::Unavailable(response),
            Err(error) => Forwarded::Unreachable {
                target: target.clone(),
                error: error.to_string(),
            },
        };
    }
    last
}
