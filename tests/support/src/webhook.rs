//! HTTP endpoints for SNS to deliver to, as the tests need them: each
//! listens on a free loopback port, records every request that reaches it
//! whole (its `x-amz-sns-message-type`, message id and body), and answers
//! as it is told: at once, 500 to some first tries, never (a stuck
//! endpoint), a byte at a time, or not at all until it starts listening
//! (an endpoint that is down). Answered at once, a connection is kept for
//! the next request (as long as the sender likes, or closed once idle for
//! a while); answered otherwise, it is closed.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How an endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 200 at once.
    Healthy,
    /// 500 to the first try of one message in `n` (by its id), 200 after.
    FailFirstTryOneIn(u32),
    /// Takes the request and never answers.
    Stuck,
    /// 200, written one byte every so often.
    Trickle(Duration),
    /// 200 at once, and the connection closed when no request came on it
    /// for this long, as servers close idle connections.
    HealthyClosingIdleAfter(Duration),
}

/// One request an endpoint received whole.
#[derive(Debug, Clone)]
pub struct Received {
    pub kind: String,
    pub message_id: String,
    pub body: String,
}

struct Shared {
    answer: Answer,
    received: Vec<Received>,
    /// Message ids whose first try was answered 500.
    failed_once: HashSet<String>,
    /// Connections accepted.
    connections: usize,
}

/// An endpoint on loopback.
pub struct Receiver {
    pub port: u16,
    /// Its URL, to subscribe.
    pub url: String,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Listens now and answers as `answer` says.
    pub async fn start(answer: Answer) -> Receiver {
        Receiver::start_on_after(crate::free_port(), answer, Duration::ZERO).await
    }

    /// Listens on `port` once `down` has passed (until then connections to
    /// it are refused): how an endpoint that was there, went down and comes
    /// back looks to its sender.
    pub async fn start_on_after(port: u16, answer: Answer, down: Duration) -> Receiver {
        let shared = Arc::new(Mutex::new(Shared {
            answer,
            received: Vec::new(),
            failed_once: HashSet::new(),
            connections: 0,
        }));
        let serving = shared.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep(down).await;
            let listener = TcpListener::bind(("127.0.0.1", port))
                .await
                .expect("the endpoint's port is free");
            // Its connections end with it (dropped, the endpoint is gone).
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                serving.lock().unwrap().connections += 1;
                while connections.try_join_next().is_some() {}
                connections.spawn(serve(stream, serving.clone()));
            }
        });
        if down.is_zero() {
            crate::wait_for_port(port, "the webhook endpoint");
        }
        Receiver {
            port,
            url: format!("http://127.0.0.1:{port}/hook"),
            shared,
            task,
        }
    }

    /// Answers from now on as `answer` says.
    pub fn answer(&self, answer: Answer) {
        self.shared.lock().unwrap().answer = answer;
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.lock().unwrap().connections
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().unwrap().received.clone()
    }

    /// The bodies of the notifications received (raw delivery: the
    /// messages), each once.
    pub fn notifications(&self) -> HashSet<String> {
        self.received()
            .into_iter()
            .filter(|received| received.kind == "Notification")
            .map(|received| received.body)
            .collect()
    }

    /// Visits the SubscribeURL of every SubscriptionConfirmation received,
    /// as an endpoint confirms; how many.
    pub async fn confirm_all(&self) -> usize {
        let urls: Vec<String> = self
            .received()
            .into_iter()
            .filter(|received| received.kind == "SubscriptionConfirmation")
            .filter_map(|received| {
                let document: serde_json::Value = serde_json::from_str(&received.body).ok()?;
                Some(document["SubscribeURL"].as_str()?.to_string())
            })
            .collect();
        for url in &urls {
            let answer = reqwest::get(url).await.expect("the SubscribeURL answers");
            assert_eq!(answer.status(), 200, "{url}");
        }
        urls.len()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads requests on one connection, records and answers each, until
/// the sender or the answer closes it.
async fn serve(mut stream: TcpStream, shared: Arc<Mutex<Shared>>) {
    let mut buffer = Vec::new();
    while let Some(kept) = serve_one(&mut stream, &mut buffer, &shared).await {
        if let Some(idle) = kept {
            // Closed if nothing more comes within `idle`.
            match tokio::time::timeout(idle, stream.peek(&mut [0u8; 1])).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return,
            }
        }
    }
}

/// Reads one request, records it and answers it: whether the connection
/// is kept (and closed once idle for how long), `None` if it is done.
async fn serve_one(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
    shared: &Mutex<Shared>,
) -> Option<Option<Duration>> {
    let mut chunk = [0u8; 16 * 1024];
    let (head_end, length) = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
            let length = header(&head, "content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
        let read = stream.read(&mut chunk).await.ok().filter(|read| *read > 0)?;
        buffer.extend_from_slice(&chunk[..read]);
    };
    while buffer.len() < head_end + length {
        let read = stream.read(&mut chunk).await.ok().filter(|read| *read > 0)?;
        buffer.extend_from_slice(&chunk[..read]);
    }
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_lowercase();
    let received = Received {
        kind: header(&head, "x-amz-sns-message-type")
            .unwrap_or_default()
            .to_string(),
        message_id: header(&head, "x-amz-sns-message-id")
            .unwrap_or_default()
            .to_string(),
        body: String::from_utf8_lossy(&buffer[head_end..head_end + length]).into_owned(),
    };
    buffer.drain(..head_end + length);
    // The header's value as written, not lower-cased.
    let kind = match received.kind.as_str() {
        "notification" => "Notification",
        "subscriptionconfirmation" => "SubscriptionConfirmation",
        "unsubscribeconfirmation" => "UnsubscribeConfirmation",
        other => other,
    }
    .to_string();
    let received = Received { kind, ..received };
    let answer = {
        let mut shared = shared.lock().unwrap();
        let answer = shared.answer;
        let fails = match answer {
            Answer::FailFirstTryOneIn(n) => {
                let hash = received
                    .message_id
                    .bytes()
                    .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
                hash % n == 0 && shared.failed_once.insert(received.message_id.clone())
            }
            _ => false,
        };
        if !fails && answer != Answer::Stuck {
            shared.received.push(received);
        }
        (answer, fails)
    };
    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
    match answer {
        (Answer::Stuck, _) => {
            // Hold the connection until the sender gives up on it.
            let _ = stream.read(&mut chunk).await;
            None
        }
        (_, true) => {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            None
        }
        (Answer::Trickle(every), _) => {
            let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
            for byte in ok {
                stream.write_all(&[*byte]).await.ok()?;
                tokio::time::sleep(every).await;
            }
            None
        }
        (Answer::HealthyClosingIdleAfter(idle), _) => {
            stream.write_all(ok).await.ok()?;
            Some(Some(idle))
        }
        _ => {
            stream.write_all(ok).await.ok()?;
            Some(None)
        }
    }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim())
    })
}
