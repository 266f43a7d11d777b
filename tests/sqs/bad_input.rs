//! Hostile and malformed requests get SQS-shaped 4xx answers: never a 5xx,
//! never a hang, and the server keeps serving.

use crate::common::Server;
use serde_json::{Value, json};

type Answer = crate::common::JsonAnswer;

async fn call(server: &Server, target: Option<&str>, body: impl Into<reqwest::Body>) -> Answer {
    let answer = crate::common::json_call(&server.url, target, body).await;
    assert!(answer.request_id.is_some(), "every answer has a request id");
    answer
}

fn error_type(answer: &Answer) -> &str {
    answer.body["__type"].as_str().expect("__type is set")
}

#[tokio::test]
async fn unknown_or_missing_actions_are_unsupported_operations() {
    let server = Server::start();
    for target in [Some("AmazonSQS.LaunchRockets"), Some("Bogus"), None] {
        let answer = call(&server, target, "{}").await;
        assert_eq!(answer.status, 400, "{target:?}");
        assert_eq!(error_type(&answer), "com.amazonaws.sqs#UnsupportedOperation");
        assert_eq!(
            answer.query_error.as_deref(),
            Some("AWS.SimpleQueueService.UnsupportedOperation;Sender")
        );
        assert!(!answer.body["message"].as_str().unwrap().is_empty());
    }
}

#[tokio::test]
async fn unreadable_bodies_are_serialization_errors() {
    let server = Server::start();
    let nested = "[".repeat(10_000) + &"]".repeat(10_000);
    let cases: Vec<Vec<u8>> = vec![
        b"{not json".to_vec(),
        b"\xff\xfe\x00garbage".to_vec(),
        br#"{"QueueName": 5}"#.to_vec(),
        br#"{"QueueName": ["a"]}"#.to_vec(),
        br#"{"QueueUrl": "x", "MaxNumberOfMessages": 1e400}"#.to_vec(),
        br#"{"QueueUrl": "x", "MaxNumberOfMessages": 99999999999999999999999}"#.to_vec(),
        br#"{"QueueUrl": "x", "MaxNumberOfMessages": "ten"}"#.to_vec(),
        nested.into_bytes(),
        b"[]".to_vec(),
    ];
    for body in cases {
        let target = if body.starts_with(br#"{"QueueUrl""#) {
            "AmazonSQS.ReceiveMessage"
        } else {
            "AmazonSQS.CreateQueue"
        };
        let answer = call(&server, Some(target), body.clone()).await;
        assert_eq!(
            answer.status,
            400,
            "{}",
            String::from_utf8_lossy(&body[..body.len().min(60)])
        );
        assert_eq!(
            error_type(&answer),
            "com.amazon.coral.service#SerializationException"
        );
    }
}

#[tokio::test]
async fn missing_parameters_and_out_of_range_numbers_are_named() {
    let server = Server::start();
    // AWS's JSON names for these two differ from their Query codes, which
    // the x-amzn-query-error header carries (as recorded against AWS).
    let answer = call(&server, Some("AmazonSQS.CreateQueue"), "{}").await;
    assert_eq!(
        error_type(&answer),
        "com.amazonaws.sqs#MissingRequiredParameterException"
    );
    assert_eq!(answer.query_error.as_deref(), Some("MissingParameter;Sender"));
    assert!(answer.body["message"].as_str().unwrap().contains("QueueName"));

    let url = call(&server, Some("AmazonSQS.CreateQueue"), r#"{"QueueName":"q"}"#)
        .await
        .body["QueueUrl"]
        .as_str()
        .unwrap()
        .to_string();
    let answer = call(
        &server,
        Some("AmazonSQS.SendMessage"),
        json!({"QueueUrl": url}).to_string(),
    )
    .await;
    assert_eq!(
        error_type(&answer),
        "com.amazonaws.sqs#MissingRequiredParameterException"
    );
    for (field, value) in [
        ("MaxNumberOfMessages", json!(-1)),
        ("MaxNumberOfMessages", json!(i64::MAX)),
        ("VisibilityTimeout", json!(-5)),
        ("WaitTimeSeconds", json!(i64::MIN)),
    ] {
        let answer = call(
            &server,
            Some("AmazonSQS.ReceiveMessage"),
            json!({"QueueUrl": url, field: value}).to_string(),
        )
        .await;
        assert_eq!(answer.status, 400);
        assert_eq!(
            error_type(&answer),
            "com.amazonaws.sqs#InvalidParameterValueException",
            "{field}={value}"
        );
        assert_eq!(
            answer.query_error.as_deref(),
            Some("InvalidParameterValue;Sender")
        );
    }
}

#[tokio::test]
async fn oversized_bodies_are_refused_without_reading_them_all() {
    let server = Server::start();
    let body = vec![b' '; 6 * 1024 * 1024];
    let answer = call(&server, Some("AmazonSQS.SendMessage"), body).await;
    assert_eq!(answer.status, 413);
    assert_eq!(error_type(&answer), "com.amazonaws.sqs#RequestEntityTooLarge");
}

/// A small deterministic generator, so a failure can be replayed by seed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn value(&mut self, depth: u32) -> Value {
        const FIELDS: &[&str] = &[
            "QueueUrl",
            "QueueName",
            "MessageBody",
            "Attributes",
            "MessageAttributes",
            "Entries",
            "Id",
            "ReceiptHandle",
            "MaxNumberOfMessages",
            "VisibilityTimeout",
            "WaitTimeSeconds",
            "DelaySeconds",
            "AttributeNames",
            "MessageAttributeNames",
            "Tags",
            "TagKeys",
            "DataType",
            "StringValue",
            "BinaryValue",
            "MaxResults",
            "NextToken",
            "tags",
            "MessageSystemAttributes",
        ];
        let leaf_only = depth >= 4;
        match self.below(if leaf_only { 6 } else { 8 }) {
            0 => Value::Null,
            1 => json!(self.below(2) == 0),
            2 => json!(self.next() as i64 >> self.below(64)),
            3 => json!(
                [
                    "",
                    "http://127.0.0.1/000000000000/fuzz",
                    "String",
                    "Number",
                    "Binary",
                    "AAAA",
                    "-1",
                    "1e999",
                    "All",
                    "\u{0}"
                ][self.below(10) as usize]
            ),
            4 => {
                let float = f64::from_bits(self.next());
                json!(if float.is_finite() { float } else { 1.5 })
            }
            5 => json!("x".repeat(self.below(300) as usize)),
            6 => Value::Array((0..self.below(12)).map(|_| self.value(depth + 1)).collect()),
            _ => Value::Object(
                (0..self.below(6))
                    .map(|_| {
                        (
                            FIELDS[self.below(FIELDS.len() as u64) as usize].to_string(),
                            self.value(depth + 1),
                        )
                    })
                    .collect(),
            ),
        }
    }
}

#[tokio::test]
async fn random_json_for_every_action_never_breaks_the_server() {
    let server = Server::start();
    call(&server, Some("AmazonSQS.CreateQueue"), r#"{"QueueName":"fuzz"}"#).await;
    let actions = [
        "CreateQueue",
        "DeleteQueue",
        "GetQueueUrl",
        "ListQueues",
        "GetQueueAttributes",
        "SetQueueAttributes",
        "PurgeQueue",
        "SendMessage",
        "SendMessageBatch",
        "ReceiveMessage",
        "DeleteMessage",
        "DeleteMessageBatch",
        "ChangeMessageVisibility",
        "ChangeMessageVisibilityBatch",
        "TagQueue",
        "UntagQueue",
        "ListQueueTags",
        "AddPermission",
        "RemovePermission",
        "ListDeadLetterSourceQueues",
        "StartMessageMoveTask",
        "CancelMessageMoveTask",
        "ListMessageMoveTasks",
    ];
    let mut rng = XorShift(0x5eed_1234_abcd_0001);
    for round in 0..1_500 {
        let action = actions[rng.below(actions.len() as u64) as usize];
        let mut input = rng.value(0);
        if let Value::Object(map) = &mut input {
            if rng.below(2) == 0 {
                map.insert("QueueUrl".into(), json!("http://127.0.0.1/000000000000/fuzz"));
            }
            // Keep long polls short so the test stays quick.
            if map.contains_key("WaitTimeSeconds") {
                map.insert("WaitTimeSeconds".into(), json!(0));
            }
        }
        let answer = call(&server, Some(&format!("AmazonSQS.{action}")), input.to_string()).await;
        assert!(
            answer.status == 200 || (400..500).contains(&answer.status),
            "round {round}: {action} {input} answered {} {}",
            answer.status,
            answer.body
        );
        if answer.status != 200 {
            assert!(
                answer.body["__type"].is_string() && answer.body["message"].is_string(),
                "round {round}: {}",
                answer.body
            );
        }
    }
    let health = reqwest::get(format!("{}/health", server.url)).await.unwrap();
    assert_eq!(health.status(), 200);
}

/// A Query parameter name of 13,000 dot-separated parts (26 KB) once
/// overflowed the stack while the form was folded, aborting the process.
#[tokio::test]
async fn query_names_too_deep_to_fold_are_refused_and_the_server_lives_on() {
    let server = Server::start();
    let deep = format!("Action=ListQueues&{}=1", vec!["a"; 13_000].join("."));
    let http = reqwest::Client::new();
    let requests = [
        http.post(&server.url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(deep.clone()),
        http.get(format!("{}/?{deep}", server.url)),
    ];
    for request in requests {
        let response = request.send().await.expect("ssq answers instead of crashing");
        assert_eq!(response.status().as_u16(), 400);
        let body = response.text().await.unwrap();
        assert!(body.contains("<Code>InvalidParameterValue</Code>"), "{body}");
        assert!(body.contains("dot-separated parts"), "{body}");
    }
    let listed = server.client().list_queues().send().await;
    assert!(listed.is_ok(), "the server still serves: {listed:?}");
}

/// A request by `host`, with these extra headers: status and body.
async fn by_host(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", server.url))
        .header("host", host)
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("ssq answers");
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn message_count(sqs: &aws_sdk_sqs::Client, url: &str) -> String {
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .unwrap();
    out.attributes().unwrap()[&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages].clone()
}

/// DNS rebinding: a page at rebind.test whose name then resolved to
/// 127.0.0.1 read the admin page's token and purged a queue through the
/// admin API (ssq compared Origin with Host, both the attacker's). And a
/// page of any site could purge a queue with a form post or an image's URL.
#[tokio::test]
async fn foreign_host_names_and_pages_of_other_sites_are_refused() {
    let server = Server::start();
    let sqs = server.client();
    let url = crate::common::create_queue_url(&sqs, "rebound", &[]).await;
    for body in ["a", "b", "c"] {
        crate::common::send_body(&sqs, &url, body).await;
    }
    let rebound = format!("rebind.test:{}", server.port);
    let origin = format!("http://{rebound}");
    let (status, page) = by_host(&server, reqwest::Method::GET, "/", &rebound, &[], "").await;
    assert_eq!(status, 403, "the admin page by a foreign name: {page}");
    assert!(page.contains("--allowed-hosts"), "{page}");
    assert!(!page.contains("ssq-csrf"), "no token is handed out: {page}");
    let (status, page) = by_host(
        &server,
        reqwest::Method::GET,
        "/",
        &format!("localhost:{}", server.port),
        &[],
        "",
    )
    .await;
    assert_eq!(status, 200, "by localhost");
    let token = crate::common::admin_page_token(&page);
    let purge = serde_json::json!({"QueueUrl": url}).to_string();
    let admin_call = |origin: &str| {
        [
            ("origin", origin.to_string()),
            ("x-ssq-csrf", token.clone()),
            ("x-amz-target", "AmazonSQS.PurgeQueue".to_string()),
            ("content-type", "application/x-amz-json-1.0".to_string()),
        ]
    };
    let headers = admin_call(&origin);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let (status, _) = by_host(
        &server,
        reqwest::Method::POST,
        "/admin/api/sqs",
        &rebound,
        &headers,
        &purge,
    )
    .await;
    assert_eq!(status, 403, "the admin API by a foreign name");
    let json_call = [
        ("x-amz-target", "AmazonSQS.PurgeQueue"),
        ("content-type", "application/x-amz-json-1.0"),
    ];
    let purge_body = purge.clone();
    let (status, answer) = by_host(
        &server,
        reqwest::Method::POST,
        "/",
        &rebound,
        &json_call,
        &purge_body,
    )
    .await;
    assert_eq!(status, 403, "the SQS API by a foreign name: {answer}");
    assert!(answer.contains("AccessDenied"), "an SQS-shaped error: {answer}");
    for path in ["/status", "/metrics", "/_aws/sqs/messages?QueueUrl=x"] {
        let (status, _) = by_host(&server, reqwest::Method::GET, path, &rebound, &[], "").await;
        assert_eq!(status, 403, "{path} by a foreign name");
    }
    let (status, _) = by_host(&server, reqwest::Method::GET, "/ready", &rebound, &[], "").await;
    assert_eq!(status, 200, "/ready answers any name");

    // Cross-site: the Host is ssq's own, the page is not.
    let own = format!("127.0.0.1:{}", server.port);
    let form = format!(
        "Action=PurgeQueue&QueueUrl={}",
        url.replace(':', "%3A").replace('/', "%2F")
    );
    let form_post = [
        ("origin", "https://attacker.test"),
        ("content-type", "application/x-www-form-urlencoded"),
    ];
    let (status, answer) = by_host(&server, reqwest::Method::POST, "/", &own, &form_post, &form).await;
    assert_eq!(status, 403, "a form posted from another site: {answer}");
    assert!(answer.contains("<Code>AccessDenied</Code>"), "{answer}");
    let image = [("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "no-cors")];
    let (status, _) = by_host(
        &server,
        reqwest::Method::GET,
        &format!("/?{form}"),
        &own,
        &image,
        "",
    )
    .await;
    assert_eq!(status, 403, "a Query GET loaded by another site");
    assert_eq!(message_count(&sqs, &url).await, "3", "nothing was purged");
    let link = [("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "navigate")];
    let (status, _) = by_host(&server, reqwest::Method::GET, "/", &own, &link, "").await;
    assert_eq!(status, 200, "a link from another site opens the admin page");

    // The page's own calls, by localhost, still act.
    let local = format!("localhost:{}", server.port);
    let local_origin = format!("http://{local}");
    let headers = admin_call(&local_origin);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let (status, answer) = by_host(
        &server,
        reqwest::Method::POST,
        "/admin/api/sqs",
        &local,
        &headers,
        &purge,
    )
    .await;
    assert_eq!(status, 200, "the page's own purge: {answer}");
    assert_eq!(message_count(&sqs, &url).await, "0");

    // A name given with --allowed-hosts is answered.
    let allowing = Server::start_with(&["--allowed-hosts", "rebind.test,.corp.test"]);
    let (status, _) = by_host(&allowing, reqwest::Method::GET, "/", &rebound, &[], "").await;
    assert_eq!(status, 200, "an allowed name");
    let (status, _) = by_host(&allowing, reqwest::Method::GET, "/", "sqs.corp.test", &[], "").await;
    assert_eq!(status, 200, "a subdomain of an allowed domain");
}

/// RFC 9112, section 3.2: an HTTP/1.1 request with no Host, with two, or
/// with one that is not host[:port] is answered 400, before any name in it
/// is read (`127.0.0.1:PORT.evil.example` was taken for 127.0.0.1).
#[tokio::test]
async fn a_host_header_that_http_does_not_allow_is_answered_400() {
    let server = Server::start();
    let port = server.port;
    let list = |hosts: &str| {
        let body = "Action=ListQueues";
        format!(
            "POST / HTTP/1.1\r\n{hosts}content-type: application/x-www-form-urlencoded\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let fine = crate::limits::raw(&server, list(&format!("host: 127.0.0.1:{port}\r\n")).as_bytes()).await;
    assert!(fine.starts_with("HTTP/1.1 200"), "{fine}");
    for (hosts, why) in [
        (
            format!("host: 127.0.0.1:{port}.evil.example\r\n"),
            "not a host name",
        ),
        (
            format!("host: 127.0.0.1:{port}\r\nhost: 127.0.0.1:{port}\r\n"),
            "more than one Host",
        ),
        (
            format!("host: 127.0.0.1:{port}\r\nhost: rebind.test\r\n"),
            "more than one Host",
        ),
        (String::new(), "no Host header"),
        (format!("host: user@127.0.0.1:{port}\r\n"), "not a host name"),
    ] {
        let answer = crate::limits::raw(&server, list(&hosts).as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{hosts:?}: {answer}");
        assert!(
            answer.contains(why) && answer.contains("RFC 9112"),
            "{hosts:?}: {answer}"
        );
    }
    // An HTTP/1.0 request may leave Host out.
    let old = crate::limits::raw(&server, b"GET /health HTTP/1.0\r\n\r\n").await;
    assert!(
        old.starts_with("HTTP/1.0 200") || old.starts_with("HTTP/1.1 200"),
        "{old}"
    );
}
