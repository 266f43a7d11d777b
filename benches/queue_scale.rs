//! Does a queue's size change what receive, delete and visibility changes
//! cost? Fills queues of 10 and 1,000,000 messages, and one of 1,000,000
//! over 10,000 tenants (fair queues, with a noisy tenant, so that every
//! receive chooses among quiet tenants), and times the same operations on
//! each, side by side in one run.
//!
//! Run: `cargo bench --bench queue_scale`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use ssq::queue::{MessageAttributes, NewMessage, Queue, QueueAttributes};

const T0: u64 = 1_700_000_000_000;
const OPS: usize = 100_000;

/// Tenants of the fair-queue case.
const TENANTS: usize = 10_000;

/// The group of message `i`: none, or one of [`TENANTS`].
type Grouping = fn(usize) -> Option<String>;

fn ungrouped(_: usize) -> Option<String> {
    None
}

fn tenant(i: usize) -> Option<String> {
    Some(format!("tenant-{}", i % TENANTS))
}

/// A queue of `count` messages, and the longest single send while filling
/// it (a table that grows by copying itself shows here).
fn filled(count: usize, group: Grouping) -> (Queue, std::time::Duration) {
    let mut queue = Queue::new("bench".into(), QueueAttributes::default(), BTreeMap::new(), T0);
    let mut longest = std::time::Duration::ZERO;
    for i in 0..count {
        let started = Instant::now();
        queue.send(message(i, group), T0).expect("valid message");
        longest = longest.max(started.elapsed());
    }
    (queue, longest)
}

/// A queue of 1,000,000 messages over [`TENANTS`] tenants, behind the
/// backlog of a noisy one (100 messages, 40 of them in flight).
fn fair_filled() -> Queue {
    let mut queue = Queue::new("bench".into(), QueueAttributes::default(), BTreeMap::new(), T0);
    for i in 0..100 {
        queue
            .send(message(i, |_| Some("noisy".into())), T0)
            .expect("valid message");
    }
    assert_eq!(queue.receive(10, Some(43_000), None, None, T0).len(), 10);
    for _ in 0..3 {
        queue.receive(10, Some(43_000), None, None, T0);
    }
    assert_eq!(queue.noisy_tenants(T0).len(), 1, "the backlog's tenant is noisy");
    for i in 0..1_000_000 {
        queue.send(message(i, tenant), T0).expect("valid message");
    }
    queue
}

fn message(i: usize, group: Grouping) -> NewMessage {
    NewMessage {
        body: format!("message body number {i:>10}"),
        attributes: MessageAttributes::new(),
        delay_seconds: None,
        sender_id: "bench".into(),
        trace_header: None,
        group_id: group(i),
        dedup_id: None,
    }
}

/// Nanoseconds per operation of: receive one, change its visibility, delete
/// it, send a replacement (so the queue keeps its size).
fn cycle_ns(queue: &mut Queue, group: Grouping) -> f64 {
    let started = Instant::now();
    for i in 0..OPS {
        let now = T0 + 1 + i as u64;
        let received = queue.receive(1, None, None, None, now);
        let handle = received[0].receipt_handle;
        queue.change_visibility(handle, 60, now).expect("in flight");
        assert!(queue.delete(handle, now).unwrap());
        queue
            .send(black_box(message(i, group)), now)
            .expect("valid message");
    }
    started.elapsed().as_nanos() as f64 / OPS as f64
}

fn main() {
    let (mut small, _) = filled(10, ungrouped);
    let (mut large, longest_send) = filled(1_000_000, ungrouped);
    let mut fair = fair_filled();
    // Interleave rounds so that machine noise hits all alike.
    let (mut small_ns, mut large_ns, mut fair_ns) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        small_ns.push(cycle_ns(&mut small, ungrouped));
        large_ns.push(cycle_ns(&mut large, ungrouped));
        fair_ns.push(cycle_ns(&mut fair, tenant));
    }
    assert_eq!(
        fair.noisy_tenants(T0 + OPS as u64).len(),
        1,
        "receives took quiet tenants' messages"
    );
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[2]
    };
    let (small_median, large_median, fair_median) = (median(small_ns), median(large_ns), median(fair_ns));
    println!("receive + change visibility + delete + send, per cycle (median of 5 rounds of {OPS}):");
    println!("  queue of        10 messages: {small_median:>8.0} ns");
    println!("  queue of 1,000,000 messages: {large_median:>8.0} ns");
    println!("  queue of 1,000,000 messages over {TENANTS} tenants, one noisy: {fair_median:>8.0} ns");
    println!("  ratio 1M / 10: {:.2}", large_median / small_median);
    println!(
        "  ratio 1M over {TENANTS} tenants / 10: {:.2}",
        fair_median / small_median
    );
    println!("longest single send while filling 1,000,000: {longest_send:.1?}");
}
