//! A shard's mailboxes in Postgres: rows of `ssq_transfers`, in the outbox
//! of the shard they left until `ssq_deliver` moves them, in one
//! transaction fenced by the source shard's epoch, into the inbox of the
//! shard they go to (and wakes its task with `NOTIFY ssq_inbox_<shard>`).
//! A row is in one mailbox at a time, so a delivery cannot be repeated.

use std::collections::HashMap;
use std::sync::Arc;

use crate::cluster::transfers::{BATCH, Entry, Mailbox, MailboxCall, MailboxError, Mailboxes, Stored};
use crate::leader::Leadership;
use crate::store::codec;
use crate::store::postgres::{Reconnecting, current_epoch};

/// The channel that wakes shard `shard`'s inbox task.
pub fn inbox_channel(shard: usize) -> String {
    format!("ssq_inbox_{shard}")
}

pub struct PostgresMailboxes {
    pub connection: Arc<Reconnecting>,
    pub shard: usize,
    /// Whose epoch fences a delivery.
    pub leadership: Arc<Leadership>,
}

impl Mailboxes for PostgresMailboxes {
    fn read(&self, mailbox: Mailbox) -> MailboxCall<'_, Vec<Stored>> {
        Box::pin(async move {
            let (shard, delivered, limit) = (self.shard as i32, mailbox == Mailbox::Inbox, BATCH as i64);
            let rows = self
                .connection
                .call(|client| async move {
                    client
                        .query(
                            "SELECT id, to_queue, from_queue, seq, body, state, dead_letter_source \
                             FROM ssq_transfers WHERE shard = $1 AND delivered = $2 ORDER BY id LIMIT $3",
                            &[&shard, &delivered, &limit],
                        )
                        .await
                })
                .await?;
            Ok(rows
                .iter()
                .map(|row| {
                    let mut fields = HashMap::new();
                    for (index, name) in ["to", "from"].into_iter().enumerate() {
                        fields.insert(name.to_string(), row.get::<_, String>(index + 1));
                    }
                    fields.insert("seq".to_string(), row.get::<_, i64>(3).to_string());
                    fields.insert("body".to_string(), row.get(4));
                    fields.insert("state".to_string(), row.get(5));
                    if let Some(source) = row.get::<_, Option<String>>(6) {
                        fields.insert("dls".to_string(), source);
                    }
                    codec::stored_transfer(row.get::<_, i64>(0).to_string(), fields)
                })
                .collect())
        })
    }

    fn deliver<'a>(&'a self, target: usize, entries: &'a [Entry]) -> MailboxCall<'a, Vec<bool>> {
        Box::pin(async move {
            let (_, epoch) = current_epoch(&self.leadership).ok_or(MailboxError::NotLeading)?;
            let ids: Vec<i64> = entries.iter().filter_map(|entry| entry.id.parse().ok()).collect();
            let targets = vec![target as i32; ids.len()];
            let shard = self.shard as i32;
            let (ids, targets) = (&ids, &targets);
            let row = self
                .connection
                .call(|client| async move {
                    client
                        .query_one(
                            "SELECT ssq_deliver($1, $2, $3, $4)",
                            &[&shard, &epoch, ids, targets],
                        )
                        .await
                })
                .await?;
            let missing: Vec<i64> = row.get(0);
            Ok(entries
                .iter()
                .map(|entry| !entry.id.parse().is_ok_and(|id: i64| missing.contains(&id)))
                .collect())
        })
    }
}
