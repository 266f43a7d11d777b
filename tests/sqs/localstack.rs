//! The LocalStack drop-in: what LocalStack-based setups look for when they
//! wait for it, its health document and its `Ready.` line.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Server, free_port, ssq_binary};

#[tokio::test]
async fn the_health_document_is_localstacks() {
    let server = Server::start();
    let health = reqwest::Client::new()
        .get(format!("{}/_localstack/health", server.url))
        // By a container's name, as compose health checks call it.
        .header("host", "localstack:4566")
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let body: Value = serde_json::from_str(&health.text().await.unwrap()).unwrap();
    assert_eq!(
        body["services"],
        json!({"sqs": "available"}),
        "serving, not used yet: {body}"
    );
    assert_eq!(body["edition"], "community");
    assert!(body["version"].is_string(), "{body}");
    server.client().list_queues().send().await.unwrap();
    let body: Value =
        serde_json::from_str(&crate::common::get_text(&format!("{}/_localstack/health", server.url)).await)
            .unwrap();
    assert_eq!(
        body["services"],
        json!({"sqs": "running"}),
        "after a call, as LocalStack says: {body}"
    );
}

/// testcontainers' LocalStack module waits for a line matching
/// `.*Ready\.\n` on the container's output.
#[tokio::test]
async fn the_log_says_ready_once_it_serves_as_localstack_does() {
    let port = free_port();
    let mut child = Command::new(ssq_binary())
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ssq binary starts");
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    let ready = loop {
        let Ok(line) = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) else {
            break None;
        };
        if line.ends_with("Ready.") {
            break Some(line);
        }
        seen.push(line);
    };
    let answer = reqwest::get(format!("http://127.0.0.1:{port}/ready"))
        .await
        .map(|r| r.status().as_u16());
    child.kill().unwrap();
    child.wait().unwrap();
    let ready = ready.unwrap_or_else(|| {
        panic!(
            "no line ending in `Ready.` within 10 s; the log:\n{}",
            seen.join("\n")
        )
    });
    assert!(!ready.contains('{'), "the text log, as LocalStack's: {ready}");
    assert_eq!(answer.unwrap(), 200, "Ready. is said once /ready answers 200");
    assert!(seen.iter().all(|line| !line.contains("Ready.")), "said once");
}
