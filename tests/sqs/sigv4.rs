//! Signature Version 4, checked when credentials are configured: the
//! official SDK signing with the right secret gets through; a wrong secret,
//! an unknown key, no signature or a stale date get AWS's errors with 403.

use crate::common::{Server, client_signing_with, create_queue_url, error_code, wait_for};
use std::time::Duration;

/// A credentials file of its own for each server (tests run in parallel).
fn credentials_file() -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("ssq-credentials-{}-{n}", std::process::id()));
    std::fs::write(&path, "# test keys\nAKIDSSQTEST:s3cr3t/with+chars\n").unwrap();
    path
}

#[tokio::test]
async fn requests_must_be_signed_with_a_configured_secret() {
    let path = credentials_file();
    let server = Server::start_with(&["--credentials", path.to_str().unwrap()]);

    let good = client_signing_with(&server.url, "AKIDSSQTEST", "s3cr3t/with+chars");
    let url = good
        .create_queue()
        .queue_name("signed")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    good.send_message()
        .queue_url(&url)
        .message_body("signed body ✓")
        .send()
        .await
        .unwrap();
    let received = good.receive_message().queue_url(&url).send().await.unwrap();
    assert_eq!(received.messages()[0].body(), Some("signed body ✓"));

    let wrong_secret = client_signing_with(&server.url, "AKIDSSQTEST", "not-the-secret");
    let result = wrong_secret.list_queues().send().await;
    let error = result.as_ref().unwrap_err();
    assert_eq!(error.raw_response().unwrap().status().as_u16(), 403);
    assert_eq!(error_code(result), "SignatureDoesNotMatch");

    let unknown = client_signing_with(&server.url, "AKIDUNKNOWN", "s3cr3t/with+chars");
    assert_eq!(
        error_code(unknown.list_queues().send().await),
        "InvalidClientTokenId"
    );

    let http = reqwest::Client::new();
    let unsigned = http
        .post(&server.url)
        .header("x-amz-target", "AmazonSQS.ListQueues")
        .header("content-type", "application/x-amz-json-1.0")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 403);
    assert_eq!(
        unsigned.headers()["x-amzn-query-error"],
        "MissingAuthenticationToken;Sender"
    );

    let stale = http
        .post(&server.url)
        .header("x-amz-target", "AmazonSQS.ListQueues")
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amz-date", "20200101T000000Z")
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIDSSQTEST/20200101/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=00",
        )
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 403);
    assert_eq!(stale.headers()["x-amzn-query-error"], "RequestExpired;Sender");

    // Operational endpoints stay open: load balancers do not sign.
    assert_eq!(
        reqwest::get(format!("{}/ready", server.url))
            .await
            .unwrap()
            .status(),
        200
    );
    std::fs::remove_file(path).unwrap();
}

/// How a test request is signed, with the SDK's own signer.
pub(crate) struct Signing {
    /// The access key id and secret.
    pub(crate) key: (&'static str, &'static str),
    /// `sqs`, or `sns` as SNS clients sign.
    pub(crate) service: &'static str,
    /// The request's content type, and its `x-amz-target` when it has one
    /// (an AWS JSON call).
    pub(crate) content_type: &'static str,
    pub(crate) target: Option<String>,
    pub(crate) region: &'static str,
    pub(crate) at: std::time::SystemTime,
    /// Presigned (in the query string) for this long; else the header.
    pub(crate) presigned_for: Option<std::time::Duration>,
    /// Declare the payload's hash in `x-amz-content-sha256`.
    pub(crate) content_sha256: bool,
}

impl Default for Signing {
    fn default() -> Self {
        Signing {
            key: ("AKIDSSQTEST", "s3cr3t/with+chars"),
            service: "sqs",
            content_type: "application/x-www-form-urlencoded",
            target: None,
            region: "us-east-1",
            at: std::time::SystemTime::now(),
            presigned_for: None,
            content_sha256: false,
        }
    }
}

/// A POST to `path_and_query` (a Query-protocol call unless `how` says
/// otherwise), signed over `body`, as (URL, headers) that a test may send
/// with another body.
pub(crate) fn sign_query_post(
    server: &Server,
    path_and_query: &str,
    body: &str,
    how: Signing,
) -> (String, Vec<(String, String)>) {
    use aws_sigv4::http_request::{
        PayloadChecksumKind, SignableBody, SignableRequest, SignatureLocation, SigningSettings, sign,
    };
    let url = format!("{}{path_and_query}", server.url);
    let host = format!("127.0.0.1:{}", server.port);
    let mut headers = vec![
        ("host".to_string(), host),
        ("content-type".to_string(), how.content_type.to_string()),
    ];
    if let Some(target) = &how.target {
        headers.push(("x-amz-target".to_string(), target.clone()));
    }
    let mut settings = SigningSettings::default();
    if how.content_sha256 {
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    }
    let signable_body = match how.presigned_for {
        Some(lifetime) => {
            settings.signature_location = SignatureLocation::QueryParams;
            settings.expires_in = Some(lifetime);
            SignableBody::UnsignedPayload
        }
        None => SignableBody::Bytes(body.as_bytes()),
    };
    let identity = aws_credential_types::Credentials::new(how.key.0, how.key.1, None, None, "test").into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(how.region)
        .name(how.service)
        .time(how.at)
        .settings(settings)
        .build()
        .unwrap()
        .into();
    let request = SignableRequest::new(
        "POST",
        url.clone(),
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        signable_body,
    )
    .unwrap();
    let (instructions, _) = sign(request, &params).unwrap().into_parts();
    let (signed_headers, query) = instructions.into_parts();
    headers.extend(
        signed_headers
            .into_iter()
            .map(|h| (h.name().to_string(), h.value().to_string())),
    );
    let mut url = url;
    for (index, (key, value)) in query.into_iter().enumerate() {
        let separator = if index == 0 && !url.contains('?') {
            '?'
        } else {
            '&'
        };
        url.push(separator);
        url.push_str(&serde_urlencoded::to_string([(key, value.as_ref())]).unwrap());
    }
    (url, headers)
}

/// The two wire formats an SQS client may speak.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wire {
    Json,
    Query,
}

/// A call signed with `key`: an SQS call in `wire` (its JSON body, or its
/// Query parameters), or an SNS call (`service` "sns", Query); the status
/// and body of the answer.
pub(crate) async fn signed_call(
    server: &Server,
    key: (&'static str, &'static str),
    service: &'static str,
    wire: Wire,
    action: &str,
    json: &serde_json::Value,
    query: &[(&str, String)],
) -> (u16, String) {
    let (body, how) = match wire {
        Wire::Json => (
            json.to_string(),
            Signing {
                key,
                service,
                content_type: "application/x-amz-json-1.0",
                target: Some(format!("AmazonSQS.{action}")),
                ..Signing::default()
            },
        ),
        Wire::Query => {
            let mut pairs = vec![("Action", action.to_string())];
            if service == "sqs" {
                pairs.push(("Version", "2012-11-05".to_string()));
            }
            pairs.extend(query.iter().cloned());
            (
                serde_urlencoded::to_string(&pairs).unwrap(),
                Signing {
                    key,
                    service,
                    ..Signing::default()
                },
            )
        }
    };
    let (url, headers) = sign_query_post(server, "/", &body, how);
    send_raw(&url, &headers, &body).await
}

pub(crate) async fn send_raw(url: &str, headers: &[(String, String)], body: &str) -> (u16, String) {
    let mut request = reqwest::Client::new().post(url).body(body.to_string());
    for (name, value) in headers {
        if name != "host" {
            request = request.header(name, value);
        }
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// A started server with credentials and one queue, `kept`, with its URL.
async fn signed_server_with_queue() -> (Server, String, std::path::PathBuf) {
    let path = credentials_file();
    let server = Server::start_with(&["--credentials", path.to_str().unwrap()]);
    let client = client_signing_with(&server.url, "AKIDSSQTEST", "s3cr3t/with+chars");
    let url = client
        .create_queue()
        .queue_name("kept")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    (server, url, path)
}

async fn queue_exists(server: &Server) -> bool {
    let client = client_signing_with(&server.url, "AKIDSSQTEST", "s3cr3t/with+chars");
    let listed = client.list_queues().send().await.unwrap();
    listed.queue_urls().iter().any(|u| u.ends_with("/kept"))
}

/// A captured request that declared its payload hash in x-amz-content-sha256
/// was once replayed with any other body: the header was trusted and the
/// body never hashed.
#[tokio::test]
async fn a_captured_signature_cannot_carry_another_body() {
    let (server, queue_url, path) = signed_server_with_queue().await;
    let list = "Action=ListQueues&Version=2012-11-05";
    let how = Signing {
        content_sha256: true,
        ..Signing::default()
    };
    let (url, headers) = sign_query_post(&server, "/", list, how);
    assert_eq!(
        send_raw(&url, &headers, list).await.0,
        200,
        "the genuine request passes"
    );

    let delete = format!(
        "Action=DeleteQueue&Version=2012-11-05&QueueUrl={}",
        serde_urlencoded::to_string([("", queue_url.as_str())])
            .unwrap()
            .trim_start_matches('=')
    );
    let (status, body) = send_raw(&url, &headers, &delete).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("<Code>SignatureDoesNotMatch</Code>"), "{body}");
    assert!(queue_exists(&server).await, "the queue was not deleted");

    // The same without the header: the body's own hash is what was signed.
    let (url, headers) = sign_query_post(&server, "/", list, Signing::default());
    assert_eq!(send_raw(&url, &headers, &delete).await.0, 403);
    assert!(queue_exists(&server).await);
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn presigned_urls_carry_their_action_and_expire() {
    let (server, queue_url, path) = signed_server_with_queue().await;
    let minute = Signing {
        presigned_for: Some(std::time::Duration::from_secs(60)),
        ..Signing::default()
    };
    let (url, headers) = sign_query_post(&server, "/?Action=ListQueues&Version=2012-11-05", "", minute);
    let (status, body) = send_raw(&url, &headers, "").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("/kept</QueueUrl>"), "{body}");

    // An UNSIGNED-PAYLOAD URL signs no body: a body may not choose the action.
    let delete = format!(
        "Action=DeleteQueue&QueueUrl={}",
        serde_urlencoded::to_string([("", queue_url.as_str())])
            .unwrap()
            .trim_start_matches('=')
    );
    let bare = Signing {
        presigned_for: Some(std::time::Duration::from_secs(60)),
        ..Signing::default()
    };
    let (url, headers) = sign_query_post(&server, "/", "", bare);
    let (status, body) = send_raw(&url, &headers, &delete).await;
    assert_eq!(status, 403, "{body}");
    assert!(queue_exists(&server).await, "the queue was not deleted");

    // Signed 3 s ago for 1 s: expired, though well within the clock skew.
    let stale = Signing {
        at: std::time::SystemTime::now() - std::time::Duration::from_secs(3),
        presigned_for: Some(std::time::Duration::from_secs(1)),
        ..Signing::default()
    };
    let (url, headers) = sign_query_post(&server, "/?Action=ListQueues&Version=2012-11-05", "", stale);
    let (status, body) = send_raw(&url, &headers, "").await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("<Code>RequestExpired</Code>"), "{body}");
    std::fs::remove_file(path).unwrap();
}

/// A signature for another region is valid and addresses that region's
/// queues; with `--regions one` the instance takes only its own region.
#[tokio::test]
async fn a_signature_for_another_region_names_that_regions_queues() {
    let (server, _, path) = signed_server_with_queue().await;
    let list = "Action=ListQueues&Version=2012-11-05";
    let elsewhere = || Signing {
        region: "eu-west-1",
        ..Signing::default()
    };
    let (url, headers) = sign_query_post(&server, "/", list, elsewhere());
    let (status, body) = send_raw(&url, &headers, list).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        !body.contains("kept"),
        "us-east-1's queue is not in eu-west-1: {body}"
    );

    let one = Server::start_with(&["--credentials", path.to_str().unwrap(), "--regions", "one"]);
    let (url, headers) = sign_query_post(&one, "/", list, elsewhere());
    let (status, body) = send_raw(&url, &headers, list).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("eu-west-1"), "{body}");
    std::fs::remove_file(path).unwrap();
}

/// The outcome of one call: whether it was answered, else its error code.
type Outcome = (std::time::Instant, Result<(), String>);

/// Key rotation without a restart: 16 clients send with a key while a new
/// file, without that key, is renamed over the old one and SIGHUP sent.
/// Every call is answered or refused as an unknown key (never a 5xx or a
/// hang), and once the new key works, the old one never does again. A bad
/// file keeps the keys in force; a change without SIGHUP is seen too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_rotate_without_a_restart_while_16_clients_call() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    let path = credentials_file();
    let server = Server::start_with(&["--credentials", path.to_str().unwrap()]);
    let old = client_signing_with(&server.url, "AKIDSSQTEST", "s3cr3t/with+chars");
    let new = client_signing_with(&server.url, "AKIDNEW", "n3w-s3cr3t");
    let url = old
        .create_queue()
        .queue_name("rotated")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..16)
        .map(|_| {
            let (old, url, stop) = (old.clone(), url.clone(), stop.clone());
            tokio::spawn(async move {
                let mut outcomes: Vec<Outcome> = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let sent = old.send_message().queue_url(&url).message_body("x").send().await;
                    outcomes.push((started, sent.map(|_| ()).map_err(|e| error_code(Err::<(), _>(e)))));
                }
                outcomes
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The new file, renamed over the old one as an editor or a secret's
    // update does, then SIGHUP.
    let next = path.with_extension("next");
    std::fs::write(&next, "AKIDNEW:n3w-s3cr3t\n").unwrap();
    std::fs::rename(&next, &path).unwrap();
    server.signal("HUP");
    let took = wait_for(Duration::from_secs(5), || async {
        new.list_queues().send().await.is_ok()
    })
    .await
    .expect("the new key works within 5 s of SIGHUP");
    let swapped = Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut outcomes = Vec::new();
    for caller in callers {
        outcomes.extend(caller.await.unwrap());
    }

    let unexpected: Vec<_> = outcomes
        .iter()
        .filter(|(_, outcome)| outcome.as_ref().is_err_and(|code| code != "InvalidClientTokenId"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "calls neither answered nor refused as an unknown key: {unexpected:?}"
    );
    let answered_before = outcomes.iter().filter(|(_, o)| o.is_ok()).count();
    let after: Vec<_> = outcomes.iter().filter(|(at, _)| *at > swapped).collect();
    assert!(answered_before > 0, "the old key never worked");
    assert!(!after.is_empty(), "no call after the swap");
    assert!(
        after.iter().all(|(_, o)| o.is_err()),
        "the dropped key worked after the new file was in force"
    );
    println!(
        "{} calls, {answered_before} answered; the new key worked {took:?} after SIGHUP; {} refused after",
        outcomes.len(),
        after.len()
    );

    // A bad file is refused: the keys in force stay.
    std::fs::write(&path, "a line without a secret\n").unwrap();
    server.signal("HUP");
    let refused = wait_for(Duration::from_secs(5), || async {
        let (_, metrics) = server.get("/metrics").await.unwrap();
        metrics.contains("ssq_credential_reloads_total{outcome=\"refused\"} 1")
    })
    .await;
    assert!(refused.is_some(), "the bad file was not refused");
    new.list_queues().send().await.expect("the keys in force stay");

    // A change with no signal is seen by the file's watch.
    std::fs::write(&path, "AKIDNEW:n3w-s3cr3t\nAKIDTHIRD:th1rd\n").unwrap();
    let third = client_signing_with(&server.url, "AKIDTHIRD", "th1rd");
    wait_for(Duration::from_secs(5), || async {
        third.list_queues().send().await.is_ok()
    })
    .await
    .expect("a changed file is read within 5 s without SIGHUP");
    std::fs::remove_file(&path).unwrap();
}

/// Request rates per key (the credentials file in TOML): a key over its
/// rate gets RequestThrottled, which the SDK retries with backoff until it
/// passes, while another key at the same moment is never refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_over_its_rate_is_throttled_and_no_other_key_is() {
    let path = credentials_file();
    std::fs::write(
        &path,
        "[[keys]]\nid = \"AKIDSLOW\"\nsecret = \"slow\"\nrequests_per_second = 5\n\n\
         [[keys]]\nid = \"AKIDFAST\"\nsecret = \"fast\"\n",
    )
    .unwrap();
    let server = Server::start_with(&["--credentials", path.to_str().unwrap()]);
    let fast = client_signing_with(&server.url, "AKIDFAST", "fast");
    // The SDK's own backoff, with more attempts than its default three: its
    // jitter can make three attempts fall within a fifth of a second, while
    // the bucket is still empty (seen once in CI).
    let retrying = client_signing_with(&server.url, "AKIDSLOW", "slow");
    let retrying = aws_sdk_sqs::Client::from_conf(
        retrying
            .config()
            .to_builder()
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::standard().with_max_attempts(10))
            .build(),
    );
    let once = aws_sdk_sqs::Client::from_conf(
        retrying
            .config()
            .to_builder()
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build(),
    );
    let url = create_queue_url(&fast, "rated", &[]).await;

    let started = std::time::Instant::now();
    // All at once, each on a task of its own.
    let at_once = |client: &aws_sdk_sqs::Client, count: usize| {
        let calls: Vec<_> = (0..count)
            .map(|_| {
                let sent = client.send_message().queue_url(&url).message_body("x").send();
                tokio::spawn(sent)
            })
            .collect();
        async move {
            let mut results = Vec::new();
            for call in calls {
                results.push(call.await.unwrap());
            }
            results
        }
    };
    let (slow, quick) = tokio::join!(at_once(&once, 30), at_once(&fast, 100));
    let elapsed = started.elapsed().as_secs_f64();
    assert!(quick.iter().all(Result::is_ok), "the unlimited key was refused");
    let passed = slow.iter().filter(|sent| sent.is_ok()).count();
    let codes: Vec<String> = slow.into_iter().filter(Result::is_err).map(error_code).collect();
    assert!(codes.iter().all(|code| code == "RequestThrottled"), "{codes:?}");
    assert!(!codes.is_empty(), "30 calls at once at 5 a second");
    assert!(
        passed as f64 <= 5.0 + elapsed * 5.0 + 1.0,
        "{passed} passed in {elapsed:.2} s at 5 a second with a burst of 5"
    );

    // With the SDK's retries, every call gets through.
    for _ in 0..8 {
        retrying
            .send_message()
            .queue_url(&url)
            .message_body("patient")
            .send()
            .await
            .expect("the SDK backs off and retries RequestThrottled");
    }
    let (_, metrics) = server.get("/metrics").await.unwrap();
    let throttled: u64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("ssq_throttled_total{key=\"AKIDSLOW\"} "))
        .and_then(|count| count.parse().ok())
        .expect("the throttled count of AKIDSLOW");
    assert!(
        throttled > codes.len() as u64,
        "the retried calls were throttled first: {throttled}"
    );
    std::fs::remove_file(&path).unwrap();
}

/// An ssq whose log the test reads: the process, its address and what it
/// has logged so far.
struct Logged {
    child: std::process::Child,
    url: String,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Logged {
    fn start(args: &[&str]) -> Logged {
        use std::io::BufRead;
        let port = crate::common::free_port();
        let mut child = std::process::Command::new(crate::common::ssq_binary())
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("ssq starts");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = kept.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        crate::common::wait_for_port(port, "ssq");
        Logged {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits up to 10 s for the log to hold `words`.
    async fn logs(&self, words: &str) -> bool {
        wait_for(Duration::from_secs(10), || async { self.log().contains(words) })
            .await
            .is_some()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The credentials file holds secrets: a file others may read is used,
/// with a warning that names its mode and the fix, at start and when a
/// reload swaps one in (a symbolic link moved, as Kubernetes does); a
/// file past 8 MiB is refused and the keys in force stay; and the
/// largest file ssq reads is read and parsed while a key in force goes on
/// calling, none of its calls held up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credentials_file_others_may_read_is_warned_of_and_a_reload_holds_up_no_call() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("ssq-credentials-modes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let keys = |name: &str, text: &str, mode: u32| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    };
    let link = dir.join("credentials");
    let point_at = |target: &std::path::Path| {
        let next = dir.join("credentials.next");
        let _ = std::fs::remove_file(&next);
        std::os::unix::fs::symlink(target, &next).unwrap();
        std::fs::rename(&next, &link).unwrap();
    };
    let warning = "others on this machine may read";
    point_at(&keys("private", "AKIDSSQTEST:s3cr3t\n", 0o600));
    let server = Logged::start(&["--credentials", link.to_str().unwrap()]);
    let sqs = client_signing_with(&server.url, "AKIDSSQTEST", "s3cr3t");
    sqs.list_queues().send().await.expect("the key works");
    assert!(
        !server.log().contains(warning),
        "a file of mode 0600 is not warned of"
    );

    point_at(&keys("shared", "AKIDSSQTEST:s3cr3t\nAKIDOTHER:other\n", 0o644));
    assert!(server.logs("credentials reloaded").await, "{}", server.log());
    let log = server.log();
    assert!(
        log.contains(warning) && log.contains("0644") && log.contains("chmod 600"),
        "the mode and the fix are named: {log}"
    );

    let line = "AKIDAAAAAAAAAAAAAAAA:secret-secret-secret-secret\n";
    let past = line.repeat(8 * 1024 * 1024 / line.len() + 1);
    point_at(&keys("too-large", &past, 0o600));
    assert!(server.logs("larger than 8388608 bytes").await, "{}", server.log());
    sqs.list_queues().send().await.expect("the keys in force stay");

    // The largest file read: distinct keys up to the bound, ours among them.
    let mut largest = String::from("AKIDSSQTEST:s3cr3t\n");
    let mut n = 0;
    while largest.len() + 48 < 8 * 1024 * 1024 {
        largest.push_str(&format!("AKID{n:016}:secret-secret-secret-secret\n"));
        n += 1;
    }
    let reloads = server.log().matches("credentials reloaded").count();
    point_at(&keys("largest", &largest, 0o600));
    let started = std::time::Instant::now();
    let mut slowest = Duration::ZERO;
    let mut calls = 0;
    while server.log().matches("credentials reloaded").count() == reloads {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the largest file was never put in force"
        );
        let call = std::time::Instant::now();
        sqs.list_queues()
            .send()
            .await
            .expect("a key in force is served during the reload");
        slowest = slowest.max(call.elapsed());
        calls += 1;
    }
    println!(
        "{n} keys reloaded in about {:?}; {calls} calls meanwhile, the slowest {slowest:?}",
        started.elapsed()
    );
    assert!(calls > 0);
    assert!(
        slowest < Duration::from_millis(500),
        "a call waited {slowest:?} on the reload"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
