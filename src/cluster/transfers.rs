//! Messages between shards: dead letters and moved messages whose queue is
//! in another shard than the one they leave, delivered exactly once.
//!
//! A message crosses in three steps, each of them atomic and each safe to
//! repeat:
//!
//! 1. The source shard's leader removes the message from its queue and
//!    appends it to its shard's **outbox**, in one fenced commit
//!    (`Write::Outbox`): from then on the message is durable in the store,
//!    and in exactly one place.
//! 2. The [`Transfers`] task of the source shard reads the outbox in order
//!    and delivers each message into the target shard's **inbox**, unless
//!    its queue does not exist; then it removes the entries from the outbox
//!    (`Write::Delivered`, fenced). How a delivery is made once is the
//!    store's ([`Mailboxes`]): `redis.rs` appends to the target's stream
//!    with an arrival marker that a repeated delivery finds (no Lua script
//!    can touch two shards of a Redis Cluster); `postgres.rs` moves the row
//!    from outbox to inbox in one transaction, so there is nothing to
//!    repeat, and the removal finds no outbox row left.
//! 3. The target shard's task reads its inbox in order, takes the messages
//!    into their queues and removes the entries, in one fenced commit per
//!    queue (`Write::TakenIn`).
//!
//! A target queue that does not exist leaves the message undelivered in
//! step 2: it goes back into the queue it left, in its old place
//! (`Queue::put_back`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use std::future::Future;
use std::pin::Pin;

use tokio::sync::{Notify, watch};

use crate::cluster::StoreError;
use crate::error::SqsError;
use crate::journal::{Transfer, Write};
use crate::leader::Leadership;
use crate::service::Service;
use crate::service::shards::Placement;

/// Entries read at a time.
pub const BATCH: usize = 100;

/// A shard's two mailboxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mailbox {
    Outbox,
    Inbox,
}

/// An entry read back: its id, its fields as stored, and the transfer
/// they hold, or why they cannot be read (the store decodes them).
pub struct Stored {
    pub id: String,
    pub fields: HashMap<String, String>,
    pub transfer: Result<Transfer, Box<dyn std::error::Error + Send + Sync>>,
}

/// A mailbox call in flight.
pub type MailboxCall<'a, T> = Pin<Box<dyn Future<Output = Result<T, MailboxError>> + Send + 'a>>;

/// Where one shard's outbox and inbox are kept, and how a delivery
/// between shards is made once.
pub trait Mailboxes: Send + Sync + 'static {
    /// The oldest entries (at most [`BATCH`]) of this shard's `mailbox`, in order.
    fn read(&self, mailbox: Mailbox) -> MailboxCall<'_, Vec<Stored>>;

    /// Delivers `entries` of this shard's outbox into shard `target`'s
    /// inbox; for each, whether it was (false: its queue does not exist).
    fn deliver<'a>(&'a self, target: usize, entries: &'a [Entry]) -> MailboxCall<'a, Vec<bool>>;
}

/// Why a mailbox call failed.
#[derive(Debug, thiserror::Error)]
pub enum MailboxError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("this instance no longer leads the shard")]
    NotLeading,
}

/// Why moving messages between shards paused; it resumes at the next turn,
/// and nothing is lost: an entry leaves a stream only once it is held
/// where it goes.
#[derive(Debug, thiserror::Error)]
enum TransferError {
    #[error("reading the {mailbox:?} failed: {source}")]
    Read { mailbox: Mailbox, source: MailboxError },
    #[error("delivering to shard {target} failed: {source}")]
    Deliver { target: usize, source: MailboxError },
    /// This shard's own commit refused the change (say, it is no longer leader).
    #[error("{}", .0.message)]
    Commit(#[from] SqsError),
}

/// The outbox and inbox of one shard, worked while this instance leads it.
pub struct Transfers {
    pub mailboxes: Arc<dyn Mailboxes>,
    pub placement: Placement,
    pub shard: usize,
    pub service: Arc<Service>,
    pub leadership: Arc<Leadership>,
    /// Woken by the inbox's arrival notices.
    pub inbox_arrived: Arc<Notify>,
    /// How often the mailboxes are looked at with no notice (one may be
    /// lost while the subscriber reconnects).
    pub poll_every: Duration,
}

/// An entry read back: its id, the transfer it holds, and its fields as
/// stored (delivered on as they are).
pub struct Entry {
    pub id: String,
    pub transfer: Transfer,
    pub fields: HashMap<String, String>,
}

impl Transfers {
    /// Runs the outbox and the inbox until `stopped` turns true.
    pub async fn run(self, stopped: watch::Receiver<bool>) {
        tokio::join!(
            self.work(&self.service.outbox_ready, stopped.clone(), || self
                .deliver_outbox()),
            self.work(&self.inbox_arrived, stopped, || self.take_in_inbox()),
        );
    }

    /// Runs `step` while it finds work, each time `wake` is notified or
    /// `poll_every` passed, while this instance serves the shard.
    async fn work<'a, Fut>(
        &'a self,
        wake: &Notify,
        mut stopped: watch::Receiver<bool>,
        step: impl Fn() -> Fut,
    ) where
        Fut: std::future::Future<Output = Result<usize, TransferError>> + 'a,
    {
        loop {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(self.poll_every) => {}
                _ = stopped.changed() => return,
            }
            while self.leadership.is_serving() {
                match step().await {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(why) => {
                        tracing::warn!(shard = self.shard, %why, "moving messages between shards paused; retrying");
                        break;
                    }
                }
            }
        }
    }

    /// Delivers the oldest outbox entries; returns how many it handled.
    async fn deliver_outbox(&self) -> Result<usize, TransferError> {
        let entries = self.read(Mailbox::Outbox).await?;
        let count = entries.len();
        let (by_shard, unreadable) = self.decode(entries);
        let (mut done, mut returned) = (unreadable, Vec::new());
        for (target, entries) in by_shard {
            let delivered = (self.mailboxes.deliver(target, &entries).await)
                .map_err(|source| TransferError::Deliver { target, source })?;
            for (entry, delivered) in entries.into_iter().zip(delivered) {
                match delivered {
                    false => returned.push((entry.id, entry.transfer)),
                    true => done.push(entry.id),
                }
            }
        }
        let counted = |step: &str, count: usize| {
            let metric = &self.service.metrics.transfers;
            metric.with_label_values(&[step]).inc_by(count as u64);
        };
        if !returned.is_empty() {
            let count = returned.len();
            tracing::warn!(
                shard = self.shard,
                count,
                "messages bound for a queue of another shard that does not exist went back to their queues"
            );
            self.service.put_back(returned).await?;
            counted("returned", count);
        }
        if !done.is_empty() {
            let count = done.len();
            self.service.commit_alone(Write::Delivered(done)).await?;
            counted("delivered", count);
        }
        Ok(count)
    }

    /// Takes the oldest inbox entries into their queues.
    async fn take_in_inbox(&self) -> Result<usize, TransferError> {
        let entries = self.read(Mailbox::Inbox).await?;
        let count = entries.len();
        let (by_shard, unreadable) = self.decode(entries);
        let arrivals: Vec<(String, Transfer)> = by_shard
            .into_values()
            .flatten()
            .map(|entry| (entry.id, entry.transfer))
            .collect();
        if !unreadable.is_empty() {
            self.service.commit_alone(Write::TakenIn(unreadable)).await?;
        }
        let arrived = arrivals.len() as u64;
        self.service.take_in(arrivals).await?;
        self.service
            .metrics
            .transfers
            .with_label_values(&["taken_in"])
            .inc_by(arrived);
        Ok(count)
    }

    /// The oldest entries of `mailbox`, in order.
    async fn read(&self, mailbox: Mailbox) -> Result<Vec<Stored>, TransferError> {
        (self.mailboxes.read(mailbox).await).map_err(|source| TransferError::Read { mailbox, source })
    }

    /// Entries by the shard of their target queue, in stream order; and the
    /// ids of entries that cannot be read (logged, and removed: they could
    /// never be delivered).
    fn decode(&self, entries: Vec<Stored>) -> (BTreeMap<usize, Vec<Entry>>, Vec<String>) {
        let mut by_shard: BTreeMap<usize, Vec<Entry>> = BTreeMap::new();
        let mut unreadable = Vec::new();
        for Stored { id, fields, transfer } in entries {
            match transfer {
                Ok(transfer) => by_shard
                    .entry(self.placement.shard_of(&transfer.to))
                    .or_default()
                    .push(Entry { id, transfer, fields }),
                Err(error) => {
                    tracing::error!(shard = self.shard, entry = %id, %error, "an unreadable message between shards is dropped");
                    unreadable.push(id);
                }
            }
        }
        (by_shard, unreadable)
    }
}
