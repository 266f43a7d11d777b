//! The operational endpoints: `GET /health` (the process runs), `/ready`
//! (it serves queue calls: what a load balancer checks), `/status` (who
//! leads) and `/metrics` (Prometheus text); LocalStack's health and its
//! `Ready.` line (`localstack.rs`); and `ssq --check-health`, their client
//! for a container's health check (`health_check.rs`).

pub mod health_check;
pub(in crate::http) mod localstack;

pub use self::localstack::{ReadyLine, announce_ready};

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http::shards::ShardFront;
use crate::http::state::{AppState, Storage, leader_json, shard_map_json, storage_json};
use crate::leader::Role;

pub(super) fn admin_routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .route("/ready", get(ready))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
}

/// `GET /ready`: 200 while [`readiness`] says so, else 503 with the reason.
async fn ready(State(state): State<Arc<AppState>>) -> Response {
    match readiness(&state) {
        Ok(()) => (StatusCode::OK, "ready\n").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")).into_response(),
    }
}

/// Whether this instance serves, or why not. Unsharded: while it is the
/// leader and serves. Sharded: while it can serve or forward, that is while
/// it is not shutting down and some shard has a leader, here or elsewhere,
/// once every shard has had one: an instance that said ready as soon as one
/// shard had a leader answered 503 for the others right after starting.
/// (After that a shard moving does not make it unready: its requests wait
/// for the new leader.) Either way not before the snapshot's and the
/// configuration file's queues are in place (`Service::preparing`).
pub(super) fn readiness(state: &AppState) -> Result<(), NotReady> {
    let first = &state.first_shard().leadership;
    let has_leader =
        |shard: &ShardFront| shard.leadership.is_serving() || shard.leadership.leader_url().is_some();
    let ready = match state.sharded() {
        false => first.is_serving(),
        true => {
            if !state.every_shard_led.load(std::sync::atomic::Ordering::Acquire)
                && state.shards.iter().all(has_leader)
            {
                state
                    .every_shard_led
                    .store(true, std::sync::atomic::Ordering::Release);
            }
            first.role() != Role::ShuttingDown
                && state.every_shard_led.load(std::sync::atomic::Ordering::Acquire)
                && state.shards.iter().any(has_leader)
        }
    };
    let preparing = state
        .shards
        .iter()
        .any(|shard| shard.leadership.is_serving() && shard.api.service.preparing());
    if ready && !preparing {
        Ok(())
    } else if preparing {
        Err(NotReady::Preparing)
    } else if state.sharded() {
        Err(match first.role() {
            Role::ShuttingDown => NotReady::ShuttingDown,
            _ if !state.every_shard_led.load(std::sync::atomic::Ordering::Acquire) => {
                NotReady::ShardsNotYetLed
            }
            _ => NotReady::NoShardLed,
        })
    } else {
        Err(NotReady::Role(first.role()))
    }
}

/// Why an instance does not serve, as `/ready` says it.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotReady {
    #[error("creating the queues of the snapshot and the configuration file")]
    Preparing,
    #[error("shutting down")]
    ShuttingDown,
    #[error("not every shard has had a leader this instance knows of yet")]
    ShardsNotYetLed,
    #[error("no shard has a leader this instance knows of")]
    NoShardLed,
    /// Unsharded: the instance's role (passive, shutting down, ...).
    #[error("{}", .0.name())]
    Role(Role),
}

/// With `--credentials`, the data directory's path is shown only to a
/// signed-in admin: `/status` answers anyone who reaches it (load
/// balancers, probes), and a path on the host is not theirs to read.
async fn status(State(state): State<Arc<AppState>>, request: axum::extract::Request) -> Response {
    let source = crate::http::intake::authorization::source_of(request.extensions());
    let admin = crate::http::intake::sign_in::sign_in_as(&state, request.headers(), source)
        .await
        .is_ok();
    let body = if state.sharded() {
        // A sharded instance has no one leader or epoch: each shard has its own.
        let led = state.shards_served();
        serde_json::json!({
            "node_id": state.node_id,
            "role": state.role_name(),
            "serving": led > 0,
            "shards_led": led,
            "sharding": shard_map_json(&state),
        })
    } else {
        let status = state.first_shard().leadership.status();
        let epoch = status.leader.as_ref().map(|l| l.epoch);
        serde_json::json!({
            "node_id": state.node_id,
            "role": status.role.name(),
            "serving": status.serving,
            "leader": status.leader.map(leader_json),
            "epoch": epoch,
            "ms_since_last_renew": status.since_last_renew.map(|d| d.as_millis() as u64),
            "storage": storage_json(&state, admin),
        })
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    if let Storage::Disk { dir } = &state.storage {
        state
            .metrics
            .data_bytes
            .set(crate::store::disk::bytes_on_disk(dir) as i64);
    }
    let counts: Vec<_> = state
        .shards
        .iter()
        .flat_map(|shard| shard.api.service.counts_by_queue())
        .collect();
    state.metrics.shards_led.set(state.shards_served() as i64);
    let holdings: Vec<_> = state
        .shards
        .iter()
        .flat_map(|shard| shard.api.service.holdings_by_account())
        .collect();
    state.metrics.set_account_holdings(&holdings);
    let now = state.first_shard().api.service.now();
    let waiting: Vec<_> = state
        .shards
        .iter()
        .flat_map(|shard| shard.api.service.topics().all_waiting())
        .map(|(subscription, topic, waiting)| (subscription, topic.to_string(), waiting))
        .collect();
    state.metrics.set_deliveries_waiting(&waiting, now);
    let body = state.metrics.render(&counts, now);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        body,
    )
        .into_response()
}
