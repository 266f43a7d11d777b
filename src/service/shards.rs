//! Which shard a queue belongs to, and how many shards each live instance
//! of a sharded group (`--shards K`, K > 1) should lead: the pure rules
//! that every instance computes alike.
//!
//! A queue's shard is a stable hash of its account, region and name, so
//! that every instance, of any version, puts a queue in the same shard:
//! the hash is SipHash-2-4 with zero keys, fixed by its specification.
//! Changing it would move queues away from their data.
//!
//! The shards are shared by *shares*: with n live instances each leads at
//! most `ceil(K / n)`. An instance below its share takes any shard that is
//! free; one above it hands off its surplus, the shards it ranks lowest
//! (rendezvous hashing, so the choice is stable). Nothing else moves: when
//! an instance dies, the others keep what they lead and take its shards;
//! when one joins, each of the others gives up only what exceeds the new
//! share. The shard locks decide who leads; the shares only say who should
//! try.

use crate::queue::key::Home;
use std::future::Future;
use std::hash::Hasher;
use std::pin::Pin;

use siphasher::sip::SipHasher24;

use crate::error::SqsError;
use crate::queue::QueueMeta;

/// What a sharded group's calls read of queues other instances hold in
/// memory, from Redis: ListQueues every queue's key, the dead-letter rules
/// the settings of queues in other shards.
pub trait Catalog: Send + Sync + 'static {
    fn queue_keys(&self) -> Pin<Box<dyn Future<Output = Result<Vec<String>, SqsError>> + Send + '_>>;

    /// The settings of queue `key`, if it exists.
    fn queue<'a>(
        &'a self,
        key: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Option<QueueMeta>, SqsError>> + Send + 'a>>;

    /// Every queue's settings, by key, in key order.
    fn queues(&self) -> Pin<Box<dyn Future<Output = Result<Vec<QueueMeta>, SqsError>> + Send + '_>>;
}

/// How queues are placed on shards: `count` shards, 1 for an unsharded
/// group.
#[derive(Debug, Clone)]
pub struct Placement {
    count: usize,
    home: Home,
}

impl Placement {
    pub fn new(count: usize, account_id: &str, home_region: &str) -> Placement {
        Placement {
            count: count.max(1),
            home: Home {
                account: account_id.to_string(),
                region: home_region.to_string(),
            },
        }
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// The shard of the queue keyed `key` (see `queue::key`).
    pub fn shard_of(&self, key: &str) -> usize {
        if self.count == 1 {
            return 0;
        }
        let parts = crate::queue::key::split(key);
        let (account, region) = (parts.account_or(&self.home), parts.region_or(&self.home));
        let mut hasher = SipHasher24::new_with_keys(0, 0);
        for part in [account, region, parts.name] {
            hasher.write(part.as_bytes());
            hasher.write_u8(0xff); // no part holds 0xff: the parts stay apart
        }
        (hasher.finish() % self.count as u64) as usize
    }
}

/// At most how many shards each of `members` live instances should lead.
pub fn share(shards: usize, members: usize) -> usize {
    shards.div_ceil(members.max(1))
}

/// Of the shards `node` leads (`led`), those it should hand off to come
/// down to `share`: the ones it ranks lowest.
pub fn surplus(node: &str, led: &[usize], share: usize) -> Vec<usize> {
    let mut ranked: Vec<(u64, usize)> = led.iter().map(|&shard| (rank(node, shard), shard)).collect();
    ranked.sort_unstable();
    let extra = led.len().saturating_sub(share);
    ranked.into_iter().take(extra).map(|(_, shard)| shard).collect()
}

/// How much `member` wants `shard`: the rendezvous weight.
fn rank(member: &str, shard: usize) -> u64 {
    let mut hasher = SipHasher24::new_with_keys(0, 0);
    hasher.write(member.as_bytes());
    hasher.write_u8(0xff);
    hasher.write_u64(shard as u64);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shard_holds_every_queue() {
        let placement = Placement::new(1, "000000000000", "us-east-1");
        assert_eq!(placement.shard_of("orders"), 0);
        assert_eq!(placement.shard_of("eu-west-1/orders"), 0);
    }

    #[test]
    fn placement_is_stable_and_spreads_queues() {
        let placement = Placement::new(12, "000000000000", "us-east-1");
        // Fixed by the hash's specification: a change here moves stored queues.
        assert_eq!(placement.shard_of("orders"), placement.shard_of("orders"));
        let same_elsewhere = Placement::new(12, "000000000000", "eu-west-1");
        assert_eq!(
            placement.shard_of("eu-west-1/orders"),
            same_elsewhere.shard_of("orders"),
            "a queue's shard does not depend on the instance's own region"
        );
        let mut per_shard = [0usize; 12];
        for i in 0..1200 {
            per_shard[placement.shard_of(&format!("queue-{i}"))] += 1;
        }
        assert!(
            per_shard.iter().all(|&n| (60..=140).contains(&n)),
            "{per_shard:?}"
        );
    }

    #[test]
    fn shares_cover_every_shard() {
        for members in 1..=13 {
            let share = share(12, members);
            assert!(share * members >= 12, "{members} members");
        }
        assert_eq!(share(12, 0), 12);
    }

    #[test]
    fn surplus_is_only_what_exceeds_the_share_and_stable() {
        let led = [0, 3, 5, 7, 8, 11];
        assert!(surplus("node-0", &led, 6).is_empty());
        let extra = surplus("node-0", &led, 4);
        assert_eq!(extra.len(), 2);
        assert!(extra.iter().all(|shard| led.contains(shard)));
        assert_eq!(extra, surplus("node-0", &led, 4), "the same shards every time");
        // Giving those up leaves nothing more to give.
        let kept: Vec<usize> = led.iter().copied().filter(|s| !extra.contains(s)).collect();
        assert!(surplus("node-0", &kept, 4).is_empty());
        assert_ne!(
            surplus("node-0", &led, 1),
            surplus("node-1", &led, 1),
            "instances rank shards differently"
        );
    }
}
