//! The snapshot format's tests: what is written reads back the same, and
//! what a hand-written or damaged file holds is refused, naming its line.

use std::sync::Arc;

use super::*;
use crate::queue::message::{self, MessageState};
use crate::queue::{
    AttributeValue, Message, MessageAttribute, MessageAttributes, NewMessage, Queue, QueueAttributes,
    QueueMeta, ReceiptHandle,
};

const DEFAULTS: Defaults<'static> = Defaults {
    home_region: "us-east-1",
    account_id: "000000000000",
    now: 5_000,
};

fn send(queue: &mut Queue, body: &str, group: Option<&str>, now: u64) {
    let mut attributes = MessageAttributes::new();
    attributes.insert(
        "kind".into(),
        MessageAttribute {
            data_type: "String".into(),
            value: AttributeValue::String("order".into()),
        },
    );
    attributes.insert(
        "blob".into(),
        MessageAttribute {
            data_type: "Binary".into(),
            value: AttributeValue::Binary(vec![0, 1, 2, 255]),
        },
    );
    let new = NewMessage {
        body: body.into(),
        attributes,
        delay_seconds: None,
        sender_id: "AIDAEXAMPLE".into(),
        trace_header: Some("Root=1-5759e988-bd862e3fe1be46a994272793".into()),
        group_id: group.map(str::to_string),
        dedup_id: (group.is_some() && queue.is_fifo()).then(|| format!("d-{body}")),
    };
    queue.send(new, now).unwrap();
}

fn export(queues: &[&Queue]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = Writer::start(&DEFAULTS.home(), 9_000, &mut out);
    for queue in queues {
        writer.queue(&queue.meta(), queue.next_sequence_number(), &mut out);
        for message in queue.messages_after(0, usize::MAX, u64::MAX) {
            writer.message(&message, &mut out);
        }
    }
    writer.end(&mut out);
    out
}

fn fields(message: &Message) -> impl PartialEq + std::fmt::Debug + use<> {
    (
        (
            message.seq,
            message.id,
            message.body.clone(),
            message.attributes.clone(),
        ),
        (
            message.md5_of_body,
            message.sender_id.clone(),
            message.trace_header.clone(),
        ),
        (
            message.group_id.clone(),
            message.dedup_id.clone(),
            message.sent_at,
        ),
        (
            message.receive_count,
            message.first_received_at,
            message.receipt_key,
            message.state,
        ),
    )
}

#[test]
fn an_exported_state_reads_back_the_same() {
    let mut attributes = BTreeMap::new();
    attributes.insert("VisibilityTimeout".to_string(), "45".to_string());
    let mut standard = Queue::restore(
        Queue::new(
            "jobs".into(),
            QueueAttributes::for_new_queue("jobs", &attributes).unwrap(),
            BTreeMap::from([("team".into(), "a".into())]),
            1_000,
        )
        .meta(),
        1,
        [],
        [],
    );
    send(&mut standard, "one", None, 1_000);
    send(&mut standard, "two", Some("tenant-a"), 1_001);
    let received = standard.receive(1, None, None, None, 2_000);
    assert_eq!(received.len(), 1);
    let mut fifo_attributes = BTreeMap::new();
    fifo_attributes.insert("FifoQueue".to_string(), "true".to_string());
    let fifo_meta = Queue::new(
        "eu-west-1/orders.fifo".into(),
        QueueAttributes::for_new_queue("orders.fifo", &fifo_attributes).unwrap(),
        BTreeMap::new(),
        1_000,
    )
    .meta();
    let mut fifo = Queue::restore(fifo_meta, 1, [], []);
    send(&mut fifo, "a", Some("g1"), 1_000);
    send(&mut fifo, "b", Some("g1"), 1_000);
    // Another account's queue, in the home region.
    let mut other = Queue::new(
        "111122223333/us-east-1/jobs".into(),
        QueueAttributes::for_new_queue("jobs", &BTreeMap::new()).unwrap(),
        BTreeMap::new(),
        1_000,
    );
    send(&mut other, "theirs", None, 1_000);

    let text = export(&[&standard, &fifo, &other]);
    let lines = String::from_utf8(text.clone()).unwrap();
    assert!(
        lines.contains(r#""name":"jobs","region":"us-east-1","account":"111122223333""#),
        "{lines}"
    );
    assert_eq!(
        lines.matches(r#""account""#).count(),
        1,
        "the home account's queues name none"
    );
    let read = read(&text[..], &DEFAULTS).unwrap().queues;
    assert_eq!(read.len(), 3);
    for (original, copy) in [&standard, &fifo, &other].into_iter().zip(&read) {
        assert_eq!(copy.meta(), original.meta());
        assert_eq!(copy.next_sequence_number(), original.next_sequence_number());
        let messages = |queue: &Queue| {
            queue
                .messages_after(0, usize::MAX, u64::MAX)
                .iter()
                .map(fields)
                .collect::<Vec<_>>()
        };
        assert_eq!(messages(copy), messages(original));
    }
    // The handle received before the export deletes after the import.
    let handle = ReceiptHandle::decode(&received[0].receipt_handle.encode()).unwrap();
    let mut copy = read.into_iter().next().unwrap();
    assert!(copy.delete(handle, 2_500).unwrap());
}

#[test]
fn a_hand_written_fixture_takes_defaults() {
    let text = br#"{"snapshot":{"version":1}}
{"queue":{"name":"orders"}}
{"message":{"body":"first"}}
{"message":{"body":"second","attributes":{"n":{"DataType":"Number","StringValue":"7"}}}}

{"end":{"queues":1,"messages":2}}
"#;
    let queues = read(&text[..], &DEFAULTS).unwrap().queues;
    let queue = &queues[0];
    assert_eq!(queue.name, "orders");
    assert_eq!(queue.created_at, 5_000);
    let messages = queue.messages_after(0, 10, u64::MAX);
    let seqs: Vec<u64> = messages.iter().map(|message| message.seq).collect();
    assert_eq!(seqs, vec![1, 2]);
    assert_eq!(&*messages[0].body, "first");
    assert_eq!(messages[0].state, MessageState::Visible { since: 5_000 });
    assert_eq!(&*messages[1].sender_id, "000000000000");
    assert_eq!(messages[0].md5_of_body, message::md5_of_body("first"));
    assert_eq!(queue.next_sequence_number(), 3);
}

#[test]
fn topic_lines_are_read_with_defaults_and_refused_naming_their_line() {
    let text = r#"{"snapshot":{"version":1}}
{"queue":{"name":"paid"}}
{"topic":{"name":"orders","subscriptions":[{"protocol":"sqs","endpoint":"arn:aws:sqs:us-east-1:000000000000:paid","attributes":{"RawMessageDelivery":"true"}}]}}
{"topic":{"name":"jobs.fifo","next_sequence_number":10}}
{"end":{"queues":1,"messages":0,"topics":2}}
"#;
    let snapshot = read(text.as_bytes(), &DEFAULTS).unwrap();
    assert_eq!(snapshot.queues.len(), 1);
    let arns: Vec<String> = snapshot
        .topics
        .iter()
        .map(|topic| topic.arn.to_string())
        .collect();
    assert_eq!(
        arns,
        vec![
            "arn:aws:sns:us-east-1:000000000000:orders",
            "arn:aws:sns:us-east-1:000000000000:jobs.fifo"
        ]
    );
    assert_eq!(snapshot.topics[1].sequence, 9);
    // Written out again, the lines read the same.
    let mut out = Vec::new();
    let mut writer = Writer::start(&DEFAULTS.home(), 1, &mut out);
    for topic in &snapshot.topics {
        writer.topic(topic, &mut out);
        for subscription in &topic.subscriptions {
            writer.subscription(subscription, &mut out);
        }
    }
    writer.end(&mut out);
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(text.starts_with(r#"{"snapshot":{"version":2"#), "{text}");
    assert!(
        text.contains(r#"{"subscription":{"protocol":"sqs""#),
        "a line of its own: {text}"
    );
    let again = read(&out[..], &DEFAULTS).unwrap();
    assert_eq!(again.topics, snapshot.topics);

    let header = r#"{"snapshot":{"version":1}}"#;
    let cases = [
        (
            r#"{"topic":{"name":"orders","subscriptions":[{"protocol":"lambda","endpoint":"x"}]}}"#,
            "does not deliver to lambda",
        ),
        (
            r#"{"topic":{"name":"orders","attributes":{"Nope":"1"}}}"#,
            "AttributeName",
        ),
        (r#"{"topic":{"name":"bad name"}}"#, "topic bad name"),
        (
            r#"{"topic":{"name":"orders","next_sequence_number":5}}"#,
            "only a FIFO topic",
        ),
        (
            r#"{"topic":{"name":"orders","subscriptions":[{"protocol":"sqs","endpoint":"arn:aws:sqs:us-east-1:000000000000:q","attributes":{"FilterPolicy":"{\"a\":\"b\"}"}}]}}"#,
            "FilterPolicy",
        ),
    ];
    for (line, expected) in cases {
        let text = format!("{header}\n{line}\n{{\"end\":{{\"queues\":0,\"messages\":0,\"topics\":1}}}}\n");
        let (number, message) = problem(&text);
        assert_eq!(number, 2, "{line}: {message}");
        assert!(message.contains(expected), "{line}: {message}");
    }
    let twice = format!("{header}\n{{\"topic\":{{\"name\":\"t\"}}}}\n{{\"topic\":{{\"name\":\"t\"}}}}\n");
    assert_eq!(
        problem(&twice),
        (3, "topic arn:aws:sns:us-east-1:000000000000:t comes twice".into())
    );
    let miscounted =
        format!("{header}\n{{\"topic\":{{\"name\":\"t\"}}}}\n{{\"end\":{{\"queues\":0,\"messages\":0}}}}\n");
    let (number, message) = problem(&miscounted);
    assert_eq!(number, 3);
    assert!(message.contains("0 topics"), "{message}");

    let header = r#"{"snapshot":{"version":2}}"#;
    let stray = format!(
        "{header}\n{{\"queue\":{{\"name\":\"q\"}}}}\n{{\"subscription\":{{\"protocol\":\"sqs\",\"endpoint\":\"arn:aws:sqs:us-east-1:000000000000:q\"}}}}\n"
    );
    let (number, message) = problem(&stray);
    assert_eq!(
        (number, message.contains("follows the line of its topic")),
        (3, true),
        "{message}"
    );
    let archiving = r#"{"topic":{"name":"a.fifo","next_sequence_number":3,"attributes":{"ArchivePolicy":"{\"MessageRetentionPeriod\":\"2\"}"}}}"#;
    let archived = |sequence: u64| {
        format!(
            r#"{{"archived":{{"sequence_number":{sequence},"message_id":"m","published_at":5,"message":"hi","group_id":"g","deduplication_id":"d"}}}}"#
        )
    };
    let beyond = format!("{header}\n{archiving}\n{}\n", archived(3));
    let (number, message) = problem(&beyond);
    assert_eq!(
        (
            number,
            message.contains("sequence number must be one the topic handed out")
        ),
        (3, true),
        "{message}"
    );
    let twice = format!("{header}\n{archiving}\n{}\n{}\n", archived(2), archived(2));
    assert_eq!(problem(&twice).0, 4);
    let kept = format!(
        "{header}\n{archiving}\n{}\n{{\"end\":{{\"queues\":0,\"messages\":0,\"topics\":1,\"archived\":1}}}}\n",
        archived(2)
    );
    let read_back = read(kept.as_bytes(), &DEFAULTS).unwrap();
    assert_eq!(read_back.topics[0].archived[0].message, "hi");

    // A filter policy larger than Subscribe takes is refused at its line.
    let large = format!(r#"{{\"k\":[\"{}\"]}}"#, "v".repeat(300 * 1024));
    let oversized = format!(
        "{header}\n{{\"topic\":{{\"name\":\"t\"}}}}\n{{\"subscription\":{{\"protocol\":\"sqs\",\"endpoint\":\"arn:aws:sqs:us-east-1:000000000000:q\",\"attributes\":{{\"FilterPolicy\":\"{large}\"}}}}}}\n"
    );
    let (number, message) = problem(&oversized);
    assert_eq!(
        (number, message.contains("Filter policy is too large")),
        (3, true),
        "{message}"
    );
}

fn problem(text: &str) -> (usize, String) {
    let Err(error) = read(text.as_bytes(), &DEFAULTS) else {
        panic!("{text:?} was read");
    };
    (error.line, error.problem.to_string())
}

#[test]
fn a_bad_snapshot_is_refused_naming_its_line() {
    let header = "{\"snapshot\":{\"version\":1}}\n";
    let queue = "{\"queue\":{\"name\":\"q\"}}\n";
    let end =
        |queues: u32, messages: u32| format!("{{\"end\":{{\"queues\":{queues},\"messages\":{messages}}}}}\n");
    let cases = [
        ("{\"queue\":{\"name\":\"q\"}}\n".to_string(), 1, "header"),
        ("{\"snapshot\":{\"version\":3}}\n".to_string(), 1, "version 3"),
        (
            format!("{header}{{\"message\":{{\"body\":\"x\"}}}}\n"),
            2,
            "before any queue",
        ),
        (format!("{header}{queue}{queue}"), 3, "comes twice"),
        (
            format!("{header}{{\"queue\":{{\"name\":\"bad name\"}}}}\n"),
            2,
            "queue bad name",
        ),
        (
            format!("{header}{{\"queue\":{{\"name\":\"q\",\"account\":\"12\"}}}}\n"),
            2,
            "12 is not an account id",
        ),
        (
            format!("{header}{{\"queue\":{{\"name\":\"q\",\"attributes\":{{\"DelaySeconds\":\"901\"}}}}}}\n"),
            2,
            "DelaySeconds",
        ),
        (
            format!("{header}{queue}{{\"message\":{{\"body\":\"\\u0000\"}}}}\n"),
            3,
            "message of queue q",
        ),
        (
            format!(
                "{header}{{\"queue\":{{\"name\":\"q.fifo\",\"attributes\":{{\"FifoQueue\":\"true\"}}}}}}\n{{\"message\":{{\"body\":\"x\"}}}}\n"
            ),
            3,
            "group_id",
        ),
        (
            format!(
                "{header}{queue}{{\"message\":{{\"body\":\"x\",\"sequence_number\":4}}}}\n{{\"message\":{{\"body\":\"y\",\"sequence_number\":4}}}}\n"
            ),
            4,
            "comes twice",
        ),
        (
            format!("{header}{queue}{{\"message\":{{\"body\":\"x\",\"colour\":\"red\"}}}}\n"),
            3,
            "unknown field",
        ),
        (
            format!("{header}{queue}{}", end(1, 1)),
            3,
            "counts 1 queues, 1 messages, 0 topics",
        ),
        (
            format!("{header}{queue}{}{queue}", end(1, 0)),
            4,
            "follows the end",
        ),
        (
            format!("{header}{queue}{{\"message\":{{\"body\":\"x\"}}}}\n"),
            4,
            "cut short",
        ),
        (String::new(), 1, "header"),
    ];
    for (text, line, words) in cases {
        let (at, said) = problem(&text);
        assert_eq!(at, line, "{text:?}: {said}");
        assert!(said.contains(words), "{text:?}: {said:?} does not say {words:?}");
    }
}

#[test]
fn a_line_past_the_limit_is_not_read_whole() {
    let mut text = b"{\"snapshot\":{\"version\":1}}\n{\"queue\":{\"name\":\"".to_vec();
    text.resize(text.len() + MAX_LINE_BYTES + 10, b'a');
    let Err(error) = read(&text[..], &DEFAULTS) else {
        panic!("a line past the limit was read");
    };
    assert_eq!(error.line, 2);
    assert!(matches!(error.problem, Problem::TooLong));
}

/// A snapshot with one queue line (`queue`, its JSON fields) and the
/// messages given, as a file would hold it.
fn file_with(queue: &str, messages: &[&str]) -> String {
    let mut text = format!("{{\"snapshot\":{{\"version\":1}}}}\n{{\"queue\":{{\"name\":\"q\"{queue}}}}}\n");
    for message in messages {
        text.push_str(&format!("{{\"message\":{{\"body\":\"x\"{message}}}}}\n"));
    }
    text.push_str(&format!(
        "{{\"end\":{{\"queues\":1,\"messages\":{}}}}}\n",
        messages.len()
    ));
    text
}

#[test]
fn sequence_numbers_a_queue_cannot_go_on_from_are_refused_naming_the_line() {
    let past = MAX_SEQUENCE + 1;
    let (at_past, at_highest) = (
        format!(r#","sequence_number":{past}"#),
        format!(r#","sequence_number":{MAX_SEQUENCE}"#),
    );
    let next_max = format!(r#","next_sequence_number":{}"#, u64::MAX);
    let cases: [(&str, Vec<&str>, usize, &str); 5] = [
        ("", vec![r#","sequence_number":0"#], 3, "start at 1"),
        ("", vec![&at_past], 3, "past the highest"),
        ("", vec![&at_highest, ""], 4, "past the highest"),
        (&next_max, vec![], 2, "next_sequence_number"),
        (r#","next_sequence_number":0"#, vec![], 2, "next_sequence_number"),
    ];
    for (queue, messages, line, said) in cases {
        let text = file_with(queue, &messages);
        let Err(error) = read(text.as_bytes(), &DEFAULTS) else {
            panic!("read: {text}");
        };
        assert_eq!(error.line, line, "{text}: {error}");
        assert!(error.to_string().contains(said), "{text}: {error}");
    }
    // The highest number itself is taken, and the queue goes on: its
    // sends are refused, not wrapped.
    let text = file_with(
        &format!(r#","next_sequence_number":{past}"#),
        &[&format!(r#","sequence_number":{MAX_SEQUENCE}"#)],
    );
    let mut queue = read(text.as_bytes(), &DEFAULTS).unwrap().queues.remove(0);
    assert_eq!(queue.messages_after(0, usize::MAX, u64::MAX)[0].seq, MAX_SEQUENCE);
    let refused = queue.send(NewMessage::plain("more"), 6_000).unwrap_err();
    assert!(
        refused.message.contains("every sequence number"),
        "{}",
        refused.message
    );
    assert_eq!(queue.holding().0, 1);
}

#[test]
fn the_first_sequence_number_is_exported_and_imported_again() {
    let text = file_with("", &[r#","sequence_number":1"#, ""]);
    let queue = read(text.as_bytes(), &DEFAULTS).unwrap().queues.remove(0);
    let again = export(&[&queue]);
    let seqs: Vec<u64> = read(&again[..], &DEFAULTS).unwrap().queues[0]
        .messages_after(0, usize::MAX, u64::MAX)
        .iter()
        .map(|m| m.seq)
        .collect();
    assert_eq!(seqs, [1, 2]);
}

/// A queue in a state drawn by `rng`: standard or FIFO, in this region
/// or another, its messages in every state, with sequence numbers from
/// the first to the highest a queue may hold.
fn drawn_queue(rng: &mut rand::rngs::StdRng, n: usize) -> Queue {
    use rand::Rng;
    let fifo = rng.gen_bool(0.5);
    let name = format!("q{n}{}", if fifo { ".fifo" } else { "" });
    let mut attributes = BTreeMap::new();
    if fifo {
        attributes.insert("FifoQueue".to_string(), "true".to_string());
        if rng.gen_bool(0.5) {
            attributes.insert("ContentBasedDeduplication".to_string(), "true".to_string());
        }
    }
    attributes.insert(
        "VisibilityTimeout".to_string(),
        rng.gen_range(0..=43_200).to_string(),
    );
    let key = match rng.gen_bool(0.3) {
        true => format!("eu-west-1/{name}"),
        false => name.clone(),
    };
    let created_at = rng.gen_range(0..2_000_000_000_000);
    let meta = QueueMeta {
        name: key,
        dedup_scope: crate::queue::attributes::DeduplicationScope::Queue,
        attributes: QueueAttributes::for_new_queue(&name, &attributes).unwrap(),
        tags: (0..rng.gen_range(0..3))
            .map(|t| (format!("t{t}"), format!("v{}", rng.r#gen::<u16>())))
            .collect(),
        created_at,
        last_modified_at: created_at + rng.gen_range(0..1_000),
        last_purge_at: None,
        move_tasks: Vec::new(),
    };
    let count = rng.gen_range(0..12);
    let mut seq = match rng.gen_range(0..3) {
        0 => 1,
        1 => MAX_SEQUENCE - rng.gen_range(0..count as u64 * 3 + 1).min(MAX_SEQUENCE - 1),
        _ => rng.gen_range(1..1 << 40),
    };
    let texts = [
        "plain",
        "ünïcödé",
        "中文",
        "emoji 😀",
        "tab\tnew\nline",
        "<xml & \"quotes\">",
    ];
    let mut messages = Vec::new();
    for m in 0..count {
        if m > 0 {
            seq += rng.gen_range(1..4);
        }
        if seq > MAX_SEQUENCE {
            break;
        }
        let sent_at = rng.gen_range(1..4_000_000_000_000);
        let receive_count = if rng.gen_bool(0.5) { 0 } else { rng.gen_range(1..5) };
        let state = match (rng.gen_range(0..3), receive_count) {
            (0, _) | (1, 1..) => MessageState::Visible {
                since: sent_at + rng.gen_range(0..9),
            },
            (1, 0) => MessageState::Delayed {
                until: sent_at + rng.gen_range(1..900_000),
            },
            (_, 0) => MessageState::Visible { since: sent_at },
            _ => MessageState::InFlight {
                until: sent_at + rng.gen_range(1..43_200_000),
                received_at: sent_at,
            },
        };
        let mut message_attributes = MessageAttributes::new();
        if rng.gen_bool(0.4) {
            message_attributes.insert(
                "n".into(),
                MessageAttribute {
                    data_type: "Number.int".into(),
                    value: AttributeValue::String(rng.r#gen::<i32>().to_string()),
                },
            );
            message_attributes.insert(
                "b".into(),
                MessageAttribute {
                    data_type: "Binary".into(),
                    value: AttributeValue::Binary((0..rng.gen_range(1..8)).map(|_| rng.r#gen()).collect()),
                },
            );
        }
        let body = texts[rng.gen_range(0..texts.len())].repeat(rng.gen_range(1..4));
        let group =
            (fifo || rng.gen_bool(0.3)).then(|| Arc::<str>::from(format!("g{}", rng.gen_range(0..3))));
        messages.push(Message {
            seq,
            id: crate::queue::random::uuid(),
            md5_of_body: message::md5_of_body(&body),
            body: body.into(),
            attributes: Arc::new(message_attributes),
            sender_id: "AIDAEXAMPLE".into(),
            trace_header: rng
                .gen_bool(0.2)
                .then(|| "Root=1-5759e988-bd862e3fe1be46a994272793".into()),
            group_id: group,
            dedup_id: fifo.then(|| format!("d{seq}").into()),
            dead_letter_source: rng
                .gen_bool(0.2)
                .then(|| "arn:aws:sqs:us-east-1:000000000000:source".into()),
            sent_at,
            receive_count,
            first_received_at: (receive_count > 0).then_some(sent_at + 1),
            receipt_key: (receive_count > 0 && rng.gen_bool(0.8)).then(|| rng.r#gen()),
            state,
        });
    }
    let last = messages.last().map_or(0, |m: &Message| m.seq);
    let next = match rng.gen_bool(0.5) {
        true => last + 1,
        false => rng.gen_range(last + 1..=MAX_SEQUENCE + 1),
    };
    Queue::restore(meta, next, messages, [])
}

/// Property: a snapshot of any state the queues can hold, imported and
/// exported again, gives the same file.
#[test]
fn export_import_export_gives_the_same_file_for_drawn_states() {
    use rand::SeedableRng;
    for seed in 0..400 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let queues: Vec<Queue> = (0..1 + seed as usize % 3)
            .map(|n| drawn_queue(&mut rng, n))
            .collect();
        let first = export(&queues.iter().collect::<Vec<_>>());
        let imported = read(&first[..], &DEFAULTS)
            .unwrap_or_else(|error| panic!("seed {seed}: {error}\n{}", String::from_utf8_lossy(&first)))
            .queues;
        let second = export(&imported.iter().collect::<Vec<_>>());
        assert_eq!(
            String::from_utf8_lossy(&second),
            String::from_utf8_lossy(&first),
            "seed {seed}"
        );
    }
}
