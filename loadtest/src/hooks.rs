//! `publish --hooks N`: N HTTP endpoints on loopback for the topic's HTTP
//! subscriptions, served by this process. Each confirms its subscription
//! (it visits the SubscribeURL it is sent) and answers every notification
//! 200 at once, counting it; the first `--stuck-hooks K` take a
//! notification and never answer, as a stuck endpoint does. The counts
//! give the healthy endpoints' delivery rate, and tell when every
//! acknowledged publication has reached them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{Path, State};
use axum::http::HeaderMap;

/// The endpoints, and what they received.
pub(crate) struct Hooks {
    pub(crate) urls: Vec<String>,
    stuck: usize,
    counts: Arc<Counts>,
}

struct Counts {
    /// Notifications answered, by endpoint.
    delivered: Vec<AtomicU64>,
    /// Subscriptions confirmed.
    confirmed: AtomicU64,
    stuck: usize,
    http: reqwest::Client,
}

impl Hooks {
    /// Serves `count` endpoints on one loopback port, the first `stuck`
    /// of them stuck.
    pub(crate) async fn start(count: usize, stuck: usize) -> std::io::Result<Hooks> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let counts = Arc::new(Counts {
            delivered: (0..count).map(|_| AtomicU64::new(0)).collect(),
            confirmed: AtomicU64::new(0),
            stuck,
            http: reqwest::Client::new(),
        });
        let app = axum::Router::new()
            .route("/hook/{n}", axum::routing::post(receive))
            .with_state(counts.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Hooks {
            urls: (0..count)
                .map(|n| format!("http://127.0.0.1:{port}/hook/{n}"))
                .collect(),
            stuck,
            counts,
        })
    }

    /// Subscriptions confirmed so far.
    pub(crate) fn confirmed(&self) -> usize {
        self.counts.confirmed.load(Ordering::Acquire) as usize
    }

    /// Endpoints that answer.
    pub(crate) fn healthy(&self) -> usize {
        self.urls.len() - self.stuck
    }

    /// Notifications the healthy endpoints answered, together.
    pub(crate) fn delivered(&self) -> u64 {
        self.counts.delivered[self.stuck..]
            .iter()
            .map(|count| count.load(Ordering::Acquire))
            .sum()
    }
}

async fn receive(
    State(counts): State<Arc<Counts>>,
    Path(n): Path<usize>,
    headers: HeaderMap,
    body: String,
) -> &'static str {
    match headers
        .get("x-amz-sns-message-type")
        .and_then(|v| v.to_str().ok())
    {
        Some("SubscriptionConfirmation") => {
            let url = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|document| Some(document["SubscribeURL"].as_str()?.to_string()));
            if let Some(url) = url {
                let counts = counts.clone();
                tokio::spawn(async move {
                    if counts
                        .http
                        .get(url)
                        .send()
                        .await
                        .is_ok_and(|answer| answer.status().is_success())
                    {
                        counts.confirmed.fetch_add(1, Ordering::AcqRel);
                    }
                });
            }
        }
        Some("Notification") if n < counts.stuck => std::future::pending::<()>().await,
        Some("Notification") => {
            if let Some(count) = counts.delivered.get(n) {
                count.fetch_add(1, Ordering::AcqRel);
            }
        }
        _ => {}
    }
    ""
}
