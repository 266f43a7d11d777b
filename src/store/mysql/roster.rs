//! The group's roster in MySQL: the shard count a row of `ssq_group`, the
//! members rows of `ssq_members` with expiry times on the database's
//! clock, each heartbeat one call of `ssq_beat` (`schema.rs`). MySQL has
//! no notices: the other members see a change at their next beat.

use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::Queryable;

use super::{MysqlError, Reconnecting, schema, text};
use crate::cluster::backend::{Roster, RosterCall};

pub struct MysqlRoster {
    connection: Arc<Reconnecting>,
}

impl MysqlRoster {
    pub fn new(connection: Arc<Reconnecting>) -> MysqlRoster {
        MysqlRoster { connection }
    }
}

impl Roster for MysqlRoster {
    fn store(&self) -> &'static str {
        "MySQL"
    }

    fn beat<'a>(&'a self, node_id: &'a str, ttl: Duration, leaving: bool) -> RosterCall<'a, Vec<String>> {
        Box::pin(async move {
            let ttl_ms = ttl.as_millis() as i64;
            let nodes: Vec<Vec<u8>> = self
                .connection
                .call(async |conn| {
                    conn.exec("CALL ssq_beat(?, ?, ?)", (node_id.as_bytes(), ttl_ms, leaving))
                        .await
                })
                .await?;
            Ok(nodes.into_iter().map(text).collect::<Result<_, MysqlError>>()?)
        })
    }

    /// The first call of an instance: the tables are made or upgraded
    /// first (the lock does too, but it waits for this check).
    fn shard_count(&self, shards: usize) -> RosterCall<'_, usize> {
        Box::pin(async move {
            let target = self.connection.target();
            let mut conn = target.connect().await?;
            schema::migrate(&mut conn).await?;
            tokio::spawn(conn.disconnect());
            let shards = shards as i32;
            let count: Option<i32> = self
                .connection
                .call(async |conn| conn.exec_first("CALL ssq_shard_count(?)", (shards,)).await)
                .await?;
            Ok(count.unwrap_or(1) as usize)
        })
    }
}
