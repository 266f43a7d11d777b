//! Durability in Redis: every change a client is told about is written
//! there first, fenced by the leader's token.
//!
//! The service hands each operation's changes to the [`committer`] as a
//! [`crate::journal::Pending`] write and waits for it. The committer gathers
//! whatever writes are waiting into one Lua script call (group commit),
//! which first checks that the lock still holds this leader's token. The
//! [`loader`] reads everything back when an instance becomes leader, or
//! after a failed write left memory and Redis possibly apart. Both reach the
//! service's queues only through [`crate::journal::Memory`].

mod batch;
pub mod catalog;
pub mod codec;
pub mod committer;
pub mod layout;
pub mod loader;

use std::sync::Arc;

use fred::prelude::Client;

use crate::journal::Memory;
use crate::leader::Leadership;
use crate::metrics::Metrics;

pub use layout::Layout;

/// What the loader and the committer of one leadership unit share: the
/// Redis connection, where its keys are, the memory they keep and the
/// leadership whose token fences every write.
#[derive(Clone)]
pub struct Store {
    pub client: Client,
    pub layout: Layout,
    pub memory: Arc<dyn Memory>,
    pub leadership: Arc<Leadership>,
    pub metrics: Arc<Metrics>,
}
