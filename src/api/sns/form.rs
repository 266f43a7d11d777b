//! What an SNS action reads and answers, apart from how they are written
//! on the wire (`protocol::sns` reads the one and writes the other).
//!
//! SNS's forms nest differently from SQS's (`Attributes.entry.1.key`,
//! `Tags.member.1.Key`, `MessageAttributes.entry.1.Value.DataType`), so the
//! form is kept flat ([`Form`]) and each action reads its members by name;
//! answers are a small tree ([`Answer`]).

use std::collections::BTreeMap;

use crate::topic::SnsError;

/// A request's parameters, by name.
pub struct Form {
    fields: BTreeMap<String, String>,
}

impl Form {
    /// A form of fields already read (the request's, or a batch entry's).
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
}
