//! The audit trail (`--audit-log`): every refused request and every admin
//! action as one JSON line, with the key id, the action, the resource, the
//! source address and the outcome; calls that were let through are not
//! recorded.

use std::time::Duration;

use crate::common::{Server, client_signing_with, create_queue_url, error_code, wait_for};

/// An ssq with `--credentials` holding `keys` and an audit trail, each in
/// a directory of its own named after `test`: the server, the directory
/// (for the test to remove) and the trail's path.
pub(crate) fn audited_server(test: &str, keys: &str) -> (Server, std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let credentials = dir.join("credentials");
    std::fs::write(&credentials, keys).unwrap();
    let log = dir.join("audit.log");
    let server = Server::start_with(&[
        "--credentials",
        credentials.to_str().unwrap(),
        "--audit-log",
        log.to_str().unwrap(),
    ]);
    (server, dir, log)
}

#[tokio::test]
async fn refused_requests_and_admin_actions_are_recorded_one_json_line_each() {
    let (server, dir, log) = audited_server("ssq-audit-test", "AKIDAUDIT:s3cret\n");

    // Let through: not recorded.
    let good = client_signing_with(&server.url, "AKIDAUDIT", "s3cret");
    let url = create_queue_url(&good, "audited", &[]).await;
    // Refused: an unknown key, a wrong secret.
    let unknown = client_signing_with(&server.url, "AKIDSTRANGER", "s3cret");
    assert_eq!(
        error_code(unknown.list_queues().send().await),
        "InvalidClientTokenId"
    );
    let wrong = client_signing_with(&server.url, "AKIDAUDIT", "guess");
    assert_eq!(
        error_code(wrong.purge_queue().queue_url(&url).send().await),
        "SignatureDoesNotMatch"
    );

    // The admin page: a failed sign-in, a refused host, then a purge.
    let http = reqwest::Client::new();
    let admin = |path: &str, password: &str| {
        http.get(format!("{}{path}", server.url))
            .basic_auth("AKIDAUDIT", Some(password))
    };
    assert_eq!(
        admin("/admin/api/overview", "guess")
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    let foreign = admin("/admin/api/overview", "s3cret")
        .header("host", "rebind.test")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let page = admin("/", "s3cret").send().await.unwrap().text().await.unwrap();
    let token = crate::common::admin_page_token(&page);
    let purged = http
        .post(format!("{}/admin/api/sqs", server.url))
        .basic_auth("AKIDAUDIT", Some("s3cret"))
        .header("x-ssq-csrf", token)
        .header("x-amz-target", "AmazonSQS.PurgeQueue")
        .header("content-type", "application/x-amz-json-1.0")
        .body(serde_json::json!({ "QueueUrl": url }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(purged.status(), 200);

    let read = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a JSON line"))
            .collect::<Vec<_>>()
    };
    wait_for(Duration::from_secs(5), || async { read().len() >= 5 }).await;
    let lines = read();
    let summary: Vec<(String, String, String, String)> = lines
        .iter()
        .map(|line| {
            let text = |name: &str| line[name].as_str().unwrap_or("-").to_string();
            (text("key_id"), text("action"), text("outcome"), text("code"))
        })
        .collect();
    let expected = [
        ("AKIDSTRANGER", "ListQueues", "refused", "InvalidClientTokenId"),
        ("AKIDAUDIT", "PurgeQueue", "refused", "SignatureDoesNotMatch"),
        ("AKIDAUDIT", "GET /admin/api/overview", "refused", "-"),
        ("AKIDAUDIT", "GET /admin/api/overview", "refused", "AccessDenied"),
        ("AKIDAUDIT", "PurgeQueue", "allowed", "-"),
    ]
    .map(|(k, a, o, c)| (k.to_string(), a.to_string(), o.to_string(), c.to_string()));
    assert_eq!(summary, expected, "{lines:#?}");
    for line in &lines {
        assert_eq!(line["account"], "000000000000");
        assert!(
            line["source"].as_str().unwrap().starts_with("127.0.0.1:"),
            "{line}"
        );
        assert!(line["time"].as_str().unwrap().ends_with('Z'), "{line}");
    }
    assert_eq!(lines[4]["resource"], "/admin/api/sqs");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
        0o600
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Guessing a sign-in is slowed: after five failures from one address,
/// that address waits a doubling time between tries (tries before it are
/// refused unchecked, 429), every failure and refusal audited, while the
/// right key signs in at once from another address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_sign_ins_are_slowed_per_address_without_locking_out_the_key_elsewhere() {
    let (server, dir, log) = audited_server("ssq-sign-in-guard", "AKIDADMIN:s3cret\n");
    let from = |address: &str| {
        reqwest::Client::builder()
            .local_address(address.parse::<std::net::IpAddr>().unwrap())
            .build()
            .unwrap()
    };
    let guesser = from("127.0.0.1");
    let overview = format!("{}/admin/api/overview", server.url);
    let try_with = |client: &reqwest::Client, password: &str| {
        client
            .get(&overview)
            .basic_auth("AKIDADMIN", Some(password))
            .send()
    };

    // Guesses one after another for three seconds: five are checked at
    // once, then one per doubling wait (its answer held back as long).
    let started = std::time::Instant::now();
    let mut checked = 0;
    while let Some(left) = Duration::from_secs(3).checked_sub(started.elapsed()) {
        let Ok(answer) = tokio::time::timeout(left, try_with(&guesser, &format!("guess-{checked}"))).await
        else {
            break;
        };
        assert_eq!(answer.unwrap().status(), 401);
        checked += 1;
    }
    println!("wrong sign-ins checked from one address in 3 s: {checked}");
    assert!((5..=8).contains(&checked), "{checked} checked in 3 s");
    // 400 at once from that address: refused unchecked.
    let at_once: Vec<_> = (0..400)
        .map(|n| tokio::spawn(try_with(&guesser, &format!("flood-{n}"))))
        .collect();
    let mut refused = 0;
    for guess in at_once {
        if guess.await.unwrap().unwrap().status() == 429 {
            refused += 1;
        }
    }
    println!(
        "400 wrong sign-ins at once: {refused} refused unchecked in {:?}",
        started.elapsed()
    );
    assert!(refused >= 399, "{refused} of 400 refused unchecked");

    // The right key, from another address, at once; from the guessing
    // address it must wait too.
    let elsewhere = std::time::Instant::now();
    let answer = try_with(&from("127.0.0.2"), "s3cret").await.unwrap();
    assert_eq!(answer.status(), 200);
    assert!(
        elsewhere.elapsed() < Duration::from_millis(500),
        "{:?}",
        elsewhere.elapsed()
    );
    let refused = try_with(&guesser, "s3cret").await.unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));

    // Each failure and each refusal is in the trail.
    let read = || std::fs::read_to_string(&log).unwrap_or_default().lines().count();
    wait_for(Duration::from_secs(5), || async { read() > 400 + checked }).await;
    // The guess the loop stopped waiting for may still be answered.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let text = std::fs::read_to_string(&log).unwrap();
    let refusals = text
        .lines()
        .filter(|line| line.contains("\"outcome\":\"refused\"") && line.contains("AKIDADMIN"))
        .count();
    assert!(
        (checked + 401..=checked + 402).contains(&refusals),
        "{refusals}: the guesses, the flood and the refused right key"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
