//! Snapshots: the state of a Redis-backed group exported over HTTP
//! (`/admin/api/snapshot`) and imported into a `--data-dir` instance at
//! start (`--import`), through real processes and the Rust SDK.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::{MessageAttributeValue, MessageSystemAttributeName};

use crate::common::{MariadbServer, PostgresServer, RedisServer, Server, create_queue_url, wait_for};
use crate::data_dir::refused_start;
use crate::databases::Database;
use crate::disk::{DataDir, SmallDisk, attribute, kill_9, queue_attributes, send_job, start_on};

fn message_attribute(kind: &str, text: &str) -> MessageAttributeValue {
    let value = MessageAttributeValue::builder().data_type(kind);
    match kind {
        "Binary" => value.binary_value(Blob::new(text.as_bytes())),
        _ => value.string_value(text),
    }
    .build()
    .unwrap()
}

/// The queue's message counts: visible, in flight, delayed.
async fn counts(sqs: &aws_sdk_sqs::Client, url: &str) -> (String, String, String) {
    let attributes = queue_attributes(sqs, url).await;
    (
        attribute(&attributes, "ApproximateNumberOfMessages"),
        attribute(&attributes, "ApproximateNumberOfMessagesNotVisible"),
        attribute(&attributes, "ApproximateNumberOfMessagesDelayed"),
    )
}

/// How many messages of the queue named `name` are visible.
async fn visible_in(server: &Server, name: &str) -> String {
    let sqs = server.client();
    let url = sqs.get_queue_url().queue_name(name).send().await.unwrap();
    counts(&sqs, url.queue_url().unwrap()).await.0
}

/// The snapshot an instance exports, checked to be whole.
async fn export(server: &Server) -> String {
    // Not `Server::get`, whose half a second is for probes: a snapshot of
    // megabytes from a debug build on a busy machine takes longer.
    let response = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
        .get(format!("{}/admin/api/snapshot", server.url))
        .send()
        .await
        .expect("the snapshot is answered");
    let status = response.status().as_u16();
    let text = response.text().await.expect("the snapshot is read whole");
    assert_eq!(status, 200, "{text}");
    assert!(text.starts_with(r#"{"snapshot":{"version":2"#), "{text}");
    let end = text.lines().last().unwrap_or_default();
    assert!(
        end.starts_with(r#"{"end":"#),
        "the snapshot ends with its end line: {end}"
    );
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_backed_groups_snapshot_imports_into_a_data_dir_with_every_message_and_its_state() {
    let redis = RedisServer::start();
    let group = Server::start_node(&redis, "exporter");
    let ready = wait_for(Duration::from_secs(20), || group.is_ready()).await;
    assert!(ready.is_some(), "the Redis-backed instance leads");
    let sqs = group.client();
    let orders = create_queue_url(&sqs, "orders", &[("VisibilityTimeout", "45")]).await;
    sqs.tag_queue()
        .queue_url(&orders)
        .tags("team", "payments")
        .send()
        .await
        .unwrap();
    let fifo = create_queue_url(&sqs, "jobs.fifo", &[("FifoQueue", "true")]).await;

    let mut sent = HashMap::new();
    for body in ["first", "second"] {
        let out = sqs
            .send_message()
            .queue_url(&orders)
            .message_body(body)
            .message_attributes("kind", message_attribute("String", "order"))
            .message_attributes("amount", message_attribute("Number", "12.50"))
            .message_attributes("raw", message_attribute("Binary", "\u{1}\u{2}"))
            .send()
            .await
            .unwrap();
        sent.insert(body, out);
    }
    sqs.send_message()
        .queue_url(&orders)
        .message_body("later")
        .delay_seconds(600)
        .send()
        .await
        .unwrap();
    // "first" is in flight, for 45 s, when the snapshot is taken.
    let taken = sqs
        .receive_message()
        .queue_url(&orders)
        .max_number_of_messages(1)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(taken[0].body(), Some("first"));
    let mut sequence_numbers = Vec::new();
    for n in 1..=2 {
        sequence_numbers.push(send_job(&sqs, &fifo, n).await.sequence_number.unwrap());
    }

    let snapshot = export(&group).await;
    drop(group);
    let dir = DataDir::new("import");
    let file = std::env::temp_dir().join(format!("ssq-snapshot-{}.jsonl", std::process::id()));
    std::fs::write(&file, &snapshot).unwrap();
    let file = file.to_str().unwrap().to_string();
    let mut disk = start_on(&dir, &["--import", &file]).await;
    let sqs = disk.client();

    assert_eq!(counts(&sqs, &orders).await, ("1".into(), "1".into(), "1".into()));
    let attributes = queue_attributes(&sqs, &orders).await;
    assert_eq!(attribute(&attributes, "VisibilityTimeout"), "45");
    let tags = sqs
        .list_queue_tags()
        .queue_url(&orders)
        .send()
        .await
        .unwrap()
        .tags
        .unwrap_or_default();
    assert_eq!(tags.get("team").map(String::as_str), Some("payments"));

    let second = sqs
        .receive_message()
        .queue_url(&orders)
        .message_attribute_names("All")
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(second.len(), 1);
    let original = &sent["second"];
    assert_eq!(second[0].body(), Some("second"));
    assert_eq!(second[0].message_id(), original.message_id());
    assert_eq!(second[0].md5_of_body(), original.md5_of_message_body());
    assert_eq!(
        second[0].md5_of_message_attributes(),
        original.md5_of_message_attributes()
    );
    let attributes = second[0].message_attributes().cloned().unwrap_or_default();
    assert_eq!(attributes["kind"], message_attribute("String", "order"));
    assert_eq!(attributes["amount"], message_attribute("Number", "12.50"));
    assert_eq!(attributes["raw"], message_attribute("Binary", "\u{1}\u{2}"));

    // The handle received from the Redis-backed group deletes here.
    sqs.delete_message()
        .queue_url(&orders)
        .receipt_handle(taken[0].receipt_handle().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(counts(&sqs, &orders).await, ("0".into(), "1".into(), "1".into()));

    let jobs = sqs
        .receive_message()
        .queue_url(&fifo)
        .max_number_of_messages(10)
        .message_system_attribute_names(MessageSystemAttributeName::SequenceNumber)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    let bodies: Vec<&str> = jobs.iter().filter_map(|m| m.body()).collect();
    assert_eq!(bodies, ["job 1", "job 2"]);
    let numbers: Vec<String> = jobs
        .iter()
        .map(|m| m.attributes().unwrap()[&MessageSystemAttributeName::SequenceNumber].clone())
        .collect();
    assert_eq!(numbers, sequence_numbers);

    // The import is on disk: a restart with the same --import finds the
    // queues there and imports nothing twice.
    kill_9(&mut disk);
    let disk = start_on(&dir, &["--import", &file]).await;
    let sqs = disk.client();
    assert_eq!(counts(&sqs, &orders).await, ("0".into(), "1".into(), "1".into()));
    assert_eq!(counts(&sqs, &fifo).await, ("0".into(), "2".into(), "0".into()));
    let _ = std::fs::remove_file(&file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_cannot_be_imported_stops_ssq_naming_the_file_and_line() {
    let file = std::env::temp_dir().join(format!("ssq-bad-snapshot-{}.jsonl", std::process::id()));
    std::fs::write(
        &file,
        "{\"snapshot\":{\"version\":1}}\n{\"queue\":{\"name\":\"q\"}}\n{\"message\":{\"body\":\"cut off here\"}}\n",
    )
    .unwrap();
    let (code, stderr) = refused_start(&[], &["--import", file.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&file.display().to_string()),
        "names the file: {stderr}"
    );
    assert!(
        stderr.contains("line 4") && stderr.contains("cut short"),
        "says where and what: {stderr}"
    );
    let _ = std::fs::remove_file(&file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passive_refuses_to_export_rather_than_answer_an_empty_state() {
    let redis = RedisServer::start();
    let leader = Server::start_node(&redis, "leader");
    assert!(
        wait_for(Duration::from_secs(20), || leader.is_ready())
            .await
            .is_some()
    );
    let passive = Server::start_node(&redis, "passive");
    let (status, text) = passive.get("/admin/api/snapshot").await.expect("answered");
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("leader"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_larger_than_a_piece_is_exported_whole_and_imports_into_memory() {
    let source = Server::start();
    let sqs = source.client();
    let url = create_queue_url(&sqs, "big", &[]).await;
    // 2,500 messages of 2 KiB: pieces cut by bytes and by count.
    let bodies: Vec<String> = (0..2_500)
        .map(|n| format!("{n:06}{}", "b".repeat(2042)))
        .collect();
    crate::common::send_batches(&sqs, &url, &bodies).await;
    let snapshot = export(&source).await;
    let lines: Vec<serde_json::Value> = snapshot
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let bodies: Vec<String> = lines
        .iter()
        .filter_map(|line| line["message"]["body"].as_str())
        .map(|body| body[..6].to_string())
        .collect();
    let expected: Vec<String> = (0..2_500).map(|n| format!("{n:06}")).collect();
    assert_eq!(bodies, expected, "every message once, in order");
    assert_eq!(
        lines.last().unwrap()["end"],
        serde_json::json!({"queues": 1, "messages": 2_500})
    );

    let file = std::env::temp_dir().join(format!("ssq-big-snapshot-{}.jsonl", std::process::id()));
    std::fs::write(&file, &snapshot).unwrap();
    let copy = Server::start_with(&["--import", file.to_str().unwrap()]);
    let (visible, _, _) = counts(&copy.client(), &url).await;
    assert_eq!(visible, "2500");
    let _ = std::fs::remove_file(&file);
}

/// A snapshot of three queues, `a`, `b` and `c`, with `per_queue` messages
/// of `body_bytes` each, written to a file of its own.
async fn three_queues(name: &str, per_queue: usize, body_bytes: usize) -> std::path::PathBuf {
    let source = Server::start();
    let sqs = source.client();
    for queue in ["a", "b", "c"] {
        let url = create_queue_url(&sqs, queue, &[]).await;
        let bodies: Vec<String> = (0..per_queue)
            .map(|n| format!("{n:06}{}", "m".repeat(body_bytes)))
            .collect();
        crate::common::send_batches(&sqs, &url, &bodies).await;
    }
    let file = std::env::temp_dir().join(format!("ssq-{name}-{}.jsonl", std::process::id()));
    std::fs::write(&file, export(&source).await).unwrap();
    file
}

/// The queues an instance on `dir` (started without `--import`) holds.
async fn queues_on(dir: &DataDir) -> Vec<String> {
    let server = start_on(dir, &[]).await;
    let listed = server.client().list_queues().send().await.unwrap();
    listed.queue_urls().to_vec()
}

/// A snapshot that does not fit the limits is refused whole, in every
/// mode: ssq exits naming the cause, and nothing of it is stored, so that
/// dropping `--import` afterwards loses nothing that was imported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_does_not_fit_imports_nothing_and_stops_ssq_in_every_mode() {
    let file = three_queues("no-room", 1, 10).await;
    let file = file.to_str().unwrap();
    let redis = RedisServer::start();
    let redis_url = redis.url();
    for (limit, flag) in [
        (["--max-queues", "2"], "--max-queues"),
        (["--max-messages", "2"], "--max-messages"),
    ] {
        // Memory-only.
        let (code, said) = refused_start(&[], &[&limit[..], &["--import", file]].concat());
        assert_eq!(code, Some(2), "memory-only, {flag}: {said}");
        assert!(
            said.contains("nothing was imported") && said.contains(flag),
            "{said}"
        );
        // On disk.
        let dir = DataDir::new("no-room");
        let (code, said) = refused_start(
            &[],
            &[&limit[..], &["--data-dir", dir.path(), "--import", file]].concat(),
        );
        assert_eq!(code, Some(2), "disk, {flag}: {said}");
        assert!(
            said.contains("nothing was imported") && said.contains(flag),
            "{said}"
        );
        assert!(!said.contains("Ready."), "never served: {said}");
        assert_eq!(
            queues_on(&dir).await,
            Vec::<String>::new(),
            "disk, {flag}: nothing stored"
        );
        // On Redis.
        let mut args = vec!["--redis-url", redis_url.as_str()];
        args.extend_from_slice(crate::common::FAST_LOCK);
        let (code, said) = refused_start(&[], &[&args[..], &limit[..], &["--import", file]].concat());
        assert_eq!(code, Some(2), "Redis, {flag}: {said}");
        assert!(said.contains("nothing was imported"), "{said}");
        let leader = Server::start_node(&redis, "after");
        assert!(
            wait_for(Duration::from_secs(20), || leader.is_ready())
                .await
                .is_some()
        );
        let listed = leader.client().list_queues().send().await.unwrap();
        assert!(
            listed.queue_urls().is_empty(),
            "Redis, {flag}: nothing stored: {listed:?}"
        );
    }
    let _ = std::fs::remove_file(file);
}

/// A write that fails in the middle of an import (a full disk) stores
/// none of it: ssq exits naming the cause, and the directory holds what it
/// held before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_the_disk_cannot_hold_stores_nothing_and_stops_ssq() {
    let Some(disk) = SmallDisk::mount("import", "3m") else {
        return;
    };
    // About 6 MiB of messages, for a disk of 3.
    let file = three_queues("too-big", 20, 100 * 1024).await;
    let dir = DataDir(disk.0.join("data"));
    let (code, said) = refused_start(
        &[],
        &["--data-dir", dir.path(), "--import", file.to_str().unwrap()],
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("could not be stored") && said.contains("nothing was imported"),
        "{said}"
    );
    assert_eq!(
        queues_on(&dir).await,
        Vec::<String>::new(),
        "nothing half-imported"
    );
    let _ = std::fs::remove_file(&file);
}

/// Topics travel with the queues: a Redis-backed instance's topics, their
/// subscriptions (same ARNs, filter policies, a pending one's token) and a
/// FIFO topic's sequence are exported and imported into a `--data-dir`
/// instance, which publishes through them and keeps them across a SIGKILL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_and_subscriptions_are_exported_and_imported_with_the_queues() {
    use crate::common::{create_fifo_topic, message_of, sns_client_for, subscribe_queue};
    use aws_sdk_sns::types::MessageAttributeValue as SnsAttribute;

    let redis = RedisServer::start();
    let exporter = Server::start_node(&redis, "topics-exporter");
    let ready = wait_for(Duration::from_secs(20), || exporter.is_ready()).await;
    assert!(ready.is_some(), "the Redis-backed instance leads");
    let (sqs, sns) = (exporter.client(), sns_client_for(&exporter.url));
    let paid = create_queue_url(&sqs, "paid", &[]).await;
    let ordered = create_queue_url(&sqs, "ordered.fifo", &[("FifoQueue", "true")]).await;
    let orders = sns.create_topic().name("orders").tags(
        aws_sdk_sns::types::Tag::builder()
            .key("team")
            .value("payments")
            .build()
            .unwrap(),
    );
    let orders = orders.send().await.unwrap().topic_arn.unwrap();
    let filtered = subscribe_queue(
        &sns,
        &sqs,
        &orders,
        &paid,
        &[
            ("FilterPolicy", r#"{"kind":["paid"]}"#),
            ("RawMessageDelivery", "true"),
        ],
    )
    .await;
    let hook = sns
        .subscribe()
        .topic_arn(&orders)
        .protocol("http")
        .endpoint("http://127.0.0.1:9/hook")
        .return_subscription_arn(true)
        .send()
        .await
        .unwrap()
        .subscription_arn
        .unwrap();
    let jobs = create_fifo_topic(&sns, "jobs.fifo", &[]).await;
    subscribe_queue(&sns, &sqs, &jobs, &ordered, &[]).await;
    let mut sequence = 0u128;
    for body in ["one", "two"] {
        let out = sns
            .publish()
            .topic_arn(&jobs)
            .message(body)
            .message_group_id("g")
            .send()
            .await
            .unwrap();
        sequence = out.sequence_number.unwrap().parse().unwrap();
    }

    let snapshot = export(&exporter).await;
    let lines: Vec<serde_json::Value> = snapshot
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.last().unwrap()["end"]["topics"], 2, "{snapshot}");
    let token = lines
        .iter()
        .map(|line| &line["subscription"])
        .find(|sub| sub["protocol"] == "http")
        .and_then(|sub| sub["confirmation_token"].as_str())
        .expect("a pending subscription keeps its token")
        .to_string();
    let file = std::env::temp_dir().join(format!("ssq-topics-snapshot-{}.jsonl", std::process::id()));
    std::fs::write(&file, &snapshot).unwrap();

    let dir = DataDir::new("topics-import");
    let mut importer = start_on(&dir, &["--import", file.to_str().unwrap()]).await;
    let (sqs, sns) = (importer.client(), sns_client_for(&importer.url));
    let listed = sns.list_topics().send().await.unwrap();
    let mut arns: Vec<String> = listed
        .topics()
        .iter()
        .filter_map(|topic| topic.topic_arn.clone())
        .collect();
    arns.sort();
    assert_eq!(arns, vec![jobs.clone(), orders.clone()]);
    let tags = sns
        .list_tags_for_resource()
        .resource_arn(&orders)
        .send()
        .await
        .unwrap();
    assert_eq!(tags.tags()[0].key(), "team");
    let attributes = sns
        .get_subscription_attributes()
        .subscription_arn(&filtered)
        .send()
        .await
        .expect("the subscription keeps its ARN")
        .attributes
        .unwrap_or_default();
    assert_eq!(attributes["FilterPolicy"], r#"{"kind":["paid"]}"#);
    let confirmed = sns
        .confirm_subscription()
        .topic_arn(&orders)
        .token(&token)
        .send()
        .await
        .expect("the pending subscription's token confirms it after the import");
    assert_eq!(confirmed.subscription_arn.as_deref(), Some(hook.as_str()));

    // The filter is compiled again: only the paid kind reaches the queue.
    for kind in ["paid", "refunded"] {
        sns.publish()
            .topic_arn(&orders)
            .message(format!("a {kind} order"))
            .message_attributes(
                "kind",
                SnsAttribute::builder()
                    .data_type("String")
                    .string_value(kind)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
    }
    let received = sqs
        .receive_message()
        .queue_url(&paid)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    let bodies: Vec<&str> = received.messages().iter().filter_map(|m| m.body()).collect();
    assert_eq!(bodies, vec!["a paid order"], "raw delivery, filtered");
    // The FIFO topic's sequence goes on from the exporter's.
    let next = sns
        .publish()
        .topic_arn(&jobs)
        .message("three")
        .message_group_id("g")
        .send()
        .await
        .unwrap();
    assert!(next.sequence_number.unwrap().parse::<u128>().unwrap() > sequence);

    // Durable: a SIGKILL and a start without --import keep them.
    kill_9(&mut importer);
    let restarted = start_on(&dir, &[]).await;
    let sns = sns_client_for(&restarted.url);
    assert_eq!(sns.list_topics().send().await.unwrap().topics().len(), 2);
    let restarted_sqs = restarted.client();
    let bodies: Vec<String> = restarted_sqs
        .receive_message()
        .queue_url(&ordered)
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap()
        .messages()
        .iter()
        .map(|m| message_of(m.body().unwrap_or_default()))
        .collect();
    assert_eq!(bodies, vec!["one", "two", "three"]);
    let _ = std::fs::remove_file(&file);
}

/// A snapshot imports into an instance on a SQL store, which stores it
/// before it serves: exported again it has every queue and message, and an
/// instance started later without `--import` finds them in the database.
async fn a_snapshot_imports_into_a_database_and_exports_back_whole<D: Database>() {
    let file = three_queues(D::MODE, 300, 100).await;
    let database = D::start();
    let mut importing = leading(database.node_with("importing", &["--import", file.to_str().unwrap()])).await;
    let exported = export(&importing).await;
    let end: serde_json::Value = serde_json::from_str(exported.lines().last().unwrap()).unwrap();
    assert_eq!(end["end"], serde_json::json!({"queues": 3, "messages": 900}));
    importing.signal("KILL");
    importing.wait_exit(Duration::from_secs(5));
    drop(importing);
    let later = leading(database.node("later")).await;
    let visible = visible_in(&later, "b").await;
    assert_eq!(visible, "300");
    let _ = std::fs::remove_file(&file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_imports_into_postgres_and_exports_back_whole() {
    a_snapshot_imports_into_a_database_and_exports_back_whole::<PostgresServer>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_imports_into_mysql_and_exports_back_whole() {
    a_snapshot_imports_into_a_database_and_exports_back_whole::<MariadbServer>().await;
}

/// An import is one commit, however large: it gets a second more than the
/// store's time limit for each 4 MiB it writes. Here about 30 MB, which
/// takes the database most of a second to write, imports whole under a
/// time limit of 300 ms (1 s on MySQL, in several calls of one transaction:
/// more than half of a 16 MiB packet).
async fn a_large_snapshot_imports_beyond_the_time_limit_of_a_call<D: Database>(limit: &str) {
    let file = three_queues(&format!("{}-large", D::MODE), 4_000, 2_000).await;
    let database = D::start();
    let import = file.to_str().unwrap();
    let url = database.url();
    let server = Server::start_with(&[D::FLAG, &url, D::TIMEOUT_FLAG, limit, "--import", import]);
    crate::common::wait_for(Duration::from_secs(60), || server.is_ready())
        .await
        .expect("imports, then leads");
    let visible = visible_in(&server, "c").await;
    assert_eq!(visible, "4000");
    assert_eq!(database.rows(D::MESSAGES), 12_000);
    let _ = std::fs::remove_file(&file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_snapshot_imports_into_postgres_beyond_the_time_limit_of_a_call() {
    a_large_snapshot_imports_beyond_the_time_limit_of_a_call::<PostgresServer>("300ms").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_snapshot_imports_into_mysql_beyond_the_time_limit_of_a_call() {
    // A second: the import's calls and the renewals beside it share InnoDB's
    // log flushes, which took longer than 300 ms in CI with tests beside it.
    a_large_snapshot_imports_beyond_the_time_limit_of_a_call::<MariadbServer>("1s").await;
}

/// `server`, once it leads.
async fn leading(server: Server) -> Server {
    crate::common::wait_for(Duration::from_secs(20), || server.is_ready())
        .await
        .expect("leads on its database");
    server
}

/// Text of `bytes` bytes that JSON writes at twice its size (quotes and
/// line feeds), the worst a snapshot line meets.
fn escaped(bytes: usize) -> String {
    "\"\n".repeat(bytes / 2) + &"x".repeat(bytes % 2)
}

/// Whatever ssq exports, it imports: every kind of object at the largest
/// size ssq takes (a queue's name, policy and 50 tags; a message of 1 MiB
/// with ten attributes; a topic's name, policy, delivery policy and 50
/// tags; 40 subscriptions of one topic with a 256 KB filter policy each,
/// 10 MiB in all; a FIFO topic's archive of 1 MiB publications), each
/// text one that JSON escapes to twice its size, exported, imported into
/// a new instance and exported again: the same file. (Snapshot version 1
/// wrote a topic's subscriptions in its line: this one was refused.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_at_its_largest_exports_and_imports_whole() {
    use crate::common::sns_client_for;
    let source = Server::start();
    let (sqs, sns) = (source.client(), sns_client_for(&source.url));

    let queue_name = "q".repeat(80);
    let policy = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Sid":"{}","Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"*"}}]}}"#,
        "s".repeat(8_192 - 124)
    );
    assert_eq!(policy.len(), 8_192);
    let url = create_queue_url(
        &sqs,
        &queue_name,
        &[("MaximumMessageSize", "1048576"), ("Policy", &policy)],
    )
    .await;
    let mut tagging = sqs.tag_queue().queue_url(&url);
    for n in 0..50 {
        tagging = tagging.tags(format!("{n:02}{}", "k".repeat(126)), "v".repeat(256));
    }
    tagging.send().await.unwrap();
    let mut send = sqs.send_message().queue_url(&url);
    let mut attributes_size = 0;
    for n in 0..10 {
        let name = format!("a{n}{}", "n".repeat(254));
        let value = escaped(1_000);
        attributes_size += name.len() + "String".len() + value.len();
        send = send.message_attributes(name, message_attribute("String", &value));
    }
    send.message_body(escaped(1_048_576 - attributes_size))
        .send()
        .await
        .unwrap();

    let topic_name = "t".repeat(256);
    let topic = sns
        .create_topic()
        .name(&topic_name)
        .attributes("DisplayName", "d".repeat(100))
        .attributes(
            "DeliveryPolicy",
            format!(
                r#"{{"http":{{"defaultRequestPolicy":{{"headerContentType":"{}"}}}}}}"#,
                "\\\"".repeat(15_300)
            ),
        )
        .set_tags(Some(
            (0..50)
                .map(|n| {
                    aws_sdk_sns::types::Tag::builder()
                        .key(format!("{n:02}{}", "k".repeat(126)))
                        .value("v".repeat(256))
                        .build()
                        .unwrap()
                })
                .collect(),
        ))
        .send()
        .await
        .unwrap()
        .topic_arn
        .unwrap();
    // A filter policy of 256 KB whose one value is all quotes, escaped.
    let frame = r#"{"k":[""]}"#.len();
    let filter = format!(r#"{{"k":["{}"]}}"#, "\\\"".repeat((256 * 1024 - frame) / 2));
    assert_eq!(filter.len(), 256 * 1024);
    for n in 0..40 {
        sns.subscribe()
            .topic_arn(&topic)
            .protocol("sqs")
            .endpoint(format!("arn:aws:sqs:us-east-1:000000000000:filtered-{n}"))
            .attributes("FilterPolicy", &filter)
            .send()
            .await
            .unwrap();
    }
    let fifo = sns
        .create_topic()
        .name(format!("{}.fifo", "f".repeat(251)))
        .attributes("FifoTopic", "true")
        .attributes("ArchivePolicy", r#"{"MessageRetentionPeriod":"365"}"#)
        .attributes("MaximumMessageSize", "1048576")
        .send()
        .await
        .unwrap()
        .topic_arn
        .unwrap();
    for n in 0..3 {
        sns.publish()
            .topic_arn(&fifo)
            .message(escaped(1_048_576))
            .message_group_id("g".repeat(128))
            .message_deduplication_id(format!("{n}{}", "d".repeat(127)))
            .send()
            .await
            .unwrap();
    }

    let first = export(&source).await;
    let longest = first.lines().map(str::len).max().unwrap();
    assert!(first.len() > 16 * 1024 * 1024, "{} bytes in all", first.len());
    assert!(longest < 4 * 1024 * 1024, "the longest line, {longest} bytes");
    let file = std::env::temp_dir().join(format!("ssq-largest-{}.jsonl", std::process::id()));
    std::fs::write(&file, &first).unwrap();
    let copy = Server::start_with(&["--import", file.to_str().unwrap()]);
    let second = export(&copy).await;
    let _ = std::fs::remove_file(&file);
    // The same but for the header's time of export.
    let body = |text: &str| text.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
    let (first, second) = (body(&first), body(&second));
    assert_eq!(first.len(), second.len());
    for (at, (was, is)) in first.iter().zip(&second).enumerate() {
        assert!(
            was == is,
            "line {} differs: {}… against {}…",
            at + 2,
            &was[..200.min(was.len())],
            &is[..200.min(is.len())]
        );
    }
    let end: serde_json::Value = serde_json::from_str(first.last().unwrap()).unwrap();
    assert_eq!(
        end["end"],
        serde_json::json!({"queues": 1, "messages": 1, "topics": 2, "subscriptions": 40, "archived": 3})
    );
}
