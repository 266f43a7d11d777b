//! HTTP endpoints for SNS to deliver to, as the tests need them: each
//! listens on a free loopback port, records every request that reaches it
//! whole (its `x-amz-sns-message-type`, message id and body), and answers
//! as it is told: at once, 500 to some first tries, never (a stuck
//! endpoint), a byte at a time, or not at all until it starts listening
//! (an endpoint that is down).

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
        }));
        let serving = shared.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep(down).await;
            let listener = TcpListener::bind(("127.0.0.1", port))
                .await
                .expect("the endpoint's port is free");
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(serve(stream, serving.clone()));
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

/// Reads one request, records it and answers it.
async fn serve(mut stream: TcpStream, shared: Arc<Mutex<Shared>>) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let (head_end, length) = loop {
        let Ok(read) = stream.read(&mut chunk).await else {
            return;
        };
        if read == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
            let length = header(&head, "content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while buffer.len() < head_end + length {
        let Ok(read) = stream.read(&mut chunk).await else {
            return;
        };
        if read == 0 {
            return;
        }
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
    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    match answer {
        (Answer::Stuck, _) => {
            // Hold the connection until the sender gives up on it.
            let _ = stream.read(&mut chunk).await;
        }
        (_, true) => {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
        }
        (Answer::Trickle(every), _) => {
            for byte in ok {
                if stream.write_all(&[*byte]).await.is_err() {
                    return;
                }
                tokio::time::sleep(every).await;
            }
        }
        _ => {
            let _ = stream.write_all(ok).await;
        }
    }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim())
    })
}
