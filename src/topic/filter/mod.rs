//! Subscription filter policies: read, checked with AWS's errors and
//! limits, and compiled once when a subscription sets one, so that a
//! Publish only walks the compiled form (`matching.rs`).
//!
//! A policy is a JSON object. Each key holds either an array of conditions,
//! any of which may match, or (in the body scope) an object: the same rules
//! one level down. `"$or"` holds an array of policies, one of which must
//! match. Every key at one level must match.

pub mod matching;

pub use self::matching::in_network;

use std::net::IpAddr;

use serde_json::{Map, Value};

use super::error::{Result, SnsError};

/// What a filter policy is applied to (`FilterPolicyScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    MessageAttributes,
    MessageBody,
}

impl Scope {
    pub fn parse(text: &str) -> Result<Scope> {
        match text {
            "MessageAttributes" => Ok(Scope::MessageAttributes),
            "MessageBody" => Ok(Scope::MessageBody),
            other => Err(SnsError::parameter(format!(
                "FilterPolicyScope: Invalid value [{other}]. Please use either MessageBody or MessageAttributes"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::MessageAttributes => "MessageAttributes",
            Scope::MessageBody => "MessageBody",
        }
    }
}

/// AWS's limits: at most five keys in a policy, and at most 150
/// combinations of values (the product of each key's number of values,
/// summed over `$or` branches).
const MAX_KEYS: usize = 5;
const MAX_COMBINATIONS: usize = 150;
/// AWS's bound on a filter policy's text: 256 KB ("Filter policy
/// constraints in Amazon SNS").
pub const MAX_BYTES: usize = 256 * 1024;
/// How deep policies may nest (objects and `$or`): the JSON a client sends
/// is already bounded by the attribute's size, this bounds the walk.
const MAX_DEPTH: usize = 16;

/// A compiled filter policy.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterPolicy {
    root: Clause,
    nested: bool,
}

/// A level of a policy: every key test must hold, and one branch of each
/// `$or`.
#[derive(Debug, Clone, PartialEq, Default)]
struct Clause {
    keys: Vec<(Vec<String>, Vec<Condition>)>,
    any_of: Vec<Vec<Clause>>,
}

/// One condition on a key's values; it holds when one of the values
/// satisfies it (or, for `exists`, when the key is there or not).
#[derive(Debug, Clone, PartialEq)]
enum Condition {
    Text(String),
    Number(f64),
    Bool(bool),
    Null,
    Prefix(String),
    Suffix(String),
    EqualsIgnoreCase(String),
    Wildcard(String),
    AnythingBut(Vec<Literal>),
    AnythingButPrefix(String),
    Numeric(Vec<(Comparison, f64)>),
    Exists(bool),
    Cidr(IpAddr, u8),
}

#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Text(String),
    Number(f64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Comparison {
    Less,
    LessOrEqual,
    Equal,
    GreaterOrEqual,
    Greater,
}

/// Refuses a filter policy longer than AWS allows, before it is read.
/// (Set by a client or an import, not at a load: what a store holds was
/// accepted once and is loaded as it is.)
pub fn check_size(text: &str, member: &str) -> Result<()> {
    match text.len() {
        0..=MAX_BYTES => Ok(()),
        length => Err(SnsError::parameter(format!(
            "{member}: Filter policy is too large: {length} bytes, the most is {MAX_BYTES} (256 KB)"
        ))),
    }
}

impl FilterPolicy {
    /// Reads and checks a policy for `scope`. `member` is how AWS names it
    /// in the error: "FilterPolicy" (SetSubscriptionAttributes) or
    /// "Attributes Reason: FilterPolicy" (Subscribe).
    pub fn compile(text: &str, scope: Scope, member: &str) -> Result<FilterPolicy> {
        let fail = |reason: String| SnsError::parameter(format!("{member}: {reason}"));
        let value: Value =
            serde_json::from_str(text).map_err(|error| fail(format!("failed to parse JSON. {error}")))?;
        let Value::Object(object) = value else {
            return Err(fail("Filter policy must be a JSON object".into()));
        };
        let mut nested = false;
        let root = clause(&object, &mut Vec::new(), 0, &mut nested).map_err(|invalid| fail(invalid.0))?;
        if nested && scope == Scope::MessageAttributes {
            return Err(SnsError::parameter(
                "Filter policy scope MessageAttributes does not support nested filter policy",
            ));
        }
        if root.max_keys() > MAX_KEYS {
            return Err(fail(format!(
                "Filter policy can not have more than {MAX_KEYS} keys"
            )));
        }
        if root.combinations() > MAX_COMBINATIONS {
            return Err(fail("Filter policy is too complex".into()));
        }
        Ok(FilterPolicy { root, nested })
    }

    /// Whether the policy reaches below the top level (only the body scope
    /// allows that).
    pub fn is_nested(&self) -> bool {
        self.nested
    }
}

impl Clause {
    /// Keys as AWS counts them: for a nested policy, only the parent keys.
    fn max_keys(&self) -> usize {
        let mut parents: Vec<&str> = self
            .keys
            .iter()
            .filter_map(|(path, _)| path.first().map(String::as_str))
            .collect();
        parents.sort_unstable();
        parents.dedup();
        let own = parents.len();
        let branches: usize = self
            .any_of
            .iter()
            .map(|branches| branches.iter().map(Clause::max_keys).max().unwrap_or(0))
            .sum();
        own + branches
    }

    fn combinations(&self) -> usize {
        // AWS weighs a nested key's values by its depth: `a.b: [x, y, z]`
        // counts 2 × 3.
        let own = self.keys.iter().fold(1usize, |product, (path, conditions)| {
            product.saturating_mul(path.len().saturating_mul(conditions.len()))
        });
        self.any_of.iter().fold(own, |product, branches| {
            let sum = branches
                .iter()
                .fold(0usize, |sum, branch| sum.saturating_add(branch.combinations()));
            product.saturating_mul(sum)
        })
    }
}

/// Why AWS refuses a filter policy, in its words (the reason its
/// InvalidParameter message gives after the member's name).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Invalid(String);

impl From<&str> for Invalid {
    fn from(reason: &str) -> Invalid {
        Invalid(reason.to_string())
    }
}

impl From<String> for Invalid {
    fn from(reason: String) -> Invalid {
        Invalid(reason)
    }
}

/// A part of a policy read, or why it is refused.
type Checked<T> = std::result::Result<T, Invalid>;

fn clause(
    object: &Map<String, Value>,
    path: &mut Vec<String>,
    depth: usize,
    nested: &mut bool,
) -> Checked<Clause> {
    if depth > MAX_DEPTH {
        return Err("Filter policy is too complex".into());
    }
    let mut level = Clause::default();
    for (key, value) in object {
        match value {
            Value::Array(branches) if key == "$or" => {
                let mut alternatives = Vec::with_capacity(branches.len());
                for branch in branches {
                    let Value::Object(branch) = branch else {
                        return Err(format!("\"{key}\" must be an object or an array").into());
                    };
                    alternatives.push(clause(branch, path, depth + 1, nested)?);
                }
                if alternatives.len() < 2 {
                    return Err("Or operator must contain at least two elements".into());
                }
                level.any_of.push(alternatives);
            }
            Value::Array(items) => {
                if items.is_empty() {
                    return Err("Empty arrays are not allowed".into());
                }
                let mut full = path.clone();
                full.push(key.clone());
                let conditions = items.iter().map(condition).collect::<Checked<_>>()?;
                level.keys.push((full, conditions));
            }
            Value::Object(inner) => {
                *nested = true;
                path.push(key.clone());
                let below = clause(inner, path, depth + 1, nested)?;
                path.pop();
                level.keys.extend(below.keys);
                level.any_of.extend(below.any_of);
            }
            _ => return Err(format!("\"{key}\" must be an object or an array").into()),
        }
    }
    Ok(level)
}

fn condition(item: &Value) -> Checked<Condition> {
    match item {
        Value::String(text) => Ok(Condition::Text(text.clone())),
        Value::Number(number) => Ok(Condition::Number(number.as_f64().unwrap_or(f64::NAN))),
        Value::Bool(value) => Ok(Condition::Bool(*value)),
        Value::Null => Ok(Condition::Null),
        Value::Array(_) => Err("Match value must be String, number, true, false, or null".into()),
        Value::Object(operator) => {
            let mut entries = operator.iter();
            let (Some((name, value)), None) = (entries.next(), entries.next()) else {
                return Err(match operator.len() {
                    0 => "Empty objects are not allowed".into(),
                    _ => "Only one key allowed in match expression".into(),
                });
            };
            operator_condition(name, value)
        }
    }
}

fn operator_condition(name: &str, value: &Value) -> Checked<Condition> {
    let text = |what: &str| match value {
        Value::String(text) => Ok(text.clone()),
        _ => Err(format!("{what} match pattern must be a string").into()),
    };
    match name {
        "prefix" => text("prefix").map(Condition::Prefix),
        "suffix" => text("suffix").map(Condition::Suffix),
        "equals-ignore-case" => text("equals-ignore-case").map(Condition::EqualsIgnoreCase),
        "wildcard" => text("wildcard").map(Condition::Wildcard),
        "exists" => match value {
            Value::Bool(exists) => Ok(Condition::Exists(*exists)),
            _ => Err("exists match pattern must be either true or false.".into()),
        },
        "anything-but" => anything_but(value),
        "numeric" => numeric(value).map(Condition::Numeric),
        "cidr" => cidr(&text("prefix")?),
        other => Err(format!("Unrecognized match type {other}").into()),
    }
}

fn anything_but(value: &Value) -> Checked<Condition> {
    let literal = |item: &Value| match item {
        Value::String(text) => Ok(Literal::Text(text.clone())),
        Value::Number(number) => Ok(Literal::Number(number.as_f64().unwrap_or(f64::NAN))),
        _ => Err(Invalid::from(
            "Inside anything but list, start|null|boolean is not supported.",
        )),
    };
    match value {
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(literal)
            .collect::<Checked<_>>()
            .map(Condition::AnythingBut),
        Value::Object(operator) => {
            let mut entries = operator.iter();
            match (entries.next(), entries.next()) {
                (Some((name, inner)), None) if name == "prefix" => match inner {
                    Value::String(prefix) if !prefix.is_empty() => {
                        Ok(Condition::AnythingButPrefix(prefix.clone()))
                    }
                    Value::String(_) => Err("Null prefix/suffix not allowed".into()),
                    _ => Err("prefix match pattern must be a string".into()),
                },
                (Some((name, _)), None) => Err(format!("Unsupported anything-but pattern: {name}").into()),
                _ => Err("Only one key allowed in match expression".into()),
            }
        }
        other => literal(other).map(|literal| Condition::AnythingBut(vec![literal])),
    }
}

fn numeric(value: &Value) -> Checked<Vec<(Comparison, f64)>> {
    let Value::Array(items) = value else {
        return Err("Value of numeric must be an array.".into());
    };
    let operator = |index: usize| -> Checked<Comparison> {
        match items.get(index) {
            None => Err("Invalid member in numeric match: ]".into()),
            Some(Value::String(op)) => match op.as_str() {
                "<" => Ok(Comparison::Less),
                "<=" => Ok(Comparison::LessOrEqual),
                "=" => Ok(Comparison::Equal),
                ">=" => Ok(Comparison::GreaterOrEqual),
                ">" => Ok(Comparison::Greater),
                other => Err(format!("Unrecognized numeric range operator: {other}").into()),
            },
            Some(other) => Err(format!("Invalid member in numeric match: {other}").into()),
        }
    };
    let number = |index: usize, op: Comparison| -> Checked<f64> {
        match items.get(index) {
            Some(Value::Number(number)) => Ok(number.as_f64().unwrap_or(f64::NAN)),
            _ => Err(format!("Value of {} must be numeric", op.word()).into()),
        }
    };
    let first = operator(0)?;
    let bottom = number(1, first)?;
    let mut terms = vec![(first, bottom)];
    if items.len() == 2 {
        return Ok(terms);
    }
    match items.get(2) {
        Some(Value::String(_)) if first == Comparison::Equal || first.is_upper() => {
            Err("Too many elements in numeric expression".into())
        }
        Some(Value::String(op)) => {
            let second = match op.as_str() {
                "<" => Comparison::Less,
                "<=" => Comparison::LessOrEqual,
                other => return Err(format!("Bad numeric range operator: {other}").into()),
            };
            let top = number(3, second)?;
            if items.len() > 4 {
                return Err("Too many terms in numeric range expression".into());
            }
            if bottom >= top {
                return Err("Bottom must be less than top".into());
            }
            terms.push((second, top));
            Ok(terms)
        }
        Some(other) => Err(format!("Bad value in numeric range: {other}").into()),
        None => Ok(terms),
    }
}

impl Comparison {
    fn word(self) -> &'static str {
        match self {
            Comparison::Less => "<",
            Comparison::LessOrEqual => "<=",
            Comparison::Equal => "equals",
            Comparison::GreaterOrEqual => ">=",
            Comparison::Greater => ">",
        }
    }

    fn is_upper(self) -> bool {
        matches!(self, Comparison::Less | Comparison::LessOrEqual)
    }

    fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Comparison::Less => value < bound,
            Comparison::LessOrEqual => value <= bound,
            Comparison::Equal => value == bound,
            Comparison::GreaterOrEqual => value >= bound,
            Comparison::Greater => value > bound,
        }
    }
}

fn cidr(text: &str) -> Checked<Condition> {
    let Some((address, bits)) = text.split_once('/') else {
        return Err("Malformed CIDR, one '/' required".into());
    };
    let bits: u8 = bits
        .parse()
        .map_err(|_| Invalid::from("Malformed CIDR, mask bits must be an integer"))?;
    let address: IpAddr = address
        .parse()
        .map_err(|_| Invalid(format!("Nonstandard IP address: {address}")))?;
    let max = if address.is_ipv4() { 32 } else { 128 };
    if bits > max {
        return Err(format!("Malformed CIDR, mask bits must be between 0 and {max}").into());
    }
    Ok(Condition::Cidr(address, bits))
}

#[cfg(test)]
mod tests;
