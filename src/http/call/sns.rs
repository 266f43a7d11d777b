//! Running an SNS call, for every surface that takes one (the SNS surface
//! at `POST /`, the admin page's `POST /admin/api/sns`): on the first
//! shard's topics (in a sharded group, on that shard's leader, sent on to
//! it from here when this instance does not lead it), counted, and
//! answered in SNS's XML.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::http::request::Parts;
use axum::response::Response;

use super::{Protocol as WireProtocol, not_serving};
use crate::api::sns::{Action, Answer, Call, Form, dispatch};
use crate::http::intake::authorization::Caller;
use crate::http::shards::run::{Leader, on_leader};
use crate::http::state::AppState;
use crate::protocol::sns;
use crate::topic::SnsError;

/// Runs an SNS call and answers it; in a sharded group, on the leader of
/// the first shard, which holds the topics (sent on to it from here when
/// this instance does not lead it).
/// `body` is sent on as it came; `form` is what it was read into.
pub(crate) async fn serve(
    state: &Arc<AppState>,
    parts: &Parts,
    body: Bytes,
    form: Result<Form, SnsError>,
    caller: Option<&Caller>,
) -> Response {
    let started = Instant::now();
    let request_id = crate::queue::random::uuid().to_string();
    if state.sharded() {
        let shard = state.first_shard();
        match on_leader(state, shard, parts, &body, WireProtocol::Query, "SNS").await {
            Leader::Here(_) => {}
            Leader::Answered(response) => return response,
            Leader::NotServing(error) => return sns::error(&request_id, &error.into()),
        }
    }
    let (label, result) = run(state, parts, form, caller).await;
    let outcome = match &result {
        Ok(_) => "ok",
        Err(error) => error.code,
    };
    state.metrics.requests.with_label_values(&[&label, outcome]).inc();
    state
        .metrics
        .request_seconds
        .with_label_values(&[&label])
        .observe(started.elapsed().as_secs_f64());
    match result {
        Ok(answer) => sns::success(&label, &request_id, answer.as_ref()),
        Err(error) => {
            if error.status >= 500 && error.status != 503 {
                tracing::error!(%request_id, action = %label, %error, "internal error");
            }
            sns::error(&request_id, &error)
        }
    }
}

/// A call refused before it ran, in SNS's XML.
pub(crate) fn refuse(error: &SnsError) -> Response {
    sns::error(&crate::queue::random::uuid().to_string(), error)
}

async fn run(
    state: &Arc<AppState>,
    parts: &Parts,
    form: Result<Form, SnsError>,
    caller: Option<&Caller>,
) -> (String, Result<Option<Answer>, SnsError>) {
    let form = match form {
        Ok(form) => form,
        Err(error) => return ("unknown".into(), Err(error)),
    };
    let Some(action) = form.get("Action").map(str::to_string) else {
        return ("unknown".into(), Err(SnsError::missing("action")));
    };
    let label = match Action::from_name(&action) {
        Some(known) => known.name().to_string(),
        None => "unknown".to_string(),
    };
    let shard = state.first_shard();
    if !shard.leadership.is_serving() {
        return (label, Err(not_serving(state, &shard.leadership).into()));
    }
    let signer = match state.sns.signing_key.get(&shard.api.service).await {
        Ok(signer) => signer,
        Err(error) => return (label, Err(error)),
    };
    let ctx = state.context(&parts.uri, &parts.headers, caller);
    let call = Call {
        api: &shard.api,
        ctx: &ctx,
        signer: signer.as_ref(),
    };
    (label, dispatch(&call, &action, &form).await)
}
