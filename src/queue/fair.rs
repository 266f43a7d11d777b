//! Fair queues: on a standard queue, a message's MessageGroupId names its
//! tenant, and one tenant's backlog must not raise every other tenant's
//! dwell time. This file owns who is noisy and which message goes next.
//!
//! The rules are AWS's, as "How Amazon SQS fair queues work" describes them:
//!
//! - A message without a group id is a tenant of its own. It can never hold
//!   30 messages in flight, and it is gone once processed, so it is always
//!   quiet; such messages stay in the queue's own indexes, at no cost to a
//!   queue whose messages have no group ids.
//! - A tenant turns noisy when it holds more than 10% of the queue's
//!   in-flight messages and at least 30 of its own (checked when one of its
//!   messages is received), or more than 10% of the consumers' recent
//!   processing time (checked when one of its messages is processed: deleted,
//!   or back by its visibility timeout). "Recent" is a decaying sum with a
//!   one-minute half-life: AWS gives no window.
//! - It is quiet again once its backlog is drained (it has no message left),
//!   or five minutes after its last send.
//! - While a quiet message is visible, receives take quiet messages (oldest
//!   first, as without noisy tenants); otherwise the noisy tenant with the
//!   fewest messages in flight goes first. Noisy messages are never dropped or
//!   held back when nothing quiet waits.
//!
//! A tenant's visible messages and sent order live here only (the queue's
//! `visible` and `by_sent` hold the messages without a group). Every index
//! is ordered, so that choosing, counting and turning quiet or noisy cost
//! O(log n) in messages and tenants: a tenant's visible messages never move
//! when its state flips; only its one entry in `quiet_ready` or
//! `noisy_ready` does. What a new leader needs is derived
//! from the messages it loads (see [`Tenants::settle_after_restore`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::message::MessageState;

/// A tenant with this many messages in flight may be noisy by its share.
const MIN_NOISY_IN_FLIGHT: u32 = 30;

/// Shares above one in this many (10%) are noisy.
const NOISY_SHARE_DIVISOR: u64 = 10;

/// A noisy tenant that has sent nothing for this long is quiet again.
const QUIET_AFTER_MS: u64 = 5 * 60 * 1000;

/// The half-life of "recent" processing time.
const PROCESSING_HALF_LIFE_MS: f64 = 60_000.0;

/// At most this many noisy tenants are listed by [`Tenants::noisy`].
pub const NOISY_LISTED: usize = 50;

/// The tenants of one standard queue.
#[derive(Default)]
pub(super) struct Tenants {
    by_name: HashMap<Arc<str>, Tenant>,
    /// The tenants' visible messages, all together.
    visible: usize,
    /// (sent at, sequence number, tenant) of each tenant's oldest message:
    /// retention and the oldest message's age.
    oldest: BTreeSet<(u64, u64, Arc<str>)>,
    /// (first visible message, tenant) of the quiet tenants with one.
    quiet_ready: BTreeSet<(u64, Arc<str>)>,
    /// (messages in flight, first visible message, tenant) of the noisy
    /// tenants with a visible message: the fewest in flight first.
    noisy_ready: BTreeSet<(u32, u64, Arc<str>)>,
    /// (last send, tenant) of every noisy tenant, for the five-minute rule.
    noisy_by_last_send: BTreeSet<(u64, Arc<str>)>,
    /// The queue's recent processing time, all tenants together.
    processing: Decaying,
}

#[derive(Default)]
struct Tenant {
    visible: BTreeSet<u64>,
    /// (sent at, sequence number) of each message it holds, in any state.
    held: BTreeSet<(u64, u64)>,
    in_flight: u32,
    last_send: u64,
    noisy: bool,
    processing: Decaying,
    /// Where the tenant sits in `quiet_ready` or `noisy_ready`, if it does.
    ready_at: Option<Ready>,
    /// Where the tenant sits in `oldest`.
    oldest_at: Option<(u64, u64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ready {
    Quiet(u64),
    Noisy(u32, u64),
}

impl Tenant {
    fn ready(&self) -> Option<Ready> {
        let first = *self.visible.first()?;
        Some(match self.noisy {
            true => Ready::Noisy(self.in_flight, first),
            false => Ready::Quiet(first),
        })
    }

    fn delayed(&self) -> u64 {
        (self.held.len() as u64)
            .saturating_sub(self.visible.len() as u64)
            .saturating_sub(u64::from(self.in_flight))
    }
}

/// A sum that halves every [`PROCESSING_HALF_LIFE_MS`].
#[derive(Debug, Default, Clone, Copy)]
struct Decaying {
    value: f64,
    at: u64,
}

impl Decaying {
    fn at(&self, now: u64) -> f64 {
        let elapsed = now.saturating_sub(self.at) as f64;
        self.value * (-elapsed / PROCESSING_HALF_LIFE_MS).exp2()
    }

    fn add(&mut self, amount: f64, now: u64) {
        // Within the same millisecond nothing decays (and busy queues see
        // many events a millisecond): no exponential to compute.
        if now > self.at {
            self.value = self.at(now);
            self.at = now;
        }
        self.value += amount;
    }
}

/// The messages of quiet tenants and the noisy tenants, as CloudWatch's fair
/// queue metrics count them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FairCounts {
    pub noisy_groups: u64,
    pub visible_in_quiet_groups: u64,
    pub not_visible_in_quiet_groups: u64,
    pub delayed_in_quiet_groups: u64,
    /// When the oldest message of a quiet tenant (or without a group) was sent.
    pub oldest_in_quiet_groups_sent_at: Option<u64>,
}

/// A noisy tenant, as the admin page lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoisyTenant {
    pub group: Arc<str>,
    pub held: u64,
    pub in_flight: u64,
    pub last_send: u64,
}

impl Tenants {
    /// A message of `group` arrived (sent, moved in, restored).
    pub(super) fn add(&mut self, group: &Arc<str>, seq: u64, sent_at: u64) {
        let tenant = self.by_name.entry(group.clone()).or_default();
        tenant.held.insert((sent_at, seq));
        if sent_at > tenant.last_send {
            if tenant.noisy {
                self.noisy_by_last_send.remove(&(tenant.last_send, group.clone()));
                self.noisy_by_last_send.insert((sent_at, group.clone()));
            }
            tenant.last_send = sent_at;
        }
        self.keep_oldest(group);
    }

    /// A message of `group` left (after [`Tenants::unplace`]): a tenant left
    /// with nothing has drained its backlog, and is forgotten.
    pub(super) fn remove(&mut self, group: &Arc<str>, seq: u64, sent_at: u64) {
        let Some(tenant) = self.by_name.get_mut(group) else {
            return;
        };
        tenant.held.remove(&(sent_at, seq));
        self.keep_oldest(group);
        if let Some(tenant) = self.by_name.get(group)
            && tenant.held.is_empty()
        {
            if tenant.noisy {
                self.noisy_by_last_send.remove(&(tenant.last_send, group.clone()));
            }
            self.by_name.remove(group);
        }
    }

    /// Keeps the tenant's entry in `oldest` on its oldest message.
    fn keep_oldest(&mut self, group: &Arc<str>) {
        let Some(tenant) = self.by_name.get_mut(group) else {
            return;
        };
        let oldest = tenant.held.first().copied();
        if tenant.oldest_at == oldest {
            return;
        }
        if let Some((sent_at, seq)) = tenant.oldest_at {
            self.oldest.remove(&(sent_at, seq, group.clone()));
        }
        if let Some((sent_at, seq)) = oldest {
            self.oldest.insert((sent_at, seq, group.clone()));
        }
        tenant.oldest_at = oldest;
    }

    /// (sent at, sequence number) of the tenants' oldest message.
    pub(super) fn oldest_held(&self) -> Option<(u64, u64)> {
        self.oldest.first().map(|&(sent_at, seq, _)| (sent_at, seq))
    }

    /// The tenants' visible messages, all together.
    pub(super) fn visible(&self) -> usize {
        self.visible
    }

    /// A message of `group` entered the index of `state`.
    pub(super) fn place(&mut self, group: &Arc<str>, seq: u64, state: MessageState) {
        self.moved(group, seq, state, true);
    }

    /// A message of `group` left the index of `state`.
    pub(super) fn unplace(&mut self, group: &Arc<str>, seq: u64, state: MessageState) {
        self.moved(group, seq, state, false);
    }

    fn moved(&mut self, group: &Arc<str>, seq: u64, state: MessageState, entered: bool) {
        let mut visible = self.visible;
        self.update(group, |tenant| match (state, entered) {
            (MessageState::Visible { .. }, true) => {
                visible += usize::from(tenant.visible.insert(seq));
            }
            (MessageState::Visible { .. }, false) => {
                visible -= usize::from(tenant.visible.remove(&seq));
            }
            (MessageState::InFlight { .. }, true) => tenant.in_flight += 1,
            (MessageState::InFlight { .. }, false) => tenant.in_flight -= 1,
            (MessageState::Delayed { .. }, _) => {}
        });
        self.visible = visible;
    }

    /// Changes a tenant and keeps its place in the ready indexes.
    fn update(&mut self, group: &Arc<str>, change: impl FnOnce(&mut Tenant)) {
        let Some(tenant) = self.by_name.get_mut(group) else {
            return;
        };
        change(tenant);
        let ready = tenant.ready();
        if tenant.ready_at == ready {
            return;
        }
        match tenant.ready_at {
            Some(Ready::Quiet(first)) => self.quiet_ready.remove(&(first, group.clone())),
            Some(Ready::Noisy(in_flight, first)) => {
                self.noisy_ready.remove(&(in_flight, first, group.clone()))
            }
            None => false,
        };
        match ready {
            Some(Ready::Quiet(first)) => self.quiet_ready.insert((first, group.clone())),
            Some(Ready::Noisy(in_flight, first)) => {
                self.noisy_ready.insert((in_flight, first, group.clone()))
            }
            None => false,
        };
        tenant.ready_at = ready;
    }

    fn set_noisy(&mut self, group: &Arc<str>, noisy: bool) {
        let Some(tenant) = self.by_name.get(group) else {
            return;
        };
        if tenant.noisy == noisy {
            return;
        }
        let entry = (tenant.last_send, group.clone());
        match noisy {
            true => self.noisy_by_last_send.insert(entry),
            false => self.noisy_by_last_send.remove(&entry),
        };
        self.update(group, |tenant| tenant.noisy = noisy);
    }

    /// The next message a receive takes, given the oldest visible message
    /// without a group: the oldest quiet message (that one, or a quiet
    /// tenant's first), else the first of the noisy tenant with the fewest
    /// messages in flight.
    pub(super) fn next(&self, oldest_without_group: Option<u64>) -> Option<u64> {
        let quiet = self.quiet_ready.first().map(|&(first, _)| first);
        oldest_without_group
            .into_iter()
            .chain(quiet)
            .min()
            .or_else(|| self.noisy_ready.first().map(|&(_, first, _)| first))
    }

    /// A message of `group` was received: is the tenant now noisy by its
    /// share of the `queue_in_flight` messages in flight?
    pub(super) fn received(&mut self, group: Option<&Arc<str>>, queue_in_flight: usize) {
        let Some(group) = group else {
            return;
        };
        let Some(tenant) = self.by_name.get(group) else {
            return;
        };
        let in_flight = u64::from(tenant.in_flight);
        if !tenant.noisy
            && tenant.in_flight >= MIN_NOISY_IN_FLIGHT
            && in_flight * NOISY_SHARE_DIVISOR > queue_in_flight as u64
        {
            self.set_noisy(group, true);
        }
    }

    /// A message of `group` was processed for `millis` (received until
    /// deleted, or until its visibility timeout ran out): is the tenant now
    /// noisy by its share of the recent processing time?
    pub(super) fn processed(&mut self, group: Option<&Arc<str>>, millis: u64, now: u64) {
        self.processing.add(millis as f64, now);
        let Some(group) = group else {
            return;
        };
        let Some(tenant) = self.by_name.get_mut(group) else {
            return;
        };
        tenant.processing.add(millis as f64, now);
        let share = tenant.processing.at(now) * NOISY_SHARE_DIVISOR as f64;
        if !tenant.noisy && share > self.processing.at(now) {
            self.set_noisy(group, true);
        }
    }

    /// Noisy tenants that have sent nothing for five minutes turn quiet.
    pub(super) fn advance(&mut self, now: u64) {
        while let Some((last_send, group)) = self.noisy_by_last_send.first().cloned()
            && last_send + QUIET_AFTER_MS <= now
        {
            self.set_noisy(&group, false);
        }
    }

    /// After a load: tenants that hold enough of the in-flight messages are
    /// noisy again at once. (Shares of processing time are not stored; they
    /// build up again from the new leader's first receives.)
    pub(super) fn settle_after_restore(&mut self, queue_in_flight: usize) {
        let groups: Vec<Arc<str>> = self.by_name.keys().cloned().collect();
        for group in groups {
            self.received(Some(&group), queue_in_flight);
        }
    }

    /// The fair queue counts, given the whole queue's and when its oldest
    /// message without a group was sent. Costs O(tenants): for scrapes and
    /// the admin page, not for requests.
    pub(super) fn counts(
        &self,
        visible: u64,
        in_flight: u64,
        delayed: u64,
        oldest_without_group: Option<u64>,
    ) -> FairCounts {
        let (mut noisy_groups, mut noisy_visible, mut noisy_in_flight, mut noisy_delayed) = (0, 0, 0, 0);
        let mut oldest_quiet = oldest_without_group;
        for tenant in self.by_name.values() {
            if tenant.noisy {
                noisy_groups += 1;
                noisy_visible += tenant.visible.len() as u64;
                noisy_in_flight += u64::from(tenant.in_flight);
                noisy_delayed += tenant.delayed();
            } else if let Some(&(sent_at, _)) = tenant.held.first() {
                oldest_quiet = Some(oldest_quiet.map_or(sent_at, |oldest| oldest.min(sent_at)));
            }
        }
        FairCounts {
            noisy_groups,
            visible_in_quiet_groups: visible.saturating_sub(noisy_visible),
            not_visible_in_quiet_groups: in_flight.saturating_sub(noisy_in_flight),
            delayed_in_quiet_groups: delayed.saturating_sub(noisy_delayed),
            oldest_in_quiet_groups_sent_at: oldest_quiet,
        }
    }

    /// The noisy tenants, most in flight first, at most [`NOISY_LISTED`].
    pub(super) fn noisy(&self) -> Vec<NoisyTenant> {
        let mut noisy: Vec<NoisyTenant> = self
            .noisy_by_last_send
            .iter()
            .filter_map(|(_, group)| {
                let tenant = self.by_name.get(group)?;
                Some(NoisyTenant {
                    group: group.clone(),
                    held: tenant.held.len() as u64,
                    in_flight: u64::from(tenant.in_flight),
                    last_send: tenant.last_send,
                })
            })
            .collect();
        noisy.sort_by(|a, b| b.in_flight.cmp(&a.in_flight).then_with(|| a.group.cmp(&b.group)));
        noisy.truncate(NOISY_LISTED);
        noisy
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::queue::{NewMessage, Queue, QueueAttributes, Received};

    const T0: u64 = 1_700_000_000_000;

    fn standard() -> Queue {
        Queue::new("q".into(), QueueAttributes::default(), BTreeMap::new(), T0)
    }

    /// Sends `count` messages of tenant `group` (`None`: no group id).
    fn send(q: &mut Queue, group: Option<&str>, count: usize, now: u64) {
        for i in 0..count {
            let mut message = NewMessage::plain(&format!("{}-{i}", group.unwrap_or("lone")));
            message.group_id = group.map(String::from);
            q.send(message, now).unwrap();
        }
    }

    fn receive(q: &mut Queue, count: usize, now: u64) -> Vec<Received> {
        (0..count.div_ceil(10))
            .flat_map(|batch| q.receive((count - batch * 10).min(10), Some(600), None, None, now))
            .collect()
    }

    fn tenant_of(received: &Received) -> &str {
        received.message.group_id.as_deref().unwrap_or("lone")
    }

    fn fair_counts(q: &mut Queue, now: u64) -> FairCounts {
        let counts = q.counts(now);
        q.fair_counts(&counts)
    }

    fn noisy(q: &mut Queue, now: u64) -> Vec<String> {
        q.noisy_tenants(now).iter().map(|t| t.group.to_string()).collect()
    }

    #[test]
    fn thirty_in_flight_and_over_a_tenth_of_them_make_a_tenant_noisy() {
        let mut q = standard();
        send(&mut q, Some("big"), 40, T0);
        receive(&mut q, 29, T0);
        assert!(noisy(&mut q, T0).is_empty(), "29 in flight is too few");
        receive(&mut q, 1, T0);
        assert_eq!(noisy(&mut q, T0), ["big"]);
    }

    #[test]
    fn thirty_in_flight_within_a_tenth_of_the_queue_are_not_noisy() {
        let mut q = standard();
        send(&mut q, None, 300, T0);
        receive(&mut q, 300, T0);
        send(&mut q, Some("big"), 30, T0);
        receive(&mut q, 30, T0);
        assert!(
            noisy(&mut q, T0).is_empty(),
            "30 of 330 in flight is under a tenth"
        );
        send(&mut q, Some("big"), 10, T0);
        receive(&mut q, 10, T0);
        assert_eq!(noisy(&mut q, T0), ["big"], "40 of 340 is over a tenth");
    }

    #[test]
    fn messages_without_a_group_are_never_noisy() {
        let mut q = standard();
        send(&mut q, None, 100, T0);
        receive(&mut q, 100, T0);
        assert!(noisy(&mut q, T0).is_empty());
        assert_eq!(fair_counts(&mut q, T0).not_visible_in_quiet_groups, 100);
    }

    #[test]
    fn over_a_tenth_of_the_recent_processing_time_makes_a_tenant_noisy() {
        let mut q = standard();
        // Twenty tenants with one message each take a second each to process.
        for tenant in 0..20 {
            send(&mut q, Some(&format!("t{tenant}")), 1, T0);
        }
        send(&mut q, Some("slow"), 2, T0);
        send(&mut q, Some("steady"), 2, T0);
        for received in receive(&mut q, 20, T0) {
            q.delete(received.receipt_handle, T0 + 1_000).unwrap();
        }
        assert!(
            noisy(&mut q, T0 + 1_000).is_empty(),
            "tenants that drained are quiet"
        );
        let got = receive(&mut q, 4, T0 + 1_000);
        let first_of = |tenant: &str| {
            got.iter()
                .find(|r| tenant_of(r) == tenant)
                .unwrap()
                .receipt_handle
        };
        q.delete(first_of("steady"), T0 + 2_000).unwrap();
        assert!(noisy(&mut q, T0 + 2_000).is_empty(), "1 s of 21 is under a tenth");
        q.delete(first_of("slow"), T0 + 31_000).unwrap();
        assert_eq!(noisy(&mut q, T0 + 31_000), ["slow"], "30 s of 51 is over a tenth");
    }

    #[test]
    fn processing_time_counts_until_the_visibility_timeout_runs_out() {
        let mut q = standard();
        send(&mut q, Some("a"), 2, T0);
        let received = q.receive(1, Some(30), None, None, T0);
        assert_eq!(received.len(), 1);
        assert!(noisy(&mut q, T0 + 29_999).is_empty(), "still being processed");
        assert_eq!(
            noisy(&mut q, T0 + 30_000),
            ["a"],
            "its 30 s are all of the processing"
        );
    }

    #[test]
    fn quiet_messages_go_before_the_older_messages_of_noisy_tenants() {
        let mut q = standard();
        send(&mut q, Some("big"), 100, T0);
        receive(&mut q, 30, T0);
        send(&mut q, Some("small"), 1, T0 + 1);
        send(&mut q, None, 1, T0 + 2);
        let got = receive(&mut q, 3, T0 + 3);
        let tenants: Vec<&str> = got.iter().map(tenant_of).collect();
        assert_eq!(
            tenants,
            ["small", "lone", "big"],
            "quiet first, oldest first; then the noisy"
        );
    }

    #[test]
    fn among_noisy_tenants_the_one_with_fewest_in_flight_goes_first() {
        let mut q = standard();
        send(&mut q, Some("a"), 100, T0);
        let from_a = receive(&mut q, 40, T0);
        send(&mut q, Some("b"), 100, T0 + 1);
        receive(&mut q, 40, T0 + 1);
        for received in &from_a[..20] {
            q.delete(received.receipt_handle, T0 + 2).unwrap();
        }
        assert_eq!(noisy(&mut q, T0 + 2), ["b", "a"], "b has 40 in flight, a 20");
        let got = receive(&mut q, 20, T0 + 3);
        assert!(
            got.iter().all(|r| tenant_of(r) == "a"),
            "a goes first until it has as many in flight as b"
        );
        let got = receive(&mut q, 10, T0 + 4);
        let from_a = got.iter().filter(|r| tenant_of(r) == "a").count();
        assert_eq!(from_a, 5, "then they take turns");
    }

    #[test]
    fn noisy_messages_are_delivered_when_nothing_quiet_waits() {
        let mut q = standard();
        send(&mut q, Some("big"), 50, T0);
        receive(&mut q, 30, T0);
        assert_eq!(noisy(&mut q, T0), ["big"]);
        assert_eq!(
            receive(&mut q, 20, T0).len(),
            20,
            "nothing quiet: the noisy backlog flows"
        );
    }

    #[test]
    fn a_tenant_that_drained_its_backlog_is_quiet_again() {
        let mut q = standard();
        send(&mut q, Some("big"), 30, T0);
        let got = receive(&mut q, 30, T0);
        assert_eq!(noisy(&mut q, T0), ["big"]);
        for received in got {
            q.delete(received.receipt_handle, T0 + 1).unwrap();
        }
        assert!(noisy(&mut q, T0 + 1).is_empty());
        send(&mut q, Some("big"), 1, T0 + 2);
        send(&mut q, Some("other"), 1, T0 + 3);
        let got = receive(&mut q, 1, T0 + 4);
        assert_eq!(
            tenant_of(&got[0]),
            "big",
            "quiet again: its older message goes first"
        );
    }

    #[test]
    fn five_minutes_without_a_send_make_a_noisy_tenant_quiet() {
        let mut q = standard();
        send(&mut q, Some("big"), 40, T0);
        receive(&mut q, 30, T0);
        send(&mut q, Some("big"), 1, T0 + 1_000);
        assert_eq!(noisy(&mut q, T0 + 1_000 + QUIET_AFTER_MS - 1), ["big"]);
        assert!(noisy(&mut q, T0 + 1_000 + QUIET_AFTER_MS).is_empty());
    }

    #[test]
    fn a_send_keeps_a_noisy_tenant_noisy_for_five_more_minutes() {
        let mut q = standard();
        send(&mut q, Some("big"), 40, T0);
        receive(&mut q, 30, T0);
        send(&mut q, Some("big"), 1, T0 + QUIET_AFTER_MS - 1);
        assert_eq!(noisy(&mut q, T0 + QUIET_AFTER_MS), ["big"]);
        assert!(noisy(&mut q, T0 + 2 * QUIET_AFTER_MS - 1).is_empty());
    }

    #[test]
    fn a_restored_queue_finds_its_noisy_tenants_again() {
        let mut q = standard();
        send(&mut q, Some("big"), 40, T0);
        send(&mut q, Some("small"), 5, T0);
        receive(&mut q, 30, T0);
        let messages: Vec<_> = q.messages.values().cloned().collect();
        let mut restored = Queue::restore(q.meta(), q.next_seq, messages, []);
        assert_eq!(noisy(&mut restored, T0), ["big"]);
        let got = receive(&mut restored, 1, T0);
        assert_eq!(tenant_of(&got[0]), "small");
    }

    #[test]
    fn fair_counts_leave_out_the_noisy_tenants() {
        let mut q = standard();
        send(&mut q, Some("big"), 40, T0);
        receive(&mut q, 30, T0);
        send(&mut q, Some("small"), 2, T0 + 5_000);
        let mut delayed = NewMessage::plain("later");
        delayed.group_id = Some("small".into());
        delayed.delay_seconds = Some(60);
        q.send(delayed, T0 + 5_000).unwrap();
        receive(&mut q, 1, T0 + 5_000);
        assert_eq!(
            fair_counts(&mut q, T0 + 6_000),
            FairCounts {
                noisy_groups: 1,
                visible_in_quiet_groups: 1,
                not_visible_in_quiet_groups: 1,
                delayed_in_quiet_groups: 1,
                oldest_in_quiet_groups_sent_at: Some(T0 + 5_000),
            }
        );
    }

    #[test]
    fn tenants_messages_count_expire_and_report_their_age_with_the_others() {
        let mut q = standard();
        q.set_attributes(
            &BTreeMap::from([("MessageRetentionPeriod".into(), "60".into())]),
            T0,
        )
        .unwrap();
        send(&mut q, Some("a"), 1, T0);
        send(&mut q, None, 1, T0 + 1_000);
        send(&mut q, Some("b"), 1, T0 + 2_000);
        let counts = q.counts(T0 + 2_000);
        assert_eq!((counts.visible, counts.oldest_sent_at), (3, Some(T0)));
        let counts = q.counts(T0 + 60_000);
        assert_eq!(
            (counts.visible, counts.oldest_sent_at),
            (2, Some(T0 + 1_000)),
            "a's expired first"
        );
        let counts = q.counts(T0 + 61_000);
        assert_eq!((counts.visible, counts.oldest_sent_at), (1, Some(T0 + 2_000)));
        let got = receive(&mut q, 10, T0 + 61_000);
        assert_eq!(got.iter().map(tenant_of).collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn fifo_queues_deliver_as_before() {
        let attributes = QueueAttributes {
            fifo_queue: true,
            ..QueueAttributes::default()
        };
        let mut q = Queue::new("q.fifo".into(), attributes, BTreeMap::new(), T0);
        for i in 0..40 {
            let mut message = NewMessage::plain(&format!("m{i}"));
            message.group_id = Some(format!("g{}", i % 2));
            message.dedup_id = Some(format!("d{i}"));
            q.send(message, T0).unwrap();
        }
        let got = q.receive(10, Some(600), None, None, T0);
        assert!(
            got.iter().all(|r| tenant_of(r) == "g0"),
            "one group's run, as FIFO does"
        );
        assert_eq!(fair_counts(&mut q, T0).noisy_groups, 0);
    }
}
