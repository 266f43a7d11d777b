//! A shard's mailboxes in Redis: two streams per shard. A delivery runs
//! `deliver.lua` on the target shard's slot, which appends each message to
//! its inbox and sets its arrival marker (`Transfer::marker`: queue left,
//! place there, message id), unless the marker is already there; a
//! delivery repeated after a crash before the outbox was trimmed finds the
//! markers and adds nothing. Markers are kept for [`MARKER_TTL`], far
//! longer than the source shard can take to trim (a failover of its leader).

use std::collections::HashMap;
use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::cluster::transfers::{BATCH, Entry, Mailbox, MailboxCall, Mailboxes, Stored};
use crate::store::codec;
use crate::store::redis::replicas::ReplicaAcks;
use crate::store::redis::{RedisError, ShardKeys};

/// How long a shard remembers that a message arrived.
const MARKER_TTL: Duration = Duration::from_secs(3600);

pub struct RedisMailboxes {
    pub acks: ReplicaAcks,
    /// Every shard's keys, in shard order: deliveries go to the target
    /// shard's primary, on its connection for commits (`WAIT` confirms
    /// them there).
    pub shards: Vec<ShardKeys>,
    pub shard: usize,
    /// `deliver.lua`.
    pub deliver: Script,
}

impl RedisMailboxes {
    pub fn new(acks: ReplicaAcks, shards: Vec<ShardKeys>, shard: usize) -> RedisMailboxes {
        RedisMailboxes {
            acks,
            shards,
            shard,
            deliver: Script::from_lua(include_str!("lua/deliver.lua")),
        }
    }
}

impl Mailboxes for RedisMailboxes {
    fn read(&self, mailbox: Mailbox) -> MailboxCall<'_, Vec<Stored>> {
        Box::pin(async move {
            let ShardKeys { layout, link } = &self.shards[self.shard];
            let stream = match mailbox {
                Mailbox::Outbox => layout.outbox(),
                Mailbox::Inbox => layout.inbox(),
            };
            let entries: Vec<(String, HashMap<String, String>)> = link
                .commands()
                .xrange_values(stream, "-", "+", Some(BATCH as u64))
                .await
                .map_err(RedisError::from)?;
            Ok(entries
                .into_iter()
                .map(|(id, fields)| codec::stored_transfer(id, fields))
                .collect())
        })
    }

    fn deliver<'a>(&'a self, target: usize, entries: &'a [Entry]) -> MailboxCall<'a, Vec<bool>> {
        Box::pin(async move {
            let ShardKeys { layout, link } = &self.shards[target];
            let mut keys = vec![layout.queues(), layout.inbox()];
            let mut args: Vec<Value> = vec![
                (MARKER_TTL.as_millis() as i64).into(),
                layout.inbox_channel().into(),
            ];
            for Entry { transfer, fields, .. } in entries {
                keys.push(layout.arrived(&transfer.marker()));
                args.push(transfer.to.clone().into());
                args.push((fields.len() as i64).into());
                for (name, value) in fields {
                    args.push(name.clone().into());
                    args.push(value.clone().into());
                }
            }
            let inbox = layout.inbox();
            let client = link.commits();
            let results: Vec<i64> = self.deliver.evalsha_with_reload(&client, keys, args).await?;
            // The outbox entries go only once the inbox holds them for good.
            self.acks.confirm(&client, &inbox).await?;
            // -1: the target queue does not exist.
            Ok(results.into_iter().map(|result| result != -1).collect())
        })
    }
}
