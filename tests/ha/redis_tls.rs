//! Redis over TLS (rediss://), with a certificate made for the test: an
//! instance that trusts the test CA leads; one that does not never talks
//! to Redis at all.

use std::time::Duration;

use crate::common::{FAST_LOCK, RedisServer, Server, single_leader};

#[tokio::test]
async fn rediss_urls_connect_over_tls_to_a_trusted_certificate() {
    let (redis, ca) = RedisServer::start_tls();
    let url = format!("rediss://127.0.0.1:{}", redis.port);
    let mut args = vec![
        "--redis-url",
        url.as_str(),
        "--redis-ca-file",
        ca.to_str().unwrap(),
        "--node-id",
        "tls",
    ];
    args.extend_from_slice(FAST_LOCK);
    let trusting = Server::start_with(&args);
    single_leader(std::slice::from_ref(&trusting), Duration::from_secs(5)).await;
    let sqs = trusting.client();
    let queue = sqs
        .create_queue()
        .queue_name("over-tls")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    sqs.send_message()
        .queue_url(&queue)
        .message_body("encrypted in transit")
        .send()
        .await
        .unwrap();

    // Without the CA (the system's roots), the certificate is not trusted.
    trusting.signal("TERM");
    let mut args = vec!["--redis-url", url.as_str(), "--node-id", "untrusting"];
    args.extend_from_slice(FAST_LOCK);
    let untrusting = Server::start_with(&args);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        !untrusting.is_ready().await,
        "an untrusted certificate is refused"
    );
    assert_eq!(untrusting.get("/health").await.unwrap().0, 200);
}
