//! The SNS surface, on the SQS address: a request is SNS's when it is
//! signed for the service `sns` or names an action only SNS has (SQS's and
//! SNS's AddPermission and RemovePermission are told apart by the topic
//! they name; `front_door.rs` asks [`claim`]). It is taken in as an SQS
//! call is (signature, body budget), its form read once,
//! run on the first shard's topics, counted, and answered in SNS's XML
//! (the deliveries to HTTP/S endpoints it causes are recorded with it, and
//! sent by `webhooks/`).
//!
//! The links SNS puts in its documents (SubscribeURL, UnsubscribeURL) are
//! unsigned GETs, as AWS's are: their token or ARN is what authorises them.
//! The signing certificate is served at `/_ssq/sns/<file>.pem`. In a
//! sharded group SNS is served by the first shard's leader (a call is sent
//! on to it).

pub(in crate::http) mod signing_key;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub use self::signing_key::{SigningKeyCell, SnsApiState};
use super::call::Protocol as WireProtocol;
use crate::api::sns::Action;
use crate::api::sns::Form;
use crate::http::intake::authorization::{Caller, source_of};
use crate::http::shards::run::{Leader, on_leader};
use crate::http::state::AppState;
use crate::protocol::sns;
use crate::topic::SnsError;
use crate::topic::arn::subscription_topic;

/// A Query request's form, if the request (its head and body) is an SNS
/// call: signed for the service `sns` (its form then read whatever it
/// holds), or naming an action only SNS has. The one read of its form.
pub(crate) fn claim(parts: &Parts, body: &[u8]) -> Option<Result<Form, SnsError>> {
    let query = parts.uri.query();
    let service = crate::http::intake::sigv4::signed_service(parts.headers.get(header::AUTHORIZATION), query);
    let signed_for_sns = service.as_deref() == Some("sns");
    match sns::read(body, query) {
        Err(error) => signed_for_sns.then_some(Err(error)),
        Ok(form) => {
            let named = form.get("Action");
            let only_sns = named.is_some_and(|action| Action::claims(action, form.get("TopicArn").is_some()));
            (signed_for_sns || only_sns).then_some(Ok(form))
        }
    }
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

/// Whether the caller may make an SNS call: its action on the topic it
/// names (a subscription's topic for subscription calls, the topic to be
/// for CreateTopic), which must be of its account and which its policy, if
/// it has one, must allow; or on `*` when it names none (ListTopics).
pub(crate) fn authorize(
    state: &AppState,
    parts: &Parts,
    caller: &Caller,
    form: &Form,
) -> Result<(), SnsError> {
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
    Ok(caller.authorize(&state.first_shard().api.service, source, &action, &resource)?)
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
