//! Every shard's queue names, read from Redis: ListQueues in a sharded
//! group lists queues that other instances hold in memory. Redis has every
//! queue a client was told exists (created, and not deleted), since both
//! are committed before the answer.

use std::future::Future;
use std::pin::Pin;

use fred::prelude::*;

use crate::error::SqsError;
use crate::shards::Catalog;
use crate::store::Layout;

pub struct RedisCatalog {
    pub client: Client,
    /// Each shard's layout, in shard order.
    pub shards: Vec<Layout>,
}

impl Catalog for RedisCatalog {
    fn queue_keys(&self) -> Pin<Box<dyn Future<Output = Result<Vec<String>, SqsError>> + Send + '_>> {
        Box::pin(async move {
            let mut keys = Vec::new();
            for layout in &self.shards {
                let names: Vec<String> = self.client.hkeys(layout.queues()).await.map_err(|error| {
                    SqsError::new(
                        crate::error::ErrorCode::ServiceUnavailable,
                        format!("Cannot list every shard's queues: Redis did not answer ({error}). Retry."),
                    )
                })?;
                keys.extend(names);
            }
            Ok(keys)
        })
    }
}
