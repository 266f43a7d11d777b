//! Leadership in a group of instances: the elector that takes and keeps
//! each shard's lock in Redis, the watchdog that ends a leadership at its
//! deadline, the notices that wake them, the membership that shares shards
//! out in a sharded group, and the tasks that move messages between
//! shards. The Lua scripts they run are in `lua/`.

pub(crate) mod election;
pub(crate) mod group;
pub mod lock;
pub(crate) mod notices;
pub(crate) mod transfers;
pub(crate) mod watchdog;
