//! The election: the tasks that take, renew and give up the leader lock.
//!
//! Two tasks per instance. The *elector* acquires the lock while passive and
//! renews it every renew interval while leading; an answer that the lock is
//! gone or another's means leadership is lost at once. The *watchdog* is
//! apart from it, so that a Redis call that hangs cannot delay it: it sleeps
//! until the serving deadline (last good renewal *sent* + step-down) and
//! steps down when that passes. Both act on [`Leadership`], which the request
//! path reads.
//!
//! The lock itself is behind [`LockStore`], so the timing rules are tested
//! on a paused clock with a store that can be made to hang or fail.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, sleep, sleep_until, timeout};

use crate::leader::{LeaderInfo, Leadership, StepDown};
use crate::metrics::Metrics;
use crate::store::Layout;
use crate::store::redis::Link;
use crate::store::replicas::ReplicaAcks;

#[derive(Debug, Clone, Copy)]
pub struct ElectionConfig {
    pub ttl: Duration,
    pub renew_every: Duration,
    pub step_down_after: Duration,
    pub retry_every: Duration,
    /// Time limit of one lock call, the replicas' confirmation included.
    pub redis_timeout: Duration,
}

impl ElectionConfig {
    /// Refuses timings that would let a leader serve past its lease.
    pub fn validate(&self) -> Result<(), String> {
        if self.renew_every >= self.step_down_after {
            return Err(format!(
                "--lock-renew ({:?}) must be shorter than --lock-step-down ({:?}): a leader must get \
                 at least one renewal in before it has to step down",
                self.renew_every, self.step_down_after
            ));
        }
        if self.step_down_after >= self.ttl {
            return Err(format!(
                "--lock-step-down ({:?}) must be shorter than --lock-ttl ({:?}): a leader must stop \
                 serving before its lock can expire and another instance takes over",
                self.step_down_after, self.ttl
            ));
        }
        if self.retry_every.is_zero() || self.redis_timeout.is_zero() {
            return Err("--lock-retry and --redis-timeout must be greater than zero".into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    Won(String),
    Held(String),
}

pub type LockError = String;

/// The leader lock: acquire with a fresh token, renew, release.
pub trait LockStore: Send + Sync + 'static {
    fn acquire(&self) -> impl Future<Output = Result<Acquire, LockError>> + Send;
    /// The holder's token, without taking the lock.
    fn holder(&self) -> impl Future<Output = Result<Option<String>, LockError>> + Send;
    fn renew(&self, token: &str) -> impl Future<Output = Result<bool, LockError>> + Send;
    fn release(&self, token: &str) -> impl Future<Output = Result<bool, LockError>> + Send;
}

/// Logs Redis reachability once per change, not once per attempt.
struct Reachability {
    reachable: Option<bool>,
}

impl Reachability {
    fn ok(&mut self) {
        if self.reachable != Some(true) {
            if self.reachable.is_some() {
                tracing::info!("Redis reachable again");
            }
            self.reachable = Some(true);
        }
    }

    fn failed(&mut self, error: &str) {
        if self.reachable != Some(false) {
            tracing::warn!(%error, "Redis unreachable: will keep retrying");
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
pub async fn run_elector<S: LockStore>(
    leadership: Arc<Leadership>,
    store: Arc<S>,
    config: ElectionConfig,
    metrics: Arc<Metrics>,
    load_state: LoadState,
    claim: Claim,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut reachability = Reachability { reachable: None };
    // Since when a passive that yields the shard has seen it without a leader.
    let mut free_since: Option<Instant> = None;
    while !*shutdown.borrow() {
        let wait_until = if let Some((term, token)) = leadership.current_term() {
            free_since = None;
            if (claim.wish)() == Wish::Yield && leadership.stop_serving_to_hand_off(term) {
                sleep(HAND_OFF_GRACE).await;
                if let Some(token) = leadership.step_down(Some(term), StepDown::HandedOff) {
                    match timeout(config.redis_timeout, store.release(&token)).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(error)) => reachability.failed(&error),
                        Err(_) => reachability.failed("releasing the lock timed out"),
                    }
                }
                continue;
            }
            let sent_at = Instant::now();
            let answer = timeout(config.redis_timeout, store.renew(&token)).await;
            metrics
                .lock_renew_seconds
                .observe(sent_at.elapsed().as_secs_f64());
            match answer {
                Ok(Ok(true)) => {
                    reachability.ok();
                    leadership.renewed(term, sent_at);
                }
                Ok(Ok(false)) => {
                    reachability.ok();
                    metrics.lock_renew_failures.inc();
                    leadership.step_down(Some(term), StepDown::RenewLost);
                }
                Ok(Err(error)) => {
                    metrics.lock_renew_failures.inc();
                    reachability.failed(&error);
                }
                Err(_) => {
                    metrics.lock_renew_failures.inc();
                    reachability.failed("renewal timed out");
                }
            }
            sent_at + config.renew_every
        } else if leadership.role() == crate::leader::Role::Passive {
            let wish = (claim.wish)();
            let take = match wish {
                Wish::Lead => {
                    free_since = None;
                    true
                }
                // Another instance should lead this shard: watch, and take
                // it only if it stays free for a whole lease.
                Wish::Yield => match timeout(config.redis_timeout, store.holder()).await {
                    Ok(Ok(holder)) => {
                        reachability.ok();
                        leadership.observe_leader(holder.as_deref().and_then(LeaderInfo::parse));
                        let since = holder
                            .is_none()
                            .then(|| *free_since.get_or_insert_with(Instant::now));
                        free_since = since;
                        since.is_some_and(|since| since.elapsed() >= config.ttl)
                    }
                    Ok(Err(error)) => {
                        reachability.failed(&error);
                        false
                    }
                    Err(_) => {
                        reachability.failed("reading the lock timed out");
                        false
                    }
                },
            };
            if take {
                let _turn = claim.one_at_a_time.lock().await;
                // A shard this instance took meanwhile may have filled its share.
                if wish == Wish::Lead && (claim.wish)() == Wish::Yield {
                    continue;
                }
                free_since = None;
                try_to_take(
                    &leadership,
                    store.as_ref(),
                    &config,
                    &metrics,
                    &load_state,
                    &mut reachability,
                )
                .await
            } else {
                Instant::now() + config.retry_every
            }
        } else {
            return; // memory-only, or shutting down
        };
        tokio::select! {
            _ = sleep_until(wait_until) => {}
            _ = claim.wake.notified(), if claim.may_hand_off || leadership.current_term().is_none() => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// One attempt to take the lock; returns when to act next.
async fn try_to_take<S: LockStore>(
    leadership: &Leadership,
    store: &S,
    config: &ElectionConfig,
    metrics: &Metrics,
    load_state: &LoadState,
    reachability: &mut Reachability,
) -> Instant {
    metrics.lock_acquire_attempts.inc();
    let sent_at = Instant::now();
    match timeout(config.redis_timeout, store.acquire()).await {
        Ok(Ok(Acquire::Won(token))) => {
            reachability.ok();
            match LeaderInfo::parse(&token) {
                Some(info) => {
                    if let Some(term) = leadership.acquired(info, sent_at) {
                        load_state(term);
                    }
                }
                None => tracing::error!(%token, "the lock holds a token ssq cannot read"),
            }
            sent_at + config.renew_every
        }
        Ok(Ok(Acquire::Held(token))) => {
            reachability.ok();
            leadership.observe_leader(LeaderInfo::parse(&token));
            Instant::now() + config.retry_every
        }
        // No backoff beyond the retry interval: an attempt costs
        // Redis one small script, and whatever kept Redis away (a
        // restart, loading its data, a stall), some instance must
        // lead within one interval of its answering again.
        Ok(Err(error)) => {
            reachability.failed(&error);
            Instant::now() + config.retry_every
        }
        Err(_) => {
            reachability.failed("lock acquisition timed out");
            Instant::now() + config.retry_every
        }
    }
}

/// Steps the leader down when its serving deadline passes, whatever the
/// elector is doing. Gives the lock up too if Redis still answers, so that a
/// passive need not wait for the TTL.
pub async fn run_watchdog<S: LockStore>(
    leadership: Arc<Leadership>,
    store: Arc<S>,
    config: ElectionConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    while !*shutdown.borrow() {
        let changed = leadership.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if let Some(token) = leadership.step_down_if_expired() {
            let store = store.clone();
            tokio::spawn(async move {
                let _ = timeout(config.redis_timeout, store.release(&token)).await;
            });
            continue;
        }
        match leadership.deadline() {
            Some(deadline) => tokio::select! {
                _ = sleep_until(deadline) => {}
                _ = &mut changed => {}
                _ = shutdown.changed() => {}
            },
            None => tokio::select! {
                _ = &mut changed => {}
                _ = shutdown.changed() => {}
            },
        }
    }
}

/// Wakes whoever waits on a channel's notice: each shard's elector when its
/// leader announces that it let go, and in a sharded group the heartbeat
/// when a member joined or left and each shard's inbox task when messages
/// arrived from another shard. `channels` pairs each channel with what it
/// wakes.
pub async fn watch_notices(
    subscriber: fred::clients::SubscriberClient,
    channels: Vec<(String, Arc<Notify>)>,
    retry_every: Duration,
) {
    let mut messages = subscriber.message_rx();
    // Re-subscribes after every reconnection; the task runs detached.
    drop(subscriber.manage_subscriptions());
    // Only a subscription that succeeded is renewed after reconnections, so
    // the first one is retried until Redis takes it.
    let names: Vec<String> = channels.iter().map(|(name, _)| name.clone()).collect();
    while let Err(error) = subscriber.subscribe(names.clone()).await {
        tracing::debug!(%error, "subscribing to notices failed; retrying");
        sleep(retry_every).await;
    }
    let wake_all = || channels.iter().for_each(|(_, wake)| wake.notify_one());
    loop {
        match messages.recv().await {
            Ok(message) => match channels.iter().find(|(name, _)| message.channel == name.as_str()) {
                Some((_, wake)) => wake.notify_one(),
                None => wake_all(),
            },
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => wake_all(),
            Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                sleep(Duration::from_millis(100)).await;
                messages = subscriber.message_rx();
            }
        }
    }
}

/// The leader lock in Redis. All keys share the hash tag `{prefix}`, so the
/// scripts touch one slot and stay valid behind Redis Cluster.
pub struct RedisLock {
    link: Link,
    lock_key: String,
    epoch_key: String,
    pub release_channel: String,
    node_id: String,
    advertise_url: String,
    ttl_ms: u64,
    acquire: Script,
    renew: Script,
    release: Script,
    /// Replicas that must hold an acquisition or a renewal (`replicas.rs`).
    acks: ReplicaAcks,
}

impl RedisLock {
    pub fn new(link: Link, layout: &Layout, node_id: &str, advertise_url: &str, ttl: Duration) -> RedisLock {
        RedisLock {
            link,
            lock_key: layout.lock(),
            epoch_key: layout.epoch(),
            release_channel: layout.release_channel(),
            node_id: node_id.to_string(),
            advertise_url: advertise_url.to_string(),
            ttl_ms: ttl.as_millis() as u64,
            acquire: Script::from_lua(include_str!("lua/lock_acquire.lua")),
            renew: Script::from_lua(include_str!("lua/lock_renew.lua")),
            release: Script::from_lua(include_str!("lua/lock_release.lua")),
            acks: ReplicaAcks::NONE,
        }
    }

    /// Acquisitions (and so epochs) and renewals count only once `acks`
    /// replicas hold them; an unconfirmed one is a failed one.
    pub fn confirmed_by_replicas(mut self, acks: ReplicaAcks) -> RedisLock {
        self.acks = acks;
        self
    }

    /// `client` must be the one the write was sent on: `WAIT` counts
    /// the writes of its own connection.
    async fn confirm(&self, client: &Client) -> Result<(), LockError> {
        self.acks.confirm(client, &self.lock_key).await
    }

    async fn run<R: FromValue>(
        &self,
        client: &Client,
        script: &Script,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> Result<R, LockError> {
        script
            .evalsha_with_reload(client, keys, args)
            .await
            .map_err(|e| e.to_string())
    }
}

impl LockStore for RedisLock {
    async fn acquire(&self) -> Result<Acquire, LockError> {
        let nonce = format!("{:016x}", crate::queue::random::nonce());
        let args = vec![
            self.node_id.clone(),
            self.advertise_url.clone(),
            self.ttl_ms.to_string(),
            nonce,
        ];
        let client = self.link.commands();
        let (won, token): (i64, String) = self
            .run(
                &client,
                &self.acquire,
                vec![self.lock_key.clone(), self.epoch_key.clone()],
                args,
            )
            .await?;
        if won != 1 {
            return Ok(Acquire::Held(token));
        }
        // Unconfirmed, the lock stays in this node's name in Redis; the next
        // attempt takes it over with a new epoch, confirmed or not at all.
        self.confirm(&client).await?;
        Ok(Acquire::Won(token))
    }

    async fn holder(&self) -> Result<Option<String>, LockError> {
        self.link
            .commands()
            .get(self.lock_key.as_str())
            .await
            .map_err(|e| e.to_string())
    }

    async fn renew(&self, token: &str) -> Result<bool, LockError> {
        let args = vec![token.to_string(), self.ttl_ms.to_string()];
        let client = self.link.commands();
        let renewed = self
            .run::<i64>(&client, &self.renew, vec![self.lock_key.clone()], args)
            .await?
            == 1;
        if renewed {
            self.confirm(&client).await?;
        }
        Ok(renewed)
    }

    async fn release(&self, token: &str) -> Result<bool, LockError> {
        let args = vec![token.to_string(), self.release_channel.clone()];
        Ok(self
            .run::<i64>(
                &self.link.commands(),
                &self.release,
                vec![self.lock_key.clone()],
                args,
            )
            .await?
            == 1)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::leader::Role;
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
                return Err("LOADING Redis is loading the dataset in memory".into());
            }
            Ok(op(&mut self.state.lock().unwrap()))
        }
    }

    impl LockStore for FakeLock {
        async fn acquire(&self) -> Result<Acquire, LockError> {
            self.answer(|s| match &s.holder {
                Some(holder) if !holder.contains("|me|") => Acquire::Held(holder.clone()),
                _ => {
                    s.epoch += 1;
                    let token = format!("{}|me|00|http://me", s.epoch);
                    s.holder = Some(token.clone());
                    Acquire::Won(token)
                }
            })
            .await
        }

        async fn holder(&self) -> Result<Option<String>, LockError> {
            self.answer(|s| s.holder.clone()).await
        }

        async fn renew(&self, token: &str) -> Result<bool, LockError> {
            self.answer(|s| s.holder.as_deref() == Some(token)).await
        }

        async fn release(&self, token: &str) -> Result<bool, LockError> {
            self.answer(|s| {
                let ours = s.holder.as_deref() == Some(token);
                if ours {
                    s.holder = None;
                }
                ours
            })
            .await
        }
    }

    const CONFIG: ElectionConfig = ElectionConfig {
        ttl: Duration::from_secs(5),
        renew_every: Duration::from_secs(1),
        step_down_after: Duration::from_secs(3),
        retry_every: Duration::from_millis(500),
        redis_timeout: Duration::from_millis(500),
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
            redis_timeout: Duration::from_secs(3_600),
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
