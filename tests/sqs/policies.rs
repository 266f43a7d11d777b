//! Identity policies (a key's `policy` in the credentials file), enforced
//! as AWS does and tried as an attacker would: a key allowed one action on
//! one queue gets nothing else (other actions, other queues, listing,
//! SNS), NotAction with wildcards, an explicit deny beating an allow, and a
//! condition on the caller's address, over AWS JSON and the Query protocol;
//! a key without a policy keeps full access.

use aws_sdk_sqs::error::ProvideErrorMetadata;

use crate::common::{Server, client_signing_with, create_queue_url, sns_client_signing_with};
use crate::sigv4::{Signing, send_raw, sign_query_post};

const WRITER_POLICY: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Action": ["sqs:SendMessage", "sqs:GetQueueUrl"], "Resource": "arn:aws:sqs:*:000000000000:orders"},
    {"Effect": "Allow", "NotAction": "sqs:Delete*", "Resource": "arn:aws:sqs:*:*:open-*"},
    {"Effect": "Deny", "Action": "sqs:*", "Resource": "*", "Condition": {"NotIpAddress": {"aws:SourceIp": "127.0.0.0/8"}}},
    {"Effect": "Deny", "Action": "sqs:PurgeQueue", "Resource": "*"}
  ]
}"#;

const ELSEWHERE_POLICY: &str = r#"{
  "Statement": [
    {"Effect": "Allow", "Action": "*", "Resource": "*"},
    {"Effect": "Deny", "Action": "*", "Resource": "*", "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}
  ]
}"#;

/// The code and message of a refused call.
fn refusal<T: std::fmt::Debug, E: ProvideErrorMetadata + std::fmt::Debug>(
    result: Result<T, E>,
) -> (String, String) {
    let error = result.expect_err("the call should be refused");
    (
        error.code().unwrap_or("none").to_string(),
        error.message().unwrap_or_default().to_string(),
    )
}

#[tokio::test]
async fn a_key_may_do_only_what_its_policy_allows() {
    let dir = std::env::temp_dir().join(format!("ssq-policies-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("credentials.toml");
    std::fs::write(
        &path,
        format!(
            "[[keys]]\nid = \"AKIDADMIN\"\nsecret = \"admin\"\n\n\
             [[keys]]\nid = \"AKIDWRITER\"\nsecret = \"writer\"\npolicy = '''{WRITER_POLICY}'''\n\n\
             [[keys]]\nid = \"AKIDREMOTE\"\nsecret = \"remote\"\npolicy = '''{ELSEWHERE_POLICY}'''\n"
        ),
    )
    .unwrap();
    let server = Server::start_with(&["--credentials", path.to_str().unwrap()]);
    let admin = client_signing_with(&server.url, "AKIDADMIN", "admin");
    let orders = create_queue_url(&admin, "orders", &[]).await;
    let open = create_queue_url(&admin, "open-jobs", &[]).await;
    let private = create_queue_url(&admin, "private", &[]).await;
    admin.list_queues().send().await.expect("no policy: full access");

    let writer = client_signing_with(&server.url, "AKIDWRITER", "writer");
    // Allowed: the one action on the one queue; everything but deletes on open-*.
    writer
        .send_message()
        .queue_url(&orders)
        .message_body("o")
        .send()
        .await
        .unwrap();
    writer.get_queue_url().queue_name("orders").send().await.unwrap();
    writer
        .send_message()
        .queue_url(&open)
        .message_body("j")
        .send()
        .await
        .unwrap();
    let received = writer.receive_message().queue_url(&open).send().await.unwrap();
    assert_eq!(received.messages().len(), 1);

    // Refused: other actions, other queues, listing, deletes, an explicit deny.
    let (code, message) = refusal(writer.receive_message().queue_url(&orders).send().await);
    assert_eq!(code, "AccessDenied");
    assert!(
        message.contains("not authorized to perform: sqs:ReceiveMessage on resource: arn:aws:sqs:us-east-1:000000000000:orders because no identity-based policy allows"),
        "{message}"
    );
    assert_eq!(
        refusal(
            writer
                .send_message()
                .queue_url(&private)
                .message_body("x")
                .send()
                .await
        )
        .0,
        "AccessDenied"
    );
    assert_eq!(refusal(writer.list_queues().send().await).0, "AccessDenied");
    assert_eq!(
        refusal(writer.delete_queue().queue_url(&open).send().await).0,
        "AccessDenied"
    );
    let (code, message) = refusal(writer.purge_queue().queue_url(&open).send().await);
    assert_eq!(code, "AccessDenied");
    assert!(message.contains("with an explicit deny"), "{message}");
    assert_eq!(
        refusal(writer.create_queue().queue_name("new").send().await).0,
        "AccessDenied"
    );

    // The Query protocol meets the same policy: a send allowed, a receive not.
    let query = |action: &str, extra: &[(&str, &str)]| {
        let mut pairs = vec![
            ("Action", action),
            ("Version", "2012-11-05"),
            ("QueueUrl", orders.as_str()),
        ];
        pairs.extend_from_slice(extra);
        serde_urlencoded::to_string(&pairs).unwrap()
    };
    let as_writer = || Signing {
        key: ("AKIDWRITER", "writer"),
        ..Signing::default()
    };
    let sent = query("SendMessage", &[("MessageBody", "q")]);
    let (url, headers) = sign_query_post(&server, "/", &sent, as_writer());
    let (status, body) = send_raw(&url, &headers, &sent).await;
    assert_eq!(status, 200, "{body}");
    let receive = query("ReceiveMessage", &[]);
    let (url, headers) = sign_query_post(&server, "/", &receive, as_writer());
    let (status, body) = send_raw(&url, &headers, &receive).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("<Code>AccessDenied</Code>") && body.contains("sqs:ReceiveMessage on resource"),
        "{body}"
    );

    // SNS through the same policy: nothing there is allowed.
    let writer_sns = sns_client_signing_with(&server.url, "AKIDWRITER", "writer");
    let (code, message) = refusal(writer_sns.create_topic().name("events").send().await);
    assert_eq!(code, "AuthorizationError", "{message}");
    assert!(
        message.contains("sns:CreateTopic on resource: arn:aws:sns:us-east-1:000000000000:events"),
        "{message}"
    );
    assert_eq!(
        refusal(writer_sns.list_topics().send().await).0,
        "AuthorizationError"
    );

    // A condition on the caller's address: this key is for elsewhere.
    let remote = client_signing_with(&server.url, "AKIDREMOTE", "remote");
    let (code, message) = refusal(
        remote
            .send_message()
            .queue_url(&orders)
            .message_body("r")
            .send()
            .await,
    );
    assert_eq!(code, "AccessDenied");
    assert!(message.contains("explicit deny"), "{message}");

    // Nothing the refused calls asked for happened.
    let left = admin.list_queues().send().await.unwrap();
    assert_eq!(left.queue_urls().len(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}
