//! The election: the tasks that take, renew and give up the leader lock.
//!
//! The *elector*, one per shard, acquires the lock while passive and renews
//! it every renew interval while leading; an answer that the lock is gone
//! or another's means leadership is lost at once. The *watchdog*
//! (`watchdog.rs`) is apart from it, so that a Redis call that hangs cannot
//! delay the step-down. Both act on [`Leadership`], which the request path
//! reads.
//!
//! The lock itself is behind [`LockStore`] (`lock.rs`), so the timing rules
//! are tested here on a paused clock with a lock that can be made to hang
//! or fail.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::{Instant, sleep, sleep_until, timeout};

use super::lock::{Acquire, LockError, LockStore};
use crate::leader::{LeaderInfo, Leadership, Role, StepDown};
use crate::metrics::Metrics;

#[derive(Debug, Clone, Copy)]
pub struct ElectionConfig {
    pub ttl: Duration,
    pub renew_every: Duration,
    pub step_down_after: Duration,
    pub retry_every: Duration,
    /// Time limit of one lock call (Redis: the replicas' confirmation included).
    pub call_timeout: Duration,
}

/// Lock timings that would let a leader serve past its lease.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimingError {
    #[error(
        "invalid lock timings: --lock-renew ({renew_every:?}) must be shorter than --lock-step-down \
         ({step_down_after:?}): a leader must get at least one renewal in before it has to step down"
    )]
    RenewNotBeforeStepDown {
        renew_every: Duration,
        step_down_after: Duration,
    },
    #[error(
        "invalid lock timings: --lock-step-down ({step_down_after:?}) must be shorter than --lock-ttl \
         ({ttl:?}): a leader must stop serving before its lock can expire and another instance takes over"
    )]
    StepDownNotBeforeExpiry {
        step_down_after: Duration,
        ttl: Duration,
    },
    #[error("invalid lock timings: --lock-retry and --redis-timeout must be greater than zero")]
    Zero,
    #[error(
        "--redis-replica-timeout ({replica_timeout:?}) must be above zero and shorter than --lock-renew \
         ({renew_every:?}): a renewal waits for the replicas before the next one is due"
    )]
    ReplicaWaitNotBeforeRenewal {
        replica_timeout: Duration,
        renew_every: Duration,
    },
}

impl ElectionConfig {
    /// Refuses timings that would let a leader serve past its lease.
    pub fn validate(&self) -> Result<(), TimingError> {
        if self.renew_every >= self.step_down_after {
            return Err(TimingError::RenewNotBeforeStepDown {
                renew_every: self.renew_every,
                step_down_after: self.step_down_after,
            });
        }
        if self.step_down_after >= self.ttl {
            return Err(TimingError::StepDownNotBeforeExpiry {
                step_down_after: self.step_down_after,
                ttl: self.ttl,
            });
        }
        if self.retry_every.is_zero() || self.call_timeout.is_zero() {
            return Err(TimingError::Zero);
        }
        Ok(())
    }
}

/// Logs the lock's reachability (its store's, or etcd's) once per change,
/// not once per attempt; the error names which.
struct Reachability {
    reachable: Option<bool>,
}

impl Reachability {
    fn ok(&mut self) {
        if self.reachable != Some(true) {
            if self.reachable.is_some() {
                tracing::info!("the lock answers again");
            }
            self.reachable = Some(true);
        }
    }

    fn failed(&mut self, error: &LockError) {
        if self.reachable != Some(false) {
            tracing::warn!(%error, "the lock does not answer: will keep retrying");
            self.reachable = Some(false);
        }
    }
}

/// Called with the new term when this instance takes the lock: it loads the
/// state and calls [`Leadership::restored`] when the leader may serve.
pub type LoadState = Arc<dyn Fn(u64) + Send + Sync>;

/// What the group's shares want this instance to do with one shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wish {
    /// Lead it: take the lock whenever it is free.
    Lead,
    /// Leave it to another live instance: hand it off if leading, and take
    /// it only if it stays without a leader for a whole lease (the instances
    /// below their share may be unable to take it).
    Yield,
}

/// What steers the elector besides its timer.
#[derive(Clone)]
pub struct Claim {
    /// Woken when the holder lets go of the lock or the members change.
    pub wake: Arc<Notify>,
    /// Whether this instance should lead the shard, counting the shards it
    /// leads already.
    pub wish: Arc<dyn Fn() -> Wish + Send + Sync>,
    /// Shared by the electors of one instance's shards: one acquisition at
    /// a time, so that each counts the shards the others just took and
    /// none takes beyond the instance's share.
    pub one_at_a_time: Arc<tokio::sync::Mutex<()>>,
    /// The shard may have to be handed off (a sharded group): a leader
    /// wakes on `wake` too, to see at once whether it still should lead.
    pub may_hand_off: bool,
}

impl Claim {
    /// One shard for the whole group: always try to lead it.
    pub fn always(wake: Arc<Notify>) -> Claim {
        Claim {
            wake,
            wish: Arc::new(|| Wish::Lead),
            one_at_a_time: Arc::default(),
            may_hand_off: false,
        }
    }
}

/// How long a leader handing a shard off stops serving before it lets go,
/// so that requests in flight get their writes committed under its lease.
const HAND_OFF_GRACE: Duration = Duration::from_millis(200);

/// Acquires and renews until `shutdown` turns true.
pub async fn run_elector(
    leadership: Arc<Leadership>,
    store: Arc<dyn LockStore>,
    config: ElectionConfig,
    metrics: Arc<Metrics>,
    load_state: LoadState,
    claim: Claim,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut elector = Elector {
        leadership,
        store,
        config,
        metrics,
        load_state,
        claim,
        reachability: Reachability { reachable: None },
        free_since: None,
    };
    while !*shutdown.borrow() {
        let next_turn = if let Some((term, token)) = elector.leadership.current_term() {
            elector.free_since = None;
            elector.lead(term, &token).await
        } else if elector.leadership.role() == Role::Passive {
            elector.follow().await
        } else {
            return; // memory-only, or shutting down
        };
        // `None`: the state changed under the turn; act again at once.
        let Some(next_turn) = next_turn else { continue };
        let leading = elector.leadership.current_term().is_some();
        tokio::select! {
            _ = sleep_until(next_turn) => {}
            _ = elector.claim.wake.notified(), if elector.claim.may_hand_off || !leading => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// One shard's elector between its turns.
struct Elector {
    leadership: Arc<Leadership>,
    store: Arc<dyn LockStore>,
    config: ElectionConfig,
    metrics: Arc<Metrics>,
    load_state: LoadState,
    claim: Claim,
    reachability: Reachability,
    /// Since when a passive that yields the shard has seen it without a leader.
    free_since: Option<Instant>,
}

impl Elector {
    /// A lock call bounded by the Redis timeout; `what` names it in the error.
    async fn bounded<T>(
        &self,
        what: &'static str,
        call: impl Future<Output = Result<T, LockError>>,
    ) -> Result<T, LockError> {
        timeout(self.config.call_timeout, call)
            .await
            .unwrap_or(Err(LockError::TimedOut(what)))
    }

    /// The leader's turn: hand the shard off if another instance should
    /// lead it, else renew. Returns when to act next.
    async fn lead(&mut self, term: u64, token: &str) -> Option<Instant> {
        if (self.claim.wish)() == Wish::Yield && self.leadership.stop_serving_to_hand_off(term) {
            sleep(HAND_OFF_GRACE).await;
            if let Some(token) = self.leadership.step_down(Some(term), StepDown::HandedOff) {
                let released = self.bounded("releasing the lock", self.store.release(&token));
                if let Err(error) = released.await {
                    self.reachability.failed(&error);
                }
            }
            return None;
        }
        let sent_at = Instant::now();
        let answer = self.bounded("renewal", self.store.renew(token)).await;
        let metrics = &self.metrics;
        metrics
            .lock_renew_seconds
            .observe(sent_at.elapsed().as_secs_f64());
        match answer {
            Ok(true) => {
                self.reachability.ok();
                self.leadership.renewed(term, sent_at);
            }
            Ok(false) => {
                self.reachability.ok();
                metrics.lock_renew_failures.inc();
                self.leadership.step_down(Some(term), StepDown::RenewLost);
            }
            Err(error) => {
                metrics.lock_renew_failures.inc();
                self.reachability.failed(&error);
            }
        }
        Some(sent_at + self.config.renew_every)
    }

    /// A passive's turn: take the lock if this instance should lead the
    /// shard, or if it stayed without a leader for a whole lease. Returns
    /// when to act next.
    async fn follow(&mut self) -> Option<Instant> {
        let wish = (self.claim.wish)();
        let take = match wish {
            Wish::Lead => true,
            Wish::Yield => self.free_for_a_lease().await,
        };
        if !take {
            return Some(Instant::now() + self.config.retry_every);
        }
        self.free_since = None;
        let one_at_a_time = self.claim.one_at_a_time.clone();
        let _turn = one_at_a_time.lock().await;
        // A shard this instance took meanwhile may have filled its share.
        if wish == Wish::Lead && (self.claim.wish)() == Wish::Yield {
            return None;
        }
        Some(self.try_to_take().await)
    }

    /// Whether the shard, which another instance should lead, has been
    /// without a leader for a whole lease.
    async fn free_for_a_lease(&mut self) -> bool {
        match self.bounded("reading the lock", self.store.holder()).await {
            Ok(holder) => {
                self.reachability.ok();
                (self.leadership).observe_leader(holder.as_deref().and_then(LeaderInfo::parse));
                let since = holder
                    .is_none()
                    .then(|| *self.free_since.get_or_insert_with(Instant::now));
                self.free_since = since;
                since.is_some_and(|since| since.elapsed() >= self.config.ttl)
            }
            Err(error) => {
                self.reachability.failed(&error);
                false
            }
        }
    }

    /// One attempt to take the lock; returns when to act next.
    async fn try_to_take(&mut self) -> Instant {
        self.metrics.lock_acquire_attempts.inc();
        let sent_at = Instant::now();
        match self.bounded("lock acquisition", self.store.acquire()).await {
            Ok(Acquire::Won(token)) => {
                self.reachability.ok();
                match LeaderInfo::parse(&token) {
                    Some(info) => {
                        if let Some(term) = self.leadership.acquired(info, sent_at) {
                            (self.load_state)(term);
                        }
                    }
                    None => tracing::error!(%token, "the lock holds a token ssq cannot read"),
                }
                sent_at + self.config.renew_every
            }
            Ok(Acquire::Held(token)) => {
                self.reachability.ok();
                self.leadership.observe_leader(LeaderInfo::parse(&token));
                Instant::now() + self.config.retry_every
            }
            // No backoff beyond the retry interval: an attempt costs Redis
            // one small script, and whatever kept Redis away (a restart,
            // loading its data, a stall), some instance must lead within
            // one interval of its answering again.
            Err(error) => {
                self.reachability.failed(&error);
                Instant::now() + self.config.retry_every
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::cluster::lock::LockCall;
    use crate::cluster::watchdog::run_watchdog;
    use crate::queue::clock::SystemClock;
    use crate::service::Service;

    /// A lock in memory whose answers the test controls.
    #[derive(Default)]
    struct FakeLock {
        state: Mutex<FakeState>,
    }

    #[derive(Default)]
    struct FakeState {
        holder: Option<String>,
        epoch: u64,
        /// Every call hangs forever, like a Redis that stopped answering.
        hang: bool,
        /// Every call fails at once, like a Redis answering LOADING.
        fail: bool,
    }

    impl FakeLock {
        fn set(&self, change: impl FnOnce(&mut FakeState)) {
            change(&mut self.state.lock().unwrap());
        }

        async fn answer<T>(&self, op: impl FnOnce(&mut FakeState) -> T) -> Result<T, LockError> {
            let (hang, fail) = {
                let state = self.state.lock().unwrap();
                (state.hang, state.fail)
            };
            if hang {
                std::future::pending::<()>().await;
            }
            if fail {
                let loading = fred::error::Error::new(
                    fred::error::ErrorKind::Unknown,
                    "LOADING Redis is loading the dataset in memory",
                );
                return Err(LockError::from(crate::cluster::StoreError {
                    store: "Redis",
                    source: Box::new(loading),
                }));
            }
            Ok(op(&mut self.state.lock().unwrap()))
        }
    }

    impl LockStore for FakeLock {
        fn acquire(&self) -> LockCall<'_, Acquire> {
            Box::pin(self.answer(|s| match &s.holder {
                Some(holder) if !holder.contains("|me|") => Acquire::Held(holder.clone()),
                _ => {
                    s.epoch += 1;
                    let token = format!("{}|me|00|http://me", s.epoch);
                    s.holder = Some(token.clone());
                    Acquire::Won(token)
                }
            }))
        }

        fn holder(&self) -> LockCall<'_, Option<String>> {
            Box::pin(self.answer(|s| s.holder.clone()))
        }

        fn renew<'a>(&'a self, token: &'a str) -> LockCall<'a, bool> {
            Box::pin(self.answer(move |s| s.holder.as_deref() == Some(token)))
        }

        fn release<'a>(&'a self, token: &'a str) -> LockCall<'a, bool> {
            Box::pin(self.answer(move |s| {
                let ours = s.holder.as_deref() == Some(token);
                if ours {
                    s.holder = None;
                }
                ours
            }))
        }
    }

    const CONFIG: ElectionConfig = ElectionConfig {
        ttl: Duration::from_secs(5),
        renew_every: Duration::from_secs(1),
        step_down_after: Duration::from_secs(3),
        retry_every: Duration::from_millis(500),
        call_timeout: Duration::from_millis(500),
    };

    struct Harness {
        leadership: Arc<Leadership>,
        lock: Arc<FakeLock>,
        released: Arc<Notify>,
        _stop: watch::Sender<bool>,
    }

    fn start(config: ElectionConfig) -> Harness {
        start_with_holder(config, None)
    }

    /// Starts the tasks with `holder` already holding the lock.
    fn start_with_holder(config: ElectionConfig, holder: Option<&str>) -> Harness {
        let metrics = Arc::new(Metrics::new("me"));
        let service = Arc::new(Service::new(Arc::new(SystemClock), metrics.clone()));
        let leadership = Arc::new(Leadership::new(
            "me".into(),
            0,
            Role::Passive,
            config.step_down_after,
            service,
            metrics.clone(),
        ));
        let lock = Arc::new(FakeLock::default());
        lock.set(|s| s.holder = holder.map(str::to_string));
        let released = Arc::new(Notify::new());
        let (stop, stopped) = watch::channel(false);
        let restore = leadership.clone();
        tokio::spawn(run_elector(
            leadership.clone(),
            lock.clone(),
            config,
            metrics,
            Arc::new(move |term| restore.restored(term)),
            Claim::always(released.clone()),
            stopped.clone(),
        ));
        tokio::spawn(run_watchdog(leadership.clone(), lock.clone(), config, stopped));
        Harness {
            leadership,
            lock,
            released,
            _stop: stop,
        }
    }

    async fn settle() {
        // Let spawned tasks run without moving the paused clock.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn takes_a_free_lock_and_keeps_it_by_renewing() {
        let h = start(CONFIG);
        settle().await;
        assert!(h.leadership.is_serving());
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(h.leadership.is_serving(), "renewals keep the lease");
        assert_eq!(h.leadership.role(), Role::Leader);
    }

    #[tokio::test(start_paused = true)]
    async fn steps_down_at_the_deadline_when_redis_hangs() {
        let h = start(CONFIG);
        settle().await;
        // Renewals go out at t = 0 (the acquisition), 1 s, 2 s...; hang just after the one at 2 s.
        tokio::time::sleep(Duration::from_millis(2_100)).await;
        h.lock.set(|s| s.hang = true);
        let last_good_sent = h.leadership.deadline().unwrap() - CONFIG.step_down_after;
        tokio::time::sleep_until(last_good_sent + CONFIG.step_down_after - Duration::from_millis(1)).await;
        assert!(h.leadership.is_serving());
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(
            !h.leadership.is_serving(),
            "stops serving exactly at the deadline"
        );
        settle().await;
        assert_eq!(h.leadership.role(), Role::Passive);
    }

    #[tokio::test(start_paused = true)]
    async fn the_watchdog_needs_no_answer_from_a_hung_elector() {
        // With an hour-long command timeout the elector itself stays stuck in
        // the hung renewal; the watchdog alone must step down.
        let config = ElectionConfig {
            call_timeout: Duration::from_secs(3_600),
            ..CONFIG
        };
        let h = start(config);
        settle().await;
        h.lock.set(|s| s.hang = true);
        tokio::time::sleep(Duration::from_millis(2_999)).await;
        assert!(h.leadership.is_serving());
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert!(!h.leadership.is_serving());
        assert_eq!(h.leadership.role(), Role::Passive);
    }

    #[tokio::test(start_paused = true)]
    async fn a_renewal_that_finds_another_token_steps_down_at_once() {
        let h = start(CONFIG);
        settle().await;
        h.lock.set(|s| s.holder = Some("9|other|00|http://other".into()));
        tokio::time::sleep(Duration::from_millis(1_001)).await;
        assert!(
            !h.leadership.is_serving(),
            "lost at the next renewal, well before the deadline"
        );
        assert_eq!(h.leadership.role(), Role::Passive);
    }

    #[tokio::test(start_paused = true)]
    async fn a_passive_takes_over_within_a_retry_once_the_key_is_gone() {
        let h = start_with_holder(CONFIG, Some("1|other|00|http://other:9324"));
        settle().await;
        assert_eq!(h.leadership.role(), Role::Passive);
        assert_eq!(h.leadership.leader_url().as_deref(), Some("http://other:9324"));
        h.lock.set(|s| s.holder = None);
        tokio::time::sleep(CONFIG.retry_every).await;
        settle().await;
        assert!(h.leadership.is_serving());
        assert_eq!(h.leadership.leader_url(), None, "a leader names no other leader");
    }

    /// However long Redis refused, the elector tries again every retry
    /// interval (it once backed off to 4 s), so it leads within one interval
    /// of Redis answering.
    #[tokio::test(start_paused = true)]
    async fn after_any_length_of_errors_a_passive_leads_within_a_retry() {
        let h = start_with_holder(CONFIG, None);
        h.lock.set(|s| s.fail = true);
        settle().await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(h.leadership.role(), Role::Passive);
        h.lock.set(|s| s.fail = false);
        tokio::time::sleep(CONFIG.retry_every).await;
        settle().await;
        assert!(
            h.leadership.is_serving(),
            "led within one retry of Redis answering"
        );
    }

    /// A lease in this node's own name, left by renewals a stalled Redis
    /// applied after the leader had stepped down, is taken over at once
    /// rather than waited out.
    #[tokio::test(start_paused = true)]
    async fn a_lease_left_in_our_own_name_is_taken_over() {
        let h = start_with_holder(CONFIG, Some("7|me|00|http://me"));
        settle().await;
        assert!(h.leadership.is_serving());
        assert_eq!(h.lock.state.lock().unwrap().epoch, 1, "a new token, a new epoch");
    }

    #[tokio::test(start_paused = true)]
    async fn a_release_announcement_wakes_a_passive_at_once() {
        let config = ElectionConfig {
            retry_every: Duration::from_secs(30),
            ..CONFIG
        };
        let h = start_with_holder(config, Some("1|other|00|http://other"));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(h.leadership.role(), Role::Passive);
        h.lock.set(|s| s.holder = None);
        h.released.notify_one();
        settle().await;
        assert!(h.leadership.is_serving(), "did not wait for the 30 s retry");
    }
}
