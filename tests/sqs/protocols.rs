//! One scenario, two wire formats: every one of the 23 SQS actions is run
//! over the AWS JSON protocol and over the Query protocol (form in, XML
//! out), and must give the same answers. The Query side serializes requests
//! and parses the XML (with quick-xml) here, following AWS's protocol, not
//! ssq's code.

use std::time::Duration;

use crate::common::Server;
use md5::{Digest, Md5};
use quick_xml::events::Event;
use serde_json::{Map, Value, json};

#[derive(Clone, Copy, Debug)]
enum Wire {
    Json,
    Query,
}

#[derive(Debug)]
struct Failure {
    status: u16,
    code: String,
    message: String,
}

struct Sqs {
    endpoint: String,
    wire: Wire,
    http: reqwest::Client,
}

impl Sqs {
    /// A client of `server` in `wire`'s format.
    fn on(server: &Server, wire: Wire) -> Sqs {
        Sqs {
            endpoint: server.url.clone(),
            wire,
            http: reqwest::Client::new(),
        }
    }

    async fn call(&self, action: &str, input: Value) -> Result<Value, Failure> {
        match self.wire {
            Wire::Json => self.call_json(action, input).await,
            Wire::Query => self.call_query(action, input).await,
        }
    }

    async fn ok(&self, action: &str, input: Value) -> Value {
        self.call(action, input)
            .await
            .unwrap_or_else(|f| panic!("{:?} {action}: {f:?}", self.wire))
    }

    async fn fails(&self, action: &str, input: Value) -> Failure {
        self.call(action, input).await.expect_err(action)
    }

    async fn call_json(&self, action: &str, input: Value) -> Result<Value, Failure> {
        let target = format!("AmazonSQS.{action}");
        let answer = crate::common::json_call(&self.endpoint, Some(&target), input.to_string()).await;
        match answer.query_error {
            Some(query_error) => Err(Failure {
                status: answer.status,
                code: query_error.split(';').next().unwrap_or_default().to_string(),
                message: answer.body["message"].as_str().unwrap_or_default().to_string(),
            }),
            None => Ok(answer.body),
        }
    }

    async fn call_query(&self, action: &str, input: Value) -> Result<Value, Failure> {
        let mut form = vec![
            ("Action".to_string(), action.to_string()),
            ("Version".to_string(), "2012-11-05".to_string()),
        ];
        flatten(action, "", &input, &mut form);
        let response = self
            .http
            .post(&self.endpoint)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(&form).unwrap())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let root = parse_xml(&text);
        if root.name == "ErrorResponse" {
            let error = root.child("Error").unwrap();
            let field = |name: &str| error.child(name).map(|c| c.text.clone()).unwrap_or_default();
            return Err(Failure {
                status,
                code: field("Code"),
                message: field("Message"),
            });
        }
        assert_eq!(root.name, format!("{action}Response"));
        assert_eq!(
            root.namespace.as_deref(),
            Some("http://queue.amazonaws.com/doc/2012-11-05/")
        );
        Ok(root
            .child(&format!("{action}Result"))
            .map_or_else(|| json!({}), |r| to_value(r, action)))
    }
}

/// AWS Query serialization of a request structure.
fn flatten(action: &str, prefix: &str, value: &Value, form: &mut Vec<(String, String)>) {
    let Value::Object(fields) = value else { return };
    for (key, value) in fields {
        let list_name = match key.as_str() {
            "AttributeNames" => Some("AttributeName"),
            "MessageAttributeNames" => Some("MessageAttributeName"),
            "MessageSystemAttributeNames" => Some("MessageSystemAttributeName"),
            "TagKeys" => Some("TagKey"),
            "AWSAccountIds" => Some("AWSAccountId"),
            "Actions" => Some("ActionName"),
            _ => None,
        };
        match (key.as_str(), value) {
            (_, Value::Array(items)) if list_name.is_some() => {
                for (i, item) in items.iter().enumerate() {
                    form.push((
                        format!("{prefix}{}.{}", list_name.unwrap(), i + 1),
                        item.as_str().unwrap().to_string(),
                    ));
                }
            }
            ("Entries", Value::Array(entries)) => {
                for (i, entry) in entries.iter().enumerate() {
                    flatten(
                        action,
                        &format!("{prefix}{action}RequestEntry.{}.", i + 1),
                        entry,
                        form,
                    );
                }
            }
            ("Attributes" | "tags" | "Tags", Value::Object(map)) => {
                let (item, k, v) = if key == "Attributes" {
                    ("Attribute", "Name", "Value")
                } else {
                    ("Tag", "Key", "Value")
                };
                for (i, (name, value)) in map.iter().enumerate() {
                    form.push((format!("{prefix}{item}.{}.{k}", i + 1), name.clone()));
                    form.push((
                        format!("{prefix}{item}.{}.{v}", i + 1),
                        value.as_str().unwrap().to_string(),
                    ));
                }
            }
            ("MessageAttributes" | "MessageSystemAttributes", Value::Object(map)) => {
                let item = key.trim_end_matches('s');
                for (i, (name, value)) in map.iter().enumerate() {
                    form.push((format!("{prefix}{item}.{}.Name", i + 1), name.clone()));
                    for (field, text) in value.as_object().unwrap() {
                        form.push((
                            format!("{prefix}{item}.{}.Value.{field}", i + 1),
                            text.as_str().unwrap().to_string(),
                        ));
                    }
                }
            }
            (_, Value::String(s)) => form.push((format!("{prefix}{key}"), s.clone())),
            (_, other) => form.push((format!("{prefix}{key}"), other.to_string())),
        }
    }
}

#[derive(Debug, Default)]
struct Element {
    name: String,
    namespace: Option<String>,
    text: String,
    children: Vec<Element>,
}

impl Element {
    fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }
}

fn parse_xml(text: &str) -> Element {
    let mut reader = quick_xml::Reader::from_str(text);
    let mut stack: Vec<Element> = vec![Element::default()];
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(start) => {
                let namespace = start
                    .attributes()
                    .flatten()
                    .find(|a| a.key.as_ref() == "xmlns")
                    .map(|a| a.value.to_string());
                stack.push(Element {
                    name: start.name().as_ref().to_string(),
                    namespace,
                    ..Default::default()
                });
            }
            Event::Empty(empty) => {
                let element = Element {
                    name: empty.name().as_ref().to_string(),
                    ..Default::default()
                };
                stack.last_mut().unwrap().children.push(element);
            }
            Event::Text(text) => stack.last_mut().unwrap().text.push_str(&text.xml10_content()),
            Event::GeneralRef(reference) => {
                let name = reference.into_inner().to_string();
                let resolved = match name.as_str() {
                    "amp" => "&".to_string(),
                    "lt" => "<".to_string(),
                    "gt" => ">".to_string(),
                    "quot" => "\"".to_string(),
                    "apos" => "'".to_string(),
                    hex if hex.starts_with("#x") => {
                        char::from_u32(u32::from_str_radix(&hex[2..], 16).unwrap())
                            .unwrap()
                            .to_string()
                    }
                    dec if dec.starts_with('#') => {
                        char::from_u32(dec[1..].parse().unwrap()).unwrap().to_string()
                    }
                    other => panic!("unknown entity {other}"),
                };
                stack.last_mut().unwrap().text.push_str(&resolved);
            }
            Event::End(_) => {
                let done = stack.pop().unwrap();
                stack.last_mut().unwrap().children.push(done);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    stack.pop().unwrap().children.pop().expect("a root element")
}

/// The Query protocol's XML result, read back into the JSON protocol's shape.
fn to_value(element: &Element, action: &str) -> Value {
    if element.children.is_empty() {
        return Value::String(element.text.clone());
    }
    let mut out = Map::new();
    for child in &element.children {
        let push = |out: &mut Map<String, Value>, key: &str, value: Value| {
            out.entry(key.to_string())
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .unwrap()
                .push(value);
        };
        match child.name.as_str() {
            "Attribute" | "Tag" | "MessageAttribute" => {
                let key = match child.name.as_str() {
                    "Attribute" => "Attributes",
                    "Tag" => "Tags",
                    _ => "MessageAttributes",
                };
                let name = child.child("Name").or(child.child("Key")).unwrap().text.clone();
                let value = to_value(child.child("Value").unwrap(), action);
                out.entry(key)
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
                    .unwrap()
                    .insert(name, value);
            }
            "QueueUrl" if action == "ListQueues" => push(&mut out, "QueueUrls", to_value(child, action)),
            "QueueUrl" if action == "ListDeadLetterSourceQueues" => {
                push(&mut out, "queueUrls", to_value(child, action))
            }
            "Message" => push(&mut out, "Messages", to_value(child, action)),
            "BatchResultErrorEntry" => push(&mut out, "Failed", to_value(child, action)),
            "ListMessageMoveTasksResultEntry" => push(&mut out, "Results", to_value(child, action)),
            name if name.ends_with("ResultEntry") => push(&mut out, "Successful", to_value(child, action)),
            name => {
                out.insert(name.to_string(), to_value(child, action));
            }
        }
    }
    Value::Object(out)
}

/// A scalar as text, whichever wire format typed it.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn md5_hex(text: &str) -> String {
    Md5::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn arn(name: &str) -> String {
    format!("arn:aws:sqs:us-east-1:000000000000:{name}")
}

async fn every_action(wire: Wire) {
    let server = Server::start();
    let sqs = Sqs::on(&server, wire);

    // Queues, attributes, tags.
    let created = sqs.ok("CreateQueue", json!({"QueueName": "proto", "Attributes": {"VisibilityTimeout": "40"}, "tags": {"team": "core"}})).await;
    let url = text(&created["QueueUrl"]);
    assert_eq!(url, format!("{}/000000000000/proto", server.url));
    assert_eq!(
        text(&sqs.ok("GetQueueUrl", json!({"QueueName": "proto"})).await["QueueUrl"]),
        url
    );
    let listed = sqs.ok("ListQueues", json!({"QueueNamePrefix": "pro"})).await;
    assert_eq!(listed["QueueUrls"], json!([url]));
    sqs.ok(
        "SetQueueAttributes",
        json!({"QueueUrl": url, "Attributes": {"MessageRetentionPeriod": "600"}}),
    )
    .await;
    let attributes = sqs
        .ok(
            "GetQueueAttributes",
            json!({"QueueUrl": url, "AttributeNames": ["All"]}),
        )
        .await;
    assert_eq!(attributes["Attributes"]["VisibilityTimeout"], "40");
    assert_eq!(attributes["Attributes"]["MessageRetentionPeriod"], "600");
    assert_eq!(attributes["Attributes"]["QueueArn"], arn("proto"));
    sqs.ok("TagQueue", json!({"QueueUrl": url, "Tags": {"env": "test"}}))
        .await;
    assert_eq!(
        sqs.ok("ListQueueTags", json!({"QueueUrl": url})).await["Tags"],
        json!({"env": "test", "team": "core"})
    );
    sqs.ok("UntagQueue", json!({"QueueUrl": url, "TagKeys": ["env"]}))
        .await;
    assert_eq!(
        sqs.ok("ListQueueTags", json!({"QueueUrl": url})).await["Tags"],
        json!({"team": "core"})
    );

    // Messages: single, batch, receive with attributes, visibility, delete.
    let body = "tricky <xml> & \"json\"\r\n✓";
    let sent = sqs
        .ok(
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": body, "MessageAttributes": {
                "s": {"DataType": "String", "StringValue": "v"},
                "b": {"DataType": "Binary", "BinaryValue": "AAH/"},
            }}),
        )
        .await;
    assert_eq!(text(&sent["MD5OfMessageBody"]), md5_hex(body));
    let batch = sqs
        .ok(
            "SendMessageBatch",
            json!({"QueueUrl": url, "Entries": [
                {"Id": "one", "MessageBody": "first"},
                {"Id": "bad", "MessageBody": "nul\u{1}"},
                {"Id": "two", "MessageBody": "second", "DelaySeconds": 0},
            ]}),
        )
        .await;
    let ok_ids: Vec<String> = batch["Successful"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| text(&e["Id"]))
        .collect();
    assert_eq!(ok_ids, ["one", "two"]);
    assert_eq!(text(&batch["Failed"][0]["Code"]), "InvalidMessageContents");
    assert_eq!(text(&batch["Failed"][0]["SenderFault"]), "true");
    let received = sqs
        .ok("ReceiveMessage", json!({"QueueUrl": url, "MaxNumberOfMessages": 10, "AttributeNames": ["All"], "MessageAttributeNames": ["All"]}))
        .await;
    let messages = received["Messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    let tricky = messages
        .iter()
        .find(|m| text(&m["MessageId"]) == text(&sent["MessageId"]))
        .unwrap();
    assert_eq!(
        text(&tricky["Body"]),
        body,
        "bodies survive both encodings exactly"
    );
    assert_eq!(tricky["MessageAttributes"]["b"]["BinaryValue"], "AAH/");
    assert_eq!(
        text(&tricky["MD5OfMessageAttributes"]),
        text(&sent["MD5OfMessageAttributes"])
    );
    assert_eq!(tricky["Attributes"]["ApproximateReceiveCount"], "1");
    let handle = |i: usize| text(&messages[i]["ReceiptHandle"]);
    sqs.ok(
        "ChangeMessageVisibility",
        json!({"QueueUrl": url, "ReceiptHandle": handle(0), "VisibilityTimeout": 60}),
    )
    .await;
    let changed = sqs
        .ok("ChangeMessageVisibilityBatch", json!({"QueueUrl": url, "Entries": [{"Id": "v", "ReceiptHandle": handle(1), "VisibilityTimeout": 60}]}))
        .await;
    assert_eq!(text(&changed["Successful"][0]["Id"]), "v");
    sqs.ok(
        "DeleteMessage",
        json!({"QueueUrl": url, "ReceiptHandle": handle(0)}),
    )
    .await;
    let deleted = sqs
        .ok("DeleteMessageBatch", json!({"QueueUrl": url, "Entries": [{"Id": "d1", "ReceiptHandle": handle(1)}, {"Id": "d2", "ReceiptHandle": handle(2)}]}))
        .await;
    assert_eq!(deleted["Successful"].as_array().unwrap().len(), 2);
    let counts = sqs.ok("GetQueueAttributes", json!({"QueueUrl": url, "AttributeNames": ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]})).await;
    assert_eq!(
        counts["Attributes"],
        json!({"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"})
    );
    sqs.ok("SendMessage", json!({"QueueUrl": url, "MessageBody": "purged"}))
        .await;
    sqs.ok("PurgeQueue", json!({"QueueUrl": url})).await;
    let again = sqs.fails("PurgeQueue", json!({"QueueUrl": url})).await;
    assert_eq!(
        (again.status, again.code.as_str()),
        (403, "AWS.SimpleQueueService.PurgeQueueInProgress")
    );

    // FIFO.
    let fifo = text(
        &sqs.ok(
            "CreateQueue",
            json!({"QueueName": "proto.fifo", "Attributes": {"FifoQueue": "true"}}),
        )
        .await["QueueUrl"],
    );
    let first = sqs.ok("SendMessage", json!({"QueueUrl": fifo, "MessageBody": "f", "MessageGroupId": "g", "MessageDeduplicationId": "d"})).await;
    let duplicate = sqs.ok("SendMessage", json!({"QueueUrl": fifo, "MessageBody": "f", "MessageGroupId": "g", "MessageDeduplicationId": "d"})).await;
    assert_eq!(first["MessageId"], duplicate["MessageId"]);
    assert_eq!(text(&first["SequenceNumber"]).len(), 20);

    // Dead letters, their sources, and moving them.
    let dlq = text(&sqs.ok("CreateQueue", json!({"QueueName": "proto-dlq"})).await["QueueUrl"]);
    let policy = json!({"deadLetterTargetArn": arn("proto-dlq"), "maxReceiveCount": 1}).to_string();
    sqs.ok(
        "SetQueueAttributes",
        json!({"QueueUrl": url, "Attributes": {"RedrivePolicy": policy}}),
    )
    .await;
    let sources = sqs
        .ok("ListDeadLetterSourceQueues", json!({"QueueUrl": dlq}))
        .await;
    assert_eq!(sources["queueUrls"], json!([url]));
    let target = text(&sqs.ok("CreateQueue", json!({"QueueName": "proto-target"})).await["QueueUrl"]);
    for i in 0..30 {
        sqs.ok(
            "SendMessage",
            json!({"QueueUrl": dlq, "MessageBody": format!("dead {i}")}),
        )
        .await;
    }
    let task = sqs
        .ok("StartMessageMoveTask", json!({"SourceArn": arn("proto-dlq"), "DestinationArn": arn("proto-target"), "MaxNumberOfMessagesPerSecond": 10}))
        .await;
    let handle = text(&task["TaskHandle"]);
    let tasks = sqs
        .ok("ListMessageMoveTasks", json!({"SourceArn": arn("proto-dlq")}))
        .await;
    assert_eq!(text(&tasks["Results"][0]["Status"]), "RUNNING");
    assert_eq!(
        text(&tasks["Results"][0]["ApproximateNumberOfMessagesToMove"]),
        "30"
    );
    sqs.ok("CancelMessageMoveTask", json!({"TaskHandle": handle}))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let tasks = sqs
        .ok(
            "ListMessageMoveTasks",
            json!({"SourceArn": arn("proto-dlq"), "MaxResults": 10}),
        )
        .await;
    assert_eq!(text(&tasks["Results"][0]["Status"]), "CANCELLED");
    let moved: u64 = text(&tasks["Results"][0]["ApproximateNumberOfMessagesMoved"])
        .parse()
        .unwrap();
    assert!(moved < 30, "cancelled before the end: {moved}");
    let in_target = sqs
        .ok(
            "GetQueueAttributes",
            json!({"QueueUrl": target, "AttributeNames": ["ApproximateNumberOfMessages"]}),
        )
        .await;
    assert_eq!(
        text(&in_target["Attributes"]["ApproximateNumberOfMessages"]),
        moved.to_string()
    );

    // Permissions.
    sqs.ok("AddPermission", json!({"QueueUrl": url, "Label": "l1", "AWSAccountIds": ["111122223333"], "Actions": ["ReceiveMessage"]})).await;
    let policy = sqs
        .ok(
            "GetQueueAttributes",
            json!({"QueueUrl": url, "AttributeNames": ["Policy"]}),
        )
        .await;
    assert!(text(&policy["Attributes"]["Policy"]).contains("SQS:ReceiveMessage"));
    sqs.ok("RemovePermission", json!({"QueueUrl": url, "Label": "l1"}))
        .await;

    // Errors and deletion.
    let missing = sqs.fails("GetQueueUrl", json!({"QueueName": "nope"})).await;
    assert_eq!(
        (missing.status, missing.code.as_str()),
        (400, "AWS.SimpleQueueService.NonExistentQueue")
    );
    let bad = sqs
        .fails(
            "ReceiveMessage",
            json!({"QueueUrl": url, "MaxNumberOfMessages": 11}),
        )
        .await;
    assert_eq!((bad.status, bad.code.as_str()), (400, "InvalidParameterValue"));
    for queue in [&url, &dlq, &fifo, &target] {
        sqs.ok("DeleteQueue", json!({"QueueUrl": queue})).await;
    }
    assert!(sqs.ok("ListQueues", json!({})).await.get("QueueUrls").is_none());
}

#[tokio::test]
async fn every_action_over_json() {
    every_action(Wire::Json).await;
}

#[tokio::test]
async fn every_action_over_query() {
    every_action(Wire::Query).await;
}

#[tokio::test]
async fn query_requests_may_name_the_queue_in_the_path_and_get_xml_errors() {
    let server = Server::start();
    let http = reqwest::Client::new();
    let post = |path: &str, form: &str| {
        http.post(format!("{}{path}", server.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.to_string())
            .send()
    };
    post("/", "Action=CreateQueue&QueueName=by-path").await.unwrap();
    let sent = post("/000000000000/by-path", "Action=SendMessage&MessageBody=hi")
        .await
        .unwrap();
    assert_eq!(sent.status(), 200);
    let received = post("/000000000000/by-path", "Action=ReceiveMessage")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        to_value(
            parse_xml(&received).child("ReceiveMessageResult").unwrap(),
            "ReceiveMessage"
        )["Messages"][0]["Body"],
        "hi"
    );
    let unknown = post("/", "Action=LaunchRockets").await.unwrap();
    assert_eq!(unknown.status(), 400);
    let error = parse_xml(&unknown.text().await.unwrap());
    assert_eq!(
        error.child("Error").unwrap().child("Code").unwrap().text,
        "InvalidAction"
    );
    assert_eq!(
        error.child("Error").unwrap().child("Type").unwrap().text,
        "Sender"
    );
    assert!(error.child("RequestId").is_some());
}

/// Texts that XML 1.0 cannot carry were once stored, and every XML answer
/// holding them was then unreadable: a consumer could not parse its batch,
/// the messages went invisible unseen and, with a redrive policy, innocent
/// ones reached the dead-letter queue. Queue attributes had no size limit.
async fn unstorable_texts_and_oversized_attributes(wire: Wire) {
    let server = Server::start();
    let sqs = Sqs::on(&server, wire);
    let created = sqs.ok("CreateQueue", json!({"QueueName": "texts"})).await;
    let url = text(&created["QueueUrl"]);
    let refusals = [
        (
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": "b", "MessageAttributes": {
                "a": {"DataType": "String.\u{1}", "StringValue": "v"}}}),
            "InvalidParameterValue",
        ),
        (
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": "b", "MessageSystemAttributes": {
                "AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1\u{1}"}}}),
            "InvalidParameterValue",
        ),
        (
            "TagQueue",
            json!({"QueueUrl": url, "Tags": {"k\u{1}": "v"}}),
            "InvalidParameterValue",
        ),
        (
            "TagQueue",
            json!({"QueueUrl": url, "Tags": {"k": "v\u{0}"}}),
            "InvalidParameterValue",
        ),
        (
            "CreateQueue",
            json!({"QueueName": "kms", "Attributes": {"KmsMasterKeyId": "k\u{2}"}}),
            "InvalidAttributeValue",
        ),
        (
            "SetQueueAttributes",
            json!({"QueueUrl": url, "Attributes": {"Policy": format!("{{\"Version\":\"2012-10-17\",\"Id\":\"{}\"}}", "x".repeat(8_200))}}),
            "InvalidAttributeValue",
        ),
        (
            "SetQueueAttributes",
            json!({"QueueUrl": url, "Attributes": {"RedriveAllowPolicy": format!("{{\"redrivePermission\":\"allowAll\",\"extra\":\"{}\"}}", "x".repeat(100))}}),
            "InvalidAttributeValue",
        ),
    ];
    for (action, input, code) in refusals {
        let failure = sqs.fails(action, input.clone()).await;
        assert_eq!(
            (failure.status, failure.code.as_str()),
            (400, code),
            "{wire:?} {action} {input}"
        );
    }
    // What was refused left nothing behind: the queue's answers still parse.
    sqs.ok("SendMessage", json!({"QueueUrl": url, "MessageBody": "fine"}))
        .await;
    let received = sqs
        .ok(
            "ReceiveMessage",
            json!({"QueueUrl": url, "MessageSystemAttributeNames": ["All"]}),
        )
        .await;
    assert_eq!(received["Messages"][0]["Body"], "fine");
    assert_eq!(
        sqs.ok("ListQueueTags", json!({"QueueUrl": url}))
            .await
            .get("Tags"),
        None
    );
    // A policy of the largest size AWS takes is accepted.
    let policy = format!("{{\"Id\":\"{}\"}}", "x".repeat(8_192 - 9));
    assert_eq!(policy.len(), 8_192);
    sqs.ok(
        "SetQueueAttributes",
        json!({"QueueUrl": url, "Attributes": {"Policy": policy}}),
    )
    .await;
}

#[tokio::test]
async fn unstorable_texts_and_oversized_attributes_are_refused_over_json() {
    unstorable_texts_and_oversized_attributes(Wire::Json).await;
}

#[tokio::test]
async fn unstorable_texts_and_oversized_attributes_are_refused_over_query() {
    unstorable_texts_and_oversized_attributes(Wire::Query).await;
}

/// A Query body that is not UTF-8 once percent-decoded was stored with
/// U+FFFD in place of its bytes.
#[tokio::test]
async fn query_parameters_that_are_not_utf8_are_refused() {
    let server = Server::start();
    let http = reqwest::Client::new();
    let post = |form: &'static str| {
        http.post(&server.url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
    };
    post("Action=CreateQueue&QueueName=utf8").await.unwrap();
    let refused = post("Action=SendMessage&QueueUrl=/000000000000/utf8&MessageBody=%FF%FE")
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let error = parse_xml(&refused.text().await.unwrap());
    assert!(
        error
            .child("Error")
            .unwrap()
            .child("Message")
            .unwrap()
            .text
            .contains("UTF-8")
    );
    // U+FFFD itself, sent as UTF-8, is a character like any other.
    let sent = post("Action=SendMessage&QueueUrl=/000000000000/utf8&MessageBody=%EF%BF%BD")
        .await
        .unwrap();
    assert_eq!(sent.status(), 200);
}

/// AWS reports a queue that does not exist before anything else wrong
/// with a request on it: each queue action, sent to a queue URL of ours
/// naming no queue and with a bad parameter, answers NonExistentQueue.
async fn a_missing_queue_is_reported_first(wire: Wire) {
    let server = Server::start();
    let sqs = Sqs::on(&server, wire);
    let url = format!("{}/000000000000/nowhere", server.url);
    let bad_handle = json!({"QueueUrl": url, "ReceiptHandle": "not a handle", "VisibilityTimeout": 99_999});
    let cases = [
        ("DeleteMessage", bad_handle.clone()),
        ("DeleteMessage", json!({"QueueUrl": url})),
        ("ChangeMessageVisibility", bad_handle),
        (
            "ReceiveMessage",
            json!({"QueueUrl": url, "MaxNumberOfMessages": 50, "WaitTimeSeconds": 99}),
        ),
        (
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": "", "DelaySeconds": 5_000}),
        ),
        ("SendMessageBatch", json!({"QueueUrl": url, "Entries": []})),
        (
            "DeleteMessageBatch",
            json!({"QueueUrl": url, "Entries": [{"Id": "a.b", "ReceiptHandle": "x"}]}),
        ),
        (
            "ChangeMessageVisibilityBatch",
            json!({"QueueUrl": url, "Entries": [{"Id": "a", "ReceiptHandle": "x"}]}),
        ),
        (
            "GetQueueAttributes",
            json!({"QueueUrl": url, "AttributeNames": ["NoSuchAttribute"]}),
        ),
        (
            "SetQueueAttributes",
            json!({"QueueUrl": url, "Attributes": {"NoSuchAttribute": "1"}}),
        ),
        ("TagQueue", json!({"QueueUrl": url, "Tags": {}})),
        ("UntagQueue", json!({"QueueUrl": url, "TagKeys": []})),
        (
            "AddPermission",
            json!({"QueueUrl": url, "Label": "", "AWSAccountIds": [], "Actions": []}),
        ),
        (
            "RemovePermission",
            json!({"QueueUrl": url, "Label": "no such label"}),
        ),
        (
            "ListDeadLetterSourceQueues",
            json!({"QueueUrl": url, "MaxResults": 5_000}),
        ),
        ("ListQueueTags", json!({"QueueUrl": url})),
        ("PurgeQueue", json!({"QueueUrl": url})),
        ("DeleteQueue", json!({"QueueUrl": url})),
    ];
    for (action, input) in cases {
        let failure = sqs.fails(action, input.clone()).await;
        assert_eq!(
            (failure.status, failure.code.as_str()),
            (400, "AWS.SimpleQueueService.NonExistentQueue"),
            "{wire:?} {action} {input}"
        );
    }
}

#[tokio::test]
async fn a_missing_queue_is_reported_first_over_json() {
    a_missing_queue_is_reported_first(Wire::Json).await;
}

#[tokio::test]
async fn a_missing_queue_is_reported_first_over_query() {
    a_missing_queue_is_reported_first(Wire::Query).await;
}

/// AWS's words for what a batch entry or a queue name lacks: a batch entry
/// without a member its action requires fails the whole request and is
/// named as the Query protocol names it; a queue name that does not fit
/// its kind of queue gets that kind's message.
async fn entries_and_names_are_named_as_aws_names_them(wire: Wire) {
    let server = Server::start();
    let sqs = Sqs::on(&server, wire);
    let url = text(&sqs.ok("CreateQueue", json!({"QueueName": "named"})).await["QueueUrl"]);
    let missing = [
        (
            "SendMessageBatch",
            json!([{"Id": "a", "MessageBody": "x"}, {"MessageBody": "y"}]),
            "SendMessageBatchRequestEntry.2.Id",
        ),
        (
            "SendMessageBatch",
            json!([{"Id": "a", "MessageBody": "x"}, {"Id": "b"}]),
            "SendMessageBatchRequestEntry.2.MessageBody",
        ),
        (
            "DeleteMessageBatch",
            json!([{"Id": "a"}]),
            "DeleteMessageBatchRequestEntry.1.ReceiptHandle",
        ),
        (
            "ChangeMessageVisibilityBatch",
            json!([{"Id": "a", "ReceiptHandle": "h", "VisibilityTimeout": 5}, {"Id": "b", "VisibilityTimeout": 5}]),
            "ChangeMessageVisibilityBatchRequestEntry.2.ReceiptHandle",
        ),
    ];
    for (action, entries, member) in missing {
        let failure = sqs
            .fails(action, json!({"QueueUrl": url, "Entries": entries}))
            .await;
        assert_eq!(
            (failure.status, failure.code.as_str(), failure.message.as_str()),
            (
                400,
                "MissingParameter",
                format!("The request must contain the parameter {member}.").as_str()
            ),
            "{wire:?} {action}"
        );
    }
    let names = [
        (
            json!({"QueueName": "jobs.fifo"}),
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
        ),
        (
            json!({"QueueName": "a b"}),
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
        ),
        (
            json!({"QueueName": "jobs", "Attributes": {"FifoQueue": "true"}}),
            "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.",
        ),
    ];
    for (input, message) in names {
        let failure = sqs.fails("CreateQueue", input.clone()).await;
        assert_eq!(
            (failure.status, failure.code.as_str(), failure.message.as_str()),
            (400, "InvalidParameterValue", message),
            "{wire:?} {input}"
        );
    }
}

#[tokio::test]
async fn entries_and_names_are_named_as_aws_names_them_over_json() {
    entries_and_names_are_named_as_aws_names_them(Wire::Json).await;
}

#[tokio::test]
async fn entries_and_names_are_named_as_aws_names_them_over_query() {
    entries_and_names_are_named_as_aws_names_them(Wire::Query).await;
}

/// AWS's model requires only an entry's Id and ReceiptHandle, but AWS
/// answers an entry of ChangeMessageVisibilityBatch without
/// VisibilityTimeout in Failed, as MissingParameter (quoted in
/// aws/aws-sdk-go-v2#2250), while the batch's other entries go through: its
/// message stays in flight, and one given 0 is visible at once.
async fn a_visibility_entry_without_a_timeout_fails_alone(wire: Wire) {
    let server = Server::start();
    let sqs = Sqs::on(&server, wire);
    let url = text(&sqs.ok("CreateQueue", json!({"QueueName": "again"})).await["QueueUrl"]);
    for body in ["kept", "back"] {
        sqs.ok("SendMessage", json!({"QueueUrl": url, "MessageBody": body}))
            .await;
    }
    let receive = json!({"QueueUrl": url, "VisibilityTimeout": 600, "MaxNumberOfMessages": 10});
    let received = sqs.ok("ReceiveMessage", receive.clone()).await;
    let handle_of = |body: &str| {
        let messages = received["Messages"].as_array().unwrap();
        let message = messages.iter().find(|m| m["Body"] == body).unwrap();
        text(&message["ReceiptHandle"])
    };
    let entries = json!([
        {"Id": "missing", "ReceiptHandle": handle_of("kept")},
        {"Id": "zero", "ReceiptHandle": handle_of("back"), "VisibilityTimeout": 0}
    ]);
    let changed = sqs
        .ok(
            "ChangeMessageVisibilityBatch",
            json!({"QueueUrl": url, "Entries": entries}),
        )
        .await;
    assert_eq!(
        text(&changed["Successful"][0]["Id"]),
        "zero",
        "{wire:?}: {changed}"
    );
    let failed = &changed["Failed"][0];
    assert_eq!(text(&failed["Id"]), "missing", "{wire:?}: {changed}");
    assert_eq!(text(&failed["Code"]), "MissingParameter", "{wire:?}: {changed}");
    // (This file's XML reader takes a Message element for a list's.)
    let message = failed.get("Message").unwrap_or(&failed["Messages"][0]);
    assert_eq!(
        text(message),
        "The request must contain the parameter ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout.",
        "{wire:?}: {changed}"
    );
    assert!(
        failed["SenderFault"] == json!(true) || failed["SenderFault"] == json!("true"),
        "{wire:?}: {changed}"
    );
    let again = sqs.ok("ReceiveMessage", receive).await;
    let bodies: Vec<String> = again["Messages"]
        .as_array()
        .map(|messages| messages.iter().map(|m| text(&m["Body"])).collect())
        .unwrap_or_default();
    assert_eq!(
        bodies,
        ["back"],
        "{wire:?}: the entry without a timeout changed nothing: {again}"
    );
}

#[tokio::test]
async fn a_visibility_entry_without_a_timeout_fails_alone_over_json() {
    a_visibility_entry_without_a_timeout_fails_alone(Wire::Json).await;
}

#[tokio::test]
async fn a_visibility_entry_without_a_timeout_fails_alone_over_query() {
    a_visibility_entry_without_a_timeout_fails_alone(Wire::Query).await;
}
