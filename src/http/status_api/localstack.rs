//! What LocalStack-based setups look for, so that switching to ssq is a
//! change of image: `GET /_localstack/health` answered as LocalStack
//! answers it for SQS, and the `Ready.` line LocalStack logs once it
//! serves, which wait strategies (testcontainers' LocalStack module,
//! `localstack wait`) watch for. docs/localstack.md says what else to change.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::watch;

use super::readiness;
use crate::http::state::AppState;

/// How often an instance that does not serve yet looks again before it
/// logs `Ready.`.
const READY_CHECK: Duration = Duration::from_millis(100);

pub(in crate::http) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/_localstack/health", get(health))
}

/// LocalStack's health document with the one service ssq runs, in
/// LocalStack's words (as its SQS answered in host mode): `available` once
/// ssq serves (what `/ready` answers 200 to), `running` once it has served
/// an SQS call, and before it serves `starting`.
async fn health(State(state): State<Arc<AppState>>) -> Response {
    let sqs = match readiness(&state) {
        Err(_) => "starting",
        Ok(()) if served_a_call(&state) => "running",
        Ok(()) => "available",
    };
    let body = serde_json::json!({
        "services": {"sqs": sqs},
        "edition": "community",
        "version": env!("CARGO_PKG_VERSION"),
    });
    ([(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// Whether any SQS call was answered: read off the requests counter, so
/// that the request path keeps no flag of its own for this.
fn served_a_call(state: &AppState) -> bool {
    use prometheus::core::Collector;
    state
        .metrics
        .requests
        .collect()
        .iter()
        .flat_map(|family| family.get_metric())
        .any(|metric| metric.get_counter().get_value() > 0.0)
}

/// How the instance says it serves, the first time it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadyLine {
    /// `Ready.` alone on a line of the log, as LocalStack writes it: with
    /// text logs, what wait strategies match (`Ready\.\n`).
    Bare,
    /// An event whose message is `Ready.`: with JSON logs, where a bare
    /// line would break the readers of the log.
    Event,
}

/// Says `Ready.` the first time this instance serves; gives up when the
/// node stops first.
pub async fn announce_ready(state: Arc<AppState>, line: ReadyLine, mut stopped: watch::Receiver<bool>) {
    while readiness(&state).is_err() {
        tokio::select! {
            _ = tokio::time::sleep(READY_CHECK) => {}
            _ = stopped.changed() => return,
        }
    }
    match line {
        ReadyLine::Event => tracing::info!("Ready."),
        // A log line like the others, so the log filter applies to it.
        ReadyLine::Bare if tracing::enabled!(tracing::Level::INFO) => {
            use std::io::Write;
            // One write, under stderr's lock: never inside another line.
            let _ = std::io::stderr().lock().write_all(b"Ready.\n");
        }
        ReadyLine::Bare => {}
    }
}
