//! The control API for test suites (`--control-api`), under `/_ssq/`: what
//! people who run ssq under their tests need between tests, without
//! restarting it. `POST /_ssq/reset` deletes every queue with its
//! messages, move tasks and deduplication records, each as DeleteQueue does
//! (durable and, with Redis, fenced), so that the instance is as after a
//! fresh start. `/_ssq/faults` injects errors, latency and duplicate
//! deliveries into SQS calls (`call/faults.rs`). With `--clock virtual`,
//! `POST /_ssq/clock` moves time
//! (`{"advance_seconds": N}`) and wakes every long poll to look again;
//! `GET /_ssq/clock` says what time the queues see. Off by default; refused
//! at start with `--credentials` (these requests are not signed) and with
//! `--shards` (`node/mod.rs`).
//! The host and origin guard (`intake/host_guard.rs`) keeps web pages away from it.

pub(crate) mod state;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::error::SqsError;
use crate::http::call::faults::Rule;
use crate::http::call::serving;
use crate::http::state::AppState;

pub(in crate::http) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/_ssq/reset", post(reset))
        .route("/_ssq/clock", get(clock).post(move_clock))
        .route(
            "/_ssq/faults",
            get(list_faults).post(add_faults).delete(clear_faults),
        )
}

/// `POST /_ssq/faults` with a rule or a list of rules: all added, or none
/// (400 naming what is wrong); answers `{"rules": N}`, the rules in force.
async fn add_faults(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Rules {
        One(Rule),
        Many(Vec<Rule>),
    }
    let rules = match serde_json::from_slice::<Rules>(&body) {
        Ok(Rules::One(rule)) => vec![rule],
        Ok(Rules::Many(rules)) => rules,
        Err(error) => {
            return error_json(&SqsError::invalid_parameter(format!(
                "The body is no fault rule: {error}."
            )));
        }
    };
    match state.control.faults.add(rules) {
        Ok(in_force) => json(StatusCode::OK, serde_json::json!({ "rules": in_force })),
        Err(error) => error_json(&error),
    }
}

/// `GET /_ssq/faults`: the rules in force, with the counts they have left.
async fn list_faults(State(state): State<Arc<AppState>>) -> Response {
    json(
        StatusCode::OK,
        serde_json::json!({ "rules": state.control.faults.list() }),
    )
}

/// `DELETE /_ssq/faults`: no rule left.
async fn clear_faults(State(state): State<Arc<AppState>>) -> Response {
    state.control.faults.clear();
    json(StatusCode::OK, serde_json::json!({ "rules": 0 }))
}

/// The furthest one call moves the clock: ten years.
const MAX_ADVANCE_SECONDS: f64 = 10.0 * 365.0 * 86_400.0;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Advance {
    advance_seconds: f64,
}

/// `GET /_ssq/clock`: `{"virtual": bool, "now_millis": N}`, the time the
/// queues see (the one in SentTimestamp and the other timestamps).
async fn clock(State(state): State<Arc<AppState>>) -> Response {
    clock_json(&state)
}

fn clock_json(state: &AppState) -> Response {
    let now = state.first_shard().api.service.now();
    json(
        StatusCode::OK,
        serde_json::json!({ "virtual": state.control.virtual_clock.is_some(), "now_millis": now }),
    )
}

/// `POST /_ssq/clock` with `{"advance_seconds": N}`: moves the virtual clock
/// N seconds (a fraction allowed) and wakes every long poll, so that one
/// waiting on a message that turned visible returns at once.
async fn move_clock(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let Some(virtual_clock) = &state.control.virtual_clock else {
        return error_json(&SqsError::invalid_parameter(
            "The clock is the system's: start ssq with --clock virtual to move it.",
        ));
    };
    let advance = match serde_json::from_slice::<Advance>(&body) {
        Ok(Advance { advance_seconds }) if (0.0..=MAX_ADVANCE_SECONDS).contains(&advance_seconds) => {
            advance_seconds
        }
        _ => {
            return error_json(&SqsError::invalid_parameter(format!(
                "The body must be {{\"advance_seconds\": N}}, N from 0 to {MAX_ADVANCE_SECONDS}."
            )));
        }
    };
    virtual_clock.advance((advance * 1000.0).round() as u64);
    for shard in &state.shards {
        shard.api.service.wake_long_polls();
    }
    clock_json(&state)
}

/// `POST /_ssq/reset`: `{"queues_deleted": N, "topics_deleted": M}`. The
/// SNS signing key stays: it is the instance's, not a test's.
async fn reset(State(state): State<Arc<AppState>>) -> Response {
    if let Err(error) = serving(&state) {
        return error_json(&error);
    }
    let (mut deleted, mut topics_deleted) = (0, 0);
    for shard in state.shards.iter().filter(|shard| shard.leadership.is_serving()) {
        let service = &shard.api.service;
        let topics = service
            .change_topics(|topics| Ok(topics.delete_all()))
            .await
            .map_err(|error| SqsError::new(crate::error::ErrorCode::ServiceUnavailable, error.message));
        match (topics, service.delete_all_queues().await) {
            (Ok(topics), Ok(count)) => {
                deleted += count;
                topics_deleted += topics;
            }
            (Err(error), _) | (_, Err(error)) => return error_json(&error),
        }
    }
    tracing::info!(
        queues_deleted = deleted,
        topics_deleted,
        "reset through the control API"
    );
    json(
        StatusCode::OK,
        serde_json::json!({ "queues_deleted": deleted, "topics_deleted": topics_deleted }),
    )
}

/// An error as the control API answers it: the SQS error's status, code and
/// message, as JSON.
fn error_json(error: &SqsError) -> Response {
    let status = StatusCode::from_u16(error.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json(
        status,
        serde_json::json!({ "error": error.code.code(), "message": error.message }),
    )
}

fn json(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
