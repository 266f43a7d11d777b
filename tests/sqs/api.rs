//! Every SQS action, driven through the official Rust SDK against a running
//! memory-only ssq: the happy paths and the errors a client can meet.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::common::{Server, create_queue_url, error_code, receive_plain, send_body};
use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry, MessageAttributeValue,
    MessageSystemAttributeName, MessageSystemAttributeNameForSends, MessageSystemAttributeValue,
    QueueAttributeName, SendMessageBatchRequestEntry,
};
use md5::{Digest, Md5};

fn md5_hex(bytes: &[u8]) -> String {
    Md5::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn string_attr(value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .unwrap()
}

#[tokio::test]
async fn queues_are_created_found_listed_and_deleted() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "orders", &[]).await;
    assert_eq!(url, format!("{}/000000000000/orders", server.url));
    assert_eq!(
        create_queue_url(&sqs, "orders", &[]).await,
        url,
        "CreateQueue is idempotent"
    );
    for name in ["orders-dlq", "payments"] {
        create_queue_url(&sqs, name, &[]).await;
    }

    let found = sqs.get_queue_url().queue_name("orders").send().await.unwrap();
    assert_eq!(found.queue_url.unwrap(), url);

    let listed = sqs
        .list_queues()
        .queue_name_prefix("orders")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.queue_urls().len(), 2);
    assert!(listed.next_token.is_none());

    let page = sqs.list_queues().max_results(2).send().await.unwrap();
    assert_eq!(page.queue_urls().len(), 2);
    let rest = sqs
        .list_queues()
        .max_results(2)
        .next_token(page.next_token.unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(
        rest.queue_urls(),
        [format!("{}/000000000000/payments", server.url)]
    );
    assert!(rest.next_token.is_none());

    sqs.delete_queue().queue_url(&url).send().await.unwrap();
    let gone = sqs.get_queue_url().queue_name("orders").send().await;
    assert_eq!(error_code(gone), "AWS.SimpleQueueService.NonExistentQueue");
    let gone = sqs.delete_queue().queue_url(&url).send().await;
    assert_eq!(error_code(gone), "AWS.SimpleQueueService.NonExistentQueue");
}

#[tokio::test]
async fn create_queue_checks_names_and_conflicting_attributes() {
    let server = Server::start();
    let sqs = server.client();
    sqs.create_queue()
        .queue_name("q")
        .attributes(QueueAttributeName::VisibilityTimeout, "60")
        .send()
        .await
        .unwrap();
    let conflict = sqs
        .create_queue()
        .queue_name("q")
        .attributes(QueueAttributeName::VisibilityTimeout, "61")
        .send()
        .await;
    assert_eq!(error_code(conflict), "QueueAlreadyExists");
    for bad in ["has space", "dot.ted", &"n".repeat(81)] {
        let result = sqs.create_queue().queue_name(bad).send().await;
        assert_eq!(error_code(result), "InvalidParameterValue", "{bad}");
    }
    let result = sqs
        .create_queue()
        .queue_name("x")
        .attributes(QueueAttributeName::DelaySeconds, "901")
        .send()
        .await;
    assert_eq!(error_code(result), "InvalidAttributeValue");
    let result = sqs
        .create_queue()
        .queue_name("x")
        .attributes(QueueAttributeName::from("Bogus"), "1")
        .send()
        .await;
    assert_eq!(error_code(result), "InvalidAttributeName");
}

#[tokio::test]
async fn attributes_are_set_and_reported() {
    let server = Server::start();
    let sqs = server.client();
    let url = sqs
        .create_queue()
        .queue_name("attrs")
        .attributes(QueueAttributeName::VisibilityTimeout, "45")
        .attributes(QueueAttributeName::MessageRetentionPeriod, "600")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    send_body(&sqs, &url, "a").await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("b")
        .delay_seconds(60)
        .send()
        .await
        .unwrap();
    receive_plain(&sqs, &url).await;
    send_body(&sqs, &url, "c").await;

    let all = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap();
    let attrs = all.attributes.unwrap();
    let get = |name: &str| {
        attrs
            .get(&QueueAttributeName::from(name))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(get("VisibilityTimeout"), "45");
    assert_eq!(get("MessageRetentionPeriod"), "600");
    assert_eq!(get("DelaySeconds"), "0");
    assert_eq!(get("MaximumMessageSize"), "1048576");
    assert_eq!(get("ReceiveMessageWaitTimeSeconds"), "0");
    assert_eq!(get("ApproximateNumberOfMessages"), "1");
    assert_eq!(get("ApproximateNumberOfMessagesNotVisible"), "1");
    assert_eq!(get("ApproximateNumberOfMessagesDelayed"), "1");
    assert_eq!(get("QueueArn"), "arn:aws:sqs:us-east-1:000000000000:attrs");
    assert!(get("CreatedTimestamp").parse::<u64>().unwrap() > 1_600_000_000);

    sqs.set_queue_attributes()
        .queue_url(&url)
        .attributes(QueueAttributeName::DelaySeconds, "5")
        .attributes(QueueAttributeName::ReceiveMessageWaitTimeSeconds, "20")
        .send()
        .await
        .unwrap();
    let some = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::DelaySeconds)
        .attribute_names(QueueAttributeName::ReceiveMessageWaitTimeSeconds)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    assert_eq!(some.len(), 2);
    assert_eq!(some[&QueueAttributeName::DelaySeconds], "5");

    let bad = sqs
        .set_queue_attributes()
        .queue_url(&url)
        .attributes(QueueAttributeName::VisibilityTimeout, "43201")
        .send()
        .await;
    assert_eq!(error_code(bad), "InvalidAttributeValue");
    let read_only = sqs
        .set_queue_attributes()
        .queue_url(&url)
        .attributes(QueueAttributeName::QueueArn, "x")
        .send()
        .await;
    assert_eq!(error_code(read_only), "InvalidAttributeName");
    let unknown = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::from("Nope"))
        .send()
        .await;
    assert_eq!(error_code(unknown), "InvalidAttributeName");
}

#[tokio::test]
async fn messages_keep_body_and_attributes_with_aws_md5s() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "md5", &[]).await;
    let body = "héllo wörld ✓ 𝄞\ttab";
    let sent = sqs
        .send_message()
        .queue_url(&url)
        .message_body(body)
        .message_attributes("str", string_attr("value"))
        .message_attributes(
            "num",
            MessageAttributeValue::builder()
                .data_type("Number.int")
                .string_value("42")
                .build()
                .unwrap(),
        )
        .message_attributes(
            "bin",
            MessageAttributeValue::builder()
                .data_type("Binary")
                .binary_value(Blob::new(vec![0u8, 1, 2, 255]))
                .build()
                .unwrap(),
        )
        .message_system_attributes(
            MessageSystemAttributeNameForSends::AwsTraceHeader,
            MessageSystemAttributeValue::builder()
                .data_type("String")
                .string_value("Root=1-5759e988-bd862e3fe1be46a994272793")
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        sent.md5_of_message_body.as_deref(),
        Some(md5_hex(body.as_bytes()).as_str())
    );
    let attributes_md5 = sent.md5_of_message_attributes.clone().unwrap();
    assert!(sent.md5_of_message_system_attributes.is_some());

    let received = sqs
        .receive_message()
        .queue_url(&url)
        .message_attribute_names("All")
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    let message = &received.messages()[0];
    assert_eq!(message.body(), Some(body));
    assert_eq!(message.message_id, sent.message_id);
    assert_eq!(
        message.md5_of_body.as_deref(),
        Some(md5_hex(body.as_bytes()).as_str())
    );
    assert_eq!(
        message.md5_of_message_attributes.as_deref(),
        Some(attributes_md5.as_str())
    );
    let attrs = message.message_attributes.as_ref().unwrap();
    assert_eq!(attrs["str"].string_value(), Some("value"));
    assert_eq!(attrs["num"].data_type(), "Number.int");
    assert_eq!(attrs["num"].string_value(), Some("42"));
    assert_eq!(attrs["bin"].binary_value().unwrap().as_ref(), &[0u8, 1, 2, 255]);
    let system = message.attributes.as_ref().unwrap();
    assert_eq!(system[&MessageSystemAttributeName::ApproximateReceiveCount], "1");
    assert_eq!(system[&MessageSystemAttributeName::SenderId], "000000000000");
    assert!(
        system[&MessageSystemAttributeName::SentTimestamp]
            .parse::<u64>()
            .unwrap()
            > 1_600_000_000_000
    );
    assert!(system.contains_key(&MessageSystemAttributeName::ApproximateFirstReceiveTimestamp));
    assert_eq!(
        system[&MessageSystemAttributeName::AwsTraceHeader],
        "Root=1-5759e988-bd862e3fe1be46a994272793"
    );
}

#[tokio::test]
async fn receive_returns_only_the_message_attributes_asked_for() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "filter", &[]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("x")
        .message_attributes("app.id", string_attr("1"))
        .message_attributes("app.name", string_attr("n"))
        .message_attributes("other", string_attr("o"))
        .send()
        .await
        .unwrap();
    let received = sqs
        .receive_message()
        .queue_url(&url)
        .message_attribute_names("app.*")
        .send()
        .await
        .unwrap();
    let message = &received.messages()[0];
    let attrs = message.message_attributes.as_ref().unwrap();
    let mut names: Vec<_> = attrs.keys().cloned().collect();
    names.sort();
    assert_eq!(names, ["app.id", "app.name"]);
    assert!(message.attributes.is_none(), "no system attributes unless asked");
}

#[tokio::test]
async fn invalid_messages_are_refused() {
    let server = Server::start();
    let sqs = server.client();
    let url = sqs
        .create_queue()
        .queue_name("strict")
        .attributes(QueueAttributeName::MaximumMessageSize, "1024")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let too_big = sqs
        .send_message()
        .queue_url(&url)
        .message_body("x".repeat(1025))
        .send()
        .await;
    assert_eq!(error_code(too_big), "InvalidParameterValue");
    let bad_char = sqs
        .send_message()
        .queue_url(&url)
        .message_body("nul \u{0} here")
        .send()
        .await;
    assert_eq!(error_code(bad_char), "InvalidMessageContents");
    let bad_delay = sqs
        .send_message()
        .queue_url(&url)
        .message_body("x")
        .delay_seconds(901)
        .send()
        .await;
    assert_eq!(error_code(bad_delay), "InvalidParameterValue");
    let bad_attr = sqs
        .send_message()
        .queue_url(&url)
        .message_body("x")
        .message_attributes("AWS.reserved", string_attr("v"))
        .send()
        .await;
    assert_eq!(error_code(bad_attr), "InvalidParameterValue");
    let bad_number = sqs
        .send_message()
        .queue_url(&url)
        .message_body("x")
        .message_attributes(
            "n",
            MessageAttributeValue::builder()
                .data_type("Number")
                .string_value("12abc")
                .build()
                .unwrap(),
        )
        .send()
        .await;
    assert_eq!(error_code(bad_number), "InvalidParameterValue");
    let no_queue = sqs
        .send_message()
        .queue_url(format!("{}/000000000000/nope", server.url))
        .message_body("x")
        .send()
        .await;
    assert_eq!(error_code(no_queue), "AWS.SimpleQueueService.NonExistentQueue");
}

#[tokio::test]
async fn a_full_size_message_of_one_mebibyte_round_trips() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "big", &[]).await;
    let body = "€".repeat(1_048_576 / 3) + "a"; // 1,048,576 bytes of UTF-8
    assert_eq!(body.len(), 1_048_576);
    send_body(&sqs, &url, &body).await;
    let received = receive_plain(&sqs, &url).await;
    assert_eq!(received[0].body(), Some(body.as_str()));
}

#[tokio::test]
async fn long_polling_returns_when_a_message_arrives() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "poll", &[]).await;
    let poller = {
        let (sqs, url) = (sqs.clone(), url.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let out = sqs
                .receive_message()
                .queue_url(&url)
                .wait_time_seconds(10)
                .send()
                .await
                .unwrap();
            (out.messages().len(), started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    send_body(&sqs, &url, "wake up").await;
    let (count, waited) = poller.await.unwrap();
    assert_eq!(count, 1);
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(5),
        "waited {waited:?}"
    );

    let started = Instant::now();
    let empty = sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    assert!(empty.messages().is_empty());
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "an empty long poll waits its time"
    );

    let bad = sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(21)
        .send()
        .await;
    assert_eq!(error_code(bad), "InvalidParameterValue");
    let bad = sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(11)
        .send()
        .await;
    assert_eq!(error_code(bad), "InvalidParameterValue");
}

#[tokio::test]
async fn visibility_timeouts_hide_and_return_messages() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "vis", &[]).await;
    send_body(&sqs, &url, "m").await;

    let first = sqs
        .receive_message()
        .queue_url(&url)
        .visibility_timeout(1)
        .send()
        .await
        .unwrap();
    let first_handle = first.messages()[0].receipt_handle().unwrap().to_string();
    assert!(
        sqs.receive_message()
            .queue_url(&url)
            .send()
            .await
            .unwrap()
            .messages()
            .is_empty()
    );
    tokio::time::sleep(Duration::from_millis(1_200)).await;

    let second = sqs
        .receive_message()
        .queue_url(&url)
        .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
        .send()
        .await
        .unwrap();
    let message = &second.messages()[0];
    assert_eq!(
        message.attributes.as_ref().unwrap()[&MessageSystemAttributeName::ApproximateReceiveCount],
        "2"
    );
    let handle = message.receipt_handle().unwrap().to_string();
    assert_ne!(handle, first_handle);

    // As recorded against AWS, the old handle still changes the visibility
    // of a standard queue's message; visibility 0 releases it at once.
    sqs.change_message_visibility()
        .queue_url(&url)
        .receipt_handle(&first_handle)
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    let third = receive_plain(&sqs, &url).await;
    assert_eq!(third.len(), 1, "visibility 0 releases the message at once");
    // A handle of the right form that no receive issued names no message.
    let mut forged = handle.clone();
    forged.replace_range(
        forged.len() - 2..,
        if forged.ends_with("AA") { "AB" } else { "AA" },
    );
    let forged = sqs
        .change_message_visibility()
        .queue_url(&url)
        .receipt_handle(&forged)
        .visibility_timeout(5)
        .send()
        .await;
    assert_eq!(error_code(forged), "InvalidParameterValue");

    let garbage = sqs
        .change_message_visibility()
        .queue_url(&url)
        .receipt_handle("garbage")
        .visibility_timeout(5)
        .send()
        .await;
    assert_eq!(error_code(garbage), "ReceiptHandleIsInvalid");
    let too_long = sqs
        .change_message_visibility()
        .queue_url(&url)
        .receipt_handle(third[0].receipt_handle().unwrap())
        .visibility_timeout(43_201)
        .send()
        .await;
    assert_eq!(error_code(too_long), "InvalidParameterValue");
}

#[tokio::test]
async fn delete_takes_the_latest_receipt_handle() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "del", &[]).await;
    send_body(&sqs, &url, "m").await;
    let received = receive_plain(&sqs, &url).await;
    let handle = received[0].receipt_handle().unwrap();
    sqs.delete_message()
        .queue_url(&url)
        .receipt_handle(handle)
        .send()
        .await
        .unwrap();
    // Deleting again with the same handle succeeds, as in SQS.
    sqs.delete_message()
        .queue_url(&url)
        .receipt_handle(handle)
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
    let attrs = attrs.attributes.unwrap();
    assert_eq!(attrs[&QueueAttributeName::ApproximateNumberOfMessages], "0");
    assert_eq!(
        attrs[&QueueAttributeName::ApproximateNumberOfMessagesNotVisible],
        "0"
    );
    let bad = sqs
        .delete_message()
        .queue_url(&url)
        .receipt_handle("not-a-handle")
        .send()
        .await;
    assert_eq!(error_code(bad), "ReceiptHandleIsInvalid");
}

#[tokio::test]
async fn batches_report_each_entry() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "batch", &[]).await;
    let entry = |id: &str, body: &str| {
        SendMessageBatchRequestEntry::builder()
            .id(id)
            .message_body(body)
            .build()
            .unwrap()
    };
    let sent = sqs
        .send_message_batch()
        .queue_url(&url)
        .entries(entry("a", "one"))
        .entries(entry("b", "bad \u{1}"))
        .entries(
            SendMessageBatchRequestEntry::builder()
                .id("c")
                .message_body("three")
                .delay_seconds(0)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let ok: Vec<_> = sent.successful().iter().map(|s| s.id()).collect();
    assert_eq!(ok, ["a", "c"]);
    assert_eq!(sent.failed().len(), 1);
    assert_eq!(sent.failed()[0].id(), "b");
    assert_eq!(sent.failed()[0].code(), "InvalidMessageContents");
    assert!(sent.failed()[0].sender_fault());
    assert_eq!(sent.successful()[0].md5_of_message_body(), md5_hex(b"one"));

    let received = sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    assert_eq!(received.messages().len(), 2);

    let visibility = sqs
        .change_message_visibility_batch()
        .queue_url(&url)
        .entries(
            ChangeMessageVisibilityBatchRequestEntry::builder()
                .id("v1")
                .receipt_handle(received.messages()[0].receipt_handle().unwrap())
                .visibility_timeout(100)
                .build()
                .unwrap(),
        )
        .entries(
            ChangeMessageVisibilityBatchRequestEntry::builder()
                .id("v2")
                .receipt_handle("junk")
                .visibility_timeout(100)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(visibility.successful().len(), 1);
    assert_eq!(visibility.failed()[0].code(), "ReceiptHandleIsInvalid");

    let mut deletes = sqs.delete_message_batch().queue_url(&url);
    for (i, message) in received.messages().iter().enumerate() {
        deletes = deletes.entries(
            DeleteMessageBatchRequestEntry::builder()
                .id(format!("d{i}"))
                .receipt_handle(message.receipt_handle().unwrap())
                .build()
                .unwrap(),
        );
    }
    let deleted = deletes.send().await.unwrap();
    assert_eq!(deleted.successful().len(), 2);
    assert!(deleted.failed().is_empty());

    let empty = sqs
        .send_message_batch()
        .queue_url(&url)
        .set_entries(Some(vec![]))
        .send()
        .await;
    assert_eq!(error_code(empty), "AWS.SimpleQueueService.EmptyBatchRequest");
    let mut eleven = sqs.send_message_batch().queue_url(&url);
    for i in 0..11 {
        eleven = eleven.entries(entry(&format!("e{i}"), "x"));
    }
    assert_eq!(
        error_code(eleven.send().await),
        "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"
    );
    let same_ids = sqs
        .send_message_batch()
        .queue_url(&url)
        .entries(entry("x", "1"))
        .entries(entry("x", "2"))
        .send()
        .await;
    assert_eq!(
        error_code(same_ids),
        "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"
    );
    let bad_id = sqs
        .send_message_batch()
        .queue_url(&url)
        .entries(entry("no spaces", "1"))
        .send()
        .await;
    assert_eq!(error_code(bad_id), "AWS.SimpleQueueService.InvalidBatchEntryId");
    let too_long = sqs
        .send_message_batch()
        .queue_url(&url)
        .entries(entry("big1", &"x".repeat(600_000)))
        .entries(entry("big2", &"x".repeat(600_000)))
        .send()
        .await;
    assert_eq!(error_code(too_long), "AWS.SimpleQueueService.BatchRequestTooLong");
}

#[tokio::test]
async fn purge_empties_the_queue_once_a_minute() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "purge", &[]).await;
    for i in 0..5 {
        send_body(&sqs, &url, format!("m{i}")).await;
    }
    sqs.purge_queue().queue_url(&url).send().await.unwrap();
    assert!(
        sqs.receive_message()
            .queue_url(&url)
            .send()
            .await
            .unwrap()
            .messages()
            .is_empty()
    );
    let again = sqs.purge_queue().queue_url(&url).send().await;
    assert_eq!(error_code(again), "AWS.SimpleQueueService.PurgeQueueInProgress");
}

#[tokio::test]
async fn tags_are_added_listed_and_removed() {
    let server = Server::start();
    let sqs = server.client();
    let url = sqs
        .create_queue()
        .queue_name("tagged")
        .tags("team", "core")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    sqs.tag_queue()
        .queue_url(&url)
        .tags("env", "test")
        .tags("team", "platform")
        .send()
        .await
        .unwrap();
    let tags = sqs
        .list_queue_tags()
        .queue_url(&url)
        .send()
        .await
        .unwrap()
        .tags
        .unwrap();
    assert_eq!(
        tags,
        HashMap::from([("env".into(), "test".into()), ("team".into(), "platform".into())])
    );
    sqs.untag_queue()
        .queue_url(&url)
        .tag_keys("env")
        .send()
        .await
        .unwrap();
    let tags = sqs
        .list_queue_tags()
        .queue_url(&url)
        .send()
        .await
        .unwrap()
        .tags
        .unwrap();
    assert_eq!(tags.len(), 1);
    let mut too_many = sqs.tag_queue().queue_url(&url);
    for i in 0..50 {
        too_many = too_many.tags(format!("k{i}"), "v");
    }
    assert_eq!(error_code(too_many.send().await), "InvalidParameterValue");
}
