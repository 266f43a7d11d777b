//! The Query protocol of older SDKs: form-encoded `Action=…&Version=2012-11-05`
//! POSTs (to `/` or to a queue URL) answered with XML in the
//! `http://queue.amazonaws.com/doc/2012-11-05/` namespace.
//!
//! Requests are folded into the same tree the JSON protocol carries
//! (`Attribute.1.Name`/`Attribute.1.Value` → `"Attributes": {name: value}`,
//! `SendMessageBatchRequestEntry.2.MessageBody` → `"Entries"[1].MessageBody`,
//! …), so every action runs through the one [`crate::api::dispatch`].
//! Answers are rendered from the output tree by the reverse rules. Both
//! directions read the members' names and kinds from the model's tables
//! ([`crate::api::shape`]), never from rules of their own.

use std::collections::BTreeMap;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::xml::{self, XmlText, XmlTree};
use crate::api::Action;
use crate::api::shape::{Kind, Member};
use crate::error::{ErrorCode, SqsError};

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
    let pairs = parameters(body, url_query)?;
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

/// The `name=value` pairs of a form body and a URL's query string, at most
/// 2,000 of them.
pub fn parameters(body: &[u8], url_query: Option<&str>) -> Result<Vec<(String, String)>, SqsError> {
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
    // The decoder reads bytes that are not UTF-8 as U+FFFD, which would
    // then be stored; only where one appears is the form read again.
    if pairs
        .iter()
        .any(|(k, v)| k.contains('\u{FFFD}') || v.contains('\u{FFFD}'))
    {
        refuse_invalid_utf8(body, "form body")?;
        refuse_invalid_utf8(url_query.unwrap_or_default().as_bytes(), "query string")?;
    }
    Ok(pairs)
}

/// Refuses a form whose names or values are not UTF-8 once percent-decoded.
fn refuse_invalid_utf8(form: &[u8], what: &str) -> Result<(), SqsError> {
    let valid = form
        .split(|&byte| byte == b'&' || byte == b'=')
        .all(|piece| percent_encoding::percent_decode(piece).decode_utf8().is_ok());
    match valid {
        true => Ok(()),
        false => Err(SqsError::new(
            ErrorCode::SerializationException,
            format!("The {what} could not be read: a parameter is not UTF-8 text once percent-decoded."),
        )),
    }
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
    structure(&root, action.input_members())
}

/// The members of one structure (the request, a batch entry, a message
/// attribute's value), read as the model describes them; parameters the
/// shape does not have are ignored, as SQS ignores them.
fn structure(node: &Node, members: &'static [Member]) -> Result<Map<String, Value>, SqsError> {
    let mut out = Map::new();
    Member::visit(members, &mut |member| {
        let Some(child) = member
            .query_names()
            .iter()
            .find_map(|name| node.children.get(*name))
        else {
            return Ok(());
        };
        if let Some(value) = read(child, &member.kind, member.json)? {
            out.insert(member.json.to_string(), value);
        }
        Ok(())
    })?;
    Ok(out)
}

/// One value of `kind`; `None` when the form has nothing to read for it.
fn read(node: &Node, kind: &Kind, name: &str) -> Result<Option<Value>, SqsError> {
    Ok(Some(match kind {
        Kind::Text => match &node.value {
            Some(text) => Value::String(text.clone()),
            None => return Ok(None),
        },
        Kind::Integer => {
            let text = node.value.clone().unwrap_or_default();
            let parsed = text.trim().parse::<i64>().map_err(|_| {
                SqsError::invalid_parameter(format!(
                    "Value {text} for parameter {name} is invalid. Reason: not a whole number."
                ))
            })?;
            Value::from(parsed)
        }
        Kind::Boolean => match node.value.as_deref().map(str::to_ascii_lowercase).as_deref() {
            Some("true") => Value::Bool(true),
            Some("false") => Value::Bool(false),
            _ => {
                return Err(SqsError::invalid_parameter(format!(
                    "Value {} for parameter {name} is invalid. Reason: must be true or false.",
                    node.value.as_deref().unwrap_or_default()
                )));
            }
        },
        Kind::List(item) => {
            let mut items = Vec::new();
            for entry in node.numbered() {
                items.extend(read(entry, item, name)?);
            }
            Value::Array(items)
        }
        Kind::Map { key, value, of } => {
            let mut map = Map::new();
            for entry in node.numbered() {
                let Some(entry_key) = entry.text(key) else {
                    continue;
                };
                let entry_value = match (entry.children.get(*value), of) {
                    (Some(child), _) => read(child, of, name)?,
                    // A text value left out reads as empty.
                    (None, Kind::Text) => Some(Value::String(String::new())),
                    (None, _) => None,
                };
                if let Some(entry_value) = entry_value {
                    map.insert(entry_key, entry_value);
                }
            }
            Value::Object(map)
        }
        Kind::Structure(members) | Kind::Flattened(members) => Value::Object(structure(node, members)?),
    }))
}

pub fn success(request_id: &str, action: Action, output: &Value) -> Response {
    let mut xml = XmlText::default();
    xml::answer(&mut xml, request_id, action, output);
    with_headers(StatusCode::OK, request_id, xml.finish())
}

/// The same answer as JSON, for a Query call that accepts only JSON:
/// `{"<Action>Response": {"<Action>Result": …, "ResponseMetadata": …}}`.
pub fn as_json(request_id: &str, action: Action, output: Value) -> Value {
    let name = action.name();
    let mut response = Map::new();
    if !action.output_members().is_empty() {
        response.insert(format!("{name}Result"), output);
    }
    response.insert(
        "ResponseMetadata".into(),
        serde_json::json!({ "RequestId": request_id }),
    );
    serde_json::json!({ format!("{name}Response"): response })
}

/// A GET that names no action: SQS answers 404 with this body.
pub fn unknown_operation() -> Response {
    let mut response = (StatusCode::NOT_FOUND, "<UnknownOperationException/>").into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml"));
    response
}

pub fn error(request_id: &str, error: &SqsError) -> Response {
    let mut xml = XmlText::default();
    xml::error(&mut xml, request_id, error);
    let status = StatusCode::from_u16(error.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
    with_headers(status, request_id, xml.finish())
}

/// A successful answer as the JSON xmltodict reads from its XML (see
/// [`xml::XmlTree`]): what LocalStack's developer endpoint answers for
/// `Accept: application/json`.
pub fn success_as_xml_tree(request_id: &str, action: Action, output: &Value) -> Response {
    let mut tree = XmlTree::default();
    xml::answer(&mut tree, request_id, action, output);
    tree_response(StatusCode::OK, request_id, tree.finish())
}

/// An error as the JSON xmltodict reads from its XML.
pub fn error_as_xml_tree(request_id: &str, error: &SqsError) -> Response {
    let mut tree = XmlTree::default();
    xml::error(&mut tree, request_id, error);
    let status = StatusCode::from_u16(error.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
    tree_response(status, request_id, tree.finish())
}

fn tree_response(status: StatusCode, request_id: &str, tree: Value) -> Response {
    let mut response = with_headers(status, request_id, tree.to_string());
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// An XML answer with its request id (SNS's too).
pub(crate) fn with_headers(status: StatusCode, request_id: &str, xml: String) -> Response {
    let mut response = (status, xml).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml"));
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert("x-amzn-requestid", id);
    }
    response
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

    /// A value of `kind` with every member present.
    fn sample(kind: &Kind) -> Value {
        match kind {
            Kind::Text => Value::from("t"),
            Kind::Integer => Value::from(7),
            Kind::Boolean => Value::from(true),
            Kind::List(item) => Value::Array(vec![sample(item)]),
            Kind::Map { of, .. } => serde_json::json!({ "k": sample(of) }),
            Kind::Structure(members) | Kind::Flattened(members) => {
                let mut fields = Map::new();
                Member::visit::<()>(members, &mut |m| {
                    fields.insert(m.json.to_string(), sample(&m.kind));
                    Ok(())
                })
                .unwrap();
                Value::Object(fields)
            }
        }
    }

    /// The form fields AWS's Query serializer writes for `value`.
    fn encode(value: &Value, kind: &Kind, name: &str, form: &mut Vec<String>) {
        match (kind, value) {
            (Kind::List(item), Value::Array(items)) => {
                for (i, each) in items.iter().enumerate() {
                    encode(each, item, &format!("{name}.{}", i + 1), form);
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
                for (i, (entry_key, entry_value)) in map.iter().enumerate() {
                    form.push(format!("{name}.{}.{key}={entry_key}", i + 1));
                    encode(entry_value, of, &format!("{name}.{}.{value_name}", i + 1), form);
                }
            }
            (Kind::Structure(members) | Kind::Flattened(members), Value::Object(fields)) => {
                let mut each = Vec::new();
                Member::visit::<()>(members, &mut |m| {
                    each.push(m);
                    Ok(())
                })
                .unwrap();
                for member in each {
                    let prefix = if name.is_empty() {
                        String::new()
                    } else {
                        format!("{name}.")
                    };
                    encode(
                        &fields[member.json],
                        &member.kind,
                        &format!("{prefix}{}", member.query_name()),
                        form,
                    );
                }
            }
            (_, Value::String(text)) => form.push(format!("{name}={text}")),
            (_, other) => form.push(format!("{name}={other}")),
        }
    }

    /// Each action's table against its Rust shape: every member read from
    /// its Query name lands in the tree under its JSON name, and the tree
    /// fills every field of the action's input (a field missing from the
    /// table would stay None).
    #[test]
    fn every_input_member_folds_from_its_query_name_into_its_field() {
        for &action in Action::ALL {
            let shape = Kind::Structure(action.input_members());
            let expected = sample(&shape);
            let mut form = vec![format!("Action={}", action.name())];
            encode(&expected, &shape, "", &mut form);
            let (parsed_action, tree) = parse(form.join("&").as_bytes(), None, None).unwrap();
            assert_eq!(parsed_action, action);
            assert_eq!(tree, expected, "{action:?}");
            let decoded = crate::api::decoded_debug(action, tree).unwrap();
            assert!(
                !decoded.contains("None"),
                "{action:?}: a field of the input is missing from its table: {decoded}"
            );
        }
    }
}
