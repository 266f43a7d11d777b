//! The fence itself, against a real Redis: once the lock holds another
//! token, a leader's commit writes nothing, its client gets a 503, and the
//! instance steps down. Driven through the library, so that the write is
//! certain to reach the script after the lock changed hands.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::*;
use ssq::clock::SystemClock;
use ssq::election::{Acquire, LockStore, RedisLock};
use ssq::error::ErrorCode;
use ssq::leader::{LeaderInfo, Leadership, Role};
use ssq::metrics::Metrics;
use ssq::queue::{MessageAttributes, NewMessage};
use ssq::service::Service;
use ssq::store::Layout;
use ssq::store::committer::Committer;
use ssq::store::loader::Loader;

fn message(body: &str) -> NewMessage {
    NewMessage {
        body: body.into(),
        attributes: MessageAttributes::new(),
        delay_seconds: None,
        sender_id: "t".into(),
        trace_header: None,
    }
}

#[tokio::test]
async fn a_commit_after_the_lock_changed_hands_writes_nothing_and_steps_down() {
    let redis = common::RedisServer::start();
    let client = ssq::redis::client(&redis.url(), Duration::from_millis(500)).unwrap();
    client.init().await.unwrap();
    let layout = Layout::new("ssq");
    let metrics = Arc::new(Metrics::new("me"));
    let (journal, journal_rx) = tokio::sync::mpsc::unbounded_channel();
    let service = Arc::new(Service::new(Arc::new(SystemClock), metrics.clone()).persisting_to(journal));
    let leadership = Arc::new(Leadership::new(
        "me".into(),
        Role::Passive,
        Duration::from_secs(3),
        service.clone(),
        metrics.clone(),
    ));
    let loader = Arc::new(Loader::new(
        client.clone(),
        layout.clone(),
        service.clone(),
        leadership.clone(),
    ));
    let committer = Committer::new(
        client.clone(),
        layout.clone(),
        leadership.clone(),
        service.clone(),
        loader,
        metrics.clone(),
        Duration::from_millis(500),
    );
    tokio::spawn(committer.run(journal_rx));

    let lock = RedisLock::new(client.clone(), &layout, "me", "http://me", Duration::from_secs(5));
    let Acquire::Won(token) = lock.acquire().await.unwrap() else {
        panic!("the lock was free")
    };
    let term = leadership
        .acquired(LeaderInfo::parse(&token).unwrap(), tokio::time::Instant::now())
        .unwrap();
    leadership.restored(term);

    service
        .create_queue("q", &BTreeMap::new(), BTreeMap::new())
        .await
        .unwrap();
    service
        .send("q", vec![message("kept")])
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

    let error = service.send("q", vec![message("fenced")]).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::ServiceUnavailable);
    let bodies: HashMap<String, String> = client.hgetall(layout.bodies("q")).await.unwrap();
    assert_eq!(bodies.len(), 1, "the fenced write changed nothing");
    assert!(bodies.values().all(|b| b.contains("kept")));
    assert_eq!(
        leadership.role(),
        Role::Passive,
        "a fenced leader steps down at once"
    );
    assert!(!leadership.is_serving());
    assert_eq!(metrics.step_downs.with_label_values(&["fenced"]).get(), 1);
    assert!(!service.queue_exists("q"), "and drops its memory");
}
