//! Every shard's queues, read from Redis: ListQueues in a sharded group
//! lists queues that other instances hold in memory, and the dead-letter
//! rules read the settings of queues in other shards. Redis has every queue
//! a client was told exists (created, and not deleted), and its settings as
//! the client last set them, since all of it is committed before the
//! answer.

use std::future::Future;
use std::pin::Pin;

use fred::prelude::*;

use std::collections::HashMap;

use super::ShardKeys;
use crate::error::{ErrorCode, SqsError};
use crate::queue::QueueMeta;
use crate::service::shards::{Catalog, Placement};
use crate::store::codec;

pub struct RedisCatalog {
    /// Each shard's keys, in shard order.
    pub shards: Vec<ShardKeys>,
    pub placement: Placement,
}

impl Catalog for RedisCatalog {
    fn queue_keys(&self) -> Pin<Box<dyn Future<Output = Result<Vec<String>, SqsError>> + Send + '_>> {
        Box::pin(async move {
            let mut keys = Vec::new();
            for ShardKeys { layout, link } in &self.shards {
                let names: Vec<String> = link.commands().hkeys(layout.queues()).await.map_err(unanswered)?;
                keys.extend(names);
            }
            Ok(keys)
        })
    }

    fn queue<'a>(
        &'a self,
        key: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Option<QueueMeta>, SqsError>> + Send + 'a>> {
        Box::pin(async move {
            let shard = &self.shards[self.placement.shard_of(key)];
            let record: Option<String> = shard
                .link
                .commands()
                .hget(shard.layout.queues(), key)
                .await
                .map_err(unanswered)?;
            Ok(record.and_then(|record| codec::queue_of_another_shard(key, &record)))
        })
    }

    fn queues(&self) -> Pin<Box<dyn Future<Output = Result<Vec<QueueMeta>, SqsError>> + Send + '_>> {
        Box::pin(async move {
            let mut queues = Vec::new();
            for ShardKeys { layout, link } in &self.shards {
                let records: HashMap<String, String> = link
                    .commands()
                    .hgetall(layout.queues())
                    .await
                    .map_err(unanswered)?;
                queues.extend(
                    records
                        .iter()
                        .filter_map(|(key, record)| codec::queue_of_another_shard(key, record)),
                );
            }
            queues.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(queues)
        })
    }
}

fn unanswered(error: fred::error::Error) -> SqsError {
    SqsError::new(
        ErrorCode::ServiceUnavailable,
        format!("Cannot read the queues of every shard: Redis did not answer ({error}). Retry."),
    )
}
