//! Accounts, tried as an attacker would: with a key of account A, every
//! action of SQS (over AWS JSON and the Query protocol) and of SNS aimed at
//! account B's queue, topic and subscription is refused, and B finds its
//! queue, message, attributes, tags, topic and subscription as it left
//! them; a topic of A subscribed to B's queue (a confused deputy) delivers
//! nothing to it. Names repeat freely across accounts, and each account
//! lists only its own.

use aws_sdk_sqs::types::QueueAttributeName;

use crate::common::{
    Server, client_signing_with, create_queue_url, create_topic, receive_bodies, sns_client_signing_with,
    subscribe_queue,
};
use crate::sigv4::{Wire, signed_call};

const A: &str = "111111111111";
const B: &str = "222222222222";
const KEYS: &str = "[[keys]]\nid = \"AKIDA\"\nsecret = \"a-secret\"\naccount = \"111111111111\"\n\n\
                    [[keys]]\nid = \"AKIDB\"\nsecret = \"b-secret\"\naccount = \"222222222222\"\n\n\
                    [[keys]]\nid = \"AKIDHOME\"\nsecret = \"home-secret\"\n\n\
                    [[keys]]\nid = \"AKIDASENDER\"\nsecret = \"sender\"\naccount = \"111111111111\"\n\
                    policy = '{\"Statement\": {\"Effect\": \"Allow\", \"Action\": \"sqs:SendMessage\", \"Resource\": \"arn:aws:sqs:*:*:shared\"}}'\n";

/// A queue policy that lets the topic `topic` (its ARN) send to the queue,
/// as AWS's console writes it.
fn topic_may_send(topic: &str) -> String {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": "sns.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": "*",
            "Condition": {"ArnEquals": {"aws:SourceArn": topic}}
        }]
    })
    .to_string()
}

/// An ssq with `--credentials` holding `keys` (TOML), and the directory of
/// the file, for the test to remove.
fn server_with_keys(test: &str, keys: &str) -> (Server, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("credentials.toml");
    std::fs::write(&path, keys).unwrap();
    let server = Server::start_with(&["--credentials", path.to_str().unwrap()]);
    (server, dir)
}

/// A call signed with account A's key (see [`signed_call`]).
async fn call_as_a(
    server: &Server,
    service: &'static str,
    wire: Wire,
    action: &str,
    json: &serde_json::Value,
    query: &[(&str, String)],
) -> (u16, String) {
    signed_call(server, ("AKIDA", "a-secret"), service, wire, action, json, query).await
}

/// A Query call's parameters, beside its action.
type Parameters = Vec<(&'static str, String)>;

/// Every SQS action, aimed at B's queue (`q`), its dead-letter queue (URL
/// and ARN) and a move task handle naming it: the JSON body and the Query
/// parameters. (CreateQueue and ListQueues name no other account's queue:
/// they are tried below, for what they create and list.)
fn sqs_attacks(q: &str, dlq: &str, dlq_arn: &str) -> Vec<(&'static str, serde_json::Value, Parameters)> {
    use serde_json::json;
    let handle = {
        use base64::Engine;
        let task = json!({"taskId": "forged", "sourceArn": dlq_arn}).to_string();
        base64::engine::general_purpose::STANDARD.encode(task)
    };
    let receipt = "AQEBforged".to_string();
    let s = |text: &str| text.to_string();
    vec![
        (
            "GetQueueUrl",
            json!({"QueueName": "victim", "QueueOwnerAWSAccountId": B}),
            vec![("QueueName", s("victim")), ("QueueOwnerAWSAccountId", s(B))],
        ),
        ("DeleteQueue", json!({"QueueUrl": q}), vec![("QueueUrl", s(q))]),
        (
            "GetQueueAttributes",
            json!({"QueueUrl": q, "AttributeNames": ["All"]}),
            vec![("QueueUrl", s(q)), ("AttributeName.1", s("All"))],
        ),
        (
            "SetQueueAttributes",
            json!({"QueueUrl": q, "Attributes": {"VisibilityTimeout": "1"}}),
            vec![
                ("QueueUrl", s(q)),
                ("Attribute.1.Name", s("VisibilityTimeout")),
                ("Attribute.1.Value", s("1")),
            ],
        ),
        ("PurgeQueue", json!({"QueueUrl": q}), vec![("QueueUrl", s(q))]),
        (
            "SendMessage",
            json!({"QueueUrl": q, "MessageBody": "forged"}),
            vec![("QueueUrl", s(q)), ("MessageBody", s("forged"))],
        ),
        (
            "SendMessageBatch",
            json!({"QueueUrl": q, "Entries": [{"Id": "1", "MessageBody": "forged"}]}),
            vec![
                ("QueueUrl", s(q)),
                ("SendMessageBatchRequestEntry.1.Id", s("1")),
                ("SendMessageBatchRequestEntry.1.MessageBody", s("forged")),
            ],
        ),
        ("ReceiveMessage", json!({"QueueUrl": q}), vec![("QueueUrl", s(q))]),
        (
            "DeleteMessage",
            json!({"QueueUrl": q, "ReceiptHandle": receipt}),
            vec![("QueueUrl", s(q)), ("ReceiptHandle", receipt.clone())],
        ),
        (
            "DeleteMessageBatch",
            json!({"QueueUrl": q, "Entries": [{"Id": "1", "ReceiptHandle": receipt}]}),
            vec![
                ("QueueUrl", s(q)),
                ("DeleteMessageBatchRequestEntry.1.Id", s("1")),
                ("DeleteMessageBatchRequestEntry.1.ReceiptHandle", receipt.clone()),
            ],
        ),
        (
            "ChangeMessageVisibility",
            json!({"QueueUrl": q, "ReceiptHandle": receipt, "VisibilityTimeout": 0}),
            vec![
                ("QueueUrl", s(q)),
                ("ReceiptHandle", receipt.clone()),
                ("VisibilityTimeout", s("0")),
            ],
        ),
        (
            "ChangeMessageVisibilityBatch",
            json!({"QueueUrl": q, "Entries": [{"Id": "1", "ReceiptHandle": receipt, "VisibilityTimeout": 0}]}),
            vec![
                ("QueueUrl", s(q)),
                ("ChangeMessageVisibilityBatchRequestEntry.1.Id", s("1")),
                (
                    "ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle",
                    receipt.clone(),
                ),
                (
                    "ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout",
                    s("0"),
                ),
            ],
        ),
        (
            "TagQueue",
            json!({"QueueUrl": q, "Tags": {"team": "a"}}),
            vec![
                ("QueueUrl", s(q)),
                ("Tag.1.Key", s("team")),
                ("Tag.1.Value", s("a")),
            ],
        ),
        (
            "UntagQueue",
            json!({"QueueUrl": q, "TagKeys": ["team"]}),
            vec![("QueueUrl", s(q)), ("TagKey.1", s("team"))],
        ),
        ("ListQueueTags", json!({"QueueUrl": q}), vec![("QueueUrl", s(q))]),
        (
            "AddPermission",
            json!({"QueueUrl": q, "Label": "l", "AWSAccountIds": [A], "Actions": ["SendMessage"]}),
            vec![
                ("QueueUrl", s(q)),
                ("Label", s("l")),
                ("AWSAccountId.1", s(A)),
                ("ActionName.1", s("SendMessage")),
            ],
        ),
        (
            "RemovePermission",
            json!({"QueueUrl": q, "Label": "kept"}),
            vec![("QueueUrl", s(q)), ("Label", s("kept"))],
        ),
        (
            "ListDeadLetterSourceQueues",
            json!({"QueueUrl": dlq}),
            vec![("QueueUrl", s(dlq))],
        ),
        (
            "StartMessageMoveTask",
            json!({"SourceArn": dlq_arn}),
            vec![("SourceArn", s(dlq_arn))],
        ),
        (
            "ListMessageMoveTasks",
            json!({"SourceArn": dlq_arn}),
            vec![("SourceArn", s(dlq_arn))],
        ),
        (
            "CancelMessageMoveTask",
            json!({"TaskHandle": handle}),
            vec![("TaskHandle", handle.clone())],
        ),
    ]
}

/// Every SNS action that names a topic or subscription, aimed at B's.
fn sns_attacks(topic: &str, subscription: &str, a_queue_arn: &str) -> Vec<(&'static str, Parameters)> {
    let s = |text: &str| text.to_string();
    let t = || ("TopicArn", s(topic));
    let r = || ("ResourceArn", s(topic));
    let sub = || ("SubscriptionArn", s(subscription));
    vec![
        ("GetTopicAttributes", vec![t()]),
        (
            "SetTopicAttributes",
            vec![
                t(),
                ("AttributeName", s("DisplayName")),
                ("AttributeValue", s("owned")),
            ],
        ),
        ("DeleteTopic", vec![t()]),
        (
            "Subscribe",
            vec![t(), ("Protocol", s("sqs")), ("Endpoint", s(a_queue_arn))],
        ),
        ("ConfirmSubscription", vec![t(), ("Token", s("forged"))]),
        ("ListSubscriptionsByTopic", vec![t()]),
        ("Publish", vec![t(), ("Message", s("forged"))]),
        (
            "PublishBatch",
            vec![
                t(),
                ("PublishBatchRequestEntries.member.1.Id", s("1")),
                ("PublishBatchRequestEntries.member.1.Message", s("forged")),
            ],
        ),
        (
            "AddPermission",
            vec![
                t(),
                ("Label", s("l")),
                ("AWSAccountId.member.1", s(A)),
                ("ActionName.member.1", s("Publish")),
            ],
        ),
        ("RemovePermission", vec![t(), ("Label", s("l"))]),
        (
            "TagResource",
            vec![
                r(),
                ("Tags.member.1.Key", s("team")),
                ("Tags.member.1.Value", s("a")),
            ],
        ),
        ("UntagResource", vec![r(), ("TagKeys.member.1", s("team"))]),
        ("ListTagsForResource", vec![r()]),
        ("GetDataProtectionPolicy", vec![r()]),
        (
            "PutDataProtectionPolicy",
            vec![r(), ("DataProtectionPolicy", s("{}"))],
        ),
        ("GetSubscriptionAttributes", vec![sub()]),
        (
            "SetSubscriptionAttributes",
            vec![
                sub(),
                ("AttributeName", s("RawMessageDelivery")),
                ("AttributeValue", s("false")),
            ],
        ),
        ("Unsubscribe", vec![sub()]),
    ]
}

#[tokio::test]
async fn nothing_crosses_from_one_account_to_another() {
    let (server, dir) = server_with_keys("ssq-accounts", KEYS);

    // Account B's queue (with a dead-letter queue, a tag, a policy that
    // lets B's topic send, a permission and a message), topic and raw
    // subscription.
    let b = client_signing_with(&server.url, "AKIDB", "b-secret");
    let dlq = create_queue_url(&b, "victim-dlq", &[]).await;
    assert_eq!(dlq, format!("{}/{B}/victim-dlq", server.url));
    let dlq_arn = format!("arn:aws:sqs:us-east-1:{B}:victim-dlq");
    let redrive = format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"5"}}"#);
    let topic_sends = topic_may_send(&format!("arn:aws:sns:us-east-1:{B}:victim-topic"));
    let victim = create_queue_url(
        &b,
        "victim",
        &[("RedrivePolicy", &redrive), ("Policy", &topic_sends)],
    )
    .await;
    b.tag_queue()
        .queue_url(&victim)
        .tags("team", "b")
        .send()
        .await
        .unwrap();
    b.add_permission()
        .queue_url(&victim)
        .label("kept")
        .aws_account_ids(B)
        .actions("SendMessage")
        .send()
        .await
        .unwrap();
    b.send_message()
        .queue_url(&victim)
        .message_body("secret")
        .send()
        .await
        .unwrap();
    let victim_arn = format!("arn:aws:sqs:us-east-1:{B}:victim");
    let b_sns = sns_client_signing_with(&server.url, "AKIDB", "b-secret");
    let topic = create_topic(&b_sns, "victim-topic").await;
    assert_eq!(topic, format!("arn:aws:sns:us-east-1:{B}:victim-topic"));
    let subscription = b_sns
        .subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint(&victim_arn)
        .attributes("RawMessageDelivery", "true")
        .send()
        .await
        .unwrap()
        .subscription_arn()
        .unwrap()
        .to_string();

    // Account A: the same names are its own.
    let a = client_signing_with(&server.url, "AKIDA", "a-secret");
    let own = create_queue_url(&a, "victim", &[]).await;
    assert_eq!(own, format!("{}/{A}/victim", server.url));
    let a_queue_arn = format!("arn:aws:sqs:us-east-1:{A}:victim");
    let a_sns = sns_client_signing_with(&server.url, "AKIDA", "a-secret");
    let own_topic = create_topic(&a_sns, "victim-topic").await;
    assert_eq!(own_topic, format!("arn:aws:sns:us-east-1:{A}:victim-topic"));
    assert_eq!(
        a.get_queue_url()
            .queue_name("victim")
            .send()
            .await
            .unwrap()
            .queue_url(),
        Some(own.as_str())
    );

    // Every SQS action on B's queue, in both wire formats: refused.
    let mut refused = 0;
    for (action, json, query) in sqs_attacks(&victim, &dlq, &dlq_arn) {
        for wire in [Wire::Json, Wire::Query] {
            let (status, body) = call_as_a(&server, "sqs", wire, action, &json, &query).await;
            // Move tasks too, which name their queue by ARN: refused as
            // any call on another account's queue, not "not found".
            assert!(
                status == 403 && body.contains("AccessDenied") && body.contains("is denied."),
                "{action} over {wire:?} with another account's key: {status} {body}"
            );
            assert!(!body.contains("secret"), "{action} over {wire:?} leaked: {body}");
            refused += 1;
        }
    }
    assert_eq!(refused, 42);

    // Every SNS action on B's topic and subscription: refused.
    for (action, query) in sns_attacks(&topic, &subscription, &a_queue_arn) {
        let (status, body) = call_as_a(
            &server,
            "sns",
            Wire::Query,
            action,
            &serde_json::Value::Null,
            &query,
        )
        .await;
        assert_eq!(status, 403, "{action} with another account's key: {body}");
        assert!(body.contains("AuthorizationError"), "{action}: {body}");
        assert!(
            body.contains(&format!("arn:aws:iam::{A}:user/AKIDA")),
            "{action}: {body}"
        );
    }

    // A confused deputy: A's own topic, subscribed to B's queue, publishes.
    a_sns
        .subscribe()
        .topic_arn(&own_topic)
        .protocol("sqs")
        .endpoint(&victim_arn)
        .attributes("RawMessageDelivery", "true")
        .send()
        .await
        .ok();
    a_sns
        .publish()
        .topic_arn(&own_topic)
        .message("forged")
        .send()
        .await
        .unwrap();
    // B's own topic still delivers to B's queue.
    b_sns
        .publish()
        .topic_arn(&topic)
        .message("from-b")
        .send()
        .await
        .unwrap();

    // Each account lists only its own; the home account has none of theirs.
    let listed = |urls: &[String]| {
        let mut urls = urls.to_vec();
        urls.sort();
        urls
    };
    let a_list = a.list_queues().send().await.unwrap();
    assert_eq!(listed(a_list.queue_urls()), vec![own.clone()]);
    let b_list = b.list_queues().send().await.unwrap();
    assert_eq!(listed(b_list.queue_urls()), vec![victim.clone(), dlq.clone()]);
    let home = client_signing_with(&server.url, "AKIDHOME", "home-secret");
    assert!(home.list_queues().send().await.unwrap().queue_urls().is_empty());
    let a_topics = a_sns.list_topics().send().await.unwrap();
    let a_topics: Vec<_> = a_topics.topics().iter().filter_map(|t| t.topic_arn()).collect();
    assert_eq!(a_topics, vec![own_topic.as_str()]);
    let a_subscriptions = a_sns.list_subscriptions().send().await.unwrap();
    assert!(
        a_subscriptions
            .subscriptions()
            .iter()
            .all(|s| s.topic_arn() == Some(own_topic.as_str())),
        "{a_subscriptions:?}"
    );

    // B finds everything as it left it.
    let attributes = b
        .get_queue_attributes()
        .queue_url(&victim)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap();
    let attributes = attributes.attributes().unwrap();
    assert_eq!(attributes[&QueueAttributeName::VisibilityTimeout], "30");
    assert!(attributes[&QueueAttributeName::Policy].contains("kept"));
    let tags = b.list_queue_tags().queue_url(&victim).send().await.unwrap();
    assert_eq!(tags.tags().unwrap().get("team").map(String::as_str), Some("b"));
    let mut bodies = receive_bodies(&b, &victim, 10).await;
    bodies.sort();
    assert_eq!(bodies, vec!["from-b".to_string(), "secret".to_string()]);
    let b_topic = b_sns
        .get_topic_attributes()
        .topic_arn(&topic)
        .send()
        .await
        .unwrap();
    assert_ne!(
        b_topic
            .attributes()
            .unwrap()
            .get("DisplayName")
            .map(String::as_str),
        Some("owned")
    );
    let b_subscriptions = b_sns
        .list_subscriptions_by_topic()
        .topic_arn(&topic)
        .send()
        .await
        .unwrap();
    assert_eq!(b_subscriptions.subscriptions().len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An account's quotas hold over all its keys: its request rate (two keys
/// together get no more than the account's 5 a second, while another
/// account at the same moment is never refused) and its queue count.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_account_has_its_own_rate_and_queue_quota_over_all_its_keys() {
    let (server, dir) = server_with_keys(
        "ssq-account-quotas",
        &format!(
            "[[keys]]\nid = \"AKIDA1\"\nsecret = \"a1\"\naccount = \"{A}\"\n\n\
             [[keys]]\nid = \"AKIDA2\"\nsecret = \"a2\"\naccount = \"{A}\"\n\n\
             [[keys]]\nid = \"AKIDB\"\nsecret = \"b\"\naccount = \"{B}\"\n\n\
             [[accounts]]\nid = \"{A}\"\nrequests_per_second = 5\nmax_queues = 2\n"
        ),
    );
    let once = |key: &str, secret: &str| {
        let client = client_signing_with(&server.url, key, secret);
        aws_sdk_sqs::Client::from_conf(
            client
                .config()
                .to_builder()
                .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
                .build(),
        )
    };
    let (a1, a2, b) = (
        once("AKIDA1", "a1"),
        once("AKIDA2", "a2"),
        client_signing_with(&server.url, "AKIDB", "b"),
    );

    // Queues: two for A, whichever key; a third is refused, an existing one
    // is still confirmed. B is not counted with A.
    let first = create_queue_url(&client_signing_with(&server.url, "AKIDA1", "a1"), "one", &[]).await;
    create_queue_url(&client_signing_with(&server.url, "AKIDA2", "a2"), "two", &[]).await;
    let refused = a2.create_queue().queue_name("three").send().await.unwrap_err();
    let refused = refused.into_service_error();
    assert_eq!(refused.meta().code(), Some("OverLimit"), "{refused:?}");
    assert!(
        refused
            .meta()
            .message()
            .unwrap_or_default()
            .contains("max_queues"),
        "{refused:?}"
    );
    for name in ["one", "two", "three"] {
        create_queue_url(&b, name, &[]).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        a1.create_queue()
            .queue_name("one")
            .send()
            .await
            .unwrap()
            .queue_url(),
        Some(first.as_str())
    );

    // Rate: 30 calls at once from A's two keys, 100 from B's.
    let victim = create_queue_url(&b, "busy", &[]).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let started = std::time::Instant::now();
    let calls = |client: &aws_sdk_sqs::Client, url: &str, count: usize| {
        let calls: Vec<_> = (0..count)
            .map(|_| tokio::spawn(client.send_message().queue_url(url).message_body("x").send()))
            .collect();
        async move {
            let mut results = Vec::new();
            for call in calls {
                results.push(call.await.unwrap().map_err(|error| {
                    error
                        .into_service_error()
                        .meta()
                        .code()
                        .unwrap_or("none")
                        .to_string()
                }));
            }
            results
        }
    };
    let (from_a1, from_a2, from_b) = tokio::join!(
        calls(&a1, &first, 15),
        calls(&a2, &first, 15),
        calls(&b, &victim, 100)
    );
    let elapsed = started.elapsed().as_secs_f64();
    assert!(
        from_b.iter().all(Result::is_ok),
        "account B was refused: {from_b:?}"
    );
    let from_a: Vec<_> = from_a1.into_iter().chain(from_a2).collect();
    let passed = from_a.iter().filter(|sent| sent.is_ok()).count();
    let codes: Vec<&String> = from_a.iter().filter_map(|sent| sent.as_ref().err()).collect();
    assert!(codes.iter().all(|code| *code == "RequestThrottled"), "{codes:?}");
    assert!(
        passed as f64 <= 5.0 + elapsed * 5.0 + 1.0,
        "{passed} of A's calls passed in {elapsed:.2} s at 5 a second for the account"
    );
    let (_, metrics) = server.get("/metrics").await.unwrap();
    let count = |prefix: String| -> u64 {
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .and_then(|count| count.trim().parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(
        count(format!("ssq_account_throttled_total{{account=\"{A}\"}}")),
        codes.len() as u64
    );
    assert_eq!(
        count(format!("ssq_account_throttled_total{{account=\"{B}\"}}")),
        0
    );
    assert!(count(format!("ssq_account_requests_total{{account=\"{B}\"}}")) >= 104);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The admin page with accounts: a key signs in only with an admin grant;
/// an account's admin sees and acts on that account alone, and may not
/// export the snapshot; an admin of all sees every account.
#[tokio::test]
async fn an_accounts_admin_sees_and_acts_on_its_account_alone() {
    let (server, dir) = server_with_keys(
        "ssq-account-admins",
        &format!(
            "[[keys]]\nid = \"AKIDROOT\"\nsecret = \"root\"\nadmin = \"all\"\n\n\
             [[keys]]\nid = \"AKIDA\"\nsecret = \"a\"\naccount = \"{A}\"\nadmin = \"account\"\n\n\
             [[keys]]\nid = \"AKIDA2\"\nsecret = \"a2\"\naccount = \"{A}\"\n\n\
             [[keys]]\nid = \"AKIDB\"\nsecret = \"b\"\naccount = \"{B}\"\n"
        ),
    );
    let a = client_signing_with(&server.url, "AKIDA", "a");
    let b = client_signing_with(&server.url, "AKIDB", "b");
    let a_queue = create_queue_url(&a, "mine", &[]).await;
    let b_queue = create_queue_url(&b, "mine", &[]).await;
    b.send_message()
        .queue_url(&b_queue)
        .message_body("b's")
        .send()
        .await
        .unwrap();
    for (key, secret) in [("AKIDA", "a"), ("AKIDB", "b")] {
        create_topic(&sns_client_signing_with(&server.url, key, secret), "news").await;
    }

    let http = reqwest::Client::new();
    let get = |path: &str, key: &str, secret: &str| {
        http.get(format!("{}{path}", server.url))
            .basic_auth(key, Some(secret))
            .send()
    };
    let overview = |key: &'static str, secret: &'static str| {
        let asked = get("/admin/api/overview", key, secret);
        async move {
            let text = asked.await.unwrap().text().await.unwrap();
            let overview: serde_json::Value = serde_json::from_str(&text).unwrap();
            let names = |list: &str, field: &str| {
                let mut names: Vec<String> = overview[list]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|item| item[field].as_str().unwrap().to_string())
                    .collect();
                names.sort();
                names
            };
            (names("queues", "key"), names("topics", "arn"))
        }
    };

    // No admin grant: no sign-in.
    assert_eq!(
        get("/admin/api/overview", "AKIDA2", "a2").await.unwrap().status(),
        401
    );
    // A's admin: A's queue and topic only.
    let (queues, topics) = overview("AKIDA", "a").await;
    assert_eq!(queues, vec![format!("{A}/us-east-1/mine")]);
    assert_eq!(topics, vec![format!("arn:aws:sns:us-east-1:{A}:news")]);
    let b_key = format!("{B}/us-east-1/mine");
    for path in [
        format!("/admin/api/messages?queue={b_key}"),
        format!("/admin/api/depth?queue={b_key}"),
    ] {
        let answer = get(&path, "AKIDA", "a").await.unwrap();
        let (status, text) = (answer.status(), answer.text().await.unwrap());
        assert_eq!(
            (status.as_u16(), text.contains("QueueDoesNotExist")),
            (400, true),
            "{path}: {text}"
        );
    }
    assert_eq!(
        get("/admin/api/snapshot", "AKIDA", "a").await.unwrap().status(),
        403
    );
    let page = get("/", "AKIDA", "a").await.unwrap().text().await.unwrap();
    let token = crate::common::admin_page_token(&page);
    let purge = |queue: &str| {
        http.post(format!("{}/admin/api/sqs", server.url))
            .basic_auth("AKIDA", Some("a"))
            .header("x-ssq-csrf", &token)
            .header("x-amz-target", "AmazonSQS.PurgeQueue")
            .header("content-type", "application/x-amz-json-1.0")
            .body(serde_json::json!({ "QueueUrl": queue }).to_string())
            .send()
    };
    assert_eq!(
        purge(&b_queue).await.unwrap().status(),
        403,
        "another account's queue"
    );
    assert_eq!(purge(&a_queue).await.unwrap().status(), 200, "its own");
    let publish = http
        .post(format!("{}/admin/api/sns", server.url))
        .basic_auth("AKIDA", Some("a"))
        .header("x-ssq-csrf", &token)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "Action=Publish&TopicArn=arn:aws:sns:us-east-1:{B}:news&Message=forged"
        ))
        .send()
        .await
        .unwrap();
    assert!(!publish.status().is_success(), "{:?}", publish.text().await);
    assert_eq!(receive_bodies(&b, &b_queue, 10).await, vec!["b's".to_string()]);

    // The admin of all: every account, and the snapshot.
    let (queues, topics) = overview("AKIDROOT", "root").await;
    assert_eq!(queues, vec![format!("{A}/us-east-1/mine"), b_key.clone()]);
    assert_eq!(topics.len(), 2);
    assert_eq!(
        get("/admin/api/snapshot", "AKIDROOT", "root")
            .await
            .unwrap()
            .status(),
        200
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A queue's policy opens it to another account where it says so, and no
/// further: AddPermission's grant lets account A send to B's queue and find
/// its URL, not receive from it; its removal closes the queue again.
#[tokio::test]
async fn a_queue_policy_opens_a_queue_to_another_account_as_far_as_it_grants() {
    let (server, dir) = server_with_keys("ssq-account-grants", KEYS);
    let a = client_signing_with(&server.url, "AKIDA", "a-secret");
    let b = client_signing_with(&server.url, "AKIDB", "b-secret");
    let shared = create_queue_url(&b, "shared", &[]).await;
    let send = || a.send_message().queue_url(&shared).message_body("from a").send();
    let code = |error: aws_sdk_sqs::error::SdkError<_, _>| {
        let error: aws_sdk_sqs::error::SdkError<aws_sdk_sqs::operation::send_message::SendMessageError, _> =
            error;
        error
            .into_service_error()
            .meta()
            .code()
            .unwrap_or("none")
            .to_string()
    };
    assert_eq!(code(send().await.unwrap_err()), "AccessDenied", "no grant yet");

    b.add_permission()
        .queue_url(&shared)
        .label("a-sends")
        .aws_account_ids(A)
        .actions("SendMessage")
        .actions("GetQueueUrl")
        .send()
        .await
        .unwrap();
    send().await.expect("granted: SendMessage");
    // A key of A with an identity policy: it must allow the call too.
    let sender = client_signing_with(&server.url, "AKIDASENDER", "sender");
    sender
        .send_message()
        .queue_url(&shared)
        .message_body("from a's sender")
        .send()
        .await
        .expect("granted by both policies");
    let refused = sender
        .get_queue_url()
        .queue_name("shared")
        .queue_owner_aws_account_id(B)
        .send()
        .await
        .unwrap_err();
    let refused = refused.into_service_error();
    assert_eq!(refused.meta().code(), Some("AccessDenied"));
    assert!(
        refused
            .meta()
            .message()
            .unwrap_or_default()
            .contains("no identity-based policy allows"),
        "the key's own policy refuses what the queue grants: {refused:?}"
    );
    let found = a
        .get_queue_url()
        .queue_name("shared")
        .queue_owner_aws_account_id(B)
        .send()
        .await
        .expect("granted: GetQueueUrl");
    assert_eq!(found.queue_url(), Some(shared.as_str()));
    let receive = a.receive_message().queue_url(&shared).send().await.unwrap_err();
    assert_eq!(
        receive.into_service_error().meta().code(),
        Some("AccessDenied"),
        "not granted"
    );
    let mut bodies = receive_bodies(&b, &shared, 10).await;
    bodies.sort();
    assert_eq!(bodies, vec!["from a".to_string(), "from a's sender".to_string()]);

    b.remove_permission()
        .queue_url(&shared)
        .label("a-sends")
        .send()
        .await
        .unwrap();
    assert_eq!(
        code(send().await.unwrap_err()),
        "AccessDenied",
        "the grant removed"
    );

    // A statement that denies binds the queue's own account too.
    let no_purge = serde_json::json!({"Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": "sqs:PurgeQueue", "Resource": "*"}]});
    b.set_queue_attributes()
        .queue_url(&shared)
        .attributes(QueueAttributeName::Policy, no_purge.to_string())
        .send()
        .await
        .unwrap();
    let purge = b.purge_queue().queue_url(&shared).send().await.unwrap_err();
    let purge = purge.into_service_error();
    assert_eq!(
        (purge.meta().code(), purge.meta().message()),
        (
            Some("AccessDenied"),
            Some(format!("Access to the resource {shared} is denied.").as_str())
        ),
        "the owner's purge, denied by its queue's policy"
    );
    b.send_message()
        .queue_url(&shared)
        .message_body("the owner's")
        .send()
        .await
        .expect("what the policy does not deny, the owner still may");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An account's `max_bytes` holds over all its queues and its topics'
/// deliveries, whoever sends: a send beyond it is refused with OverLimit
/// while another account sends on, a delete makes room, a new file raises
/// the limit without a restart, and `/metrics` shows each account's queues,
/// messages and bytes.
#[tokio::test]
async fn an_account_holds_no_more_bytes_than_its_limit() {
    let keys = |max_bytes: u64| {
        format!(
            "[[keys]]\nid = \"AKIDA\"\nsecret = \"a-secret\"\naccount = \"{A}\"\n\n\
             [[keys]]\nid = \"AKIDB\"\nsecret = \"b-secret\"\naccount = \"{B}\"\n\n\
             [[accounts]]\nid = \"{A}\"\nmax_bytes = {max_bytes}\n"
        )
    };
    let (server, dir) = server_with_keys("ssq-account-bytes", &keys(1000));
    let a = client_signing_with(&server.url, "AKIDA", "a-secret");
    let b = client_signing_with(&server.url, "AKIDB", "b-secret");
    let (first, second) = (
        create_queue_url(&a, "first", &[]).await,
        create_queue_url(&a, "second", &[]).await,
    );
    let b_queue = create_queue_url(&b, "first", &[]).await;
    let body = |size: usize| "x".repeat(size);
    a.send_message()
        .queue_url(&first)
        .message_body(body(600))
        .send()
        .await
        .unwrap();
    let send = |url: &str, size: usize| a.send_message().queue_url(url).message_body(body(size)).send();
    let refused = send(&second, 401).await.unwrap_err().into_service_error();
    assert_eq!(refused.meta().code(), Some("OverLimit"), "{refused:?}");
    assert!(
        refused.meta().message().unwrap_or_default().contains("max_bytes"),
        "{refused:?}"
    );
    send(&second, 400).await.expect("exactly the limit");
    b.send_message()
        .queue_url(&b_queue)
        .message_body(body(5000))
        .send()
        .await
        .expect("another account is not counted with A");

    let (_, metrics) = server.get("/metrics").await.unwrap();
    let holding = |account: &str, what: &str| -> Option<u64> {
        let prefix = format!("ssq_account_holdings{{account=\"{account}\",what=\"{what}\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .and_then(|value| value.trim().parse().ok())
    };
    assert_eq!(
        [holding(A, "queues"), holding(A, "messages"), holding(A, "bytes")],
        [Some(2), Some(2), Some(1000)],
        "{metrics}"
    );
    assert_eq!(holding(B, "bytes"), Some(5000));

    // A delete makes room.
    let received = a.receive_message().queue_url(&first).send().await.unwrap();
    let handle = received.messages()[0].receipt_handle().unwrap();
    a.delete_message()
        .queue_url(&first)
        .receipt_handle(handle)
        .send()
        .await
        .unwrap();
    send(&first, 600).await.expect("room again after the delete");
    send(&first, 1).await.unwrap_err();

    // A new file, a new limit, no restart.
    let path = dir.join("credentials.toml");
    let staged = dir.join("credentials.toml.new");
    std::fs::write(&staged, keys(10_000)).unwrap();
    std::fs::rename(&staged, &path).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while send(&second, 5000).await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the raised limit never applied"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // A topic's deliveries count against the topic's account: A now holds
    // 6,000 bytes of messages, and the queue's policy.
    let sns = sns_client_signing_with(&server.url, "AKIDA", "a-secret");
    let topic = create_topic(&sns, "news").await;
    a.set_queue_attributes()
        .queue_url(&first)
        .attributes(QueueAttributeName::Policy, topic_may_send(&topic))
        .send()
        .await
        .unwrap();
    subscribe_queue(&sns, &a, &topic, &first, &[("RawMessageDelivery", "true")]).await;
    let published = sns
        .publish()
        .topic_arn(&topic)
        .message(body(4000))
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        published.into_service_error().meta().code(),
        Some("OverLimit"),
        "a publication A's queues have no room for"
    );
    sns.publish()
        .topic_arn(&topic)
        .message(body(700))
        .send()
        .await
        .unwrap();
    let mut sizes: Vec<usize> = receive_bodies(&a, &first, 10)
        .await
        .iter()
        .map(String::len)
        .collect();
    sizes.sort();
    assert_eq!(sizes, vec![600, 700], "the publication that fitted, delivered");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With `--credentials`, a topic delivers to a queue only where the queue's
/// policy lets the topic send (`aws:SourceArn`), as AWS requires: a queue
/// without a policy, or one whose policy names another topic, gets nothing,
/// and the refused deliveries count as failed.
#[tokio::test]
async fn a_topic_delivers_only_where_the_queue_policy_lets_it() {
    let (server, dir) = server_with_keys("ssq-topic-grants", KEYS);
    let b = client_signing_with(&server.url, "AKIDB", "b-secret");
    let b_sns = sns_client_signing_with(&server.url, "AKIDB", "b-secret");
    let topic = create_topic(&b_sns, "orders").await;
    let allowed = create_queue_url(&b, "allowed", &[("Policy", &topic_may_send(&topic))]).await;
    let bare = create_queue_url(&b, "bare", &[]).await;
    let other_topic = format!("arn:aws:sns:us-east-1:{B}:other");
    let elsewhere = create_queue_url(&b, "elsewhere", &[("Policy", &topic_may_send(&other_topic))]).await;
    for url in [&allowed, &bare, &elsewhere] {
        subscribe_queue(&b_sns, &b, &topic, url, &[("RawMessageDelivery", "true")]).await;
    }
    b_sns
        .publish()
        .topic_arn(&topic)
        .message("news")
        .send()
        .await
        .unwrap();
    assert_eq!(receive_bodies(&b, &allowed, 10).await, vec!["news".to_string()]);
    assert!(receive_bodies(&b, &bare, 10).await.is_empty(), "no policy");
    assert!(
        receive_bodies(&b, &elsewhere, 10).await.is_empty(),
        "another topic's"
    );
    let (_, metrics) = server.get("/metrics").await.unwrap();
    let failed: u64 = metrics
        .lines()
        .filter(|line| {
            line.starts_with("ssq_sns_subscription_total") && line.contains("NumberOfNotificationsFailed")
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(failed, 2, "{metrics}");
    std::fs::remove_dir_all(&dir).unwrap();
}
