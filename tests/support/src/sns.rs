//! aws-sdk-sns clients for the tests, and the wiring most SNS tests start
//! from: a topic with queues subscribed to it.

use aws_sdk_sns::config::{BehaviorVersion, Credentials, Region};

pub fn sns_client_for(url: &str) -> aws_sdk_sns::Client {
    sns_client_signing_with(url, "test", "test")
}

/// A client that signs its requests with the given access key and secret.
pub fn sns_client_signing_with(url: &str, access_key_id: &str, secret: &str) -> aws_sdk_sns::Client {
    let config = aws_sdk_sns::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(access_key_id, secret, None, None, "ssq-tests"))
        .endpoint_url(url)
        .build();
    aws_sdk_sns::Client::from_conf(config)
}

/// Creates a standard topic; its ARN.
pub async fn create_topic(sns: &aws_sdk_sns::Client, name: &str) -> String {
    sns.create_topic()
        .name(name)
        .send()
        .await
        .unwrap()
        .topic_arn
        .expect("an ARN")
}

/// Creates a FIFO topic with content-based deduplication and `attributes`;
/// its ARN.
pub async fn create_fifo_topic(sns: &aws_sdk_sns::Client, name: &str, attributes: &[(&str, &str)]) -> String {
    let mut request = sns
        .create_topic()
        .name(name)
        .attributes("FifoTopic", "true")
        .attributes("ContentBasedDeduplication", "true");
    for (name, value) in attributes {
        request = request.attributes(*name, *value);
    }
    request.send().await.unwrap().topic_arn.expect("an ARN")
}

/// The ARN of the queue at `url`.
pub async fn queue_arn(sqs: &aws_sdk_sqs::Client, url: &str) -> String {
    sqs.get_queue_attributes()
        .queue_url(url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap_or_default()
        .remove(&aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .expect("a queue has an ARN")
}

/// Subscribes the queue at `url` to `topic`; its subscription's ARN.
pub async fn subscribe_queue(
    sns: &aws_sdk_sns::Client,
    sqs: &aws_sdk_sqs::Client,
    topic: &str,
    url: &str,
    attributes: &[(&str, &str)],
) -> String {
    let mut request = sns
        .subscribe()
        .topic_arn(topic)
        .protocol("sqs")
        .endpoint(queue_arn(sqs, url).await)
        .return_subscription_arn(true);
    for (name, value) in attributes {
        request = request.attributes(*name, *value);
    }
    request.send().await.unwrap().subscription_arn.expect("an ARN")
}

/// The `Message` of an SNS envelope a queue received.
pub fn message_of(body: &str) -> String {
    let envelope: serde_json::Value = serde_json::from_str(body).expect("an SNS envelope");
    envelope["Message"]
        .as_str()
        .expect("a Message member")
        .to_string()
}
