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
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::api::{self, Action, Api, AsJson, AsTree, Input, RequestContext, RequestRegion, Route};
use crate::cluster::group::Membership;
use crate::cluster::lock::{LockStore, RedisLock};
use crate::config::Regions;
use crate::error::{ErrorCode, SqsError};
use crate::http::request_body::{BodyBudget, BodyPermit};
use crate::leader::{LeaderInfo, Leadership, Role};
use crate::metrics::Metrics;
use crate::protocol::{json, query};
use crate::service::shards::Placement;
use forward::Forwarder;

pub mod activity;
pub mod admin;
mod answers;
pub mod forward;
mod heavy;
pub mod hosts;
pub mod listener;
mod peek;
pub mod request_body;
pub mod sigv4;

/// One shard as the HTTP front sees it: its API, whether this instance
/// serves it and, with Redis, its lock (to find its leader).
pub struct ShardFront {
    pub api: Api,
    pub leadership: Arc<Leadership>,
    pub lock: Option<Arc<RedisLock>>,
}

impl ShardFront {
    /// The shard's leader as its lock in Redis names it now, noted for the
    /// requests that follow; None when nobody else holds it.
    async fn look_up_leader(&self) -> Option<String> {
        let token = self.lock.as_ref()?.holder().await.ok()??;
        let leader = LeaderInfo::parse(&token)?;
        self.leadership.observe_leader(Some(leader.clone()));
        (leader.node_id != self.leadership.node_id()).then_some(leader.url)
    }
}

pub struct AppState {
    pub node_id: String,
    /// Every shard, in order: one unless `--shards`.
    pub shards: Vec<ShardFront>,
    pub placement: Placement,
    /// The group's members and shares, in a sharded group.
    pub membership: Option<Arc<Membership>>,
    /// Sends requests on to the leader of their shard, in a sharded group.
    pub forwarder: Forwarder,
    pub metrics: Arc<Metrics>,
    pub account_id: String,
    /// The instance's own region (`--region`).
    pub region: String,
    pub regions: Regions,
    /// Base of queue URLs; taken from each request's Host header when unset.
    pub public_url: Option<String>,
    /// The names requests may come by (`hosts.rs`).
    pub allowed_hosts: hosts::AllowedHosts,
    /// When set, every SQS request must be signed with one of these.
    pub credentials: Option<crate::http::sigv4::Credentials>,
    /// Time a client has to send a request's body.
    pub request_timeout: std::time::Duration,
    /// How long a request for a shard with no leader waits for one (in a
    /// sharded group): about two lock-retry intervals.
    pub shard_wait: std::time::Duration,
    /// In a sharded group: every shard has had a leader this instance knew
    /// of (`/ready` waits for it).
    pub every_shard_led: std::sync::atomic::AtomicBool,
    /// What all request bodies and large answers in memory may take together.
    pub body_budget: BodyBudget,
    /// Looks at queues, run off the runtime a few at a time.
    pub heavy: heavy::HeavyWork,
    /// The admin page and the other operational endpoints have their own
    /// address (`--admin-listen`).
    pub admin_apart: bool,
    pub admin: admin::AdminState,
}

impl AppState {
    fn sharded(&self) -> bool {
        self.shards.len() > 1
    }

    /// The shard of the queue keyed `key`.
    fn shard_of(&self, key: &str) -> &ShardFront {
        &self.shards[self.placement.shard_of(key)]
    }

    /// Where requests that name no queue run (ListQueues, and requests
    /// whose queue cannot be told, which their action refuses): the first
    /// shard, the only one unless `--shards`.
    fn first_shard(&self) -> &ShardFront {
        &self.shards[0]
    }

    /// How many shards this instance serves now (the one shard, 0 or 1,
    /// unless `--shards`).
    fn shards_served(&self) -> usize {
        self.shards
            .iter()
            .filter(|shard| shard.leadership.is_serving())
            .count()
    }

    /// The instance's role as `/status` and the admin page name it: its
    /// leadership's, or in a sharded group, where each shard has its own,
    /// "member" (until it shuts down).
    fn role_name(&self) -> &'static str {
        match self.first_shard().leadership.role() {
            Role::ShuttingDown => "shutting-down",
            _ if self.sharded() => "member",
            role => role.name(),
        }
    }

    /// The shard of `key`, if this instance serves it now.
    fn serving_shard(&self, key: &str) -> Result<&ShardFront, SqsError> {
        let shard = self.shard_of(key);
        match shard.leadership.is_serving() {
            true => Ok(shard),
            false => Err(not_serving(self, &shard.leadership)),
        }
    }

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
                    crate::http::sigv4::signed_region(authorization.as_ref(), presigned.as_deref())
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
    let routes = admin_routes()
        .merge(admin::routes())
        .route("/", get(home).post(sqs))
        .merge(queue_path_routes());
    guarded(routes, state)
}

/// What every address serves its routes behind: the host and origin guard
/// (`hosts.rs`), then the budget for large answers (`answers.rs`).
fn guarded(routes: Router<Arc<AppState>>, state: Arc<AppState>) -> Router {
    routes
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            answers::budgeted,
        ))
        .layer(axum::middleware::from_fn_with_state(state.clone(), hosts::guard))
        .with_state(state)
}

/// The SQS API alone, for when the operational endpoints have an address of
/// their own (`--admin-listen`).
pub fn sqs_router(state: Arc<AppState>) -> Router {
    let routes = Router::new()
        .route("/", get(home).post(sqs))
        .merge(queue_path_routes());
    guarded(routes, state)
}

/// The admin page, `/health`, `/ready`, `/status` and `/metrics`.
pub fn admin_router(state: Arc<AppState>) -> Router {
    let routes = admin_routes().merge(admin::routes()).route("/", get(admin::page));
    guarded(routes, state)
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
    let request_id = crate::queue::random::uuid().to_string();
    let wire = Wire::of(headers);
    let (action, result) = match admit(&state, wire, method, uri, headers, body).await {
        Err(error) => (None, Err(error)),
        Ok(admitted) if state.sharded() => {
            let action = admitted.action;
            match run_or_forward(&state, &parts, wire, admitted).await {
                Handled::Ran(result) => (Some(action), result.map(|output| (action, output))),
                Handled::Forwarded(response) => return response,
            }
        }
        Ok(admitted) if !state.first_shard().leadership.is_serving() => (
            Some(admitted.action),
            Err(not_serving(&state, &state.first_shard().leadership)),
        ),
        Ok(Admitted { action, input, .. }) => {
            let ctx = state.context(uri, headers);
            let result = run(&state.first_shard().api, &ctx, wire, action, input).await;
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

/// What became of a request in a sharded group.
enum Handled {
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
async fn run_or_forward(state: &AppState, parts: &Parts, wire: Wire, admitted: Admitted) -> Handled {
    let Admitted {
        action, input, body, ..
    } = admitted;
    let ctx = state.context(&parts.uri, &parts.headers);
    let shard = match api::route(&ctx, action, &input) {
        Route::Here => state.first_shard(),
        Route::Queue(key) => {
            let shard = state.shard_of(&key);
            let deadline = Instant::now() + state.shard_wait;
            loop {
                if shard.leadership.is_serving() {
                    break shard;
                }
                if parts.headers.contains_key(forward::FORWARDED) {
                    return Handled::Ran(Err(not_serving(state, &shard.leadership)));
                }
                let forwarded = forward_to_leader(state, shard, parts, body.clone()).await;
                match forwarded {
                    Forwarded::Answered(response) => return Handled::Forwarded(response),
                    pending if Instant::now() >= deadline => {
                        return pending.into_handled(state, shard, wire, action);
                    }
                    _ => tokio::time::sleep(SHARD_POLL).await,
                }
            }
        }
    };
    Handled::Ran(run(&shard.api, &ctx, wire, action, input).await)
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
    fn into_handled(self, state: &AppState, shard: &ShardFront, wire: Wire, action: Action) -> Handled {
        match self {
            Forwarded::Answered(response) | Forwarded::Unavailable(response) => Handled::Forwarded(response),
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
                Handled::Forwarded(answer_error(state, wire, &request_id, action.name(), &error))
            }
            Forwarded::NoLeader => Handled::Ran(Err(not_serving(state, &shard.leadership))),
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

/// An action's output, rendered for the wire format of its request.
enum Output {
    /// The JSON protocol's body.
    Json(Vec<u8>),
    /// The tree the Query protocol's answer is written from.
    Tree(serde_json::Value),
}

/// Runs an action on one shard's API, its output rendered for `wire`.
async fn run(
    api: &Api,
    ctx: &RequestContext,
    wire: Wire,
    action: Action,
    input: Input,
) -> Result<Output, SqsError> {
    match wire {
        Wire::Json => api::dispatch::<AsJson>(api, ctx, action, input)
            .await
            .map(Output::Json),
        Wire::Query => api::dispatch::<AsTree>(api, ctx, action, input)
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

/// A request read and checked: its action and input, its body as sent
/// (to send it on), and its share of the body budget.
struct Admitted {
    action: Action,
    input: Input,
    body: Bytes,
    _permit: BodyPermit,
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
) -> Result<Admitted, SqsError> {
    let (body, permit) = authenticate_and_read(state, method, uri, headers, body).await?;
    // POST /{account}/{queue}: the path is the queue URL.
    let queue_path = Some(uri.path()).filter(|p| p.trim_matches('/').contains('/'));
    let (action, input) = read_request(wire, uri, queue_path, headers, body.clone())?;
    Ok(Admitted {
        action,
        input,
        body,
        _permit: permit,
    })
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
            let now = (state.first_shard().api.service.now() / 1000) as i64;
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

/// Only a serving instance (the leader, until its deadline) takes queue
/// calls; in a sharded group, one that serves some shard.
fn serving(state: &AppState) -> Result<(), SqsError> {
    match state.shards_served() {
        0 => Err(not_serving(state, &state.first_shard().leadership)),
        _ => Ok(()),
    }
}

/// The 503 of an instance that does not serve `leadership`'s shard; the
/// leader's URL, when known, goes in the message (and, unsharded, in
/// `x-ssq-leader`: see `add_leader_headers`).
fn not_serving(state: &AppState, leadership: &Leadership) -> SqsError {
    let leader = match leadership.leader_url() {
        Some(url) => format!(" The leader is at {url}."),
        None => String::new(),
    };
    let message = if state.sharded() {
        format!(
            "No instance serves shard {} of this queue right now (it is moving to another instance). Retry.{leader}",
            leadership.shard()
        )
    } else {
        format!(
            "This ssq instance ({}, {}) is not serving queue calls: only the leader does. Retry; a load \
             balancer checking /ready sends requests to the leader.{leader}",
            leadership.node_id(),
            leadership.role().name(),
        )
    };
    SqsError::new(ErrorCode::ServiceUnavailable, message)
}

/// Tells a client of an instance that does not serve when to retry and,
/// in an unsharded group, where the leader is when known (a sharded group
/// has a leader per shard; the message names the one that matters).
fn add_leader_headers(state: &AppState, response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    if !state.sharded()
        && let Some(url) = state.first_shard().leadership.leader_url()
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

/// Unsharded: ready while this instance is the leader and serves. Sharded:
/// ready while it can serve or forward, that is while it is not shutting
/// down and some shard has a leader, here or elsewhere, once every shard has
/// had one: an instance that said ready as soon as one shard had a leader
/// answered 503 for the others right after starting. (After that a shard
/// moving does not make it unready: its requests wait for the new leader.)
async fn ready(State(state): State<Arc<AppState>>) -> Response {
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
    if ready {
        (StatusCode::OK, "ready\n").into_response()
    } else if state.sharded() {
        let why = match first.role() {
            Role::ShuttingDown => "shutting down",
            _ if !state.every_shard_led.load(std::sync::atomic::Ordering::Acquire) => {
                "not every shard has had a leader this instance knows of yet"
            }
            _ => "no shard has a leader this instance knows of",
        };
        (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")).into_response()
    } else {
        let role = first.role().name();
        (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {role}\n")).into_response()
    }
}

/// The leader as `/status` and the admin page show it.
fn leader_json(leader: crate::leader::LeaderInfo) -> serde_json::Value {
    serde_json::json!({"node_id": leader.node_id, "url": leader.url, "epoch": leader.epoch})
}

/// The shard map as `/status` and the admin page show it: each shard's
/// leader and whether this instance serves it, and the group's members.
fn shard_map_json(state: &AppState) -> serde_json::Value {
    let shards: Vec<serde_json::Value> = state
        .shards
        .iter()
        .enumerate()
        .map(|(index, shard)| {
            let status = shard.leadership.status();
            serde_json::json!({
                "shard": index,
                "role": status.role.name(),
                "serving": status.serving,
                "leader": status.leader.map(leader_json),
            })
        })
        .collect();
    let (members, share) = match &state.membership {
        Some(membership) => (membership.members(), Some(membership.share())),
        None => (Vec::new(), None),
    };
    serde_json::json!({"count": state.shards.len(), "members": members, "share": share, "shards": shards})
}

async fn status(State(state): State<Arc<AppState>>) -> Response {
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
    let counts: Vec<_> = state
        .shards
        .iter()
        .flat_map(|shard| shard.api.service.counts_by_queue())
        .collect();
    state.metrics.shards_led.set(state.shards_served() as i64);
    let body = state
        .metrics
        .render(&counts, state.first_shard().api.service.now());
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        body,
    )
        .into_response()
}
