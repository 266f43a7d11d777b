//! Fair queues through the AWS SDK: on a standard queue, a tenant (message
//! group) holding a share of the in-flight messages is noisy, and receives
//! take quiet tenants' messages before its backlog; `/metrics` and the
//! admin page report it.

use crate::common::{Server, create_queue_url, get_text, receive_up_to, send_grouped};

#[tokio::test]
async fn a_quiet_tenant_goes_before_a_noisy_tenants_backlog() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "tenants", &[("VisibilityTimeout", "600")]).await;
    for i in 0..60 {
        send_grouped(&sqs, &url, &format!("big {i}"), "big").await;
    }
    for _ in 0..3 {
        assert_eq!(receive_up_to(&sqs, &url, 10).await.len(), 10);
    }
    send_grouped(&sqs, &url, "small 0", "small").await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("no group")
        .send()
        .await
        .unwrap();

    let got = receive_up_to(&sqs, &url, 3).await;
    let bodies: Vec<&str> = got.iter().map(|m| m.body().unwrap()).collect();
    assert_eq!(
        bodies,
        ["small 0", "no group", "big 30"],
        "the quiet messages first, though 30 of big's are older; then big's backlog"
    );

    let metrics = get_text(&format!("{}/metrics", server.url)).await;
    for line in [
        "ssq_queue_noisy_groups{queue=\"tenants\"} 1",
        "ssq_queue_quiet_group_messages{queue=\"tenants\",state=\"in_flight\"} 2",
        "ssq_queue_quiet_group_messages{queue=\"tenants\",state=\"visible\"} 0",
        "ssq_queue_messages{queue=\"tenants\",state=\"visible\"} 29",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    let overview: serde_json::Value =
        serde_json::from_str(&get_text(&format!("{}/admin/api/overview", server.url)).await).unwrap();
    let noisy = &overview["queues"][0]["noisy_groups"];
    assert_eq!(noisy.as_array().unwrap().len(), 1, "{noisy}");
    assert_eq!(
        (&noisy[0]["group"], &noisy[0]["messages"], &noisy[0]["in_flight"]),
        (&"big".into(), &60.into(), &31.into())
    );
}
