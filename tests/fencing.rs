//! The fence itself, against a real Redis: once the lock holds another
//! token, a leader's commit writes nothing, its client gets a 503, and the
//! instance steps down. Driven through the library, so that the write is
//! certain to reach the script after the lock changed hands.

mod common;

use std::collections::HashMap;

use common::{LibraryLeader, RedisServer, new_message};
use fred::prelude::*;
use ssq::error::ErrorCode;
use ssq::leader::Role;

#[tokio::test]
async fn a_commit_after_the_lock_changed_hands_writes_nothing_and_steps_down() {
    let redis = RedisServer::start();
    let leader = LibraryLeader::start_with_queue(&redis, "q").await;
    let (service, client, layout) = (&leader.service, &leader.client, &leader.layout);

    service
        .send("q", vec![new_message("kept")])
        .await
        .unwrap()
        .pop()
        .unwrap()
        .unwrap();
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
