//! `--data-dir`: one instance whose state is on local disk. Real processes,
//! killed with SIGKILL and started again on the same directory.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;

use crate::common::{Server, client_without_retries, create_queue_url, poll_once, wait_for};

/// A fresh directory of the test's own, removed when dropped.
pub(crate) struct DataDir(pub(crate) PathBuf);

impl DataDir {
    pub(crate) fn new(name: &str) -> DataDir {
        let dir = std::env::temp_dir().join(format!("ssq-disk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        DataDir(dir)
    }

    pub(crate) fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temporary directory")
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// ssq on `dir`, once it serves (its state is loaded).
pub(crate) async fn start_on(dir: &DataDir, extra: &[&str]) -> Server {
    let mut args = vec!["--data-dir", dir.path()];
    args.extend_from_slice(extra);
    let server = Server::start_with(&args);
    let ready = wait_for(Duration::from_secs(20), || server.is_ready()).await;
    assert!(ready.is_some(), "ssq on {} did not become ready", dir.path());
    server
}

/// Kills the process with SIGKILL: no shutdown, nothing flushed.
pub(crate) fn kill_9(server: &mut Server) {
    server.signal("KILL");
    assert!(
        server.wait_exit(Duration::from_secs(5)),
        "ssq did not die on SIGKILL"
    );
}

/// Every attribute of the queue at `url`.
pub(crate) async fn queue_attributes(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
) -> std::collections::HashMap<QueueAttributeName, String> {
    sqs.get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap_or_default()
}

pub(crate) fn attribute(
    attributes: &std::collections::HashMap<QueueAttributeName, String>,
    name: &str,
) -> String {
    attributes
        .get(&QueueAttributeName::from(name))
        .cloned()
        .unwrap_or_else(|| panic!("no {name} among {attributes:?}"))
}

/// Sends job `n` to the FIFO queue, deduplicated by its number.
pub(crate) async fn send_job(
    sqs: &aws_sdk_sqs::Client,
    fifo: &str,
    n: u32,
) -> aws_sdk_sqs::operation::send_message::SendMessageOutput {
    sqs.send_message()
        .queue_url(fifo)
        .message_body(format!("job {n}"))
        .message_group_id("g")
        .message_deduplication_id(format!("job-{n}"))
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_after_sigkill_restores_queues_messages_handles_and_fifo_state() {
    let dir = DataDir::new("restore");
    let mut server = start_on(&dir, &[]).await;
    let sqs = server.client();
    create_queue_url(&sqs, "orders-dlq", &[]).await;
    let redrive =
        r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":"3"}"#;
    let orders = create_queue_url(
        &sqs,
        "orders",
        &[("VisibilityTimeout", "45"), ("RedrivePolicy", redrive)],
    )
    .await;
    sqs.tag_queue()
        .queue_url(&orders)
        .tags("team", "payments")
        .send()
        .await
        .unwrap();
    let fifo = create_queue_url(&sqs, "jobs.fifo", &[("FifoQueue", "true")]).await;

    for body in ["one", "two", "three"] {
        sqs.send_message()
            .queue_url(&orders)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }
    sqs.send_message()
        .queue_url(&orders)
        .message_body("later")
        .delay_seconds(600)
        .send()
        .await
        .unwrap();
    let received = sqs
        .receive_message()
        .queue_url(&orders)
        .visibility_timeout(600)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(received.len(), 1);
    let handle = received[0].receipt_handle().unwrap().to_string();
    let first_fifo = send_job(&sqs, &fifo, 1).await;

    kill_9(&mut server);
    let server = start_on(&dir, &[]).await;
    let sqs = server.client();

    // /status and /metrics say where the state is and what it takes.
    let status = server.status().await;
    assert_eq!(status["role"], "standalone", "{status}");
    assert_eq!(status["storage"]["mode"], "disk", "{status}");
    assert_eq!(status["storage"]["data_dir"], dir.path(), "{status}");
    assert!(status["storage"]["bytes"].as_u64().unwrap_or(0) > 0, "{status}");
    let (_, metrics) = server.get("/metrics").await.expect("/metrics answers");
    let data_bytes = metrics
        .lines()
        .find(|line| line.starts_with("ssq_data_bytes"))
        .and_then(|line| line.rsplit(' ').next()?.parse::<f64>().ok());
    assert!(
        data_bytes.is_some_and(|bytes| bytes > 0.0),
        "ssq_data_bytes in {metrics}"
    );

    // Settings and tags.
    let attributes = queue_attributes(&sqs, &orders).await;
    assert_eq!(attribute(&attributes, "VisibilityTimeout"), "45");
    assert!(attribute(&attributes, "RedrivePolicy").contains("orders-dlq"));
    assert_eq!(attribute(&attributes, "ApproximateNumberOfMessages"), "2");
    assert_eq!(
        attribute(&attributes, "ApproximateNumberOfMessagesNotVisible"),
        "1"
    );
    assert_eq!(attribute(&attributes, "ApproximateNumberOfMessagesDelayed"), "1");
    let tags = sqs
        .list_queue_tags()
        .queue_url(&orders)
        .send()
        .await
        .unwrap()
        .tags
        .unwrap_or_default();
    assert_eq!(tags.get("team").map(String::as_str), Some("payments"));

    // The handle received before the kill still deletes, and the message stays gone.
    sqs.delete_message()
        .queue_url(&orders)
        .receipt_handle(&handle)
        .send()
        .await
        .unwrap();
    let mut left = BTreeSet::new();
    for message in poll_once(&sqs, &orders).await.unwrap_or_default() {
        left.insert(message.body().unwrap_or_default().to_string());
    }
    assert_eq!(
        left.len(),
        2,
        "the two visible messages, not the deleted one: {left:?}"
    );
    assert!(!left.contains(received[0].body().unwrap()));

    // FIFO: the deduplication id is remembered, sequence numbers go on.
    let again = send_job(&sqs, &fifo, 1).await;
    assert_eq!(
        again.message_id(),
        first_fifo.message_id(),
        "a duplicate within 5 minutes is the same message"
    );
    let next = send_job(&sqs, &fifo, 2).await;
    let sequence = |n: Option<&str>| n.unwrap().parse::<u128>().unwrap();
    assert!(sequence(next.sequence_number()) > sequence(first_fifo.sequence_number()));
    let jobs = sqs
        .receive_message()
        .queue_url(&fifo)
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    let bodies: Vec<&str> = jobs.iter().filter_map(|m| m.body()).collect();
    assert_eq!(bodies, ["job 1", "job 2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_on_the_same_directory_refuses_to_start_naming_the_holder() {
    let dir = DataDir::new("second");
    let first = start_on(&dir, &[]).await;
    let (code, stderr) = crate::data_dir::refused_start(&[], &["--data-dir", dir.path()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(dir.path()), "names the directory: {stderr}");
    assert!(
        stderr.contains(&first.pid().to_string()),
        "names the holder: {stderr}"
    );
    // The first one is unharmed.
    let sqs = first.client();
    create_queue_url(&sqs, "still-here", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_data_file_is_refused_with_the_file_named() {
    let dir = DataDir::new("damaged");
    let mut server = start_on(&dir, &[]).await;
    create_queue_url(&server.client(), "q", &[]).await;
    kill_9(&mut server);
    let file = Path::new(dir.path()).join("ssq.sqlite3");
    let mut bytes = std::fs::read(&file).unwrap();
    // SQLite's header and first page: what makes it a database.
    for byte in bytes.iter_mut().take(100) {
        *byte = 0x5a;
    }
    std::fs::write(&file, bytes).unwrap();
    let _ = std::fs::remove_file(Path::new(dir.path()).join("ssq.sqlite3-wal"));
    let (code, stderr) = crate::data_dir::refused_start(&[], &["--data-dir", dir.path()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&file.display().to_string()),
        "names the file: {stderr}"
    );
    assert!(stderr.contains("damaged"), "says what is wrong: {stderr}");
}

/// 16 senders and a consumer deleting what it receives; SIGKILL in the
/// middle. After the restart every acknowledged send is there unless a
/// delete of it was sent (one the kill cut off may or may not have been
/// applied), and no acknowledged delete comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_under_16_senders_loses_nothing_acknowledged_and_brings_back_nothing_deleted() {
    sigkill_under_load("kill", &[]).await;
}

/// The same with a sync about once a second: a process crash still loses
/// nothing, as the commits are written (to the OS) before their answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_everysec_sync_sigkill_still_loses_nothing_acknowledged() {
    sigkill_under_load("kill-everysec", &["--data-sync", "everysec"]).await;
}

async fn sigkill_under_load(name: &str, extra: &[&str]) {
    let dir = DataDir::new(name);
    let mut server = start_on(&dir, extra).await;
    // Received but not deleted before the kill: visible again a second after.
    let url = create_queue_url(&server.client(), "load", &[("VisibilityTimeout", "1")]).await;
    let sent = Arc::new(Mutex::new(HashSet::new()));
    let deleted = Arc::new(Mutex::new(HashSet::new()));
    let delete_sent = Arc::new(Mutex::new(HashSet::new()));
    let stop_at = Instant::now() + Duration::from_secs(3);
    let mut tasks = Vec::new();
    for sender in 0..16 {
        let (sqs, url, sent) = (client_without_retries(&server.url), url.clone(), sent.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            while Instant::now() < stop_at {
                let body = format!("{sender}-{n}");
                n += 1;
                if sqs
                    .send_message()
                    .queue_url(&url)
                    .message_body(&body)
                    .send()
                    .await
                    .is_ok()
                {
                    sent.lock().unwrap().insert(body);
                }
            }
        }));
    }
    {
        let (sqs, url) = (client_without_retries(&server.url), url.clone());
        let (deleted, delete_sent) = (deleted.clone(), delete_sent.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < stop_at {
                let Some(messages) = poll_once(&sqs, &url).await else {
                    continue;
                };
                for message in messages {
                    let body = message.body().unwrap_or_default().to_string();
                    delete_sent.lock().unwrap().insert(body.clone());
                    let acknowledged = sqs
                        .delete_message()
                        .queue_url(&url)
                        .receipt_handle(message.receipt_handle().unwrap_or_default())
                        .send()
                        .await
                        .is_ok();
                    if acknowledged {
                        deleted.lock().unwrap().insert(body);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    kill_9(&mut server);
    for task in tasks {
        task.await.unwrap();
    }
    let (sent, deleted) = (sent.lock().unwrap().clone(), deleted.lock().unwrap().clone());
    let delete_sent = delete_sent.lock().unwrap().clone();
    assert!(
        sent.len() > 100,
        "the senders got going: {} sends acknowledged",
        sent.len()
    );

    let server = start_on(&dir, extra).await;
    let sqs = server.client();
    let mut found = HashSet::new();
    loop {
        let messages = sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(600)
            .wait_time_seconds(2)
            .send()
            .await
            .unwrap()
            .messages
            .unwrap_or_default();
        if messages.is_empty() {
            break;
        }
        found.extend(messages.iter().map(|m| m.body().unwrap_or_default().to_string()));
    }
    let resurrected: Vec<&String> = found.intersection(&deleted).collect();
    assert!(
        resurrected.is_empty(),
        "acknowledged deletes came back: {resurrected:?}"
    );
    let lost: Vec<&String> = sent
        .difference(&delete_sent)
        .filter(|body| !found.contains(*body))
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged sends lost, e.g. {:?}",
        lost.len(),
        lost.first()
    );
}

/// A small tmpfs mounted for one test, unmounted when dropped; `None`
/// (and the test says so) where mounting is not allowed.
pub(crate) struct SmallDisk(pub(crate) PathBuf);

impl SmallDisk {
    pub(crate) fn mount(name: &str, size: &str) -> Option<SmallDisk> {
        let dir = std::env::temp_dir().join(format!("ssq-tmpfs-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|status| status.success());
        if !mounted {
            eprintln!("skipped: cannot mount a tmpfs at {} (needs root)", dir.display());
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        Some(SmallDisk(dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A full disk: sends fail with a retryable 503, nothing acknowledged is
/// lost, and once space comes back ssq serves again without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_full_disk_writes_fail_with_503_and_serve_again_when_space_returns() {
    let Some(disk) = SmallDisk::mount("full", "3m") else {
        return;
    };
    let ballast = disk.0.join("ballast");
    let dir = DataDir(disk.0.join("data"));
    let mut server = start_on(&dir, &[]).await;
    let sqs = client_without_retries(&server.url);
    let url = create_queue_url(&sqs, "big", &[]).await;
    // Most of the space taken by a file that is removed later.
    std::fs::write(&ballast, vec![0u8; 1024 * 1024]).unwrap();
    let body = "x".repeat(200 * 1024);
    let mut acknowledged = Vec::new();
    let mut refusal = None;
    for n in 0..40 {
        match sqs
            .send_message()
            .queue_url(&url)
            .message_body(format!("{n}:{body}"))
            .send()
            .await
        {
            Ok(sent) => acknowledged.push(sent.message_id.unwrap_or_default()),
            Err(error) => {
                refusal = Some(error);
                break;
            }
        }
    }
    let refusal = refusal.expect("a send fails once the disk is full");
    let status = refusal.raw_response().map(|r| r.status().as_u16());
    assert_eq!(status, Some(503), "a full disk is a retryable 503: {refusal:?}");
    assert!(!acknowledged.is_empty(), "some sends fit before the disk filled");

    std::fs::remove_file(&ballast).unwrap();
    let served = wait_for(Duration::from_secs(10), || {
        let (sqs, url, body) = (sqs.clone(), url.clone(), body.clone());
        async move {
            sqs.send_message()
                .queue_url(&url)
                .message_body(body)
                .send()
                .await
                .is_ok()
        }
    })
    .await;
    assert!(
        served.is_some(),
        "sends succeed again by themselves once space returns"
    );

    kill_9(&mut server);
    let server = start_on(&dir, &[]).await;
    let attributes = queue_attributes(&server.client(), &url).await;
    let held: usize = attribute(&attributes, "ApproximateNumberOfMessages")
        .parse()
        .unwrap();
    assert_eq!(
        held,
        acknowledged.len() + 1,
        "every acknowledged send, and the one after space returned"
    );
}

/// Ten messages of `size` bytes, numbered from `first`, in one batch.
async fn send_batch_of_ten(sqs: &aws_sdk_sqs::Client, url: &str, size: usize, first: usize) {
    let bodies: Vec<String> = (first..first + 10)
        .map(|n| format!("{n:08}{}", "x".repeat(size - 8)))
        .collect();
    crate::common::send_batches(sqs, url, &bodies).await;
}

/// A write torn by a crash (a power cut in the middle of a commit that was
/// never answered) leaves a partial frame at the end of the WAL: SQLite's
/// recovery drops it by its checksum, and everything acknowledged is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_last_write_is_dropped_by_the_engine_and_nothing_acknowledged_is_lost() {
    let dir = DataDir::new("torn");
    let mut server = start_on(&dir, &[]).await;
    let sqs = server.client();
    let url = create_queue_url(&sqs, "torn", &[]).await;
    for first in (0..40).step_by(10) {
        send_batch_of_ten(&sqs, &url, 100, first).await;
    }
    kill_9(&mut server);
    let wal = Path::new(dir.path()).join("ssq.sqlite3-wal");
    let mut bytes = std::fs::read(&wal).expect("a WAL after a kill -9");
    assert!(
        bytes.len() > 32 + 24,
        "the WAL holds frames: {} bytes",
        bytes.len()
    );
    // Half of a copy of the first frame (its 24-byte header and page), at
    // the end: a frame whose write was cut off.
    let frame: Vec<u8> = bytes[32..].iter().take(24 + 2048).copied().collect();
    bytes.extend_from_slice(&frame);
    std::fs::write(&wal, bytes).unwrap();

    let server = start_on(&dir, &[]).await;
    let sqs = server.client();
    let attributes = queue_attributes(&sqs, &url).await;
    assert_eq!(attribute(&attributes, "ApproximateNumberOfMessages"), "40");
    // And it writes on after the torn frame.
    send_batch_of_ten(&sqs, &url, 100, 40).await;
    let attributes = queue_attributes(&sqs, &url).await;
    assert_eq!(attribute(&attributes, "ApproximateNumberOfMessages"), "50");
}

/// Space comes back: under a steady send-and-delete load that writes ten
/// times the live data, the files stay within about twice the live data
/// (plus the WAL, which a checkpoint brings back to its limit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_steady_sends_and_deletes_the_files_stay_near_the_live_data() {
    const SIZE: usize = 4096;
    const LIVE: usize = 2_000;
    let dir = DataDir::new("space");
    let server = start_on(&dir, &[]).await;
    let sqs = server.client();
    let url = create_queue_url(&sqs, "steady", &[("VisibilityTimeout", "600")]).await;
    let mut sent = 0;
    while sent < LIVE {
        send_batch_of_ten(&sqs, &url, SIZE, sent).await;
        sent += 10;
    }
    // Nine more times the live data through the queue: ten in, ten out.
    while sent < 10 * LIVE {
        send_batch_of_ten(&sqs, &url, SIZE, sent).await;
        sent += 10;
        let received = crate::common::receive_up_to(&sqs, &url, 10).await;
        let entries = received.iter().enumerate().map(|(n, message)| {
            aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                .id(format!("d{n}"))
                .receipt_handle(message.receipt_handle().unwrap())
                .build()
                .unwrap()
        });
        sqs.delete_message_batch()
            .queue_url(&url)
            .set_entries(Some(entries.collect()))
            .send()
            .await
            .unwrap();
    }
    let attributes = queue_attributes(&sqs, &url).await;
    let held: usize = attribute(&attributes, "ApproximateNumberOfMessages")
        .parse()
        .unwrap();
    assert_eq!(held, LIVE, "the live data stayed the same");
    let status = server.status().await;
    let on_disk = status["storage"]["bytes"].as_u64().unwrap();
    let live = (LIVE * SIZE) as u64;
    // SQLite keeps the WAL up to its checkpoint size (4 MiB) between checkpoints.
    let wal_allowance = 4 * 1024 * 1024 + 1024 * 1024;
    eprintln!(
        "steady send and delete: {} MiB live, {:.1} MiB on disk after {} MiB written",
        live >> 20,
        on_disk as f64 / f64::from(1 << 20),
        (sent * SIZE) >> 20
    );
    assert!(
        on_disk <= 2 * live + wal_allowance,
        "{on_disk} bytes on disk for {live} bytes of live messages"
    );
}

/// The queues of the configuration file are created on disk too, and the
/// instance writes on afterwards (their commits once waited for the
/// committer that was creating them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_queues_are_created_on_disk_and_writes_go_on() {
    let dir = DataDir::new("configured");
    let config = std::env::temp_dir().join(format!("ssq-disk-config-{}.toml", std::process::id()));
    std::fs::write(&config, "[[queues]]\nname = \"configured\"\n").unwrap();
    let config = config.to_str().unwrap().to_string();
    let mut server = start_on(&dir, &["--config", &config]).await;
    let sqs = server.client();
    let url = crate::common::queue_url("configured");
    let sent = tokio::time::timeout(
        Duration::from_secs(10),
        crate::common::send_body(&sqs, &url, "after the configured queues"),
    )
    .await;
    assert!(sent.is_ok(), "a send to a configured queue was answered");
    kill_9(&mut server);
    let server = start_on(&dir, &["--config", &config]).await;
    let attributes = queue_attributes(&server.client(), &url).await;
    assert_eq!(attribute(&attributes, "ApproximateNumberOfMessages"), "1");
    let _ = std::fs::remove_file(&config);
}
