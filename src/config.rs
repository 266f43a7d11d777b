//! Configuration: command-line flags, each also readable from an `SSQ_*`
//! environment variable, and an optional TOML file (`--config`) that holds
//! the same settings and the queues to create at startup.
//!
//! Precedence: a flag on the command line, then the environment, then the
//! file, then the default.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};
use serde::Deserialize;

use crate::service::QueueSpec;

/// `ssq --version`: the release and the commit it was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("SSQ_COMMIT"), ")");

#[derive(Debug, Clone, Parser)]
#[command(
    name = "ssq",
    version = VERSION,
    about = "An SQS-compatible queue server: in memory, or highly available through Redis."
)]
pub struct Config {
    /// A TOML file with any of these settings (same names, with underscores)
    /// and [[queues]] to create at startup; see docs/configuration.md.
    #[arg(long, env = "SSQ_CONFIG")]
    pub config: Option<PathBuf>,

    /// Address to serve HTTP on (SQS API, /health, /ready, /metrics).
    #[arg(long, env = "SSQ_LISTEN", default_value = "127.0.0.1:9324")]
    pub listen: SocketAddr,

    /// Serve the admin page, /health, /ready, /status and /metrics on this
    /// address instead of the SQS address (which then serves the API and
    /// /_aws/sqs/messages only).
    #[arg(long, env = "SSQ_ADMIN_LISTEN")]
    pub admin_listen: Option<SocketAddr>,

    /// Redis URL, e.g. redis://127.0.0.1:6379, unix:///run/redis.sock for
    /// a Redis on the same host, or
    /// redis-cluster://host:port[,host:port...] for Redis Cluster. Unset
    /// (and no --data-dir): memory-only mode, one instance, no failover,
    /// state lost on exit.
    #[arg(long, env = "SSQ_REDIS_URL", conflicts_with = "data_dir")]
    pub redis_url: Option<String>,

    /// Postgres URL, e.g. postgres://ssq@db.example.com/ssq: instances
    /// sharing one database form a group as with Redis, elected by an
    /// advisory lock. Several hosts (postgres://a,b/ssq) with
    /// ?target_session_attrs=read-write reach whichever is the primary.
    /// The password comes from the URL or PGPASSWORD. Not with --redis-url
    /// or --data-dir; see docs/operations.md, "Postgres".
    #[arg(long, env = "SSQ_POSTGRES_URL", conflicts_with_all = ["data_dir", "redis_url"])]
    pub postgres_url: Option<String>,

    /// PEM file of the CA that signed Postgres's certificate: TLS is then
    /// required [default: the system's roots, with sslmode=require].
    #[arg(long, env = "SSQ_POSTGRES_CA_FILE")]
    pub postgres_ca_file: Option<PathBuf>,

    /// Time limit of every Postgres call but a load: the lock's, and a
    /// group commit's.
    #[arg(long, env = "SSQ_POSTGRES_TIMEOUT", default_value = "1s", value_parser = parse_duration)]
    pub postgres_timeout: Duration,

    /// MySQL or MariaDB URL, e.g. mysql://ssq@db.example.com:3306/ssq:
    /// instances sharing one database form a group as with Redis, elected
    /// by GET_LOCK and fenced by a lease row. Several hosts
    /// (mysql://a:3306,b:3306/ssq) reach whichever is writable. The
    /// password comes from the URL or MYSQL_PWD; ?ssl-mode=REQUIRED for TLS.
    /// Not with --redis-url, --postgres-url or --data-dir; see
    /// docs/operations.md, "MySQL and MariaDB".
    #[arg(long, env = "SSQ_MYSQL_URL", conflicts_with_all = ["data_dir", "redis_url", "postgres_url"])]
    pub mysql_url: Option<String>,

    /// PEM file of the CA that signed MySQL's certificate: TLS is then
    /// required, the server's host name checked [default: the Mozilla
    /// roots, with ssl-mode=REQUIRED].
    #[arg(long, env = "SSQ_MYSQL_CA_FILE")]
    pub mysql_ca_file: Option<PathBuf>,

    /// Time limit of every MySQL call but a load: the lock's, and a group
    /// commit's.
    #[arg(long, env = "SSQ_MYSQL_TIMEOUT", default_value = "1s", value_parser = parse_duration)]
    pub mysql_timeout: Duration,

    /// etcd as the leader lock, beside the shared store that keeps the
    /// data: etcd://[user:password@]host:2379[,host:2379...][/prefix]
    /// (etcds:// for TLS). etcd chooses each shard's leader with a lease of
    /// --lock-ttl; the store fences its writes by the key's revision.
    /// Without it, the store's own lock. See docs/operations.md, "etcd".
    #[arg(long, env = "SSQ_LOCK_URL")]
    pub lock_url: Option<String>,

    /// PEM file of the CA that signed etcd's certificates: TLS is then
    /// used, the host name checked [default with etcds://: the system's
    /// roots].
    #[arg(long, env = "SSQ_LOCK_CA_FILE")]
    pub lock_ca_file: Option<PathBuf>,

    /// PEM file of the client certificate ssq presents to etcd (with
    /// --lock-key-file), for etcd's --client-cert-auth.
    #[arg(long, env = "SSQ_LOCK_CERT_FILE", requires = "lock_key_file")]
    pub lock_cert_file: Option<PathBuf>,

    /// PEM file of the private key of --lock-cert-file.
    #[arg(long, env = "SSQ_LOCK_KEY_FILE", requires = "lock_cert_file")]
    pub lock_key_file: Option<PathBuf>,

    /// Keep the state on local disk in this directory: one instance, every
    /// change a client is told about written (and synced, see --data-sync)
    /// there first, everything back after a restart. One process per
    /// directory.
    #[arg(long, env = "SSQ_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    /// With --data-dir: `always` syncs every group commit before its
    /// answers; `everysec` syncs about once a second (a process crash
    /// still loses nothing, a power cut up to a second).
    #[arg(long, env = "SSQ_DATA_SYNC", value_enum, default_value = "always")]
    pub data_sync: crate::store::disk::SyncPolicy,

    /// A snapshot file to import at start (exported from
    /// /admin/api/snapshot, or written by hand: docs/snapshots.md): each of
    /// its queues that does not exist yet is created with its messages.
    #[arg(long = "import", env = "SSQ_IMPORT", value_name = "FILE")]
    pub import: Option<PathBuf>,

    /// Shards the queues are spread over, each led by one instance of the
    /// group: 1 (the default) is one leader for every queue and passives
    /// beside it. Every instance of a group must run with the same count;
    /// needs Redis. See docs/operations.md.
    #[arg(long, env = "SSQ_SHARDS", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub shards: u16,

    /// This instance's id in logs, metrics and the leader lock [default: hostname-pid].
    #[arg(long, env = "SSQ_NODE_ID", value_parser = parse_node_id)]
    pub node_id: Option<String>,

    /// Base of the queue URLs ssq hands out, e.g. http://sqs.internal:9324
    /// [default: http:// + the request's Host header].
    #[arg(long, env = "SSQ_PUBLIC_URL", value_parser = parse_public_url)]
    pub public_url: Option<String>,

    /// The 12-digit account id in queue URLs and ARNs.
    #[arg(long, env = "SSQ_ACCOUNT_ID", default_value = "000000000000", value_parser = parse_account_id)]
    pub account_id: String,

    /// The instance's own region: of unsigned requests, of the queues of
    /// the configuration file, and of queue URLs without a region.
    #[arg(long, env = "SSQ_REGION", default_value = "us-east-1")]
    pub region: String,

    /// Which region a request is in: `signed`, the region its client signs
    /// for, so that the same name in two regions is two queues, as in AWS;
    /// `one`, always --region, whatever a client signs for.
    #[arg(long, env = "SSQ_REGIONS", value_enum, default_value_t = Regions::Signed)]
    pub regions: Regions,

    /// URL at which other instances and clients reach this one; passives
    /// name the leader's in the x-ssq-leader header [default: http://LISTEN].
    #[arg(long, env = "SSQ_ADVERTISE_URL", value_parser = parse_public_url)]
    pub advertise_url: Option<String>,

    /// Host names, besides IP addresses, localhost and the hosts of
    /// --public-url and --advertise-url, that requests may name in Host
    /// (and web pages calling ssq in Origin), comma-separated; `.example.com`
    /// allows its subdomains, `*` any name. Others get 403, so that no web
    /// page can reach ssq by DNS rebinding.
    #[arg(long, env = "SSQ_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// Where SNS may send webhooks (HTTP/HTTPS subscriptions), comma-separated:
    /// host names (`*.example.com` for subdomains), addresses and networks
    /// (`10.0.0.0/8`). Deliveries elsewhere are refused, so that a client
    /// cannot make ssq send requests into the network it runs in.
    #[arg(long, env = "SSQ_SNS_ENDPOINTS", default_value = "localhost,127.0.0.0/8,::1/128", value_parser = parse_sns_endpoints)]
    pub sns_endpoints: crate::webhooks::Destinations,

    /// PEM file of the CA that signed Redis's TLS certificate, for a
    /// rediss:// URL [default: the system's roots].
    #[arg(long, env = "SSQ_REDIS_CA_FILE")]
    pub redis_ca_file: Option<PathBuf>,

    /// Prefix of ssq's Redis keys (used as the keys' hash tag).
    #[arg(long, env = "SSQ_REDIS_PREFIX", default_value = "ssq")]
    pub redis_prefix: String,

    /// Time limit of every Redis command.
    #[arg(long, env = "SSQ_REDIS_TIMEOUT", default_value = "500ms", value_parser = parse_duration)]
    pub redis_timeout: Duration,

    /// Replicas that must hold each write before it counts (Redis's WAIT):
    /// commits, lock acquisitions and renewals. 0: the primary's answer is
    /// enough, and a Redis failover may lose what it had not yet shipped.
    #[arg(long, env = "SSQ_REDIS_MIN_REPLICAS", default_value_t = 0)]
    pub redis_min_replicas: u32,

    /// How long a write waits for --redis-min-replicas replicas; past it the
    /// write is unconfirmed (a retryable 503, and the leader reloads).
    /// Shorter than --lock-renew.
    #[arg(long, env = "SSQ_REDIS_REPLICA_TIMEOUT", default_value = "500ms", value_parser = parse_duration)]
    pub redis_replica_timeout: Duration,

    /// Lease of the leader lock in Redis.
    #[arg(long, env = "SSQ_LOCK_TTL", default_value = "5s", value_parser = parse_duration)]
    pub lock_ttl: Duration,

    /// How often the leader renews its lock.
    #[arg(long, env = "SSQ_LOCK_RENEW", default_value = "1s", value_parser = parse_duration)]
    pub lock_renew: Duration,

    /// A leader whose last good renewal was sent this long ago stops serving.
    /// Must be shorter than --lock-ttl and longer than --lock-renew.
    #[arg(long, env = "SSQ_LOCK_STEP_DOWN", default_value = "3s", value_parser = parse_duration)]
    pub lock_step_down: Duration,

    /// How often a passive tries to take the lock.
    #[arg(long, env = "SSQ_LOCK_RETRY", default_value = "500ms", value_parser = parse_duration)]
    pub lock_retry: Duration,

    /// A file of `access-key-id:secret` lines. When given, every SQS request
    /// must carry a valid AWS Signature Version 4 made with one of them.
    #[arg(long, env = "SSQ_CREDENTIALS")]
    pub credentials: Option<PathBuf>,

    /// Record every refused request (401, 403) and every admin action as
    /// one JSON line in this file (appended to, created 0600); see
    /// docs/operations.md.
    #[arg(long, env = "SSQ_AUDIT_LOG")]
    pub audit_log: Option<PathBuf>,

    /// Serve the control API for test suites under /_ssq/ (docs/testing.md):
    /// `POST /_ssq/reset` deletes every queue, `/_ssq/clock` moves a
    /// virtual clock, `/_ssq/faults` injects faults. For test instances
    /// only; not with --credentials (its requests are not signed) nor
    /// --shards.
    #[arg(long, env = "SSQ_CONTROL_API")]
    pub control_api: bool,

    /// `system`, or `virtual`: time stands still until `POST /_ssq/clock`
    /// moves it (docs/testing.md); needs --control-api, not with --redis-url.
    #[arg(long, env = "SSQ_CLOCK", value_enum, default_value_t = ClockKind::System)]
    pub clock: ClockKind,

    /// Queues this instance holds at most (CreateQueue answers OverLimit beyond).
    #[arg(long, env = "SSQ_MAX_QUEUES", default_value_t = 100_000)]
    pub max_queues: usize,

    /// Messages held at most over all queues (sends answer OverLimit beyond).
    #[arg(long, env = "SSQ_MAX_MESSAGES", default_value_t = 10_000_000)]
    pub max_messages: u64,

    /// Bytes of message bodies and attributes, and of FIFO deduplication
    /// records, held at most over all queues, e.g. 4GiB or 512MiB (sends
    /// answer OverLimit beyond).
    #[arg(long, env = "SSQ_MAX_BYTES", default_value = "4GiB", value_parser = parse_size)]
    pub max_bytes: u64,

    /// Bytes that all request bodies being read or handled may take together,
    /// e.g. 128MiB: beyond it requests get a retryable 503 at once, so that
    /// clients stalling mid-body cannot take the server's memory. At least
    /// 5MiB, the largest body read.
    #[arg(long, env = "SSQ_MAX_BODY_BUFFER", default_value = "128MiB", value_parser = parse_body_buffer)]
    pub max_body_buffer: u64,

    /// Concurrent client connections at most; more wait to be accepted.
    #[arg(long, env = "SSQ_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub max_connections: usize,

    /// A connection with no traffic for this long is closed. Keep it above
    /// 20 s, the longest long poll.
    #[arg(long, env = "SSQ_IDLE_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub idle_timeout: Duration,

    /// A request head (request line and headers) must be complete this long
    /// after its first byte, or the connection is closed: a client trickling
    /// its headers cannot hold a connection for ever.
    #[arg(long, env = "SSQ_HEADER_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    pub header_timeout: Duration,

    /// Time a client has to send a request's body (slow clients get 408).
    #[arg(long, env = "SSQ_REQUEST_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// Log line format.
    #[arg(long, env = "SSQ_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Do not serve: ask the ssq these settings describe for /health (at
    /// --admin-listen if set, else --listen) and exit 0 if it answers 200,
    /// 1 if not. For container health checks, where the image has no curl.
    #[arg(long, env = "SSQ_CHECK_HEALTH")]
    pub check_health: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Regions {
    Signed,
    One,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Which clock the queues' time comes from (`--clock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClockKind {
    /// The machine's wall clock.
    System,
    /// A clock the control API moves (`POST /_ssq/clock`).
    Virtual,
}

/// A queue as the configuration file writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueEntry {
    pub name: String,
    /// The queue's region [default: --region].
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default, deserialize_with = "string_map")]
    pub attributes: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "string_map")]
    pub tags: BTreeMap<String, String>,
}

/// Attribute values may be written as TOML numbers or booleans; SQS
/// takes them as text.
fn string_map<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    let raw = BTreeMap::<String, toml::Value>::deserialize(deserializer)?;
    Ok(raw
        .into_iter()
        .map(|(key, value)| {
            let text = match value {
                toml::Value::String(s) => s,
                other => other.to_string(),
            };
            (key, text)
        })
        .collect())
}

#[derive(Debug, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    queues: Vec<QueueEntry>,
    #[serde(flatten)]
    settings: BTreeMap<String, toml::Value>,
}

/// A configuration that cannot be used, saying where it went wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Flags or environment variables clap could not turn into settings.
    #[error("{0}")]
    Flags(clap::Error),
    #[error("cannot read the configuration file {}: {error}", path.display())]
    Unreadable { path: PathBuf, error: std::io::Error },
    #[error("the configuration file {} is not valid: {error}", path.display())]
    Invalid { path: PathBuf, error: toml::de::Error },
    #[error("the configuration file {} has an unknown setting {key:?}", path.display())]
    UnknownSetting { path: PathBuf, key: String },
    /// A setting from the configuration file has a value its flag refuses.
    #[error("in {}: {error}", path.display())]
    BadSetting { path: PathBuf, error: clap::Error },
}

impl Config {
    /// The instance's own account and region (see `queue::key`).
    pub fn home(&self) -> crate::queue::key::Home {
        crate::queue::key::Home {
            account: self.account_id.clone(),
            region: self.region.clone(),
        }
    }

    /// Reads the command line, the environment and the configuration file.
    /// Exits with a usage message on bad flags, as clap does.
    pub fn load() -> Result<(Config, Vec<QueueSpec>), ConfigError> {
        Self::load_from(std::env::args_os().collect())
    }

    /// The same from the given arguments (the first is the program name).
    pub fn load_from(args: Vec<std::ffi::OsString>) -> Result<(Config, Vec<QueueSpec>), ConfigError> {
        let matches = Config::command()
            .try_get_matches_from(&args)
            .unwrap_or_else(|e| e.exit());
        let config = Config::from_arg_matches(&matches).map_err(ConfigError::Flags)?;
        let Some(path) = &config.config else {
            return Ok((config, Vec::new()));
        };
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Unreadable {
            path: path.clone(),
            error,
        })?;
        let file: ConfigFile = toml::from_str(&text).map_err(|error| ConfigError::Invalid {
            path: path.clone(),
            error,
        })?;
        // Settings from the file go in as flags ahead of the real ones, but
        // only those that neither the command line nor the environment set.
        let mut merged: Vec<std::ffi::OsString> = args.iter().take(1).cloned().collect();
        for (key, value) in &file.settings {
            let id = key.replace('-', "_");
            // Not settings: which file to read, and a mode that does not serve.
            if id == "config"
                || id == "check_health"
                || !Config::command()
                    .get_arguments()
                    .any(|a| a.get_id() == id.as_str())
            {
                return Err(ConfigError::UnknownSetting {
                    path: path.clone(),
                    key: key.clone(),
                });
            }
            if matches!(
                matches.value_source(&id),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            ) {
                continue;
            }
            let text = match value {
                toml::Value::String(s) => s.clone(),
                // A list setting (allowed_hosts) as its flag takes it.
                toml::Value::Array(items) => items
                    .iter()
                    .map(|item| item.as_str().map_or_else(|| item.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(","),
                other => other.to_string(),
            };
            merged.push(format!("--{}", id.replace('_', "-")).into());
            merged.push(text.into());
        }
        merged.extend(args.into_iter().skip(1));
        let config = Config::try_parse_from(merged).map_err(|error| ConfigError::BadSetting {
            path: path.clone(),
            error,
        })?;
        let queues = file
            .queues
            .into_iter()
            .map(|entry| QueueSpec {
                name: match &entry.region {
                    Some(region) => {
                        crate::queue::key::of(&config.home(), &config.account_id, region, &entry.name)
                    }
                    None => entry.name,
                },
                attributes: entry.attributes,
                tags: entry.tags,
            })
            .collect();
        Ok((config, queues))
    }

    /// The Redis to use, if any.
    pub fn redis(&self) -> Option<crate::store::redis::Target> {
        Some(crate::store::redis::Target {
            url: self.redis_url.clone()?,
            command_timeout: self.redis_timeout,
            reconnect_every: self.lock_retry,
            ca_file: self.redis_ca_file.clone(),
        })
    }

    /// The Postgres to use, if any.
    pub fn postgres(
        &self,
    ) -> Option<Result<crate::store::postgres::Target, crate::store::postgres::PostgresError>> {
        let url = self.postgres_url.as_deref()?;
        Some(crate::store::postgres::Target::parse(
            url,
            self.postgres_ca_file.as_deref(),
            self.postgres_timeout,
        ))
    }

    /// The MySQL to use, if any.
    pub fn mysql(&self) -> Option<Result<crate::store::mysql::Target, crate::store::mysql::MysqlError>> {
        let url = self.mysql_url.as_deref()?;
        Some(crate::store::mysql::Target::parse(
            url,
            self.mysql_ca_file.as_deref(),
            self.mysql_timeout,
        ))
    }

    /// The files of TLS to etcd (`--lock-url`).
    pub fn lock_tls(&self) -> crate::store::etcd::LockTls {
        crate::store::etcd::LockTls {
            ca_file: self.lock_ca_file.clone(),
            cert_file: self.lock_cert_file.clone(),
            key_file: self.lock_key_file.clone(),
        }
    }

    /// Whether instances share a store and elect a leader (Redis, Postgres
    /// or MySQL), rather than one instance serving alone.
    pub fn in_group(&self) -> bool {
        self.redis_url.is_some() || self.postgres_url.is_some() || self.mysql_url.is_some()
    }

    /// What a write needs from Redis's replicas before it counts.
    pub fn replica_acks(
        &self,
    ) -> Result<crate::store::redis::replicas::ReplicaAcks, crate::cluster::election::TimingError> {
        let acks = crate::store::redis::replicas::ReplicaAcks {
            replicas: self.redis_min_replicas,
            timeout: self.redis_replica_timeout,
            command_timeout: self.redis_timeout,
        };
        if acks.required() && (acks.timeout.is_zero() || acks.timeout >= self.lock_renew) {
            return Err(
                crate::cluster::election::TimingError::ReplicaWaitNotBeforeRenewal {
                    replica_timeout: acks.timeout,
                    renew_every: self.lock_renew,
                },
            );
        }
        Ok(acks)
    }

    pub fn limits(&self) -> crate::service::Limits {
        crate::service::Limits {
            max_queues: self.max_queues,
            max_messages: self.max_messages,
            max_bytes: self.max_bytes,
        }
    }

    pub fn election(&self) -> crate::cluster::election::ElectionConfig {
        crate::cluster::election::ElectionConfig {
            ttl: self.lock_ttl,
            renew_every: self.lock_renew,
            step_down_after: self.lock_step_down,
            retry_every: self.lock_retry,
            call_timeout: match (&self.postgres_url, &self.mysql_url, self.redis_min_replicas) {
                (Some(_), _, _) => self.postgres_timeout,
                (None, Some(_), _) => self.mysql_timeout,
                (None, None, 0) => self.redis_timeout,
                (None, None, _) => self.redis_timeout + self.redis_replica_timeout,
            },
        }
    }

    pub fn advertise_url(&self) -> String {
        self.advertise_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen))
    }

    pub fn node_id(&self) -> String {
        self.node_id.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .or_else(|| std::env::var("HOSTNAME").ok())
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "ssq".to_string());
            format!("{host}-{}", std::process::id())
        })
    }
}

/// Sizes as `4GiB`, `512MiB`, `64KiB` or a number of bytes.
fn parse_size(value: &str) -> Result<u64, String> {
    let value = value.trim();
    let (number, unit) = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        .iter()
        .find_map(|(suffix, unit)| value.strip_suffix(suffix).map(|n| (n, *unit)))
        .unwrap_or((value, 1));
    number
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("{value:?} is not a size such as 4GiB, 512MiB, 64KiB or 1048576"))
}

/// The largest request body read. A batch may carry 1 MiB of payload, and
/// encodings inflate it (JSON's \uXXXX escapes up to 3x, base64 by 4/3).
/// Here rather than with the HTTP front that enforces it: the setting of
/// `--max-body-buffer` is checked against it.
pub const MAX_REQUEST_BODY: usize = 5 * 1024 * 1024;

/// A size that holds at least one body of the largest size read.
fn parse_body_buffer(value: &str) -> Result<u64, String> {
    let size = parse_size(value)?;
    let least = MAX_REQUEST_BODY as u64;
    if size < least {
        return Err(format!(
            "{value:?} is less than {least} bytes (5MiB), the largest request body, which must fit"
        ));
    }
    Ok(size)
}

/// Durations as `500ms`, `5s`, `1.5s` or `2m`; a bare number is seconds.
fn parse_duration(value: &str) -> Result<Duration, String> {
    let value = value.trim();
    let (number, unit_ms) = if let Some(n) = value.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = value.strip_suffix('s') {
        (n, 1_000.0)
    } else if let Some(n) = value.strip_suffix('m') {
        (n, 60_000.0)
    } else {
        (value, 1_000.0)
    };
    match number.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 && n * unit_ms < 1e12 => {
            Ok(Duration::from_secs_f64(n * unit_ms / 1_000.0))
        }
        _ => Err(format!(
            "{value:?} is not a duration such as 500ms, 5s, 1.5s or 2m"
        )),
    }
}

fn parse_node_id(value: &str) -> Result<String, String> {
    if !value.is_empty() && value.len() <= 128 && value.bytes().all(|b| b.is_ascii_graphic() && b != b'|') {
        Ok(value.to_string())
    } else {
        Err(format!(
            "{value:?} is not a node id: use 1 to 128 visible ASCII characters other than '|'"
        ))
    }
}

fn parse_sns_endpoints(text: &str) -> Result<crate::webhooks::Destinations, String> {
    crate::webhooks::Destinations::parse(text).map_err(|error| error.to_string())
}

fn parse_public_url(value: &str) -> Result<String, String> {
    let url = value.trim_end_matches('/');
    if (url.starts_with("http://") || url.starts_with("https://")) && url.len() > "https://".len() {
        Ok(url.to_string())
    } else {
        Err(format!(
            "{value:?} is not an http:// or https:// URL, e.g. http://sqs.internal:9324"
        ))
    }
}

fn parse_account_id(value: &str) -> Result<String, String> {
    if value.len() == 12 && value.bytes().all(|b| b.is_ascii_digit()) {
        Ok(value.to_string())
    } else {
        Err(format!("{value:?} is not a 12-digit AWS account id"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_memory_only_on_the_emulator_port() {
        let config = Config::try_parse_from(["ssq"]).unwrap();
        assert_eq!(config.listen.to_string(), "127.0.0.1:9324");
        assert!(config.redis_url.is_none());
        assert_eq!(config.account_id, "000000000000");
        assert!(config.node_id().contains('-'));
    }

    #[test]
    fn bad_values_are_refused_with_a_reason() {
        let err = Config::try_parse_from(["ssq", "--account-id", "12"]).unwrap_err();
        assert!(err.to_string().contains("12-digit"));
        let err = Config::try_parse_from(["ssq", "--public-url", "sqs.internal"]).unwrap_err();
        assert!(err.to_string().contains("http://"));
        let ok = Config::try_parse_from(["ssq", "--public-url", "http://sqs:9324/"]).unwrap();
        assert_eq!(ok.public_url.as_deref(), Some("http://sqs:9324"));
    }

    #[test]
    fn the_file_fills_in_what_flags_and_environment_leave_unset() {
        let dir = std::env::temp_dir().join(format!("ssq-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ssq.toml");
        std::fs::write(
            &path,
            r#"
listen = "127.0.0.1:9500"
region = "eu-west-1"
lock_ttl = "7s"

[[queues]]
name = "orders"
attributes = { VisibilityTimeout = 60, FifoQueue = false }
tags = { team = "core" }

[[queues]]
name = "events.fifo"
attributes = { FifoQueue = true }

[[queues]]
name = "orders"
region = "eu-central-1"
"#,
        )
        .unwrap();
        let args = |extra: &[&str]| {
            let mut args: Vec<std::ffi::OsString> =
                vec!["ssq".into(), "--config".into(), path.clone().into()];
            args.extend(extra.iter().map(|a| a.into()));
            args
        };
        let (config, queues) = Config::load_from(args(&["--region", "us-west-2"])).unwrap();
        assert_eq!(config.listen.to_string(), "127.0.0.1:9500", "from the file");
        assert_eq!(config.region, "us-west-2", "the command line wins");
        assert_eq!(config.lock_ttl, Duration::from_secs(7));
        assert_eq!(queues.len(), 3);
        assert_eq!(queues[0].attributes["VisibilityTimeout"], "60");
        assert_eq!(queues[0].attributes["FifoQueue"], "false");
        assert_eq!(queues[1].attributes["FifoQueue"], "true");
        assert_eq!(
            (queues[0].name.as_str(), queues[2].name.as_str()),
            ("orders", "eu-central-1/orders"),
            "keyed by region"
        );

        std::fs::write(&path, "bogus_setting = 1\n").unwrap();
        let error = Config::load_from(args(&[])).unwrap_err();
        assert!(matches!(&error, ConfigError::UnknownSetting { key, .. } if key == "bogus_setting"));
        assert!(error.to_string().contains("unknown setting"), "{error}");
        std::fs::write(&path, "listen = [\n").unwrap();
        let error = Config::load_from(args(&[])).unwrap_err();
        assert!(matches!(error, ConfigError::Invalid { .. }));
        assert!(error.to_string().contains("not valid"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(parse_size("4GiB").unwrap(), 4 << 30);
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999999GiB").is_err());
    }

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1_500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        for bad in ["", "fast", "-1s", "1h", "NaNs"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn election_defaults_keep_step_down_inside_the_lease() {
        let config = Config::try_parse_from(["ssq"]).unwrap();
        config.election().validate().unwrap();
        let bad = Config::try_parse_from(["ssq", "--lock-step-down", "5s"]).unwrap();
        use crate::cluster::election::TimingError;
        let refused = bad.election().validate().unwrap_err();
        assert!(
            matches!(refused, TimingError::StepDownNotBeforeExpiry { .. }),
            "{refused}"
        );
        assert!(
            refused.to_string().contains("shorter than --lock-ttl"),
            "{refused}"
        );
        let bad = Config::try_parse_from(["ssq", "--lock-renew", "3s"]).unwrap();
        let refused = bad.election().validate().unwrap_err();
        assert!(
            matches!(refused, TimingError::RenewNotBeforeStepDown { .. }),
            "{refused}"
        );
    }
}
