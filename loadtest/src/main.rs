//! ssq-bench: a load generator for any SQS-compatible server.
//!
//! It speaks the AWS JSON 1.0 protocol with plain HTTP requests, so the same
//! tool measures ssq and any other server that speaks it. Scenarios:
//! - `send`: every worker sends, one message or a batch per request;
//! - `receive`: the queues are filled first, then every worker receives and
//!   deletes until they are empty or the time is up;
//! - `roundtrip`: half the workers send, half receive and delete, at once;
//! - `longpoll`: consumers long-poll (WaitTimeSeconds 20) while one producer
//!   sends at a steady rate; reports the delay from send to receive;
//! - `fill`: only fills the queues with `--prefill` messages each, and exits;
//! - `pipeline`: `--concurrency` producers and as many consumers (long
//!   polling, then deleting) on one queue; producers stop after the duration
//!   and the run ends when every message sent is consumed. It reports the CPU
//!   time of this process and the servers per message sent and consumed: the
//!   figure `make bench` compares with BullMQ and RSMQ (loadtest/peers);
//! - `fair`: one tenant's backlog against quiet tenants sending steadily,
//!   consumers that take a while over each message: the quiet tenants'
//!   dwell time (fair queues; see `fair.rs`).
//!
//! Figures: messages per second and latency percentiles per request kind
//! (HdrHistogram), as a table and, with `--json`, as JSON.
//!
//! `--serve-floor ADDR` instead serves the HTTP floor: an axum endpoint that
//! does no queue work and answers each action with a fixed, well-formed
//! response (a receive gets one message), so that the client's work per
//! request is the same as against a real server.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use serde_json::{Value, json};

mod fair;
mod hooks;
mod publish;
mod sign;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "ssq-bench",
    about = "Load generator for SQS-compatible servers (AWS JSON 1.0)."
)]
struct Options {
    /// The server, e.g. http://127.0.0.1:9324.
    #[arg(long, default_value = "http://127.0.0.1:9324")]
    endpoint: String,
    #[arg(long, value_enum, default_value_t = Scenario::Roundtrip)]
    scenario: Scenario,
    /// Concurrent workers (requests in flight).
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Seconds to run (after the warm-up).
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of load before measuring starts.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Body size in bytes.
    #[arg(long, default_value_t = 256)]
    message_size: usize,
    /// Messages per send and per receive (1 to 10; above 1 sends use SendMessageBatch).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Queues to spread the workers over.
    #[arg(long, default_value_t = 1)]
    queues: usize,
    /// Names of the queues: this, then the queue's number.
    #[arg(long, default_value = "ssq-bench-")]
    queue_prefix: String,
    /// Messages per queue to fill before the `receive` scenario.
    #[arg(long, default_value_t = 100_000)]
    prefill: usize,
    /// Messages per second the `longpoll` producer sends.
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// Sends per second, over all workers, in the `send` scenario (0: as
    /// fast as answers come): latency at a load below capacity, where a
    /// closed loop of 64 workers measures mostly their own queueing. A send
    /// is timed from when it leaves, not from when it was due: tokio's timer
    /// wakes in whole milliseconds, which would count against the server.
    #[arg(long, default_value_t = 0.0)]
    send_rate: f64,
    /// Label for this run in the output.
    #[arg(long, default_value = "run")]
    label: String,
    /// Also write the figures as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Processes serving the endpoint (repeatable: ssq and its Redis): their
    /// CPU time during the measurement is reported per request (Linux).
    #[arg(long = "server-pid")]
    server_pids: Vec<u32>,
    /// Sign every request (AWS Signature Version 4) with this
    /// `ACCESS_KEY_ID:SECRET`, for a server that checks signatures.
    #[arg(long)]
    sign: Option<String>,
    /// Use the queues as they are and leave them behind. By default a run
    /// deletes them before it starts and when it ends (a `fill` keeps what
    /// it filled), so that every run starts from nothing.
    #[arg(long)]
    keep_queues: bool,
    /// `fair`: the noisy tenant's backlog, sent before the run.
    #[arg(long, default_value_t = 5_000)]
    noisy_backlog: usize,
    /// `fair`: quiet tenants sending steadily.
    #[arg(long, default_value_t = 20)]
    tenants: usize,
    /// `fair`: messages per second the quiet tenants send together.
    #[arg(long, default_value_t = 40.0)]
    quiet_rate: f64,
    /// `fair`: milliseconds a consumer takes over each message.
    #[arg(long, default_value_t = 150)]
    processing_ms: u64,
    /// `fair`: send without MessageGroupId (the baseline: no tenants).
    #[arg(long)]
    ignore_groups: bool,
    /// Serve the HTTP floor on this address instead of generating load.
    #[arg(long)]
    serve_floor: Option<std::net::SocketAddr>,
    /// `publish`: subscribe the queues with RawMessageDelivery, so that no
    /// envelope is made or signed.
    #[arg(long)]
    raw: bool,
    /// `publish`: also subscribe this many HTTP endpoints, served by this
    /// process on loopback (`hooks.rs`); `--queues 0` for none but them.
    #[arg(long, default_value_t = 0)]
    hooks: usize,
    /// `publish`: Publish calls per second, all workers together (0: as
    /// fast as they are answered).
    #[arg(long, default_value_t = 0.0)]
    publish_rate: f64,
    /// `publish`: how many of the `--hooks` endpoints never answer.
    #[arg(long, default_value_t = 0)]
    stuck_hooks: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Scenario {
    Send,
    Receive,
    Roundtrip,
    Longpoll,
    Fill,
    Pipeline,
    Fair,
    /// SNS Publish to a topic with every queue subscribed (`publish.rs`).
    Publish,
}

/// Latencies and counts of one request kind.
struct Series {
    latency_us: Histogram<u64>,
    requests: u64,
    messages: u64,
    errors: u64,
}

impl Series {
    fn new() -> Series {
        Series {
            latency_us: Histogram::new_with_bounds(1, 120_000_000, 3).unwrap(),
            requests: 0,
            messages: 0,
            errors: 0,
        }
    }
}

#[derive(Clone)]
struct Recorder {
    series: Arc<Mutex<BTreeMap<&'static str, Series>>>,
    measuring: Arc<AtomicBool>,
    progress: Arc<AtomicU64>,
}

impl Recorder {
    /// A short critical section without an await: a std mutex costs the
    /// workers less than an async one.
    fn record(&self, kind: &'static str, started: Instant, messages: usize, ok: bool) {
        if !self.measuring.load(Ordering::Relaxed) {
            return;
        }
        let micros = started.elapsed().as_micros().max(1) as u64;
        let mut series = self.series.lock().expect("no worker panics while recording");
        let entry = series.entry(kind).or_insert_with(Series::new);
        if ok {
            let _ = entry.latency_us.record(micros);
            entry.requests += 1;
            entry.messages += messages as u64;
            self.progress.fetch_add(messages as u64, Ordering::Relaxed);
        } else {
            entry.errors += 1;
        }
    }
}

struct Sqs {
    http: reqwest::Client,
    /// Parsed once: the client's own cost per request should be as small as
    /// it can be, as an SDK's is.
    endpoint: reqwest::Url,
    /// `--sign`: requests signed with it, else only shaped like signed ones.
    signer: Option<sign::Signer>,
}

/// The X-Amz-Target of an action, without building it for every request.
fn target(action: &str) -> reqwest::header::HeaderValue {
    use reqwest::header::HeaderValue;
    match action {
        "SendMessage" => HeaderValue::from_static("AmazonSQS.SendMessage"),
        "SendMessageBatch" => HeaderValue::from_static("AmazonSQS.SendMessageBatch"),
        "ReceiveMessage" => HeaderValue::from_static("AmazonSQS.ReceiveMessage"),
        "DeleteMessage" => HeaderValue::from_static("AmazonSQS.DeleteMessage"),
        "DeleteMessageBatch" => HeaderValue::from_static("AmazonSQS.DeleteMessageBatch"),
        other => HeaderValue::from_str(&format!("AmazonSQS.{other}")).expect("action names are ASCII"),
    }
}

impl Sqs {
    /// One request; the body of a successful answer, unparsed.
    async fn post(&self, action: &str, body: Bytes) -> Result<Bytes, String> {
        use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
        let request = self
            .http
            .post(self.endpoint.clone())
            .header("x-amz-target", target(action))
            .header(
                CONTENT_TYPE,
                HeaderValue::from_static("application/x-amz-json-1.0"),
            );
        let request = match &self.signer {
            Some(signer) => {
                let host = self.endpoint.authority();
                let (date, authorization) = signer.sign(host, &body);
                request.header("x-amz-date", date).header(AUTHORIZATION, authorization)
            }
            // Unsigned, but shaped like SigV4: some servers (moto) route by
            // the service in the credential scope.
            None => request.header(
                AUTHORIZATION,
                HeaderValue::from_static(
                    "AWS4-HMAC-SHA256 Credential=bench/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0",
                ),
            ),
        };
        let response = request.body(body).send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| e.to_string())?;
        if status.is_success() {
            Ok(bytes)
        } else {
            Err(format!("{action}: {status} {}", String::from_utf8_lossy(&bytes)))
        }
    }

    async fn call(&self, action: &str, body: Value) -> Result<Value, String> {
        let bytes = self.post(action, body.to_string().into()).await?;
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    async fn send(&self, queue: &Requests, batch: usize) -> Result<usize, String> {
        if batch <= 1 {
            self.post("SendMessage", queue.send.clone()).await?;
            return Ok(1);
        }
        let out = self.post("SendMessageBatch", queue.send.clone()).await?;
        let out: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
        Ok(out["Successful"].as_array().map_or(0, Vec::len))
    }

    async fn receive(&self, queue: &Requests, wait: u32) -> Result<Vec<Value>, String> {
        let body = match wait {
            0 => &queue.receive,
            1 => &queue.brief_poll,
            _ => &queue.long_poll,
        };
        let out = self.post("ReceiveMessage", body.clone()).await?;
        let mut out: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
        Ok(match out["Messages"].take() {
            Value::Array(messages) => messages,
            _ => Vec::new(),
        })
    }

    async fn delete(&self, queue: &str, messages: &[Value]) -> Result<(), String> {
        if let [message] = messages {
            self.call(
                "DeleteMessage",
                json!({"QueueUrl": queue, "ReceiptHandle": message["ReceiptHandle"]}),
            )
            .await?;
            return Ok(());
        }
        let entries: Vec<Value> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| json!({"Id": i.to_string(), "ReceiptHandle": m["ReceiptHandle"]}))
            .collect();
        self.call(
            "DeleteMessageBatch",
            json!({"QueueUrl": queue, "Entries": entries}),
        )
        .await?;
        Ok(())
    }
}

/// The request bodies that never change for a queue, serialized once:
/// the generator's own cost per request should be as small as it can be.
struct Requests {
    url: String,
    send: Bytes,
    receive: Bytes,
    /// WaitTimeSeconds 1: the pipeline's consumers.
    brief_poll: Bytes,
    long_poll: Bytes,
}

impl Requests {
    fn new(url: &str, body: &str, batch: usize) -> Requests {
        let send = if batch <= 1 {
            json!({"QueueUrl": url, "MessageBody": body})
        } else {
            let entries: Vec<Value> = (0..batch)
                .map(|i| json!({"Id": i.to_string(), "MessageBody": body}))
                .collect();
            json!({"QueueUrl": url, "Entries": entries})
        };
        let receive =
            |wait: u32| json!({"QueueUrl": url, "MaxNumberOfMessages": batch, "WaitTimeSeconds": wait});
        Requests {
            url: url.to_string(),
            send: send.to_string().into(),
            receive: receive(0).to_string().into(),
            brief_poll: receive(1).to_string().into(),
            long_poll: receive(20).to_string().into(),
        }
    }
}

fn now_micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
}

/// The floor: fixed answers, no queue work.
async fn serve_floor(address: std::net::SocketAddr) {
    async fn answer(
        headers: axum::http::HeaderMap,
        _body: axum::body::Bytes,
    ) -> impl axum::response::IntoResponse {
        let target = headers
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let body = match target.trim_start_matches("AmazonSQS.") {
            "CreateQueue" => r#"{"QueueUrl":"http://127.0.0.1/000000000000/floor"}"#,
            "SendMessage" => {
                r#"{"MessageId":"00000000-0000-0000-0000-000000000000","MD5OfMessageBody":"d41d8cd98f00b204e9800998ecf8427e"}"#
            }
            "ReceiveMessage" => {
                r#"{"Messages":[{"MessageId":"00000000-0000-0000-0000-000000000000","ReceiptHandle":"AQAAAAAAAAABAAAAAAAAAAE","MD5OfBody":"d41d8cd98f00b204e9800998ecf8427e","Body":"x"}]}"#
            }
            _ => "{}",
        };
        ([("content-type", "application/x-amz-json-1.0")], body)
    }
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .expect("the floor's address is free");
    eprintln!("HTTP floor serving on {address}");
    axum::serve(
        listener,
        axum::Router::new().route("/", axum::routing::post(answer)),
    )
    .await
    .expect("the floor serves");
}

#[tokio::main]
async fn main() {
    let options = Options::parse();
    if let Some(address) = options.serve_floor {
        serve_floor(address).await;
        return;
    }
    if !(1..=10).contains(&options.batch) {
        eprintln!("ssq-bench: --batch must be 1 to 10");
        std::process::exit(2);
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(options.concurrency * 2)
        .timeout(Duration::from_secs(60))
        .build()
        .expect("an HTTP client");
    let endpoint = reqwest::Url::parse(&options.endpoint).unwrap_or_else(|e| {
        eprintln!("ssq-bench: --endpoint {} is no URL: {e}", options.endpoint);
        std::process::exit(2);
    });
    let signer = match options
        .sign
        .as_deref()
        .map(|text| sign::Signer::parse(text, "us-east-1"))
    {
        None => None,
        Some(Some(signer)) => Some(signer),
        Some(None) => {
            eprintln!("ssq-bench: --sign takes ACCESS_KEY_ID:SECRET");
            std::process::exit(2);
        }
    };
    let sqs = Arc::new(Sqs {
        http,
        endpoint,
        signer,
    });

    let mut queues = Vec::new();
    for i in 0..options.queues {
        let name = format!("{}{i}", options.queue_prefix);
        if !options.keep_queues {
            // Left over from an interrupted run: start from nothing. (Not
            // PurgeQueue: SQS allows one purge a minute.)
            if let Ok(out) = sqs.call("GetQueueUrl", json!({"QueueName": name})).await {
                let _ = sqs
                    .call("DeleteQueue", json!({"QueueUrl": out["QueueUrl"]}))
                    .await;
            }
        }
        let out = sqs
            .call("CreateQueue", json!({"QueueName": name}))
            .await
            .unwrap_or_else(|e| {
                eprintln!(
                    "ssq-bench: cannot create queue {name} at {}: {e}",
                    options.endpoint
                );
                std::process::exit(1);
            });
        let url = out["QueueUrl"]
            .as_str()
            .expect("CreateQueue returns QueueUrl")
            .to_string();
        queues.push(url);
    }
    let body = "x".repeat(options.message_size.max(1));

    if matches!(options.scenario, Scenario::Receive | Scenario::Fill) {
        let started = Instant::now();
        prefill(&sqs, &queues, &body, options.prefill, options.concurrency).await;
        if options.scenario == Scenario::Fill {
            let seconds = started.elapsed().as_secs_f64();
            let total = options.prefill * queues.len();
            println!(
                "{} | filled {total} messages of {} B in {seconds:.1}s ({:.0}/s)",
                options.label,
                options.message_size,
                total as f64 / seconds
            );
            if let Some(path) = &options.json {
                let document = json!({"label": options.label, "scenario": "fill", "messages": total, "seconds": seconds});
                let _ = std::fs::write(path, document.to_string());
            }
            return;
        }
    }

    if options.scenario == Scenario::Fair {
        fair::run(&sqs, &queues[0], &options).await;
        if !options.keep_queues {
            let _ = sqs.call("DeleteQueue", json!({"QueueUrl": queues[0]})).await;
        }
        return;
    }

    if options.scenario == Scenario::Pipeline {
        let queue = Arc::new(Requests::new(&queues[0], &body, options.batch));
        pipeline(&sqs, &queue, &options).await;
        if !options.keep_queues {
            let _ = sqs.call("DeleteQueue", json!({"QueueUrl": queues[0]})).await;
        }
        return;
    }

    let recorder = Recorder {
        series: Arc::new(Mutex::new(BTreeMap::new())),
        measuring: Arc::new(AtomicBool::new(false)),
        progress: Arc::new(AtomicU64::new(0)),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let requests: Vec<Arc<Requests>> = queues
        .iter()
        .map(|url| Arc::new(Requests::new(url, &body, options.batch)))
        .collect();
    let hooks = match options.hooks {
        0 => None,
        count => Some(
            hooks::Hooks::start(count, options.stuck_hooks)
                .await
                .unwrap_or_else(|e| {
                    eprintln!("ssq-bench: cannot serve the HTTP endpoints: {e}");
                    std::process::exit(1);
                }),
        ),
    };
    let hook_urls = hooks.as_ref().map_or(&[][..], |hooks| &hooks.urls[..]);
    let publish = match options.scenario {
        Scenario::Publish => {
            publish::clean_up(&sqs).await;
            let body = publish::prepare(&sqs, &queues, hook_urls, &body, options.raw)
                .await
                .unwrap_or_else(|e| {
                    eprintln!("ssq-bench: cannot prepare the topic at {}: {e}", options.endpoint);
                    std::process::exit(1);
                });
            if let Some(hooks) = &hooks {
                let started = Instant::now();
                while hooks.confirmed() < hooks.urls.len() {
                    if started.elapsed() > Duration::from_secs(30) {
                        eprintln!(
                            "ssq-bench: {} of {} endpoints confirmed",
                            hooks.confirmed(),
                            hooks.urls.len()
                        );
                        std::process::exit(1);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            Some(body)
        }
        _ => None,
    };
    let published = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    let worker_count = if options.scenario == Scenario::Longpoll {
        options.concurrency + 1
    } else {
        options.concurrency
    };
    for w in 0..worker_count {
        let role = match options.scenario {
            Scenario::Send | Scenario::Fill => Role::Producer,
            // Its workers publish (`publish_loop`) whatever their role.
            Scenario::Publish => Role::Producer,
            Scenario::Receive => Role::Consumer,
            Scenario::Roundtrip if w % 2 == 0 => Role::Producer,
            Scenario::Roundtrip => Role::Consumer,
            Scenario::Longpoll if w == 0 => Role::PacedProducer,
            Scenario::Longpoll => Role::LongPoller,
            Scenario::Pipeline | Scenario::Fair => unreachable!("these scenarios run apart"),
        };
        let queue = requests.get(w % requests.len().max(1)).cloned();
        let (sqs, recorder, stop, options) = (sqs.clone(), recorder.clone(), stop.clone(), options.clone());
        let (publish, published) = (publish.clone(), published.clone());
        workers.push(tokio::spawn(async move {
            match (publish, queue) {
                (Some(body), _) => {
                    let rate = options.publish_rate;
                    let every =
                        (rate > 0.0).then(|| Duration::from_secs_f64(options.concurrency as f64 / rate));
                    publish_loop(&sqs, body, &recorder, &stop, &published, every).await
                }
                (None, Some(queue)) => work(role, &sqs, &queue, &options, &recorder, &stop).await,
                (None, None) => eprintln!("ssq-bench: this scenario needs --queues 1 or more"),
            }
        }));
    }

    tokio::time::sleep(Duration::from_secs_f64(options.warmup)).await;
    recorder.measuring.store(true, Ordering::Relaxed);
    let cpu_before = cpu_seconds(&options.server_pids);
    let delivered_before = hooks.as_ref().map_or(0, |hooks| hooks.delivered());
    let started = Instant::now();
    let measure_for = Duration::from_secs_f64(options.duration);
    while started.elapsed() < measure_for {
        tokio::time::sleep(Duration::from_millis(1_000).min(measure_for.saturating_sub(started.elapsed())))
            .await;
        if !options.quiet {
            let done = recorder.progress.load(Ordering::Relaxed);
            eprint!(
                "\r[{:>5.1}s] {} messages, {:.0}/s   ",
                started.elapsed().as_secs_f64(),
                done,
                done as f64 / started.elapsed().as_secs_f64()
            );
        }
    }
    recorder.measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let mut server_cpu = cpu_seconds(&options.server_pids)
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    stop.store(true, Ordering::Relaxed);
    if !options.quiet {
        eprintln!();
    }
    for worker in workers {
        worker.abort();
    }
    let mut extra = serde_json::Map::new();
    if let Some(hooks) = &hooks {
        // The healthy endpoints' rate while publishers ran; then the
        // server's CPU until every acknowledged publication has reached
        // them: what a Publish costs with its deliveries.
        let rate = (hooks.delivered() - delivered_before) as f64 / elapsed / hooks.healthy().max(1) as f64;
        let expected = published.load(Ordering::Acquire) * hooks.healthy() as u64;
        let drain = Instant::now();
        while hooks.delivered() < expected && drain.elapsed() < Duration::from_secs(120) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server_cpu = cpu_seconds(&options.server_pids)
            .zip(cpu_before)
            .map(|(after, before)| after - before);
        println!(
            "HTTP endpoints: {:.0} deliveries/s each while publishing ({} healthy, {} stuck); all delivered {:.1} s \
             after the publishers stopped",
            rate,
            hooks.healthy(),
            options.stuck_hooks,
            drain.elapsed().as_secs_f64()
        );
        extra.insert("hook_deliveries_per_second_each".into(), rate.into());
        extra.insert("hooks_drained".into(), (hooks.delivered() >= expected).into());
    }
    report(
        &options,
        &recorder.series.lock().expect("workers stopped"),
        elapsed,
        server_cpu,
        extra,
    );
    if !options.keep_queues {
        if options.scenario == Scenario::Publish {
            publish::clean_up(&sqs).await;
        }
        for queue in &queues {
            let _ = sqs.call("DeleteQueue", json!({"QueueUrl": queue})).await;
        }
    }
}

/// A publisher: the same Publish, as fast as it is answered.
/// Counts every acknowledged Publish in `published`, measured or not; one
/// Publish per `every` at most, if given.
async fn publish_loop(
    sqs: &Sqs,
    body: Bytes,
    recorder: &Recorder,
    stop: &AtomicBool,
    published: &AtomicU64,
    every: Option<Duration>,
) {
    let mut pace = every.map(|every| {
        let mut pace = tokio::time::interval(every);
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        pace
    });
    while !stop.load(Ordering::Relaxed) {
        if let Some(pace) = &mut pace {
            pace.tick().await;
        }
        let started = Instant::now();
        let ok = sqs.sns_body(body.clone()).await.is_ok();
        if ok {
            published.fetch_add(1, Ordering::AcqRel);
        }
        recorder.record("publish", started, 1, ok);
    }
}

#[derive(Clone, Copy)]
enum Role {
    Producer,
    Consumer,
    PacedProducer,
    LongPoller,
}

async fn work(
    role: Role,
    sqs: &Sqs,
    queue: &Requests,
    options: &Options,
    recorder: &Recorder,
    stop: &AtomicBool,
) {
    let mut paced_next = Instant::now();
    // Paced producers start spread evenly over one interval, not at once.
    static PACED_STARTED: AtomicU64 = AtomicU64::new(0);
    let send_interval = (options.send_rate > 0.0)
        .then(|| Duration::from_secs_f64(options.concurrency as f64 / options.send_rate));
    if let (Some(interval), Role::Producer) = (send_interval, role) {
        let turn = PACED_STARTED.fetch_add(1, Ordering::Relaxed) % options.concurrency as u64;
        paced_next += interval.mul_f64(turn as f64 / options.concurrency as f64);
    }
    while !stop.load(Ordering::Relaxed) {
        match role {
            Role::Producer => {
                if let Some(interval) = send_interval {
                    tokio::time::sleep_until(paced_next.into()).await;
                    paced_next += interval;
                }
                let started = Instant::now();
                let result = sqs.send(queue, options.batch).await;
                let ok = result.is_ok();
                recorder.record("send", started, result.unwrap_or(0), ok);
            }
            Role::PacedProducer => {
                paced_next += Duration::from_secs_f64(1.0 / options.rate.max(0.001));
                tokio::time::sleep_until(paced_next.into()).await;
                let started = Instant::now();
                let stamped = json!({"QueueUrl": queue.url, "MessageBody": now_micros().to_string()});
                let ok = sqs.call("SendMessage", stamped).await.is_ok();
                recorder.record("send", started, 1, ok);
            }
            Role::Consumer | Role::LongPoller => {
                let wait = if matches!(role, Role::LongPoller) { 20 } else { 0 };
                let started = Instant::now();
                let received = sqs.receive(queue, wait).await;
                let Ok(messages) = received else {
                    recorder.record("receive", started, 0, false);
                    continue;
                };
                recorder.record("receive", started, messages.len(), true);
                if messages.is_empty() {
                    if matches!(role, Role::Consumer) && options.scenario == Scenario::Receive {
                        return; // drained
                    }
                    continue;
                }
                if matches!(role, Role::LongPoller) {
                    for message in &messages {
                        if let Some(sent) = message["Body"].as_str().and_then(|b| b.parse::<u128>().ok()) {
                            let delay = Duration::from_micros(now_micros().saturating_sub(sent) as u64);
                            recorder.record("delivery", Instant::now() - delay, 1, true);
                        }
                    }
                }
                let started = Instant::now();
                let ok = sqs.delete(&queue.url, &messages).await.is_ok();
                recorder.record("delete", started, messages.len(), ok);
            }
        }
    }
}

/// Counts of one pipeline round, shared by its producers and consumers.
#[derive(Default)]
struct Flow {
    producing: AtomicBool,
    sent: AtomicU64,
    consumed: AtomicU64,
    /// Every request, answered or not: sends, receives (empty ones too) and
    /// deletes.
    requests: AtomicU64,
    errors: AtomicU64,
    drained: tokio::sync::Notify,
}

impl Flow {
    fn all_consumed(&self) -> bool {
        !self.producing.load(Ordering::Acquire)
            && self.consumed.load(Ordering::Acquire) >= self.sent.load(Ordering::Acquire)
    }
}

/// One round of the `pipeline` scenario: producers for `seconds`, then
/// until every message sent is consumed. Returns the flow's counts and the
/// send latencies.
async fn pipeline_round(
    sqs: &Arc<Sqs>,
    queue: &Arc<Requests>,
    options: &Options,
    seconds: f64,
) -> (Arc<Flow>, Histogram<u64>) {
    let flow = Arc::new(Flow::default());
    flow.producing.store(true, Ordering::Release);
    let mut producers = Vec::new();
    for _ in 0..options.concurrency {
        let (sqs, queue, flow, batch) = (sqs.clone(), queue.clone(), flow.clone(), options.batch);
        producers.push(tokio::spawn(async move {
            let mut latency_us = Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).unwrap();
            while flow.producing.load(Ordering::Relaxed) {
                let started = Instant::now();
                flow.requests.fetch_add(1, Ordering::Relaxed);
                match sqs.send(&queue, batch).await {
                    Ok(n) => {
                        flow.sent.fetch_add(n as u64, Ordering::AcqRel);
                        let _ = latency_us.record(started.elapsed().as_micros().max(1) as u64);
                    }
                    Err(_) => {
                        flow.errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            latency_us
        }));
    }
    let mut consumers = Vec::new();
    for _ in 0..options.concurrency {
        let (sqs, queue, flow) = (sqs.clone(), queue.clone(), flow.clone());
        consumers.push(tokio::spawn(async move {
            // A one-second long poll: no busy loop while the queue is empty,
            // and every consumer notices the end within a second.
            while !flow.all_consumed() {
                flow.requests.fetch_add(1, Ordering::Relaxed);
                let messages = match sqs.receive(&queue, 1).await {
                    Ok(messages) => messages,
                    Err(_) => {
                        flow.errors.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                };
                if messages.is_empty() {
                    continue;
                }
                flow.requests.fetch_add(1, Ordering::Relaxed);
                if sqs.delete(&queue.url, &messages).await.is_err() {
                    flow.errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                flow.consumed.fetch_add(messages.len() as u64, Ordering::AcqRel);
                if flow.all_consumed() {
                    flow.drained.notify_one();
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    flow.producing.store(false, Ordering::Release);
    let mut latency_us = Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).unwrap();
    for producer in producers {
        if let Ok(histogram) = producer.await {
            let _ = latency_us.add(histogram);
        }
    }
    if !flow.all_consumed() {
        // A message a consumer lost to an error returns after its visibility
        // timeout; a minute bounds the wait. (`notify_one` keeps a permit if
        // the last consume came first.)
        let _ = tokio::time::timeout(Duration::from_secs(60), flow.drained.notified()).await;
    }
    (flow, latency_us)
}

/// The `pipeline` scenario: a warm-up round of one second, unmeasured, then
/// the measured round, with the CPU time of this process and of the servers.
async fn pipeline(sqs: &Arc<Sqs>, queue: &Arc<Requests>, options: &Options) {
    let (warmup, _) = pipeline_round(sqs, queue, options, options.warmup).await;
    // The warm-up's consumers end within their one-second poll.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    // This process, then each server (ssq, Redis) in the order given.
    let processes: Vec<u32> = std::iter::once(std::process::id())
        .chain(options.server_pids.iter().copied())
        .collect();
    let before: Vec<Option<f64>> = processes.iter().map(|pid| cpu_seconds(&[*pid])).collect();
    let started = Instant::now();
    let (flow, send_latency) = pipeline_round(sqs, queue, options, options.duration).await;
    let seconds = started.elapsed().as_secs_f64();
    let used: Vec<Option<f64>> = processes
        .iter()
        .zip(before)
        .map(|(pid, before)| {
            cpu_seconds(&[*pid])
                .zip(before)
                .map(|(after, before)| after - before)
        })
        .collect();
    let client_cpu = used[0];
    let server_cpu_each = &used[1..];
    let server_cpu = (!server_cpu_each.is_empty())
        .then(|| server_cpu_each.iter().map(|cpu| cpu.unwrap_or(0.0)).sum::<f64>());
    let sent = flow.sent.load(Ordering::Acquire);
    let consumed = flow.consumed.load(Ordering::Acquire);
    let errors = flow.errors.load(Ordering::Acquire);
    let requests = flow.requests.load(Ordering::Acquire);
    let total_cpu = client_cpu.unwrap_or(0.0) + server_cpu.unwrap_or(0.0);
    let per_thousand = total_cpu * 1e6 / sent.max(1) as f64;
    let q = |p: f64| send_latency.value_at_quantile(p) as f64 / 1000.0;
    println!(
        "{} | pipeline | concurrency {} | batch {} | {sent} messages sent, {consumed} consumed in {seconds:.1}s ({:.0}/s) | {per_thousand:.1} ms CPU per 1,000 (client {:.2} s, servers {:.2} s) | send p50 {:.2} ms p99 {:.2} ms | {errors} errors",
        options.label,
        options.concurrency,
        options.batch,
        consumed as f64 / seconds,
        client_cpu.unwrap_or(0.0),
        server_cpu.unwrap_or(0.0),
        q(0.5),
        q(0.99),
    );
    if let Some(path) = &options.json {
        let document = json!({
            "label": options.label, "scenario": "pipeline", "concurrency": options.concurrency,
            "batch": options.batch, "message_size": options.message_size, "messages": sent,
            "consumed": consumed, "errors": errors, "seconds": seconds,
            "messages_per_second": consumed as f64 / seconds,
            "client_cpu_seconds": client_cpu, "server_cpu_seconds": server_cpu,
            "server_cpu_seconds_each": server_cpu_each,
            "cpu_ms_per_1000_messages": per_thousand, "send_p50_ms": q(0.5), "send_p99_ms": q(0.99),
            "warmup_messages": warmup.sent.load(Ordering::Acquire),
            "requests": requests, "cpu_us_per_request": total_cpu * 1e6 / requests.max(1) as f64,
        });
        if let Err(e) = std::fs::write(path, serde_json::to_string_pretty(&document).unwrap()) {
            eprintln!("ssq-bench: cannot write {}: {e}", path.display());
        }
    }
}

async fn prefill(sqs: &Arc<Sqs>, queues: &[String], body: &str, per_queue: usize, concurrency: usize) {
    eprintln!(
        "filling {} queue(s) with {per_queue} messages each...",
        queues.len()
    );
    let started = Instant::now();
    let mut tasks = Vec::new();
    for queue in queues {
        let per_task = per_queue.div_ceil(concurrency.max(1));
        for t in 0..concurrency.max(1) {
            let count = per_task.min(per_queue.saturating_sub(t * per_task));
            let sqs = sqs.clone();
            let full_batch = Requests::new(queue, body, 10);
            let last_batch = Requests::new(queue, body, (count % 10).max(2));
            tasks.push(tokio::spawn(async move {
                let mut sent = 0;
                let mut failures = 0;
                while sent < count {
                    let n = (count - sent).min(10);
                    let requests = if n == 10 { &full_batch } else { &last_batch };
                    match sqs.send(requests, n.max(2)).await {
                        Ok(k) if k > 0 => {
                            sent += k.min(n);
                            failures = 0;
                        }
                        outcome => {
                            failures += 1;
                            if failures > 50 {
                                eprintln!("prefill: giving up, the server accepts nothing ({outcome:?})");
                                std::process::exit(1);
                            }
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                }
            }));
        }
    }
    for task in tasks {
        let _ = task.await;
    }
    eprintln!("filled in {:.1}s", started.elapsed().as_secs_f64());
}

/// CPU time (user and system) the processes used so far, from
/// /proc/PID/stat; `None` without pids or off Linux.
fn cpu_seconds(pids: &[u32]) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    let mut ticks = 0u64;
    for pid in pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the whole line.
        ticks += fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    }
    // USER_HZ is 100 on every Linux ABI.
    Some(ticks as f64 / 100.0)
}

/// Prints the run's figures and writes them as JSON with `extra` beside
/// them.
fn report(
    options: &Options,
    series: &BTreeMap<&'static str, Series>,
    elapsed: f64,
    server_cpu: Option<f64>,
    extra: serde_json::Map<String, Value>,
) {
    println!(
        "{} | {:?} | concurrency {} | {} B | batch {} | {} queue(s) | {:.1}s",
        options.label,
        options.scenario,
        options.concurrency,
        options.message_size,
        options.batch,
        options.queues,
        elapsed
    );
    println!(
        "{:<9} {:>10} {:>12} {:>12} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "kind", "requests", "req/s", "msgs/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "errors"
    );
    let mut json_series = serde_json::Map::new();
    for (kind, s) in series {
        let q = |p: f64| s.latency_us.value_at_quantile(p) as f64 / 1000.0;
        println!(
            "{:<9} {:>10} {:>12.0} {:>12.0} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>7}",
            kind,
            s.requests,
            s.requests as f64 / elapsed,
            s.messages as f64 / elapsed,
            q(0.5),
            q(0.9),
            q(0.99),
            q(0.999),
            s.errors
        );
        json_series.insert(
            kind.to_string(),
            json!({
                "requests": s.requests, "requests_per_second": s.requests as f64 / elapsed,
                "messages_per_second": s.messages as f64 / elapsed, "errors": s.errors,
                "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99), "p999_ms": q(0.999),
            }),
        );
    }
    let requests: u64 = series.values().map(|s| s.requests).sum();
    let cpu_per_request_us = server_cpu
        .filter(|_| requests > 0)
        .map(|cpu| cpu * 1e6 / requests as f64);
    if let (Some(cpu), Some(per_request)) = (server_cpu, cpu_per_request_us) {
        println!("server CPU: {cpu:.2} s, {per_request:.1} µs per request");
    }
    if let Some(path) = &options.json {
        let mut document = json!({
            "server_cpu_seconds": server_cpu, "server_cpu_us_per_request": cpu_per_request_us,
            "label": options.label, "scenario": format!("{:?}", options.scenario).to_lowercase(),
            "endpoint": options.endpoint, "concurrency": options.concurrency, "message_size": options.message_size,
            "batch": options.batch, "queues": options.queues, "seconds": elapsed, "series": json_series,
        });
        document.as_object_mut().expect("an object").extend(extra);
        if let Err(e) = std::fs::write(path, serde_json::to_string_pretty(&document).unwrap()) {
            eprintln!("ssq-bench: cannot write {}: {e}", path.display());
        }
    }
}
