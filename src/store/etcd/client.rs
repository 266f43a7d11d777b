//! etcd's HTTP/JSON API (the gRPC gateway every etcd ≥ 3.4 serves under
//! `/v3/`), as the lock uses it: a call is a POST of JSON, answered with
//! JSON; 64-bit numbers travel as strings, keys and values in base64.
//!
//! The endpoints of the URL are tried in turn: a call goes to the one that
//! answered last, and moves on to the next when it cannot connect, does
//! not answer within its share of the call's time, or answers that it has
//! no leader or no quorum. Connections are kept open between calls. With a
//! user, a token is asked for once and again when etcd says it is no
//! longer valid.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::Notify;

use super::{LockTls, LockUrl};
use crate::store::tls::{self, TlsError};

/// The most an answer may hold: a lock's answers are a few hundred bytes.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Why an etcd call failed.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("cannot connect to {endpoint}: {source}")]
    Connect {
        endpoint: String,
        source: std::io::Error,
    },
    #[error("TLS to {endpoint}: {source}")]
    Tls {
        endpoint: String,
        source: std::io::Error,
    },
    #[error("{endpoint}: {source}")]
    Http { endpoint: String, source: hyper::Error },
    #[error("{endpoint} gave no answer within {limit:?}")]
    TimedOut { endpoint: String, limit: Duration },
    /// etcd answered with an error: its gRPC code and message.
    #[error("{endpoint} answered {code}: {message}")]
    Answered {
        endpoint: String,
        code: i64,
        message: String,
    },
    #[error("{endpoint} answered what is not JSON: {detail}")]
    Unreadable { endpoint: String, detail: String },
    /// Signing in failed: etcd refused the user (check the URL), or the
    /// member could not be reached (`elsewhere`: another may be).
    #[error("cannot sign in to etcd: {detail}; check the user and password of --lock-url")]
    SignIn { detail: String, elsewhere: bool },
    #[error(
        "the host name of {0} cannot be checked against a certificate: name etcd's members by DNS name or IP address"
    )]
    Name(String),
    #[error(transparent)]
    TlsSetup(#[from] TlsError),
}

/// gRPC codes: the member cannot serve now (no leader, shutting down), or
/// a request timed out inside etcd (no quorum). Another member may.
const UNAVAILABLE: i64 = 14;
const DEADLINE_EXCEEDED: i64 = 4;
/// The auth token is unknown or expired: sign in again.
const UNAUTHENTICATED: i64 = 16;

impl EtcdError {
    /// Whether another endpoint may answer where this one did not.
    fn try_another(&self) -> bool {
        match self {
            EtcdError::Answered { code, .. } => matches!(*code, UNAVAILABLE | DEADLINE_EXCEEDED),
            EtcdError::SignIn { elsewhere, .. } => *elsewhere,
            EtcdError::Unreadable { .. } | EtcdError::Name(_) | EtcdError::TlsSetup(_) => false,
            _ => true,
        }
    }
}

struct Endpoint {
    host: String,
    port: u16,
    /// Connections open to it and idle.
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

impl Endpoint {
    fn name(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// How long signing in may take: etcd hashes the password with bcrypt.
const SIGN_IN_LIMIT: Duration = Duration::from_secs(10);

/// Where signing in stands.
#[derive(Default)]
struct SignIn {
    token: Option<String>,
    running: bool,
    /// Why the last sign-in failed, while no token is held, and whether
    /// another member might have answered.
    failure: Option<(String, bool)>,
}

/// A client of one etcd cluster.
pub struct Etcd {
    endpoints: Vec<Endpoint>,
    tls: Option<Arc<rustls::ClientConfig>>,
    user: Option<(String, String)>,
    /// The endpoint a call goes to first: the one that answered last.
    current: AtomicUsize,
    /// Signing in as `user`: the token etcd gave, a sign-in under way.
    sign_in: Mutex<SignIn>,
    /// Rung when a sign-in ends.
    signed_in: Notify,
    /// How long one endpoint may take to answer before the next is tried.
    attempt_timeout: Duration,
    prefix: String,
}

impl Etcd {
    /// A client of the cluster `url` names; nothing is sent until a call.
    /// `call_timeout` is split among the endpoints a call may try.
    pub fn new(url: &LockUrl, files: &LockTls, call_timeout: Duration) -> Result<Etcd, EtcdError> {
        let tls = match url.tls || files.ca_file.is_some() {
            false => None,
            true => Some(Arc::new(tls::client_config_with_identity(
                files.ca_file.as_deref(),
                files.cert_file.as_deref().zip(files.key_file.as_deref()),
            )?)),
        };
        let tries = url.endpoints.len().clamp(1, 3) as u32;
        Ok(Etcd {
            endpoints: (url.endpoints.iter())
                .map(|(host, port)| Endpoint {
                    host: host.clone(),
                    port: *port,
                    idle: Mutex::default(),
                })
                .collect(),
            tls,
            user: url.user.clone(),
            current: AtomicUsize::new(0),
            sign_in: Mutex::default(),
            signed_in: Notify::new(),
            attempt_timeout: call_timeout / tries,
            prefix: url.prefix.clone(),
        })
    }

    /// The key of shard `shard`'s lock.
    pub fn lock_key(&self, shard: usize) -> String {
        format!("{}/lock/{shard}", self.prefix)
    }

    /// The start every lock key shares.
    pub fn lock_keys(&self) -> String {
        format!("{}/lock/", self.prefix)
    }

    /// POSTs `body` to `path` (`/v3/kv/range`, …): etcd's answer.
    pub async fn call(self: &Arc<Self>, path: &str, body: &Value) -> Result<Value, EtcdError> {
        let count = self.endpoints.len();
        let first = self.current.load(Ordering::Relaxed);
        let mut failure = None;
        for step in 0..count {
            let index = (first + step) % count;
            match self.call_on(index, path, body).await {
                Ok(answer) => {
                    self.current.store(index, Ordering::Relaxed);
                    return Ok(answer);
                }
                Err(error) if error.try_another() => failure = Some(error),
                Err(error) => return Err(error),
            }
        }
        // Next time, start past the endpoint that failed first.
        self.current.store((first + 1) % count, Ordering::Relaxed);
        Err(failure.expect("at least one endpoint"))
    }

    /// A call on endpoint `index`, signed in if a user is configured.
    async fn call_on(self: &Arc<Self>, index: usize, path: &str, body: &Value) -> Result<Value, EtcdError> {
        let endpoint = &self.endpoints[index];
        let limit = self.attempt_timeout;
        let attempt = async {
            let token = self.token(index).await?;
            match self.post(index, path, body, token.as_deref()).await {
                Err(EtcdError::Answered { code, .. }) if code == UNAUTHENTICATED && token.is_some() => {
                    self.forget(token.as_deref());
                    let token = self.token(index).await?;
                    self.post(index, path, body, token.as_deref()).await
                }
                answer => answer,
            }
        };
        tokio::time::timeout(limit, attempt).await.unwrap_or_else(|_| {
            Err(EtcdError::TimedOut {
                endpoint: endpoint.name(),
                limit,
            })
        })
    }

    fn sign_in_state(&self) -> std::sync::MutexGuard<'_, SignIn> {
        self.sign_in
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Drops `token`, which etcd no longer knows (it expired, or the
    /// members restarted), unless another sign-in replaced it already.
    fn forget(&self, token: Option<&str>) {
        let mut state = self.sign_in_state();
        if state.token.as_deref() == token {
            state.token = None;
        }
    }

    /// The auth token to send: the one held, or one asked for on endpoint
    /// `index`. Signing in costs etcd a bcrypt hash, longer than a lock
    /// call may wait, so it runs as a task of its own, bounded by
    /// [`SIGN_IN_LIMIT`]: a call that gives up waiting leaves it running,
    /// and a later call takes its token.
    async fn token(self: &Arc<Self>, index: usize) -> Result<Option<String>, EtcdError> {
        let Some((name, password)) = &self.user else {
            return Ok(None);
        };
        let signed_in = self.signed_in.notified();
        tokio::pin!(signed_in);
        signed_in.as_mut().enable();
        {
            let mut state = self.sign_in_state();
            if let Some(token) = &state.token {
                return Ok(Some(token.clone()));
            }
            if !state.running {
                state.running = true;
                let me = self.clone();
                let body = json!({"name": name, "password": password});
                tokio::spawn(async move {
                    let signing_in = me.post(index, "/v3/auth/authenticate", &body, None);
                    let answer = tokio::time::timeout(SIGN_IN_LIMIT, signing_in).await;
                    let mut state = me.sign_in_state();
                    state.running = false;
                    match answer {
                        Ok(Ok(answer)) => {
                            state.token = answer["token"].as_str().map(str::to_string);
                            state.failure = None;
                        }
                        Ok(Err(error)) => state.failure = Some((error.to_string(), error.try_another())),
                        Err(_) => state.failure = Some((format!("no answer within {SIGN_IN_LIMIT:?}"), true)),
                    }
                    drop(state);
                    me.signed_in.notify_waiters();
                });
            }
        }
        signed_in.await;
        let state = self.sign_in_state();
        match (&state.token, &state.failure) {
            (Some(token), _) => Ok(Some(token.clone())),
            (None, failure) => {
                let (detail, elsewhere) = failure.clone().unwrap_or_default();
                Err(EtcdError::SignIn { detail, elsewhere })
            }
        }
    }

    /// One POST on a kept or new connection to endpoint `index`.
    async fn post(
        &self,
        index: usize,
        path: &str,
        body: &Value,
        token: Option<&str>,
    ) -> Result<Value, EtcdError> {
        let endpoint = &self.endpoints[index];
        let kept = endpoint.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut sender = match kept {
            Some(sender) if !sender.is_closed() => sender,
            _ => self.connect(endpoint).await?,
        };
        let http = |source| EtcdError::Http {
            endpoint: endpoint.name(),
            source,
        };
        sender.ready().await.map_err(http)?;
        let response = sender
            .send_request(self.request(endpoint, path, body, token))
            .await
            .map_err(http)?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|error| EtcdError::Unreadable {
                endpoint: endpoint.name(),
                detail: error.to_string(),
            })?
            .to_bytes();
        endpoint
            .idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(sender);
        let answer: Value = serde_json::from_slice(&bytes).map_err(|error| EtcdError::Unreadable {
            endpoint: endpoint.name(),
            detail: error.to_string(),
        })?;
        // A streaming call's error comes inside a 200 as `{"error": {...}}`.
        let error = match &answer["error"] {
            Value::Object(error) => Some(Value::Object(error.clone())),
            _ if !status.is_success() => Some(answer.clone()),
            _ => None,
        };
        match error {
            None => Ok(answer),
            Some(error) => Err(EtcdError::Answered {
                endpoint: endpoint.name(),
                code: error["code"].as_i64().unwrap_or(-1),
                message: error["message"].as_str().unwrap_or("").to_string(),
            }),
        }
    }

    /// Opens a stream on the endpoint calls go to first (a watch): etcd's
    /// answer as it comes. Not bounded in time: the caller reads it.
    pub async fn stream(self: &Arc<Self>, path: &str, body: &Value) -> Result<Response<Incoming>, EtcdError> {
        let index = self.current.load(Ordering::Relaxed) % self.endpoints.len();
        let endpoint = &self.endpoints[index];
        let opening = async {
            let token = self.token(index).await?;
            let mut sender = self.connect(endpoint).await?;
            let http = |source| EtcdError::Http {
                endpoint: endpoint.name(),
                source,
            };
            sender.ready().await.map_err(http)?;
            sender
                .send_request(self.request(endpoint, path, body, token.as_deref()))
                .await
                .map_err(http)
        };
        let limit = self.attempt_timeout;
        let opened = tokio::time::timeout(limit, opening).await.unwrap_or_else(|_| {
            Err(EtcdError::TimedOut {
                endpoint: endpoint.name(),
                limit,
            })
        });
        if opened.is_err() {
            // The next watch, and the next call, try another member.
            let next = (index + 1) % self.endpoints.len();
            let _ = (self.current).compare_exchange(index, next, Ordering::Relaxed, Ordering::Relaxed);
        }
        opened
    }

    fn request(
        &self,
        endpoint: &Endpoint,
        path: &str,
        body: &Value,
        token: Option<&str>,
    ) -> Request<Full<Bytes>> {
        let mut request = Request::post(path)
            .header(hyper::header::HOST, endpoint.name())
            .header(hyper::header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header(hyper::header::AUTHORIZATION, token);
        }
        request
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("a request of a valid path and headers")
    }

    async fn connect(&self, endpoint: &Endpoint) -> Result<SendRequest<Full<Bytes>>, EtcdError> {
        let name = endpoint.name();
        let stream = TcpStream::connect((endpoint.host.as_str(), endpoint.port))
            .await
            .map_err(|source| EtcdError::Connect {
                endpoint: name.clone(),
                source,
            })?;
        stream.set_nodelay(true).ok();
        let Some(tls) = &self.tls else {
            return handshake(stream, name).await;
        };
        let host = endpoint
            .host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let server =
            rustls::pki_types::ServerName::try_from(host).map_err(|_| EtcdError::Name(name.clone()))?;
        let stream = tokio_rustls::TlsConnector::from(tls.clone())
            .connect(server, stream)
            .await
            .map_err(|source| EtcdError::Tls {
                endpoint: name.clone(),
                source,
            })?;
        handshake(stream, name).await
    }
}

async fn handshake<S>(stream: S, endpoint: String) -> Result<SendRequest<Full<Bytes>>, EtcdError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|source| EtcdError::Http { endpoint, source })?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// A key or value as etcd's JSON carries it.
pub fn encode(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A key or value from etcd's JSON (empty when absent or unreadable).
pub fn decode(value: &Value) -> String {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value.as_str().unwrap_or_default())
        .unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// A 64-bit number from etcd's JSON, which writes them as strings
/// (absent: the field's default, 0).
pub fn number(value: &Value) -> i64 {
    match value {
        Value::String(text) => text.parse().unwrap_or(0),
        Value::Number(number) => number.as_i64().unwrap_or(0),
        _ => 0,
    }
}
