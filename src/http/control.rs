//! The control API for test suites (`--control-api`), under `/_ssq/`: what
//! people who run ssq under their tests need between tests, without
//! restarting it. `POST /_ssq/reset` deletes every queue with its
//! messages, move tasks and deduplication records, each as DeleteQueue does
//! (durable and, with Redis, fenced), so that the instance is as after a
//! fresh start. Off by default; refused at start with `--credentials`
//! (these requests are not signed) and with `--shards` (`node/mod.rs`).
//! The host and origin guard (`hosts.rs`) keeps web pages away from it.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use super::AppState;
use super::sqs::serving;
use crate::error::SqsError;

pub(super) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/_ssq/reset", post(reset))
}

/// `POST /_ssq/reset`: `{"queues_deleted": N}`.
async fn reset(State(state): State<Arc<AppState>>) -> Response {
    if let Err(error) = serving(&state) {
        return error_json(&error);
    }
    let mut deleted = 0;
    for shard in state.shards.iter().filter(|shard| shard.leadership.is_serving()) {
        match shard.api.service.delete_all_queues().await {
            Ok(count) => deleted += count,
            Err(error) => return error_json(&error),
        }
    }
    tracing::info!(queues_deleted = deleted, "reset through the control API");
    json(StatusCode::OK, serde_json::json!({ "queues_deleted": deleted }))
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
