//! The keys of `--credentials`: the file's two formats, and the keys kept
//! current without a restart.
//!
//! The file is either `access-key-id:secret` lines, or TOML that can give a
//! key an account, a request rate and a policy:
//!
//! ```toml
//! [[keys]]
//! id = "AKIDTEAMA"
//! secret = "..."
//! account = "111122223333"    # optional: default --account-id
//! admin = "account"           # optional: signs in to the admin page, for "all" accounts or its own
//! requests_per_second = 100   # optional (http/throttle.rs)
//! burst = 200                 # optional: at once; default the rate
//! policy = '''{"Statement": {"Effect": "Allow", "Action": "sqs:*", "Resource": "*"}}'''
//! ```
//!
//! A key acts in its account: the queues and topics it names by name and
//! lists are that account's, and another account's are refused to it. A
//! key with a `policy` (an IAM identity policy, `policy/`) may do only what
//! it allows; a key without one, anything in its account. An account may
//! have quotas, over all its keys:
//!
//! ```toml
//! [[accounts]]
//! id = "111122223333"
//! requests_per_second = 1000  # optional, with burst: the account's keys together
//! max_queues = 100            # optional
//! max_bytes = 1073741824      # optional: message payload its queues hold at most
//! ```
//!
//! The file is read at start, then again on SIGHUP and whenever it changes
//! (checked every second: its size, times and inode, so that an editor's
//! rename or a Kubernetes secret's symlink swap is seen). A new file
//! replaces the keys whole, in one swap: a request is checked against the
//! old set or the new one, never a mix, and a key the new file drops is
//! refused from the next request on. A file that cannot be read or parsed
//! is refused, logged, and counted, and the keys in force stay. A reload
//! is read and parsed on the blocking pool: no request waits on it.
//!
//! The file holds secrets: one that others may read (a mode beyond 0600,
//! as containers mount secrets by default) is used, with a warning at
//! start and at each reload naming its mode and the fix. One larger than
//! [`MAX_FILE_BYTES`] is refused unread.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use tokio::sync::watch;

use crate::http::intake::sigv4::{AccessKey, AccountLimits, AdminGrant, Credentials};
use crate::http::intake::throttle::RateLimit;
use crate::metrics::Metrics;
use crate::policy::{Policy, PolicyError};

/// How often the file is looked at for a change.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The largest credentials file read: about 100,000 keys of `id:secret`,
/// or thousands with policies. A larger one is refused without being read
/// into memory.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Why a credentials file's text cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CredentialsError {
    #[error("line {0}: expected access-key-id:secret (or a TOML file of [[keys]] with id and secret)")]
    BadLine(usize),
    #[error("no credentials in the file: write one access-key-id:secret per line, or [[keys]] in TOML")]
    Empty,
    #[error("{0}")]
    Toml(String),
    #[error("the key or account {0} is given twice")]
    Repeated(String),
    #[error("{id}: {why}")]
    BadRate { id: String, why: &'static str },
    #[error("{id}: the account {account} is not an account id (12 digits)")]
    BadAccount { id: String, account: String },
    #[error("the key {id}'s policy: {error}")]
    Policy { id: String, error: PolicyError },
}

/// The TOML form of the file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyFile {
    keys: Vec<KeyEntry>,
    #[serde(default)]
    accounts: Vec<AccountEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountEntry {
    id: String,
    requests_per_second: Option<f64>,
    burst: Option<u32>,
    max_queues: Option<usize>,
    max_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyEntry {
    id: String,
    secret: String,
    /// Its 12 digits; the instance's own account (`--account-id`) when absent.
    account: Option<String>,
    /// `"all"` or `"account"`: it signs in to the admin page.
    admin: Option<AdminGrant>,
    requests_per_second: Option<f64>,
    burst: Option<u32>,
    /// An IAM identity policy, as JSON.
    policy: Option<String>,
}

/// Reads either format: TOML when the first line that is not blank or a
/// comment opens a table (`[[keys]]`), else `access-key-id:secret` lines.
pub fn parse(text: &str) -> Result<Credentials, CredentialsError> {
    let first = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#'));
    let keys = match first {
        Some(line) if line.starts_with('[') => parse_toml(text)?,
        _ => (parse_lines(text)?, HashMap::new()),
    };
    let (keys, accounts) = keys;
    if keys.is_empty() {
        return Err(CredentialsError::Empty);
    }
    Ok(Credentials::new(keys, accounts))
}

/// What the file's keys and accounts say, by id.
type Parsed = (HashMap<String, AccessKey>, HashMap<String, AccountLimits>);

fn parse_lines(text: &str) -> Result<HashMap<String, AccessKey>, CredentialsError> {
    let mut keys = HashMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (id, secret) = line
            .split_once(':')
            .filter(|(id, secret)| !id.trim().is_empty() && !secret.trim().is_empty())
            .ok_or(CredentialsError::BadLine(number + 1))?;
        let key = AccessKey {
            secret: secret.trim().to_string(),
            account: None,
            // One account, one team: each key is its admin.
            admin: Some(AdminGrant::All),
            rate: None,
            policy: None,
        };
        keys.insert(id.trim().to_string(), key);
    }
    Ok(keys)
}

/// The rate a key or an account of id `id` is given, if any.
fn rate_of(
    id: &str,
    requests_per_second: Option<f64>,
    burst: Option<u32>,
) -> Result<Option<RateLimit>, CredentialsError> {
    let bad = |why| CredentialsError::BadRate {
        id: id.to_string(),
        why,
    };
    match (requests_per_second, burst) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(bad("burst needs requests_per_second")),
        (Some(rate), _) if !(rate.is_finite() && rate > 0.0) => {
            Err(bad("requests_per_second must be a number above 0"))
        }
        (Some(_), Some(0)) => Err(bad("burst must be at least 1")),
        (Some(rate), burst) => Ok(Some(RateLimit {
            per_second: rate,
            burst: burst.map_or(rate.ceil().max(1.0), f64::from),
        })),
    }
}

fn parse_toml(text: &str) -> Result<Parsed, CredentialsError> {
    let file: KeyFile = toml::from_str(text).map_err(|error| CredentialsError::Toml(error.to_string()))?;
    let mut keys = HashMap::new();
    for entry in file.keys {
        if entry.id.is_empty() || entry.secret.is_empty() {
            return Err(CredentialsError::Toml(
                "a key's id and secret must not be empty".into(),
            ));
        }
        let rate = rate_of(&entry.id, entry.requests_per_second, entry.burst)?;
        let policy = match &entry.policy {
            None => None,
            Some(document) => Some(Arc::new(Policy::parse(document).map_err(|error| {
                CredentialsError::Policy {
                    id: entry.id.clone(),
                    error,
                }
            })?)),
        };
        if let Some(account) = entry
            .account
            .as_ref()
            .filter(|account| !crate::queue::key::is_account(account))
        {
            return Err(CredentialsError::BadAccount {
                id: entry.id,
                account: account.clone(),
            });
        }
        let key = AccessKey {
            secret: entry.secret,
            account: entry.account,
            admin: entry.admin,
            rate,
            policy,
        };
        if keys.insert(entry.id.clone(), key).is_some() {
            return Err(CredentialsError::Repeated(entry.id));
        }
    }
    let mut accounts = HashMap::new();
    for entry in file.accounts {
        if !crate::queue::key::is_account(&entry.id) {
            return Err(CredentialsError::BadAccount {
                id: entry.id.clone(),
                account: entry.id,
            });
        }
        let limits = AccountLimits {
            rate: rate_of(&entry.id, entry.requests_per_second, entry.burst)?,
            max_queues: entry.max_queues,
            max_bytes: entry.max_bytes,
        };
        if accounts.insert(entry.id.clone(), limits).is_some() {
            return Err(CredentialsError::Repeated(entry.id));
        }
    }
    Ok((keys, accounts))
}

/// Why a credentials file was not taken.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsFileError {
    #[error("cannot read the credentials file {}: {source}", path.display())]
    Unreadable { path: PathBuf, source: std::io::Error },
    #[error("the credentials file {} is not valid: {source}", path.display())]
    Invalid { path: PathBuf, source: CredentialsError },
    #[error(
        "the credentials file {} is larger than {MAX_FILE_BYTES} bytes, the most ssq reads: give fewer keys, or \
         split the accounts over instances",
        path.display()
    )]
    TooLarge { path: PathBuf },
}

/// What tells one version of the file from another without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    len: u64,
    modified: Option<SystemTime>,
    changed: (i64, i64),
    inode: u64,
}

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(path).ok()?;
    Some(Fingerprint {
        len: metadata.len(),
        modified: metadata.modified().ok(),
        changed: (metadata.ctime(), metadata.ctime_nsec()),
        inode: metadata.ino(),
    })
}

/// The credentials in force and the file they come from.
pub struct CredentialsFile {
    path: PathBuf,
    current: RwLock<Arc<Credentials>>,
    seen: std::sync::Mutex<Option<Fingerprint>>,
    metrics: Arc<Metrics>,
    /// Told of every set of keys put in force ([`CredentialsFile::on_load`]).
    listeners: std::sync::Mutex<Vec<Listener>>,
}

/// Something that keeps a part of the file's contents where it is used.
type Listener = Box<dyn Fn(&Credentials) + Send + Sync>;

impl CredentialsFile {
    /// Reads the file; ssq does not start without a valid one.
    pub fn open(path: &Path, metrics: Arc<Metrics>) -> Result<CredentialsFile, CredentialsFileError> {
        let seen = fingerprint(path);
        let credentials = read(path)?;
        metrics.credential_keys.set(credentials.key_count() as i64);
        Ok(CredentialsFile {
            path: path.to_path_buf(),
            current: RwLock::new(Arc::new(credentials)),
            seen: std::sync::Mutex::new(seen),
            metrics,
            listeners: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Calls `listener` with the keys in force now, and again on every
    /// reload that puts new ones in force: how the accounts' byte limits
    /// reach the queues' service.
    pub fn on_load(&self, listener: impl Fn(&Credentials) + Send + Sync + 'static) {
        listener(&self.current());
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::new(listener));
    }

    /// The keys in force now.
    pub fn current(&self) -> Arc<Credentials> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Reads the file again and, if it is valid, puts its keys in force.
    /// Logged and counted either way.
    pub fn reload(&self, why: &str) -> Result<(), CredentialsFileError> {
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = fingerprint(&self.path);
        match read(&self.path) {
            Ok(credentials) => {
                let keys = credentials.key_count();
                for listener in self.listeners.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                    listener(&credentials);
                }
                let before = std::mem::replace(
                    &mut *self.current.write().unwrap_or_else(|e| e.into_inner()),
                    Arc::new(credentials),
                );
                self.metrics.credential_keys.set(keys as i64);
                self.metrics
                    .credential_reloads
                    .with_label_values(&["applied"])
                    .inc();
                tracing::info!(
                    path = %self.path.display(), keys, keys_before = before.key_count(), why,
                    "credentials reloaded: the new file's keys are in force"
                );
                Ok(())
            }
            Err(error) => {
                self.metrics
                    .credential_reloads
                    .with_label_values(&["refused"])
                    .inc();
                tracing::error!(
                    %error, keys = self.current().key_count(), why,
                    "credentials file refused: the keys in force stay; fix the file, then send SIGHUP or save it again"
                );
                Err(error)
            }
        }
    }

    /// [`CredentialsFile::reload`] on the blocking pool: reading and
    /// parsing a large file (and dropping the keys it replaces) holds up
    /// no serving thread.
    async fn reload_apart(self: &Arc<Self>, why: &'static str) {
        let file = self.clone();
        if let Err(error) = tokio::task::spawn_blocking(move || file.reload(why)).await {
            tracing::error!(%error, "the credentials reload stopped: the keys in force stay");
        }
    }

    /// Whether the file looks different from when it was last read.
    fn changed(&self) -> bool {
        let now = fingerprint(&self.path);
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) != now
    }

    /// Reloads on SIGHUP and when the file changes, until `stopped`.
    pub async fn watch(self: Arc<Self>, mut stopped: watch::Receiver<bool>) {
        let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(signal) => Some(signal),
            Err(error) => {
                tracing::warn!(%error, "SIGHUP cannot be caught: the credentials file is reloaded only when it changes");
                None
            }
        };
        let mut ticks = tokio::time::interval(CHECK_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let hangup_received = async {
                match hangup.as_mut() {
                    Some(signal) => signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            let why = tokio::select! {
                _ = stopped.wait_for(|stopped| *stopped) => return,
                _ = hangup_received => "SIGHUP",
                _ = ticks.tick() => match self.changed() {
                    true => "the file changed",
                    false => continue,
                },
            };
            self.reload_apart(why).await;
        }
    }
}

/// Reads and parses the file (at most [`MAX_FILE_BYTES`] of it), warning
/// when others may read it.
fn read(path: &Path) -> Result<Credentials, CredentialsFileError> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let unreadable = |source| CredentialsFileError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mode = file.metadata().map_err(unreadable)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(
            path = %path.display(),
            mode = %format!("{mode:04o}"),
            "the credentials file holds secrets that others on this machine may read: make it the user's alone \
             (chmod 600), or mount the secret with defaultMode 0600 (0400)"
        );
    }
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(unreadable)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(CredentialsFileError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    parse(&text).map_err(|source| CredentialsFileError::Invalid {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_the_bound_is_refused_unread() {
        let line = "AKIDAAAAAAAAAAAAAAAA:secret-secret-secret-secret\n";
        let lines = MAX_FILE_BYTES as usize / line.len();
        let (_dir, path) = file_with(&line.repeat(lines));
        assert!(read(&path).is_ok(), "a file within the bound is read");
        let (_dir, path) = file_with(&line.repeat(lines + 1));
        let refused = read(&path).unwrap_err();
        assert!(
            matches!(refused, CredentialsFileError::TooLarge { .. }),
            "{refused}"
        );
        assert!(
            refused.to_string().contains("larger than 8388608 bytes"),
            "{refused}"
        );
    }

    fn file_with(text: &str) -> (tempfile_dir::Dir, PathBuf) {
        let dir = tempfile_dir::Dir::new();
        let path = dir.path().join("credentials");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    /// A directory of its own, removed after the test.
    mod tempfile_dir {
        pub struct Dir(std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let path =
                    std::env::temp_dir().join(format!("ssq-credentials-file-{}-{n}", std::process::id()));
                std::fs::create_dir_all(&path).unwrap();
                Dir(path)
            }
            pub fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn line_files_are_read_line_by_line() {
        let credentials = parse("# comment\nAKID1:secret1\n\n AKID2 : secret2 \n").unwrap();
        assert!(credentials.signing_in("AKID2", "secret2").is_some());
        assert_eq!(
            parse("AKID:s\nno colon\n").unwrap_err(),
            CredentialsError::BadLine(2)
        );
        assert_eq!(parse("# nothing\n").unwrap_err(), CredentialsError::Empty);
        assert!(credentials.signing_in("AKID1", "secret1").is_some());
        assert!(credentials.signing_in("AKID1", "secret2").is_none());
        assert!(credentials.signing_in("AKID3", "secret1").is_none());
        assert_eq!(credentials.key("AKID1").unwrap().rate, None);
    }

    #[test]
    fn toml_files_give_keys_accounts_and_rates() {
        let credentials = parse(
            "# team keys\n[[keys]]\nid = \"FAST\"\nsecret = \"f\"\naccount = \"111122223333\"\n\n\
             [[keys]]\nid = \"SLOW\"\nsecret = \"s\"\nrequests_per_second = 2.5\n\n\
             [[keys]]\nid = \"BURSTY\"\nsecret = \"b\"\nrequests_per_second = 10\nburst = 50\n",
        )
        .unwrap();
        assert!(credentials.signing_in("SLOW", "s").is_some());
        assert_eq!(credentials.key("FAST").unwrap().rate, None);
        assert_eq!(
            credentials.key("FAST").unwrap().account.as_deref(),
            Some("111122223333")
        );
        assert_eq!(
            credentials.key("SLOW").unwrap().account,
            None,
            "the instance's own"
        );
        let rate = |per_second, burst| Some(RateLimit { per_second, burst });
        assert_eq!(credentials.key("SLOW").unwrap().rate, rate(2.5, 3.0));
        assert_eq!(credentials.key("BURSTY").unwrap().rate, rate(10.0, 50.0));

        let refused = |text: &str| parse(text).unwrap_err().to_string();
        let key = |extra: &str| format!("[[keys]]\nid = \"K\"\nsecret = \"s\"\n{extra}");
        assert!(refused(&key("requests_per_second = 0")).contains("above 0"));
        assert!(refused(&key("requests_per_second = -1")).contains("above 0"));
        assert!(refused(&key("requests_per_second = 1\nburst = 0")).contains("at least 1"));
        assert!(refused(&key("burst = 5")).contains("needs requests_per_second"));
        assert!(refused(&key("acount = \"1\"")).contains("unknown field"));
        assert!(refused(&key("account = \"1111\"")).contains("not an account id"));
        assert!(refused(&format!("{}{}", key(""), key(""))).contains("given twice"));
        assert!(refused("[[keys]]\nid = \"K\"\n").contains("secret"));
    }

    #[test]
    fn a_valid_file_replaces_the_keys_whole_and_a_bad_one_is_refused() {
        let (_dir, path) = file_with("OLD:old-secret\n");
        let metrics = Arc::new(Metrics::new("test"));
        let file = CredentialsFile::open(&path, metrics.clone()).unwrap();
        assert!(file.current().signing_in("OLD", "old-secret").is_some());

        std::fs::write(&path, "NEW:new-secret\n").unwrap();
        file.reload("test").unwrap();
        assert!(
            file.current().signing_in("OLD", "old-secret").is_none(),
            "a dropped key is refused at once"
        );
        assert!(file.current().signing_in("NEW", "new-secret").is_some());

        std::fs::write(&path, "this line has no secret\n").unwrap();
        assert!(matches!(
            file.reload("test"),
            Err(CredentialsFileError::Invalid { .. })
        ));
        assert!(
            file.current().signing_in("NEW", "new-secret").is_some(),
            "the keys in force stay"
        );
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            file.reload("test"),
            Err(CredentialsFileError::Unreadable { .. })
        ));
        assert!(file.current().signing_in("NEW", "new-secret").is_some());

        let reloads = |outcome| metrics.credential_reloads.with_label_values(&[outcome]).get();
        assert_eq!((reloads("applied"), reloads("refused")), (1, 2));
        assert_eq!(metrics.credential_keys.get(), 1);
    }

    #[test]
    fn a_rename_over_the_file_is_a_change() {
        let (dir, path) = file_with("A:a\n");
        let file = CredentialsFile::open(&path, Arc::new(Metrics::new("test"))).unwrap();
        assert!(!file.changed());
        // The same length and, within a second, maybe the same mtime: the
        // inode tells them apart.
        let next = dir.path().join("next");
        std::fs::write(&next, "B:b\n").unwrap();
        std::fs::rename(&next, &path).unwrap();
        assert!(file.changed());
        file.reload("test").unwrap();
        assert!(!file.changed());
    }
}
