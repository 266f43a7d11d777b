//! Answers that must be AWS's, word for word, over both wire formats: each
//! case here was read off a response recorded against real SQS (LocalStack's
//! snapshots, `../shared/conformance`), not off an emulator.

use crate::common::Server;
use serde_json::{Value, json};

/// A JSON-protocol call: status, body, and the x-amzn-query-error header.
async fn json_call(server: &Server, action: &str, input: Value) -> (u16, Value, Option<String>) {
    let target = format!("AmazonSQS.{action}");
    let answer = crate::common::json_call(&server.url, Some(&target), input.to_string()).await;
    (answer.status, answer.body, answer.query_error)
}

/// A Query-protocol call: status and XML body.
async fn query_call(server: &Server, form: &[(&str, &str)]) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(&server.url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(serde_urlencoded::to_string(form).unwrap())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn create(server: &Server, name: &str, attributes: Value) -> String {
    let (status, body, _) = json_call(
        server,
        "CreateQueue",
        json!({"QueueName": name, "Attributes": attributes}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["QueueUrl"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn empty_query_answers_still_carry_their_result_element() {
    let server = Server::start();
    let url = create(&server, "empty", json!({})).await;
    for action in ["ReceiveMessage", "ListQueueTags", "GetQueueAttributes"] {
        let (status, xml) = query_call(&server, &[("Action", action), ("QueueUrl", &url)]).await;
        assert_eq!(status, 200, "{xml}");
        assert!(xml.contains(&format!("<{action}Result/>")), "{action}: {xml}");
    }
    // Actions whose response has no members answer with the metadata alone.
    let (status, xml) = query_call(&server, &[("Action", "PurgeQueue"), ("QueueUrl", &url)]).await;
    assert_eq!(status, 200, "{xml}");
    assert!(!xml.contains("PurgeQueueResult"), "{xml}");
}

#[tokio::test]
async fn boolean_attributes_are_read_in_any_case_and_answered_in_lower_case() {
    let server = Server::start();
    let url = create(
        &server,
        "cased.fifo",
        json!({"FifoQueue": "True", "ContentBasedDeduplication": "TRUE"}),
    )
    .await;
    let (_, body, _) = json_call(
        &server,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["FifoQueue", "ContentBasedDeduplication"]}),
    )
    .await;
    assert_eq!(body["Attributes"]["FifoQueue"], "true");
    assert_eq!(body["Attributes"]["ContentBasedDeduplication"], "true");

    let (status, xml) = query_call(
        &server,
        &[
            ("Action", "SetQueueAttributes"),
            ("QueueUrl", &url),
            ("Attribute.1.Name", "ContentBasedDeduplication"),
            ("Attribute.1.Value", "False"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    let (_, xml) = query_call(
        &server,
        &[
            ("Action", "GetQueueAttributes"),
            ("QueueUrl", &url),
            ("AttributeName.1", "ContentBasedDeduplication"),
        ],
    )
    .await;
    assert!(xml.contains("<Value>false</Value>"), "{xml}");
}

#[tokio::test]
async fn the_data_key_reuse_period_is_reported_only_with_a_kms_key() {
    let server = Server::start();
    let url = create(&server, "kms", json!({})).await;
    let all = || {
        json_call(
            &server,
            "GetQueueAttributes",
            json!({"QueueUrl": url, "AttributeNames": ["All"]}),
        )
    };
    let set = |attributes: Value| {
        json_call(
            &server,
            "SetQueueAttributes",
            json!({"QueueUrl": url, "Attributes": attributes}),
        )
    };
    let (_, initial, _) = all().await;
    assert!(
        initial["Attributes"]
            .get("KmsDataKeyReusePeriodSeconds")
            .is_none(),
        "{initial}"
    );
    set(json!({"KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000"})).await;
    let (_, with_key, _) = all().await;
    assert_eq!(initial["Attributes"]["SqsManagedSseEnabled"], "true", "{initial}");
    assert_eq!(with_key["Attributes"]["KmsDataKeyReusePeriodSeconds"], "6000");
    assert_eq!(with_key["Attributes"]["KmsMasterKeyId"], "testKeyId");
    assert_eq!(
        with_key["Attributes"]["SqsManagedSseEnabled"], "false",
        "SSE-KMS replaces SSE-SQS"
    );
    set(json!({"KmsMasterKeyId": "", "KmsDataKeyReusePeriodSeconds": "300"})).await;
    let (_, without, _) = all().await;
    assert!(
        without["Attributes"]
            .get("KmsDataKeyReusePeriodSeconds")
            .is_none(),
        "{without}"
    );
    assert!(without["Attributes"].get("KmsMasterKeyId").is_none(), "{without}");
    assert_eq!(
        without["Attributes"]["SqsManagedSseEnabled"], "false",
        "and stays off"
    );
}

#[tokio::test]
async fn parameter_errors_have_aws_codes_and_wording_in_both_protocols() {
    let server = Server::start();
    let url = create(&server, "words", json!({})).await;
    let fifo = create(&server, "words.fifo", json!({"FifoQueue": "true"})).await;
    // (action, JSON input, the same as a form, Query code, AWS's message)
    type Case<'a> = (&'a str, Value, Vec<(&'a str, &'a str)>, &'a str, &'a str);
    let cases: Vec<Case> = vec![
        (
            "ReceiveMessage",
            json!({"QueueUrl": url, "WaitTimeSeconds": 21}),
            vec![("QueueUrl", url.as_str()), ("WaitTimeSeconds", "21")],
            "InvalidParameterValue",
            "Value 21 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.",
        ),
        (
            "ReceiveMessage",
            json!({"QueueUrl": url, "MaxNumberOfMessages": 11}),
            vec![("QueueUrl", url.as_str()), ("MaxNumberOfMessages", "11")],
            "InvalidParameterValue",
            "Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.",
        ),
        (
            "SendMessage",
            json!({"QueueUrl": fifo, "MessageBody": "b", "MessageGroupId": "g", "MessageDeduplicationId": "d", "DelaySeconds": 2}),
            vec![
                ("QueueUrl", fifo.as_str()),
                ("MessageBody", "b"),
                ("MessageGroupId", "g"),
                ("MessageDeduplicationId", "d"),
                ("DelaySeconds", "2"),
            ],
            "InvalidParameterValue",
            "Value 2 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.",
        ),
        (
            "SendMessage",
            json!({"QueueUrl": fifo, "MessageBody": "b", "MessageGroupId": "group 123", "MessageDeduplicationId": "d"}),
            vec![
                ("QueueUrl", fifo.as_str()),
                ("MessageBody", "b"),
                ("MessageGroupId", "group 123"),
                ("MessageDeduplicationId", "d"),
            ],
            "InvalidParameterValue",
            "Value group 123 for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.",
        ),
    ];
    for (action, json_input, form, code, message) in cases {
        let (status, body, query_error) = json_call(&server, action, json_input).await;
        assert_eq!(status, 400);
        assert_eq!(body["__type"], "com.amazonaws.sqs#InvalidParameterValueException");
        assert_eq!(query_error.as_deref(), Some(format!("{code};Sender").as_str()));
        assert_eq!(body["message"], message);

        let mut form = form;
        form.insert(0, ("Action", action));
        let (status, xml) = query_call(&server, &form).await;
        assert_eq!(status, 400);
        assert!(xml.contains(&format!("<Code>{code}</Code>")), "{xml}");
        let escaped = message
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(xml.contains(&format!("<Message>{escaped}</Message>")), "{xml}");
    }
}

#[tokio::test]
async fn a_bare_queue_name_serves_as_its_url_and_a_malformed_url_names_no_queue() {
    let server = Server::start();
    create(&server, "bare", json!({})).await;
    let (status, body, _) = json_call(
        &server,
        "SendMessage",
        json!({"QueueUrl": "bare", "MessageBody": "by name"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, xml) = query_call(&server, &[("Action", "ReceiveMessage"), ("QueueUrl", "bare")]).await;
    assert_eq!(status, 200, "{xml}");
    assert!(xml.contains("<Body>by name</Body>"), "{xml}");

    let (status, body, query_error) = json_call(
        &server,
        "SendMessage",
        json!({"QueueUrl": "http://host/bare", "MessageBody": "x"}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["__type"], "com.amazonaws.sqs#QueueDoesNotExist");
    assert_eq!(
        query_error.as_deref(),
        Some("AWS.SimpleQueueService.NonExistentQueue;Sender")
    );
}

#[tokio::test]
async fn message_attribute_names_may_use_any_script_and_empty_values_are_named() {
    let server = Server::start();
    let url = create(&server, "scripts", json!({})).await;
    let name = "attr.1øßä";
    let (status, body, _) = json_call(
        &server,
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "b",
               "MessageAttributes": {name: {"DataType": "String", "StringValue": "v"}}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, xml) = query_call(
        &server,
        &[
            ("Action", "ReceiveMessage"),
            ("QueueUrl", &url),
            ("MessageAttributeName.1", "All"),
        ],
    )
    .await;
    assert!(xml.contains(&format!("<Name>{name}</Name>")), "{xml}");

    let (status, xml) = query_call(
        &server,
        &[
            ("Action", "SendMessage"),
            ("QueueUrl", &url),
            ("MessageBody", "b"),
            ("MessageAttribute.1.Name", "ErrorDetails"),
            ("MessageAttribute.1.Value.DataType", "String"),
            ("MessageAttribute.1.Value.StringValue", ""),
        ],
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        xml.contains(
            "<Message>Message (user) attribute &apos;ErrorDetails&apos; must contain a non-empty value of type &apos;String&apos;.</Message>"
        ),
        "{xml}"
    );
}

#[tokio::test]
async fn query_calls_work_as_get_on_queue_urls_and_the_root() {
    let server = Server::start();
    let url = create(&server, "gets", json!({})).await;
    let http = reqwest::Client::new();
    let get = |target: String, accept: Option<&'static str>| {
        let mut request = http.get(target);
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };

    let (status, xml) = get(
        format!("{url}?Action=GetQueueAttributes&AttributeName.1=All"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    assert!(
        xml.contains("<Attribute><Name>QueueArn</Name><Value>arn:aws:sqs:"),
        "{xml}"
    );
    assert!(
        xml.contains("<Attribute><Name>VisibilityTimeout</Name><Value>30</Value>"),
        "{xml}"
    );

    let (status, xml) = get(format!("{url}?Action=SendMessage"), None).await;
    assert_eq!(status, 400);
    assert!(xml.contains("<Code>MissingParameter</Code>"), "{xml}");
    assert!(
        xml.contains("<Message>The request must contain the parameter MessageBody.</Message>"),
        "{xml}"
    );

    // A queue URL takes only the actions that act on a queue.
    let (status, xml) = get(format!("{url}?Action=CreateQueue&QueueName=other"), None).await;
    assert_eq!(status, 400);
    assert!(xml.contains("<Code>InvalidAction</Code>"), "{xml}");
    assert!(
        xml.contains("<Message>The action CreateQueue is not valid for this endpoint.</Message>"),
        "{xml}"
    );

    for accept in [None, Some("application/json")] {
        let (status, body) = get(url.clone(), accept).await;
        assert_eq!(status, 404);
        assert!(body.contains("<UnknownOperationException"), "{body}");
    }

    let root = format!("{}/?Action=ListQueues&Version=2012-11-05", server.url);
    let (status, body) = get(root.clone(), Some("application/json")).await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        answer["ListQueuesResponse"]["ListQueuesResult"]["QueueUrls"][0],
        url.as_str()
    );
    let (status, xml) = get(root, None).await;
    assert_eq!(status, 200);
    assert!(xml.contains("<ListQueuesResponse"), "{xml}");
}

#[tokio::test]
async fn fifo_rules_fail_a_whole_batch_and_fifo_attributes_are_unknown_to_standard_queues() {
    let server = Server::start();
    let fifo = create(&server, "batch.fifo", json!({"FifoQueue": "true"})).await;
    let entry = |id: &str, group: Option<&str>, dedup: Option<&str>| {
        let mut entry = json!({"Id": id, "MessageBody": "b"});
        if let Some(group) = group {
            entry["MessageGroupId"] = json!(group);
        }
        if let Some(dedup) = dedup {
            entry["MessageDeduplicationId"] = json!(dedup);
        }
        entry
    };
    for (entries, message) in [
        (
            vec![entry("a", Some("g"), Some("d1")), entry("b", None, Some("d2"))],
            "The request must contain the parameter MessageGroupId.",
        ),
        (
            vec![entry("a", Some("g"), Some("d1")), entry("b", Some("g"), None)],
            "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly",
        ),
    ] {
        let (status, body, query_error) = json_call(
            &server,
            "SendMessageBatch",
            json!({"QueueUrl": fifo, "Entries": entries}),
        )
        .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["message"], message);
        assert_eq!(query_error.as_deref(), Some("InvalidParameterValue;Sender"));
    }
    let (_, body, _) = json_call(
        &server,
        "GetQueueAttributes",
        json!({"QueueUrl": fifo, "AttributeNames": ["ApproximateNumberOfMessages"]}),
    )
    .await;
    assert_eq!(
        body["Attributes"]["ApproximateNumberOfMessages"], "0",
        "nothing was sent"
    );

    let standard = create(&server, "plain", json!({})).await;
    for (attributes, code, message) in [
        (
            json!({"FifoQueue": "false"}),
            "InvalidAttributeName",
            "Unknown Attribute FifoQueue.",
        ),
        (
            json!({"FifoThroughputLimit": "perQueue"}),
            "InvalidAttributeName",
            "You can specify the FifoThroughputLimit only when FifoQueue is set to true.",
        ),
    ] {
        let (status, body, query_error) = json_call(
            &server,
            "SetQueueAttributes",
            json!({"QueueUrl": standard, "Attributes": attributes}),
        )
        .await;
        assert_eq!(status, 400);
        assert_eq!(body["message"], message);
        assert_eq!(query_error.as_deref(), Some(format!("{code};Sender").as_str()));
    }
    let (status, body, _) = json_call(
        &server,
        "SetQueueAttributes",
        json!({"QueueUrl": fifo, "Attributes": {"FifoQueue": "false"}}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["message"],
        "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported."
    );
}

#[tokio::test]
async fn fifo_sequence_numbers_have_twenty_digits_and_the_trace_header_travels() {
    let server = Server::start();
    let fifo = create(
        &server,
        "seq.fifo",
        json!({"FifoQueue": "true", "ContentBasedDeduplication": "true"}),
    )
    .await;
    let mut numbers = Vec::new();
    for body in ["a", "b"] {
        let (status, sent, _) = json_call(
            &server,
            "SendMessage",
            json!({"QueueUrl": fifo, "MessageBody": body, "MessageGroupId": "g"}),
        )
        .await;
        assert_eq!(status, 200, "{sent}");
        numbers.push(sent["SequenceNumber"].as_str().unwrap().to_string());
    }
    for number in &numbers {
        assert_eq!(number.len(), 20, "{number}");
        assert!(
            number.bytes().all(|b| b.is_ascii_digit()) && !number.starts_with('0'),
            "{number}"
        );
    }
    assert!(numbers[0] < numbers[1], "{numbers:?}");

    // X-Amzn-Trace-Id on SendMessage becomes the message's AWSTraceHeader.
    let url = create(&server, "traced", json!({})).await;
    let trace = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1";
    let response = reqwest::Client::new()
        .post(&server.url)
        .header("x-amz-target", "AmazonSQS.SendMessage")
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-trace-id", trace)
        .body(json!({"QueueUrl": url, "MessageBody": "traced"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (_, received, _) = json_call(
        &server,
        "ReceiveMessage",
        json!({"QueueUrl": url, "MessageSystemAttributeNames": ["AWSTraceHeader"]}),
    )
    .await;
    assert_eq!(received["Messages"][0]["Attributes"]["AWSTraceHeader"], trace);
}

#[tokio::test]
async fn query_answers_for_missing_queues_wildcards_fifo_delays_and_dead_letter_counts() {
    let server = Server::start();
    let gone = format!("{}/000000000000/never-made", server.url);
    let (status, xml) = query_call(&server, &[("Action", "GetQueueAttributes"), ("QueueUrl", &gone)]).await;
    assert_eq!(status, 400);
    assert!(
        xml.contains("<Message>The specified queue does not exist for this wsdl version.</Message>"),
        "{xml}"
    );
    let (_, body, _) = json_call(&server, "GetQueueAttributes", json!({"QueueUrl": gone})).await;
    assert_eq!(body["message"], "The specified queue does not exist.");

    // GetQueueUrl may be sent to a queue URL too.
    let url = create(&server, "here", json!({})).await;
    let response = reqwest::Client::new()
        .get(format!("{url}?Action=GetQueueUrl&QueueName=here"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains(&format!("<QueueUrl>{url}</QueueUrl>"))
    );

    // `*` selects every message attribute, as `All` does.
    json_call(
        &server,
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "b",
               "MessageAttributes": {"a": {"DataType": "String", "StringValue": "v"}}}),
    )
    .await;
    let (_, received, _) = json_call(
        &server,
        "ReceiveMessage",
        json!({"QueueUrl": url, "MessageAttributeNames": ["*"]}),
    )
    .await;
    assert_eq!(
        received["Messages"][0]["MessageAttributes"]["a"]["StringValue"],
        "v"
    );
    assert!(received["Messages"][0]["MD5OfMessageAttributes"].is_string());

    // On a FIFO queue an explicit DelaySeconds of 0 means the queue's delay.
    let fifo = create(
        &server,
        "slow.fifo",
        json!({"FifoQueue": "true", "ContentBasedDeduplication": "true", "DelaySeconds": "5"}),
    )
    .await;
    let (status, _, _) = json_call(
        &server,
        "SendMessage",
        json!({"QueueUrl": fifo, "MessageBody": "later", "MessageGroupId": "g", "DelaySeconds": 0}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, received, _) = json_call(&server, "ReceiveMessage", json!({"QueueUrl": fifo})).await;
    assert!(received.get("Messages").is_none(), "still delayed: {received}");

    // A dead letter keeps its receive count.
    let dlq = create(&server, "dead", json!({})).await;
    let source = create(
        &server,
        "source",
        json!({"VisibilityTimeout": "0",
               "RedrivePolicy": json!({"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:dead", "maxReceiveCount": 1}).to_string()}),
    )
    .await;
    json_call(
        &server,
        "SendMessage",
        json!({"QueueUrl": source, "MessageBody": "m"}),
    )
    .await;
    let (_, first, _) = json_call(&server, "ReceiveMessage", json!({"QueueUrl": source})).await;
    assert_eq!(first["Messages"].as_array().unwrap().len(), 1);
    let (_, second, _) = json_call(&server, "ReceiveMessage", json!({"QueueUrl": source})).await;
    assert!(second.get("Messages").is_none(), "moved: {second}");
    let (_, dead, _) = json_call(
        &server,
        "ReceiveMessage",
        json!({"QueueUrl": dlq, "MessageSystemAttributeNames": ["ApproximateReceiveCount"]}),
    )
    .await;
    assert_eq!(dead["Messages"][0]["Attributes"]["ApproximateReceiveCount"], "2");
}

#[tokio::test]
async fn attribute_prefixes_bad_attribute_characters_and_the_policy_version() {
    let server = Server::start();
    let url = create(&server, "prefixes", json!({})).await;
    let string = |value: &str| json!({"DataType": "String", "StringValue": value});
    json_call(
        &server,
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "msg", "MessageAttributes": {
            "Help.Me": string("Me"), "Hello": string("There"), "General": string("Kenobi")}}),
    )
    .await;
    let (_, received, _) = json_call(
        &server,
        "ReceiveMessage",
        json!({"QueueUrl": url, "MessageAttributeNames": ["Hel.*"], "VisibilityTimeout": 0}),
    )
    .await;
    let mut names: Vec<&String> = received["Messages"][0]["MessageAttributes"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    names.sort();
    assert_eq!(names, ["Hello", "Help.Me"]);

    // A body's bad characters are InvalidMessageContents; an attribute's are
    // an invalid parameter.
    let (status, body, query_error) = json_call(
        &server,
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "b",
               "MessageAttributes": {"attr1": string("Invalid-\u{8},\u{b}")}}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(query_error.as_deref(), Some("InvalidParameterValue;Sender"));

    json_call(
        &server,
        "AddPermission",
        json!({"QueueUrl": url, "Label": "l", "AWSAccountIds": ["111122223333"], "Actions": ["SendMessage"]}),
    )
    .await;
    let (_, attributes, _) = json_call(
        &server,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["Policy"]}),
    )
    .await;
    let policy: Value = serde_json::from_str(attributes["Attributes"]["Policy"].as_str().unwrap()).unwrap();
    assert_eq!(policy["Version"], "2008-10-17");
}

/// Both wire formats, for scenarios that must run the same over each.
#[derive(Clone, Copy, Debug)]
enum Wire {
    Json,
    Query,
}

impl Wire {
    async fn send_grouped(self, server: &Server, url: &str, body: &str, group: &str) {
        match self {
            Wire::Json => {
                let input = json!({"QueueUrl": url, "MessageBody": body, "MessageGroupId": group});
                let (status, answer, _) = json_call(server, "SendMessage", input).await;
                assert_eq!(status, 200, "{answer}");
            }
            Wire::Query => {
                let form = [
                    ("Action", "SendMessage"),
                    ("QueueUrl", url),
                    ("MessageBody", body),
                    ("MessageGroupId", group),
                ];
                let (status, xml) = query_call(server, &form).await;
                assert_eq!(status, 200, "{xml}");
            }
        }
    }

    /// (body, receipt handle) of each message received, in order.
    async fn receive(self, server: &Server, url: &str, max: u32, visibility: u32) -> Vec<(String, String)> {
        match self {
            Wire::Json => {
                let input =
                    json!({"QueueUrl": url, "MaxNumberOfMessages": max, "VisibilityTimeout": visibility});
                let (status, answer, _) = json_call(server, "ReceiveMessage", input).await;
                assert_eq!(status, 200, "{answer}");
                let messages = answer["Messages"].as_array().cloned().unwrap_or_default();
                messages
                    .iter()
                    .map(|m| {
                        (
                            m["Body"].as_str().unwrap().into(),
                            m["ReceiptHandle"].as_str().unwrap().into(),
                        )
                    })
                    .collect()
            }
            Wire::Query => {
                let (max, visibility) = (max.to_string(), visibility.to_string());
                let form = [
                    ("Action", "ReceiveMessage"),
                    ("QueueUrl", url),
                    ("MaxNumberOfMessages", &max),
                    ("VisibilityTimeout", &visibility),
                ];
                let (status, xml) = query_call(server, &form).await;
                assert_eq!(status, 200, "{xml}");
                let element = |message: &str, name: &str| {
                    let start = message.find(&format!("<{name}>")).unwrap() + name.len() + 2;
                    let end = message.find(&format!("</{name}>")).unwrap();
                    message[start..end].to_string()
                };
                xml.split("<Message>")
                    .skip(1)
                    .map(|message| (element(message, "Body"), element(message, "ReceiptHandle")))
                    .collect()
            }
        }
    }

    async fn change_visibility(self, server: &Server, url: &str, handle: &str, timeout: u32) {
        match self {
            Wire::Json => {
                let input = json!({"QueueUrl": url, "ReceiptHandle": handle, "VisibilityTimeout": timeout});
                let (status, answer, _) = json_call(server, "ChangeMessageVisibility", input).await;
                assert_eq!(status, 200, "{answer}");
            }
            Wire::Query => {
                let timeout = timeout.to_string();
                let form = [
                    ("Action", "ChangeMessageVisibility"),
                    ("QueueUrl", url),
                    ("ReceiptHandle", handle),
                    ("VisibilityTimeout", &timeout),
                ];
                let (status, xml) = query_call(server, &form).await;
                assert_eq!(status, 200, "{xml}");
            }
        }
    }
}

fn bodies(received: &[(String, String)]) -> Vec<&str> {
    received.iter().map(|(body, _)| body.as_str()).collect()
}

/// FIFO groups take turns as recorded against AWS: a group whose message
/// comes back from a receive goes behind the groups already waiting, and
/// gives the messages before its oldest one still in flight.
#[tokio::test]
async fn fifo_groups_take_turns_as_aws_orders_them() {
    let server = Server::start();
    for wire in [Wire::Json, Wire::Query] {
        let attributes = json!({"FifoQueue": "true", "ContentBasedDeduplication": "true"});
        let url = create(&server, &format!("turns-{wire:?}.fifo"), attributes.clone()).await;
        for (body, group) in [("g1-m1", "1"), ("g1-m2", "1"), ("g2-m1", "2")] {
            wire.send_grouped(&server, &url, body, group).await;
        }
        let taken = wire.receive(&server, &url, 2, 30).await;
        assert_eq!(bodies(&taken), ["g1-m1", "g1-m2"], "{wire:?}");
        wire.change_visibility(&server, &url, &taken[0].1, 0).await;
        let again = wire.receive(&server, &url, 3, 30).await;
        assert_eq!(
            bodies(&again),
            ["g2-m1", "g1-m1"],
            "{wire:?}: g1-m2 is still in flight"
        );

        // Received with no visibility timeout, the groups taken go behind
        // the group the receive did not reach.
        let url = create(&server, &format!("zero-{wire:?}.fifo"), attributes).await;
        for (body, group) in [
            ("g1-m1", "1"),
            ("g2-m1", "2"),
            ("g2-m2", "2"),
            ("g3-m1", "3"),
            ("g1-m2", "1"),
        ] {
            wire.send_grouped(&server, &url, body, group).await;
        }
        let first = wire.receive(&server, &url, 3, 0).await;
        assert_eq!(bodies(&first), ["g1-m1", "g1-m2", "g2-m1"], "{wire:?}");
        let all = wire.receive(&server, &url, 10, 0).await;
        assert_eq!(
            bodies(&all),
            ["g3-m1", "g1-m1", "g1-m2", "g2-m1", "g2-m2"],
            "{wire:?}"
        );
    }
}

/// Sends `body` to a FIFO queue with an explicit deduplication id; returns
/// the MessageId.
async fn send_deduplicated(server: &Server, wire: Wire, url: &str, group: &str, dedup: &str) -> String {
    match wire {
        Wire::Json => {
            let input = json!({"QueueUrl": url, "MessageBody": "m", "MessageGroupId": group, "MessageDeduplicationId": dedup});
            let (status, answer, _) = json_call(server, "SendMessage", input).await;
            assert_eq!(status, 200, "{answer}");
            answer["MessageId"].as_str().unwrap().to_string()
        }
        Wire::Query => {
            let form = [
                ("Action", "SendMessage"),
                ("QueueUrl", url),
                ("MessageBody", "m"),
                ("MessageGroupId", group),
                ("MessageDeduplicationId", dedup),
            ];
            let (status, xml) = query_call(server, &form).await;
            assert_eq!(status, 200, "{xml}");
            let start = xml.find("<MessageId>").unwrap() + "<MessageId>".len();
            xml[start..start + 36].to_string()
        }
    }
}

/// As recorded against AWS: a purge forgets the deduplication ids, and the
/// deduplication scope a queue was created with stays in effect when the
/// attribute is changed.
#[tokio::test]
async fn purges_forget_deduplication_ids_and_the_created_scope_stays() {
    let server = Server::start();
    for wire in [Wire::Json, Wire::Query] {
        let url = create(
            &server,
            &format!("purged-{wire:?}.fifo"),
            json!({"FifoQueue": "true"}),
        )
        .await;
        let before = send_deduplicated(&server, wire, &url, "g", "same").await;
        let (status, _, _) = json_call(&server, "PurgeQueue", json!({"QueueUrl": url})).await;
        assert_eq!(status, 200);
        let after = send_deduplicated(&server, wire, &url, "g", "same").await;
        assert_ne!(after, before, "{wire:?}: a new message after the purge");

        for (created, changed_to, duplicate) in
            [("queue", "messageGroup", true), ("messageGroup", "queue", false)]
        {
            let attributes = json!({"FifoQueue": "true", "DeduplicationScope": created});
            let url = create(&server, &format!("scope-{created}-{wire:?}.fifo"), attributes).await;
            let first = send_deduplicated(&server, wire, &url, "g1", "same").await;
            let input = json!({"QueueUrl": url, "Attributes": {"DeduplicationScope": changed_to}});
            let (status, answer, _) = json_call(&server, "SetQueueAttributes", input).await;
            assert_eq!(status, 200, "{answer}");
            let second = send_deduplicated(&server, wire, &url, "g2", "same").await;
            assert_eq!(
                second == first,
                duplicate,
                "{wire:?}: created with {created}, changed to {changed_to}"
            );
        }
    }
}

/// AWS's JSON answers leave out a batch's empty Failed list.
#[tokio::test]
async fn a_batch_with_no_failures_has_no_failed_list() {
    let server = Server::start();
    let url = create(&server, "batched", json!({})).await;
    let entries = json!([{"Id": "1", "MessageBody": "a"}, {"Id": "2", "MessageBody": "b"}]);
    let (status, answer, _) = json_call(
        &server,
        "SendMessageBatch",
        json!({"QueueUrl": url, "Entries": entries}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["Successful"].as_array().unwrap().len(), 2, "{answer}");
    assert!(answer.get("Failed").is_none(), "{answer}");
    let entries = json!([{"Id": "1", "MessageBody": "a"}, {"Id": "2", "MessageBody": "\u{1}"}]);
    let (_, answer, _) = json_call(
        &server,
        "SendMessageBatch",
        json!({"QueueUrl": url, "Entries": entries}),
    )
    .await;
    assert_eq!(answer["Failed"][0]["Id"], "2", "{answer}");

    // An entry over MaximumMessageSize fails in the batch's own words; a
    // lone SendMessage in SendMessage's.
    let small = create(&server, "small", json!({"MaximumMessageSize": "1024"})).await;
    let large = "a".repeat(1025);
    let entries =
        json!([{"Id": "fits", "MessageBody": "a".repeat(1024)}, {"Id": "large", "MessageBody": large}]);
    let (_, answer, _) = json_call(
        &server,
        "SendMessageBatch",
        json!({"QueueUrl": small, "Entries": entries}),
    )
    .await;
    assert_eq!(answer["Successful"][0]["Id"], "fits", "{answer}");
    assert_eq!(
        answer["Failed"][0]["Message"],
        "One or more parameters cannot be validated. Reason: Message must be shorter than 1024 bytes.",
        "{answer}"
    );
    let form = [
        ("Action", "SendMessageBatch"),
        ("QueueUrl", small.as_str()),
        ("SendMessageBatchRequestEntry.1.Id", "large"),
        ("SendMessageBatchRequestEntry.1.MessageBody", large.as_str()),
    ];
    let (status, xml) = query_call(&server, &form).await;
    assert_eq!(status, 200, "{xml}");
    assert!(
        xml.contains("cannot be validated. Reason: Message must be shorter than 1024 bytes."),
        "{xml}"
    );
    let (_, answer, _) = json_call(
        &server,
        "SendMessage",
        json!({"QueueUrl": small, "MessageBody": large}),
    )
    .await;
    assert_eq!(
        answer["message"],
        "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes.",
        "{answer}"
    );
}

/// As recorded against AWS, on a standard queue: a message whose visibility
/// ran out takes a new timeout all the same, and an earlier receive's handle
/// still changes the visibility of the message received again since.
#[tokio::test]
async fn standard_queues_take_visibility_changes_from_expired_and_earlier_handles() {
    let server = Server::start();
    for wire in [Wire::Json, Wire::Query] {
        let url = create(&server, &format!("late-{wire:?}"), json!({})).await;
        let (status, _, _) = json_call(
            &server,
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": "m"}),
        )
        .await;
        assert_eq!(status, 200);
        let first = wire.receive(&server, &url, 1, 0).await;
        assert_eq!(bodies(&first), ["m"], "{wire:?}");
        let first_handle = &first[0].1;

        wire.change_visibility(&server, &url, first_handle, 30).await;
        assert!(
            wire.receive(&server, &url, 1, 30).await.is_empty(),
            "{wire:?}: hidden again"
        );
        wire.change_visibility(&server, &url, first_handle, 0).await;
        let second = wire.receive(&server, &url, 1, 30).await;
        assert_eq!(bodies(&second), ["m"], "{wire:?}");
        assert_ne!(&second[0].1, first_handle, "{wire:?}");

        wire.change_visibility(&server, &url, first_handle, 0).await;
        assert_eq!(
            bodies(&wire.receive(&server, &url, 1, 30).await),
            ["m"],
            "{wire:?}: released by the earlier handle"
        );
    }
}

/// A queue belongs to a region, as in AWS: the same name in two regions is
/// two queues, told apart by the region a client signs for and by the URL,
/// over both wire formats; a dead-letter queue is its source's region's.
#[tokio::test]
async fn the_same_name_in_two_regions_is_two_queues() {
    let server = Server::start();
    let home = server.client();
    let europe = crate::common::client_in_region(&server.url, "eu-central-1");
    let home_url = crate::common::create_queue_url(&home, "same", &[]).await;
    let europe_url = crate::common::create_queue_url(&europe, "same", &[]).await;
    assert_eq!(
        home_url,
        format!("{}/000000000000/same", server.url),
        "the instance's own region"
    );
    assert_eq!(
        europe_url,
        format!("{}/queue/eu-central-1/000000000000/same", server.url)
    );
    for (client, url) in [(&home, &home_url), (&europe, &europe_url)] {
        let found = client.get_queue_url().queue_name("same").send().await.unwrap();
        assert_eq!(found.queue_url(), Some(url.as_str()));
        let listed = client.list_queues().send().await.unwrap();
        assert_eq!(
            listed.queue_urls(),
            std::slice::from_ref(url),
            "each region lists its own"
        );
    }
    let arn = europe
        .get_queue_attributes()
        .queue_url(&europe_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap();
    assert_eq!(
        arn.attributes().unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn],
        "arn:aws:sqs:eu-central-1:000000000000:same"
    );

    // The URL says which queue, whichever region the call is signed for,
    // and over the Query protocol too (unsigned: the instance's region).
    crate::common::send_body(&home, &europe_url, "to europe").await;
    assert!(crate::common::receive_plain(&home, &home_url).await.is_empty());
    let (status, xml) = query_call(
        &server,
        &[("Action", "ReceiveMessage"), ("QueueUrl", &europe_url)],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    assert!(xml.contains("<Body>to europe</Body>"), "{xml}");
    let (status, xml) = query_call(&server, &[("Action", "GetQueueUrl"), ("QueueName", "same")]).await;
    assert_eq!(status, 200, "{xml}");
    assert!(xml.contains(&format!("<QueueUrl>{home_url}</QueueUrl>")), "{xml}");

    // A dead-letter queue in eu-central-1 takes the messages of its source there.
    let dead = crate::common::create_queue_url(&europe, "dead", &[]).await;
    let policy =
        r#"{"deadLetterTargetArn":"arn:aws:sqs:eu-central-1:000000000000:dead","maxReceiveCount":1}"#;
    let flaky = crate::common::create_queue_url(&europe, "flaky", &[("RedrivePolicy", policy)]).await;
    crate::common::send_body(&europe, &flaky, "poison").await;
    for _ in 0..2 {
        europe
            .receive_message()
            .queue_url(&flaky)
            .visibility_timeout(0)
            .send()
            .await
            .unwrap();
    }
    let dead_letters = europe
        .receive_message()
        .queue_url(&dead)
        .message_system_attribute_names(
            aws_sdk_sqs::types::MessageSystemAttributeName::DeadLetterQueueSourceArn,
        )
        .send()
        .await
        .unwrap();
    let moved = &dead_letters.messages()[0];
    assert_eq!(moved.body(), Some("poison"));
    assert_eq!(
        moved.attributes().unwrap()
            [&aws_sdk_sqs::types::MessageSystemAttributeName::DeadLetterQueueSourceArn],
        "arn:aws:sqs:eu-central-1:000000000000:flaky"
    );

    // With --regions one, every client is in the instance's region.
    let one = Server::start_with(&["--regions", "one"]);
    let url = crate::common::create_queue_url(
        &crate::common::client_in_region(&one.url, "eu-central-1"),
        "same",
        &[],
    )
    .await;
    assert_eq!(url, format!("{}/000000000000/same", one.url));
}

/// A queue name cannot choose a region by carrying a `/`: CreateQueue
/// refuses it as it refuses any other bad name, GetQueueUrl finds nothing.
#[tokio::test]
async fn a_queue_name_cannot_name_a_region() {
    let server = Server::start();
    let europe = crate::common::client_in_region(&server.url, "eu-central-1");
    crate::common::create_queue_url(&europe, "there", &[]).await;
    let (status, answer, _) = json_call(
        &server,
        "CreateQueue",
        json!({"QueueName": "eu-central-1/sneaky"}),
    )
    .await;
    assert_eq!(
        (status, answer["__type"].as_str()),
        (400, Some("com.amazonaws.sqs#InvalidParameterValueException")),
        "{answer}"
    );
    let (status, answer, _) =
        json_call(&server, "GetQueueUrl", json!({"QueueName": "eu-central-1/there"})).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["__type"], "com.amazonaws.sqs#QueueDoesNotExist",
        "{answer}"
    );
}

/// Message move tasks' errors, as recorded against AWS
/// (test_sqs_move_task.py's snapshots): words, codes and statuses, 404 for a
/// resource that does not exist.
#[tokio::test]
async fn message_move_task_errors_are_aws_s() {
    let server = Server::start();
    let arn = |name: &str| format!("arn:aws:sqs:us-east-1:000000000000:{name}");
    for name in ["plain", "dlq"] {
        json_call(&server, "CreateQueue", json!({"QueueName": name})).await;
    }
    let policy = json!({"deadLetterTargetArn": arn("dlq"), "maxReceiveCount": 1}).to_string();
    json_call(
        &server,
        "CreateQueue",
        json!({"QueueName": "work", "Attributes": {"RedrivePolicy": policy}}),
    )
    .await;

    let error = |status: u16, body: &Value, code: &str, message: &str| {
        assert_eq!(
            status,
            if code == "ResourceNotFoundException" {
                404
            } else {
                400
            },
            "{body}"
        );
        assert!(body["__type"].as_str().unwrap().ends_with(code), "{body}");
        assert_eq!(body["message"], message);
    };
    let (status, body, _) = json_call(
        &server,
        "StartMessageMoveTask",
        json!({"SourceArn": arn("plain")}),
    )
    .await;
    error(
        status,
        &body,
        "InvalidParameterValueException",
        "Source queue must be configured as a Dead Letter Queue.",
    );
    let (status, body, _) = json_call(
        &server,
        "StartMessageMoveTask",
        json!({"SourceArn": arn("dlq"), "DestinationArn": arn("nowhere")}),
    )
    .await;
    error(
        status,
        &body,
        "ResourceNotFoundException",
        "The resource that you specified for the DestinationArn parameter doesn't exist.",
    );

    json_call(
        &server,
        "SendMessage",
        json!({"QueueUrl": crate::common::queue_url("dlq"), "MessageBody": "x"}),
    )
    .await;
    let start =
        json!({"SourceArn": arn("dlq"), "DestinationArn": arn("plain"), "MaxNumberOfMessagesPerSecond": 1});
    let (status, started, _) = json_call(&server, "StartMessageMoveTask", start.clone()).await;
    assert_eq!(status, 200, "{started}");
    let handle = started["TaskHandle"].as_str().unwrap();
    let (status, body, _) = json_call(&server, "StartMessageMoveTask", start).await;
    error(
        status,
        &body,
        "InvalidParameterValueException",
        "There is already a task running. Only one active task is allowed for a source queue arn at a given time.",
    );

    let (status, body, _) = json_call(
        &server,
        "CancelMessageMoveTask",
        json!({"TaskHandle": "foobared"}),
    )
    .await;
    error(
        status,
        &body,
        "InvalidParameterValueException",
        "Value for parameter TaskHandle is invalid.",
    );
    use base64::Engine;
    let forged = |task: &str, source: &str| {
        base64::engine::general_purpose::STANDARD
            .encode(json!({"taskId": task, "sourceArn": source}).to_string())
    };
    let (status, body, _) = json_call(
        &server,
        "CancelMessageMoveTask",
        json!({"TaskHandle": forged("t", &arn("gone"))}),
    )
    .await;
    error(
        status,
        &body,
        "ResourceNotFoundException",
        "The resource that you specified for the SourceArn parameter doesn't exist.",
    );
    let (status, body, _) = json_call(
        &server,
        "CancelMessageMoveTask",
        json!({"TaskHandle": forged("unknown", &arn("dlq"))}),
    )
    .await;
    error(status, &body, "ResourceNotFoundException", "Task does not exist.");
    let (status, body, _) = json_call(&server, "CancelMessageMoveTask", json!({"TaskHandle": handle})).await;
    assert_eq!(status, 200, "the running task is cancelled: {body}");
}

/// A snapshot holding, in `queue`, `in_flight` messages in flight (groups
/// of ten on a FIFO queue) and one visible message in a group of its own.
fn in_flight_snapshot(queue: &str, in_flight: usize) -> String {
    let fifo = queue.ends_with(".fifo");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let attributes = match fifo {
        true => json!({"FifoQueue": "true"}),
        false => json!({}),
    };
    let mut lines = vec![
        json!({"snapshot": {"version": 1}}).to_string(),
        json!({"queue": {"name": queue, "attributes": attributes}}).to_string(),
    ];
    for i in 0..in_flight {
        let mut message = json!({"body": format!("m{i}"), "receive_count": 1,
            "state": {"in_flight": {"until": now + 600_000, "received_at": now}}});
        if fifo {
            message["group_id"] = json!(format!("g{}", i / 10));
        }
        lines.push(json!({ "message": message }).to_string());
    }
    let mut visible = json!({"body": "free"});
    if fifo {
        visible["group_id"] = json!("free");
    }
    lines.push(json!({ "message": visible }).to_string());
    lines.push(json!({"end": {"queues": 1, "messages": in_flight + 1}}).to_string());
    lines.join("\n")
}

/// AWS's in-flight quota (120,000 on both kinds of queue): a standard
/// queue's ReceiveMessage answers OverLimit, with the message AWS answered
/// it with; a FIFO queue's finds nothing and answers no error.
#[tokio::test]
async fn receives_past_the_in_flight_quota() {
    const QUOTA: usize = 120_000;
    let dir = std::env::temp_dir().join(format!("ssq-in-flight-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (queue, over_limit) in [("busy", true), ("busy.fifo", false)] {
        let file = dir.join(format!("{queue}.jsonl"));
        std::fs::write(&file, in_flight_snapshot(queue, QUOTA)).unwrap();
        let server = Server::start_with(&["--import", file.to_str().unwrap()]);
        let url = format!("{}/000000000000/{queue}", server.url);
        let (status, body, query_error) = json_call(
            &server,
            "ReceiveMessage",
            json!({"QueueUrl": url, "MaxNumberOfMessages": 10}),
        )
        .await;
        let (query_status, xml) = query_call(
            &server,
            &[
                ("Action", "ReceiveMessage"),
                ("QueueUrl", &url),
                ("MaxNumberOfMessages", "10"),
            ],
        )
        .await;
        if over_limit {
            assert_eq!((status, query_status), (403, 403), "{body} {xml}");
            assert_eq!(body["__type"], "com.amazonaws.sqs#OverLimit");
            assert_eq!(
                body["message"],
                "Too many messages have been received without being deleted.\nPlease delete your received messages or let them timeout before receiving more."
            );
            assert_eq!(query_error.as_deref(), Some("OverLimit;Sender"));
            assert!(xml.contains("<Code>OverLimit</Code>"), "{xml}");
            assert!(xml.contains("<Type>Sender</Type>"), "{xml}");
        } else {
            assert_eq!((status, query_status), (200, 200), "{body} {xml}");
            assert_eq!(body, json!({}), "nothing past the quota, and no error");
            assert!(!xml.contains("<Message>"), "{xml}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
