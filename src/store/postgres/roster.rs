//! The group's roster in Postgres: the shard count a row of `ssq_group`,
//! the members rows of `ssq_members` with expiry times on the database's
//! clock, each heartbeat one call of `ssq_beat` (which announces a change
//! on the `ssq_members` channel). See `store/postgres/schema.rs`.

use std::sync::Arc;
use std::time::Duration;

use crate::cluster::backend::{Roster, RosterCall};
use crate::store::postgres::{Reconnecting, schema};

/// The channel on which a change of members is announced.
pub const MEMBERS_CHANNEL: &str = "ssq_members";

pub struct PostgresRoster {
    connection: Arc<Reconnecting>,
}

impl PostgresRoster {
    pub fn new(connection: Arc<Reconnecting>) -> PostgresRoster {
        PostgresRoster { connection }
    }
}

impl Roster for PostgresRoster {
    fn store(&self) -> &'static str {
        "Postgres"
    }

    fn beat<'a>(&'a self, node_id: &'a str, ttl: Duration, leaving: bool) -> RosterCall<'a, Vec<String>> {
        Box::pin(async move {
            let ttl_ms = ttl.as_millis() as i64;
            let rows = self
                .connection
                .call(|client| async move {
                    client
                        .query("SELECT ssq_beat($1, $2, $3)", &[&node_id, &ttl_ms, &leaving])
                        .await
                })
                .await?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        })
    }

    /// The first call of an instance: the tables are made or upgraded
    /// first (the lock does too, but it waits for this check).
    fn shard_count(&self, shards: usize) -> RosterCall<'_, usize> {
        Box::pin(async move {
            let target = self.connection.target();
            let mut client = target.connect().await?;
            target.bounded(schema::migrate(&mut client)).await?;
            let shards = shards as i32;
            let row = self
                .connection
                .call(
                    |client| async move { client.query_one("SELECT ssq_shard_count($1)", &[&shards]).await },
                )
                .await?;
            Ok(row.get::<_, i32>(0) as usize)
        })
    }
}
