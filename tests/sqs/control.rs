//! The control API for test suites (`--control-api`): a reset between
//! tests and a virtual clock (`--clock virtual`), through the SDK as a
//! suite would use them, and the limits on who may call it.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::{
    Server, client_without_retries, create_queue_url, latest_move_task, receive_bodies, send_body, ssq_binary,
};

/// A call to the control API: its status and its JSON answer.
async fn control(server: &Server, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, format!("{}/_ssq/{path}", server.url));
    if let Some(body) = body {
        request = request.body(body.to_string());
    }
    let answer = request.send().await.unwrap();
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn reset(server: &Server) -> (u16, Value) {
    control(server, reqwest::Method::POST, "reset", None).await
}

/// The clock's time, or moved `advance_seconds` forward.
async fn clock(server: &Server, advance_seconds: Option<f64>) -> (u16, Value) {
    match advance_seconds {
        None => control(server, reqwest::Method::GET, "clock", None).await,
        Some(seconds) => {
            let body = serde_json::json!({ "advance_seconds": seconds });
            control(server, reqwest::Method::POST, "clock", Some(body)).await
        }
    }
}

async fn faults(server: &Server, method: reqwest::Method, body: Option<Value>) -> (u16, Value) {
    control(server, method, "faults", body).await
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
    let sns = crate::common::sns_client_for(&server.url);
    sns.create_topic().name("events").send().await.unwrap();
    let publish = || {
        sns.publish()
            .topic_arn("arn:aws:sns:us-east-1:000000000000:events")
            .message("m")
            .send()
    };
    assert!(publish().await.is_ok());

    assert_eq!(
        reset(&server).await,
        (200, serde_json::json!({"queues_deleted": 2, "topics_deleted": 1}))
    );
    let listed = sqs.list_queues().send().await.unwrap();
    assert!(listed.queue_urls().is_empty(), "{listed:?}");
    assert!(sns.list_topics().send().await.unwrap().topics().is_empty());
    assert!(publish().await.is_err(), "the topic is gone");

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
        (200, serde_json::json!({"queues_deleted": 2, "topics_deleted": 0}))
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
fn the_control_api_and_the_virtual_clock_are_refused_where_they_cannot_work() {
    let credentials = std::env::temp_dir().join(format!("ssq-control-credentials-{}", std::process::id()));
    std::fs::write(&credentials, "key:secret\n").unwrap();
    let no_redis = "redis://127.0.0.1:1";
    for (args, says) in [
        (
            vec!["--control-api", "--credentials", credentials.to_str().unwrap()],
            "--control-api with --credentials",
        ),
        (
            vec!["--control-api", "--shards", "2", "--redis-url", no_redis],
            "--control-api with --shards 2",
        ),
        (vec!["--clock", "virtual"], "--clock virtual needs --control-api"),
        (
            vec!["--control-api", "--clock", "virtual", "--redis-url", no_redis],
            "--clock virtual with --redis-url",
        ),
    ] {
        let output = Command::new(ssq_binary())
            .args(["--listen", "127.0.0.1:0"])
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

#[tokio::test]
async fn a_virtual_clock_moves_a_fifteen_minute_delay_in_a_blink() {
    let server = Server::start_with(&["--control-api", "--clock", "virtual"]);
    let sqs = server.client();
    let (_, started) = clock(&server, None).await;
    assert_eq!(started["virtual"], true);
    let t0 = started["now_millis"].as_u64().unwrap();
    let url = create_queue_url(&sqs, "later", &[]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("in 15 minutes")
        .delay_seconds(900)
        .send()
        .await
        .unwrap();
    assert!(receive_bodies(&sqs, &url, 10).await.is_empty(), "delayed");

    // A long poll waiting on it returns as soon as the clock passes the delay.
    let waiting = {
        let (sqs, url) = (sqs.clone(), url.clone());
        tokio::spawn(async move {
            let asked = std::time::Instant::now();
            let out = sqs
                .receive_message()
                .queue_url(&url)
                .wait_time_seconds(20)
                .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
                .send()
                .await
                .unwrap();
            (out, asked.elapsed())
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (status, moved) = clock(&server, Some(899.0)).await;
    assert_eq!((status, moved["now_millis"].as_u64()), (200, Some(t0 + 899_000)));
    assert!(receive_bodies(&sqs, &url, 10).await.is_empty(), "a second early");
    clock(&server, Some(1.0)).await;
    let (out, waited) = waiting.await.unwrap();
    assert!(
        waited < std::time::Duration::from_secs(5),
        "woke at once, not after 20 s: {waited:?}"
    );
    let message = &out.messages()[0];
    assert_eq!(message.body(), Some("in 15 minutes"));
    let sent = message
        .attributes()
        .unwrap()
        .get(&aws_sdk_sqs::types::MessageSystemAttributeName::SentTimestamp);
    assert_eq!(
        sent.map(String::as_str),
        Some(t0.to_string().as_str()),
        "timestamps are the clock's"
    );

    // Its visibility timeout (30 s) passes by the clock too, and only by it.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert!(
        receive_bodies(&sqs, &url, 10).await.is_empty(),
        "time stands still"
    );
    clock(&server, Some(30.0)).await;
    assert_eq!(receive_bodies(&sqs, &url, 10).await, ["in 15 minutes"]);
}

#[tokio::test]
async fn the_system_clock_cannot_be_moved() {
    let server = Server::start_with(&["--control-api"]);
    let (status, answer) = clock(&server, Some(60.0)).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("InvalidParameterValue")),
        "{answer}"
    );
    assert_eq!(clock(&server, None).await.1["virtual"], false);
    let virtual_server = Server::start_with(&["--control-api", "--clock", "virtual"]);
    assert_eq!(
        clock(&virtual_server, Some(-1.0)).await.0,
        400,
        "time only goes forward"
    );
}

#[tokio::test]
async fn injected_errors_are_answered_as_aws_answers_them_and_sdks_retry_them() {
    let server = Server::start_with(&["--control-api"]);
    let sqs = server.client();
    let url = create_queue_url(&sqs, "orders", &[]).await;
    let rule = serde_json::json!({"action": "SendMessage", "queue": "orders", "error": "ServiceUnavailable", "count": 2});
    assert_eq!(
        faults(&server, reqwest::Method::POST, Some(rule)).await,
        (200, serde_json::json!({"rules": 1}))
    );
    // The SDK's standard retries (three attempts) get through the two.
    send_body(&sqs, &url, "retried").await;
    assert_eq!(
        faults(&server, reqwest::Method::GET, None).await.1,
        serde_json::json!({"rules": []})
    );

    let rule = serde_json::json!({"action": "ReceiveMessage", "error": "InternalError", "count": 2});
    faults(&server, reqwest::Method::POST, Some(rule)).await;
    let refused = client_without_retries(&server.url)
        .receive_message()
        .queue_url(&url)
        .send()
        .await
        .unwrap_err();
    assert_eq!(refused.raw_response().unwrap().status().as_u16(), 500);
    assert_eq!(refused.into_service_error().meta().code(), Some("InternalError"));
    let query = reqwest::Client::new()
        .post(&server.url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("Action=ReceiveMessage&QueueUrl={url}"))
        .send()
        .await
        .unwrap();
    assert_eq!(query.status(), 500);
    let xml = query.text().await.unwrap();
    assert!(
        xml.contains("<Code>InternalError</Code>") && xml.contains("<Type>Receiver</Type>"),
        "{xml}"
    );
    assert_eq!(
        receive_bodies(&sqs, &url, 10).await,
        ["retried"],
        "the rule is used up"
    );

    let rule =
        serde_json::json!({"action": "ReceiveMessage", "queue": "orders", "error": "OverLimit", "count": 1});
    faults(&server, reqwest::Method::POST, Some(rule)).await;
    let over = sqs.receive_message().queue_url(&url).send().await.unwrap_err();
    assert_eq!(
        over.raw_response().unwrap().status().as_u16(),
        403,
        "not retried: a sender's fault"
    );
    assert_eq!(over.into_service_error().meta().code(), Some("OverLimit"));

    let (status, refused) = faults(
        &server,
        reqwest::Method::POST,
        Some(serde_json::json!({"error": "QueueDoesNotExist"})),
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("InvalidParameterValue")),
        "{refused}"
    );
}

#[tokio::test]
async fn latency_and_duplicate_deliveries_are_injected() {
    let server = Server::start_with(&["--control-api"]);
    let sqs = server.client();
    let url = create_queue_url(&sqs, "orders", &[]).await;
    let rules = serde_json::json!([
        {"action": "SendMessage", "latency_ms": 300, "count": 1},
        {"action": "ReceiveMessage", "queue": "orders", "duplicate": true, "count": 1},
    ]);
    assert_eq!(
        faults(&server, reqwest::Method::POST, Some(rules)).await.1,
        serde_json::json!({"rules": 2})
    );
    let started = std::time::Instant::now();
    send_body(&sqs, &url, "once").await;
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );

    let first = sqs.receive_message().queue_url(&url).send().await.unwrap();
    let again = sqs.receive_message().queue_url(&url).send().await.unwrap();
    assert_eq!(
        first.messages()[0].message_id(),
        again.messages()[0].message_id(),
        "delivered twice"
    );
    assert!(
        receive_bodies(&sqs, &url, 10).await.is_empty(),
        "and not a third time"
    );
    assert_eq!(
        faults(&server, reqwest::Method::DELETE, None).await,
        (200, serde_json::json!({"rules": 0}))
    );
}

/// Fault rules are bounded: a list past the most, or one that would take
/// those in force past it, is refused whole with a 400 that says what to
/// do, and the rules in force stay as they were.
#[tokio::test]
async fn no_more_than_a_hundred_fault_rules_are_in_force() {
    let server = Server::start_with(&["--control-api"]);
    let rules = |n: usize| Some(Value::Array(vec![serde_json::json!({"latency_ms": 1}); n]));
    let (status, refused) = faults(&server, reqwest::Method::POST, rules(70_000)).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("At most 100 fault rules"),
        "{refused}"
    );
    assert_eq!(
        faults(&server, reqwest::Method::POST, rules(100)).await,
        (200, serde_json::json!({"rules": 100}))
    );
    assert_eq!(faults(&server, reqwest::Method::POST, rules(1)).await.0, 400);
    let listed = faults(&server, reqwest::Method::GET, None).await.1;
    assert_eq!(listed["rules"].as_array().map(Vec::len), Some(100));
}

/// A message move task's rate follows the virtual clock: it moves what
/// the clock's time allows, and catches up at once when the clock jumps.
#[tokio::test]
async fn a_move_task_moves_as_the_virtual_clock_moves() {
    let server = Server::start_with(&["--control-api", "--clock", "virtual"]);
    let sqs = server.client();
    let arn = |name: &str| format!("arn:aws:sqs:us-east-1:000000000000:{name}");
    create_queue_url(&sqs, "dlq", &[]).await;
    let redrive = serde_json::json!({"deadLetterTargetArn": arn("dlq"), "maxReceiveCount": 1}).to_string();
    let source = create_queue_url(&sqs, "source", &[("RedrivePolicy", &redrive)]).await;
    for n in 0..5 {
        send_body(&sqs, &source, format!("m{n}")).await;
    }
    for _ in 0..2 {
        // Received once and back at once; the next receive moves them on.
        sqs.receive_message()
            .queue_url(&source)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .send()
            .await
            .unwrap();
    }
    sqs.start_message_move_task()
        .source_arn(arn("dlq"))
        .max_number_of_messages_per_second(1)
        .send()
        .await
        .unwrap();
    let moved = || async {
        let task = latest_move_task(&sqs, &arn("dlq")).await;
        (
            task.approximate_number_of_messages_moved(),
            task.status().map(str::to_string),
        )
    };
    // Up to 5 s for the task to have moved `want` (and to be `status`).
    let until = |want: i64, status: Option<&'static str>| async move {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let now = moved().await;
            let there = now.0 == want && status.is_none_or(|s| now.1.as_deref() == Some(s));
            if there || std::time::Instant::now() >= deadline {
                return now;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    assert_eq!(until(1, None).await.0, 1, "the first second's one");
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert_eq!(moved().await.0, 1, "time stands still, and so does the task");
    clock(&server, Some(2.0)).await;
    assert_eq!(until(3, None).await.0, 3, "two seconds more: two more");
    clock(&server, Some(100.0)).await;
    assert_eq!(until(5, None).await.0, 5, "the rest at once");
    assert_eq!(
        until(5, Some("COMPLETED")).await,
        (5, Some("COMPLETED".to_string()))
    );
}
