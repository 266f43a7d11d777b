//! The SNS surface, on the SQS address: a request is SNS's when it is
//! signed for the service `sns` or names an action only SNS has (SQS's and
//! SNS's AddPermission and RemovePermission are told apart by the topic
//! they name). It is admitted as an SQS call is (signature, body budget),
//! run on the first shard's topics, counted, and answered in SNS's XML
//! (the deliveries to HTTP/S endpoints it causes are recorded with it, and
//! sent by `webhooks/`).
//!
//! The links SNS puts in its documents (SubscribeURL, UnsubscribeURL) are
//! unsigned GETs, as AWS's are: their token or ARN is what authorises them.
//! The signing certificate is served at `/_ssq/sns/<file>.pem`. SNS is
//! served in every mode but a sharded group.

mod signing_key;

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub use self::signing_key::SigningKeyCell;
use super::AppState;
use super::call::{Protocol as WireProtocol, not_serving};
use super::sqs_api::sharded::{Leader, on_leader};
use crate::api::sns::Answer;
use crate::api::sns::{Action, Call, dispatch};
use crate::http::authorization::{Caller, source_of};
use crate::protocol::sns;
use crate::topic::SnsError;
use crate::topic::arn::subscription_topic;

/// What the SNS surface keeps of its own.
pub struct SnsApiState {
    pub signing_key: SigningKeyCell,
}

/// Whether a Query request (its head and body) is an SNS call.
pub(crate) fn claims(parts: &Parts, body: &[u8]) -> bool {
    let query = parts.uri.query();
    let service = super::sqs_api::sigv4::signed_service(parts.headers.get(header::AUTHORIZATION), query);
    if service.as_deref() == Some("sns") {
        return true;
    }
    let Ok(form) = sns::read(body, query) else {
        return false;
    };
    form.get("Action")
        .is_some_and(|action| Action::claims(action, form.get("TopicArn").is_some()))
}

/// Whether a request is one of the links SNS's documents carry: an
/// unsigned GET whose one `Action` is ConfirmSubscription or Unsubscribe,
/// as AWS's are (the token, or the subscription's ARN, is what authorises
/// it). Only its query string is read.
pub(crate) fn is_unsigned_link(parts: &Parts) -> bool {
    if parts.method != Method::GET || parts.headers.get(header::AUTHORIZATION).is_some() {
        return false;
    }
    let Some(query) = parts.uri.query() else {
        return false;
    };
    let Ok(pairs) = serde_urlencoded::from_str::<Vec<(String, String)>>(query) else {
        return false;
    };
    let mut actions = pairs.iter().filter(|(name, _)| name == "Action");
    let signed = pairs.iter().any(|(name, _)| name.starts_with("X-Amz-"));
    match (actions.next(), actions.next()) {
        (Some((_, action)), None) => !signed && (action == "ConfirmSubscription" || action == "Unsubscribe"),
        _ => false,
    }
}

/// Runs an SNS call and answers it; in a sharded group, on the leader of
/// the first shard, which holds the topics (sent on to it from here when
/// this instance does not lead it).
pub(crate) async fn serve(
    state: &Arc<AppState>,
    parts: &Parts,
    body: Bytes,
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
    let (label, result) = run(state, parts, &body, caller).await;
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

/// Whether the caller may make an SNS call: its action on the topic it
/// names (a subscription's topic for subscription calls, the topic to be
/// for CreateTopic), which must be of its account and which its policy, if
/// it has one, must allow; or on `*` when it names none (ListTopics).
pub(crate) fn authorize(
    state: &AppState,
    parts: &Parts,
    caller: &Caller,
    body: &[u8],
) -> Result<(), SnsError> {
    let form = sns::read(body, parts.uri.query())?;
    let action = form.get("Action").unwrap_or_default();
    let ctx = state.context(&parts.uri, &parts.headers, Some(caller));
    let resource = form
        .get("TopicArn")
        .or_else(|| form.get("TargetArn"))
        .or_else(|| form.get("ResourceArn"))
        .map(str::to_string)
        .or_else(|| {
            let subscription = form.get("SubscriptionArn")?;
            subscription_topic(subscription)
                .ok()
                .map(|topic| topic.to_string())
        })
        .or_else(|| {
            (action == "CreateTopic").then(|| {
                let name = form.get("Name").unwrap_or_default();
                format!("arn:aws:sns:{}:{}:{name}", ctx.region.get(), ctx.account_id)
            })
        })
        .unwrap_or_else(|| "*".to_string());
    let source = source_of(&parts.extensions);
    let action = match Action::from_name(action) {
        Some(known) => known.policy_name(),
        None => format!("sns:{action}"),
    };
    caller.refuse_other_account(&action, &resource)?;
    Ok(caller.authorize(state, source, &action, &resource)?)
}

/// A call refused before it ran, in SNS's XML.
pub(crate) fn refuse(error: &SnsError) -> Response {
    sns::error(&crate::queue::random::uuid().to_string(), error)
}

async fn run(
    state: &Arc<AppState>,
    parts: &Parts,
    body: &[u8],
    caller: Option<&Caller>,
) -> (String, Result<Option<Answer>, SnsError>) {
    let form = match sns::read(body, parts.uri.query()) {
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

/// `GET /_ssq/sns/{file}`: the certificate that signs SNS documents (in a
/// sharded group, the first shard's leader has it).
pub(crate) async fn certificate(
    State(state): State<Arc<AppState>>,
    Path(file): Path<String>,
    request: axum::extract::Request,
) -> Response {
    if state.sharded() {
        let (parts, _) = request.into_parts();
        let shard = state.first_shard();
        match on_leader(&state, shard, &parts, &Bytes::new(), WireProtocol::Query, "SNS").await {
            Leader::Here(_) => {}
            Leader::Answered(response) => return response,
            Leader::NotServing(_) => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "No instance serves SNS now; retry.\n",
                )
                    .into_response();
            }
        }
    }
    let Ok(key) = state.sns.signing_key.get(&state.first_shard().api.service).await else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "The signing key is not ready; retry.\n",
        )
            .into_response();
    };
    match key.certificate(&file) {
        Some(pem) => {
            let mut response = pem.to_string().into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-pem-file"),
            );
            response
        }
        None => (StatusCode::NOT_FOUND, "No such certificate.\n").into_response(),
    }
}
