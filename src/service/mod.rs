//! The service: the queues of one shard, each behind its own lock, and
//! what every operation shares: the queue map, the limits, the hand-off of
//! changes to the store, long polling.
//!
//! The queue map sits behind a `RwLock` that is only written when a queue is
//! created or deleted; each queue has its own `std::sync::Mutex`, held for the
//! short, non-async critical section of one core operation (`slot.rs`).
//!
//! With persistence on, an operation's changes are submitted to the store
//! *while the queue's lock is held*, so the store receives each queue's
//! changes in the order memory applied them; the operation then waits, lock
//! released, for its commit before it answers (`commit.rs`). Memory has a
//! generation that every leadership change or reload bumps; the store
//! refuses changes made in an older generation.
//!
//! One file per kind of operation: `queues.rs` (create, delete, list,
//! install), `send.rs`, `receive.rs` (long polling, dead letters),
//! `between_shards.rs` (messages between shards), `move_tasks.rs`; `limits.rs`
//! accounts for what the instance holds, `accounts.rs` for what each
//! account does.

mod accounts;
mod between_shards;
mod commit;
mod import;
mod limits;
pub(crate) mod move_tasks;
mod queues;
mod receive;
pub mod replays;
mod send;
pub mod shards;
mod slot;
mod topics;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

pub use self::import::{ImportError, Imported, Seed, SeedError, SeedSource};
pub use self::limits::Limits;
pub use self::queues::{ConfiguredQueueError, Created, QueueSpec, check_account_room, select_names};
pub use self::receive::ReceiveRequest;
use self::slot::{QueueSlot, lock_pair};
pub use self::topics::{Delivered, Fanout, SNS_SENDER_ID, unsubscribe_url};
use crate::error::{Result, SqsError};
use crate::journal::{Memory, Pending, Transfer, Write};
use crate::metrics::{AccountHolding, Metrics};
use crate::queue::clock::Clock;
use crate::queue::{Activity, Counts, FairCounts, Queue};
use crate::service::shards::Placement;

pub struct Service {
    queues: RwLock<BTreeMap<String, Arc<QueueSlot>>>,
    clock: Arc<dyn Clock>,
    pub metrics: Arc<Metrics>,
    /// Set once at shutdown: long polls return at once.
    closing: AtomicBool,
    /// Where changes go to be made durable; `None` in memory-only mode.
    journal: Option<mpsc::UnboundedSender<Pending>>,
    generation: AtomicU64,
    limits: Limits,
    /// Queues the configuration file asks for, created wherever missing.
    configured_queues: Vec<QueueSpec>,
    /// The snapshot to import at the first load, until imported (`import.rs`).
    seed: Mutex<Option<SeedSource>>,
    /// Why the import was refused, once it was (`import.rs`).
    import_failed: tokio::sync::watch::Sender<Option<ImportError>>,
    /// See [`Service::preparing`].
    preparing: AtomicBool,
    /// Messages and payload bytes held over all queues, kept up to date by
    /// applying each operation's difference.
    held_messages: AtomicU64,
    held_bytes: AtomicU64,
    /// Counts the loads of the state, moved on once each load's queues and
    /// topics are installed: what the state holds that runs in the
    /// background (message move tasks, replays) resumes.
    pub state_loaded: tokio::sync::watch::Sender<u64>,
    /// In a sharded group: which shard this service holds, so that a
    /// message bound for another shard's queue goes through the outbox.
    home: Option<(Placement, usize)>,
    /// Notified when messages were committed into the outbox.
    pub outbox_ready: Notify,
    /// Queues of other shards that a transfer found missing, and until when
    /// receives stop sending dead letters to them (they stay in their
    /// queue, as with a missing dead-letter queue of this shard).
    missing_targets: Mutex<HashMap<String, Instant>>,
    /// The shard's SNS topics and subscriptions (`topics.rs`).
    topics: Mutex<topics::TopicsSlot>,
    /// Notified when a subscription's deliveries wait with no task sending
    /// them: new ones were added, or loaded (`webhooks/`).
    pub deliveries_added: Notify,
    /// With `--credentials`: what each account holds, and may
    /// (`accounts.rs`); and, being set, that a topic delivers to a queue
    /// only where the queue's policy lets it (`topics.rs`).
    accounts: Option<accounts::Accounts>,
}

impl Service {
    pub fn new(clock: Arc<dyn Clock>, metrics: Arc<Metrics>) -> Service {
        Service {
            queues: RwLock::new(BTreeMap::new()),
            clock,
            metrics,
            closing: AtomicBool::new(false),
            journal: None,
            generation: AtomicU64::new(0),
            limits: Limits::default(),
            configured_queues: Vec::new(),
            seed: Mutex::new(None),
            import_failed: tokio::sync::watch::channel(None).0,
            preparing: AtomicBool::new(false),
            held_messages: AtomicU64::new(0),
            held_bytes: AtomicU64::new(0),
            state_loaded: tokio::sync::watch::Sender::new(0),
            home: None,
            outbox_ready: Notify::new(),
            deliveries_added: Notify::new(),
            missing_targets: Mutex::new(HashMap::new()),
            topics: topics::no_topics(),
            accounts: None,
        }
    }

    pub fn with_limits(mut self, limits: Limits) -> Service {
        self.limits = limits;
        self
    }

    /// Queues and topics belong to accounts (with `--credentials`): topics
    /// deliver to a queue only where the queue's policy lets them, as AWS
    /// requires, and what each account holds is counted against its limit;
    /// `home` is the instance's account and region.
    pub fn with_accounts(mut self, home: crate::queue::Home) -> Service {
        self.accounts = Some(accounts::Accounts::new(home));
        self
    }

    /// Sets the bytes each account may hold (`max_bytes` in the credentials
    /// file), on every load of the file; accounts left out may hold any.
    pub fn set_account_limits(&self, max_bytes: &HashMap<String, u64>) {
        if let Some(accounts) = &self.accounts {
            accounts.set_limits(max_bytes);
        }
    }

    /// What each account holds: its queues, messages and payload bytes
    /// (empty without `--credentials`).
    pub fn holdings_by_account(&self) -> Vec<AccountHolding> {
        let Some(accounts) = &self.accounts else {
            return Vec::new();
        };
        let mut queues = HashMap::new();
        for key in self.read_queues().keys() {
            *queues.entry(accounts.of(key).to_string()).or_insert(0) += 1;
        }
        accounts.holdings(queues)
    }

    pub fn now(&self) -> u64 {
        self.clock.now_millis()
    }

    fn read_queues(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<QueueSlot>>> {
        self.queues
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_queues(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<QueueSlot>>> {
        self.queues
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every queue, in name order, taken out of the map's lock so that each
    /// can be locked in turn without holding it.
    fn slots(&self) -> Vec<(String, Arc<QueueSlot>)> {
        self.read_queues()
            .iter()
            .map(|(name, slot)| (name.clone(), slot.clone()))
            .collect()
    }

    /// NonExistentQueue unless the queue exists: AWS reports a missing
    /// queue before anything else wrong with a request on it.
    pub fn ensure_exists(&self, name: &str) -> Result<()> {
        self.slot(name).map(drop)
    }

    /// The queue's policy (its `Policy` attribute, as read), if it exists
    /// and has one that reads as a policy.
    pub fn queue_policy(&self, name: &str) -> Option<Arc<crate::policy::Policy>> {
        self.slot(name)
            .ok()?
            .lock()
            .attributes
            .policy
            .as_ref()?
            .read
            .clone()
    }

    fn slot(&self, name: &str) -> Result<Arc<QueueSlot>> {
        self.read_queues()
            .get(name)
            .cloned()
            .ok_or_else(SqsError::queue_does_not_exist)
    }

    /// Runs `operation` on the named queue under its lock, with the time,
    /// and answers once its changes are durable. Wakes the queue's long
    /// pollers, since any operation may have made a message receivable.
    pub async fn with_queue<R>(&self, name: &str, operation: impl FnOnce(&mut Queue, u64) -> R) -> Result<R> {
        self.with_queue_sending(name, |queue, now| (operation(queue, now), Vec::new()))
            .await
    }

    /// As [`Service::with_queue`], where the operation may also take
    /// messages out for queues of other shards: they go into the outbox in
    /// the same commit as their removal (see `transfers.rs`).
    pub async fn with_queue_sending<R>(
        &self,
        name: &str,
        operation: impl FnOnce(&mut Queue, u64) -> (R, Vec<Transfer>),
    ) -> Result<R> {
        let slot = self.slot(name)?;
        let (result, commit) = {
            let mut queue = slot.lock();
            if slot.is_closed() {
                return Err(SqsError::queue_does_not_exist());
            }
            let before = queue.holding();
            let (result, transfers) = operation(&mut queue, self.now());
            self.hold_queue(&queue.name, before, queue.holding());
            let mut writes = vec![Self::changes_of(&mut queue)];
            if !transfers.is_empty() {
                writes.push(Write::Outbox(transfers));
            }
            (result, self.submit(slot.generation, writes))
        };
        slot.ready.notify_waiters();
        self.committed(commit).await?;
        Ok(result)
    }

    /// Runs `look` on the named queue under its lock, borrowed immutably:
    /// time is not advanced, nothing is submitted to the store and no long
    /// poll is woken, so a look leaves no trace (the message browser).
    pub fn inspect<R>(&self, name: &str, look: impl FnOnce(&Queue, u64) -> R) -> Result<R> {
        let slot = self.slot(name)?;
        let queue = slot.lock();
        if slot.is_closed() {
            return Err(SqsError::queue_does_not_exist());
        }
        Ok(look(&queue, self.now()))
    }

    /// Runs `operation` on two queues at once, both locked (in name order, so
    /// that no two callers can deadlock), and commits both queues' changes
    /// together: what moves from one to the other is never lost nor in both.
    pub async fn with_queues<R>(
        &self,
        first: &str,
        second: &str,
        operation: impl FnOnce(&mut Queue, &mut Queue, u64) -> R,
    ) -> Result<R> {
        let (slot_a, slot_b) = (self.slot(first)?, self.slot(second)?);
        if Arc::ptr_eq(&slot_a, &slot_b) {
            return Err(SqsError::invalid_parameter(
                "The source and the destination must be different queues.",
            ));
        }
        let (result, commit) = {
            let (mut a, mut b) = lock_pair(&slot_a, &slot_b);
            if slot_a.is_closed() || slot_b.is_closed() {
                return Err(SqsError::queue_does_not_exist());
            }
            let before = (a.holding(), b.holding());
            let result = operation(&mut a, &mut b, self.now());
            self.hold_queue(&a.name, before.0, a.holding());
            self.hold_queue(&b.name, before.1, b.holding());
            let commit = self.submit(
                slot_a.generation,
                vec![Self::changes_of(&mut a), Self::changes_of(&mut b)],
            );
            (result, commit)
        };
        slot_a.ready.notify_waiters();
        slot_b.ready.notify_waiters();
        self.committed(commit).await?;
        Ok(result)
    }

    /// The names of the queues for which `select` holds, in order.
    pub fn queues_where(&self, select: impl Fn(&Queue) -> bool) -> Vec<String> {
        self.slots()
            .into_iter()
            .filter(|(_, slot)| select(&slot.lock()))
            .map(|(name, _)| name)
            .collect()
    }

    /// Runs `look` on every queue in key order, each under its lock in
    /// turn: what the metrics scrape and the admin page read. `look` may
    /// count the queue's messages, which advances time and may drop
    /// messages past retention, so what the queue holds is accounted after.
    pub fn each_queue<R>(&self, mut look: impl FnMut(&str, &mut Queue, u64) -> R) -> Vec<R> {
        let now = self.now();
        self.slots()
            .into_iter()
            .map(|(name, slot)| {
                let mut queue = slot.lock();
                let before = queue.holding();
                let result = look(&name, &mut queue, now);
                self.hold_queue(&queue.name, before, queue.holding());
                result
            })
            .collect()
    }

    /// What each queue has done (its counters), for the admin page's rates.
    pub fn activity_by_queue(&self) -> Vec<(String, Activity)> {
        self.each_queue(|name, queue, _| (name.to_string(), queue.activity()))
    }

    /// Message counts of every queue, all and of quiet tenants (fair
    /// queues), for the metrics scrape.
    pub fn counts_by_queue(&self) -> Vec<(String, Counts, FairCounts)> {
        self.each_queue(|name, queue, now| {
            let counts = queue.counts(now);
            (name.to_string(), counts, queue.fair_counts(&counts))
        })
    }
}

impl Memory for Service {
    fn generation(&self) -> u64 {
        Service::generation(self)
    }

    fn clear(&self) {
        Service::clear(self);
        self.clear_topics();
    }

    fn install(&self, queues: Vec<Queue>, topics: crate::topic::Topics) {
        Service::install(self, queues);
        self.install_topics(topics);
        self.state_loaded.send_modify(|loads| *loads += 1);
    }

    fn close_long_polls(&self) {
        Service::close_long_polls(self)
    }

    fn create_configured_queues(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            match self.import_seed().await {
                None => {}
                Some(Ok(imported)) => tracing::info!(?imported, "imported the snapshot"),
                // Never ready: the node stops on it (`import_failure`).
                Some(Err(_)) => return,
            }
            match self.create_missing_queues().await {
                Ok(0) => {}
                Ok(created) => tracing::info!(created, "created the configured queues that were missing"),
                Err(error) => tracing::error!(%error, "a configured queue could not be created"),
            }
            self.prepared();
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use crate::error::ErrorCode;
    use crate::queue::NewMessage;
    use crate::queue::clock::TokioClock;

    const T0: u64 = 1_700_000_000_000;

    async fn service() -> Arc<Service> {
        let service = Arc::new(Service::new(
            Arc::new(TokioClock::new(T0)),
            Arc::new(Metrics::new("test")),
        ));
        service
            .create_queue("q", &BTreeMap::new(), BTreeMap::new())
            .await
            .unwrap();
        service
    }

    fn message(body: &str, delay: Option<u32>) -> NewMessage {
        NewMessage {
            delay_seconds: delay,
            ..NewMessage::plain(body)
        }
    }

    fn wait(max: usize, wait_seconds: Option<u32>) -> ReceiveRequest<'static> {
        ReceiveRequest {
            max,
            wait_seconds,
            ..Default::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn long_poll_returns_as_soon_as_a_message_arrives() {
        let svc = service().await;
        let poller = {
            let svc = svc.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let got = svc.receive("q", wait(10, Some(20))).await.unwrap();
                (got.len(), started.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_secs(3)).await;
        svc.send("q", vec![message("hi", None)]).await.unwrap();
        let (count, waited) = poller.await.unwrap();
        assert_eq!(count, 1);
        assert_eq!(waited, Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn long_poll_times_out_empty_after_the_wait() {
        let svc = service().await;
        let started = Instant::now();
        let got = svc.receive("q", wait(10, Some(7))).await.unwrap();
        assert!(got.is_empty());
        assert_eq!(started.elapsed(), Duration::from_secs(7));
    }

    #[tokio::test(start_paused = true)]
    async fn long_poll_wakes_when_a_delayed_message_turns_visible() {
        let svc = service().await;
        svc.send("q", vec![message("later", Some(4))]).await.unwrap();
        let started = Instant::now();
        let got = svc.receive("q", wait(10, Some(20))).await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(started.elapsed(), Duration::from_secs(4));
    }

    #[tokio::test(start_paused = true)]
    async fn queue_wait_time_applies_when_the_request_gives_none() {
        let svc = service().await;
        svc.with_queue("q", |q, _| q.attributes.receive_message_wait_time_seconds = 2)
            .await
            .unwrap();
        let started = Instant::now();
        assert!(svc.receive("q", wait(1, None)).await.unwrap().is_empty());
        assert_eq!(started.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn deleting_a_queue_ends_its_long_polls() {
        let svc = service().await;
        let poller = {
            let svc = svc.clone();
            tokio::spawn(async move { svc.receive("q", wait(1, Some(20))).await })
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        svc.delete_queue("q").await.unwrap();
        let started = Instant::now();
        assert!(poller.await.unwrap().unwrap().is_empty());
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn create_is_idempotent_only_for_agreeing_attributes() {
        let svc = Service::new(
            Arc::new(crate::queue::clock::SystemClock),
            Arc::new(Metrics::new("test")),
        );
        let attrs = BTreeMap::from([("VisibilityTimeout".to_string(), "60".to_string())]);
        assert_eq!(
            svc.create_queue("a", &attrs, BTreeMap::new()).await.unwrap(),
            Created::New
        );
        assert_eq!(
            svc.create_queue("a", &attrs, BTreeMap::new()).await.unwrap(),
            Created::Existing
        );
        assert_eq!(
            svc.create_queue("a", &BTreeMap::new(), BTreeMap::new())
                .await
                .unwrap(),
            Created::Existing
        );
        let other = BTreeMap::from([("VisibilityTimeout".to_string(), "61".to_string())]);
        let err = svc.create_queue("a", &other, BTreeMap::new()).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::QueueNameExists);
    }

    #[tokio::test]
    async fn names_list_by_prefix_in_pages() {
        let svc = Service::new(
            Arc::new(crate::queue::clock::SystemClock),
            Arc::new(Metrics::new("test")),
        );
        for name in ["b1", "a", "b2", "b3", "c", "eu-north-1/b1", "eu-north-1/b4", "e"] {
            svc.create_queue(name, &BTreeMap::new(), BTreeMap::new())
                .await
                .unwrap();
        }
        assert_eq!(svc.queue_names("", "b", None, 2), ["b1", "b2"]);
        assert_eq!(svc.queue_names("", "b", Some("b2"), 2), ["b3"]);
        assert_eq!(
            svc.queue_names("", "", None, 10),
            ["a", "b1", "b2", "b3", "c", "e"],
            "the home region's own"
        );
        assert_eq!(
            svc.queue_names("eu-north-1/", "b", None, 10),
            ["eu-north-1/b1", "eu-north-1/b4"]
        );
        assert_eq!(
            svc.queue_names("eu-north-1/", "", Some("eu-north-1/b1"), 10),
            ["eu-north-1/b4"]
        );
    }
}
