//! The leader lock in Postgres: a session advisory lock, held on a
//! connection of the lock's own, chooses who may take the lease, and the
//! shard's row in `ssq_lease` is the lease: the holder's token, its epoch
//! (the fencing token every commit checks, `ssq_commit`), when it was last
//! renewed and for how long, all on the database's clock.
//!
//! The advisory lock alone would not do: a leader frozen by SIGSTOP keeps
//! its session, and so its lock, for ever. So the lease decides:
//! - a lease is taken only once its last holder released it or let it
//!   expire (renewed_at + TTL, on the database's clock), so that no leader
//!   takes over while the last one may still serve (invariant 3: the last
//!   one stops at its deadline, sooner than the TTL);
//! - a passive that finds the advisory lock held while the lease has
//!   expired, by a session idle for a whole TTL (a leader frozen past its
//!   lease keeps its session), ends that session (`pg_terminate_backend`),
//!   and takes the lock at its next try;
//! - a leader whose lock session broke renews on a new one as long as the
//!   lease row still holds its token.
//!
//! A leader that lets go (shutting down, handing off) says so with a
//! `NOTIFY` that every instance's lock session listens for, so that a
//! passive takes over at once rather than at its next try.
//!
//! With a lock kept apart from the database (`--lock-url`) the lease row
//! is the store's [`Fence`] alone: a holder records its revision there,
//! starting a new epoch, if it is larger than the one recorded.
//!
//! Behind a connection pooler in transaction mode a session lock does not
//! hold; taking the lock checks that the session holding it is the one
//! that asked, and refuses to lead otherwise.

use std::time::Duration;

use std::sync::Arc;

use tokio::sync::{Mutex, Notify};
use tokio_postgres::Client;

use crate::cluster::lock::{Acquire, Fence, LockCall, LockError, LockStore};
use crate::store::postgres::schema::{self, FENCE_CLASS, LOCK_CLASS};
use crate::store::postgres::{PostgresError, Target};

/// The lock's own session, and whether it holds the shard's advisory lock.
struct Session {
    client: Client,
    holds_advisory_lock: bool,
}

pub struct PostgresLock {
    target: Target,
    shard: i32,
    /// The second half of the shard's advisory lock (see `schema.rs`).
    lock_id: i32,
    node_id: String,
    advertise_url: String,
    ttl_ms: i64,
    session: Mutex<Option<Session>>,
    /// The channel a release is announced on, and what it wakes here.
    released_channel: String,
    released: Arc<Notify>,
}

impl PostgresLock {
    /// `released` is woken when a holder announces it let go.
    pub fn new(
        target: Target,
        shard: usize,
        node_id: &str,
        advertise_url: &str,
        ttl: Duration,
        released: Arc<Notify>,
    ) -> PostgresLock {
        PostgresLock {
            released_channel: format!("ssq_released_{shard}"),
            released,
            target,
            shard: shard as i32,
            lock_id: 1 + shard as i32,
            node_id: node_id.to_string(),
            advertise_url: advertise_url.to_string(),
            ttl_ms: ttl.as_millis() as i64,
            session: Mutex::new(None),
        }
    }

    /// Runs `call` on the lock's session, connecting first (and making or
    /// upgrading the tables, once per session) when there is none. A
    /// session that broke or timed out is dropped, which ends its advisory
    /// lock on the server.
    async fn on_session<T>(
        &self,
        call: impl AsyncFnOnce(&mut Session) -> Result<T, PostgresError>,
    ) -> Result<T, LockError> {
        let mut slot = self.session.lock().await;
        // A session Postgres ended while it was idle (a restart, or
        // `pg_terminate_backend`) is made again rather than failing a call.
        if slot.as_ref().is_some_and(|session| session.client.is_closed()) {
            *slot = None;
        }
        if slot.is_none() {
            let channels = Arc::new([(self.released_channel.clone(), self.released.clone())]);
            let mut client = self.target.connect_notifying(channels).await?;
            self.target.bounded(schema::migrate(&mut client)).await?;
            let listen = format!("LISTEN {}", self.released_channel);
            self.target.bounded(client.batch_execute(&listen)).await?;
            self.target.bounded(say_what_a_failover_can_lose(&client)).await?;
            *slot = Some(Session {
                client,
                holds_advisory_lock: false,
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

    /// Takes the shard's advisory lock on the session if it does not hold
    /// it yet; whether it holds it now. Checked to be held by this very
    /// session: behind a transaction pooler, it may not be.
    async fn take_advisory_lock(&self, session: &mut Session) -> Result<bool, PostgresError> {
        if session.holds_advisory_lock {
            return Ok(true);
        }
        let client = &session.client;
        let taken: bool = client
            .query_one(
                "SELECT pg_try_advisory_lock($1, $2)",
                &[&LOCK_CLASS, &self.lock_id],
            )
            .await?
            .get(0);
        if !taken {
            return Ok(false);
        }
        let ours: bool = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted \
                 AND pid = pg_backend_pid() AND classid::integer = $1 AND objid::integer = $2)",
                &[&LOCK_CLASS, &self.lock_id],
            )
            .await?
            .get(0);
        if !ours {
            return Err(PostgresError::BehindPooler);
        }
        session.holds_advisory_lock = true;
        Ok(true)
    }

    async fn let_go_of_advisory_lock(&self, session: &mut Session) -> Result<(), PostgresError> {
        if session.holds_advisory_lock {
            session
                .client
                .execute("SELECT pg_advisory_unlock($1, $2)", &[&LOCK_CLASS, &self.lock_id])
                .await?;
            session.holds_advisory_lock = false;
        }
        Ok(())
    }

    /// A transaction that may change the shard's lease row (which it makes
    /// if missing), begun once a commit in flight has finished under the
    /// old epoch (the fence's advisory lock, held to its end).
    async fn changing_the_lease<'a>(
        &self,
        client: &'a mut Client,
    ) -> Result<tokio_postgres::Transaction<'a>, PostgresError> {
        let transaction = client.transaction().await?;
        transaction
            .execute(
                "SELECT pg_advisory_xact_lock($1, $2)",
                &[&FENCE_CLASS, &self.shard],
            )
            .await?;
        transaction
            .execute(
                "INSERT INTO ssq_lease (shard) VALUES ($1) ON CONFLICT (shard) DO NOTHING",
                &[&self.shard],
            )
            .await?;
        Ok(transaction)
    }

    async fn take(&self) -> Result<Acquire, LockError> {
        self.on_session(async |session| {
            if !self.take_advisory_lock(session).await? {
                return self.end_expired_holder(session).await.map(Acquire::Held);
            }
            let client = &mut session.client;
            let nonce = format!("{:016x}", crate::queue::random::nonce());
            let rest = format!("|{}|{nonce}|{}", self.node_id, self.advertise_url);
            let mine = format!("|{}|", self.node_id);
            let transaction = self.changing_the_lease(client).await?;
            // Another's lease that has not expired: its holder may still
            // serve (its session broke, it did not stop).
            let live_other: Option<String> = transaction
                .query_opt(
                    "SELECT token FROM ssq_lease WHERE shard = $1 AND token IS NOT NULL \
                     AND renewed_at + ttl_ms * interval '1 millisecond' > now() \
                     AND strpos(token, $2) = 0 FOR UPDATE",
                    &[&self.shard, &mine],
                )
                .await?
                .map(|row| row.get(0));
            if let Some(token) = live_other {
                drop(transaction);
                self.let_go_of_advisory_lock(session).await?;
                return Ok(Acquire::Held(token));
            }
            let token: String = transaction
                .query_one(
                    "UPDATE ssq_lease SET epoch = epoch + 1, token = (epoch + 1)::text || $2, \
                     renewed_at = now(), ttl_ms = $3, load_id = NULL \
                     WHERE shard = $1 RETURNING token",
                    &[&self.shard, &rest, &self.ttl_ms],
                )
                .await?
                .get(0);
            transaction.commit().await?;
            Ok(Acquire::Won(token))
        })
        .await
    }

    /// Another session holds the advisory lock: returns the lease's token,
    /// and ends the holder's session if the lease is not live (expired or
    /// released) and that session has done nothing for a whole TTL: a
    /// leader frozen or cut off past its lease, or an instance frozen while
    /// it held the lock to look at the lease. A session that just took the
    /// lock to write its lease is busy, and is left alone.
    async fn end_expired_holder(&self, session: &mut Session) -> Result<String, PostgresError> {
        let row = session
            .client
            .query_opt(
                "SELECT coalesce(token, ''), \
                 token IS NULL OR renewed_at + ttl_ms * interval '1 millisecond' <= now() \
                 FROM ssq_lease WHERE shard = $1",
                &[&self.shard],
            )
            .await?;
        let (token, live) = match row {
            Some(row) => (row.get::<_, String>(0), !row.get::<_, bool>(1)),
            None => (String::new(), false),
        };
        if live {
            return Ok(token);
        }
        let idle_holder: Option<i32> = session
            .client
            .query_opt(
                "SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                 WHERE l.locktype = 'advisory' AND l.granted \
                 AND l.classid::integer = $1 AND l.objid::integer = $2 \
                 AND a.state_change <= now() - $3::bigint * interval '1 millisecond'",
                &[&LOCK_CLASS, &self.lock_id, &self.ttl_ms],
            )
            .await?
            .map(|row| row.get(0));
        if let Some(pid) = idle_holder {
            tracing::warn!(pid, %token, "the shard's lease is not held, yet a session idle for a whole lease holds its lock: ending that session");
            session
                .client
                .execute("SELECT pg_terminate_backend($1)", &[&pid])
                .await?;
        }
        Ok(token)
    }

    /// [`Fence::record`]: a new epoch for `holder` if `revision` is larger
    /// than the one the lease row recorded, after any commit in flight.
    async fn record_revision(&self, revision: u64, holder: &str) -> Result<Acquire, LockError> {
        let revision = i64::try_from(revision).unwrap_or(i64::MAX);
        let rest = format!("|{holder}");
        self.on_session(async |session| {
            let transaction = self.changing_the_lease(&mut session.client).await?;
            let won: Option<String> = transaction
                .query_opt(
                    "UPDATE ssq_lease SET epoch = epoch + 1, token = (epoch + 1)::text || $2, \
                     lock_revision = $3, renewed_at = now(), ttl_ms = $4, load_id = NULL \
                     WHERE shard = $1 AND lock_revision < $3 RETURNING token",
                    &[&self.shard, &rest, &revision, &self.ttl_ms],
                )
                .await?
                .map(|row| row.get(0));
            let answer = match won {
                Some(token) => Acquire::Won(token),
                None => Acquire::Held(
                    transaction
                        .query_one(
                            "SELECT coalesce(token, '') FROM ssq_lease WHERE shard = $1",
                            &[&self.shard],
                        )
                        .await?
                        .get(0),
                ),
            };
            transaction.commit().await?;
            Ok(answer)
        })
        .await
    }

    async fn read_holder(&self) -> Result<Option<String>, LockError> {
        self.on_session(async |session| {
            Ok(session
                .client
                .query_opt(
                    "SELECT token FROM ssq_lease WHERE shard = $1 AND token IS NOT NULL \
                     AND renewed_at + ttl_ms * interval '1 millisecond' > now()",
                    &[&self.shard],
                )
                .await?
                .map(|row| row.get(0)))
        })
        .await
    }

    async fn extend(&self, token: &str) -> Result<bool, LockError> {
        self.on_session(async |session| {
            // A new session (the last one broke) takes the lock again, so
            // that passives' tries keep failing; the lease decides either way.
            self.take_advisory_lock(session).await?;
            let renewed = session
                .client
                .execute(
                    "UPDATE ssq_lease SET renewed_at = now() \
                     WHERE shard = $1 AND token = $2",
                    &[&self.shard, &token],
                )
                .await?;
            Ok(renewed == 1)
        })
        .await
    }

    async fn give_up(&self, token: &str) -> Result<bool, LockError> {
        self.on_session(async |session| {
            let released = session
                .client
                .execute(
                    "UPDATE ssq_lease SET token = NULL, renewed_at = NULL \
                     WHERE shard = $1 AND token = $2",
                    &[&self.shard, &token],
                )
                .await?;
            self.let_go_of_advisory_lock(session).await?;
            if released == 1 {
                session
                    .client
                    .execute("SELECT pg_notify($1, '')", &[&self.released_channel])
                    .await?;
            }
            Ok(released == 1)
        })
        .await
    }
}

/// Logs what a failover of Postgres could lose: without a synchronous
/// standby (or with `synchronous_commit` below `on`), a commit is
/// acknowledged once the primary alone has it. Checked at each new lock
/// session (the settings can change), said once per process for each
/// setting found (each shard has its own session).
async fn say_what_a_failover_can_lose(client: &Client) -> Result<(), PostgresError> {
    let row = client
        .query_one(
            "SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')",
            &[],
        )
        .await?;
    static SAID: std::sync::Mutex<Option<(String, String)>> = std::sync::Mutex::new(None);
    let (standbys, commit): (String, String) = (row.get(0), row.get(1));
    let settings = Some((standbys.clone(), commit.clone()));
    let mut said = SAID.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if *said == settings {
        return Ok(());
    }
    *said = settings;
    if standbys.is_empty() || !matches!(commit.as_str(), "on" | "remote_write" | "remote_apply") {
        tracing::warn!(
            synchronous_standby_names = %standbys,
            synchronous_commit = %commit,
            "Postgres acknowledges a commit once its primary alone holds it: a failover to a standby can lose \
             the last changes ssq acknowledged. Set synchronous_standby_names (and synchronous_commit = on) \
             for none to be lost; docs/operations.md, \"Postgres\""
        );
    }
    Ok(())
}

impl Fence for PostgresLock {
    fn record<'a>(&'a self, revision: u64, holder: &'a str) -> LockCall<'a, Acquire> {
        Box::pin(self.record_revision(revision, holder))
    }
}

impl LockStore for PostgresLock {
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
