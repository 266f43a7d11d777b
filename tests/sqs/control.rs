//! The control API for test suites (`--control-api`): a reset between
//! tests, through the SDK as a suite would use it, and the limits on who
//! may call it.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::{Server, create_queue_url, receive_bodies, send_body, ssq_binary};

async fn reset(server: &Server) -> (u16, Value) {
    let answer = reqwest::Client::new()
        .post(format!("{}/_ssq/reset", server.url))
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    (
        status,
        serde_json::from_str(&answer.text().await.unwrap()).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_reset_leaves_the_instance_as_after_a_fresh_start() {
    let server = Server::start_with(&["--control-api"]);
    let sqs = server.client();
    let orders = create_queue_url(&sqs, "orders", &[]).await;
    send_body(&sqs, &orders, "before").await;
    let jobs = create_queue_url(&sqs, "jobs.fifo", &[("FifoQueue", "true")]).await;
    let send_job = || {
        sqs.send_message()
            .queue_url(&jobs)
            .message_body("job")
            .message_group_id("g")
            .message_deduplication_id("job-1")
            .send()
    };
    let first = send_job().await.unwrap().message_id;

    assert_eq!(
        reset(&server).await,
        (200, serde_json::json!({"queues_deleted": 2}))
    );
    let listed = sqs.list_queues().send().await.unwrap();
    assert!(listed.queue_urls().is_empty(), "{listed:?}");

    // Made again, the queues start empty and remember no deduplication id.
    let orders = create_queue_url(&sqs, "orders", &[]).await;
    assert!(receive_bodies(&sqs, &orders, 10).await.is_empty());
    create_queue_url(&sqs, "jobs.fifo", &[("FifoQueue", "true")]).await;
    let again = send_job().await.unwrap().message_id;
    assert_ne!(
        again, first,
        "a new message, not a duplicate of the one before the reset"
    );
    assert_eq!(
        reset(&server).await,
        (200, serde_json::json!({"queues_deleted": 2}))
    );
}

#[tokio::test]
async fn the_control_api_is_off_by_default_and_closed_to_web_pages() {
    let off = Server::start();
    let kept = create_queue_url(&off.client(), "kept", &[]).await;
    let (status, _) = reset(&off).await;
    assert_eq!(status, 400, "not a path ssq serves without --control-api");
    assert!(
        off.client()
            .get_queue_attributes()
            .queue_url(&kept)
            .send()
            .await
            .is_ok()
    );

    let on = Server::start_with(&["--control-api"]);
    create_queue_url(&on.client(), "kept", &[]).await;
    let from_a_page = reqwest::Client::new()
        .post(format!("{}/_ssq/reset", on.url))
        .header("origin", "https://attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(from_a_page.status(), 403, "a cross-site request is refused");
    let listed = on.client().list_queues().send().await.unwrap();
    assert_eq!(listed.queue_urls().len(), 1, "nothing was deleted");
}

#[test]
fn the_control_api_is_refused_with_credentials_or_shards() {
    let credentials = std::env::temp_dir().join(format!("ssq-control-credentials-{}", std::process::id()));
    std::fs::write(&credentials, "key:secret\n").unwrap();
    for (args, says) in [
        (
            vec!["--credentials", credentials.to_str().unwrap()],
            "--control-api with --credentials",
        ),
        (
            vec!["--shards", "2", "--redis-url", "redis://127.0.0.1:1"],
            "--control-api with --shards 2",
        ),
    ] {
        let output = Command::new(ssq_binary())
            .args(["--listen", "127.0.0.1:0", "--control-api"])
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    std::fs::remove_file(credentials).unwrap();
}
