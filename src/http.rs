//! The HTTP surface: the SQS endpoint and the operational endpoints.
//!
//! `POST /` and `POST /{account}/{queue}` take SQS calls; `GET /` is a status
//! page for people; `GET /health` says
//! the process runs, `GET /ready` whether it serves queue calls (what a load
//! balancer should check), `GET /status` who leads, and `GET /metrics` gives
//! Prometheus text. An instance that does not serve (a passive, or a leader
//! stepping down) answers every SQS call with a retryable 503.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::api::{self, Action, Input, RequestContext};
use crate::error::{ErrorCode, SqsError};
use crate::leader::Leadership;
use crate::metrics::Metrics;
use crate::protocol::{json, query};
use crate::service::Service;

/// The largest request body read. A batch may carry 1 MiB of payload, and
/// encodings inflate it (JSON's \uXXXX escapes up to 3x, base64 by 4/3).
pub const MAX_REQUEST_BODY: usize = 5 * 1024 * 1024;

pub struct AppState {
    pub service: Arc<Service>,
    pub leadership: Arc<Leadership>,
    pub metrics: Arc<Metrics>,
    pub account_id: String,
    pub region: String,
    /// Base of queue URLs; taken from each request's Host header when unset.
    pub public_url: Option<String>,
    /// When set, every SQS request must be signed with one of these.
    pub credentials: Option<crate::sigv4::Credentials>,
    /// Time a client has to send a request's body.
    pub request_timeout: std::time::Duration,
    /// The status page and the other operational endpoints have their own
    /// address (`--admin-listen`).
    pub admin_apart: bool,
}

impl AppState {
    fn context(&self, headers: &HeaderMap) -> RequestContext {
        let base_url = match &self.public_url {
            Some(url) => url.clone(),
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()))
                    .unwrap_or("localhost");
                format!("http://{host}")
            }
        };
        RequestContext {
            base_url,
            account_id: self.account_id.clone(),
            region: self.region.clone(),
            sender_id: self.account_id.as_str().into(),
        }
    }
}

/// A listener that holds at most `max` connections open: beyond that,
/// accepting waits until one closes (new clients queue in the kernel's
/// backlog) instead of taking on unbounded work. A connection on which no
/// byte moves for `idle_timeout` is closed, so idle clients cannot hold the
/// places forever.
pub struct LimitedListener {
    inner: tokio::net::TcpListener,
    permits: Arc<tokio::sync::Semaphore>,
    idle_timeout: std::time::Duration,
}

impl LimitedListener {
    pub fn new(
        inner: tokio::net::TcpListener,
        max: usize,
        idle_timeout: std::time::Duration,
    ) -> LimitedListener {
        LimitedListener {
            inner,
            permits: Arc::new(tokio::sync::Semaphore::new(max.max(1))),
            idle_timeout,
        }
    }
}

impl axum::serve::Listener for LimitedListener {
    type Io = LimitedStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        loop {
            match self.inner.accept().await {
                Ok((stream, address)) => {
                    let _ = stream.set_nodelay(true);
                    let idle = Box::pin(tokio::time::sleep(self.idle_timeout));
                    let stream = LimitedStream {
                        stream,
                        _permit: permit,
                        idle,
                        idle_timeout: self.idle_timeout,
                    };
                    return (stream, address);
                }
                // Out of file descriptors and the like: wait, as axum's own
                // listener does, rather than spin.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection that gives its permit back when it closes, and ends itself
/// after `idle_timeout` without traffic.
pub struct LimitedStream {
    stream: tokio::net::TcpStream,
    _permit: tokio::sync::OwnedSemaphorePermit,
    idle: std::pin::Pin<Box<tokio::time::Sleep>>,
    idle_timeout: std::time::Duration,
}

impl LimitedStream {
    fn touched(&mut self) {
        let deadline = tokio::time::Instant::now() + self.idle_timeout;
        self.idle.as_mut().reset(deadline);
    }
}

impl tokio::io::AsyncRead for LimitedStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        match std::pin::Pin::new(&mut self.stream).poll_read(cx, buf) {
            std::task::Poll::Ready(result) => {
                if buf.filled().len() > before {
                    self.touched();
                }
                std::task::Poll::Ready(result)
            }
            // Nothing to read: end the connection once it has been idle too
            // long (reading nothing more is what a closed peer looks like).
            std::task::Poll::Pending => match self.idle.as_mut().poll(cx) {
                std::task::Poll::Ready(()) => std::task::Poll::Ready(Ok(())),
                std::task::Poll::Pending => std::task::Poll::Pending,
            },
        }
    }
}

impl tokio::io::AsyncWrite for LimitedStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.touched();
        std::pin::Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.touched();
        std::pin::Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Everything on one address: the SQS API and the operational endpoints.
pub fn router(state: Arc<AppState>) -> Router {
    admin_routes()
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

/// The status page, `/health`, `/ready`, `/status` and `/metrics`.
pub fn admin_router(state: Arc<AppState>) -> Router {
    admin_routes().route("/", get(status_page)).with_state(state)
}

/// SQS requests posted to a queue URL (the Query protocol's habit).
fn queue_path_routes() -> Router<Arc<AppState>> {
    Router::new().route("/{account}/{queue}", post(sqs))
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
#[derive(Clone, Copy)]
enum Wire {
    Json,
    Query,
}

async fn sqs(
    State(state): State<Arc<AppState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let request_id = crate::random::uuid().to_string();
    let wire = if json::is_json(&headers) {
        Wire::Json
    } else {
        Wire::Query
    };
    let request = match read_body(body, state.request_timeout).await {
        Ok(body) => authenticate(&state, &method, &uri, &headers, &body)
            .and_then(|()| read_request(wire, &uri, &headers, body)),
        Err(error) => Err(error),
    };
    let (action, result) = match request {
        Err(error) => (None, Err(error)),
        Ok((action, _)) if !state.leadership.is_serving() => (Some(action), Err(not_serving(&state))),
        Ok((action, input)) => {
            let ctx = state.context(&headers);
            let result = match input {
                RequestInput::Json(bytes) => {
                    api::dispatch(&state.service, &ctx, action, Input::Json(&bytes)).await
                }
                RequestInput::Tree(tree) => {
                    api::dispatch(&state.service, &ctx, action, Input::Tree(tree)).await
                }
            };
            (Some(action), result)
        }
    };
    let label = action.map_or("unknown", Action::name);
    let outcome = match &result {
        Ok(_) => "ok",
        Err(error) => error.code.code(),
    };
    state.metrics.requests.with_label_values(&[label, outcome]).inc();
    state
        .metrics
        .request_seconds
        .with_label_values(&[label])
        .observe(started.elapsed().as_secs_f64());
    match result {
        Ok(output) => match (wire, action) {
            (Wire::Query, Some(action)) => query::success(&request_id, action, &output),
            _ => json::success(&request_id, &output),
        },
        Err(error) => {
            if error.code == ErrorCode::InternalError {
                tracing::error!(%request_id, action = label, %error, "internal error");
            }
            let mut response = match wire {
                Wire::Json => json::error(&request_id, &error),
                Wire::Query => query::error(&request_id, &error),
            };
            if error.code == ErrorCode::ServiceUnavailable {
                add_leader_headers(&state, &mut response);
            }
            response
        }
    }
}

/// A request's input, in the shape its wire format gave it.
enum RequestInput {
    Json(Bytes),
    Tree(serde_json::Value),
}

/// Checks the request's signature when credentials are configured.
fn authenticate(
    state: &AppState,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), SqsError> {
    match &state.credentials {
        None => Ok(()),
        Some(credentials) => {
            let now = (state.service.now() / 1000) as i64;
            credentials.verify(method, uri, headers, body, now)
        }
    }
}

fn read_request(
    wire: Wire,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<(Action, RequestInput), SqsError> {
    match wire {
        Wire::Json => {
            let action = json::target(headers)?;
            Ok((action, RequestInput::Json(body)))
        }
        Wire::Query => {
            // POST /{account}/{queue}: the path is the queue URL.
            let queue_path = Some(uri.path()).filter(|p| p.trim_matches('/').contains('/'));
            let (action, tree) = query::parse(&body, uri.query(), queue_path)?;
            Ok((action, RequestInput::Tree(tree)))
        }
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
/// status page, unless that lives on the admin address.
async fn home(
    state: State<Arc<AppState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if is_query_get(&uri) {
        return sqs(state, method, uri, headers, body).await;
    }
    if state.admin_apart {
        return (
            StatusCode::NOT_FOUND,
            "The status page is on the admin address (--admin-listen).\n",
        )
            .into_response();
    }
    status_page(state).await
}

fn is_query_get(uri: &Uri) -> bool {
    uri.query()
        .is_some_and(|q| q.split('&').any(|pair| pair.starts_with("Action=")))
}

async fn status_page(State(state): State<Arc<AppState>>) -> Response {
    let html = crate::status_page::render(
        state.leadership.node_id(),
        &state.leadership.status(),
        &state.service.counts_by_queue(),
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

async fn ready(State(state): State<Arc<AppState>>) -> Response {
    if state.leadership.is_serving() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        let role = state.leadership.role().name();
        (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {role}\n")).into_response()
    }
}

async fn status(State(state): State<Arc<AppState>>) -> Response {
    let status = state.leadership.status();
    let epoch = status.leader.as_ref().map(|l| l.epoch);
    let body = serde_json::json!({
        "node_id": state.leadership.node_id(),
        "role": status.role.name(),
        "serving": status.serving,
        "leader": status.leader.map(|l| serde_json::json!({
            "node_id": l.node_id,
            "url": l.url,
            "epoch": l.epoch,
        })),
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

async fn read_body(body: Body, timeout: std::time::Duration) -> Result<Bytes, SqsError> {
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_REQUEST_BODY)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(SqsError::new(
            ErrorCode::RequestTooLarge,
            format!("The request body is larger than the {MAX_REQUEST_BODY} bytes ssq reads."),
        )),
        Err(_) => Err(SqsError::new(
            ErrorCode::RequestTimeout,
            format!(
                "The request body did not arrive within {timeout:?}; send it faster or raise --request-timeout."
            ),
        )),
    }
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let body = state.metrics.render(&state.service.counts_by_queue());
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        body,
    )
        .into_response()
}
