//! A shard's mailboxes in MySQL: rows of `ssq_transfers`, in the outbox of
//! the shard they left until `ssq_deliver` moves them, in one transaction
//! fenced by the source shard's epoch, into the inbox of the shard they go
//! to. A row is in one mailbox at a time, so a delivery cannot be repeated.
//! The target's inbox task finds them at its next poll.

use std::collections::HashMap;
use std::sync::Arc;

use mysql_async::prelude::Queryable;

use super::{MysqlError, Reconnecting, text};
use crate::cluster::transfers::{BATCH, Entry, Mailbox, MailboxCall, MailboxError, Mailboxes, Stored};
use crate::leader::Leadership;
use crate::store::codec;
use crate::store::current_epoch;

pub struct MysqlMailboxes {
    pub connection: Arc<Reconnecting>,
    pub shard: usize,
    /// Whose epoch fences a delivery.
    pub leadership: Arc<Leadership>,
}

type Row = (i64, Vec<u8>, Vec<u8>, i64, Vec<u8>, Vec<u8>, Option<Vec<u8>>);

impl Mailboxes for MysqlMailboxes {
    fn read(&self, mailbox: Mailbox) -> MailboxCall<'_, Vec<Stored>> {
        Box::pin(async move {
            let (shard, delivered, limit) = (self.shard as i32, mailbox == Mailbox::Inbox, BATCH as i64);
            let rows: Vec<Row> = self
                .connection
                .call(async |conn| {
                    conn.exec(
                        "SELECT id, to_queue, from_queue, seq, body, state, dead_letter_source \
                         FROM ssq_transfers WHERE shard = ? AND delivered = ? ORDER BY id LIMIT ?",
                        (shard, delivered, limit),
                    )
                    .await
                })
                .await?;
            let mut stored = Vec::with_capacity(rows.len());
            for (id, to, from, seq, body, state, source) in rows {
                let mut fields = HashMap::new();
                fields.insert("to".to_string(), text(to)?);
                fields.insert("from".to_string(), text(from)?);
                fields.insert("seq".to_string(), seq.to_string());
                fields.insert("body".to_string(), text(body)?);
                fields.insert("state".to_string(), text(state)?);
                if let Some(source) = source {
                    fields.insert("dls".to_string(), text(source)?);
                }
                stored.push(codec::stored_transfer(id.to_string(), fields));
            }
            Ok(stored)
        })
    }

    fn deliver<'a>(&'a self, target: usize, entries: &'a [Entry]) -> MailboxCall<'a, Vec<bool>> {
        Box::pin(async move {
            let (_, epoch) = current_epoch(&self.leadership).ok_or(MailboxError::NotLeading)?;
            let ids: Vec<i64> = entries.iter().filter_map(|entry| entry.id.parse().ok()).collect();
            let ids = serde_json::to_string(&ids).expect("numbers serialize");
            let (shard, target) = (self.shard as i32, target as i32);
            let missing: Vec<i64> = self
                .connection
                .call(async |conn| {
                    conn.exec("CALL ssq_deliver(?, ?, ?, ?)", (shard, epoch, &ids, target))
                        .await
                })
                .await
                .map_err(|error: MysqlError| match error.fenced() {
                    true => MailboxError::NotLeading,
                    false => error.into(),
                })?;
            Ok(entries
                .iter()
                .map(|entry| !entry.id.parse().is_ok_and(|id: i64| missing.contains(&id)))
                .collect())
        })
    }
}
