//! SNS's wire format: the Query protocol (form-encoded `Action=…` requests,
//! what every AWS SDK and the CLI send for SNS) answered with XML in the
//! `http://sns.amazonaws.com/doc/2010-03-31/` namespace.
//!
//! SNS's forms nest differently from SQS's (`Attributes.entry.1.key`,
//! `Tags.member.1.Key`, `MessageAttributes.entry.1.Value.DataType`), so the
//! form is kept flat ([`Form`]) and each action reads its members by name;
//! answers are a small tree ([`Answer`]) written as AWS writes them.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::response::Response;

use super::query;
use super::xml::escape;
use crate::topic::SnsError;

const NAMESPACE: &str = "http://sns.amazonaws.com/doc/2010-03-31/";

/// A request's parameters, by name.
pub struct Form {
    fields: BTreeMap<String, String>,
}

impl Form {
    /// Reads a form body and the URL's query string (at most 2,000
    /// parameters, as the SQS Query protocol).
    pub fn parse(body: &[u8], url_query: Option<&str>) -> Result<Form, SnsError> {
        let pairs = query::parameters(body, url_query)?;
        Ok(Form {
            fields: pairs.into_iter().collect(),
        })
    }

    /// A form of fields already read (a batch entry's).
    pub fn from_fields(fields: BTreeMap<String, String>) -> Form {
        Form { fields }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// A member the model requires: AWS's ValidationError without it.
    pub fn required(&self, name: &str) -> Result<&str, SnsError> {
        self.get(name)
            .ok_or_else(|| SnsError::missing(&lower_first(name)))
    }

    /// A list: `{prefix}.member.1`, `.2`, … in number order.
    pub fn list(&self, prefix: &str) -> Vec<String> {
        self.numbered(&format!("{prefix}.member."))
            .into_iter()
            .filter(|(_, rest, _)| rest.is_empty())
            .map(|(_, _, value)| value.to_string())
            .collect()
    }

    /// A list of structures: for each `{prefix}.member.N`, its fields by
    /// name (`Tags.member.1.Key` → `{"Key": …}`), in number order.
    pub fn structures(&self, prefix: &str) -> Vec<BTreeMap<String, String>> {
        let mut by_number: BTreeMap<u32, BTreeMap<String, String>> = BTreeMap::new();
        for (number, rest, value) in self.numbered(&format!("{prefix}.member.")) {
            if let Some(field) = rest.strip_prefix('.') {
                by_number
                    .entry(number)
                    .or_default()
                    .insert(field.to_string(), value.to_string());
            }
        }
        by_number.into_values().collect()
    }

    /// A map: `{prefix}.entry.N.key` and `.value` (or, for structured
    /// values, `.Value.<Field>`): each key with its value's fields (the
    /// plain value under `""`). A repeated key keeps its last entry.
    pub fn map(&self, prefix: &str) -> Vec<(String, BTreeMap<String, String>)> {
        let mut entries: BTreeMap<u32, (Option<String>, BTreeMap<String, String>)> = BTreeMap::new();
        for (number, rest, value) in self.numbered(&format!("{prefix}.entry.")) {
            let entry = entries.entry(number).or_default();
            match rest {
                ".key" | ".Name" => entry.0 = Some(value.to_string()),
                ".value" => {
                    entry.1.insert(String::new(), value.to_string());
                }
                other => {
                    if let Some(field) = other.strip_prefix(".Value.") {
                        entry.1.insert(field.to_string(), value.to_string());
                    }
                }
            }
        }
        entries
            .into_values()
            .filter_map(|(key, value)| Some((key?, value)))
            .collect()
    }

    /// Whether any parameter starts with `prefix` (a member given empty).
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.fields.keys().any(|name| name.starts_with(prefix))
    }

    /// `{prefix}N{rest}` parameters as (N, rest, value).
    fn numbered<'a>(&'a self, prefix: &str) -> Vec<(u32, &'a str, &'a str)> {
        self.fields
            .range(prefix.to_string()..)
            .take_while(|(name, _)| name.starts_with(prefix))
            .filter_map(|(name, value)| {
                let tail = &name[prefix.len()..];
                let end = tail.find('.').unwrap_or(tail.len());
                let number: u32 = tail[..end].parse().ok()?;
                Some((number, &tail[end..], value.as_str()))
            })
            .collect()
    }
}

/// An SNS member name as AWS's validation messages write it.
fn lower_first(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// An action's result, as its XML is written.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Text(String),
    /// A structure: its members in order.
    Fields(Vec<(&'static str, Answer)>),
    /// A list: each item a `<member>`.
    List(Vec<Answer>),
    /// A map: `<entry><key>…</key><value>…</value></entry>` each.
    Map(Vec<(String, String)>),
}

impl Answer {
    pub fn text(value: impl Into<String>) -> Answer {
        Answer::Text(value.into())
    }

    fn write(&self, out: &mut String) {
        match self {
            Answer::Text(text) => out.push_str(&escape(text)),
            Answer::Fields(fields) => {
                for (name, value) in fields {
                    out.push_str(&format!("<{name}>"));
                    value.write(out);
                    out.push_str(&format!("</{name}>"));
                }
            }
            Answer::List(items) => {
                for item in items {
                    out.push_str("<member>");
                    item.write(out);
                    out.push_str("</member>");
                }
            }
            Answer::Map(entries) => {
                for (key, value) in entries {
                    out.push_str("<entry><key>");
                    out.push_str(&escape(key));
                    out.push_str("</key><value>");
                    out.push_str(&escape(value));
                    out.push_str("</value></entry>");
                }
            }
        }
    }
}

/// A successful answer: `<{Action}Response>` with the result (when the
/// action has one) and the request id.
pub fn success(action: &str, request_id: &str, result: Option<&Answer>) -> Response {
    let mut xml = format!("<{action}Response xmlns=\"{NAMESPACE}\">");
    if let Some(result) = result {
        xml.push_str(&format!("<{action}Result>"));
        result.write(&mut xml);
        xml.push_str(&format!("</{action}Result>"));
    }
    xml.push_str(&format!(
        "<ResponseMetadata><RequestId>{request_id}</RequestId></ResponseMetadata></{action}Response>"
    ));
    query::with_headers(StatusCode::OK, request_id, xml)
}

/// An error answer, as SNS writes them.
pub fn error(request_id: &str, error: &SnsError) -> Response {
    let kind = if error.is_sender_fault() {
        "Sender"
    } else {
        "Receiver"
    };
    let xml = format!(
        "<ErrorResponse xmlns=\"{NAMESPACE}\"><Error><Type>{kind}</Type><Code>{}</Code><Message>{}</Message></Error><RequestId>{request_id}</RequestId></ErrorResponse>",
        escape(error.code),
        escape(&error.message)
    );
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_REQUEST);
    query::with_headers(status, request_id, xml)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_structures_and_maps_are_read_in_number_order() {
        let body = b"Action=X&AttributeNames.member.2=b&AttributeNames.member.1=a&\
            Tags.member.1.Key=k&Tags.member.1.Value=v&\
            Attributes.entry.2.key=B&Attributes.entry.2.value=2&Attributes.entry.1.key=A&Attributes.entry.1.value=1&\
            MessageAttributes.entry.1.Name=n&MessageAttributes.entry.1.Value.DataType=String&MessageAttributes.entry.1.Value.StringValue=s";
        let form = Form::parse(body, None).unwrap();
        assert_eq!(form.list("AttributeNames"), vec!["a", "b"]);
        assert_eq!(form.structures("Tags")[0]["Value"], "v");
        let map = form.map("Attributes");
        assert_eq!((map[0].0.as_str(), map[0].1[""].as_str()), ("A", "1"));
        let attributes = form.map("MessageAttributes");
        assert_eq!(attributes[0].1["StringValue"], "s");
        let missing = form.required("TopicArn").unwrap_err().message;
        assert!(missing.contains("'topicArn'"), "{missing}");
    }

    #[test]
    fn answers_are_written_as_aws_writes_them() {
        let answer = Answer::Fields(vec![
            (
                "Topics",
                Answer::List(vec![Answer::Fields(vec![("TopicArn", Answer::text("a<b"))])]),
            ),
            ("Attributes", Answer::Map(vec![("k".into(), "v".into())])),
        ]);
        let mut xml = String::new();
        answer.write(&mut xml);
        assert_eq!(
            xml,
            "<Topics><member><TopicArn>a&lt;b</TopicArn></member></Topics><Attributes><entry><key>k</key><value>v</value></entry></Attributes>"
        );
    }
}
