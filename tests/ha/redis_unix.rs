//! Redis over a Unix socket (`unix://` and `redis+unix://` URLs), for ssq
//! and Redis on one host: a message acknowledged through one instance is
//! delivered by the next after a SIGKILL, so commits, the lock and the load
//! all go through the socket.

use std::time::Duration;

use crate::common::{
    FAST_LOCK, RedisServer, Server, create_queue_url, receive_plain, send_body, single_leader,
};

#[tokio::test]
async fn unix_socket_urls_lead_commit_and_fail_over() {
    let socket = std::env::temp_dir().join(format!("ssq-test-unix-{}.sock", std::process::id()));
    let socket = socket.to_str().unwrap();
    let redis = RedisServer::start_with(&["--appendonly", "no", "--unixsocket", socket]);
    let urls = [format!("unix://{socket}"), format!("redis+unix://{socket}")];
    let start = |url: &str, id: &str| {
        let mut args = vec!["--redis-url", url, "--node-id", id];
        args.extend_from_slice(FAST_LOCK);
        Server::start_with(&args)
    };

    let mut first = start(&urls[0], "unix");
    single_leader(std::slice::from_ref(&first), Duration::from_secs(5)).await;
    let sqs = first.client();
    let queue = create_queue_url(&sqs, "over-a-socket", &[]).await;
    send_body(&sqs, &queue, "acknowledged").await;
    first.signal("KILL");
    assert!(first.wait_exit(Duration::from_secs(5)));

    let second = start(&urls[1], "redis-plus-unix");
    single_leader(std::slice::from_ref(&second), Duration::from_secs(5)).await;
    let bodies: Vec<String> = receive_plain(&second.client(), &queue)
        .await
        .into_iter()
        .filter_map(|m| m.body)
        .collect();
    assert_eq!(bodies, ["acknowledged"]);
    drop(redis);
}
