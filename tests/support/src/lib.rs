//! Shared by the integration tests and the benches: real `ssq`, `redis-server`,
//! `postgres`, `mariadbd` and `etcd` processes on free loopback ports ([`process`], [`redis`], [`postgres`],
//! [`mariadb`], [`etcd`]), a relay that holds
//! traffic back ([`hold`]), an ssq node inside the
//! test process ([`node`]), and the official AWS SDKs to talk to them
//! ([`sdk`], and [`sns`] for topics).

pub mod certificates;
pub mod cluster;
pub mod etcd;
pub mod hold;
pub mod mariadb;
pub mod node;
pub mod postgres;
pub mod process;
pub mod redis;
pub mod sdk;
pub mod sns;
pub mod webhook;

pub use cluster::*;
pub use etcd::*;
pub use hold::*;
pub use mariadb::*;
pub use node::*;
pub use postgres::*;
pub use process::*;
pub use redis::*;
pub use sdk::*;
pub use sns::*;
