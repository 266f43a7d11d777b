//! Whether a message passes a compiled filter policy: the values at each
//! key the policy names, read from the message attributes or from the body
//! (arrays along the way stand for each of their elements), against the
//! key's conditions.

use std::borrow::Cow;
use std::net::IpAddr;

use serde_json::Value;

use super::{Clause, Condition, FilterPolicy, Literal};
use crate::queue::{AttributeValue, MessageAttributes};

/// One value found at a key.
#[derive(Debug, PartialEq)]
enum Leaf<'a> {
    Text(Cow<'a, str>),
    Number(f64),
    Bool(bool),
    Null,
}

/// What a message offers the policy: its attributes, or its body read as
/// JSON once (`None` when it is not JSON, which no body policy matches).
pub enum Subject<'a> {
    Attributes(&'a MessageAttributes),
    Body(Option<&'a Value>),
}

impl FilterPolicy {
    pub fn matches(&self, subject: &Subject<'_>) -> bool {
        if let Subject::Body(None) = subject {
            return false;
        }
        self.root.matches(subject)
    }
}

impl Clause {
    fn matches(&self, subject: &Subject<'_>) -> bool {
        self.keys.iter().all(|(path, conditions)| {
            let found = values(subject, path);
            conditions
                .iter()
                .any(|condition| condition.holds(found.as_deref()))
        }) && self
            .any_of
            .iter()
            .all(|branches| branches.iter().any(|branch| branch.matches(subject)))
    }
}

/// The values at `path`, or `None` when the key is not there.
fn values<'a>(subject: &Subject<'a>, path: &[String]) -> Option<Vec<Leaf<'a>>> {
    match subject {
        Subject::Attributes(attributes) => {
            let attribute = attributes.get(path.first()?)?;
            let mut leaves = Vec::new();
            if let AttributeValue::String(text) = &attribute.value {
                let kind = attribute.data_type.split('.').next().unwrap_or_default();
                match (kind, attribute.data_type.as_str()) {
                    (_, "String.Array") => match serde_json::from_str::<Value>(text) {
                        Ok(Value::Array(items)) => {
                            items.into_iter().for_each(|item| owned_leaf(item, &mut leaves))
                        }
                        _ => leaves.push(Leaf::Text(Cow::Borrowed(text))),
                    },
                    ("Number", _) => leaves.extend(text.trim().parse::<f64>().ok().map(Leaf::Number)),
                    _ => leaves.push(Leaf::Text(Cow::Borrowed(text))),
                }
            }
            Some(leaves)
        }
        Subject::Body(Some(body)) => {
            // AWS reads a key's dots as nesting, whichever way the body
            // nests: `a.b` names {"a": {"b": …}} and {"a.b": …} alike.
            let dotted = path.join(".");
            let mut found = Vec::new();
            collect(body, &dotted, &mut found);
            if found.is_empty() {
                return None;
            }
            let mut leaves = Vec::new();
            for value in found {
                leaf(value, &mut leaves);
            }
            Some(leaves)
        }
        Subject::Body(None) => None,
    }
}

/// The values at the dotted `path` in `value`, looking through arrays and
/// matching a member whose own name holds dots as well as nested members.
/// The walk goes no deeper than the path has segments.
fn collect<'a>(value: &'a Value, path: &str, into: &mut Vec<&'a Value>) {
    match value {
        Value::Object(object) => {
            for (key, member) in object {
                if key == path {
                    into.push(member);
                } else if let Some(rest) = path
                    .strip_prefix(key.as_str())
                    .and_then(|rest| rest.strip_prefix('.'))
                {
                    collect(member, rest, into);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect(item, path, into)),
        _ => {}
    }
}

fn leaf<'a>(value: &'a Value, into: &mut Vec<Leaf<'a>>) {
    match value {
        Value::String(text) => into.push(Leaf::Text(Cow::Borrowed(text))),
        Value::Number(number) => into.extend(number.as_f64().map(Leaf::Number)),
        Value::Bool(value) => into.push(Leaf::Bool(*value)),
        Value::Null => into.push(Leaf::Null),
        Value::Array(items) => items.iter().for_each(|item| leaf(item, into)),
        Value::Object(_) => {}
    }
}

/// An element of a `String.Array` attribute (parsed for the match, so
/// its text is owned).
fn owned_leaf(item: Value, into: &mut Vec<Leaf<'_>>) {
    match item {
        Value::String(text) => into.push(Leaf::Text(Cow::Owned(text))),
        Value::Number(number) => into.extend(number.as_f64().map(Leaf::Number)),
        Value::Bool(value) => into.push(Leaf::Bool(value)),
        Value::Null => into.push(Leaf::Null),
        Value::Array(_) | Value::Object(_) => {}
    }
}

impl Condition {
    fn holds(&self, found: Option<&[Leaf<'_>]>) -> bool {
        let Some(leaves) = found else {
            return matches!(self, Condition::Exists(false));
        };
        let any_text = |test: &dyn Fn(&str) -> bool| {
            leaves
                .iter()
                .any(|leaf| matches!(leaf, Leaf::Text(text) if test(text.as_ref())))
        };
        match self {
            Condition::Exists(exists) => *exists,
            Condition::Text(expected) => any_text(&|text| text == expected),
            Condition::Number(expected) => leaves.contains(&Leaf::Number(*expected)),
            Condition::Bool(expected) => leaves.contains(&Leaf::Bool(*expected)),
            Condition::Null => leaves.contains(&Leaf::Null),
            Condition::Prefix(prefix) => any_text(&|text| text.starts_with(prefix.as_str())),
            Condition::Suffix(suffix) => any_text(&|text| text.ends_with(suffix.as_str())),
            Condition::EqualsIgnoreCase(expected) => {
                any_text(&|text| text.to_lowercase() == expected.to_lowercase())
            }
            Condition::Wildcard(pattern) => any_text(&|text| wildcard(pattern.as_bytes(), text.as_bytes())),
            Condition::AnythingBut(excluded) => leaves.iter().any(|leaf| {
                !excluded.iter().any(|literal| match (literal, leaf) {
                    (Literal::Text(a), Leaf::Text(b)) => a.as_str() == b.as_ref(),
                    (Literal::Number(a), Leaf::Number(b)) => a == b,
                    _ => false,
                })
            }),
            Condition::AnythingButPrefix(prefix) => any_text(&|text| !text.starts_with(prefix.as_str())),
            Condition::Numeric(terms) => leaves.iter().any(|leaf| match leaf {
                Leaf::Number(value) => terms.iter().all(|(op, bound)| op.holds(*value, *bound)),
                _ => false,
            }),
            Condition::Cidr(network, bits) => any_text(&|text| {
                text.parse::<IpAddr>()
                    .is_ok_and(|address| in_network(address, *network, *bits))
            }),
        }
    }
}

/// Whether `address` is in the network `network/bits`.
pub fn in_network(address: IpAddr, network: IpAddr, bits: u8) -> bool {
    match (address, network) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// `*` stands for any run of characters; everything else for itself
/// (`crate::wildcard`'s walk: linear in practice, never recursive).
pub(super) fn wildcard(pattern: &[u8], text: &[u8]) -> bool {
    crate::wildcard::matches(pattern, text, b'*', None, |a, b| a == b)
}
