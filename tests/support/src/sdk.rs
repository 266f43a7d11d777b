//! aws-sdk-sqs clients for the tests, and shorthands for the calls they
//! repeat.

use std::time::Duration;

use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::operation::receive_message::builders::ReceiveMessageFluentBuilder;
use aws_sdk_sqs::operation::send_message::builders::SendMessageFluentBuilder;

pub fn client_for(url: &str) -> aws_sdk_sqs::Client {
    client_signing_with(url, "test", "test")
}

/// A client that signs its requests with the given access key and secret.
pub fn client_signing_with(url: &str, access_key_id: &str, secret: &str) -> aws_sdk_sqs::Client {
    client_of(url, "us-east-1", access_key_id, secret)
}

/// A client configured for another region than the tests' us-east-1.
pub fn client_in_region(url: &str, region: &'static str) -> aws_sdk_sqs::Client {
    client_of(url, region, "test", "test")
}

fn client_of(url: &str, region: &'static str, access_key_id: &str, secret: &str) -> aws_sdk_sqs::Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region))
        .credentials_provider(Credentials::new(access_key_id, secret, None, None, "ssq-tests"))
        .endpoint_url(url)
        .build();
    aws_sdk_sqs::Client::from_conf(config)
}

/// The SQS error code of a failed SDK call.
pub fn error_code<E, R>(result: Result<impl std::fmt::Debug, aws_sdk_sqs::error::SdkError<E, R>>) -> String
where
    E: aws_sdk_sqs::error::ProvideErrorMetadata + std::fmt::Debug,
    R: std::fmt::Debug,
{
    let error = result.expect_err("the call should fail");
    error
        .as_service_error()
        .and_then(|e| e.code())
        .unwrap_or_else(|| panic!("not a service error: {error:?}"))
        .to_string()
}

/// An SDK client that does not retry: tests that count failures see each.
pub fn client_without_retries(url: &str) -> aws_sdk_sqs::Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "ssq-tests"))
        .endpoint_url(url)
        .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
        .timeout_config(
            aws_sdk_sqs::config::timeout::TimeoutConfig::builder()
                .operation_attempt_timeout(Duration::from_secs(5))
                .build(),
        )
        .build();
    aws_sdk_sqs::Client::from_conf(config)
}

/// The queue URL every instance of a group answers for (queue URLs are
/// matched by account and name, whatever the host).
pub fn queue_url(name: &str) -> String {
    format!("http://127.0.0.1/000000000000/{name}")
}

/// One long poll of a consumer under test (up to 10 messages, 1 s); `None`
/// when the request failed, as it may while leadership moves.
pub async fn poll_once(sqs: &aws_sdk_sqs::Client, url: &str) -> Option<Vec<aws_sdk_sqs::types::Message>> {
    let out = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .send()
        .await
        .ok()?;
    Some(out.messages.unwrap_or_default())
}

/// Deletes a received message; whether the server acknowledged the delete.
pub async fn delete_received(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    message: &aws_sdk_sqs::types::Message,
) -> bool {
    sqs.delete_message()
        .queue_url(url)
        .receipt_handle(message.receipt_handle().unwrap_or_default())
        .send()
        .await
        .is_ok()
}

/// Creates a queue with `attributes` (name, value) and returns its URL.
pub async fn create_queue_url(sqs: &aws_sdk_sqs::Client, name: &str, attributes: &[(&str, &str)]) -> String {
    let mut request = sqs.create_queue().queue_name(name);
    for (key, value) in attributes {
        request = request.attributes(aws_sdk_sqs::types::QueueAttributeName::from(*key), *value);
    }
    request
        .send()
        .await
        .unwrap_or_else(|e| panic!("CreateQueue {name}: {e:?}"))
        .queue_url
        .expect("CreateQueue answers with the URL")
}

/// Sends one message with `body` and nothing else; returns its MessageId.
pub async fn send_body(sqs: &aws_sdk_sqs::Client, url: &str, body: impl Into<String>) -> String {
    message_id_of(sqs.send_message().queue_url(url).message_body(body), url).await
}

/// Sends one message of a FIFO message group (content-based deduplication
/// assumed); returns its MessageId.
pub async fn send_grouped(sqs: &aws_sdk_sqs::Client, url: &str, body: &str, group: &str) -> String {
    message_id_of(
        sqs.send_message()
            .queue_url(url)
            .message_body(body)
            .message_group_id(group),
        url,
    )
    .await
}

/// Sends a SendMessage that must succeed; returns its MessageId.
pub async fn message_id_of(request: SendMessageFluentBuilder, url: &str) -> String {
    request
        .send()
        .await
        .unwrap_or_else(|e| panic!("SendMessage to {url}: {e:?}"))
        .message_id
        .expect("SendMessage answers with the MessageId")
}

/// One ReceiveMessage with the queue's settings: up to one message, no wait
/// beyond the queue's own.
pub async fn receive_plain(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<aws_sdk_sqs::types::Message> {
    messages_of(sqs.receive_message().queue_url(url), url).await
}

/// One ReceiveMessage of up to `max` messages, which must succeed.
pub async fn receive_up_to(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    max: i32,
) -> Vec<aws_sdk_sqs::types::Message> {
    messages_of(
        sqs.receive_message().queue_url(url).max_number_of_messages(max),
        url,
    )
    .await
}

/// The bodies of one ReceiveMessage of up to `max` messages, in order.
pub async fn receive_bodies(sqs: &aws_sdk_sqs::Client, url: &str, max: i32) -> Vec<String> {
    receive_up_to(sqs, url, max)
        .await
        .iter()
        .map(|m| m.body().unwrap_or_default().to_string())
        .collect()
}

/// Sends a ReceiveMessage that must succeed; returns what it received.
async fn messages_of(request: ReceiveMessageFluentBuilder, url: &str) -> Vec<aws_sdk_sqs::types::Message> {
    request
        .send()
        .await
        .unwrap_or_else(|e| panic!("ReceiveMessage from {url}: {e:?}"))
        .messages
        .unwrap_or_default()
}

/// The newest message move task from the queue `source_arn` names
/// (ListMessageMoveTasks' first result), which must exist.
pub async fn latest_move_task(
    sqs: &aws_sdk_sqs::Client,
    source_arn: &str,
) -> aws_sdk_sqs::types::ListMessageMoveTasksResultEntry {
    let listed = sqs
        .list_message_move_tasks()
        .source_arn(source_arn)
        .send()
        .await
        .unwrap_or_else(|e| panic!("ListMessageMoveTasks for {source_arn}: {e:?}"));
    listed
        .results()
        .first()
        .cloned()
        .expect("a move task from this queue")
}

/// Sends `bodies` in batches of ten; each batch must be accepted whole.
pub async fn send_batches(sqs: &aws_sdk_sqs::Client, url: &str, bodies: &[String]) {
    for chunk in bodies.chunks(10) {
        let entries = chunk.iter().enumerate().map(|(i, body)| {
            aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .message_body(body)
                .build()
                .unwrap()
        });
        let sent = sqs
            .send_message_batch()
            .queue_url(url)
            .set_entries(Some(entries.collect()))
            .send()
            .await
            .unwrap();
        assert!(sent.failed().is_empty(), "{:?}", sent.failed());
    }
}

/// The instances' URLs as they come and go, and a client (without retries)
/// per URL, for tests that kill and start instances under load.
#[derive(Clone, Default)]
pub struct Endpoints {
    urls: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    clients: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, aws_sdk_sqs::Client>>>,
}

impl Endpoints {
    pub fn set(&self, urls: Vec<String>) {
        *self.urls.lock().unwrap() = urls;
    }

    /// Puts `url` in place `slot` (growing the list as needed).
    pub fn set_at(&self, slot: usize, url: String) {
        let mut urls = self.urls.lock().unwrap();
        if urls.len() <= slot {
            urls.resize(slot + 1, String::new());
        }
        urls[slot] = url;
    }

    pub fn urls(&self) -> Vec<String> {
        self.urls.lock().unwrap().clone()
    }

    /// A client of every instance, in the order of the URLs.
    pub fn clients(&self) -> Vec<aws_sdk_sqs::Client> {
        let urls = self.urls();
        let mut clients = self.clients.lock().unwrap();
        urls.iter()
            .map(|url| {
                clients
                    .entry(url.clone())
                    .or_insert_with(|| client_without_retries(url))
                    .clone()
            })
            .collect()
    }
}

/// A JSON-protocol call's answer, as the wire gives it.
pub struct JsonAnswer {
    pub status: u16,
    /// The `x-amzn-query-error` header: the Query code and fault.
    pub query_error: Option<String>,
    pub request_id: Option<String>,
    pub body: serde_json::Value,
}

/// A raw AWS JSON 1.0 call to `endpoint`: `target` as the X-Amz-Target
/// header (none: left out), `body` as it is; answered within 10 s with a
/// JSON body, or the test fails.
pub async fn json_call(endpoint: &str, target: Option<&str>, body: impl Into<reqwest::Body>) -> JsonAnswer {
    let mut request = reqwest::Client::new()
        .post(endpoint)
        .header("content-type", "application/x-amz-json-1.0")
        .body(body);
    if let Some(target) = target {
        request = request.header("x-amz-target", target);
    }
    let response = tokio::time::timeout(std::time::Duration::from_secs(10), request.send())
        .await
        .expect("ssq answers within 10 s")
        .expect("ssq answers");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let (status, query_error, request_id) = (
        response.status().as_u16(),
        header("x-amzn-query-error"),
        header("x-amzn-requestid"),
    );
    let bytes = response.bytes().await.unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("a JSON body, got {bytes:?}"));
    JsonAnswer {
        status,
        query_error,
        request_id,
        body,
    }
}

/// Every body in the queue at `url`, received and deleted until it answers
/// empty (retrying calls that fail while a leader takes over).
pub async fn drain(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<String> {
    let mut bodies = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "{url} did not drain within 60 s"
        );
        let Ok(out) = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .send()
            .await
        else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let messages = out.messages.unwrap_or_default();
        if messages.is_empty() {
            return bodies;
        }
        for message in messages {
            bodies.push(message.body.clone().unwrap_or_default());
            let handle = message.receipt_handle.unwrap_or_default();
            while sqs
                .delete_message()
                .queue_url(url)
                .receipt_handle(&handle)
                .send()
                .await
                .is_err()
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
