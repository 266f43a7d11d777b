//! Every shard's queues, read from MySQL: ListQueues in a sharded group
//! lists queues that other instances hold in memory, and the dead-letter
//! rules read the settings of queues in other shards. `ssq_queues` has
//! every queue a client was told exists, as it was last set, since all of
//! it is committed before the answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mysql_async::prelude::Queryable;

use super::{MysqlError, Reconnecting, text};
use crate::error::{ErrorCode, SqsError};
use crate::queue::QueueMeta;
use crate::service::shards::Catalog;
use crate::store::codec;

pub struct MysqlCatalog {
    pub connection: Arc<Reconnecting>,
}

type Call<'a, T> = Pin<Box<dyn Future<Output = Result<T, SqsError>> + Send + 'a>>;

impl MysqlCatalog {
    /// Every queue's `(name, record)`, or the one named `key`'s.
    async fn rows(&self, key: Option<&str>) -> Result<Vec<(String, String)>, SqsError> {
        let rows: Vec<(Vec<u8>, Vec<u8>)> = self
            .connection
            .call(async |conn| match key {
                Some(key) => {
                    conn.exec(
                        "SELECT name, record FROM ssq_queues WHERE name = ?",
                        (key.as_bytes(),),
                    )
                    .await
                }
                None => {
                    conn.query("SELECT name, record FROM ssq_queues ORDER BY name")
                        .await
                }
            })
            .await
            .map_err(unanswered)?;
        rows.into_iter()
            .map(|(name, record)| Ok((text(name)?, text(record)?)))
            .collect::<Result<_, MysqlError>>()
            .map_err(unanswered)
    }
}

impl Catalog for MysqlCatalog {
    fn queue_keys(&self) -> Call<'_, Vec<String>> {
        Box::pin(async move { Ok(self.rows(None).await?.into_iter().map(|(name, _)| name).collect()) })
    }

    fn queue<'a>(&'a self, key: &'a str) -> Call<'a, Option<QueueMeta>> {
        Box::pin(async move {
            let rows = self.rows(Some(key)).await?;
            Ok(rows
                .first()
                .and_then(|(name, record)| codec::queue_of_another_shard(name, record)))
        })
    }

    fn queues(&self) -> Call<'_, Vec<QueueMeta>> {
        Box::pin(async move {
            let rows = self.rows(None).await?;
            Ok(rows
                .iter()
                .filter_map(|(name, record)| codec::queue_of_another_shard(name, record))
                .collect())
        })
    }
}

fn unanswered(error: MysqlError) -> SqsError {
    SqsError::new(
        ErrorCode::ServiceUnavailable,
        format!("Cannot read the queues of every shard: MySQL did not answer ({error}). Retry."),
    )
}
