//! The Redis connection: one fred client, with the timeouts and reconnection
//! policy that high availability needs.
//!
//! Every command is bounded by the command timeout, so that a hung Redis
//! turns into an error rather than a stuck request; the client reconnects
//! forever, at most one reconnect interval apart, so that an instance
//! outlives any Redis outage and is back within that interval of Redis
//! answering again. That includes the very first connection: fred gives up
//! for good on a first connection that fails (say, on a Redis answering
//! `LOADING` while it reads its data at startup) unless told not to fail
//! fast, which once left an instance passive for ever.

use std::time::Duration;

use fred::clients::SubscriberClient;
use fred::prelude::*;

use super::SetupError;

/// How to reach Redis: the URL (`redis://` or `rediss://` for TLS, with an
/// optional user and password; `unix://` or `redis+unix://` and a path for
/// a Unix socket), and for TLS the CA to trust.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub command_timeout: Duration,
    /// The longest wait between two connection attempts.
    pub reconnect_every: Duration,
    /// PEM file of the CA that signed Redis's certificate; the system's
    /// roots when unset.
    pub ca_file: Option<std::path::PathBuf>,
}

/// Builds a client; it connects in the background and keeps reconnecting.
/// Fails only for a URL or CA file that cannot be used.
pub fn client(target: &Target) -> Result<Client, SetupError> {
    client_with(config(target)?, target)
}

/// A client for pub/sub that subscribes again after each reconnection.
pub fn subscriber(target: &Target) -> Result<SubscriberClient, SetupError> {
    builder(config(target)?, target)
        .build_subscriber_client()
        .map_err(SetupError::Client)
}

/// A client for `config` (a cluster node's, say) with `target`'s timeouts.
pub(super) fn client_with(config: Config, target: &Target) -> Result<Client, SetupError> {
    builder(config, target).build().map_err(SetupError::Client)
}

/// TLS that trusts the CA in `path`.
fn tls_trusting(path: &std::path::Path) -> Result<fred::types::config::TlsConfig, SetupError> {
    let config = crate::store::tls::client_config(Some(path))?;
    Ok(fred::types::config::TlsConnector::from(config).into())
}

/// The schemes of the URLs ssq takes for Redis (fred's, and `unix://`).
const SCHEMES: &[&str] = &[
    "redis",
    "rediss",
    "unix",
    "redis+unix",
    "redis-cluster",
    "rediss-cluster",
    "redis-sentinel",
    "rediss-sentinel",
];

/// What `target`'s URL and CA file say.
pub(super) fn config(target: &Target) -> Result<Config, SetupError> {
    crate::store::tls::use_ring();
    let url = target.url.as_str();
    let scheme = url.split_once("://").map_or(url, |(scheme, _)| scheme);
    if !SCHEMES.contains(&scheme) {
        // Only the scheme: what follows may hold a password.
        return Err(SetupError::UnknownScheme {
            scheme: scheme.chars().take(40).collect(),
        });
    }
    let mut config = Config::from_url(&fred_url(url)).map_err(|source| SetupError::BadUrl {
        url: crate::store::without_password(url),
        source,
    })?;
    if let Some(path) = &target.ca_file {
        if !url.starts_with("rediss") {
            return Err(SetupError::CaFileWithoutTls);
        }
        config.tls = Some(tls_trusting(path)?);
    }
    // Follow the reconnection policy from the first connection on.
    config.fail_fast = false;
    Ok(config)
}

fn builder(config: Config, target: &Target) -> Builder {
    let command_timeout = target.command_timeout;
    let mut builder = Builder::from_config(config);
    builder
        .with_performance_config(|performance| performance.default_command_timeout = command_timeout)
        .with_connection_config(|connection| {
            connection.connection_timeout = command_timeout.max(Duration::from_millis(500));
            connection.internal_command_timeout = command_timeout.max(Duration::from_millis(500));
            // Never resend a command on a new connection: a write whose
            // outcome is unknown is handled by reloading state, and a resend
            // arriving after that reload would change Redis behind memory.
            connection.max_command_attempts = 1;
            // A connection that stops answering is closed and replaced.
            connection.unresponsive.max_timeout = Some(command_timeout * 4);
            connection.unresponsive.interval = command_timeout.max(Duration::from_millis(100));
        })
        .set_policy(reconnect_policy(target.reconnect_every));
    builder
}

/// `url` as fred reads it: Unix sockets spelled `unix://` (redis-rs's and
/// most clients' form) as fred's `redis+unix://`, cluster seed lists as
/// fred's node parameters.
fn fred_url(url: &str) -> String {
    match url.strip_prefix("unix://") {
        Some(path) => format!("redis+unix://{path}"),
        None => cluster_nodes_as_query(url),
    }
}

/// `redis-cluster://a:1,b:2,c:3` (the seed nodes listed, as operators
/// write them) in fred's form, `redis-cluster://a:1?node=b:2&node=c:3`.
fn cluster_nodes_as_query(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    if !scheme.ends_with("-cluster") {
        return url.to_string();
    }
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
        None => (String::new(), authority),
    };
    let mut hosts = hosts.split(',');
    let first = hosts.next().unwrap_or_default();
    let others: Vec<String> = hosts.map(|host| format!("node={host}")).collect();
    if others.is_empty() {
        return url.to_string();
    }
    let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
    let query = std::iter::once(query)
        .filter(|q| !q.is_empty())
        .chain(others.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("&");
    format!("{scheme}://{userinfo}{first}{path}?{query}")
}

/// Reconnect forever: 10 ms doubling up to the reconnect interval, with no
/// jitter (fred waits even before the first attempt when it does not fail
/// fast, and that wait is startup time).
fn reconnect_policy(longest: Duration) -> ReconnectPolicy {
    let longest = longest.as_millis().clamp(10, u128::from(u32::MAX)) as u32;
    let mut policy = ReconnectPolicy::new_exponential(0, 10, longest, 2);
    policy.set_jitter(0);
    policy
}

/// Logs what keeps a client from Redis (refused connections, `LOADING`, a
/// wrong password) once per distinct error rather than once per attempt,
/// and that it connected again. `name` says which client.
pub fn log_connection_errors(client: &impl EventInterface, name: impl Into<String>) {
    let name: std::sync::Arc<str> = name.into().into();
    let named = name.clone();
    let last_error = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let seen = last_error.clone();
    client.on_error(move |(error, _)| {
        let text = error.to_string();
        let mut last = seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if last.as_deref() != Some(text.as_str()) {
            tracing::warn!(client = %named, error = %text, "cannot use Redis: retrying");
            *last = Some(text);
        }
        async { Ok(()) }
    });
    client.on_reconnect(move |_| {
        let mut last = last_error.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if last.take().is_some() {
            tracing::info!(client = %name, "connected to Redis again");
        }
        async { Ok(()) }
    });
}

#[cfg(test)]
mod tests {
    use super::{cluster_nodes_as_query, fred_url};

    #[test]
    fn unix_socket_urls_take_either_spelling() {
        assert_eq!(fred_url("unix:///run/redis.sock"), "redis+unix:///run/redis.sock");
        assert_eq!(
            fred_url("redis+unix:///run/redis.sock"),
            "redis+unix:///run/redis.sock"
        );
        assert_eq!(fred_url("redis://a:6379"), "redis://a:6379");
        for url in [
            "unix:///run/redis.sock",
            "redis+unix://u:p@localhost/run/redis.sock",
        ] {
            let config = fred::prelude::Config::from_url(&fred_url(url)).unwrap();
            assert!(config.server.is_unix_socket(), "{url}");
        }
    }

    #[test]
    fn cluster_seed_lists_become_fred_node_parameters() {
        assert_eq!(
            cluster_nodes_as_query("redis-cluster://a:7000,b:7001,c:7002"),
            "redis-cluster://a:7000?node=b:7001&node=c:7002"
        );
        assert_eq!(
            cluster_nodes_as_query("rediss-cluster://u:p@a:7000,b:7001/?x=1"),
            "rediss-cluster://u:p@a:7000/?x=1&node=b:7001"
        );
        assert_eq!(
            cluster_nodes_as_query("redis-cluster://a:7000"),
            "redis-cluster://a:7000"
        );
        assert_eq!(cluster_nodes_as_query("redis://a:6379"), "redis://a:6379");
    }
}
