//! ssq: an SQS-compatible queue server. See docs/ARCHITECTURE.md for the map.
//!
//! The layers, top down, each using only those below it (the order
//! docs/ARCHITECTURE.md's ```layers block declares and `make lint` checks):
//! `node` (wiring), `http` (a folder per HTTP surface, and what they
//! share), `config`, `protocol` and `api` (SQS's and SNS's calls and their
//! wire formats), `webhooks` (SNS deliveries to HTTP endpoints), `store`
//! (durability: a folder per backend, Redis, Postgres or SQLite on local
//! disk; snapshots), `cluster` (election, the sharded group, messages
//! between shards, the traits a shared store implements), `service` (queues
//! and topics behind locks, long polling, shards' placement), `leader`
//! (who may serve, with which token), `journal` (what the service hands the
//! store), `metrics`, `topic` and `queue` (the pure cores of SNS and SQS),
//! `policy` (IAM policies), `wildcard` and `error`.

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
