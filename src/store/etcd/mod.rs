//! etcd as the leader lock (`--lock-url etcd://…`), beside a shared store
//! that keeps the data: etcd chooses each shard's leader, the store fences
//! its writes. Nothing of the queues is written to etcd.
//!
//! - `client.rs`: etcd's HTTP/JSON API (its gRPC gateway, `/v3/…`) over
//!   hyper: the endpoints tried in turn, user and password, TLS;
//! - `lock.rs`: a shard's lock, as etcd's own election takes it: a lease
//!   kept alive by its holder and a key created only if absent, whose
//!   create revision the store records as its fence;
//! - `watch.rs`: the watch that wakes a shard's elector when its key goes;
//! - `backend.rs`: a store's backend with its lock taken from etcd.
//!
//! The gateway rather than a gRPC client: the etcd crates build their
//! protocol buffers with `protoc` at compile time, which every build of ssq
//! (the wheel, the image, `cargo install`) would then need; a lock makes
//! a few calls a second, which JSON does as well.

pub mod backend;
mod client;
mod lock;
mod watch;

use std::path::PathBuf;

pub use backend::LockedByEtcd;
pub use client::{Etcd, EtcdError};

use crate::cluster::StoreError;
use crate::cluster::lock::LockError;

/// Where etcd is and how to reach it, read from `--lock-url`:
/// `etcd://[user:password@]host:port[,host:port…][/prefix]`, or `etcds://`
/// for TLS (with `--lock-ca-file`, and `--lock-cert-file` with
/// `--lock-key-file` for a client certificate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockUrl {
    pub endpoints: Vec<(String, u16)>,
    pub tls: bool,
    pub user: Option<(String, String)>,
    /// The start of every key ssq writes (`<prefix>/lock/<shard>`).
    pub prefix: String,
}

/// The files of TLS to etcd.
#[derive(Debug, Clone, Default)]
pub struct LockTls {
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

/// Why `--lock-url` cannot be used; each says what to write instead.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LockUrlError {
    #[error("--lock-url must start with etcd:// (or etcds:// for TLS), e.g. etcd://127.0.0.1:2379")]
    Scheme,
    #[error("--lock-url names no etcd endpoint: write etcd://host:port[,host:port...]")]
    NoEndpoint,
    #[error("--lock-url: `{0}` is not host:port (a port is required, e.g. 127.0.0.1:2379)")]
    Endpoint(String),
    #[error("--lock-url: the key prefix `{0}` may hold only letters, digits and - _ . /")]
    Prefix(String),
}

impl LockUrl {
    pub fn parse(url: &str) -> Result<LockUrl, LockUrlError> {
        let (tls, rest) = match url.split_once("://") {
            Some(("etcd", rest)) => (false, rest),
            Some(("etcds", rest)) => (true, rest),
            _ => return Err(LockUrlError::Scheme),
        };
        let (authority, prefix) = match rest.split_once('/') {
            Some((authority, prefix)) => (authority, prefix.trim_matches('/')),
            None => (rest, ""),
        };
        let (user, hosts) = match authority.rsplit_once('@') {
            Some((user, hosts)) => {
                let (name, password) = user.split_once(':').unwrap_or((user, ""));
                let decode = |text: &str| {
                    percent_encoding::percent_decode_str(text)
                        .decode_utf8_lossy()
                        .into_owned()
                };
                (Some((decode(name), decode(password))), hosts)
            }
            None => (None, authority),
        };
        let endpoints = hosts
            .split(',')
            .filter(|host| !host.is_empty())
            .map(|host| {
                let (name, port) = host
                    .rsplit_once(':')
                    .ok_or_else(|| LockUrlError::Endpoint(host.to_string()))?;
                let port = port
                    .parse()
                    .map_err(|_| LockUrlError::Endpoint(host.to_string()))?;
                if name.is_empty() {
                    return Err(LockUrlError::Endpoint(host.to_string()));
                }
                Ok((name.to_string(), port))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if endpoints.is_empty() {
            return Err(LockUrlError::NoEndpoint);
        }
        let prefix = if prefix.is_empty() { "ssq" } else { prefix };
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-_./".contains(c);
        if !prefix.chars().all(allowed) {
            return Err(LockUrlError::Prefix(prefix.to_string()));
        }
        Ok(LockUrl {
            endpoints,
            tls,
            user,
            prefix: prefix.to_string(),
        })
    }

    /// The URL with its password hidden, for logs and `/status`.
    pub fn redacted(&self) -> String {
        let scheme = if self.tls { "etcds" } else { "etcd" };
        let user = match &self.user {
            Some((name, _)) => format!("{name}:***@"),
            None => String::new(),
        };
        let hosts: Vec<String> = self
            .endpoints
            .iter()
            .map(|(host, port)| format!("{host}:{port}"))
            .collect();
        format!("{scheme}://{user}{}/{}", hosts.join(","), self.prefix)
    }
}

impl From<EtcdError> for StoreError {
    fn from(error: EtcdError) -> StoreError {
        StoreError {
            store: "etcd",
            source: Box::new(error),
        }
    }
}

impl From<EtcdError> for LockError {
    fn from(error: EtcdError) -> LockError {
        LockError::Store(error.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_url_names_its_endpoints_user_and_prefix() {
        let url = LockUrl::parse("etcds://ssq:p%40ss@a.example:2379,10.0.0.2:2380/team/ssq").unwrap();
        assert_eq!(
            url.endpoints,
            [("a.example".to_string(), 2379), ("10.0.0.2".to_string(), 2380)]
        );
        assert!(url.tls);
        assert_eq!(url.user, Some(("ssq".to_string(), "p@ss".to_string())));
        assert_eq!(url.prefix, "team/ssq");
        assert_eq!(
            url.redacted(),
            "etcds://ssq:***@a.example:2379,10.0.0.2:2380/team/ssq"
        );
        let plain = LockUrl::parse("etcd://127.0.0.1:2379").unwrap();
        assert_eq!(
            (plain.tls, plain.user, plain.prefix.as_str()),
            (false, None, "ssq")
        );
    }

    #[test]
    fn a_bad_lock_url_says_what_to_write() {
        assert_eq!(LockUrl::parse("http://127.0.0.1:2379"), Err(LockUrlError::Scheme));
        assert_eq!(LockUrl::parse("etcd://"), Err(LockUrlError::NoEndpoint));
        assert_eq!(
            LockUrl::parse("etcd://127.0.0.1"),
            Err(LockUrlError::Endpoint("127.0.0.1".into()))
        );
        assert_eq!(
            LockUrl::parse("etcd://h:2379/a b"),
            Err(LockUrlError::Prefix("a b".into()))
        );
    }
}
