//! Every shard's queues, read from Postgres: ListQueues in a sharded group
//! lists queues that other instances hold in memory, and the dead-letter
//! rules read the settings of queues in other shards. `ssq_queues` has
//! every queue a client was told exists, and its settings as the client
//! last set them, since all of it is committed before the answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::{PostgresError, Reconnecting};
use crate::error::{ErrorCode, SqsError};
use crate::queue::QueueMeta;
use crate::service::shards::Catalog;
use crate::store::codec;

pub struct PostgresCatalog {
    pub connection: Arc<Reconnecting>,
}

impl PostgresCatalog {
    /// Every `(name, record)` row of `ssq_queues` that `query` selects.
    async fn rows(&self, query: &'static str, key: Option<&str>) -> Result<Vec<(String, String)>, SqsError> {
        let rows = self
            .connection
            .call(|client| async move {
                match key {
                    Some(key) => client.query(query, &[&key]).await,
                    None => client.query(query, &[]).await,
                }
            })
            .await
            .map_err(unanswered)?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }
}

impl Catalog for PostgresCatalog {
    fn queue_keys(&self) -> Pin<Box<dyn Future<Output = Result<Vec<String>, SqsError>> + Send + '_>> {
        Box::pin(async move {
            let rows = self.rows("SELECT name, '' FROM ssq_queues", None).await?;
            Ok(rows.into_iter().map(|(name, _)| name).collect())
        })
    }

    fn queue<'a>(
        &'a self,
        key: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Option<QueueMeta>, SqsError>> + Send + 'a>> {
        Box::pin(async move {
            let rows = (self.rows("SELECT name, record FROM ssq_queues WHERE name = $1", Some(key))).await?;
            Ok(rows
                .first()
                .and_then(|(name, record)| codec::queue_of_another_shard(name, record)))
        })
    }

    fn queues(&self) -> Pin<Box<dyn Future<Output = Result<Vec<QueueMeta>, SqsError>> + Send + '_>> {
        Box::pin(async move {
            let rows = (self.rows("SELECT name, record FROM ssq_queues ORDER BY name", None)).await?;
            Ok(rows
                .iter()
                .filter_map(|(name, record)| codec::queue_of_another_shard(name, record))
                .collect())
        })
    }
}

fn unanswered(error: PostgresError) -> SqsError {
    SqsError::new(
        ErrorCode::ServiceUnavailable,
        format!("Cannot read the queues of every shard: Postgres did not answer ({error}). Retry."),
    )
}
