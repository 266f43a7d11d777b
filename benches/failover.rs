//! Failover time with the default lock timings (TTL 5 s, renew 1 s,
//! step-down 3 s, retry 500 ms): from the leader's SIGKILL or SIGTERM to the
//! moment another instance answers /ready with 200. Three instances, one
//! private redis-server; several runs, median reported.
//!
//! Run: `cargo bench --bench failover` (about a minute).

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{RedisServer, Server, single_leader};

const RUNS: usize = 5;

async fn failover_time(signal: &str) -> Duration {
    let redis = RedisServer::start();
    let url = redis.url();
    let mut nodes: Vec<Server> = ["a", "b", "c"]
        .iter()
        .map(|id| Server::start_with(&["--redis-url", &url, "--node-id", id]))
        .collect();
    let leader = single_leader(&nodes, Duration::from_secs(10)).await;
    // Let the passives settle into their retry rhythm.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let old = nodes.remove(leader);
    let started = Instant::now();
    old.signal(signal);
    single_leader(&nodes, Duration::from_secs(15)).await;
    started.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() {
    for signal in ["KILL", "TERM"] {
        let mut samples = Vec::new();
        for _ in 0..RUNS {
            samples.push(failover_time(signal).await);
        }
        let shown: Vec<String> = samples
            .iter()
            .map(|d| format!("{:.0} ms", d.as_secs_f64() * 1e3))
            .collect();
        println!(
            "SIG{signal:<4}: median {:>6.0} ms over {RUNS} runs ({})",
            median(samples).as_secs_f64() * 1e3,
            shown.join(", ")
        );
    }
}
