//! The `publish` scenario: SNS Publish calls (the Query protocol, as every
//! SDK sends them) to a topic with `--queues` queues subscribed, to set a
//! Publish's cost beside a SendMessage's. The queues are only filled: the
//! cost measured is the fan-out's. With `--raw` the queues take the
//! message itself: no envelope is made or signed.

use bytes::Bytes;
use serde_json::json;

use crate::Sqs;

impl Sqs {
    /// One SNS Query call; the XML of a successful answer.
    pub(crate) async fn sns(&self, form: &[(&str, &str)]) -> Result<String, String> {
        self.sns_body(serde_urlencoded::to_string(form).expect("a form").into())
            .await
    }

    pub(crate) async fn sns_body(&self, body: Bytes) -> Result<String, String> {
        use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
        let response = self
            .http
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded"))
            .header(
                AUTHORIZATION,
                HeaderValue::from_static(
                    "AWS4-HMAC-SHA256 Credential=bench/20260101/us-east-1/sns/aws4_request, SignedHeaders=host, Signature=0",
                ),
            )
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let text = response.text().await.map_err(|e| e.to_string())?;
        match status.is_success() {
            true => Ok(text),
            false => Err(format!("SNS: {status} {text}")),
        }
    }
}

/// The text of the first `<name>` element of an XML answer.
fn element(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{name}>"))? + start;
    Some(xml[start..end].to_string())
}

/// Makes a topic, subscribes every queue and HTTP endpoint (`hooks`) to
/// it, and returns the body of the Publish every request sends.
pub(crate) async fn prepare(
    sqs: &Sqs,
    queues: &[String],
    hooks: &[String],
    message: &str,
    raw: bool,
) -> Result<Bytes, String> {
    let created = sqs
        .sns(&[("Action", "CreateTopic"), ("Name", "ssq-bench-topic")])
        .await?;
    let topic = element(&created, "TopicArn").ok_or("CreateTopic named no TopicArn")?;
    for url in queues {
        let attributes = sqs
            .call(
                "GetQueueAttributes",
                json!({"QueueUrl": url, "AttributeNames": ["QueueArn"]}),
            )
            .await?;
        let arn = attributes["Attributes"]["QueueArn"]
            .as_str()
            .ok_or("no QueueArn")?
            .to_string();
        subscribe(sqs, &topic, "sqs", &arn, raw).await?;
    }
    for url in hooks {
        subscribe(sqs, &topic, "http", url, raw).await?;
    }
    let form = [
        ("Action", "Publish"),
        ("TopicArn", topic.as_str()),
        ("Message", message),
    ];
    Ok(serde_urlencoded::to_string(form).expect("a form").into())
}

async fn subscribe(sqs: &Sqs, topic: &str, protocol: &str, endpoint: &str, raw: bool) -> Result<(), String> {
    let mut form = vec![
        ("Action", "Subscribe"),
        ("TopicArn", topic),
        ("Protocol", protocol),
        ("Endpoint", endpoint),
    ];
    if raw {
        form.extend([
            ("Attributes.entry.1.key", "RawMessageDelivery"),
            ("Attributes.entry.1.value", "true"),
        ]);
    }
    sqs.sns(&form).await.map(drop)
}

/// Deletes the topic, so that the next run starts from nothing.
pub(crate) async fn clean_up(sqs: &Sqs) {
    if let Ok(listed) = sqs.sns(&[("Action", "ListTopics")]).await {
        let mut rest = listed.as_str();
        while let Some(arn) = element(rest, "TopicArn") {
            if arn.ends_with(":ssq-bench-topic") {
                let _ = sqs.sns(&[("Action", "DeleteTopic"), ("TopicArn", &arn)]).await;
            }
            rest = &rest[rest.find("</TopicArn>").map_or(rest.len(), |at| at + 11)..];
        }
    }
}
