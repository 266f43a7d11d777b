//! ssq: an SQS-compatible queue server. See docs/ARCHITECTURE.md for the map.
//!
//! The layers, each using only those listed before it: `queue` and `topic`
//! (the pure cores of SQS and SNS) and `policy` (IAM policies), `service` (queues behind locks, long polling, shards' placement),
//! `store` (durability: Redis, or SQLite on local disk; snapshots),
//! `cluster` (election, the sharded group, messages between shards), `api`,
//! `protocol` and `http` (SQS calls and their wire formats, a folder per
//! HTTP surface), and `node` wiring them. `error`,
//! `journal` (what the service hands the store), `leader` (who may serve,
//! with which token), `metrics`, `config` and `wildcard` are shared.

pub mod api;
pub mod cluster;
pub mod config;
pub mod error;
pub mod http;
pub(crate) mod journal;
pub mod leader;
pub mod metrics;
pub mod node;
pub mod policy;
pub mod protocol;
pub mod queue;
pub mod service;
pub mod store;
pub mod topic;
pub mod webhooks;
pub mod wildcard;
