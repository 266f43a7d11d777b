//! Who serves queue calls: the leadership state that every request checks.
//!
//! An instance is a passive, the leader, or (with no Redis) alone in
//! memory-only mode. The leader may serve only until its *serving deadline*:
//! the moment its last good lock renewal was sent, plus the step-down
//! deadline, which is shorter than the lock's TTL. That deadline sits in an
//! atomic read by [`Leadership::is_serving`] on every request, so a leader
//! whose renewals stall stops serving at the deadline even if no task has
//! run since (after a SIGSTOP, say): it never outlives its lease in Redis.
//!
//! Transitions happen here, under one short lock, and each leadership term
//! is numbered, so that a late answer from an old term cannot revive it.
//! Losing leadership drops the in-memory queue state, which can no longer
//! be trusted; gaining it starts with empty state until the new leader has
//! loaded what it must serve.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::journal::Memory;
use crate::metrics::Metrics;

/// `serve_until` value for "never": not serving.
const NOT_SERVING: u64 = 0;
/// `serve_until` value for "always": memory-only mode has no lease.
const ALWAYS: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// No Redis: the only instance, always serving.
    MemoryOnly,
    /// No Redis, the state on disk (`--data-dir`): the only instance,
    /// serving once its state is loaded, and again after a failed write
    /// once memory is loaded back from the disk.
    Standalone,
    /// Waiting to take the lock.
    Passive,
    /// Holds the lock. Serves once its state is loaded, until its deadline.
    Leader,
    /// Shutting down gracefully: no new queue calls.
    ShuttingDown,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::MemoryOnly => "memory-only",
            Role::Standalone => "standalone",
            Role::Passive => "passive",
            Role::Leader => "leader",
            Role::ShuttingDown => "shutting-down",
        }
    }
}

/// The holder of the lock, as its token describes it: `epoch|node|nonce|url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderInfo {
    pub token: String,
    pub epoch: u64,
    pub node_id: String,
    pub url: String,
}

impl LeaderInfo {
    pub fn parse(token: &str) -> Option<LeaderInfo> {
        let mut parts = token.splitn(4, '|');
        let epoch = parts.next()?.parse().ok()?;
        let node_id = parts.next()?.to_string();
        let _nonce = parts.next()?;
        let url = parts.next()?.to_string();
        Some(LeaderInfo {
            token: token.to_string(),
            epoch,
            node_id,
            url,
        })
    }
}

/// A snapshot for `/status`.
#[derive(Debug, Clone)]
pub struct Status {
    pub role: Role,
    pub serving: bool,
    pub leader: Option<LeaderInfo>,
    pub since_last_renew: Option<Duration>,
}

pub struct Leadership {
    node_id: String,
    step_down_after: Duration,
    origin: Instant,
    /// Nanoseconds after `origin` until which queue calls are served.
    serve_until: AtomicU64,
    inner: Mutex<Inner>,
    /// Wakes the watchdog when the deadline moves or the role changes.
    pub changed: Notify,
    /// The queues this leadership serves: dropped when it is lost.
    memory: Arc<dyn Memory>,
    metrics: Arc<Metrics>,
    /// The shard this leadership is for (0 in an unsharded group).
    shard: usize,
    /// `ssq_leader{shard}`.
    leader_gauge: prometheus::IntGauge,
}

struct Inner {
    role: Role,
    term: u64,
    /// The current leader: ourselves while we lead, else the last holder seen.
    leader: Option<LeaderInfo>,
    last_good_renew_sent: Option<Instant>,
}

/// Why an instance stopped leading, for the log line and the metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepDown {
    /// A renewal found another token or no key.
    RenewLost,
    /// No renewal succeeded within the step-down deadline.
    DeadlinePassed,
    /// A fenced write found another leader's token.
    Fenced,
    /// The instance leads more than its share of a sharded group's shards.
    HandedOff,
}

impl StepDown {
    const ALL: [StepDown; 4] = [
        StepDown::RenewLost,
        StepDown::DeadlinePassed,
        StepDown::Fenced,
        StepDown::HandedOff,
    ];

    fn label(self) -> &'static str {
        match self {
            StepDown::RenewLost => "renew_lost",
            StepDown::DeadlinePassed => "deadline_passed",
            StepDown::Fenced => "fenced",
            StepDown::HandedOff => "handed_off",
        }
    }

    fn reason(self) -> &'static str {
        match self {
            StepDown::RenewLost => "renew lost: the lock holds another token or none",
            StepDown::DeadlinePassed => "deadline passed: no renewal succeeded in time",
            StepDown::Fenced => "fenced: a write found another leader's token",
            StepDown::HandedOff => "handed off: this instance leads more than its share of the shards",
        }
    }
}

impl Leadership {
    pub fn new(
        node_id: String,
        shard: usize,
        role: Role,
        step_down_after: Duration,
        memory: Arc<dyn Memory>,
        metrics: Arc<Metrics>,
    ) -> Leadership {
        let serve_until = if role == Role::MemoryOnly {
            ALWAYS
        } else {
            NOT_SERVING
        };
        let leader_gauge = metrics.leader.with_label_values(&[&shard.to_string()]);
        leader_gauge.set(i64::from(role == Role::MemoryOnly));
        // Every reason counted from zero, so that `increase()` sees the
        // first step-down and alert rules find the series before it.
        for why in StepDown::ALL {
            metrics.step_downs.with_label_values(&[why.label()]);
        }
        Leadership {
            node_id,
            step_down_after,
            origin: Instant::now(),
            serve_until: AtomicU64::new(serve_until),
            inner: Mutex::new(Inner {
                role,
                term: 0,
                leader: None,
                last_good_renew_sent: None,
            }),
            changed: Notify::new(),
            memory,
            metrics,
            shard,
            leader_gauge,
        }
    }

    pub fn shard(&self) -> usize {
        self.shard
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn nanos_since_origin(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.origin).as_nanos() as u64
    }

    /// Whether this instance may answer queue calls right now. Cheap: one
    /// atomic load and a clock read.
    pub fn is_serving(&self) -> bool {
        match self.serve_until.load(Ordering::Acquire) {
            NOT_SERVING => false,
            ALWAYS => true,
            until => self.nanos_since_origin(Instant::now()) < until,
        }
    }

    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    pub fn role(&self) -> Role {
        self.lock().role
    }

    /// The leader's advertised URL, when this instance is not it.
    pub fn leader_url(&self) -> Option<String> {
        let inner = self.lock();
        match inner.role {
            Role::Passive => inner.leader.as_ref().map(|l| l.url.clone()),
            _ => None,
        }
    }

    pub fn status(&self) -> Status {
        let inner = self.lock();
        Status {
            role: inner.role,
            serving: self.is_serving(),
            leader: inner.leader.clone(),
            since_last_renew: inner.last_good_renew_sent.map(|at| at.elapsed()),
        }
    }

    /// The moment this leader must stop serving, if it leads.
    pub fn deadline(&self) -> Option<Instant> {
        let inner = self.lock();
        match inner.role {
            Role::Leader => inner.last_good_renew_sent.map(|at| at + self.step_down_after),
            _ => None,
        }
    }

    /// A passive saw who holds the lock.
    pub fn observe_leader(&self, holder: Option<LeaderInfo>) {
        let mut inner = self.lock();
        if inner.role == Role::Passive {
            inner.leader = holder;
        }
    }

    /// We took the lock with the acquisition sent at `sent_at`. Returns the
    /// new term; the instance serves once [`Leadership::restored`] is called
    /// for it. Starts from empty state: whatever memory held is stale.
    pub fn acquired(&self, info: LeaderInfo, sent_at: Instant) -> Option<u64> {
        let term = {
            let mut inner = self.lock();
            if inner.role != Role::Passive {
                return None;
            }
            inner.role = Role::Leader;
            inner.term += 1;
            inner.last_good_renew_sent = Some(sent_at);
            tracing::info!(node_id = %self.node_id, epoch = info.epoch, "became leader: lock acquired; loading state");
            inner.leader = Some(info);
            inner.term
        };
        self.memory.clear();
        self.metrics.leader_transitions.inc();
        self.changed.notify_waiters();
        Some(term)
    }

    /// The state of `term` is loaded: start serving, until the deadline.
    pub fn restored(&self, term: u64) {
        self.restored_with(term, || ());
    }

    /// Runs `install` (putting the loaded state in place) and starts serving,
    /// both only if `term` is still the current term: under the same lock
    /// that a step-down takes, so no state of an ended term is installed.
    pub fn restored_with(&self, term: u64, install: impl FnOnce()) -> bool {
        let inner = self.lock();
        if inner.role != Role::Leader || inner.term != term {
            return false;
        }
        install();
        if let Some(sent) = inner.last_good_renew_sent {
            let until = self.nanos_since_origin(sent + self.step_down_after).max(1);
            self.serve_until.store(until, Ordering::Release);
            self.leader_gauge.set(1);
            tracing::info!(node_id = %self.node_id, "serving as leader");
        }
        true
    }

    /// Whether `term` is the current leadership term.
    pub fn holds_term(&self, term: u64) -> bool {
        let inner = self.lock();
        inner.role == Role::Leader && inner.term == term
    }

    /// A write to Redis failed: memory may differ from Redis. Stop serving
    /// and drop memory; the caller reloads it. Returns false if `term` is
    /// already over, or a reload is already under way.
    pub fn begin_resync(&self, term: u64) -> bool {
        self.stop_and_drop_memory(|inner| inner.role == Role::Leader && inner.term == term)
    }

    /// Stops serving and drops memory, if `applies` to the state and
    /// serving had not stopped already; returns whether it did.
    fn stop_and_drop_memory(&self, applies: impl FnOnce(&Inner) -> bool) -> bool {
        {
            let inner = self.lock();
            if !applies(&inner) || self.serve_until.swap(NOT_SERVING, Ordering::AcqRel) == NOT_SERVING {
                return false;
            }
        }
        self.leader_gauge.set(0);
        self.memory.clear();
        true
    }

    /// A renewal sent at `sent_at` succeeded: the lease holds until
    /// `sent_at` + TTL in Redis, so we may serve until `sent_at` + step-down.
    pub fn renewed(&self, term: u64, sent_at: Instant) {
        let mut inner = self.lock();
        if inner.role != Role::Leader || inner.term != term {
            return;
        }
        if inner.last_good_renew_sent.is_some_and(|last| last >= sent_at) {
            return;
        }
        inner.last_good_renew_sent = Some(sent_at);
        if self.serve_until.load(Ordering::Acquire) != NOT_SERVING {
            let until = self.nanos_since_origin(sent_at + self.step_down_after).max(1);
            self.serve_until.store(until, Ordering::Release);
        }
        drop(inner);
        self.changed.notify_waiters();
    }

    /// Stops serving `term`, still holding the lock, to hand the shard off:
    /// requests in flight finish under the lease, new ones go elsewhere.
    /// Returns false if `term` is not the current term.
    pub fn stop_serving_to_hand_off(&self, term: u64) -> bool {
        {
            let inner = self.lock();
            if inner.role != Role::Leader || inner.term != term {
                return false;
            }
            self.serve_until.store(NOT_SERVING, Ordering::Release);
        }
        self.leader_gauge.set(0);
        tracing::info!(node_id = %self.node_id, shard = self.shard, "handing the shard off: stopped serving it");
        true
    }

    /// Stops leading, if `term` (or any term, for `None`) is the current
    /// one. Returns the token held, so that the caller may try to release it.
    pub fn step_down(&self, term: Option<u64>, why: StepDown) -> Option<String> {
        let token = {
            let mut inner = self.lock();
            if inner.role != Role::Leader || term.is_some_and(|t| t != inner.term) {
                return None;
            }
            self.serve_until.store(NOT_SERVING, Ordering::Release);
            inner.role = Role::Passive;
            inner.last_good_renew_sent = None;
            tracing::warn!(node_id = %self.node_id, reason = why.reason(), "stepped down: now passive");
            inner.leader.take().map(|l| l.token)
        };
        self.memory.clear();
        self.leader_gauge.set(0);
        self.metrics.leader_transitions.inc();
        self.metrics.step_downs.with_label_values(&[why.label()]).inc();
        self.changed.notify_waiters();
        token
    }

    /// Steps down if the serving deadline has passed; checked and done under
    /// one lock, so that a renewal landing meanwhile is not overruled.
    pub fn step_down_if_expired(&self) -> Option<String> {
        let term = {
            let inner = self.lock();
            let expired = inner.role == Role::Leader
                && inner
                    .last_good_renew_sent
                    .is_some_and(|at| Instant::now() >= at + self.step_down_after);
            if !expired {
                return None;
            }
            inner.term
        };
        self.step_down(Some(term), StepDown::DeadlinePassed)
    }

    /// Graceful shutdown: refuse new queue calls and end long polls.
    /// Returns the lock token to release once requests in flight are done.
    pub fn begin_shutdown(&self) -> Option<String> {
        let token = {
            let mut inner = self.lock();
            let was_leader = inner.role == Role::Leader;
            inner.role = Role::ShuttingDown;
            self.serve_until.store(NOT_SERVING, Ordering::Release);
            let token = inner.leader.as_ref().map(|l| l.token.clone());
            was_leader.then_some(token).flatten()
        };
        self.leader_gauge.set(0);
        self.memory.close_long_polls();
        self.changed.notify_waiters();
        token
    }

    /// On disk: puts the state read from disk in place (`install`) and
    /// serves, unless shutting down.
    pub fn standalone_loaded(&self, install: impl FnOnce()) -> bool {
        let inner = self.lock();
        if inner.role != Role::Standalone {
            return false;
        }
        install();
        self.serve_until.store(ALWAYS, Ordering::Release);
        self.leader_gauge.set(1);
        true
    }

    /// On disk: a write failed, so memory may hold changes the disk does
    /// not. Stops serving and drops memory; the caller loads it again.
    /// False if already stopped (loading, or shutting down).
    pub fn standalone_pause(&self) -> bool {
        self.stop_and_drop_memory(|inner| inner.role == Role::Standalone)
    }

    /// The current term and token, while leading.
    pub fn current_term(&self) -> Option<(u64, String)> {
        let inner = self.lock();
        match (inner.role, &inner.leader) {
            (Role::Leader, Some(info)) => Some((inner.term, info.token.clone())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Memory that counts how often it was dropped.
    #[derive(Default)]
    struct Counted {
        clears: AtomicUsize,
    }

    impl Memory for Counted {
        fn generation(&self) -> u64 {
            0
        }
        fn clear(&self) {
            self.clears.fetch_add(1, Ordering::AcqRel);
        }
        fn install(&self, _: Vec<crate::queue::Queue>, _: crate::topic::Topics) {}
        fn close_long_polls(&self) {}
        fn create_configured_queues(
            &self,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
            Box::pin(async {})
        }
    }

    fn leadership_with(memory: Arc<Counted>) -> Leadership {
        Leadership::new(
            "n1".into(),
            0,
            Role::Passive,
            Duration::from_secs(3),
            memory,
            Arc::new(Metrics::new("n1")),
        )
    }

    fn leadership() -> Leadership {
        leadership_with(Arc::default())
    }

    fn info(epoch: u64) -> LeaderInfo {
        LeaderInfo::parse(&format!("{epoch}|n1|00ff|http://127.0.0.1:1")).unwrap()
    }

    #[test]
    fn tokens_parse_into_epoch_node_and_url() {
        let info = LeaderInfo::parse("42|node-a|1f2e|http://10.0.0.1:9324").unwrap();
        assert_eq!(
            (info.epoch, info.node_id.as_str(), info.url.as_str()),
            (42, "node-a", "http://10.0.0.1:9324")
        );
        assert!(LeaderInfo::parse("x|y|z").is_none());
        assert!(LeaderInfo::parse("1|only|nonce").is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn serves_only_after_restore_and_until_the_deadline() {
        let l = leadership();
        assert!(!l.is_serving());
        let sent = Instant::now();
        let term = l.acquired(info(1), sent).unwrap();
        assert!(!l.is_serving(), "not before the state is loaded");
        l.restored(term);
        assert!(l.is_serving());
        tokio::time::advance(Duration::from_millis(2_999)).await;
        assert!(l.is_serving());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(
            !l.is_serving(),
            "the deadline counts from when the renewal was sent"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_renewal_moves_the_deadline_from_its_send_time() {
        let l = leadership();
        let term = l.acquired(info(1), Instant::now()).unwrap();
        l.restored(term);
        tokio::time::advance(Duration::from_secs(1)).await;
        let sent = Instant::now();
        tokio::time::advance(Duration::from_millis(400)).await; // the answer takes 400 ms
        l.renewed(term, sent);
        assert_eq!(l.deadline(), Some(sent + Duration::from_secs(3)));
        tokio::time::advance(Duration::from_millis(2_599)).await;
        assert!(l.is_serving());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(!l.is_serving());
    }

    #[tokio::test(start_paused = true)]
    async fn an_old_terms_answers_change_nothing() {
        let l = leadership();
        let old = l.acquired(info(1), Instant::now()).unwrap();
        l.restored(old);
        l.step_down(Some(old), StepDown::RenewLost);
        assert_eq!(l.role(), Role::Passive);
        let new = l.acquired(info(2), Instant::now()).unwrap();
        assert_ne!(old, new);
        l.restored(old);
        assert!(!l.is_serving(), "restoring an old term does not serve");
        assert!(l.step_down(Some(old), StepDown::DeadlinePassed).is_none());
        assert_eq!(l.role(), Role::Leader);
    }

    #[tokio::test(start_paused = true)]
    async fn stepping_down_drops_the_queue_state() {
        let memory = Arc::new(Counted::default());
        let l = leadership_with(memory.clone());
        let term = l.acquired(info(1), Instant::now()).unwrap();
        l.restored(term);
        let dropped_on_acquiring = memory.clears.load(Ordering::Acquire);
        assert_eq!(
            l.step_down(None, StepDown::Fenced).as_deref(),
            Some("1|n1|00ff|http://127.0.0.1:1")
        );
        assert_eq!(memory.clears.load(Ordering::Acquire), dropped_on_acquiring + 1);
        assert!(!l.is_serving());
    }
}
