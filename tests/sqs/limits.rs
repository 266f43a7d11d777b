//! Limits: caps on queues, messages and bytes held answer OverLimit; the
//! connection cap makes extra clients wait; slow, oversized and truncated
//! requests get 4xx answers while the server keeps serving.

use std::time::Duration;

use crate::common::{Server, error_code};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test]
async fn holding_caps_answer_over_limit() {
    let server = Server::start_with(&["--max-queues", "2", "--max-messages", "3", "--max-bytes", "2KiB"]);
    let sqs = server.client();
    let url = sqs
        .create_queue()
        .queue_name("one")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    sqs.create_queue().queue_name("two").send().await.unwrap();
    let result = sqs.create_queue().queue_name("three").send().await;
    let error = result.as_ref().unwrap_err();
    assert_eq!(error.raw_response().unwrap().status().as_u16(), 403);
    assert_eq!(error_code(result), "OverLimit");

    sqs.send_message()
        .queue_url(&url)
        .message_body("x".repeat(1_500))
        .send()
        .await
        .unwrap();
    let too_many_bytes = sqs
        .send_message()
        .queue_url(&url)
        .message_body("y".repeat(1_000))
        .send()
        .await;
    assert_eq!(error_code(too_many_bytes), "OverLimit");
    sqs.send_message()
        .queue_url(&url)
        .message_body("small")
        .send()
        .await
        .unwrap();
    sqs.send_message()
        .queue_url(&url)
        .message_body("small")
        .send()
        .await
        .unwrap();
    let too_many = sqs
        .send_message()
        .queue_url(&url)
        .message_body("small")
        .send()
        .await;
    assert_eq!(error_code(too_many), "OverLimit");

    // Consuming makes room again.
    let received = sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    for message in received.messages() {
        sqs.delete_message()
            .queue_url(&url)
            .receipt_handle(message.receipt_handle().unwrap())
            .send()
            .await
            .unwrap();
    }
    sqs.send_message()
        .queue_url(&url)
        .message_body("room again")
        .send()
        .await
        .unwrap();
}

/// Queue policies were held without any limit counting them: twelve
/// CreateQueue calls with 4 MiB policies under `--max-bytes 5MiB` added
/// 82 MiB. A policy is at most 8,192 bytes now, and what queues hold counts
/// toward --max-bytes as messages do.
#[tokio::test]
async fn queue_policies_and_tags_count_toward_max_bytes() {
    let server = Server::start_with(&["--max-bytes", "20KiB"]);
    let sqs = server.client();
    let policy = format!("{{\"Id\":\"{}\"}}", "p".repeat(8_000));
    let mut created = Vec::new();
    let refused = loop {
        let result = sqs
            .create_queue()
            .queue_name(format!("policy-{}", created.len()))
            .attributes(aws_sdk_sqs::types::QueueAttributeName::Policy, &policy)
            .send()
            .await;
        match result {
            Ok(out) => created.push(out.queue_url.unwrap()),
            Err(_) => break result,
        }
        assert!(created.len() < 10, "queues beyond --max-bytes are refused");
    };
    assert_eq!(
        created.len(),
        2,
        "two 8 KB policies fit in 20 KiB, a third does not"
    );
    assert_eq!(error_code(refused), "OverLimit");
    let url = &created[0];
    let full = sqs
        .send_message()
        .queue_url(url)
        .message_body("m".repeat(5_000))
        .send()
        .await;
    assert_eq!(
        error_code(full),
        "OverLimit",
        "the policies' bytes leave no room for this message"
    );
    sqs.delete_queue().queue_url(url).send().await.unwrap();
    let url = &created[1];
    sqs.send_message()
        .queue_url(url)
        .message_body("m".repeat(5_000))
        .send()
        .await
        .expect("room once a queue is gone");
}

/// FIFO deduplication records outlive their messages by five minutes; sends
/// with fresh ids, each deleted at once, once grew memory without any limit
/// noticing. They count toward --max-bytes now.
#[tokio::test]
async fn fifo_deduplication_records_count_toward_max_bytes() {
    let server = Server::start_with(&["--max-bytes", "64KiB"]);
    let sqs = server.client();
    let url = sqs
        .create_queue()
        .queue_name("dedup.fifo")
        .attributes(aws_sdk_sqs::types::QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let mut refused_after = None;
    for n in 0..2_000 {
        let sent = sqs
            .send_message()
            .queue_url(&url)
            .message_body("m")
            .message_group_id("g")
            .message_deduplication_id(format!("a-fresh-deduplication-id-{n:05}"))
            .send()
            .await;
        if sent.is_err() {
            assert_eq!(error_code(sent), "OverLimit");
            refused_after = Some(n);
            break;
        }
        let received = sqs.receive_message().queue_url(&url).send().await.unwrap();
        assert!(crate::common::delete_received(&sqs, &url, &received.messages()[0]).await);
    }
    // Each record counts 2 × 30 + 160 bytes: about 300 fit in 64 KiB.
    let refused_after = refused_after.expect("deduplication records reached --max-bytes");
    assert!(
        (250..350).contains(&refused_after),
        "refused after {refused_after} sends"
    );
}

pub(crate) async fn raw(server: &Server, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut response = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut response))
        .await
        .unwrap()
        .unwrap();
    String::from_utf8_lossy(&response[..n]).into_owned()
}

#[tokio::test]
async fn slow_oversized_and_truncated_requests_get_4xx_and_the_server_goes_on() {
    let server = Server::start_with(&["--request-timeout", "1s"]);

    // A body that never finishes arriving.
    let mut slow = TcpStream::connect(("127.0.0.1", server.port)).await.unwrap();
    slow.write_all(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amz-Target: AmazonSQS.ListQueues\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 100\r\n\r\n{\"a").await.unwrap();
    let mut response = vec![0u8; 4096];
    let started = std::time::Instant::now();
    let n = tokio::time::timeout(Duration::from_secs(5), slow.read(&mut response))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&response[..n]);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("RequestTimeout"));
    assert!(started.elapsed() >= Duration::from_millis(900));

    // Headers far beyond any SDK's.
    let mut huge = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n".to_vec();
    for i in 0..200 {
        huge.extend(format!("X-Padding-{i}: {}\r\n", "p".repeat(2_000)).as_bytes());
    }
    huge.extend(b"Content-Length: 2\r\n\r\n{}");
    let text = raw(&server, &huge).await;
    assert!(
        text.starts_with("HTTP/1.1 4"),
        "oversized headers answer 4xx: {}",
        &text[..text.len().min(80)]
    );

    // A body cut short by the client.
    {
        let mut cut = TcpStream::connect(("127.0.0.1", server.port)).await.unwrap();
        cut.write_all(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amz-Target: AmazonSQS.CreateQueue\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 100\r\n\r\n{\"QueueName\"").await.unwrap();
    }
    // A wrong content type with a JSON target stays a JSON error.
    let text = raw(&server, b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amz-Target: AmazonSQS.ListQueues\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}").await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");

    let sqs = server.client();
    sqs.create_queue()
        .queue_name("still-serving")
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn connections_beyond_the_cap_wait_for_one_to_close() {
    let server = Server::start_with(&["--max-connections", "2"]);
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).await.unwrap();
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 256];
        let n = stream.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        held.push(stream); // kept alive: it still holds its place
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let waiting = client.get(format!("{}/health", server.url)).send().await;
    assert!(
        waiting.is_err(),
        "a third connection is not served while two are open"
    );
    held.pop();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let served = client.get(format!("{}/health", server.url)).send().await.unwrap();
    assert_eq!(served.status(), 200);
}

#[tokio::test]
async fn the_operational_endpoints_can_have_an_address_of_their_own() {
    let admin_port = crate::common::free_port();
    let admin = format!("127.0.0.1:{admin_port}");
    let server = Server::start_with(&["--admin-listen", &admin, "--header-timeout", "1s"]);
    let sqs = server.client();
    sqs.create_queue().queue_name("split").send().await.unwrap();
    // The admin address is served as the SQS address is: a head trickled
    // in loses its connection at the header timeout (it was once served
    // without the listener's timeouts, caps and graceful stop).
    let mut trickling = TcpStream::connect(("127.0.0.1", admin_port)).await.unwrap();
    trickling
        .write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(5), trickling.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "the admin address closes a connection whose head is not complete after --header-timeout: {closed:?}"
    );
    for path in ["/health", "/ready", "/status", "/metrics", "/"] {
        let on_admin = reqwest::get(format!("http://{admin}{path}")).await.unwrap();
        assert_eq!(on_admin.status(), 200, "{path} on the admin address");
        let on_sqs = reqwest::get(format!("{}{path}", server.url)).await.unwrap();
        assert_eq!(on_sqs.status(), 404, "{path} is not on the SQS address");
    }
    let metrics = crate::common::get_text(&format!("http://{admin}/metrics")).await;
    assert!(metrics.contains("ssq_requests_total"));
    // The admin page's queue URLs point at the SQS address, not its own.
    let overview = crate::common::get_text(&format!("http://{admin}/admin/api/overview")).await;
    assert!(
        overview.contains(&format!("\"url\":\"{}/000000000000/split\"", server.url)),
        "{overview}"
    );
    // An empty queue's oldest message is 0 seconds old.
    assert!(
        metrics.contains("ssq_queue_oldest_message_age_seconds{queue=\"split\"} 0"),
        "{metrics}"
    );
}

#[tokio::test]
async fn idle_connections_are_closed_but_long_polls_are_not() {
    let server = Server::start_with(&["--idle-timeout", "2s"]);
    let mut idle = TcpStream::connect(("127.0.0.1", server.port)).await.unwrap();
    let mut buf = [0u8; 64];
    let started = std::time::Instant::now();
    let n = tokio::time::timeout(Duration::from_secs(5), idle.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 0, "the server closed the idle connection");
    assert!(started.elapsed() >= Duration::from_millis(1_900));

    // A long poll shorter than the idle timeout keeps its connection.
    let sqs = server.client();
    let url = sqs
        .create_queue()
        .queue_name("idle")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let out = sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    assert!(out.messages().is_empty());
}

/// Clients that trickle their request heads a byte at a time once held
/// every place for as long as they liked: with `--max-connections` taken by
/// them, no other client got in.
#[tokio::test]
async fn trickled_request_heads_do_not_hold_connections() {
    let server = Server::start_with(&["--max-connections", "4", "--header-timeout", "1s"]);
    let port = server.port;
    let slowloris: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                let started = std::time::Instant::now();
                for byte in b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
                    .iter()
                    .chain(std::iter::repeat(&b'a'))
                {
                    if stream.write_all(&[*byte]).await.is_err()
                        || started.elapsed() > Duration::from_secs(20)
                    {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                started.elapsed()
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let served = client.get(format!("{}/health", server.url)).send().await;
    assert_eq!(
        served
            .expect("a normal client gets in once the slow heads time out")
            .status(),
        200
    );
    for held in slowloris {
        let held_for = held.await.unwrap();
        assert!(
            held_for < Duration::from_secs(5),
            "a trickling client held on for {held_for:?}"
        );
    }
}

/// Clients that send most of a large body and stall once made the server
/// buffer 5 MiB each, without bound; now all bodies share one budget.
#[tokio::test]
async fn stalled_bodies_cannot_take_more_than_the_body_budget() {
    let server = Server::start_with(&["--max-body-buffer", "16MiB", "--request-timeout", "20s"]);
    let before = server.rss_kib() * 1024;
    let mut stalled = Vec::new();
    let chunk = vec![b'a'; 1024 * 1024];
    for _ in 0..40 {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).await.unwrap();
        let head = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\nAction=SendMessage&MessageBody=",
            5 * 1024 * 1024 - 64
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        // Up to 4 MiB each, as far as the server reads; then nothing more.
        for _ in 0..4 {
            if tokio::time::timeout(Duration::from_millis(200), stream.write_all(&chunk))
                .await
                .is_err()
            {
                break;
            }
        }
        stalled.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = (server.rss_kib() * 1024).saturating_sub(before);
    assert!(
        grown < 64 * 1024 * 1024,
        "40 stalled 4 MiB bodies grew the server by {} MiB",
        grown >> 20
    );
    // Normal requests still get an answer: a retryable 503 while the budget
    // is taken, never a hang.
    let sqs = crate::common::client_without_retries(&server.url);
    match sqs.list_queues().send().await {
        Ok(_) => {}
        Err(error) => assert_eq!(error.raw_response().map(|r| r.status().as_u16()), Some(503)),
    }
    drop(stalled);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        server.client().list_queues().send().await.is_ok(),
        "served again once they left"
    );
}

/// Answers were held whole for clients that never read them: eight 1 MiB
/// messages of `<` make a 32 MiB XML page, and 16 connections that asked
/// for it and read nothing pinned 512 MiB. Large answers now draw on
/// --max-body-buffer until written; past it the request gets a 503.
#[tokio::test]
async fn answers_clients_do_not_read_are_held_within_the_body_budget() {
    let server = Server::start_with(&["--max-body-buffer", "48MiB"]);
    let sqs = server.client();
    let url = crate::common::create_queue_url(&sqs, "escaped", &[]).await;
    for _ in 0..9 {
        crate::common::send_body(&sqs, &url, "<".repeat(1_048_576)).await;
    }
    let before = server.rss_kib();
    let path = format!(
        "/_aws/sqs/messages?{}",
        serde_urlencoded::to_string([("QueueUrl", url.as_str())]).unwrap()
    );
    let mut silent = Vec::new();
    for _ in 0..16 {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).await.unwrap();
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        silent.push(stream);
    }
    // Each answer's status line, read once the answer is made; the rest
    // of each answer stays unread.
    let mut statuses = Vec::new();
    for stream in &mut silent {
        let mut status = [0u8; 12];
        tokio::time::timeout(Duration::from_secs(120), stream.read_exact(&mut status))
            .await
            .expect("every look is answered within 120 s")
            .unwrap();
        statuses.push(String::from_utf8_lossy(&status[9..]).into_owned());
    }
    let grown_mib = server.rss_kib().saturating_sub(before) / 1024;
    eprintln!(
        "16 clients not reading 32 MiB answers: the server grew by {grown_mib} MiB; answers {statuses:?}"
    );
    assert!(
        grown_mib < 48 + 120,
        "16 unread answers of 32 MiB grew the server by {grown_mib} MiB: the budget is 48 MiB ({statuses:?})"
    );
    let held = statuses.iter().filter(|status| *status == "200").count();
    assert!(held <= 1, "one 32 MiB answer fits in 48 MiB: {statuses:?}");
    assert!(
        statuses.iter().all(|status| status == "200" || status == "503"),
        "{statuses:?}"
    );
    drop(silent);
    // Once those connections are gone, a reading client gets its page.
    let page = crate::common::wait_for(Duration::from_secs(10), || async {
        reqwest::get(format!("{}{path}", server.url))
            .await
            .is_ok_and(|response| response.status() == 200)
    })
    .await;
    assert!(page.is_some(), "the budget was given back");
}
