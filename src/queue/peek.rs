//! Looking at a queue's messages without touching them: what the developer
//! endpoint (`/_aws/sqs/messages`) and the admin page's message browser show.
//!
//! [`Queue::peek`] borrows the queue immutably, so it cannot count a
//! receive, move a message between indexes, or record a change for the
//! store: a look leaves receive counts, visibility, FIFO groups and Redis
//! exactly as they were. Time is applied only to what is shown, the way
//! `Queue::advance` would apply it: a message whose delay or visibility
//! timeout has run out shows as visible, and one past the retention period
//! does not show.
//!
//! A look walks the messages in sequence order from a cursor. That is the
//! order they were sent in, which is the order a standard queue delivers its
//! visible messages and each FIFO group delivers its own. It stops at
//! whichever comes first: the messages asked for, the bytes asked for, or
//! [`SCAN_LIMIT`] messages looked at. So one look holds the queue's lock for
//! a bounded time however many messages the queue holds, and a page that
//! stops early says where the next one starts.

use std::collections::HashMap;
use std::sync::Arc;

use super::Queue;
use super::message::{Message, MessageState};

/// Messages (and FIFO in-flight entries) one look examines at most. At
/// about 20 ns each, this keeps the lock held for well under a millisecond
/// (`cargo bench --bench queue_scale`), even when the filter skips most of
/// what it examines.
pub const SCAN_LIMIT: usize = 10_000;

/// Where a shown message stands, as a receive would see it now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Visible,
    InFlight,
    /// FIFO: visible itself, but behind a message of its group that is in
    /// flight, so that no receive takes it yet.
    HeldByGroup,
    Delayed,
}

impl Seen {
    /// Whether a receive could take the message now.
    pub fn is_visible(self) -> bool {
        self == Seen::Visible
    }

    pub fn is_delayed(self) -> bool {
        self == Seen::Delayed
    }
}

/// One page of a look.
#[derive(Debug, Clone, Copy)]
pub struct PeekRequest {
    /// The sequence number to start from (0: the beginning).
    pub from: u64,
    /// Also show the messages in flight, and FIFO messages held behind them.
    pub show_invisible: bool,
    /// Also show the messages whose delay has not passed.
    pub show_delayed: bool,
    pub max_messages: usize,
    /// The page ends with the message that reaches this many payload bytes.
    pub max_bytes: usize,
}

#[derive(Debug)]
pub struct Peeked {
    pub messages: Vec<(Message, Seen)>,
    /// Where the next page starts, when there may be more to show.
    pub next: Option<u64>,
}

impl Queue {
    /// One page of the messages `request` asks to see, as they stand at
    /// `now`, in sequence order.
    pub fn peek(&self, request: &PeekRequest, now: u64) -> Peeked {
        let retention_ms = u64::from(self.attributes.message_retention_period) * 1000;
        // FIFO group → its oldest message in flight now, once looked up.
        let mut oldest_in_flight: HashMap<Arc<str>, Option<u64>> = HashMap::new();
        let mut budget = SCAN_LIMIT;
        let mut shown = Vec::new();
        let mut bytes = 0;
        let mut messages = self.messages_from(request.from);
        let next = loop {
            let Some(message) = messages.next() else {
                break None;
            };
            if budget == 0 || shown.len() >= request.max_messages || bytes >= request.max_bytes {
                break Some(message.seq);
            }
            budget -= 1;
            if message.sent_at.saturating_add(retention_ms) <= now {
                continue;
            }
            let seen = match (message.state, &message.group_id) {
                (MessageState::Delayed { until }, _) if until > now => Seen::Delayed,
                (MessageState::InFlight { until, .. }, _) if until > now => Seen::InFlight,
                (_, Some(group)) if self.is_fifo() => {
                    let oldest = *oldest_in_flight
                        .entry(group.clone())
                        .or_insert_with(|| self.oldest_in_flight(group, now, &mut budget));
                    if oldest.is_some_and(|oldest| oldest < message.seq) {
                        Seen::HeldByGroup
                    } else {
                        Seen::Visible
                    }
                }
                _ => Seen::Visible,
            };
            let wanted = match seen {
                Seen::Visible => true,
                Seen::InFlight | Seen::HeldByGroup => request.show_invisible,
                Seen::Delayed => request.show_delayed,
            };
            if wanted {
                bytes += message.payload_size() as usize;
                shown.push((message.clone(), seen));
            }
        };
        Peeked {
            messages: shown,
            next,
        }
    }

    /// The sequence number of the group's oldest message still in flight at
    /// `now`. The in-flight index may hold messages whose timeout already
    /// ran out (time moves them lazily); past the budget, the first
    /// remaining entry is taken as it stands, so that a look stays bounded.
    fn oldest_in_flight(&self, group: &str, now: u64, budget: &mut usize) -> Option<u64> {
        for message in self.group_in_flight(group) {
            let still = matches!(message.state, MessageState::InFlight { until, .. } if until > now);
            if still || *budget == 0 {
                return Some(message.seq);
            }
            *budget -= 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::queue::{NewMessage, QueueAttributes};

    fn queue(name: &str) -> Queue {
        let mut attributes = QueueAttributes::default();
        if name.ends_with(".fifo") {
            attributes.set("FifoQueue", "true").unwrap();
            attributes.set("ContentBasedDeduplication", "true").unwrap();
        }
        Queue::new(name.into(), attributes, BTreeMap::new(), 0)
    }

    fn send(queue: &mut Queue, body: &str, group: Option<&str>, delay: Option<u32>, now: u64) {
        queue
            .send(
                NewMessage {
                    body: body.into(),
                    attributes: Default::default(),
                    delay_seconds: delay,
                    sender_id: "000000000000".into(),
                    trace_header: None,
                    group_id: group.map(str::to_string),
                    dedup_id: None,
                },
                now,
            )
            .unwrap();
    }

    fn look(invisible: bool, delayed: bool) -> PeekRequest {
        PeekRequest {
            from: 0,
            show_invisible: invisible,
            show_delayed: delayed,
            max_messages: 1000,
            max_bytes: usize::MAX,
        }
    }

    fn bodies(peeked: &Peeked) -> Vec<(String, Seen)> {
        peeked
            .messages
            .iter()
            .map(|(m, seen)| (m.body.to_string(), *seen))
            .collect()
    }

    #[test]
    fn shows_each_state_as_a_receive_would_see_it_now() {
        let mut q = queue("q");
        send(&mut q, "in-flight", None, None, 0);
        send(&mut q, "visible", None, None, 0);
        send(&mut q, "delayed", None, Some(10), 0);
        q.receive(1, Some(30), None, None, 1_000);
        assert_eq!(
            bodies(&q.peek(&look(false, false), 2_000)),
            [("visible".into(), Seen::Visible)]
        );
        assert_eq!(
            bodies(&q.peek(&look(true, true), 2_000)),
            [
                ("in-flight".into(), Seen::InFlight),
                ("visible".into(), Seen::Visible),
                ("delayed".into(), Seen::Delayed)
            ]
        );
        // Later, the delay and the visibility timeout have run out: both
        // show as visible, though the indexes have not moved them yet.
        assert_eq!(
            bodies(&q.peek(&look(false, false), 40_000)),
            [
                ("in-flight".into(), Seen::Visible),
                ("visible".into(), Seen::Visible),
                ("delayed".into(), Seen::Visible)
            ]
        );
        // Past the retention period (4 days by default) nothing shows.
        assert!(q.peek(&look(true, true), 5 * 86_400_000).messages.is_empty());
    }

    #[test]
    fn a_look_changes_nothing_a_receive_sees() {
        let mut q = queue("q");
        send(&mut q, "a", None, None, 0);
        q.enable_journal();
        q.peek(&look(true, true), 10);
        assert!(q.take_changes().is_empty(), "nothing recorded for the store");
        let received = q.receive(1, None, None, None, 20);
        assert_eq!(
            received[0].message.receive_count, 1,
            "no receive counted by the look"
        );
        assert_eq!(received[0].message.first_received_at, Some(20));
    }

    #[test]
    fn fifo_messages_behind_a_group_in_flight_are_held() {
        let mut q = queue("q.fifo");
        send(&mut q, "g1-first", Some("1"), None, 0);
        send(&mut q, "g1-second", Some("1"), None, 0);
        send(&mut q, "g2-first", Some("2"), None, 0);
        q.receive(1, Some(30), None, None, 1_000);
        assert_eq!(
            bodies(&q.peek(&look(false, false), 2_000)),
            [("g2-first".into(), Seen::Visible)]
        );
        assert_eq!(
            bodies(&q.peek(&look(true, false), 2_000)),
            [
                ("g1-first".into(), Seen::InFlight),
                ("g1-second".into(), Seen::HeldByGroup),
                ("g2-first".into(), Seen::Visible)
            ]
        );
        // Once the receive's timeout runs out the group delivers again.
        assert_eq!(q.peek(&look(false, false), 40_000).messages.len(), 3);
    }

    #[test]
    fn pages_stop_at_the_count_the_bytes_or_the_scan_limit() {
        let mut q = queue("q");
        for i in 0..25 {
            send(&mut q, &format!("m{i:02}"), None, None, 0);
        }
        let mut request = PeekRequest {
            max_messages: 10,
            ..look(false, false)
        };
        let mut seen = Vec::new();
        loop {
            let page = q.peek(&request, 1);
            assert!(page.messages.len() <= 10);
            seen.extend(bodies(&page).into_iter().map(|(body, _)| body));
            match page.next {
                Some(next) => request.from = next,
                None => break,
            }
        }
        let expected: Vec<String> = (0..25).map(|i| format!("m{i:02}")).collect();
        assert_eq!(seen, expected, "every message once, in order");

        let by_bytes = q.peek(
            &PeekRequest {
                max_bytes: 5,
                ..look(false, false)
            },
            1,
        );
        assert_eq!(
            by_bytes.messages.len(),
            2,
            "stops with the message that reaches the bytes"
        );

        // Messages the filter skips still count toward the scan limit.
        let mut big = queue("big");
        for _ in 0..SCAN_LIMIT + 5 {
            send(&mut big, "x", None, Some(60), 0);
        }
        let page = big.peek(&look(false, false), 1);
        assert!(page.messages.is_empty());
        let first_unexamined = big.messages_from(0).nth(SCAN_LIMIT).unwrap().seq;
        assert_eq!(
            page.next,
            Some(first_unexamined),
            "a page that stops early says where to go on"
        );
        let rest = big.peek(
            &PeekRequest {
                from: page.next.unwrap(),
                ..look(false, true)
            },
            1,
        );
        assert_eq!((rest.messages.len(), rest.next), (5, None));
    }
}
