//! The leader lock in MySQL, as the seed's elector takes it, made safe:
//! `GET_LOCK(name, 0)` on a connection of the lock's own chooses who may
//! take the lease (a name per shard and database), and the shard's row in
//! `ssq_lease` is the lease: the holder's token, its epoch (the fencing
//! token every commit checks inside its transaction, `ssq_commit`), when
//! it was last renewed and for how long, all on the database's clock.
//!
//! A named lock belongs to a connection and vanishes with it, and a
//! leader frozen by SIGSTOP keeps its connection, and so the lock, for
//! ever. So the lease decides:
//! - a lease is taken only once its last holder released it or let it
//!   expire (renewed_at + TTL), so that no leader takes over while the
//!   last one may still serve (invariant 3: the last one stops at its
//!   deadline, sooner than the TTL);
//! - a passive that finds the named lock held while the lease has expired,
//!   by a connection asleep for a whole TTL (`IS_USED_LOCK` names it, the
//!   process list says how long it has slept), ends that connection
//!   (`KILL`: every instance connects as the same user, who may), and
//!   takes the lock at its next try;
//! - a leader whose lock connection broke renews on a new one as long as
//!   the lease row still holds its token.
//!
//! Each new lock connection also checks what the server is: a Galera node
//! or a multi-primary group does not share named locks between its
//! writers, so ssq refuses to lead there, and a server that can lose an
//! acknowledged commit on a crash or a failover is said so in the log.

use std::sync::Mutex as StdMutex;
use std::time::Duration;

use mysql_async::Conn;
use mysql_async::prelude::Queryable;
use tokio::sync::Mutex;

use super::{MysqlError, Target, schema, text};
use crate::cluster::lock::{Acquire, Fence, LockCall, LockError, LockStore};

/// The shard's named lock: unique per database, under MySQL's 64 characters.
const LOCK_NAME: &str = "CONCAT('ssq:', SHA1(DATABASE()), ':', ?)";

/// Whether the lease row is live: held, and renewed within its TTL.
const LIVE: &str = "token IS NOT NULL AND renewed_at + INTERVAL ttl_ms * 1000 MICROSECOND > NOW(6)";

/// The lock's own connection, and whether it holds the shard's named lock.
struct Session {
    conn: Conn,
    holds_lock: bool,
}

pub struct MysqlLock {
    target: Target,
    shard: i32,
    node_id: String,
    advertise_url: String,
    ttl: Duration,
    session: Mutex<Option<Session>>,
}

impl MysqlLock {
    pub fn new(target: Target, shard: usize, node_id: &str, advertise_url: &str, ttl: Duration) -> MysqlLock {
        MysqlLock {
            target,
            shard: shard as i32,
            node_id: node_id.to_string(),
            advertise_url: advertise_url.to_string(),
            ttl,
            session: Mutex::new(None),
        }
    }

    fn ttl_ms(&self) -> i64 {
        self.ttl.as_millis() as i64
    }

    /// Runs `call` on the lock's connection, connecting first (and making
    /// or upgrading the tables, once per connection) when there is none. A
    /// connection that broke or timed out is dropped, which ends its named
    /// lock on the server.
    async fn on_session<T>(
        &self,
        call: impl AsyncFnOnce(&mut Session) -> Result<T, MysqlError>,
    ) -> Result<T, LockError> {
        let mut slot = self.session.lock().await;
        if slot.is_none() {
            let mut conn = self.target.connect().await?;
            schema::migrate(&mut conn).await?;
            self.target.bounded(check_server(&mut conn)).await?;
            *slot = Some(Session {
                conn,
                holds_lock: false,
            });
        }
        let session = slot.as_mut().expect("connected above");
        match self.target.bounded(call(session)).await {
            Ok(answer) => Ok(answer),
            Err(error) => {
                if error.connection_lost() {
                    *slot = None;
                }
                Err(error.into())
            }
        }
    }

    /// Takes the shard's named lock on the connection if it does not hold
    /// it yet; whether it holds it now.
    async fn take_named_lock(&self, session: &mut Session) -> Result<bool, MysqlError> {
        if !session.holds_lock {
            let taken: Option<Option<i64>> = session
                .conn
                .exec_first(format!("SELECT GET_LOCK({LOCK_NAME}, 0)"), (self.shard,))
                .await?;
            session.holds_lock = taken.flatten() == Some(1);
        }
        Ok(session.holds_lock)
    }

    async fn let_go_of_named_lock(&self, session: &mut Session) -> Result<(), MysqlError> {
        if session.holds_lock {
            session
                .conn
                .exec_drop(format!("DO RELEASE_LOCK({LOCK_NAME})"), (self.shard,))
                .await?;
            session.holds_lock = false;
        }
        Ok(())
    }

    async fn take(&self) -> Result<Acquire, LockError> {
        self.on_session(async |session| {
            if !self.take_named_lock(session).await? {
                return self.end_expired_holder(session).await.map(Acquire::Held);
            }
            let nonce = format!("{:016x}", crate::queue::random::nonce());
            let rest = format!("|{}|{nonce}|{}", self.node_id, self.advertise_url);
            let mine = format!("|{}|", self.node_id);
            let taken = in_transaction(&mut session.conn, async |conn| {
                conn.exec_drop("INSERT IGNORE INTO ssq_lease (shard) VALUES (?)", (self.shard,))
                    .await?;
                // The row lock waits for a commit in flight, which finishes
                // under the old epoch first. Another's lease that has not
                // expired: its holder may still serve.
                let live_other: Option<Vec<u8>> = conn
                    .exec_first(
                        format!(
                            "SELECT token FROM ssq_lease WHERE shard = ? AND {LIVE} AND LOCATE(?, token) = 0 FOR UPDATE"
                        ),
                        (self.shard, mine.as_bytes()),
                    )
                    .await?;
                if let Some(token) = live_other {
                    return Ok(Acquire::Held(text(token)?));
                }
                self.new_epoch(conn, &rest).await.map(Acquire::Won)
            })
            .await?;
            if matches!(taken, Acquire::Held(_)) {
                self.let_go_of_named_lock(session).await?;
            }
            Ok(taken)
        })
        .await
    }

    /// Starts a new epoch for the holder whose token ends in `rest`
    /// (`|node|nonce|url`), inside the caller's transaction; its token.
    async fn new_epoch(&self, conn: &mut Conn, rest: &str) -> Result<String, MysqlError> {
        conn.exec_drop(
            "UPDATE ssq_lease SET epoch = epoch + 1, token = CONCAT(epoch, ?), \
             renewed_at = NOW(6), ttl_ms = ?, load_id = NULL WHERE shard = ?",
            (rest.as_bytes(), self.ttl_ms(), self.shard),
        )
        .await?;
        let token: Option<Vec<u8>> = conn
            .exec_first("SELECT token FROM ssq_lease WHERE shard = ?", (self.shard,))
            .await?;
        text(token.unwrap_or_default())
    }

    /// [`Fence::record`]: a new epoch for `holder` if `revision` is larger
    /// than the one recorded (`ssq_lock_revisions`), after any commit in
    /// flight (the lease row's lock).
    async fn record_revision(&self, revision: u64, holder: &str) -> Result<Acquire, LockError> {
        let revision = i64::try_from(revision).unwrap_or(i64::MAX);
        let rest = format!("|{holder}");
        self.on_session(async |session| {
            in_transaction(&mut session.conn, async |conn| {
                conn.exec_drop("INSERT IGNORE INTO ssq_lease (shard) VALUES (?)", (self.shard,))
                    .await?;
                let held: Option<Vec<u8>> = conn
                    .exec_first(
                        "SELECT coalesce(token, '') FROM ssq_lease WHERE shard = ? FOR UPDATE",
                        (self.shard,),
                    )
                    .await?;
                conn.exec_drop(
                    "INSERT IGNORE INTO ssq_lock_revisions (shard, revision) VALUES (?, 0)",
                    (self.shard,),
                )
                .await?;
                let recorded: Option<i64> = conn
                    .exec_first(
                        "SELECT revision FROM ssq_lock_revisions WHERE shard = ? FOR UPDATE",
                        (self.shard,),
                    )
                    .await?;
                if recorded.unwrap_or(0) >= revision {
                    return Ok(Acquire::Held(text(held.unwrap_or_default())?));
                }
                conn.exec_drop(
                    "UPDATE ssq_lock_revisions SET revision = ? WHERE shard = ?",
                    (revision, self.shard),
                )
                .await?;
                self.new_epoch(conn, &rest).await.map(Acquire::Won)
            })
            .await
        })
        .await
    }

    /// Another connection holds the named lock: returns the lease's token,
    /// and ends the holder's connection if the lease is not live (expired
    /// or released) and that connection has slept for a whole TTL: a leader
    /// frozen or cut off past its lease. A connection that just took the
    /// lock to write its lease is busy, and is left alone.
    async fn end_expired_holder(&self, session: &mut Session) -> Result<String, MysqlError> {
        let conn = &mut session.conn;
        let row: Option<(Vec<u8>, bool)> = conn
            .exec_first(
                format!("SELECT coalesce(token, ''), {LIVE} FROM ssq_lease WHERE shard = ?"),
                (self.shard,),
            )
            .await?;
        let (token, live) = match row {
            Some((token, live)) => (text(token)?, live),
            None => (String::new(), false),
        };
        if live {
            return Ok(token);
        }
        let ttl_seconds = self.ttl.as_secs_f64().ceil() as i64;
        let idle_holder: Option<u64> = conn
            .exec_first(
                format!(
                    "SELECT p.ID FROM information_schema.PROCESSLIST p \
                     WHERE p.ID = IS_USED_LOCK({LOCK_NAME}) AND p.COMMAND = 'Sleep' AND p.TIME >= ?"
                ),
                (self.shard, ttl_seconds),
            )
            .await?;
        if let Some(id) = idle_holder {
            tracing::warn!(connection = id, %token, "the shard's lease is not held, yet a connection asleep for a whole lease holds its lock: ending that connection");
            conn.query_drop(format!("KILL CONNECTION {id}")).await?;
        }
        Ok(token)
    }

    async fn read_holder(&self) -> Result<Option<String>, LockError> {
        self.on_session(async |session| {
            let token: Option<Vec<u8>> = session
                .conn
                .exec_first(
                    format!("SELECT token FROM ssq_lease WHERE shard = ? AND {LIVE}"),
                    (self.shard,),
                )
                .await?;
            token.map(text).transpose()
        })
        .await
    }

    async fn extend(&self, token: &str) -> Result<bool, LockError> {
        self.on_session(async |session| {
            // A new connection (the last one broke) takes the lock again, so
            // that passives' tries keep failing; the lease decides either way.
            self.take_named_lock(session).await?;
            session
                .conn
                .exec_drop(
                    "UPDATE ssq_lease SET renewed_at = NOW(6) WHERE shard = ? AND token = ?",
                    (self.shard, token.as_bytes()),
                )
                .await?;
            Ok(session.conn.affected_rows() == 1)
        })
        .await
    }

    async fn give_up(&self, token: &str) -> Result<bool, LockError> {
        self.on_session(async |session| {
            session
                .conn
                .exec_drop(
                    "UPDATE ssq_lease SET token = NULL, renewed_at = NULL WHERE shard = ? AND token = ?",
                    (self.shard, token.as_bytes()),
                )
                .await?;
            let released = session.conn.affected_rows() == 1;
            self.let_go_of_named_lock(session).await?;
            Ok(released)
        })
        .await
    }
}

/// Refuses a server whose writers do not share named locks (a Galera
/// node, a multi-primary group), and logs what a crash or a failover of a
/// server that is fine to lead on could lose. Said once per process for
/// each set of settings found (each shard has its own connection).
async fn check_server(conn: &mut Conn) -> Result<(), MysqlError> {
    let rows: Vec<(String, String)> = conn
        .query(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('version', 'wsrep_on', \
             'group_replication_single_primary_mode', 'group_replication_group_name', \
             'innodb_flush_log_at_trx_commit', 'log_bin', 'sync_binlog', \
             'rpl_semi_sync_master_enabled', 'rpl_semi_sync_master_wait_point', \
             'rpl_semi_sync_source_enabled', 'rpl_semi_sync_source_wait_point')",
        )
        .await?;
    let setting = |name: &str| {
        rows.iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    };
    if setting("wsrep_on").is_some_and(|on| on.eq_ignore_ascii_case("ON")) {
        return Err(MysqlError::MultiWriter("wsrep_on = ON".into()));
    }
    if setting("group_replication_group_name").is_some_and(|name| !name.is_empty())
        && setting("group_replication_single_primary_mode").is_some_and(|on| on.eq_ignore_ascii_case("OFF"))
    {
        return Err(MysqlError::MultiWriter(
            "group_replication_single_primary_mode = OFF".into(),
        ));
    }
    static SAID: StdMutex<Option<Vec<(String, String)>>> = StdMutex::new(None);
    let mut said = SAID.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if said.as_ref() == Some(&rows) {
        return Ok(());
    }
    *said = Some(rows.clone());
    let version = setting("version").unwrap_or("?");
    if setting("innodb_flush_log_at_trx_commit") != Some("1") {
        tracing::warn!(
            version,
            innodb_flush_log_at_trx_commit = setting("innodb_flush_log_at_trx_commit").unwrap_or("?"),
            "MySQL does not flush InnoDB's log at every commit: a crash of its machine can lose changes \
             ssq acknowledged. Set innodb_flush_log_at_trx_commit = 1; docs/operations.md, \"MySQL and MariaDB\""
        );
    }
    let semi_sync = setting("rpl_semi_sync_master_enabled")
        .or(setting("rpl_semi_sync_source_enabled"))
        .is_some_and(|on| on.eq_ignore_ascii_case("ON"));
    let after_sync = setting("rpl_semi_sync_master_wait_point")
        .or(setting("rpl_semi_sync_source_wait_point"))
        .is_some_and(|point| point.eq_ignore_ascii_case("AFTER_SYNC"));
    if !(semi_sync && after_sync) {
        tracing::warn!(
            version,
            "MySQL acknowledges a commit once its primary alone holds it: a failover to a replica can lose \
             the last changes ssq acknowledged. Enable semi-synchronous replication with \
             rpl_semi_sync_master_wait_point = AFTER_SYNC for none to be lost; docs/operations.md, \"MySQL and MariaDB\""
        );
    }
    Ok(())
}

/// Runs `body` in a transaction on `conn`: committed when it won (a new
/// epoch), rolled back otherwise or on an error.
async fn in_transaction(
    conn: &mut Conn,
    body: impl AsyncFnOnce(&mut Conn) -> Result<Acquire, MysqlError>,
) -> Result<Acquire, MysqlError> {
    conn.query_drop("START TRANSACTION").await?;
    match body(conn).await {
        Ok(Acquire::Won(token)) => {
            conn.query_drop("COMMIT").await?;
            Ok(Acquire::Won(token))
        }
        Ok(held) => {
            conn.query_drop("ROLLBACK").await?;
            Ok(held)
        }
        Err(error) => {
            let _ = conn.query_drop("ROLLBACK").await;
            Err(error)
        }
    }
}

impl Fence for MysqlLock {
    fn record<'a>(&'a self, revision: u64, holder: &'a str) -> LockCall<'a, Acquire> {
        Box::pin(self.record_revision(revision, holder))
    }
}

impl LockStore for MysqlLock {
    fn acquire(&self) -> LockCall<'_, Acquire> {
        Box::pin(self.take())
    }

    fn holder(&self) -> LockCall<'_, Option<String>> {
        Box::pin(self.read_holder())
    }

    fn renew<'a>(&'a self, token: &'a str) -> LockCall<'a, bool> {
        Box::pin(self.extend(token))
    }

    fn release<'a>(&'a self, token: &'a str) -> LockCall<'a, bool> {
        Box::pin(self.give_up(token))
    }
}
