//! A private Redis Cluster: three primaries and three replicas, each a
//! `redis-server --cluster-enabled yes` on a free port, joined by
//! `redis-cli --cluster create`.

use std::process::Command;
use std::time::Duration;

use super::process::wait_for;
use super::redis::{RedisServer, is_synced_replica, redis_cli};

pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts six nodes, creates the cluster (one replica per primary) and
    /// waits until every node sees every slot served.
    pub async fn start() -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..6)
            .map(|_| {
                // The bus port is a free one of its own: by default it is
                // the node's port + 10000, which may be taken (or past 65535).
                let bus_port = super::process::free_port().to_string();
                RedisServer::start_with(&[
                    "--cluster-port",
                    &bus_port,
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    // A primary that stops answering is failed over after 1 s.
                    "--cluster-node-timeout",
                    "1000",
                    // Nodes keep serving their own slots while another's are
                    // down, as docs/operations.md advises for ssq.
                    "--cluster-require-full-coverage",
                    "no",
                    "--appendonly",
                    "no",
                ])
            })
            .collect();
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let output = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("redis-cli is installed with redis-server");
        assert!(
            output.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let cluster = RedisCluster { nodes };
        cluster.wait_until_healthy(Duration::from_secs(20)).await;
        cluster
    }

    /// The URL ssq takes: every primary and replica as a seed.
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis-cluster://{}", seeds.join(","))
    }

    /// Waits until every running node says the cluster is ok, three
    /// primaries serve the slots, and every other running node is a replica
    /// in sync with its primary.
    pub async fn wait_until_healthy(&self, limit: Duration) {
        let healthy = wait_for(limit, || async {
            let primaries = self.primaries();
            primaries.len() == 3
                && self
                    .running_ports()
                    .iter()
                    .all(|&port| redis_cli(port, &["cluster", "info"]).contains("cluster_state:ok"))
                && self
                    .nodes
                    .iter()
                    .enumerate()
                    .filter(|(index, node)| node.is_running() && !primaries.contains(index))
                    .all(|(_, node)| is_synced_replica(node.port))
        })
        .await;
        assert!(
            healthy.is_some(),
            "the Redis Cluster became healthy within {limit:?}"
        );
    }

    fn running_ports(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|n| n.is_running())
            .map(|n| n.port)
            .collect()
    }

    /// Indexes of the nodes that are primaries serving slots now, each
    /// with the slot ranges it serves, as a running node sees them.
    fn primaries_with_slots(&self) -> Vec<(usize, Vec<(u16, u16)>)> {
        let Some(&port) = self.running_ports().first() else {
            return Vec::new();
        };
        redis_cli(port, &["cluster", "nodes"])
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let flags = *fields.get(2)?;
                if !flags.contains("master") || flags.contains("fail") || fields.len() <= 8 {
                    return None;
                }
                let port: u16 = fields[1].split('@').next()?.rsplit(':').next()?.parse().ok()?;
                let index = self.nodes.iter().position(|n| n.port == port)?;
                let ranges = fields[8..]
                    .iter()
                    .filter_map(|range| match range.split_once('-') {
                        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                        None => range.parse().ok().map(|slot| (slot, slot)),
                    })
                    .collect();
                Some((index, ranges))
            })
            .collect()
    }

    /// Indexes of the nodes that are primaries serving slots now.
    pub fn primaries(&self) -> Vec<usize> {
        self.primaries_with_slots()
            .into_iter()
            .map(|(index, _)| index)
            .collect()
    }

    /// The node serving `slot` now.
    pub fn primary_of_slot(&self, slot: u16) -> usize {
        self.primaries_with_slots()
            .into_iter()
            .find(|(_, ranges)| ranges.iter().any(|&(a, b)| (a..=b).contains(&slot)))
            .map(|(index, _)| index)
            .unwrap_or_else(|| panic!("no node serves slot {slot}"))
    }
}
