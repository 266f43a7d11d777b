//! The fence itself, against a real Redis: once the lock holds another
//! token, a leader's commit writes nothing, its client gets a 503, and the
//! instance steps down. Driven through an in-process node, so that the write is
//! certain to reach the script after the lock changed hands.

use std::collections::HashMap;

use crate::common::{InProcessNode, RedisServer, new_message};
use fred::prelude::*;
use ssq::error::ErrorCode;
use ssq::leader::Role;

#[tokio::test]
async fn a_commit_after_the_lock_changed_hands_writes_nothing_and_steps_down() {
    let redis = RedisServer::start();
    let leader = InProcessNode::start_with_queue(&redis, "q").await;
    let (service, client, layout) = (&leader.service, &leader.client, &leader.layout);

    leader.send_acknowledged("q", "kept").await;
    let bodies: HashMap<String, String> = client.hgetall(layout.bodies("q")).await.unwrap();
    assert_eq!(bodies.len(), 1, "the leader's write is in Redis");

    // Another instance takes the lock (as after this one froze past its TTL).
    let _: () = client
        .set(layout.lock(), "99|other|00|http://other", None, None, false)
        .await
        .unwrap();

    let error = service.send("q", vec![new_message("fenced")]).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::ServiceUnavailable);
    let bodies: HashMap<String, String> = client.hgetall(layout.bodies("q")).await.unwrap();
    assert_eq!(bodies.len(), 1, "the fenced write changed nothing");
    assert!(bodies.values().all(|b| b.contains("kept")));
    assert_eq!(
        leader.leadership.role(),
        Role::Passive,
        "a fenced leader steps down at once"
    );
    assert!(!leader.leadership.is_serving());
    assert_eq!(leader.metrics.step_downs.with_label_values(&["fenced"]).get(), 1);
    assert!(!service.queue_exists("q"), "and drops its memory");
}

/// The acquisition script against a real Redis: a lease held by another
/// node is respected; one in the asking node's own name (left by answers it
/// never got) is taken over with a new token and a higher epoch, and the old
/// token can no longer renew.
#[tokio::test]
async fn a_node_takes_over_a_lease_left_in_its_own_name_only() {
    use ssq::cluster::lock::{Acquire, LockStore};
    use ssq::store::redis::RedisLock;
    use std::time::Duration;

    let redis = RedisServer::start();
    let layout = ssq::store::redis::Layout::new("ssq");
    let link = redis.connections().link(&layout.lock());
    let lock_of =
        |node: &str| RedisLock::new(link.clone(), &layout, node, "http://x", Duration::from_secs(60));
    let (a, b) = (lock_of("node-a"), lock_of("node-b"));

    let Acquire::Won(first) = a.acquire().await.unwrap() else {
        panic!("the lock was free")
    };
    assert_eq!(b.acquire().await.unwrap(), Acquire::Held(first.clone()));
    let Acquire::Won(second) = a.acquire().await.unwrap() else {
        panic!("node-a takes over its own leftover lease")
    };
    assert_ne!(first, second);
    let epoch = |token: &str| token.split('|').next().unwrap().parse::<u64>().unwrap();
    assert!(epoch(&second) > epoch(&first));
    assert!(!a.renew(&first).await.unwrap(), "the old token is fenced out");
    assert!(a.renew(&second).await.unwrap());
    assert_eq!(b.acquire().await.unwrap(), Acquire::Held(second));
}

/// The load fence: a commit made on memory that was loaded before the
/// latest load (one that timed out and reached Redis only after a reload had
/// read it) writes nothing, its client gets a 503, and memory is loaded
/// again; the next write goes through. Before the fence such a late commit
/// was applied, and Redis and the leader's memory went apart for good.
#[tokio::test]
async fn a_commit_made_before_the_latest_load_writes_nothing_and_memory_is_loaded_again() {
    let redis = RedisServer::start();
    let leader = InProcessNode::start_with_queue(&redis, "q").await;
    let (service, client, layout) = (&leader.service, &leader.client, &leader.layout);
    let fence: String = client.get(layout.load_fence()).await.unwrap();
    assert!(!fence.is_empty(), "the load set its fence");

    // As if another load of this leader had begun since memory was loaded.
    let _: () = client
        .set(layout.load_fence(), "a-later-load", None, None, false)
        .await
        .unwrap();
    let error = service.send("q", vec![new_message("late")]).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::ServiceUnavailable);
    let bodies: HashMap<String, String> = client.hgetall(layout.bodies("q")).await.unwrap();
    assert!(bodies.is_empty(), "the stale commit changed nothing: {bodies:?}");
    assert_eq!(leader.leadership.role(), Role::Leader, "the leader stays leader");

    // It loads again, under a fence of its own, and serves.
    crate::common::wait_for(std::time::Duration::from_secs(10), || {
        let leadership = leader.leadership.clone();
        async move { leadership.is_serving() }
    })
    .await
    .expect("the leader serves again after loading");
    let reloaded: String = client.get(layout.load_fence()).await.unwrap();
    assert_ne!(reloaded, "a-later-load");
    leader.send_acknowledged("q", "kept").await;
    let bodies: HashMap<String, String> = client.hgetall(layout.bodies("q")).await.unwrap();
    assert_eq!(bodies.len(), 1);
}
