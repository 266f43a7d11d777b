//! One webhook request: built once from a stored delivery, then tried
//! over an HTTP/1.1 connection (plain or TLS with the system's roots) to
//! the address `destinations.rs` checked. The answer's status decides: 2xx
//! delivered; 429, 5xx and every failure to connect, hand over TLS or
//! answer in time retried, as AWS retries an endpoint that is unavailable;
//! other statuses final. Redirects are statuses like any other: never
//! followed.
//!
//! A connection whose answer was read whole is handed back to be used
//! again by the same subscription's next try ([`Connection`]): a new TCP
//! connection (and TLS handshake) per delivery costs the sender several
//! times what the request does. It is kept for [`KEEP_CONNECTION_FOR`] at
//! most, so the endpoint's name is resolved and checked again that often.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1;
use hyper::header::{ACCEPT_ENCODING, CONNECTION, CONTENT_TYPE, HOST, HeaderName, HeaderValue, USER_AGENT};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::destinations::Destinations;
use crate::topic::OutboundKind;
use crate::topic::deliveries::Delivery;
use crate::topic::delivery_policy::DeliveryPolicy;

/// The answer body ssq reads at most (and then drops, with its
/// connection).
const MAX_ANSWER_BYTES: usize = 64 << 10;

/// How long a connection is used again at most: past it the endpoint's
/// name is resolved and checked afresh.
pub const KEEP_CONNECTION_FOR: Duration = Duration::from_secs(30);

/// An open connection to an endpoint, to the address that was checked
/// when it was made; closed when dropped.
pub struct Connection {
    sender: http1::SendRequest<Full<Bytes>>,
    driver: JoinHandle<()>,
    opened: Instant,
}

impl Connection {
    /// Whether it may take another request (once it is ready for one).
    fn usable(&self) -> bool {
        self.opened.elapsed() < KEEP_CONNECTION_FOR && !self.sender.is_closed()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

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

/// Why a try got no answer: each is tried again, as AWS tries an endpoint
/// that is unavailable.
#[derive(Debug, thiserror::Error)]
enum NoAnswer {
    #[error("could not connect to {address}: {source}")]
    Connect {
        address: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("TLS: the endpoint's host is not a name a certificate can be checked against ({0})")]
    TlsName(#[from] rustls::pki_types::InvalidDnsNameError),
    #[error("TLS: {0}")]
    Tls(std::io::Error),
    #[error("HTTP: {0}")]
    Http(#[from] hyper::Error),
}

/// Why a delivery cannot be made into a request at all.
#[derive(Debug, thiserror::Error)]
#[error("{endpoint} is not an http or https URL with a host")]
pub struct NotAnEndpoint {
    endpoint: String,
}

/// Where a subscription's requests go, read once from its endpoint.
pub struct Endpoint {
    /// The endpoint as it was subscribed.
    url: String,
    host: String,
    port: u16,
    tls: bool,
    path: hyper::Uri,
    authority: HeaderValue,
}

impl Endpoint {
    pub fn parse(url: &str) -> Result<Endpoint, NotAnEndpoint> {
        let not_one = || NotAnEndpoint {
            endpoint: url.to_string(),
        };
        let endpoint: hyper::Uri = url.parse().map_err(|_| not_one())?;
        let tls = match endpoint.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(not_one()),
        };
        let host = endpoint.host().ok_or_else(not_one)?.to_string();
        let port = endpoint.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let path = endpoint
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|_| not_one())?;
        let authority = endpoint.authority().map_or(host.as_str(), |a| a.as_str());
        let authority = HeaderValue::from_str(authority).map_err(|_| not_one())?;
        Ok(Endpoint {
            url: url.to_string(),
            host,
            port,
            tls,
            path,
            authority,
        })
    }

    /// Whether it was read from `url`.
    pub fn is(&self, url: &str) -> bool {
        self.url == url
    }
}

/// A request ready to be sent.
pub struct Prepared {
    endpoint: Arc<Endpoint>,
    request: Request<Full<Bytes>>,
}

/// A delivery's body, shared with the request rather than copied.
struct Body(Arc<str>);

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl Prepared {
    pub fn new(endpoint: Arc<Endpoint>, delivery: &Delivery, policy: &DeliveryPolicy) -> Prepared {
        static MESSAGE_TYPE: HeaderName = HeaderName::from_static("x-amz-sns-message-type");
        static MESSAGE_ID: HeaderName = HeaderName::from_static("x-amz-sns-message-id");
        static TOPIC_ARN: HeaderName = HeaderName::from_static("x-amz-sns-topic-arn");
        static SUBSCRIPTION_ARN: HeaderName = HeaderName::from_static("x-amz-sns-subscription-arn");
        static RAW_DELIVERY: HeaderName = HeaderName::from_static("x-amz-sns-rawdelivery");
        // Message ids, ARNs and content types are printable ASCII; one that
        // is not is left out rather than sent broken.
        let value = |text: &str| HeaderValue::from_str(text).ok();
        let mut request = Request::new(Full::new(Bytes::from_owner(Body(delivery.body.clone()))));
        *request.method_mut() = hyper::Method::POST;
        *request.uri_mut() = endpoint.path.clone();
        let headers = request.headers_mut();
        headers.insert(HOST, endpoint.authority.clone());
        headers.insert(
            USER_AGENT,
            HeaderValue::from_static("Amazon Simple Notification Service Agent"),
        );
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_static("gzip,deflate"));
        // AWS's requests carry one (LocalStack's recordings of them do).
        headers.insert(CONNECTION, HeaderValue::from_static("Keep-Alive"));
        headers.insert(&MESSAGE_TYPE, HeaderValue::from_static(delivery.kind.name()));
        headers.extend(value(&delivery.message_id).map(|v| (MESSAGE_ID.clone(), v)));
        headers.extend(value(&delivery.topic.to_string()).map(|v| (TOPIC_ARN.clone(), v)));
        if delivery.kind != OutboundKind::SubscriptionConfirmation {
            headers.extend(value(&delivery.subscription).map(|v| (SUBSCRIPTION_ARN.clone(), v)));
        }
        if delivery.kind == OutboundKind::Notification && delivery.raw {
            headers.insert(&RAW_DELIVERY, HeaderValue::from_static("true"));
        }
        let content_type =
            value(&policy.content_type).unwrap_or(HeaderValue::from_static("text/plain; charset=UTF-8"));
        headers.insert(CONTENT_TYPE, content_type);
        Prepared { endpoint, request }
    }

    /// One try, within `timeout`, on `kept` if it is still usable (else
    /// on a new connection): its outcome, and the connection if it may be
    /// used again.
    pub async fn send(
        &self,
        destinations: &Destinations,
        timeout: Duration,
        kept: Option<Connection>,
    ) -> (Outcome, Option<Connection>) {
        let kept = kept.filter(Connection::usable);
        let answered = tokio::time::timeout(timeout, async {
            if let Some(mut connection) = kept {
                // An endpoint may close a connection it kept just as the
                // request goes out: that costs no try, a new one is made.
                if let Ok(answer) = exchange(&mut connection, self.request.clone()).await {
                    return Ok((answer, connection));
                }
            }
            let address = destinations
                .resolve(&self.endpoint.host, self.endpoint.port)
                .await
                .map_err(|refused| Outcome::Refused(refused.to_string()))?;
            let retry = |error: NoAnswer| Outcome::Retry(error.to_string());
            let mut connection = self.connect(address).await.map_err(retry)?;
            let answer = exchange(&mut connection, self.request.clone())
                .await
                .map_err(retry)?;
            Ok((answer, connection))
        })
        .await;
        let (answer, connection) = match answered {
            Err(_) => return (Outcome::Retry(format!("no answer within {timeout:?}")), None),
            // An endpoint that is down, refuses or resets is tried again
            // as the delivery policy says ("when the system that hosts the
            // subscribed endpoint becomes unavailable").
            Ok(Err(failed)) => return (failed, None),
            Ok(Ok(answered)) => answered,
        };
        let outcome = match answer.status {
            200..300 => Outcome::Delivered,
            status @ (429 | 500..) => Outcome::Retry(format!("answered {status}")),
            status => Outcome::Permanent(format!("answered {status}")),
        };
        (outcome, Some(connection).filter(|c| answer.whole && c.usable()))
    }

    /// A new connection to `address`, TLS handed over if the endpoint is
    /// https.
    async fn connect(&self, address: std::net::SocketAddr) -> Result<Connection, NoAnswer> {
        let stream = TcpStream::connect(address)
            .await
            .map_err(|source| NoAnswer::Connect { address, source })?;
        stream.set_nodelay(true).ok();
        if !self.endpoint.tls {
            return handshake(stream).await;
        }
        let host = self
            .endpoint
            .host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let name = rustls::pki_types::ServerName::try_from(host)?;
        let stream = tokio_rustls::TlsConnector::from(tls_config())
            .connect(name, stream)
            .await
            .map_err(NoAnswer::Tls)?;
        handshake(stream).await
    }
}

async fn handshake<S>(stream: S) -> Result<Connection, NoAnswer>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // Header names as AWS writes them (`X-Amz-Sns-Message-Type`): some
    // receivers compare them with their case.
    let (sender, connection) = http1::Builder::new()
        .title_case_headers(true)
        .handshake(TokioIo::new(stream))
        .await?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(Connection {
        sender,
        driver,
        opened: Instant::now(),
    })
}

/// What an endpoint answered.
struct Answer {
    status: u16,
    /// Whether its body was read to the end (up to [`MAX_ANSWER_BYTES`]);
    /// if not, its connection is not used again.
    whole: bool,
}

/// Sends `request` on `connection`, once it is ready for one: what the
/// endpoint answered.
async fn exchange(connection: &mut Connection, request: Request<Full<Bytes>>) -> Result<Answer, NoAnswer> {
    connection.sender.ready().await?;
    let response = connection.sender.send_request(request).await?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut read = 0;
    while read <= MAX_ANSWER_BYTES {
        match body.frame().await {
            Some(Ok(frame)) => read += frame.data_ref().map_or(0, |data| data.len()),
            Some(Err(_)) => break,
            None => return Ok(Answer { status, whole: true }),
        }
    }
    Ok(Answer { status, whole: false })
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
