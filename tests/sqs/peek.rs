//! The developer endpoint `/_aws/sqs/messages` (LocalStack's API), driven
//! by raw HTTP and by aws-sdk-sqs using it as its endpoint: what it shows,
//! that looking changes nothing (in memory and in Redis), paging, errors,
//! signatures and passives. boto3 over both protocols is in
//! tests/python/test_clients.py.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::*;
use aws_sdk_sqs::types::MessageSystemAttributeName;
use serde_json::Value;

/// A GET of the endpoint with `query`, asking for JSON (LocalStack's form:
/// the XML answer as xmltodict reads it). Status, body and next token.
async fn peek(server: &Server, path_and_query: &str) -> (u16, Value, Option<String>) {
    let response = reqwest::Client::new()
        .get(format!("{}{path_and_query}", server.url))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let next = response
        .headers()
        .get("x-ssq-next-token")
        .map(|v| v.to_str().unwrap().to_string());
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        next,
    )
}

/// The messages of an answer: xmltodict gives one message as an object,
/// several as an array, none as null.
fn messages(doc: &Value) -> Vec<Value> {
    match &doc["ReceiveMessageResponse"]["ReceiveMessageResult"]["Message"] {
        Value::Array(messages) => messages.clone(),
        Value::Null => Vec::new(),
        one => vec![one.clone()],
    }
}

fn bodies(doc: &Value) -> Vec<String> {
    messages(doc)
        .iter()
        .map(|m| m["Body"].as_str().unwrap().to_string())
        .collect()
}

/// A message's system attributes, by name.
fn attributes(message: &Value) -> BTreeMap<String, String> {
    let list = match &message["Attribute"] {
        Value::Array(list) => list.clone(),
        one => vec![one.clone()],
    };
    list.iter()
        .map(|a| {
            (
                a["Name"].as_str().unwrap().into(),
                a["Value"].as_str().unwrap().into(),
            )
        })
        .collect()
}

fn encoded(url: &str) -> String {
    serde_urlencoded::to_string([("QueueUrl", url)]).unwrap()
}

#[tokio::test]
async fn shows_visible_messages_and_on_request_invisible_and_delayed_ones() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "browse", &[]).await;
    for body in ["one", "two"] {
        send_body(&sqs, &url, body).await;
    }
    sqs.send_message()
        .queue_url(&url)
        .message_body("later")
        .delay_seconds(60)
        .message_attributes(
            "colour",
            aws_sdk_sqs::types::MessageAttributeValue::builder()
                .data_type("String")
                .string_value("blue")
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let received = receive_bodies(&sqs, &url, 1).await;
    assert_eq!(received, ["one"]);

    let q = encoded(&url);
    let (status, doc, next) = peek(&server, &format!("/_aws/sqs/messages?{q}")).await;
    assert_eq!((status, next), (200, None));
    assert_eq!(bodies(&doc), ["two"], "only what a receive could take");
    let two = &messages(&doc)[0];
    assert_eq!(two["ReceiptHandle"], "SQS/BACKDOOR/ACCESS");
    assert_eq!(two["MD5OfBody"], "b8a9f715dbb64fd5c56e7783c6820a61");
    let two_attributes = attributes(two);
    assert_eq!(two_attributes["ApproximateReceiveCount"], "0");
    assert_eq!(
        two_attributes["ApproximateFirstReceiveTimestamp"], "0",
        "never received: LocalStack's 0"
    );
    assert_eq!(two_attributes["SenderId"], "000000000000");
    assert!(two_attributes.contains_key("SentTimestamp"));
    assert!(
        !two_attributes.contains_key("IsVisible"),
        "only with ShowInvisible"
    );

    let (_, doc, _) = peek(&server, &format!("/_aws/sqs/messages?{q}&ShowInvisible=true")).await;
    assert_eq!(bodies(&doc), ["one", "two"], "in the order sent");
    let visible: Vec<String> = messages(&doc)
        .iter()
        .map(|m| attributes(m)["IsVisible"].clone())
        .collect();
    assert_eq!(visible, ["false", "true"]);
    assert_eq!(attributes(&messages(&doc)[0])["ApproximateReceiveCount"], "1");

    let (_, doc, _) = peek(
        &server,
        &format!("/_aws/sqs/messages?{q}&ShowDelayed=1&ShowInvisible=1"),
    )
    .await;
    assert_eq!(bodies(&doc), ["one", "two", "later"]);
    let later = &messages(&doc)[2];
    assert_eq!(attributes(later)["IsDelayed"], "true");
    assert_eq!(later["MessageAttribute"]["Name"], "colour");
    assert_eq!(later["MessageAttribute"]["Value"]["StringValue"], "blue");

    // The queue in the path, and the XML answer without Accept.
    let (status, doc, _) = peek(&server, "/_aws/sqs/messages/us-east-1/000000000000/browse").await;
    assert_eq!((status, bodies(&doc)), (200, vec!["two".to_string()]));
    let xml = crate::common::get_text(&format!("{}/_aws/sqs/messages?{q}", server.url)).await;
    assert!(
        xml.contains("<Body>two</Body>") && !xml.contains("<Body>one</Body>"),
        "{xml}"
    );
}

#[tokio::test]
async fn looking_changes_nothing_a_consumer_sees() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "untouched", &[]).await;
    send_body(&sqs, &url, "m").await;
    let q = encoded(&url);
    for _ in 0..5 {
        let (status, doc, _) = peek(
            &server,
            &format!("/_aws/sqs/messages?{q}&ShowInvisible=true&ShowDelayed=true"),
        )
        .await;
        assert_eq!((status, bodies(&doc)), (200, vec!["m".to_string()]));
    }
    let attributes = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
        .send()
        .await
        .unwrap();
    let counts = attributes.attributes().unwrap();
    assert_eq!(
        counts[&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages],
        "1"
    );
    assert_eq!(
        counts[&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible],
        "0"
    );
    let before_receive = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let received = sqs
        .receive_message()
        .queue_url(&url)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    let message = &received.messages()[0];
    let system = message.attributes().unwrap();
    assert_eq!(system[&MessageSystemAttributeName::ApproximateReceiveCount], "1");
    let first_receive: u64 = system[&MessageSystemAttributeName::ApproximateFirstReceiveTimestamp]
        .parse()
        .unwrap();
    assert!(
        first_receive + 5 >= before_receive,
        "first received by the receive, not by a look"
    );
    // The look while it is in flight does not hand it out again either.
    let (_, doc, _) = peek(&server, &format!("/_aws/sqs/messages?{q}")).await;
    assert!(bodies(&doc).is_empty());
    assert_eq!(poll_once(&sqs, &url).await, Some(Vec::new()), "still in flight");
}

#[tokio::test]
async fn fifo_messages_held_behind_their_group_show_only_with_show_invisible() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(
        &sqs,
        "browse.fifo",
        &[
            ("FifoQueue", "true"),
            ("ContentBasedDeduplication", "true"),
            ("VisibilityTimeout", "120"),
        ],
    )
    .await;
    for (body, group) in [
        ("message-1", "1"),
        ("message-2", "1"),
        ("message-3", "2"),
        ("message-4", "2"),
    ] {
        send_grouped(&sqs, &url, body, group).await;
    }
    assert_eq!(receive_bodies(&sqs, &url, 1).await, ["message-1"]);
    let q = encoded(&url);
    let (_, doc, _) = peek(&server, &format!("/_aws/sqs/messages?{q}")).await;
    assert_eq!(bodies(&doc), ["message-3", "message-4"]);
    let (_, doc, _) = peek(&server, &format!("/_aws/sqs/messages?{q}&ShowInvisible=true")).await;
    assert_eq!(bodies(&doc), ["message-1", "message-2", "message-3", "message-4"]);
    let shown: Vec<(String, String)> = messages(&doc)
        .iter()
        .map(|m| {
            let a = attributes(m);
            (a["MessageGroupId"].clone(), a["IsVisible"].clone())
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("1".into(), "false".into()),
            ("1".into(), "false".into()),
            ("2".into(), "true".into()),
            ("2".into(), "true".into())
        ],
        "message-2 is held behind message-1: no receive takes it"
    );
    assert!(attributes(&messages(&doc)[0]).contains_key("SequenceNumber"));
    // The group order a receive sees is untouched.
    assert_eq!(receive_bodies(&sqs, &url, 10).await, ["message-3", "message-4"]);
}

#[tokio::test]
async fn an_sdk_pointed_at_the_endpoint_peeks_with_receive_message_and_nothing_else() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "via-sdk", &[]).await;
    for body in ["message-1", "message-2"] {
        send_body(&sqs, &url, body).await;
    }
    let developer = client_for(&format!("{}/_aws/sqs/messages", server.url));
    for _ in 0..2 {
        // MaxNumberOfMessages is ignored, as LocalStack ignores it.
        let looked = developer
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(1)
            .send()
            .await
            .unwrap();
        let bodies: Vec<&str> = looked.messages().iter().map(|m| m.body().unwrap()).collect();
        assert_eq!(bodies, ["message-1", "message-2"]);
        let count =
            &looked.messages()[0].attributes().unwrap()[&MessageSystemAttributeName::ApproximateReceiveCount];
        assert_eq!(count, "0");
    }
    let refused = developer
        .send_message()
        .queue_url(&url)
        .message_body("x")
        .send()
        .await;
    let error = refused.unwrap_err().into_service_error();
    assert_eq!(error.meta().code(), Some("InvalidRequest"));
    assert_eq!(
        error.meta().message(),
        Some("This endpoint only accepts ReceiveMessage calls")
    );
    // A look's receipt handle deletes nothing.
    let handle_refused = sqs
        .delete_message()
        .queue_url(&url)
        .receipt_handle("SQS/BACKDOOR/ACCESS")
        .send()
        .await;
    assert_eq!(error_code(handle_refused), "ReceiptHandleIsInvalid");
    assert_eq!(receive_bodies(&sqs, &url, 10).await, ["message-1", "message-2"]);
}

#[tokio::test]
async fn a_long_queue_comes_in_pages_that_together_show_every_message_once() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "paged", &[]).await;
    let sent: Vec<String> = (0..25).map(|i| format!("m{i:02}")).collect();
    send_batches(&sqs, &url, &sent).await;
    let q = encoded(&url);
    let mut seen = Vec::new();
    let mut pages = 0;
    let mut token: Option<String> = None;
    loop {
        let after = token.map(|t| format!("&NextToken={t}")).unwrap_or_default();
        let (status, doc, next) =
            peek(&server, &format!("/_aws/sqs/messages?{q}&MaxResults=10{after}")).await;
        assert_eq!(status, 200);
        assert!(bodies(&doc).len() <= 10);
        seen.extend(bodies(&doc));
        pages += 1;
        match next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, sent);
    let (status, doc, _) = peek(&server, &format!("/_aws/sqs/messages?{q}&MaxResults=10001")).await;
    assert_eq!(status, 400);
    assert_eq!(doc["ErrorResponse"]["Error"]["Code"], "InvalidParameterValue");
}

#[tokio::test]
async fn bad_and_missing_queue_urls_get_localstacks_errors() {
    let server = Server::start();
    let sqs = server.client();
    create_queue_url(&sqs, "exists", &[]).await;
    let (status, doc, _) = peek(&server, "/_aws/sqs/messages").await;
    assert_eq!(status, 400);
    assert_eq!(
        doc["ErrorResponse"]["Error"]["Code"],
        "AWS.SimpleQueueService.NonExistentQueue"
    );
    let (status, doc, _) = peek(
        &server,
        &format!("/_aws/sqs/messages?{}", encoded("http://localhost:4566/nonsense")),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(doc["ErrorResponse"]["Error"]["Code"], "InvalidAddress");
    let missing = encoded(&format!("{}/000000000000/hopefullydoesnotexist", server.url));
    let (status, doc, _) = peek(&server, &format!("/_aws/sqs/messages?{missing}")).await;
    assert_eq!(status, 400);
    assert_eq!(
        doc["ErrorResponse"]["Error"]["Code"],
        "AWS.SimpleQueueService.NonExistentQueue"
    );
    for path in [
        "/_aws/sqs/messages/us-east-1/000000000000/hopefullydoesnotexist",
        "/_aws/sqs/messages/us-east-2/000000000000/exists",
        "/_aws/sqs/messages/us-east-1/123456789012/exists",
    ] {
        let (status, doc, _) = peek(&server, path).await;
        assert_eq!(status, 400, "{path}");
        assert_eq!(
            doc["ErrorResponse"]["Error"]["Code"], "AWS.SimpleQueueService.NonExistentQueue",
            "{path}"
        );
    }
}

#[tokio::test]
async fn with_credentials_a_look_must_be_signed() {
    let path = std::env::temp_dir().join(format!("ssq-peek-credentials-{}", std::process::id()));
    std::fs::write(&path, "AKIDPEEK:peek-secret\n").unwrap();
    let server = Server::start_with(&["--credentials", path.to_str().unwrap()]);
    let sqs = client_signing_with(&server.url, "AKIDPEEK", "peek-secret");
    let url = create_queue_url(&sqs, "guarded", &[]).await;
    send_body(&sqs, &url, "secret body").await;

    let (status, doc, _) = peek(&server, &format!("/_aws/sqs/messages?{}", encoded(&url))).await;
    assert_eq!(status, 403, "{doc}");
    assert_eq!(
        doc["ErrorResponse"]["Error"]["Code"],
        "MissingAuthenticationToken"
    );

    let endpoint = format!("{}/_aws/sqs/messages", server.url);
    let wrong = client_signing_with(&endpoint, "AKIDPEEK", "not-the-secret");
    assert_eq!(
        error_code(wrong.receive_message().queue_url(&url).send().await),
        "SignatureDoesNotMatch"
    );
    let signed = client_signing_with(&endpoint, "AKIDPEEK", "peek-secret");
    let looked = signed.receive_message().queue_url(&url).send().await.unwrap();
    assert_eq!(looked.messages()[0].body(), Some("secret body"));
    std::fs::remove_file(path).ok();
}

/// Every hash ssq keeps in Redis, whole: the lock and epoch (strings) are
/// left out, since the leader renews its lease while the test runs.
fn redis_hashes(redis: &RedisServer) -> BTreeMap<String, String> {
    let cli = |args: &[&str]| redis_cli(redis.port, args);
    cli(&["--scan"])
        .lines()
        .filter(|key| cli(&["type", key]).trim() == "hash")
        .map(|key| {
            let mut fields: Vec<String> = cli(&["hgetall", key]).lines().map(str::to_string).collect();
            fields.sort();
            (key.to_string(), fields.join("\n"))
        })
        .collect()
}

#[tokio::test]
async fn on_a_redis_backed_leader_a_look_writes_nothing_and_a_passive_answers_503() {
    let redis = RedisServer::start();
    let leader = Server::start_node(&redis, "peek-leader");
    let sqs = leader.client();
    wait_for(Duration::from_secs(10), || async { leader.is_ready().await })
        .await
        .expect("the only instance leads");
    let url = create_queue_url(
        &sqs,
        "durable.fifo",
        &[("FifoQueue", "true"), ("ContentBasedDeduplication", "true")],
    )
    .await;
    for (body, group) in [("a", "g"), ("b", "g"), ("c", "h")] {
        send_grouped(&sqs, &url, body, group).await;
    }
    assert_eq!(receive_bodies(&sqs, &url, 1).await, ["a"]);
    let before = redis_hashes(&redis);
    assert!(
        before.keys().any(|k| k.ends_with(":states")),
        "the receive's state is stored: {before:?}"
    );
    let q = encoded(&url);
    for flags in ["", "&ShowInvisible=true", "&ShowInvisible=true&ShowDelayed=true"] {
        let (status, _, _) = peek(&leader, &format!("/_aws/sqs/messages?{q}{flags}")).await;
        assert_eq!(status, 200);
    }
    assert_eq!(redis_hashes(&redis), before, "a look wrote nothing to Redis");

    let passive = Server::start_node(&redis, "peek-passive");
    wait_for(Duration::from_secs(10), || async {
        passive.status().await["role"] == "passive"
    })
    .await
    .expect("the second instance is passive");
    let (status, doc, _) = peek(&passive, &format!("/_aws/sqs/messages?{q}")).await;
    assert_eq!(status, 503, "{doc}");
    assert_eq!(doc["ErrorResponse"]["Error"]["Code"], "ServiceUnavailable");
}
