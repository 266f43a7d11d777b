//! What a look at a queue of 100,000 messages costs (`/_aws/sqs/messages`,
//! the admin page's browser): how long the queue's lock is held, and how
//! long a client waits for a page.
//!
//! The lock is held for exactly one `Queue::peek`, so that is timed on the
//! core: the default page (1,000 messages of 256 bytes), a page that skips
//! everything it examines (all messages in flight, none asked for: the
//! 10,000-message scan limit), and a FIFO page. The client's wait is timed
//! over HTTP against the ssq binary of this build, memory-only, filled with
//! 100,000 messages: the first page, and every page of the whole queue.
//! Last, what looks cost everyone else: a client sending to another queue,
//! its latency alone and while 8 clients loop over the largest look
//! (`MaxResults=10000&ShowInvisible=true`), p50 and p99 side by side.
//!
//! Run: `cargo bench --bench peek`; `SSQ_BIN=/path/to/ssq` runs another build.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ssq::queue::{MessageAttributes, NewMessage, PeekRequest, Queue, QueueAttributes};

const T0: u64 = 1_700_000_000_000;
const MESSAGES: usize = 100_000;
const BODY: usize = 256;

fn message(i: usize, group: Option<String>) -> NewMessage {
    let mut body = format!("message {i:>10} ");
    body.extend(std::iter::repeat_n('x', BODY - body.len()));
    NewMessage {
        body,
        attributes: MessageAttributes::new(),
        delay_seconds: None,
        sender_id: "bench".into(),
        trace_header: None,
        dedup_id: group.as_ref().map(|_| format!("d{i}")),
        group_id: group,
    }
}

fn queue(fifo: bool) -> Queue {
    let mut attributes = QueueAttributes::default();
    if fifo {
        attributes.set("FifoQueue", "true").expect("valid");
    }
    let name = if fifo { "bench.fifo" } else { "bench" };
    let mut queue = Queue::new(name.into(), attributes, BTreeMap::new(), T0);
    for i in 0..MESSAGES {
        let group = fifo.then(|| format!("g{}", i % 100));
        queue.send(message(i, group), T0).expect("valid message");
    }
    queue
}

/// Median and largest of `rounds` timings of `run`.
fn timed(rounds: usize, mut run: impl FnMut()) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .collect();
    times.sort();
    (times[rounds / 2], times[rounds - 1])
}

fn look(show_invisible: bool) -> PeekRequest {
    PeekRequest {
        from: 0,
        show_invisible,
        show_delayed: false,
        max_messages: 1_000,
        max_bytes: 8 << 20,
    }
}

fn lock_hold() {
    let standard = queue(false);
    let fifo = queue(true);
    let mut in_flight = queue(false);
    in_flight.receive(MESSAGES, Some(3_600), None, None, T0 + 1);
    println!("queue lock held by one look at {MESSAGES} messages (median, max of 200):");
    let cases: [(&str, &Queue, PeekRequest); 3] = [
        ("standard, first page of 1,000", &standard, look(false)),
        ("FIFO (100 groups), first page of 1,000", &fifo, look(false)),
        ("all in flight, none shown (scan limit)", &in_flight, look(false)),
    ];
    for (name, queue, request) in cases {
        let mut shown = 0;
        let (median, max) = timed(200, || shown = queue.peek(&request, T0 + 2).messages.len());
        println!("  {name:<42} {median:>9.2?} {max:>9.2?}  ({shown} shown)");
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("an address")
        .port()
}

async fn over_http() {
    let port = free_port();
    let binary = std::env::var("SSQ_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_ssq").to_string());
    let mut server = Command::new(&binary)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .spawn()
        .expect("the ssq binary starts");
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let call = |target: &'static str, body: String| {
        http.post(&base)
            .header("x-amz-target", format!("AmazonSQS.{target}"))
            .header("content-type", "application/x-amz-json-1.0")
            .body(body)
            .send()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while call("ListQueues", "{}".into()).await.is_err() {
        assert!(Instant::now() < deadline, "ssq did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let url = format!("{base}/000000000000/bench");
    call("CreateQueue", r#"{"QueueName":"bench"}"#.into())
        .await
        .expect("created");
    for batch in 0..MESSAGES / 10 {
        let entries: Vec<serde_json::Value> = (0..10)
            .map(|i| serde_json::json!({"Id": i.to_string(), "MessageBody": message(batch * 10 + i, None).body}))
            .collect();
        let body = serde_json::json!({"QueueUrl": url, "Entries": entries}).to_string();
        let response = call("SendMessageBatch", body).await.expect("sent");
        assert!(response.status().is_success());
    }
    let encoded = serde_urlencoded::to_string([("QueueUrl", &url)]).expect("encodable");
    let page = |token: Option<String>| {
        let after = token.map(|t| format!("&NextToken={t}")).unwrap_or_default();
        http.get(format!("{base}/_aws/sqs/messages?{encoded}{after}"))
            .header("accept", "application/json")
            .send()
    };
    let mut firsts = Vec::new();
    let mut bytes = 0;
    for _ in 0..20 {
        let started = Instant::now();
        let response = page(None).await.expect("answered");
        bytes = response.bytes().await.expect("a body").len();
        firsts.push(started.elapsed());
    }
    firsts.sort();
    let started = Instant::now();
    let (mut pages, mut token) = (0, None);
    loop {
        let response = page(token).await.expect("answered");
        token = response
            .headers()
            .get("x-ssq-next-token")
            .map(|t| t.to_str().expect("ascii").to_string());
        response.bytes().await.expect("a body");
        pages += 1;
        if token.is_none() {
            break;
        }
    }
    let whole = started.elapsed();
    println!("over HTTP, {MESSAGES} messages of {BODY} bytes, memory-only, this build:");
    println!(
        "  first page (1,000 messages, {} KiB JSON): median {:.1?}, max {:.1?} of 20",
        bytes / 1024,
        firsts[10],
        firsts[19]
    );
    println!(
        "  the whole queue: {pages} pages in {whole:.2?} ({:.1?} a page)",
        whole / pages
    );
    let (alone, beside_looks) = sends_beside_looks(&http, &base, &encoded).await;
    println!("a client sending to another queue, 400 sends each (p50, p99):");
    println!(
        "  alone                           {:>9.2?} {:>9.2?}",
        alone.0, alone.1
    );
    println!(
        "  beside 8 clients looking (10,000 a page, invisible too) {:>9.2?} {:>9.2?}",
        beside_looks.0, beside_looks.1
    );
    server.kill().ok();
    server.wait().ok();
}

/// p50 and p99 of 400 sends to a queue of their own, alone and then while 8
/// clients loop over the largest look at the full queue.
async fn sends_beside_looks(
    http: &reqwest::Client,
    base: &str,
    encoded: &str,
) -> ((Duration, Duration), (Duration, Duration)) {
    let call = |target: &'static str, body: String| {
        http.post(base)
            .header("x-amz-target", format!("AmazonSQS.{target}"))
            .header("content-type", "application/x-amz-json-1.0")
            .body(body)
            .send()
    };
    call("CreateQueue", r#"{"QueueName":"other"}"#.into())
        .await
        .expect("created");
    let send_body = format!(r#"{{"QueueUrl":"{base}/000000000000/other","MessageBody":"hello"}}"#);
    let sends = || async {
        let mut times = Vec::with_capacity(400);
        for _ in 0..400 {
            let started = Instant::now();
            call("SendMessage", send_body.clone()).await.expect("sent");
            times.push(started.elapsed());
        }
        times.sort();
        (times[200], times[396])
    };
    let alone = sends().await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lookers: Vec<_> = (0..8)
        .map(|_| {
            let (http, stop) = (http.clone(), stop.clone());
            let url = format!("{base}/_aws/sqs/messages?{encoded}&MaxResults=10000&ShowInvisible=true");
            tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Ok(response) = http.get(&url).send().await {
                        let _ = response.bytes().await;
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let beside_looks = sends().await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for looker in lookers {
        looker.await.ok();
    }
    (alone, beside_looks)
}

fn main() {
    lock_hold();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(over_http());
}
