//! Redis that requires a password, or an ACL user, as production Redis does:
//! ssq takes both from the URL. A wrong password never leads, and says why.

use std::time::Duration;

use crate::common::{FAST_LOCK, RedisServer, Server, redis_cli, single_leader};

fn node(url: &str, id: &str) -> Server {
    let mut args = vec!["--redis-url", url, "--node-id", id];
    args.extend_from_slice(FAST_LOCK);
    Server::start_with(&args)
}

/// What docs/configuration.md says an ACL user needs on one Redis.
const ACL_COMMANDS: &[&str] = &[
    "evalsha",
    "script",
    "info",
    "client|id",
    "hgetall",
    "hscan",
    "hget",
    "xrange",
    "publish",
    "subscribe",
    "get",
    "mget",
    "set",
    "del",
    "exists",
    "incr",
    "pexpire",
    "time",
    "hset",
    "hdel",
    "hexists",
    "unlink",
    "xadd",
    "xdel",
    "zadd",
    "zrange",
    "zrem",
    "zremrangebyscore",
];

#[tokio::test]
async fn a_password_or_an_acl_user_in_the_url_gets_in() {
    let redis = RedisServer::start_with(&[
        "--appendonly",
        "no",
        "--requirepass",
        "s3cret",
        "--user",
        "ssq",
        "on",
        ">ssq-pass",
        "~{ssq}*",
        "&*",
    ]);
    // The commands docs/configuration.md lists for an ACL user, and no more.
    for command in ACL_COMMANDS {
        let rule = format!("+{command}");
        let answer = redis_cli(
            redis.port,
            &[
                "-a",
                "s3cret",
                "--no-auth-warning",
                "ACL",
                "SETUSER",
                "ssq",
                &rule,
            ],
        );
        assert_eq!(answer.trim(), "OK", "{rule}");
    }
    let with_password = node(&format!("redis://:s3cret@127.0.0.1:{}", redis.port), "pw");
    let with_user = node(&format!("redis://ssq:ssq-pass@127.0.0.1:{}", redis.port), "acl");
    let nodes = [with_password, with_user];
    let leader = single_leader(&nodes, Duration::from_secs(5)).await;
    let sqs = nodes[leader].client();
    sqs.create_queue()
        .queue_name("authenticated")
        .send()
        .await
        .unwrap();

    // Hand over to the other one: both really talk to Redis.
    nodes[leader].signal("TERM");
    let other = &nodes[1 - leader];
    let took_over = crate::common::wait_for(Duration::from_secs(3), || other.is_ready()).await;
    assert!(took_over.is_some(), "the other authenticated instance takes over");
    let urls = other.client().list_queues().send().await.unwrap();
    assert_eq!(
        urls.queue_urls().len(),
        1,
        "and sees the state the first one wrote"
    );
    // Each has now committed a write (through the commit script) and
    // loaded the state, whichever led first.
    let sqs = other.client();
    crate::common::send_body(&sqs, &urls.queue_urls()[0], "committed by the second leader").await;
    let bodies: Vec<_> = crate::common::receive_plain(&sqs, &urls.queue_urls()[0])
        .await
        .into_iter()
        .filter_map(|m| m.body)
        .collect();
    assert_eq!(bodies, ["committed by the second leader"]);
}

#[tokio::test]
async fn a_wrong_password_never_leads() {
    let redis = RedisServer::start_with(&["--appendonly", "no", "--requirepass", "s3cret"]);
    let wrong = node(&format!("redis://:wrong@127.0.0.1:{}", redis.port), "wrong");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(!wrong.is_ready().await);
    assert_eq!(
        wrong.get("/health").await.unwrap().0,
        200,
        "it keeps running and retrying"
    );
}

/// A store URL that cannot be used stops ssq with status 2 and says why,
/// never with its password; a scheme that is not Redis's is refused rather
/// than taken for Redis.
#[test]
fn a_bad_store_url_is_refused_without_its_password() {
    let cases = [
        (
            "--redis-url",
            "redis://:S3CRET-9@127.0.0.1:notaport",
            "is not a valid Redis URL",
        ),
        (
            "--redis-url",
            "rediss://user:S3CRET-9@127.0.0.1:99999",
            "rediss://user:…@127.0.0.1:99999",
        ),
        (
            "--redis-url",
            "redix://:S3CRET-9@127.0.0.1:6379",
            "starts with redix://",
        ),
        (
            "--redis-url",
            "http://user:S3CRET-9@127.0.0.1:6379",
            "starts with http://",
        ),
        (
            "--postgres-url",
            "postgres://u:S3CRET-9@127.0.0.1:notaport/db",
            "is not a valid Postgres URL",
        ),
    ];
    for (flag, url, words) in cases {
        let (code, log) = crate::data_dir::refused_start(&[], &[flag, url]);
        assert_eq!(code, Some(2), "{url}: {log}");
        assert!(log.contains(words), "{url}: {log}");
        assert!(!log.contains("S3CRET"), "{url}: the password was logged: {log}");
    }
}

/// A password Redis refuses reaches no log line, no page and no metric.
#[tokio::test]
async fn a_refused_password_is_shown_nowhere() {
    use std::io::Read;
    let redis = RedisServer::start_with(&["--appendonly", "no", "--requirepass", "s3cret"]);
    let port = crate::common::free_port();
    let secret = "not-the-S3CRET-9";
    let mut child = std::process::Command::new(crate::common::ssq_binary())
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args([
            "--redis-url",
            &format!("redis://:{secret}@127.0.0.1:{}", redis.port),
        ])
        .env("RUST_LOG", "debug")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::wait_for_port(port, "ssq");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let http = reqwest::Client::new();
    for path in ["/status", "/metrics", "/", "/ready", "/health"] {
        let page = http
            .get(format!("http://127.0.0.1:{port}{path}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!page.contains("S3CRET"), "{path} shows the password: {page}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let mut log = String::new();
    child.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert!(
        log.contains("WRONGPASS") || log.contains("auth"),
        "it says why it cannot lead: {log}"
    );
    assert!(!log.contains("S3CRET"), "the log shows the password: {log}");
}
