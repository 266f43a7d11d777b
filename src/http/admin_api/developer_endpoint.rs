//! The developer endpoint `/_aws/sqs/messages`: LocalStack's API for looking
//! at a queue's messages without receiving them, served where the SQS API is
//! and admitted as an SQS call is (signature, body budget, 503 on a
//! passive).
//!
//! It takes a QueueUrl from the query string or a form body
//! (`GET /_aws/sqs/messages?QueueUrl=…`), or the queue from the path
//! (`/_aws/sqs/messages/<region>/<account>/<queue>`), and answers in
//! ReceiveMessage's shape: XML, or JSON for `Accept: application/json`. It
//! is also a botocore `endpoint_url`: a client's ReceiveMessage sent there
//! (Query or JSON protocol) looks instead, answered in the client's
//! protocol, and any other action is an InvalidRequest. When the page is not
//! the last, the `x-ssq-next-token` header says where the next one starts.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, Uri, header};
use axum::response::Response;

use crate::api::peek::{self, PeekParams};
use crate::api::{self, Action};
use crate::error::SqsError;
use crate::http::call::{Protocol, accepts_json, answer_error, error_response, record, serving};
use crate::http::intake::admission::{authenticate_and_read, read_request};
use crate::http::intake::authorization::Caller;
use crate::http::state::AppState;
use crate::protocol::{json, query};

/// The label of these requests in `ssq_requests_total`.
const LABEL: &str = "PeekMessages";

/// `/_aws/sqs/messages`, the queue named by a QueueUrl parameter.
pub(in crate::http) async fn by_url(
    State(state): State<Arc<AppState>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let source = peer.map(|Extension(ConnectInfo(peer))| peer.ip());
    respond(state, source, &method, &uri, &headers, body, None).await
}

/// `/_aws/sqs/messages/<region>/<account>/<queue>`.
pub(in crate::http) async fn by_path(
    State(state): State<Arc<AppState>>,
    Path(queue): Path<(String, String, String)>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let source = peer.map(|Extension(ConnectInfo(peer))| peer.ip());
    respond(state, source, &method, &uri, &headers, body, Some(queue)).await
}

/// How a page is written: the request's wire format and, for a plain HTTP
/// client asking for JSON, LocalStack's form of it (the XML answer as
/// xmltodict reads it).
#[derive(Clone, Copy)]
struct Form {
    wire: Protocol,
    xml_tree: bool,
}

async fn respond(
    state: Arc<AppState>,
    source: Option<IpAddr>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
    path: Option<(String, String, String)>,
) -> Response {
    let started = Instant::now();
    let request_id = crate::queue::random::uuid().to_string();
    let wire = Protocol::of(headers);
    let form = Form {
        wire,
        xml_tree: wire == Protocol::Query && accepts_json(headers),
    };
    let read = queue_and_params(&state, wire, method, uri, headers, body, path)
        .await
        .and_then(|(key, params, caller)| {
            // A look at messages is a receive, as far as a key's policy goes.
            if let Some(caller) = caller.filter(|caller| caller.policy.is_some()) {
                let arn = state.context(uri, headers, Some(&caller)).queue_arn(&key);
                caller.authorize(
                    &state.first_shard().api.service,
                    source,
                    "sqs:ReceiveMessage",
                    &arn,
                )?;
            }
            Ok((key, params))
        });
    let result = match read {
        // The look and its rendering grow with the page: off the runtime.
        Ok((key, params)) => {
            let (looking, request_id) = (state.clone(), request_id.clone());
            state
                .admin
                .blocking_pool
                .run(move || look_and_render(&looking, &key, &params, form, &request_id))
                .await
                .and_then(|rendered| rendered)
        }
        Err(error) => Err(error),
    };
    record(&state, LABEL, &result, started);
    match result {
        Ok(response) => response,
        Err(error) if form.xml_tree => {
            error_response(&state, &request_id, LABEL, &error, query::error_as_xml_tree)
        }
        Err(error) => answer_error(&state, wire, &request_id, LABEL, &error),
    }
}

/// The look and its answer, on a blocking thread.
fn look_and_render(
    state: &AppState,
    key: &str,
    params: &PeekParams,
    form: Form,
    request_id: &str,
) -> Result<Response, SqsError> {
    let page = peek::peek(&crate::http::call::serving_shard(state, key)?.api, key, params)?;
    let output = <api::AsTree as api::Render>::render(page.output)?;
    let mut response = match form.wire {
        Protocol::Query if form.xml_tree => {
            query::success_as_xml_tree(request_id, Action::ReceiveMessage, &output)
        }
        Protocol::Query => query::success(request_id, Action::ReceiveMessage, &output),
        Protocol::Json => json::success_tree(request_id, &output),
    };
    if let Some(token) = page
        .next_token
        .and_then(|token| HeaderValue::from_str(&token).ok())
    {
        response.headers_mut().insert("x-ssq-next-token", token);
    }
    Ok(response)
}

/// Reads the request: the queue it looks at and how.
async fn queue_and_params(
    state: &AppState,
    wire: Protocol,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
    path: Option<(String, String, String)>,
) -> Result<(String, PeekParams, Option<Caller>), SqsError> {
    let (body, _permit, caller) = authenticate_and_read(state, method, uri, headers, body).await?;
    serving(state)?;
    let ctx = state.context(uri, headers, caller.as_ref());
    let parameters = parameters(uri, headers, &body)?;
    let params = PeekParams::read(parameters.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let key = match path {
        Some((region, account, name)) => peek::queue_of_path(&ctx, &region, &account, &name)?,
        None => {
            let from_aws_client =
                wire == Protocol::Json || parameters.iter().any(|(name, _)| name == "Action");
            let queue_url = if from_aws_client {
                let (action, input) = read_request(wire, uri, None, headers, body)?;
                peek::queue_url_of(action, input)?
            } else {
                parameters
                    .into_iter()
                    .find(|(name, _)| name == "QueueUrl")
                    .map(|(_, url)| url)
            };
            peek::queue_of_url(&ctx, queue_url.as_deref())?
        }
    };
    // A look at messages is a receive, as far as another account's queue
    // policy goes.
    ctx.authorize_queue(
        &state.shard_of(&key).api,
        crate::api::Action::ReceiveMessage,
        &key,
    )?;
    Ok((key, params, caller))
}

/// The request's parameters: its query string, and its body when that is a
/// form (LocalStack reads both).
fn parameters(uri: &Uri, headers: &HeaderMap, body: &Bytes) -> Result<Vec<(String, String)>, SqsError> {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let form: &[u8] = if is_form { body } else { &[] };
    query::parameters(form, uri.query())
}
