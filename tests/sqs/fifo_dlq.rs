//! FIFO queues, dead-letter queues, message move tasks and permissions,
//! through the official SDK against a running ssq.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{Server, create_queue_url, error_code, latest_move_task, receive_plain};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};

fn arn(name: &str) -> String {
    format!("arn:aws:sqs:us-east-1:000000000000:{name}")
}

#[tokio::test]
async fn fifo_queues_keep_group_order_and_deduplicate() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(
        &sqs,
        "jobs.fifo",
        &[("FifoQueue", "true"), ("ContentBasedDeduplication", "true")],
    )
    .await;
    let mut sequence_numbers = Vec::new();
    for (body, group) in [("a1", "a"), ("b1", "b"), ("a2", "a")] {
        let sent = sqs
            .send_message()
            .queue_url(&url)
            .message_body(body)
            .message_group_id(group)
            .send()
            .await
            .unwrap();
        sequence_numbers.push(sent.sequence_number.unwrap());
    }
    assert!(
        sequence_numbers.windows(2).all(|w| w[0] < w[1]),
        "{sequence_numbers:?}"
    );
    let first = sqs
        .send_message()
        .queue_url(&url)
        .message_body("a1")
        .message_group_id("a")
        .send()
        .await
        .unwrap();
    let again = sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(10)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    let bodies: Vec<_> = again.messages().iter().map(|m| m.body().unwrap()).collect();
    assert_eq!(
        bodies,
        ["a1", "a2", "b1"],
        "group a's run, then group b; the duplicate a1 adds nothing"
    );
    let attrs = again.messages()[0].attributes.as_ref().unwrap();
    assert_eq!(attrs[&MessageSystemAttributeName::MessageGroupId], "a");
    assert_eq!(
        attrs[&MessageSystemAttributeName::SequenceNumber],
        sequence_numbers[0]
    );
    assert!(attrs.contains_key(&MessageSystemAttributeName::MessageDeduplicationId));
    assert_eq!(
        first.message_id,
        again.messages()[0].message_id,
        "the duplicate got the original's id"
    );

    let missing_group = sqs.send_message().queue_url(&url).message_body("x").send().await;
    assert_eq!(error_code(missing_group), "MissingParameter");
    let no_dedup = create_queue_url(&sqs, "plain.fifo", &[("FifoQueue", "true")]).await;
    let result = sqs
        .send_message()
        .queue_url(&no_dedup)
        .message_body("x")
        .message_group_id("g")
        .send()
        .await;
    assert_eq!(error_code(result), "InvalidParameterValue");
    let bad_name = sqs
        .create_queue()
        .queue_name("nofifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await;
    assert_eq!(error_code(bad_name), "InvalidParameterValue");
    let standard = create_queue_url(&sqs, "standard", &[]).await;
    let dedup_on_standard = sqs
        .send_message()
        .queue_url(&standard)
        .message_body("x")
        .message_deduplication_id("d")
        .send()
        .await;
    assert_eq!(error_code(dedup_on_standard), "InvalidParameterValue");
}

#[tokio::test]
async fn concurrent_consumers_see_each_group_in_order() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(
        &sqs,
        "orders.fifo",
        &[("FifoQueue", "true"), ("ContentBasedDeduplication", "true")],
    )
    .await;
    let mut sent: HashMap<String, Vec<String>> = HashMap::new();
    for i in 0..150 {
        let group = format!("g{}", i % 5);
        let body = format!("{group}-{i}");
        sqs.send_message()
            .queue_url(&url)
            .message_body(&body)
            .message_group_id(&group)
            .send()
            .await
            .unwrap();
        sent.entry(group).or_default().push(body);
    }
    let seen: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    let mut consumers = Vec::new();
    for _ in 0..4 {
        let (sqs, url, seen) = (sqs.clone(), url.clone(), seen.clone());
        consumers.push(tokio::spawn(async move {
            loop {
                let out = sqs
                    .receive_message()
                    .queue_url(&url)
                    .max_number_of_messages(3)
                    .wait_time_seconds(1)
                    .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
                    .send()
                    .await
                    .unwrap();
                if out.messages().is_empty() {
                    return;
                }
                for message in out.messages() {
                    let group = message.attributes.as_ref().unwrap()
                        [&MessageSystemAttributeName::MessageGroupId]
                        .clone();
                    seen.lock()
                        .unwrap()
                        .entry(group)
                        .or_default()
                        .push(message.body().unwrap().to_string());
                }
                // Deleting after recording: the group stays blocked meanwhile.
                for message in out.messages() {
                    sqs.delete_message()
                        .queue_url(&url)
                        .receipt_handle(message.receipt_handle().unwrap())
                        .send()
                        .await
                        .unwrap();
                }
            }
        }));
    }
    for consumer in consumers {
        consumer.await.unwrap();
    }
    assert_eq!(
        *seen.lock().unwrap(),
        sent,
        "every group delivered exactly in send order"
    );
}

#[tokio::test]
async fn over_received_messages_go_to_the_dead_letter_queue_and_move_back() {
    let server = Server::start();
    let sqs = server.client();
    let dlq = create_queue_url(&sqs, "dlq", &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":"2"}}"#,
        arn("dlq")
    );
    let source = create_queue_url(&sqs, "work", &[("RedrivePolicy", &policy)]).await;
    let sent = sqs
        .send_message()
        .queue_url(&source)
        .message_body("poison")
        .send()
        .await
        .unwrap();
    for _ in 0..2 {
        let out = sqs
            .receive_message()
            .queue_url(&source)
            .visibility_timeout(0)
            .send()
            .await
            .unwrap();
        assert_eq!(out.messages().len(), 1);
    }
    assert!(
        sqs.receive_message()
            .queue_url(&source)
            .send()
            .await
            .unwrap()
            .messages()
            .is_empty(),
        "moved on the third receive"
    );
    let dead = sqs
        .receive_message()
        .queue_url(&dlq)
        .visibility_timeout(0)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    let message = &dead.messages()[0];
    assert_eq!(message.message_id, sent.message_id);
    assert_eq!(
        message.attributes.as_ref().unwrap()[&MessageSystemAttributeName::DeadLetterQueueSourceArn],
        arn("work")
    );

    let sources = sqs
        .list_dead_letter_source_queues()
        .queue_url(&dlq)
        .send()
        .await
        .unwrap();
    assert_eq!(sources.queue_urls(), std::slice::from_ref(&source));

    // Redrive back to the source with a message move task.
    let task = sqs
        .start_message_move_task()
        .source_arn(arn("dlq"))
        .send()
        .await
        .unwrap()
        .task_handle
        .unwrap();
    let mut status = String::new();
    for _ in 0..50 {
        let task = latest_move_task(&sqs, &arn("dlq")).await;
        status = task.status().unwrap().to_string();
        if status == "COMPLETED" {
            assert_eq!(task.approximate_number_of_messages_moved(), 1);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, "COMPLETED");
    let back = receive_plain(&sqs, &source).await;
    assert_eq!(back[0].message_id, sent.message_id, "moved back to its source");
    let cancel_done = sqs.cancel_message_move_task().task_handle(task).send().await;
    assert_eq!(error_code(cancel_done), "InvalidParameterValue");
    let not_a_dlq = sqs.start_message_move_task().source_arn(arn("work")).send().await;
    assert_eq!(error_code(not_a_dlq), "InvalidParameterValue");

    let missing_target = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":2}}"#,
        arn("nope")
    );
    let result = sqs
        .set_queue_attributes()
        .queue_url(&source)
        .attributes(QueueAttributeName::RedrivePolicy, missing_target)
        .send()
        .await;
    assert_eq!(error_code(result), "InvalidParameterValue");
    let fifo_policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":2}}"#,
        arn("dlq")
    );
    let mismatched = sqs
        .create_queue()
        .queue_name("src.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::RedrivePolicy, fifo_policy)
        .send()
        .await;
    assert_eq!(
        error_code(mismatched),
        "InvalidParameterValue",
        "a FIFO queue needs a FIFO dead-letter queue"
    );
    sqs.set_queue_attributes()
        .queue_url(&dlq)
        .attributes(
            QueueAttributeName::RedriveAllowPolicy,
            r#"{"redrivePermission":"denyAll"}"#,
        )
        .send()
        .await
        .unwrap();
    let denied = create_result(&sqs, "other", &[("RedrivePolicy", &policy)]).await;
    assert_eq!(denied, "InvalidParameterValue");
}

async fn create_result(sqs: &aws_sdk_sqs::Client, name: &str, attributes: &[(&str, &str)]) -> String {
    let mut request = sqs.create_queue().queue_name(name);
    for (key, value) in attributes {
        request = request.attributes(QueueAttributeName::from(*key), *value);
    }
    error_code(request.send().await)
}

#[tokio::test]
async fn permissions_are_kept_in_the_policy() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "shared", &[]).await;
    sqs.add_permission()
        .queue_url(&url)
        .label("friends")
        .aws_account_ids("111122223333")
        .actions("SendMessage")
        .send()
        .await
        .unwrap();
    let policy = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::Policy)
        .send()
        .await
        .unwrap();
    let policy: serde_json::Value =
        serde_json::from_str(&policy.attributes.unwrap()[&QueueAttributeName::Policy]).unwrap();
    assert_eq!(policy["Statement"][0]["Sid"], "friends");
    // A single value is written as a string, as AWS writes policies.
    assert_eq!(policy["Statement"][0]["Action"], "SQS:SendMessage");
    assert_eq!(
        policy["Statement"][0]["Principal"]["AWS"],
        "arn:aws:iam::111122223333:root"
    );
    let twice = sqs
        .add_permission()
        .queue_url(&url)
        .label("friends")
        .aws_account_ids("1")
        .actions("SendMessage")
        .send()
        .await;
    assert_eq!(error_code(twice), "InvalidParameterValue");
    sqs.remove_permission()
        .queue_url(&url)
        .label("friends")
        .send()
        .await
        .unwrap();
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap();
    assert!(
        !attrs
            .attributes
            .unwrap()
            .contains_key(&QueueAttributeName::Policy)
    );
    let unknown = sqs
        .remove_permission()
        .queue_url(&url)
        .label("friends")
        .send()
        .await;
    assert_eq!(error_code(unknown), "InvalidParameterValue");
}
