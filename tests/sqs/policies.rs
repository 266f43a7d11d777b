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

/// A batch call needs its single action's permission, as in AWS (there is
/// no `sqs:SendMessageBatch`): a Deny of SendMessage in a key's policy or
/// in the queue's binds SendMessageBatch, and an Allow of it (a key's, or
/// another account's grant through AddPermission) lets it through; the
/// refusal and the audit trail name the single action. Over AWS JSON and
/// the Query protocol.
#[tokio::test]
async fn a_batch_call_is_governed_by_its_single_action() {
    use crate::sigv4::{Wire, signed_call};
    let (server, dir, log) = crate::audit::audited_server(
        "ssq-batch-policies",
        r#"[[keys]]
id = "AKIDADMIN"
secret = "admin"

[[keys]]
id = "AKIDNOSEND"
secret = "nosend"
policy = '{"Statement": [{"Effect": "Allow", "Action": "sqs:*", "Resource": "*"}, {"Effect": "Deny", "Action": ["sqs:SendMessage", "sqs:ChangeMessageVisibility"], "Resource": "*"}]}'

[[keys]]
id = "AKIDSENDER"
secret = "sender"
policy = '{"Statement": {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}}'

[[keys]]
id = "AKIDOTHER"
secret = "other"
account = "111111111111"
"#,
    );
    let admin = client_signing_with(&server.url, "AKIDADMIN", "admin");
    let deny_deletes = r#"{"Statement": [{"Effect": "Deny", "Principal": "*", "Action": "sqs:DeleteMessage", "Resource": "*"}]}"#;
    let url = create_queue_url(&admin, "batched", &[("Policy", deny_deletes)]).await;
    admin
        .add_permission()
        .queue_url(&url)
        .label("other-sends")
        .aws_account_ids("111111111111")
        .actions("SendMessage")
        .send()
        .await
        .unwrap();
    admin
        .send_message()
        .queue_url(&url)
        .message_body("first")
        .send()
        .await
        .unwrap();
    let received = admin
        .receive_message()
        .queue_url(&url)
        .visibility_timeout(60)
        .send()
        .await
        .unwrap();
    let receipt = received.messages()[0].receipt_handle().unwrap().to_string();

    // A batch of one entry of `action` with `members` beside its Id: the
    // action, its JSON body and its Query parameters.
    let batch = |action: &str, entry_kind: &str, members: &[(&str, &str)]| {
        let mut entry = serde_json::json!({"Id": "e1"});
        let mut query = vec![
            ("QueueUrl".to_string(), url.clone()),
            (format!("{entry_kind}.1.Id"), "e1".to_string()),
        ];
        for (member, value) in members {
            entry[*member] = match *member {
                "VisibilityTimeout" => serde_json::json!(value.parse::<i64>().unwrap()),
                _ => serde_json::json!(value),
            };
            query.push((format!("{entry_kind}.1.{member}"), value.to_string()));
        }
        let json = serde_json::json!({"QueueUrl": url, "Entries": [entry]});
        (action.to_string(), json, query)
    };
    let call = |key: (&'static str, &'static str),
                wire: Wire,
                (action, json, query): (String, serde_json::Value, Vec<(String, String)>)| {
        let server = &server;
        async move {
            let query: Vec<(&str, String)> = query.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            signed_call(server, key, "sqs", wire, &action, &json, &query).await
        }
    };
    for wire in [Wire::Json, Wire::Query] {
        let sends = |body: &str| {
            batch(
                "SendMessageBatch",
                "SendMessageBatchRequestEntry",
                &[("MessageBody", body)],
            )
        };
        let (status, body) = call(("AKIDNOSEND", "nosend"), wire, sends("refused")).await;
        assert_eq!(
            status, 403,
            "{wire:?}: a Deny of SendMessage binds SendMessageBatch: {body}"
        );
        assert!(
            body.contains("AccessDenied")
                && body.contains("not authorized to perform: sqs:SendMessage on resource")
                && body.contains("with an explicit deny"),
            "{wire:?}: the refusal names the single action: {body}"
        );
        let changes = batch(
            "ChangeMessageVisibilityBatch",
            "ChangeMessageVisibilityBatchRequestEntry",
            &[("ReceiptHandle", &receipt), ("VisibilityTimeout", "5")],
        );
        let (status, body) = call(("AKIDNOSEND", "nosend"), wire, changes).await;
        assert_eq!(status, 403, "{wire:?}: {body}");
        assert!(
            body.contains("sqs:ChangeMessageVisibility on resource"),
            "{wire:?}: {body}"
        );

        let (status, body) = call(("AKIDSENDER", "sender"), wire, sends(&format!("sender-{wire:?}"))).await;
        assert_eq!(
            status, 200,
            "{wire:?}: an Allow of SendMessage lets its batch through: {body}"
        );
        assert!(!body.contains("SenderFault"), "{wire:?}: no entry failed: {body}");

        let (status, body) = call(("AKIDOTHER", "other"), wire, sends(&format!("other-{wire:?}"))).await;
        assert_eq!(
            status, 200,
            "{wire:?}: AddPermission's SendMessage grants its batch: {body}"
        );

        let deletes = batch(
            "DeleteMessageBatch",
            "DeleteMessageBatchRequestEntry",
            &[("ReceiptHandle", &receipt)],
        );
        let (status, body) = call(("AKIDADMIN", "admin"), wire, deletes).await;
        assert_eq!(
            status, 403,
            "{wire:?}: the queue's Deny of DeleteMessage binds its batch: {body}"
        );
        assert!(body.contains("AccessDenied"), "{wire:?}: {body}");
    }

    // What went through is there, and what was refused is not.
    let mut bodies = Vec::new();
    for _ in 0..5 {
        let got = admin
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap();
        bodies.extend(got.messages().iter().filter_map(|m| m.body().map(str::to_string)));
    }
    bodies.sort();
    assert_eq!(
        bodies,
        ["other-Json", "other-Query", "sender-Json", "sender-Query"]
    );

    // The trail names the permission the batch needed.
    let read = || -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    crate::common::wait_for(std::time::Duration::from_secs(5), || async { read().len() >= 6 })
        .await
        .expect("six refusals in the audit trail");
    let lines = read();
    let refused_send = lines
        .iter()
        .find(|line| line["action"] == "SendMessageBatch")
        .expect("the refused SendMessageBatch");
    assert_eq!(refused_send["permission"], "sqs:SendMessage", "{refused_send}");
    std::fs::remove_dir_all(&dir).unwrap();
}
