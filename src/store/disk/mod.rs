//! Durability on local disk (`--data-dir`): one instance, its state in an
//! SQLite database in WAL mode, every change a client is told about written
//! and synced there first.
//!
//! The records are the ones the Redis store keeps (`codec.rs`: a queue's
//! settings, a message's body and its state apart, deduplication ids,
//! receive attempts, the sequence ceiling), in tables keyed by queue and
//! sequence number, so both backends restore the same queues. A group
//! commit is one SQLite transaction (`committer.rs`); a write that fails
//! (a full disk, an I/O error) rolls back whole, and memory is loaded
//! again from what the disk holds. SQLite was measured against redb on
//! ssq's write pattern (docs/benchmarks.md, "Disk engines") and chosen for
//! its WAL: with `--data-sync everysec` a commit is written, not synced,
//! so a process crash still loses nothing.

pub(crate) mod committer;
mod directory;
mod lock;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

pub use self::directory::DirectoryError;
use self::lock::DirectoryLock;
pub use self::lock::LockError;
use super::codec;
use crate::journal::Write;
use crate::queue::{Change, Message, Queue};
use crate::topic::SnsChange;

/// The database file inside the data directory.
const DATABASE: &str = "ssq.sqlite3";

/// The layout of the tables, stored in the file: a file of another
/// version is refused rather than misread.
const FORMAT_VERSION: i64 = 1;

/// What the WAL is cut back to after a checkpoint: its default
/// checkpoint size (1,000 pages of 4 KiB).
const WAL_LIMIT_BYTES: i64 = 4 * 1024 * 1024;

/// How much of the file a load maps into memory to read it (SQLite caps
/// it at 2 GiB; the rest is read as usual).
const READ_MAP_BYTES: i64 = 1 << 40;

/// When a commit is synced (`--data-sync`), as Redis's `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncPolicy {
    /// Every group commit is synced before its answers.
    Always,
    /// Commits are written at once and synced about once a second: a
    /// process crash loses nothing, a power cut up to a second.
    Everysec,
}

/// Why the disk store cannot be opened, read or written.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    #[error(
        "the data file {} cannot be written (its permissions, or a read-only mount): ssq would fail every \
         change; give the user ssq runs as write access to it, or start ssq on another --data-dir",
        file.display()
    )]
    ReadOnly { file: PathBuf },
    #[error(
        "the data file {} is damaged ({reason}); ssq will not start on it, so as not to lose what it holds: \
         restore it from a backup, or move it away to start empty",
        file.display()
    )]
    Damaged { file: PathBuf, reason: String },
    #[error(
        "the data file {} is of format {found}, and this ssq reads format {FORMAT_VERSION}: run the ssq that wrote it",
        file.display()
    )]
    Format { file: PathBuf, found: i64 },
    #[error("the data file {}: {source}", file.display())]
    Sqlite { file: PathBuf, source: rusqlite::Error },
}

/// Bytes the data files in `dir` take (the database, its WAL and index).
pub fn bytes_on_disk(dir: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(dir.join(format!("{DATABASE}{suffix}"))).ok())
        .map(|metadata| metadata.len())
        .sum()
}

/// The state on disk: the database and the lock on its directory.
pub struct DiskStore {
    connection: std::sync::Mutex<Connection>,
    file: PathBuf,
    sync: SyncPolicy,
    _lock: DirectoryLock,
}

/// What a load found.
pub struct Loaded {
    pub queues: Vec<Queue>,
    pub topics: crate::topic::Topics,
    pub messages: usize,
    /// How long reading it took.
    pub took: std::time::Duration,
}

impl DiskStore {
    /// Takes the directory (creating it) and opens or creates the
    /// database: a file that is not one is refused here, a damaged one by
    /// [`DiskStore::load_checked`].
    pub fn open(dir: &Path, sync: SyncPolicy) -> Result<DiskStore, DiskError> {
        directory::prepare(dir)?;
        let lock = DirectoryLock::take(dir)?;
        let file = dir.join(DATABASE);
        // Made 0600 before SQLite opens it: SQLite gives its log and index
        // the database's permissions, and makes a new database 0644.
        directory::secure_file(&file, true)?;
        for suffix in ["-wal", "-shm"] {
            directory::secure_file(&dir.join(format!("{DATABASE}{suffix}")), false)?;
        }
        let sqlite = |source| classify(&file, source);
        let connection =
            Connection::open_with_flags(&file, OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW)
                .map_err(sqlite)?;
        // SQLite opens a file it may not write read-only, without a word:
        // every write would then fail after ssq said it serves.
        if connection.is_readonly(rusqlite::MAIN_DB).map_err(sqlite)? {
            return Err(DiskError::ReadOnly { file });
        }
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(sqlite)?;
        // A large commit (an import, a burst) grows the WAL; once a
        // checkpoint has copied it into the database, it is cut back to
        // this, so its space comes back too.
        connection
            .pragma_update(None, "journal_size_limit", WAL_LIMIT_BYTES)
            .map_err(sqlite)?;
        let synchronous = match sync {
            SyncPolicy::Always => "FULL",
            SyncPolicy::Everysec => "NORMAL",
        };
        connection
            .pragma_update(None, "synchronous", synchronous)
            .map_err(sqlite)?;
        connection.execute_batch(SCHEMA).map_err(sqlite)?;
        let found: Option<i64> = connection
            .query_row("SELECT value FROM format WHERE name = 'version'", [], |row| {
                row.get(0)
            })
            .optional()
            .map_err(sqlite)?;
        match found {
            None => {
                connection
                    .execute("INSERT INTO format VALUES ('version', ?1)", [FORMAT_VERSION])
                    .map_err(sqlite)?;
            }
            Some(FORMAT_VERSION) => {}
            Some(found) => return Err(DiskError::Format { file, found }),
        }
        Ok(DiskStore {
            connection: std::sync::Mutex::new(connection),
            file,
            sync,
            _lock: lock,
        })
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    pub fn sync_policy(&self) -> SyncPolicy {
        self.sync
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn sqlite(&self, source: rusqlite::Error) -> DiskError {
        classify(&self.file, source)
    }

    /// Writes many requests' writes in one transaction, synced as the
    /// policy says: all of them, or none.
    pub fn commit<'a>(&self, writes: impl Iterator<Item = &'a Write>) -> Result<(), DiskError> {
        let mut connection = self.connection();
        let transaction = connection.transaction().map_err(|e| self.sqlite(e))?;
        for write in writes {
            apply(&transaction, write).map_err(|e| self.sqlite(e))?;
        }
        transaction.commit().map_err(|e| self.sqlite(e))
    }

    /// With `--data-sync everysec`: syncs what was written since the last
    /// sync (a checkpoint syncs the log, then copies it into the database).
    pub fn sync(&self) -> Result<(), DiskError> {
        self.connection()
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(|e| self.sqlite(e))
    }

    /// Reads every queue back at start, while another thread checks the
    /// whole file (`PRAGMA quick_check`: every page, index and record
    /// header): a damaged file is refused, never served in part. The check
    /// reads as much as the load, so side by side the start takes the
    /// longer of the two rather than their sum.
    pub fn load_checked(&self) -> Result<Loaded, DiskError> {
        std::thread::scope(|scope| {
            let check = scope.spawn(|| self.check());
            let loaded = self.load();
            let checked = check.join().unwrap_or_else(|_| {
                Err(DiskError::Damaged {
                    file: self.file.clone(),
                    reason: "the integrity check failed".into(),
                })
            });
            checked.and(loaded)
        })
    }

    /// SQLite's quick check of the whole file, on a connection of its own.
    fn check(&self) -> Result<(), DiskError> {
        let sqlite = |e| self.sqlite(e);
        let connection = self.read_connection()?;
        let check: String = connection
            .query_row("PRAGMA quick_check", [], |row| row.get(0))
            .map_err(sqlite)?;
        match check.as_str() {
            "ok" => Ok(()),
            _ => Err(DiskError::Damaged {
                file: self.file.clone(),
                reason: check,
            }),
        }
    }

    /// Reads every queue back. A record that cannot be read is refused,
    /// not left out: it names the record, and ssq does not start on it.
    pub fn load(&self) -> Result<Loaded, DiskError> {
        let connection = self.connection();
        // Read through a memory map while loading: the pages come straight
        // from the OS's cache rather than being copied into SQLite's (the
        // largest part of a load of a million messages). Writes never use
        // the map, so that an I/O error while writing stays an error.
        connection
            .pragma_update(None, "mmap_size", READ_MAP_BYTES)
            .map_err(|e| self.sqlite(e))?;
        let loaded = self.read_all(&connection);
        connection
            .pragma_update(None, "mmap_size", 0)
            .map_err(|e| self.sqlite(e))?;
        loaded
    }

    fn read_all(&self, connection: &Connection) -> Result<Loaded, DiskError> {
        let damaged = |reason: String| DiskError::Damaged {
            file: self.file.clone(),
            reason,
        };
        let sqlite = |e| self.sqlite(e);
        let started = std::time::Instant::now();
        let sns: Vec<(String, String)> = connection
            .prepare("SELECT key, record FROM sns")
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                    .collect()
            })
            .map_err(sqlite)?;
        let topics = crate::topic::Topics::restore(sns).map_err(|error| damaged(error.to_string()))?;
        let mut loaded = Loaded {
            queues: Vec::new(),
            topics,
            messages: 0,
            took: std::time::Duration::ZERO,
        };
        let mut queues = connection
            .prepare("SELECT name, record FROM queues ORDER BY name")
            .map_err(sqlite)?;
        let queues: Vec<(String, String)> = queues
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .map_err(sqlite)?
            .collect::<Result<_, _>>()
            .map_err(sqlite)?;
        for (name, record) in queues {
            let meta = codec::decode_queue(&name, &record).map_err(|e| damaged(e.to_string()))?;
            let states: HashMap<u64, String> = rows(
                connection,
                "SELECT seq, record FROM states WHERE queue = ?1",
                &name,
            )
            .map_err(sqlite)?;
            let messages = self.read_messages(connection, &name, &states)?;
            let dedup = self.records(
                connection,
                "SELECT key, record FROM dedup WHERE queue = ?1",
                &name,
                codec::decode_dedup,
                "deduplication record",
            )?;
            let attempts = self.records(
                connection,
                "SELECT id, record FROM attempts WHERE queue = ?1",
                &name,
                codec::decode_attempt,
                "receive attempt",
            )?;
            let next_seq: Option<i64> = connection
                .query_row("SELECT ceiling FROM sequences WHERE name = ?1", [&name], |row| {
                    row.get(0)
                })
                .optional()
                .map_err(sqlite)?;
            loaded.messages += messages.len();
            let mut queue = Queue::restore(meta, next_seq.map_or(1, |n| n as u64), messages, dedup);
            queue.restore_attempts(attempts);
            loaded.queues.push(queue);
        }
        loaded.took = started.elapsed();
        Ok(loaded)
    }
}

impl DiskStore {
    /// One queue's `(key, record)` rows that `query` selects, each decoded;
    /// a record that cannot be read makes the file damaged, naming the
    /// queue and the record (`what`, and its key).
    fn records<T>(
        &self,
        connection: &Connection,
        query: &str,
        queue: &str,
        decode: fn(&str) -> Option<T>,
        what: &str,
    ) -> Result<Vec<(String, T)>, DiskError> {
        let rows: HashMap<String, String> = rows(connection, query, queue).map_err(|e| self.sqlite(e))?;
        rows.into_iter()
            .map(|(key, text)| match decode(&text) {
                Some(value) => Ok((key, value)),
                None => Err(DiskError::Damaged {
                    file: self.file.clone(),
                    reason: format!("queue {queue}: {what} {key} cannot be read"),
                }),
            })
            .collect()
    }

    /// A queue's messages in order. A large queue is read in as many
    /// ranges of sequence numbers as there are cores, each on a
    /// connection of its own: decoding is most of a load's work, and a
    /// million messages took one core four seconds.
    fn read_messages(
        &self,
        connection: &Connection,
        queue: &str,
        states: &HashMap<u64, String>,
    ) -> Result<Vec<Message>, DiskError> {
        let sqlite = |e| self.sqlite(e);
        // The ends of the queue, two seeks in the index (a count would
        // read all of it); numbers in between are mostly in use.
        let end = |order: &str| -> Result<Option<i64>, DiskError> {
            connection
                .query_row(
                    &format!("SELECT seq FROM bodies WHERE queue = ?1 ORDER BY seq {order} LIMIT 1"),
                    [queue],
                    |row| row.get(0),
                )
                .optional()
                .map_err(sqlite)
        };
        let (Some(first), Some(last)) = (end("ASC")?, end("DESC")?) else {
            return Ok(Vec::new());
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as i64;
        let parts = ((last - first + 1) / MESSAGES_PER_READER).clamp(1, cores);
        if parts == 1 {
            return self.read_range(connection, queue, states, first..=last);
        }
        let span = (last - first) / parts + 1;
        let ranges: Vec<_> = (0..parts)
            .map(|part| first + part * span..=(first + (part + 1) * span - 1).min(last))
            .collect();
        std::thread::scope(|scope| {
            let readers: Vec<_> = ranges
                .into_iter()
                .map(|range| {
                    scope.spawn(move || {
                        let own = self.read_connection()?;
                        self.read_range(&own, queue, states, range)
                    })
                })
                .collect();
            let mut parts = Vec::with_capacity(readers.len());
            for reader in readers {
                parts.push(reader.join().map_err(|_| DiskError::Damaged {
                    file: self.file.clone(),
                    reason: format!("reading queue {queue} failed"),
                })??);
            }
            Ok(parts.into_iter().flatten().collect())
        })
    }

    /// A queue's messages with sequence numbers in `range`, in order.
    fn read_range(
        &self,
        connection: &Connection,
        queue: &str,
        states: &HashMap<u64, String>,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<Vec<Message>, DiskError> {
        let sqlite = |e| self.sqlite(e);
        let damaged = |reason: String| DiskError::Damaged {
            file: self.file.clone(),
            reason: format!("queue {queue}: {reason}"),
        };
        let mut bodies = connection
            .prepare_cached(
                "SELECT seq, record FROM bodies WHERE queue = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq",
            )
            .map_err(sqlite)?;
        let mut found = bodies
            .query(params![queue, range.start(), range.end()])
            .map_err(sqlite)?;
        let mut messages = Vec::new();
        while let Some(row) = found.next().map_err(sqlite)? {
            let seq: i64 = row.get(0).map_err(sqlite)?;
            // Borrowed from SQLite's page: no copy before the decode's.
            let body = row
                .get_ref(1)
                .map_err(sqlite)?
                .as_str()
                .map_err(|e| damaged(format!("message {seq}: {e}")))?;
            let seq = seq as u64;
            let message = codec::decode_message(seq, body, states.get(&seq).map(String::as_str))
                .map_err(|e| damaged(e.to_string()))?;
            messages.push(message);
        }
        Ok(messages)
    }

    /// A read-only connection of its own, reading through a memory map.
    fn read_connection(&self) -> Result<Connection, DiskError> {
        let sqlite = |e| self.sqlite(e);
        let connection = Connection::open_with_flags(
            &self.file,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(sqlite)?;
        connection
            .pragma_update(None, "mmap_size", READ_MAP_BYTES)
            .map_err(sqlite)?;
        Ok(connection)
    }
}

/// A queue is read by several threads once it holds this many messages
/// per thread.
const MESSAGES_PER_READER: i64 = 100_000;

/// A table's `(key, record)` rows of one queue.
fn rows<K: rusqlite::types::FromSql + Eq + std::hash::Hash>(
    connection: &Connection,
    query: &str,
    queue: &str,
) -> rusqlite::Result<HashMap<K, String>> {
    let mut statement = connection.prepare_cached(query)?;
    let rows = statement.query_map([queue], |row| Ok((row.get(0)?, row.get(1)?)))?;
    rows.collect()
}

/// SQLite's own damage reports are told apart: they name the file and
/// what to do, and ssq does not start.
fn classify(file: &Path, source: rusqlite::Error) -> DiskError {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    match source.sqlite_error_code() {
        Some(DatabaseCorrupt | NotADatabase) => DiskError::Damaged {
            file: file.to_path_buf(),
            reason: source.to_string(),
        },
        _ => DiskError::Sqlite {
            file: file.to_path_buf(),
            source,
        },
    }
}

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS format (name TEXT PRIMARY KEY, value INTEGER) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS queues (name TEXT PRIMARY KEY, record TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS sequences (name TEXT PRIMARY KEY, ceiling INTEGER NOT NULL) WITHOUT ROWID;
    -- Bodies: a rowid table keeps a row of a few KiB on its page, where a
    -- WITHOUT ROWID one spills whatever is over ~1/20 page into overflow
    -- pages (4.7 KiB on disk per 1 KiB message, measured).
    CREATE TABLE IF NOT EXISTS bodies (queue TEXT, seq INTEGER, record TEXT NOT NULL, PRIMARY KEY (queue, seq));
    CREATE TABLE IF NOT EXISTS states (queue TEXT, seq INTEGER, record TEXT NOT NULL, PRIMARY KEY (queue, seq)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS dedup (queue TEXT, key TEXT, record TEXT NOT NULL, PRIMARY KEY (queue, key)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS attempts (queue TEXT, id TEXT, record TEXT NOT NULL, PRIMARY KEY (queue, id)) WITHOUT ROWID;
    -- SNS: topics, subscriptions and FIFO topics' deduplication ids (`topic/records.rs`).
    CREATE TABLE IF NOT EXISTS sns (key TEXT PRIMARY KEY, record TEXT NOT NULL) WITHOUT ROWID;
";

/// One write, as the rows it sets and removes: the same records the Redis
/// store keeps (`batch.rs`).
fn apply(db: &rusqlite::Transaction<'_>, write: &Write) -> rusqlite::Result<()> {
    match write {
        Write::DeleteQueue { name } => {
            run(db, "DELETE FROM queues WHERE name = ?1", [name])?;
            run(db, "DELETE FROM sequences WHERE name = ?1", [name])?;
            remove_messages(db, name)?;
        }
        // Messages between shards: a sharded group is Redis's alone.
        Write::Outbox(_) | Write::Delivered(_) | Write::TakenIn(_) => {}
        Write::Sns(changes) => {
            for change in changes {
                match change {
                    SnsChange::Put { key, record } => run(
                        db,
                        "INSERT OR REPLACE INTO sns VALUES (?1, ?2)",
                        params![key, record],
                    )?,
                    SnsChange::Delete { key } => run(db, "DELETE FROM sns WHERE key = ?1", [key])?,
                }
            }
        }
        Write::Queue { name, changes } => {
            for change in changes {
                apply_change(db, name, change)?;
            }
        }
    }
    Ok(())
}

fn apply_change(db: &rusqlite::Transaction<'_>, name: &str, change: &Change) -> rusqlite::Result<()> {
    let put_state = |message| {
        let state = record(|out| codec::write_state(message, out));
        run(
            db,
            "INSERT OR REPLACE INTO states VALUES (?1, ?2, ?3)",
            params![name, message.seq as i64, state],
        )
    };
    match change {
        Change::Meta(meta) => {
            let record = record(|out| codec::write_queue(meta, out));
            run(
                db,
                "INSERT OR REPLACE INTO queues VALUES (?1, ?2)",
                params![name, record],
            )
        }
        Change::Sent(message) => {
            let body = record(|out| codec::write_body(message, out));
            run(
                db,
                "INSERT OR REPLACE INTO bodies VALUES (?1, ?2, ?3)",
                params![name, message.seq as i64, body],
            )?;
            match codec::state_implied_by_body(message) {
                true => Ok(()),
                false => put_state(message),
            }
        }
        Change::State(message) => put_state(message),
        Change::Removed(seq) => {
            let seq = *seq as i64;
            run(
                db,
                "DELETE FROM bodies WHERE queue = ?1 AND seq = ?2",
                params![name, seq],
            )?;
            run(
                db,
                "DELETE FROM states WHERE queue = ?1 AND seq = ?2",
                params![name, seq],
            )
        }
        Change::Purged => remove_messages(db, name),
        Change::Deduplicated(key, entry) => {
            let record = record(|out| codec::write_dedup(entry, out));
            run(
                db,
                "INSERT OR REPLACE INTO dedup VALUES (?1, ?2, ?3)",
                params![name, key, record],
            )
        }
        Change::DedupExpired(key) => run(
            db,
            "DELETE FROM dedup WHERE queue = ?1 AND key = ?2",
            params![name, key],
        ),
        Change::Attempt(id, attempt) => {
            let record = record(|out| codec::write_attempt(attempt, out));
            run(
                db,
                "INSERT OR REPLACE INTO attempts VALUES (?1, ?2, ?3)",
                params![name, id, record],
            )
        }
        Change::AttemptExpired(id) => run(
            db,
            "DELETE FROM attempts WHERE queue = ?1 AND id = ?2",
            params![name, id],
        ),
        Change::SequencesReserved(ceiling) => run(
            db,
            "INSERT OR REPLACE INTO sequences VALUES (?1, ?2)",
            params![name, *ceiling as i64],
        ),
    }
}

/// Runs one statement, prepared once per connection.
fn run(db: &rusqlite::Transaction<'_>, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<()> {
    db.prepare_cached(sql)?.execute(params)?;
    Ok(())
}

/// A record as `codec.rs` writes it (JSON text), without a copy.
fn record(fill: impl FnOnce(&mut bytes::BytesMut)) -> String {
    let mut out = bytes::BytesMut::new();
    fill(&mut out);
    String::from_utf8(Vec::from(out)).expect("records are JSON text")
}

/// Every message, deduplication id and receive attempt of a queue goes (a
/// purge, or the queue deleted).
fn remove_messages(db: &rusqlite::Transaction<'_>, name: &str) -> rusqlite::Result<()> {
    for table in ["bodies", "states", "dedup", "attempts"] {
        run(db, &format!("DELETE FROM {table} WHERE queue = ?1"), [name])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::queue::{NewMessage, QueueAttributes};

    /// A directory of the test's own, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!("ssq-disk-unit-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const T0: u64 = 1_700_000_000_000;

    fn send(queue: &mut Queue, body: &str) {
        let new = NewMessage {
            group_id: Some("g".into()),
            dedup_id: Some(format!(
                "{:032x}",
                u128::from_be_bytes(crate::queue::message::md5_of_body(body))
            )),
            ..NewMessage::plain(body)
        };
        queue.send(new, T0).unwrap();
    }

    /// A journaled FIFO queue after sends, a receive with an attempt id
    /// and a delete: every kind of record.
    fn fifo_with_history() -> Queue {
        let attributes = BTreeMap::from([("FifoQueue".to_string(), "true".to_string())]);
        let attributes = QueueAttributes::for_new_queue("jobs.fifo", &attributes).unwrap();
        let mut queue = Queue::new("jobs.fifo".into(), attributes, BTreeMap::new(), T0);
        queue.enable_journal();
        queue.record_meta();
        for body in ["a", "b", "c"] {
            send(&mut queue, body);
        }
        let first = queue.receive(1, None, Some("attempt-1"), None, T0 + 10);
        assert!(queue.delete(first[0].receipt_handle, T0 + 20).unwrap());
        let second = queue.receive(1, None, Some("attempt-2"), None, T0 + 25);
        assert_eq!(&*second[0].message.body, "b");
        queue
    }

    fn commit(store: &DiskStore, queue: &mut Queue) {
        let write = Write::Queue {
            name: queue.name.clone(),
            changes: queue.take_changes(),
        };
        store.commit([&write].into_iter()).unwrap();
    }

    /// Everything a queue holds but its next sequence number, as text to
    /// compare.
    fn contents(queue: &Queue) -> String {
        format!(
            "{:?} {:?}",
            queue.meta(),
            queue.messages_after(0, usize::MAX, u64::MAX)
        )
    }

    #[test]
    fn what_is_committed_loads_back_the_same() {
        let dir = TempDir::new("same");
        let mut queue = fifo_with_history();
        {
            let store = DiskStore::open(&dir.0, SyncPolicy::Always).unwrap();
            commit(&store, &mut queue);
        }
        let store = DiskStore::open(&dir.0, SyncPolicy::Always).unwrap();
        let loaded = store.load_checked().unwrap();
        assert_eq!(loaded.messages, 2);
        let mut copy = loaded.queues.into_iter().next().unwrap();
        // The stored ceiling, not the next number: a gap, as after a failover.
        assert_eq!(copy.next_sequence_number(), 1 + crate::queue::SEQUENCE_BLOCK);
        assert_eq!(contents(&copy), contents(&queue));
        // The deduplication ids and the receive attempt came back too: a
        // duplicate send is still one, and a repeated attempt returns what
        // it returned ("b" in flight; a new receive would get nothing, its
        // group being blocked).
        let repeated = copy.receive(2, None, Some("attempt-2"), None, T0 + 30);
        let bodies: Vec<&str> = repeated.iter().map(|r| &*r.message.body).collect();
        assert!(bodies.contains(&"b"), "{bodies:?}");
        let before = copy.holding().0;
        send(&mut copy, "a");
        assert_eq!(copy.holding().0, before, "a duplicate within the window");
    }

    #[test]
    fn a_deleted_queue_leaves_nothing_behind() {
        let dir = TempDir::new("deleted");
        let store = DiskStore::open(&dir.0, SyncPolicy::Always).unwrap();
        let mut queue = fifo_with_history();
        commit(&store, &mut queue);
        let delete = Write::DeleteQueue {
            name: "jobs.fifo".into(),
        };
        store.commit([&delete].into_iter()).unwrap();
        assert!(store.load_checked().unwrap().queues.is_empty());
        let connection = store.connection();
        for table in ["queues", "sequences", "bodies", "states", "dedup", "attempts"] {
            let rows: i64 = connection
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| row.get(0))
                .unwrap();
            assert_eq!(rows, 0, "rows left in {table}");
        }
    }

    #[test]
    fn a_record_that_cannot_be_read_is_refused_naming_the_file_and_the_queue() {
        let dir = TempDir::new("record");
        let store = DiskStore::open(&dir.0, SyncPolicy::Always).unwrap();
        commit(&store, &mut fifo_with_history());
        store
            .connection()
            .execute("UPDATE bodies SET record = '{not json' WHERE seq = 2", [])
            .unwrap();
        let Err(error) = store.load_checked() else {
            panic!("a damaged record was loaded");
        };
        let said = error.to_string();
        assert!(matches!(error, DiskError::Damaged { .. }), "{said}");
        assert!(
            said.contains("ssq.sqlite3") && said.contains("jobs.fifo"),
            "{said}"
        );
    }

    #[test]
    fn a_file_of_another_format_is_refused() {
        let dir = TempDir::new("format");
        {
            let store = DiskStore::open(&dir.0, SyncPolicy::Always).unwrap();
            store
                .connection()
                .execute("UPDATE format SET value = 99 WHERE name = 'version'", [])
                .unwrap();
        }
        let Err(error) = DiskStore::open(&dir.0, SyncPolicy::Always) else {
            panic!("a file of format 99 was opened");
        };
        assert!(matches!(error, DiskError::Format { found: 99, .. }), "{error}");
    }

    #[test]
    fn a_damaged_page_fails_the_start_check() {
        let dir = TempDir::new("page");
        {
            let store = DiskStore::open(&dir.0, SyncPolicy::Always).unwrap();
            let mut queue = fifo_with_history();
            for n in 0..300 {
                send(&mut queue, &format!("filler {n} {}", "x".repeat(500)));
            }
            commit(&store, &mut queue);
            store
                .connection()
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .unwrap();
        }
        let file = dir.0.join(DATABASE);
        let mut bytes = std::fs::read(&file).unwrap();
        let pages = bytes.len() / 4096;
        assert!(pages > 10, "{pages} pages");
        // The last page: a b-tree page of the data, its header overwritten.
        let last = (pages - 1) * 4096;
        bytes[last..last + 64].fill(0x77);
        std::fs::write(&file, bytes).unwrap();
        let store = DiskStore::open(&dir.0, SyncPolicy::Always).unwrap();
        let Err(error) = store.load_checked() else {
            panic!("a damaged page went unnoticed");
        };
        assert!(matches!(error, DiskError::Damaged { .. }), "{error}");
    }
}
