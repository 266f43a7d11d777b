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

/// ssq's log lines, as a program reading its output gets them: from a
/// pipe, or (`terminal`) through a pseudo-terminal made by `script`, until
/// a line is `Ready.` or 10 s pass. Returns the lines before it and the
/// status `/ready` then answers.
async fn log_until_ready(terminal: bool, env: &[(&str, &str)]) -> (Option<String>, Vec<String>, Option<u16>) {
    let port = free_port();
    let ssq = format!("{} --listen 127.0.0.1:{port}", ssq_binary().display());
    let mut command = match terminal {
        true => {
            let mut script = Command::new("script");
            script.args(["-qefc", &ssq, "/dev/null"]);
            script
        }
        false => {
            let mut direct = Command::new(ssq_binary());
            direct.args(["--listen", &format!("127.0.0.1:{port}")]);
            direct
        }
    };
    command.env("RUST_LOG", "info").env_remove("NO_COLOR");
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ssq binary starts");
    // A terminal's output comes on script's stdout; a pipe's on stderr.
    let output: Box<dyn std::io::Read + Send> = match terminal {
        true => Box::new(child.stdout.take().unwrap()),
        false => Box::new(child.stderr.take().unwrap()),
    };
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if lines_tx.send(line.trim_end_matches('\r').to_string()).is_err() {
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
        if line.contains("Ready.") {
            break Some(line);
        }
        seen.push(line);
    };
    let answer = reqwest::get(format!("http://127.0.0.1:{port}/ready"))
        .await
        .map(|r| r.status().as_u16())
        .ok();
    // Under `script`, ssq leads a session of its own, and a SIGHUP that
    // `nohup` made it ignore would not end it: it is killed by its command
    // line (a pattern that starts with no dash, which pkill would take for
    // an option), so that none outlives the test.
    let ours = format!("ssq --listen 127.0.0.1:{port}");
    let _ = Command::new("pkill").args(["-KILL", "-f", &ours]).status();
    child.kill().unwrap();
    child.wait().unwrap();
    (ready, seen, answer)
}

/// testcontainers' LocalStack module waits for a line matching
/// `.*Ready\.\n` on the container's output; LocalStack writes `Ready.`
/// alone on its line, and so does ssq. Read from a pipe (a file, `docker
/// logs`), no line carries a colour escape.
#[tokio::test]
async fn the_log_says_ready_alone_on_its_line_once_it_serves_as_localstack_does() {
    let (ready, seen, answer) = log_until_ready(false, &[]).await;
    assert_eq!(
        ready.as_deref(),
        Some("Ready."),
        "alone on its line, within 10 s; the log:\n{}",
        seen.join("\n")
    );
    assert_eq!(answer, Some(200), "Ready. is said once /ready answers 200");
    assert!(!seen.is_empty(), "the start was logged");
    assert!(
        seen.iter().all(|line| !line.contains('\x1b')),
        "no colour escapes into a pipe: {seen:?}"
    );
}

/// Colour for a person at a terminal, and never with `NO_COLOR`.
#[tokio::test]
async fn log_lines_are_coloured_on_a_terminal_unless_no_color_is_set() {
    let (ready, seen, _) = log_until_ready(true, &[]).await;
    assert_eq!(ready.as_deref(), Some("Ready."), "{seen:?}");
    assert!(
        seen.iter().any(|line| line.contains('\x1b')),
        "coloured on a terminal: {seen:?}"
    );
    let (ready, seen, _) = log_until_ready(true, &[("NO_COLOR", "1")]).await;
    assert_eq!(ready.as_deref(), Some("Ready."), "{seen:?}");
    assert!(
        seen.iter().all(|line| !line.contains('\x1b')),
        "NO_COLOR: no colour on a terminal either: {seen:?}"
    );
}
