//! The `fair` scenario: what fair queues do for quiet tenants' dwell time.
//!
//! One tenant ("noisy") has a backlog of `--noisy-backlog` messages, sent
//! before the run; `--tenants` quiet tenants send steadily, `--quiet-rate`
//! messages a second between them; `--concurrency` consumers each receive
//! one message at a time, take about `--processing-ms` over it (from half
//! to one and a half times, drawn for each message: consumers that all
//! took the same time would move in lockstep), and delete it.
//! Dwell time is from a message's send to its receive (both on this
//! machine's clock, carried in the body). With `--ignore-groups` every
//! message is sent without a MessageGroupId: each is a tenant of its own,
//! none is ever noisy, and delivery is what it is on a server that ignores
//! group ids on standard queues: the baseline.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use crate::{Options, Sqs, now_micros};

/// Dwell times of one kind of tenant, in milliseconds.
struct Dwell {
    quiet: Histogram<u64>,
    noisy: Histogram<u64>,
}

pub(crate) async fn run(sqs: &Arc<Sqs>, url: &str, options: &Options) {
    let group = |tenant: &str| (!options.ignore_groups).then(|| tenant.to_string());
    let stamped = |tenant: &str| format!("{tenant} {}", now_micros());
    for first in (0..options.noisy_backlog).step_by(10) {
        let entries: Vec<Value> = (first..options.noisy_backlog.min(first + 10))
            .map(|i| json!({"Id": i.to_string(), "MessageBody": stamped("noisy"), "MessageGroupId": group("noisy")}))
            .collect();
        if let Err(error) = sqs
            .call("SendMessageBatch", json!({"QueueUrl": url, "Entries": entries}))
            .await
        {
            eprintln!("ssq-bench: the backlog could not be sent: {error}");
            std::process::exit(1);
        }
    }

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let dwell = Arc::new(std::sync::Mutex::new(Dwell {
        quiet: Histogram::new(3).expect("a histogram"),
        noisy: Histogram::new(3).expect("a histogram"),
    }));
    let mut tasks = Vec::new();
    let interval = Duration::from_secs_f64(options.tenants as f64 / options.quiet_rate.max(0.001));
    for tenant in 0..options.tenants {
        let (sqs, stop, sent, url) = (sqs.clone(), stop.clone(), sent.clone(), url.to_string());
        let name = format!("quiet-{tenant}");
        let message_group = group(&name);
        // Spread over one interval, not all at once.
        let mut next = Instant::now() + interval.mul_f64(tenant as f64 / options.tenants as f64);
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep_until(next.into()).await;
                next += interval;
                let body = json!({"QueueUrl": url, "MessageBody": format!("{name} {}", now_micros()), "MessageGroupId": message_group});
                if sqs.call("SendMessage", body).await.is_ok() {
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let processing = Duration::from_millis(options.processing_ms);
    for consumer in 0..options.concurrency {
        let (sqs, stop, dwell, url) = (sqs.clone(), stop.clone(), dwell.clone(), url.to_string());
        // xorshift64: the draws need to differ, not to be good.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ (consumer as u64 + 1);
        let mut processing_time = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            processing.mul_f64(0.5 + (state % 1_000) as f64 / 1_000.0)
        };
        tasks.push(tokio::spawn(async move {
            let receive = json!({"QueueUrl": url, "MaxNumberOfMessages": 1, "WaitTimeSeconds": 1});
            while !stop.load(Ordering::Relaxed) {
                let Ok(out) = sqs.call("ReceiveMessage", receive.clone()).await else {
                    continue;
                };
                let received_at = now_micros();
                for message in out["Messages"].as_array().into_iter().flatten() {
                    let body = message["Body"].as_str().unwrap_or_default();
                    let Some((tenant, sent_at)) = body.split_once(' ') else {
                        continue;
                    };
                    let millis =
                        (received_at.saturating_sub(sent_at.parse().unwrap_or(received_at)) / 1000) as u64;
                    {
                        let mut dwell = dwell.lock().expect("no consumer panics");
                        let histogram = if tenant == "noisy" {
                            &mut dwell.noisy
                        } else {
                            &mut dwell.quiet
                        };
                        let _ = histogram.record(millis);
                    }
                    tokio::time::sleep(processing_time()).await;
                    let _ = sqs
                        .call(
                            "DeleteMessage",
                            json!({"QueueUrl": url, "ReceiptHandle": message["ReceiptHandle"]}),
                        )
                        .await;
                }
            }
        }));
    }

    let started = Instant::now();
    while started.elapsed().as_secs_f64() < options.duration {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if !options.quiet {
            let dwell = dwell.lock().expect("no consumer panics");
            eprint!(
                "\r[{:>5.1}s] quiet sent {}, received {} (p50 {} ms); backlog received {}   ",
                started.elapsed().as_secs_f64(),
                sent.load(Ordering::Relaxed),
                dwell.quiet.len(),
                dwell.quiet.value_at_quantile(0.5),
                dwell.noisy.len(),
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.abort();
    }
    if !options.quiet {
        eprintln!();
    }
    let dwell = dwell.lock().expect("the consumers stopped");
    let quantiles = |h: &Histogram<u64>| json!({"p50": h.value_at_quantile(0.5), "p90": h.value_at_quantile(0.9), "p99": h.value_at_quantile(0.99), "received": h.len()});
    let document = json!({
        "label": options.label,
        "scenario": "fair",
        "groups": !options.ignore_groups,
        "quiet_sent": sent.load(Ordering::Relaxed),
        "quiet_dwell_ms": quantiles(&dwell.quiet),
        "backlog_dwell_ms": quantiles(&dwell.noisy),
    });
    println!(
        "{} | quiet tenants' dwell p50 {} ms, p90 {} ms, p99 {} ms ({} received) | backlog's p50 {} ms ({} received)",
        options.label,
        dwell.quiet.value_at_quantile(0.5),
        dwell.quiet.value_at_quantile(0.9),
        dwell.quiet.value_at_quantile(0.99),
        dwell.quiet.len(),
        dwell.noisy.value_at_quantile(0.5),
        dwell.noisy.len(),
    );
    if let Some(path) = &options.json {
        let _ = std::fs::write(path, document.to_string());
    }
}
