//! ssq with a store: real ssq processes and private redis-servers, killed,
//! frozen and cut off; commits and fencing against real Redis through an
//! in-process node; Sentinel, TLS, authentication, replicas, HAProxy, the
//! soak, and `make chaos` (ignored by `cargo test`); and `--data-dir`, the
//! state on local disk (`disk.rs`) in a directory that is its user's alone
//! (`data_dir.rs`).

use ssq_test_support as common;

mod chaos;
mod commit;
mod data_dir;
mod databases;
mod disk;
mod durability;
mod etcd;
mod failover;
mod fencing;
mod haproxy;
mod mysql;
mod postgres;
mod redis_auth;
mod redis_outages;
mod redis_tls;
mod redis_unix;
mod replicas;
mod sentinel;
mod snapshot;
mod sns;
mod soak;
mod webhooks;
