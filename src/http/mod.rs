//! The HTTP surface: the SQS endpoint and the operational endpoints.
//!
//! `POST /` and `POST /{account}/{queue}` take SQS calls, and
//! `/_aws/sqs/messages` looks at a queue's messages without receiving them
//! (`peek.rs`); `GET /` is the admin page for people (`admin.rs`); `GET /health` says the
//! process runs, `GET /ready` whether it serves queue calls (what a load
//! balancer should check), `GET /status` who leads, and `GET /metrics` gives
//! Prometheus text. An instance that does not serve (a passive, or a leader
//! stepping down) answers every SQS call with a retryable 503.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::api::{self, Action, Api, AsJson, AsTree, Input, RequestContext, RequestRegion};
use crate::config::Regions;
use crate::error::{ErrorCode, SqsError};
use crate::leader::Leadership;
use crate::metrics::Metrics;
use crate::protocol::{json, query};
use crate::request_body::{BodyBudget, BodyPermit};

pub mod admin;
mod peek;

pub struct AppState {
    pub api: Api,
    pub leadership: Arc<Leadership>,
    pub metrics: Arc<Metrics>,
    pub account_id: String,
    /// The instance's own region (`--region`).
    pub region: String,
    pub regions: Regions,
    /// Base of queue URLs; taken from each request's Host header when unset.
    pub public_url: Option<String>,
    /// When set, every SQS request must be signed with one of these.
    pub credentials: Option<crate::sigv4::Credentials>,
    /// Time a client has to send a request's body.
    pub request_timeout: std::time::Duration,
    /// What all request bodies in memory may take together.
    pub body_budget: BodyBudget,
    /// The admin page and the other operational endpoints have their own
    /// address (`--admin-listen`).
    pub admin_apart: bool,
    pub admin: admin::AdminState,
}

impl AppState {
    /// The region a request is in: with `--regions signed`, the one its
    /// client signed it for (checked with the signature when credentials
    /// are configured), read when an action asks; unsigned requests are in
    /// the instance's own.
    fn request_region(&self, uri: &Uri, headers: &HeaderMap) -> RequestRegion {
        match self.regions {
            Regions::One => RequestRegion::known(&self.region),
            Regions::Signed => {
                let authorization = headers.get(header::AUTHORIZATION).cloned();
                let presigned = uri
                    .query()
                    .filter(|query| query.contains("X-Amz-Credential="))
                    .map(str::to_string);
                let home = self.region.clone();
                RequestRegion::read_when_asked(move || {
                    crate::sigv4::signed_region(authorization.as_ref(), presigned.as_deref())
                        .unwrap_or_else(|| home.clone())
                })
            }
        }
    }

    fn context(&self, uri: &Uri, headers: &HeaderMap) -> RequestContext {
        let base_url = match &self.public_url {
            Some(url) => url.clone(),
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()))
                    .unwrap_or("localhost");
                ["http://", host].concat()
            }
        };
        RequestContext {
            base_url,
            account_id: self.account_id.clone(),
            region: self.request_region(uri, headers),
            home_region: self.region.clone(),
            sender_id: self.account_id.as_str().into(),
            trace_id: headers
                .get("x-amzn-trace-id")
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
                .map(str::to_string),
        }
    }
}

/// Everything on one address: the SQS API and the operational endpoints.
pub fn router(state: Arc<AppState>) -> Router {
    admin_routes()
        .merge(admin::routes())
        .route("/", get(home).post(sqs))
        .merge(queue_path_routes())
        .with_state(state)
}

/// The SQS API alone, for when the operational endpoints have an address of
/// their own (`--admin-listen`).
pub fn sqs_router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(home).post(sqs))
        .merge(queue_path_routes())
        .with_state(state)
}

/// The admin page, `/health`, `/ready`, `/status` and `/metrics`.
pub fn admin_router(state: Arc<AppState>) -> Router {
    admin_routes()
        .merge(admin::routes())
        .route("/", get(admin::page))
        .with_state(state)
}

/// SQS requests sent to a queue URL (the Query protocol's habit): posted,
/// or as GET with the parameters in the query string; and the developer
/// endpoint that looks at a queue's messages (`peek.rs`).
fn queue_path_routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/{account}/{queue}", get(queue_get).post(sqs))
        .route("/queue/{region}/{account}/{queue}", get(queue_get).post(sqs))
        .route("/_aws/sqs/messages", get(peek::by_url).post(peek::by_url))
        // An SDK given the endpoint as its endpoint_url may add a slash.
        .route("/_aws/sqs/messages/", get(peek::by_url).post(peek::by_url))
        .route(
            "/_aws/sqs/messages/{region}/{account}/{queue}",
            get(peek::by_path).post(peek::by_path),
        )
}

/// GET on a queue URL: a Query call when it names an action; anything else
/// is an operation SQS does not know, answered as AWS answers it.
async fn queue_get(state: State<Arc<AppState>>, request: Request) -> Response {
    if is_query_get(request.uri()) {
        return sqs(state, request).await;
    }
    query::unknown_operation()
}

fn admin_routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .route("/ready", get(ready))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
}

/// The wire format of a request: JSON when it names its action in
/// X-Amz-Target or says it is JSON, the Query protocol otherwise.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wire {
    Json,
    Query,
}

impl Wire {
    fn of(headers: &HeaderMap) -> Wire {
        if json::is_json(headers) {
            Wire::Json
        } else {
            Wire::Query
        }
    }
}

/// An SQS call. It takes the request whole: axum's `HeaderMap` extractor
/// would copy every header.
async fn sqs(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let (method, uri, headers) = (&parts.method, &parts.uri, &parts.headers);
    let started = Instant::now();
    let request_id = crate::random::uuid().to_string();
    let wire = Wire::of(headers);
    let (action, result) = match admit(&state, wire, method, uri, headers, body).await {
        Err(error) => (None, Err(error)),
        Ok((action, _, _body)) if !state.leadership.is_serving() => (Some(action), Err(not_serving(&state))),
        Ok((action, input, _body)) => {
            let ctx = state.context(uri, headers);
            let result = run(&state, &ctx, wire, action, input).await;
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

/// An action's output, rendered for the wire format of its request.
enum Output {
    /// The JSON protocol's body.
    Json(Vec<u8>),
    /// The tree the Query protocol's answer is written from.
    Tree(serde_json::Value),
}

/// Runs an action, its output rendered for `wire`.
async fn run(
    state: &AppState,
    ctx: &RequestContext,
    wire: Wire,
    action: Action,
    input: Input,
) -> Result<Output, SqsError> {
    match wire {
        Wire::Json => api::dispatch::<AsJson>(&state.api, ctx, action, input)
            .await
            .map(Output::Json),
        Wire::Query => api::dispatch::<AsTree>(&state.api, ctx, action, input)
            .await
            .map(Output::Tree),
    }
}

/// Counts a request and its time by label and outcome (ok, or the error code).
fn record<T>(state: &AppState, label: &str, result: &Result<T, SqsError>, started: Instant) {
    let outcome = match result {
        Ok(_) => "ok",
        Err(error) => error.code.code(),
    };
    state.metrics.requests.with_label_values(&[label, outcome]).inc();
    state
        .metrics
        .request_seconds
        .with_label_values(&[label])
        .observe(started.elapsed().as_secs_f64());
}

/// A successful answer in the request's wire format. A Query call may ask
/// for its answer as JSON (AWS negotiates the content of Query GETs by
/// their Accept header).
fn answer(headers: &HeaderMap, request_id: &str, action: Action, output: Output) -> Response {
    match output {
        Output::Json(body) => json::success(request_id, body),
        Output::Tree(tree) if accepts_json(headers) => {
            json::success_tree(request_id, &query::as_json(request_id, action, tree))
        }
        Output::Tree(tree) => query::success(request_id, action, &tree),
    }
}

/// An error in the request's wire format.
fn answer_error(state: &AppState, wire: Wire, request_id: &str, label: &str, error: &SqsError) -> Response {
    error_response(state, request_id, label, error, |request_id, error| match wire {
        Wire::Json => json::error(request_id, error),
        Wire::Query => query::error(request_id, error),
    })
}

/// An error rendered by `render`, with what every error answer gets: an
/// internal error is logged, and a 503 says when to retry and where the
/// leader is.
fn error_response(
    state: &AppState,
    request_id: &str,
    label: &str,
    error: &SqsError,
    render: impl FnOnce(&str, &SqsError) -> Response,
) -> Response {
    if error.code == ErrorCode::InternalError {
        tracing::error!(%request_id, action = label, %error, "internal error");
    }
    let mut response = render(request_id, error);
    if error.code == ErrorCode::ServiceUnavailable {
        add_leader_headers(state, &mut response);
    }
    response
}

/// Authenticates and reads a request. With credentials configured, the
/// signature's head is checked before a byte of the body is read, so that
/// requests without a valid key, date and scope take no body memory; the
/// body is then bound to the signature. Bodies draw on the process-wide
/// budget until the request is answered (the permit returned).
async fn admit(
    state: &AppState,
    wire: Wire,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Action, Input, BodyPermit), SqsError> {
    let (body, permit) = authenticate_and_read(state, method, uri, headers, body).await?;
    // POST /{account}/{queue}: the path is the queue URL.
    let queue_path = Some(uri.path()).filter(|p| p.trim_matches('/').contains('/'));
    let (action, input) = read_request(wire, uri, queue_path, headers, body)?;
    Ok((action, input, permit))
}

/// Checks the signature (when credentials are configured) and reads the
/// body: what every request to the SQS address goes through.
async fn authenticate_and_read(
    state: &AppState,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Bytes, BodyPermit), SqsError> {
    let signature = match &state.credentials {
        None => None,
        Some(credentials) => {
            let now = (state.api.service.now() / 1000) as i64;
            let region = match state.regions {
                Regions::Signed => None,
                Regions::One => Some(state.region.as_str()),
            };
            Some(credentials.check_head(method, uri, headers, region, now)?)
        }
    };
    let (body, permit) = state.body_budget.read(body, state.request_timeout).await?;
    if let Some(signature) = signature {
        signature.check_body(&body)?;
    }
    Ok((body, permit))
}

/// The action and input of a request in `wire`'s format. A Query call sent
/// to a queue URL (`queue_path`) acts on that queue.
fn read_request(
    wire: Wire,
    uri: &Uri,
    queue_path: Option<&str>,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<(Action, Input), SqsError> {
    match wire {
        Wire::Json => {
            let action = json::target(headers)?;
            match uri.query() {
                // A presigned URL: the parameters are in the signed query
                // string and there is no body (botocore moves the JSON
                // members there).
                Some(parameters) if body.is_empty() => {
                    Ok((action, Input::Tree(query::parse_parameters(action, parameters)?)))
                }
                _ => Ok((action, Input::Json(body))),
            }
        }
        Wire::Query => {
            let (action, tree) = query::parse(&body, uri.query(), queue_path)?;
            if queue_path.is_some() && !action.served_at_queue_url() {
                return Err(SqsError::new(
                    ErrorCode::InvalidAction,
                    format!("The action {} is not valid for this endpoint.", action.name()),
                ));
            }
            Ok((action, Input::Tree(tree)))
        }
    }
}

/// Only a serving instance (the leader, until its deadline) takes queue calls.
fn serving(state: &AppState) -> Result<(), SqsError> {
    match state.leadership.is_serving() {
        true => Ok(()),
        false => Err(not_serving(state)),
    }
}

fn not_serving(state: &AppState) -> SqsError {
    let leadership = &state.leadership;
    let leader = match leadership.leader_url() {
        Some(url) => format!(" The leader is at {url}."),
        None => String::new(),
    };
    SqsError::new(
        ErrorCode::ServiceUnavailable,
        format!(
            "This ssq instance ({}, {}) is not serving queue calls: only the leader does. Retry; a load \
             balancer checking /ready sends requests to the leader.{leader}",
            leadership.node_id(),
            leadership.role().name(),
        ),
    )
}

/// Tells a client on a passive when to retry and, when known, where the leader is.
fn add_leader_headers(state: &AppState, response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    if let Some(url) = state.leadership.leader_url()
        && let Ok(value) = header::HeaderValue::from_str(&url)
    {
        headers.insert("x-ssq-leader", value);
    }
}

/// `GET /` on the SQS address: an SQS Query request sent as a GET, else the
/// admin page, unless that lives on the admin address.
async fn home(state: State<Arc<AppState>>, request: Request) -> Response {
    if is_query_get(request.uri()) {
        return sqs(state, request).await;
    }
    if state.admin_apart {
        return (
            StatusCode::NOT_FOUND,
            "The admin page is on the admin address (--admin-listen).\n",
        )
            .into_response();
    }
    admin::page(state, request.into_parts().0.headers).await
}

fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"))
}

fn is_query_get(uri: &Uri) -> bool {
    uri.query()
        .is_some_and(|q| q.split('&').any(|pair| pair.starts_with("Action=")))
}

async fn ready(State(state): State<Arc<AppState>>) -> Response {
    if state.leadership.is_serving() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        let role = state.leadership.role().name();
        (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {role}\n")).into_response()
    }
}

/// The leader as `/status` and the admin page show it.
fn leader_json(leader: crate::leader::LeaderInfo) -> serde_json::Value {
    serde_json::json!({"node_id": leader.node_id, "url": leader.url, "epoch": leader.epoch})
}

async fn status(State(state): State<Arc<AppState>>) -> Response {
    let status = state.leadership.status();
    let epoch = status.leader.as_ref().map(|l| l.epoch);
    let body = serde_json::json!({
        "node_id": state.leadership.node_id(),
        "role": status.role.name(),
        "serving": status.serving,
        "leader": status.leader.map(leader_json),
        "epoch": epoch,
        "ms_since_last_renew": status.since_last_renew.map(|d| d.as_millis() as u64),
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let service = &state.api.service;
    let body = state.metrics.render(&service.counts_by_queue(), service.now());
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        body,
    )
        .into_response()
}
