//! A sharded group (`--shards 12`) on a real Redis Cluster: a binary of its
//! own, since its tests measure gaps of under a second and run one at a
//! time, with nothing else beside them.

use ssq_test_support as common;

mod sharding;
