//! Does a queue's size change what receive, delete and visibility changes
//! cost? Fills queues of 10 and 1,000,000 messages and times the same
//! operations on each, side by side in one run.
//!
//! Run: `cargo bench --bench queue_scale`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use ssq::queue::{MessageAttributes, NewMessage, Queue, QueueAttributes};

const T0: u64 = 1_700_000_000_000;
const OPS: usize = 100_000;

/// A queue of `count` messages, and the longest single send while filling
/// it (a table that grows by copying itself shows here).
fn filled(count: usize) -> (Queue, std::time::Duration) {
    let mut queue = Queue::new("bench".into(), QueueAttributes::default(), BTreeMap::new(), T0);
    let mut longest = std::time::Duration::ZERO;
    for i in 0..count {
        let started = Instant::now();
        queue.send(message(i), T0).expect("valid message");
        longest = longest.max(started.elapsed());
    }
    (queue, longest)
}

fn message(i: usize) -> NewMessage {
    NewMessage {
        body: format!("message body number {i:>10}"),
        attributes: MessageAttributes::new(),
        delay_seconds: None,
        sender_id: "bench".into(),
        trace_header: None,
        group_id: None,
        dedup_id: None,
    }
}

/// Nanoseconds per operation of: receive one, change its visibility, delete
/// it, send a replacement (so the queue keeps its size).
fn cycle_ns(queue: &mut Queue) -> f64 {
    let started = Instant::now();
    for i in 0..OPS {
        let now = T0 + 1 + i as u64;
        let received = queue.receive(1, None, None, None, now);
        let handle = received[0].receipt_handle;
        queue.change_visibility(handle, 60, now).expect("in flight");
        assert!(queue.delete(handle, now).unwrap());
        queue.send(black_box(message(i)), now).expect("valid message");
    }
    started.elapsed().as_nanos() as f64 / OPS as f64
}

fn main() {
    let (mut small, _) = filled(10);
    let (mut large, longest_send) = filled(1_000_000);
    // Interleave rounds so that machine noise hits both alike.
    let (mut small_ns, mut large_ns) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        small_ns.push(cycle_ns(&mut small));
        large_ns.push(cycle_ns(&mut large));
    }
    small_ns.sort_by(f64::total_cmp);
    large_ns.sort_by(f64::total_cmp);
    let (small_median, large_median) = (small_ns[2], large_ns[2]);
    println!("receive + change visibility + delete + send, per cycle (median of 5 rounds of {OPS}):");
    println!("  queue of        10 messages: {small_median:>8.0} ns");
    println!("  queue of 1,000,000 messages: {large_median:>8.0} ns");
    println!("  ratio 1M / 10: {:.2}", large_median / small_median);
    println!("longest single send while filling 1,000,000: {longest_send:.1?}");
}
