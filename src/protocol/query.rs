//! The Query protocol of older SDKs: form-encoded `Action=…&Version=2012-11-05`
//! POSTs (to `/` or to a queue URL) answered with XML in the
//! `http://queue.amazonaws.com/doc/2012-11-05/` namespace.
//!
//! Requests are folded into the same tree the JSON protocol carries
//! (`Attribute.1.Name`/`Attribute.1.Value` → `"Attributes": {name: value}`,
//! `SendMessageBatchRequestEntry.2.MessageBody` → `"Entries"[1].MessageBody`,
//! …), so every action runs through the one [`crate::api::dispatch`].
//! Answers are rendered from the output tree by the reverse rules.

use std::collections::BTreeMap;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::api::Action;
use crate::error::{ErrorCode, SqsError};

const NAMESPACE: &str = "http://queue.amazonaws.com/doc/2012-11-05/";

/// Parameters that carry authentication or versioning, not input.
fn is_envelope(key: &str) -> bool {
    matches!(
        key,
        "Action"
            | "Version"
            | "AWSAccessKeyId"
            | "Signature"
            | "SignatureMethod"
            | "SignatureVersion"
            | "Timestamp"
            | "Expires"
            | "SecurityToken"
    ) || key.starts_with("X-Amz-")
}

/// Integer members of the SQS model.
const NUMBERS: &[&str] = &[
    "DelaySeconds",
    "MaxNumberOfMessages",
    "MaxNumberOfMessagesPerSecond",
    "MaxResults",
    "VisibilityTimeout",
    "WaitTimeSeconds",
];

/// The most dot-separated segments a parameter name may have. The deepest
/// name in the SQS model has seven
/// (`SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringListValue.1`);
/// the tree below is built and dropped recursively, so without this bound one
/// request with a name of thousands of segments overflows the stack.
pub const MAX_NAME_SEGMENTS: usize = 10;

/// The most parameters one request may carry. A full SendMessageBatch (ten
/// entries, each with ten message attributes) has about 500.
pub const MAX_PARAMETERS: usize = 2_000;

/// A parameter name split at its dots, as a tree.
#[derive(Debug, Default)]
struct Node {
    value: Option<String>,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn insert(&mut self, path: &[&str], value: String) {
        match path.split_first() {
            None => self.value = Some(value),
            Some((first, rest)) => self
                .children
                .entry(first.to_string())
                .or_default()
                .insert(rest, value),
        }
    }

    /// Children numbered 1, 2, …, in number order.
    fn numbered(&self) -> Vec<&Node> {
        let mut numbered: Vec<(u32, &Node)> = self
            .children
            .iter()
            .filter_map(|(k, v)| Some((k.parse().ok()?, v)))
            .collect();
        numbered.sort_by_key(|(n, _)| *n);
        numbered.into_iter().map(|(_, node)| node).collect()
    }

    fn text(&self, key: &str) -> Option<String> {
        self.children.get(key)?.value.clone()
    }
}

/// The `name=value` pairs of a form, counted as the decoder will see them
/// (empty pieces between `&`s are skipped).
fn count_pairs(form: &[u8]) -> usize {
    form.split(|&byte| byte == b'&')
        .filter(|pair| !pair.is_empty())
        .count()
}

/// Reads a Query request: its action and its input as a JSON tree.
/// `queue_path` is the request's path when it names a queue.
pub fn parse(
    body: &[u8],
    url_query: Option<&str>,
    queue_path: Option<&str>,
) -> Result<(Action, Value), SqsError> {
    check_parameter_count(count_pairs(body) + url_query.map_or(0, |query| count_pairs(query.as_bytes())))?;
    let mut pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(body).map_err(|e| {
        SqsError::new(
            ErrorCode::SerializationException,
            format!("The form body could not be read: {e}."),
        )
    })?;
    if let Some(query) = url_query {
        pairs.extend(url_pairs(query)?);
    }
    let action_name = pairs
        .iter()
        .find(|(k, _)| k == "Action")
        .map(|(_, v)| v.clone())
        .ok_or_else(|| SqsError::missing_parameter("Action"))?;
    let action = Action::from_name(&action_name).ok_or_else(|| {
        SqsError::new(
            ErrorCode::InvalidAction,
            format!("The action {action_name} is not valid for this endpoint."),
        )
    })?;
    let mut input = fold(pairs, action)?;
    if let Some(path) = queue_path
        && !input.contains_key("QueueUrl")
    {
        input.insert("QueueUrl".into(), Value::String(path.to_string()));
    }
    Ok((action, Value::Object(input)))
}

/// Reads the input of `action` from a URL's query string alone: what a
/// presigned URL carries for a JSON-protocol action.
pub fn parse_parameters(action: Action, url_query: &str) -> Result<Value, SqsError> {
    check_parameter_count(count_pairs(url_query.as_bytes()))?;
    Ok(Value::Object(fold(url_pairs(url_query)?, action)?))
}

/// Counted before anything is decoded: a body of empty pairs (`a=&a=&…`)
/// must not turn into millions of allocations first.
fn check_parameter_count(parameters: usize) -> Result<(), SqsError> {
    if parameters > MAX_PARAMETERS {
        return Err(SqsError::invalid_parameter(format!(
            "The request has {parameters} parameters; at most {MAX_PARAMETERS} are accepted."
        )));
    }
    Ok(())
}

fn url_pairs(query: &str) -> Result<Vec<(String, String)>, SqsError> {
    serde_urlencoded::from_str(query).map_err(|e| {
        SqsError::new(
            ErrorCode::SerializationException,
            format!("The query string could not be read: {e}."),
        )
    })
}

/// Folds `name=value` pairs into the model tree of `action`'s input.
fn fold(pairs: Vec<(String, String)>, action: Action) -> Result<Map<String, Value>, SqsError> {
    let mut root = Node::default();
    for (key, value) in pairs {
        if is_envelope(&key) {
            continue;
        }
        let path: Vec<&str> = key.splitn(MAX_NAME_SEGMENTS + 1, '.').collect();
        if path.len() > MAX_NAME_SEGMENTS {
            return Err(SqsError::invalid_parameter(format!(
                "The parameter name {}... has more than {MAX_NAME_SEGMENTS} dot-separated parts; no SQS parameter has that many.",
                path[..MAX_NAME_SEGMENTS].join(".")
            )));
        }
        root.insert(&path, value);
    }
    members(&root, action)
}

/// The members of one structure (the request, or a batch entry).
fn members(node: &Node, action: Action) -> Result<Map<String, Value>, SqsError> {
    let mut out = Map::new();
    for (key, child) in &node.children {
        let (name, value) = match key.as_str() {
            "Attribute" => ("Attributes", pairs(child, "Name", "Value")),
            "Tag" | "Tags" if action == Action::CreateQueue => ("tags", pairs(child, "Key", "Value")),
            "Tag" | "Tags" => ("Tags", pairs(child, "Key", "Value")),
            "MessageAttribute" => ("MessageAttributes", attribute_values(child)),
            "MessageSystemAttribute" => ("MessageSystemAttributes", attribute_values(child)),
            "AttributeName" => ("AttributeNames", list(child)),
            "MessageAttributeName" => ("MessageAttributeNames", list(child)),
            "MessageSystemAttributeName" => ("MessageSystemAttributeNames", list(child)),
            "TagKey" => ("TagKeys", list(child)),
            "AWSAccountId" => ("AWSAccountIds", list(child)),
            "ActionName" => ("Actions", list(child)),
            "SendMessageBatchRequestEntry"
            | "DeleteMessageBatchRequestEntry"
            | "ChangeMessageVisibilityBatchRequestEntry" => {
                let entries = child
                    .numbered()
                    .into_iter()
                    .map(|e| members(e, action).map(Value::Object));
                ("Entries", Value::Array(entries.collect::<Result<_, _>>()?))
            }
            number if NUMBERS.contains(&number) => {
                let text = child.value.clone().unwrap_or_default();
                let parsed = text.trim().parse::<i64>().map_err(|_| {
                    SqsError::invalid_parameter(format!(
                        "Value {text} for parameter {number} is invalid. Reason: not a whole number."
                    ))
                })?;
                (number, Value::from(parsed))
            }
            _ => match &child.value {
                Some(text) => (key.as_str(), Value::String(text.clone())),
                None => continue,
            },
        };
        out.insert(name.to_string(), value);
    }
    Ok(out)
}

fn list(node: &Node) -> Value {
    Value::Array(
        node.numbered()
            .into_iter()
            .filter_map(|n| n.value.clone().map(Value::String))
            .collect(),
    )
}

fn pairs(node: &Node, key: &str, value: &str) -> Value {
    let map = node
        .numbered()
        .into_iter()
        .filter_map(|entry| {
            Some((
                entry.text(key)?,
                Value::String(entry.text(value).unwrap_or_default()),
            ))
        })
        .collect();
    Value::Object(map)
}

/// `MessageAttribute.N.Name` with `MessageAttribute.N.Value.{DataType,StringValue,BinaryValue}`.
fn attribute_values(node: &Node) -> Value {
    let map = node
        .numbered()
        .into_iter()
        .filter_map(|entry| {
            let name = entry.text("Name")?;
            let value = entry.children.get("Value")?;
            let fields: Map<String, Value> = ["DataType", "StringValue", "BinaryValue"]
                .iter()
                .filter_map(|f| Some((f.to_string(), Value::String(value.text(f)?))))
                .collect();
            Some((name, Value::Object(fields)))
        })
        .collect();
    Value::Object(map)
}

pub fn success(request_id: &str, action: Action, output: &Value) -> Response {
    let name = action.name();
    let mut xml = format!("<?xml version=\"1.0\"?><{name}Response xmlns=\"{NAMESPACE}\">");
    if let Value::Object(fields) = output
        && !fields.is_empty()
    {
        xml.push_str(&format!("<{name}Result>"));
        render_fields(&mut xml, fields, action);
        xml.push_str(&format!("</{name}Result>"));
    }
    xml.push_str(&format!(
        "<ResponseMetadata><RequestId>{}</RequestId></ResponseMetadata></{name}Response>",
        escape(request_id)
    ));
    with_headers(StatusCode::OK, request_id, xml)
}

pub fn error(request_id: &str, error: &SqsError) -> Response {
    let fault = if error.code.is_sender_fault() {
        "Sender"
    } else {
        "Receiver"
    };
    let xml = format!(
        "<?xml version=\"1.0\"?><ErrorResponse xmlns=\"{NAMESPACE}\"><Error><Type>{fault}</Type><Code>{}</Code><Message>{}</Message><Detail/></Error><RequestId>{}</RequestId></ErrorResponse>",
        escape(error.code.legacy_code()),
        escape(&error.message),
        escape(request_id),
    );
    let status = StatusCode::from_u16(error.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
    with_headers(status, request_id, xml)
}

fn with_headers(status: StatusCode, request_id: &str, xml: String) -> Response {
    let mut response = (status, xml).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml"));
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert("x-amzn-requestid", id);
    }
    response
}

/// Renders a structure's members; lists and maps flattened as SQS does.
fn render_fields(xml: &mut String, fields: &Map<String, Value>, action: Action) {
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("QueueUrls" | "queueUrls", Value::Array(urls)) => {
                for url in urls {
                    element(xml, "QueueUrl", |xml| scalar(xml, url));
                }
            }
            ("Attributes", Value::Object(map)) => entries(xml, "Attribute", "Name", "Value", map, action),
            ("Tags", Value::Object(map)) => entries(xml, "Tag", "Key", "Value", map, action),
            ("MessageAttributes", Value::Object(map)) => {
                entries(xml, "MessageAttribute", "Name", "Value", map, action)
            }
            (list, Value::Array(items)) => {
                // Successful and Results hold `<Action>ResultEntry` elements.
                let item_name = match list {
                    "Messages" => "Message".to_string(),
                    "Failed" => "BatchResultErrorEntry".to_string(),
                    _ => format!("{}ResultEntry", action.name()),
                };
                for item in items {
                    element(xml, &item_name, |xml| render_value(xml, item, action));
                }
            }
            (name, value) => element(xml, name, |xml| render_value(xml, value, action)),
        }
    }
}

fn entries(
    xml: &mut String,
    item: &str,
    key_name: &str,
    value_name: &str,
    map: &Map<String, Value>,
    action: Action,
) {
    for (key, value) in map {
        element(xml, item, |xml| {
            element(xml, key_name, |xml| xml.push_str(&escape(key)));
            element(xml, value_name, |xml| render_value(xml, value, action));
        });
    }
}

fn render_value(xml: &mut String, value: &Value, action: Action) {
    match value {
        Value::Object(fields) => render_fields(xml, fields, action),
        other => scalar(xml, other),
    }
}

fn scalar(xml: &mut String, value: &Value) {
    match value {
        Value::String(s) => xml.push_str(&escape(s)),
        Value::Null => {}
        other => xml.push_str(&other.to_string()),
    }
}

fn element(xml: &mut String, name: &str, inner: impl FnOnce(&mut String)) {
    xml.push('<');
    xml.push_str(name);
    xml.push('>');
    inner(xml);
    xml.push_str("</");
    xml.push_str(name);
    xml.push('>');
}

/// XML text escaping; carriage returns as references, since XML parsers
/// would otherwise turn them into line feeds.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_fold_into_the_model_tree() {
        let body = "Action=SendMessageBatch&Version=2012-11-05&QueueUrl=http%3A%2F%2Fh%2F000000000000%2Fq\
            &SendMessageBatchRequestEntry.2.Id=b&SendMessageBatchRequestEntry.2.MessageBody=two\
            &SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=one\
            &SendMessageBatchRequestEntry.1.DelaySeconds=5\
            &SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=k\
            &SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String\
            &SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=v";
        let (action, input) = parse(body.as_bytes(), None, None).unwrap();
        assert_eq!(action, Action::SendMessageBatch);
        assert_eq!(input["Entries"][0]["Id"], "a");
        assert_eq!(input["Entries"][0]["DelaySeconds"], 5);
        assert_eq!(input["Entries"][0]["MessageAttributes"]["k"]["StringValue"], "v");
        assert_eq!(input["Entries"][1]["MessageBody"], "two");
        assert_eq!(input["QueueUrl"], "http://h/000000000000/q");
    }

    #[test]
    fn maps_lists_and_the_queue_path() {
        let body = "Action=CreateQueue&QueueName=q&Attribute.1.Name=VisibilityTimeout&Attribute.1.Value=5&Tag.1.Key=team&Tag.1.Value=core";
        let (_, input) = parse(body.as_bytes(), None, None).unwrap();
        assert_eq!(input["Attributes"]["VisibilityTimeout"], "5");
        assert_eq!(input["tags"]["team"], "core");
        let (_, input) = parse(
            b"AttributeName.1=All",
            Some("Action=GetQueueAttributes"),
            Some("/000000000000/q"),
        )
        .unwrap();
        assert_eq!(input["AttributeNames"][0], "All");
        assert_eq!(input["QueueUrl"], "/000000000000/q");
    }

    #[test]
    fn deep_names_and_many_parameters_are_refused_before_folding() {
        // A name of 13,000 segments overflowed the stack while folding.
        let deep = format!("Action=ListQueues&{}=1", vec!["a"; 13_000].join("."));
        for (body, query) in [(deep.as_str(), None), ("", Some(deep.as_str()))] {
            let error = parse(body.as_bytes(), query, None).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidParameterValue);
            assert!(
                error.message.contains("more than 10 dot-separated parts"),
                "{error}"
            );
        }
        let deepest_real = "Action=SendMessageBatch&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringListValue.1=x";
        assert!(parse(deepest_real.as_bytes(), None, None).is_ok());
        let many = format!("Action=ListQueues{}", "&a=".repeat(MAX_PARAMETERS));
        let error = parse(many.as_bytes(), None, None).unwrap_err();
        assert!(error.message.contains("at most 2000"), "{error}");
    }

    #[test]
    fn bad_forms_are_sqs_errors() {
        assert_eq!(
            parse(b"QueueName=q", None, None).unwrap_err().code,
            ErrorCode::MissingParameter
        );
        assert_eq!(
            parse(b"Action=Fly", None, None).unwrap_err().code,
            ErrorCode::InvalidAction
        );
        let err = parse(b"Action=ReceiveMessage&MaxNumberOfMessages=ten", None, None).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParameterValue);
    }

    #[test]
    fn answers_render_lists_and_maps_flattened() {
        let output = serde_json::json!({"Attributes": {"VisibilityTimeout": "30"}});
        let response = success("rid", Action::GetQueueAttributes, &output);
        assert_eq!(response.status(), 200);
        let mut xml = String::new();
        render_fields(&mut xml, output.as_object().unwrap(), Action::GetQueueAttributes);
        assert_eq!(
            xml,
            "<Attribute><Name>VisibilityTimeout</Name><Value>30</Value></Attribute>"
        );
        assert_eq!(escape("a<b & \"c\"\r"), "a&lt;b &amp; &quot;c&quot;&#xD;");
    }
}
