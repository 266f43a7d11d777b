//! The commit script against a real Redis, driven through an in-process node: the
//! folded writes land as the layout says (a message gets a state record only
//! once received), and a script cache that Redis lost (a restart, SCRIPT
//! FLUSH) is filled again without failing a write.

use std::collections::HashMap;

use crate::common::{InProcessNode, RedisServer, new_message};
use fred::prelude::*;
use ssq::service::ReceiveRequest;

#[tokio::test]
async fn commits_land_and_survive_a_flushed_script_cache() {
    let redis = RedisServer::start();
    let leader = InProcessNode::start_with_queue(&redis, "q").await;
    let (service, client, layout) = (&leader.service, &leader.client, &leader.layout);

    let messages = (0..3).map(|i| new_message(&format!("m{i}"))).collect();
    for sent in service.send("q", messages).await.unwrap() {
        sent.unwrap();
    }

    let _: () = client.script_flush(false).await.unwrap();
    leader.send_acknowledged("q", "after the flush").await;

    let received = service
        .receive(
            "q",
            ReceiveRequest {
                max: 1,
                visibility_timeout: Some(60),
                wait_seconds: Some(0),
                attempt_id: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(received.len(), 1);

    let bodies: HashMap<String, String> = client.hgetall(layout.bodies("q")).await.unwrap();
    let states: HashMap<String, String> = client.hgetall(layout.states("q")).await.unwrap();
    let mut seqs: Vec<&String> = bodies.keys().collect();
    seqs.sort();
    assert_eq!(seqs, ["1", "2", "3", "4"], "every message has its body");
    assert_eq!(
        states.keys().collect::<Vec<_>>(),
        ["1"],
        "only the received message needs a state record"
    );
    assert!(states["1"].contains(r#""rc":1"#), "{states:?}");
    assert!(bodies["4"].contains("after the flush"));
    // The store keeps a ceiling above every sequence number used, reserved
    // a block at a time: the first send reserved 1 to 1,000.
    let ceiling: String = client.hget(layout.sequences(), "q").await.unwrap();
    assert_eq!(ceiling, "1001");
    assert!(
        leader.leadership.is_serving(),
        "a lost script cache is no failure"
    );
    assert_eq!(leader.metrics.commit_failures.get(), 0);
}
