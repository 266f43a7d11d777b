//! Sending a request on to the leader of its queue's shard, in a sharded
//! group where any instance takes any request.
//!
//! The request goes on as the client sent it (method, path, query, headers
//! with the Host and the signature, body), so the leader checks the
//! signature and writes queue URLs exactly as it would have for the client,
//! and its answer comes back as it is, streamed (a long poll's wait
//! included). Connections to the other instances are kept alive in a pool.
//! A forwarded request carries `x-ssq-forwarded`, and an instance never
//! forwards such a request again: when the shard moved meanwhile, the
//! client gets a retryable 503 rather than a request bouncing around.

use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Request, Uri, header};
use axum::response::Response;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::metrics::Metrics;

/// The header that marks a request sent on by another instance; its value
/// is that instance's node id.
pub const FORWARDED: HeaderName = HeaderName::from_static("x-ssq-forwarded");

/// How long a forwarded request may take: the longest long poll (20 s) and
/// time to spare for the leader's own answer.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a request could not be sent on.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The leader's URL is not a base URL a request can be sent to.
    #[error("the leader advertises {0:?}, which is not an http:// URL")]
    BadUrl(String),
    /// No answer: refused or reset.
    #[error("the leader did not answer: {0}")]
    Unreachable(hyper_util::client::legacy::Error),
    #[error("the leader did not answer within {FORWARD_TIMEOUT:?}")]
    TimedOut,
}

/// The connection pool to the other instances.
pub struct Forwarder {
    client: Client<HttpConnector, Full<Bytes>>,
    node_id: HeaderValue,
}

impl Forwarder {
    pub fn new(node_id: &str) -> Forwarder {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_secs(2)));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Forwarder {
            client,
            node_id: HeaderValue::from_str(node_id).unwrap_or(HeaderValue::from_static("ssq")),
        }
    }

    /// Sends the request (`parts` and its `body`, already read) to the
    /// instance at `leader_url` and returns its answer.
    pub async fn forward(
        &self,
        leader_url: &str,
        parts: &Parts,
        body: Bytes,
        metrics: &Metrics,
    ) -> Result<Response, ForwardError> {
        let started = Instant::now();
        let result = self.send(leader_url, parts, body).await;
        metrics.forward_seconds.observe(started.elapsed().as_secs_f64());
        let outcome = match &result {
            Ok(response) => response.status().as_str().to_string(),
            Err(ForwardError::BadUrl(_)) => "bad_url".to_string(),
            Err(ForwardError::Unreachable(_) | ForwardError::TimedOut) => "unreachable".to_string(),
        };
        metrics.forwarded.with_label_values(&[&outcome]).inc();
        result
    }

    async fn send(&self, leader_url: &str, parts: &Parts, body: Bytes) -> Result<Response, ForwardError> {
        let base = leader_url.trim_end_matches('/');
        if !base.starts_with("http://") {
            return Err(ForwardError::BadUrl(leader_url.to_string()));
        }
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let uri: Uri = [base, path]
            .concat()
            .parse()
            .map_err(|_| ForwardError::BadUrl(leader_url.to_string()))?;
        let mut request = Request::builder()
            .method(parts.method.clone())
            .uri(uri)
            .body(Full::new(body))
            .map_err(|e| ForwardError::BadUrl(e.to_string()))?;
        let headers = request.headers_mut();
        for (name, value) in &parts.headers {
            if !HOP_BY_HOP.contains(name) {
                headers.append(name.clone(), value.clone());
            }
        }
        headers.insert(FORWARDED, self.node_id.clone());
        let response = tokio::time::timeout(FORWARD_TIMEOUT, self.client.request(request))
            .await
            .map_err(|_| ForwardError::TimedOut)?
            .map_err(ForwardError::Unreachable)?;
        let (mut parts, body) = response.into_parts();
        for name in &HOP_BY_HOP {
            parts.headers.remove(name);
        }
        Ok(Response::from_parts(parts, Body::new(body)))
    }
}

/// Headers about one connection, not the request or the answer: never
/// passed on, either way.
static HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::TE,
    header::TRAILER,
    header::UPGRADE,
    header::PROXY_AUTHORIZATION,
    header::PROXY_AUTHENTICATE,
    HeaderName::from_static("keep-alive"),
];
