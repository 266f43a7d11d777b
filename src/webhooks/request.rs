//! One webhook request: built once from a stored delivery, then tried
//! over a fresh HTTP/1.1 connection each time (plain or TLS with the
//! system's roots), to the address `destinations.rs` checked. The answer's
//! status decides: 2xx delivered; 429, 5xx and every failure to connect,
//! hand over TLS or answer in time retried, as AWS retries an endpoint
//! that is unavailable; other statuses final. Redirects are statuses like
//! any other: never followed.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue, USER_AGENT};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::destinations::Destinations;
use crate::topic::OutboundKind;
use crate::topic::deliveries::Delivery;
use crate::topic::delivery_policy::DeliveryPolicy;

/// The answer body ssq reads at most (and then drops).
const MAX_ANSWER_BYTES: usize = 64 << 10;

/// How a try ended.
#[derive(Debug)]
pub enum Outcome {
    Delivered,
    /// Worth trying again.
    Retry(String),
    /// The endpoint answered that it will not take it (a 4xx but 429).
    Permanent(String),
    /// ssq will not send it there.
    Refused(String),
}

/// Why a delivery cannot be made into a request at all.
#[derive(Debug, thiserror::Error)]
#[error("{endpoint} is not an http or https URL with a host")]
pub struct NotAnEndpoint {
    endpoint: String,
}

/// A request ready to be sent.
pub struct Prepared {
    host: String,
    port: u16,
    tls: bool,
    request: Request<Full<Bytes>>,
}

impl Prepared {
    pub fn new(delivery: &Delivery, policy: &DeliveryPolicy) -> Result<Prepared, NotAnEndpoint> {
        let not_one = || NotAnEndpoint {
            endpoint: delivery.endpoint.clone(),
        };
        let endpoint: hyper::Uri = delivery.endpoint.parse().map_err(|_| not_one())?;
        let tls = match endpoint.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(not_one()),
        };
        let host = endpoint.host().ok_or_else(not_one)?.to_string();
        let port = endpoint.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let path = endpoint.path_and_query().map_or("/", |p| p.as_str()).to_string();
        let authority = endpoint
            .authority()
            .map(|a| a.to_string())
            .unwrap_or_else(|| host.clone());
        let mut builder = Request::post(path)
            .header(HOST, authority)
            .header(USER_AGENT, "Amazon Simple Notification Service Agent")
            .header("accept-encoding", "gzip,deflate")
            .header("connection", "close")
            .header("x-amz-sns-message-type", delivery.kind.name())
            .header("x-amz-sns-message-id", &delivery.message_id)
            .header("x-amz-sns-topic-arn", delivery.topic.to_string());
        if delivery.kind != OutboundKind::SubscriptionConfirmation {
            builder = builder.header("x-amz-sns-subscription-arn", &delivery.subscription);
        }
        if delivery.kind == OutboundKind::Notification && delivery.raw {
            builder = builder.header("x-amz-sns-rawdelivery", "true");
        }
        let content_type = HeaderValue::from_str(&policy.content_type)
            .unwrap_or(HeaderValue::from_static("text/plain; charset=UTF-8"));
        let request = builder
            .header(CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from(delivery.body.to_string())))
            .map_err(|_| not_one())?;
        Ok(Prepared {
            host,
            port,
            tls,
            request,
        })
    }

    /// One try, within `timeout`.
    pub async fn send(&self, destinations: &Destinations, timeout: Duration) -> Outcome {
        let address = match destinations.resolve(&self.host, self.port).await {
            Ok(address) => address,
            Err(refused) => return Outcome::Refused(refused.to_string()),
        };
        match tokio::time::timeout(timeout, self.exchange(address)).await {
            Err(_) => Outcome::Retry(format!("no answer within {timeout:?}")),
            // An endpoint that is down, refuses or resets is tried again
            // as the delivery policy says ("when the system that hosts the
            // subscribed endpoint becomes unavailable").
            Ok(Err(error)) => Outcome::Retry(error),
            Ok(Ok(status)) if (200..300).contains(&status) => Outcome::Delivered,
            Ok(Ok(status)) if status == 429 || status >= 500 => Outcome::Retry(format!("answered {status}")),
            Ok(Ok(status)) => Outcome::Permanent(format!("answered {status}")),
        }
    }

    /// The answer's status, or how the try failed before one came.
    async fn exchange(&self, address: std::net::SocketAddr) -> Result<u16, String> {
        let stream = TcpStream::connect(address)
            .await
            .map_err(|e| format!("could not connect to {address}: {e}"))?;
        stream.set_nodelay(true).ok();
        if !self.tls {
            return exchange_over(stream, self.request.clone()).await;
        }
        let host = self
            .host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let name = rustls::pki_types::ServerName::try_from(host).map_err(|e| format!("TLS: {e}"))?;
        let stream = tokio_rustls::TlsConnector::from(tls_config())
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS: {e}"))?;
        exchange_over(stream, self.request.clone()).await
    }
}

async fn exchange_over<S>(stream: S, request: Request<Full<Bytes>>) -> Result<u16, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // Header names as AWS writes them (`X-Amz-Sns-Message-Type`): some
    // receivers compare them with their case.
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .title_case_headers(true)
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(connection);
    let result = async {
        let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        // Read a little of the answer, so the endpoint sees its answer
        // taken; the rest is dropped with the connection.
        let mut body = response.into_body();
        let mut read = 0;
        while read < MAX_ANSWER_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => read += frame.data_ref().map_or(0, |data| data.len()),
                _ => break,
            }
        }
        Ok(status)
    }
    .await;
    driver.abort();
    result
}

/// TLS with the system's trust roots, made once.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            for certificate in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(certificate);
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|builder| builder.with_root_certificates(roots).with_no_client_auth());
            Arc::new(config.unwrap_or_else(|_| {
                rustls::ClientConfig::builder_with_provider(
                    Arc::new(rustls::crypto::ring::default_provider()),
                )
                .with_protocol_versions(&[&rustls::version::TLS13])
                .expect("TLS 1.3 is supported by ring")
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
            }))
        })
        .clone()
}
