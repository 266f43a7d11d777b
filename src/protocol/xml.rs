//! Writing the Query protocol's answers: an answer's fields as XML
//! elements, named and flattened by the model's shape tables, and the same
//! element tree as the JSON that xmltodict reads from it.
//!
//! The second form is what LocalStack's developer endpoint answers with for
//! `Accept: application/json` (its serializer turns its XML into JSON with
//! xmltodict), so scripts written against that endpoint read ssq's
//! unchanged. One walk over the fields ([`answer`], [`error`]) writes into
//! either [`Sink`], so the two forms cannot drift apart.

use serde_json::{Map, Value};

use crate::api::Action;
use crate::api::shape::{Kind, Member};
use crate::error::{ErrorCode, SqsError};

pub const NAMESPACE: &str = "http://queue.amazonaws.com/doc/2012-11-05/";

/// Where elements are written.
pub trait Sink {
    fn open(&mut self, name: &str);
    fn text(&mut self, text: &str);
    fn close(&mut self, name: &str);
}

/// XML text, with the declaration and the namespace on the root element.
pub struct XmlText {
    xml: String,
    depth: usize,
    /// The last thing written is an opening tag, so that an element closed
    /// right after it is written empty (`<ReceiveMessageResult/>`).
    just_opened: bool,
}

impl Default for XmlText {
    fn default() -> XmlText {
        XmlText {
            xml: "<?xml version=\"1.0\"?>".to_string(),
            depth: 0,
            just_opened: false,
        }
    }
}

impl XmlText {
    pub fn finish(self) -> String {
        self.xml
    }
}

impl Sink for XmlText {
    fn open(&mut self, name: &str) {
        self.xml.push('<');
        self.xml.push_str(name);
        if self.depth == 0 {
            self.xml.push_str(" xmlns=\"");
            self.xml.push_str(NAMESPACE);
            self.xml.push('"');
        }
        self.xml.push('>');
        self.depth += 1;
        self.just_opened = true;
    }

    fn text(&mut self, text: &str) {
        if !text.is_empty() {
            self.xml.push_str(&escape(text));
            self.just_opened = false;
        }
    }

    fn close(&mut self, name: &str) {
        self.depth -= 1;
        if std::mem::take(&mut self.just_opened) {
            self.xml.pop();
            self.xml.push_str("/>");
        } else {
            self.xml.push_str("</");
            self.xml.push_str(name);
            self.xml.push('>');
        }
    }
}

/// The element tree as xmltodict reads it: an element that occurs once is
/// an object (or its text), one that repeats an array, an empty one null;
/// every value is a string.
pub struct XmlTree {
    /// The open elements: name, children so far, text so far.
    open: Vec<(String, Map<String, Value>, String)>,
}

impl Default for XmlTree {
    fn default() -> XmlTree {
        XmlTree {
            open: vec![(String::new(), Map::new(), String::new())],
        }
    }
}

impl XmlTree {
    pub fn finish(mut self) -> Value {
        Value::Object(
            self.open
                .pop()
                .map(|(_, children, _)| children)
                .unwrap_or_default(),
        )
    }
}

impl Sink for XmlTree {
    fn open(&mut self, name: &str) {
        self.open.push((name.to_string(), Map::new(), String::new()));
    }

    fn text(&mut self, text: &str) {
        if let Some((_, _, so_far)) = self.open.last_mut() {
            so_far.push_str(text);
        }
    }

    fn close(&mut self, _: &str) {
        let Some((name, children, text)) = self.open.pop() else {
            return;
        };
        let value = match (children.is_empty(), text.is_empty()) {
            (false, _) => Value::Object(children),
            (true, false) => Value::String(text),
            (true, true) => Value::Null,
        };
        let Some((_, parent, _)) = self.open.last_mut() else {
            return;
        };
        match parent.get_mut(&name) {
            None => {
                parent.insert(name, value);
            }
            Some(Value::Array(items)) => items.push(value),
            Some(first) => *first = Value::Array(vec![first.take(), value]),
        }
    }
}

/// A successful answer: `<{Action}Response>` with its `<{Action}Result>`
/// (empty or not, for every action whose response has members) and the
/// request id.
pub fn answer(sink: &mut impl Sink, request_id: &str, action: Action, output: &Value) {
    let name = action.name();
    let response = format!("{name}Response");
    sink.open(&response);
    let members = action.output_members();
    if !members.is_empty() {
        let result = format!("{name}Result");
        element(sink, &result, |sink| {
            if let Value::Object(fields) = output {
                write_fields(sink, fields, members);
            }
        });
    }
    element(sink, "ResponseMetadata", |sink| {
        element(sink, "RequestId", |sink| sink.text(request_id))
    });
    sink.close(&response);
}

/// An error answer, in the Query protocol's words.
pub fn error(sink: &mut impl Sink, request_id: &str, error: &SqsError) {
    let fault = if error.code.is_sender_fault() {
        "Sender"
    } else {
        "Receiver"
    };
    // The Query protocol's words for a missing queue, as AWS answers them.
    let message = match error.code {
        ErrorCode::QueueDoesNotExist => "The specified queue does not exist for this wsdl version.",
        _ => &error.message,
    };
    element(sink, "ErrorResponse", |sink| {
        element(sink, "Error", |sink| {
            element(sink, "Type", |sink| sink.text(fault));
            element(sink, "Code", |sink| sink.text(error.code.legacy_code()));
            element(sink, "Message", |sink| sink.text(message));
            element(sink, "Detail", |_| {});
        });
        element(sink, "RequestId", |sink| sink.text(request_id));
    });
}

/// Writes a structure's members as the model names them; lists and maps
/// flattened as SQS does.
pub fn write_fields(sink: &mut impl Sink, fields: &Map<String, Value>, members: &'static [Member]) {
    for (key, value) in fields {
        match Member::find(members, key) {
            Some(member) => write_member(sink, member.query_name(), &member.kind, value),
            // Not in the model's table: written under its JSON name, so
            // that nothing is lost (tests/sqs/protocols.rs compares every answer
            // with JSON's and fails on it).
            None => element(sink, key, |sink| scalar(sink, value)),
        }
    }
}

/// One member's value, under `name`.
fn write_member(sink: &mut impl Sink, name: &str, kind: &Kind, value: &Value) {
    match (kind, value) {
        (Kind::List(item), Value::Array(items)) => {
            for each in items {
                write_member(sink, name, item, each);
            }
        }
        (
            Kind::Map {
                key,
                value: value_name,
                of,
            },
            Value::Object(map),
        ) => {
            for (entry_key, entry_value) in map {
                element(sink, name, |sink| {
                    element(sink, key, |sink| sink.text(entry_key));
                    write_member(sink, value_name, of, entry_value);
                });
            }
        }
        (Kind::Structure(members) | Kind::Flattened(members), Value::Object(fields)) => {
            element(sink, name, |sink| write_fields(sink, fields, members))
        }
        (_, value) => element(sink, name, |sink| scalar(sink, value)),
    }
}

fn scalar(sink: &mut impl Sink, value: &Value) {
    match value {
        Value::String(s) => sink.text(s),
        Value::Null => {}
        other => sink.text(&other.to_string()),
    }
}

fn element<S: Sink>(sink: &mut S, name: &str, inner: impl FnOnce(&mut S)) {
    sink.open(name);
    inner(sink);
    sink.close(name);
}

/// XML text escaping (HTML's too); carriage returns as references, since
/// XML parsers would otherwise turn them into line feeds.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#xD;"),
            // Nothing stored should hold one (every stored text is checked),
            // but an answer must stay readable whatever was stored before.
            c if !crate::queue::message::is_xml_char(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xml(write: impl FnOnce(&mut XmlText)) -> String {
        let mut sink = XmlText::default();
        write(&mut sink);
        sink.finish()
    }

    fn tree(write: impl FnOnce(&mut XmlTree)) -> Value {
        let mut sink = XmlTree::default();
        write(&mut sink);
        sink.finish()
    }

    #[test]
    fn answers_render_lists_and_maps_flattened() {
        let output = serde_json::json!({"Attributes": {"VisibilityTimeout": "30"}});
        let fields = output.as_object().unwrap();
        let members = Action::GetQueueAttributes.output_members();
        assert_eq!(
            xml(|sink| element(sink, "R", |sink| write_fields(sink, fields, members))),
            format!(
                "<?xml version=\"1.0\"?><R xmlns=\"{NAMESPACE}\"><Attribute><Name>VisibilityTimeout</Name><Value>30</Value></Attribute></R>"
            )
        );
        assert_eq!(escape("a<b & \"c\"\r"), "a&lt;b &amp; &quot;c&quot;&#xD;");
        assert_eq!(
            escape("k\u{1}v\u{0}\u{FFFE}"),
            "k\u{FFFD}v\u{FFFD}\u{FFFD}",
            "no character XML cannot carry"
        );
    }

    #[test]
    fn the_tree_form_reads_the_xml_as_xmltodict_does() {
        let one = serde_json::json!({"Messages": [{"Body": "a", "Attributes": {"SenderId": "1"}}]});
        let two = serde_json::json!({"Messages": [
            {"Body": "a", "Attributes": {"SenderId": "1", "SentTimestamp": "2"}},
            {"Body": "b"},
        ]});
        let none = serde_json::json!({});
        let action = Action::ReceiveMessage;
        assert_eq!(
            tree(|sink| answer(sink, "rid", action, &one)),
            serde_json::json!({"ReceiveMessageResponse": {
                "ReceiveMessageResult": {"Message": {"Body": "a", "Attribute": {"Name": "SenderId", "Value": "1"}}},
                "ResponseMetadata": {"RequestId": "rid"},
            }}),
            "what occurs once is an object"
        );
        let two = tree(|sink| answer(sink, "rid", action, &two));
        let messages = &two["ReceiveMessageResponse"]["ReceiveMessageResult"]["Message"];
        assert_eq!(messages[1]["Body"], "b", "what repeats is an array");
        assert_eq!(messages[0]["Attribute"][1]["Value"], "2");
        let empty = tree(|sink| answer(sink, "rid", action, &none));
        assert_eq!(
            empty["ReceiveMessageResponse"]["ReceiveMessageResult"],
            Value::Null
        );
        assert!(xml(|sink| answer(sink, "rid", action, &none)).contains("<ReceiveMessageResult/>"));

        let missing = SqsError::queue_does_not_exist();
        let error = tree(|sink| super::error(sink, "rid", &missing));
        assert_eq!(
            error["ErrorResponse"]["Error"]["Code"],
            "AWS.SimpleQueueService.NonExistentQueue"
        );
        assert_eq!(error["ErrorResponse"]["Error"]["Detail"], Value::Null);
        assert_eq!(
            xml(|sink| super::error(sink, "rid", &missing)),
            "<?xml version=\"1.0\"?><ErrorResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\"><Error><Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code><Message>The specified queue does not exist for this wsdl version.</Message><Detail/></Error><RequestId>rid</RequestId></ErrorResponse>"
        );
    }
}
