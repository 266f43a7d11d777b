//! The group's roster in Redis: the shard count a key, the members a
//! sorted set scored by expiry on Redis's clock (`members.lua`), changes
//! announced on the members channel.

use std::time::Duration;

use fred::types::scripts::Script;

use crate::cluster::backend::{Roster, RosterCall};
use crate::store::redis::{Layout, Link};

pub struct RedisRoster {
    link: Link,
    layout: Layout,
    /// `members.lua`: a heartbeat, or leaving.
    beat_script: Script,
    /// `shard_count.lua`: the count recorded, or checked.
    count_script: Script,
}

impl RedisRoster {
    /// The roster under `layout`'s group keys, reached through `link`.
    pub fn new(link: Link, layout: Layout) -> RedisRoster {
        RedisRoster {
            link,
            layout,
            beat_script: Script::from_lua(include_str!("lua/members.lua")),
            count_script: Script::from_lua(include_str!("lua/shard_count.lua")),
        }
    }
}

impl Roster for RedisRoster {
    fn store(&self) -> &'static str {
        "Redis"
    }

    fn beat<'a>(&'a self, node_id: &'a str, ttl: Duration, leaving: bool) -> RosterCall<'a, Vec<String>> {
        Box::pin(async move {
            let what = if leaving { "leave" } else { "beat" };
            Ok(self
                .beat_script
                .evalsha_with_reload(
                    &self.link.commands(),
                    vec![self.layout.members()],
                    vec![
                        node_id.to_string(),
                        ttl.as_millis().to_string(),
                        what.to_string(),
                        self.layout.members_channel(),
                    ],
                )
                .await?)
        })
    }

    fn shard_count(&self, shards: usize) -> RosterCall<'_, usize> {
        Box::pin(async move {
            let layout = &self.layout;
            let stored: String = self
                .count_script
                .evalsha_with_reload(
                    &self.link.commands(),
                    vec![layout.shard_count(), layout.queues(), layout.epoch()],
                    vec![shards.to_string()],
                )
                .await?;
            // A count that is not a number is no count this instance runs with.
            Ok(stored.parse().unwrap_or(0))
        })
    }
}
