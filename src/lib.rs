//! ssq: an SQS-compatible queue server. See docs/ARCHITECTURE.md for the map.

pub mod activity;
pub mod api;
pub mod clock;
pub mod config;
pub mod election;
pub mod error;
pub mod group;
pub mod http;
pub mod journal;
pub mod leader;
pub mod listener;
pub mod metrics;
pub mod move_tasks;
pub mod node;
pub mod protocol;
pub mod queue;
pub mod random;
pub mod redis;
pub mod replicas;
pub mod request_body;
pub mod service;
pub mod shards;
pub mod sigv4;
pub mod store;
pub mod transfers;
