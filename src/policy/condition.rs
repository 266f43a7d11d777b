//! A statement's `Condition` block: `{"<operator>": {"<key>": value or
//! [values]}}`, each operator and each key within it required to hold. The
//! operators SQS and SNS policies use: the String, Numeric, Date, Bool,
//! IpAddress, Arn and Null families, with the `IfExists` suffix and the
//! `ForAnyValue:` / `ForAllValues:` prefixes. Keys compare without regard to
//! case, as IAM's do.

use std::collections::HashMap;
use std::net::IpAddr;

use super::{PolicyError, wildcard};

/// The values a request has for the condition keys it carries, keys in
/// lower case (`aws:sourcearn`).
pub type Context = HashMap<String, Vec<String>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    StringEquals,
    StringEqualsIgnoreCase,
    StringLike,
    Numeric(Ordering),
    Date(Ordering),
    Bool,
    IpAddress,
    Arn,
    Null,
}

/// A comparison of a number or a date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ordering {
    Equals,
    LessThan,
    LessThanEquals,
    GreaterThan,
    GreaterThanEquals,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Qualifier {
    Single,
    ForAnyValue,
    ForAllValues,
}

/// One key's test within an operator.
#[derive(Debug, Clone)]
pub struct Condition {
    family: Family,
    negated: bool,
    if_exists: bool,
    qualifier: Qualifier,
    key: String,
    values: Vec<String>,
}

impl Condition {
    /// Reads one operator's block.
    pub fn parse(operator: &str, block: &serde_json::Value) -> Result<Vec<Condition>, PolicyError> {
        let (qualifier, rest) = match operator.split_once(':') {
            Some(("ForAnyValue", rest)) => (Qualifier::ForAnyValue, rest),
            Some(("ForAllValues", rest)) => (Qualifier::ForAllValues, rest),
            Some(_) => return Err(PolicyError::UnknownOperator(operator.to_string())),
            None => (Qualifier::Single, operator),
        };
        let (name, if_exists) = match rest.strip_suffix("IfExists") {
            Some(name) => (name, true),
            None => (rest, false),
        };
        let (family, negated) =
            family(name).ok_or_else(|| PolicyError::UnknownOperator(operator.to_string()))?;
        if if_exists && family == Family::Null {
            return Err(PolicyError::UnknownOperator(operator.to_string()));
        }
        let serde_json::Value::Object(keys) = block else {
            return Err(PolicyError::Syntax(format!(
                "the condition operator {operator} must map keys to values"
            )));
        };
        keys.iter()
            .map(|(key, values)| {
                let values = string_list(values).ok_or_else(|| {
                    PolicyError::Syntax(format!("the condition key {key} must have a value or a list"))
                })?;
                for value in &values {
                    check_value(family, value)
                        .map_err(|why| PolicyError::Syntax(format!("{operator} {key}: {value:?} {why}")))?;
                }
                Ok(Condition {
                    family,
                    negated,
                    if_exists,
                    qualifier,
                    key: key.to_ascii_lowercase(),
                    values,
                })
            })
            .collect()
    }

    /// The condition key it reads (lower case).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether the condition holds for a request with `context`.
    pub fn holds(&self, context: &Context) -> bool {
        let present = context.get(&self.key).filter(|values| !values.is_empty());
        if self.family == Family::Null {
            let wants_absent = self.values.iter().any(|v| v == "true");
            return present.is_none() == wants_absent;
        }
        let Some(given) = present else {
            return match self.qualifier {
                Qualifier::ForAllValues => true,
                Qualifier::ForAnyValue => false,
                Qualifier::Single => self.if_exists || self.negated,
            };
        };
        // A value satisfies the test when it matches one of the policy's
        // values, or, negated, none of them.
        let satisfies = |value: &String| {
            let any = self
                .values
                .iter()
                .any(|wanted| compare(self.family, wanted, value));
            any != self.negated
        };
        // Every value must satisfy it for ForAllValues, and for a negated
        // single-valued test (no value of the request matches any of the
        // policy's); one value is enough otherwise.
        let every = match self.qualifier {
            Qualifier::ForAllValues => true,
            Qualifier::Single => self.negated,
            Qualifier::ForAnyValue => false,
        };
        match every {
            true => given.iter().all(satisfies),
            false => given.iter().any(satisfies),
        }
    }
}

fn family(name: &str) -> Option<(Family, bool)> {
    use Family::*;
    Some(match name {
        "StringEquals" => (StringEquals, false),
        "StringNotEquals" => (StringEquals, true),
        "StringEqualsIgnoreCase" => (StringEqualsIgnoreCase, false),
        "StringNotEqualsIgnoreCase" => (StringEqualsIgnoreCase, true),
        "StringLike" => (StringLike, false),
        "StringNotLike" => (StringLike, true),
        "NumericEquals" => (Numeric(Ordering::Equals), false),
        "NumericNotEquals" => (Numeric(Ordering::Equals), true),
        "NumericLessThan" => (Numeric(Ordering::LessThan), false),
        "NumericLessThanEquals" => (Numeric(Ordering::LessThanEquals), false),
        "NumericGreaterThan" => (Numeric(Ordering::GreaterThan), false),
        "NumericGreaterThanEquals" => (Numeric(Ordering::GreaterThanEquals), false),
        "DateEquals" => (Date(Ordering::Equals), false),
        "DateNotEquals" => (Date(Ordering::Equals), true),
        "DateLessThan" => (Date(Ordering::LessThan), false),
        "DateLessThanEquals" => (Date(Ordering::LessThanEquals), false),
        "DateGreaterThan" => (Date(Ordering::GreaterThan), false),
        "DateGreaterThanEquals" => (Date(Ordering::GreaterThanEquals), false),
        "Bool" => (Bool, false),
        "IpAddress" => (IpAddress, false),
        "NotIpAddress" => (IpAddress, true),
        "ArnEquals" | "ArnLike" => (Arn, false),
        "ArnNotEquals" | "ArnNotLike" => (Arn, true),
        "Null" => (Null, false),
        _ => return None,
    })
}

/// A string, a number or a boolean, or a list of them, as strings.
pub(super) fn string_list(value: &serde_json::Value) -> Option<Vec<String>> {
    let one = |value: &serde_json::Value| match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    match value {
        serde_json::Value::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        serde_json::Value::Array(_) => None,
        other => one(other).map(|v| vec![v]),
    }
}

/// Whether a policy's value can be compared as its operator compares.
fn check_value(family: Family, value: &str) -> Result<(), &'static str> {
    match family {
        Family::Numeric(_) if value.parse::<f64>().is_err() => Err("is not a number"),
        Family::Date(_) if epoch_seconds(value).is_none() => Err("is not an ISO 8601 date or epoch seconds"),
        Family::Bool | Family::Null if value != "true" && value != "false" => Err("is not true or false"),
        Family::IpAddress if cidr(value).is_none() => Err("is not an IP address or CIDR block"),
        _ => Ok(()),
    }
}

fn compare(family: Family, wanted: &str, given: &str) -> bool {
    match family {
        Family::StringEquals => wanted == given,
        Family::StringEqualsIgnoreCase => wanted.to_lowercase() == given.to_lowercase(),
        Family::StringLike => wildcard::matches(wanted, given, false),
        Family::Numeric(order) => match (given.parse::<f64>(), wanted.parse::<f64>()) {
            (Ok(given), Ok(wanted)) => ordered(order, given, wanted),
            _ => false,
        },
        Family::Date(order) => match (epoch_seconds(given), epoch_seconds(wanted)) {
            (Some(given), Some(wanted)) => ordered(order, given, wanted),
            _ => false,
        },
        Family::Bool => wanted.eq_ignore_ascii_case(given),
        Family::IpAddress => match (given.parse::<IpAddr>(), cidr(wanted)) {
            (Ok(address), Some((network, bits))) => in_network(address, network, bits),
            _ => false,
        },
        Family::Arn => arn_matches(wanted, given),
        Family::Null => false,
    }
}

fn ordered(order: Ordering, given: f64, wanted: f64) -> bool {
    match order {
        Ordering::Equals => given == wanted,
        Ordering::LessThan => given < wanted,
        Ordering::LessThanEquals => given <= wanted,
        Ordering::GreaterThan => given > wanted,
        Ordering::GreaterThanEquals => given >= wanted,
    }
}

/// A date as ISO 8601 (RFC 3339) or epoch seconds.
fn epoch_seconds(value: &str) -> Option<f64> {
    if let Ok(seconds) = value.parse::<f64>() {
        return Some(seconds);
    }
    let parsed = time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339).ok()?;
    Some(parsed.unix_timestamp_nanos() as f64 / 1e9)
}

fn cidr(value: &str) -> Option<(IpAddr, u8)> {
    let (address, bits) = match value.split_once('/') {
        Some((address, bits)) => (address.parse::<IpAddr>().ok()?, bits.parse::<u8>().ok()?),
        None => {
            let address = value.parse::<IpAddr>().ok()?;
            (address, if address.is_ipv4() { 32 } else { 128 })
        }
    };
    let max = if address.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((address, bits))
}

fn in_network(address: IpAddr, network: IpAddr, bits: u8) -> bool {
    let (address, network, width) = match (address, network) {
        (IpAddr::V4(a), IpAddr::V4(n)) => (u128::from(u32::from(a)), u128::from(u32::from(n)), 32),
        (IpAddr::V6(a), IpAddr::V6(n)) => (u128::from(a), u128::from(n), 128),
        _ => return false,
    };
    let shift = width - u32::from(bits);
    shift >= width || (address >> shift) == (network >> shift)
}

/// ARNs compare by their six colon-separated parts, each with wildcards
/// (the last part keeps any further colons).
fn arn_matches(pattern: &str, arn: &str) -> bool {
    let pattern: Vec<&str> = pattern.splitn(6, ':').collect();
    let arn: Vec<&str> = arn.splitn(6, ':').collect();
    pattern.len() == arn.len()
        && pattern
            .iter()
            .zip(&arn)
            .all(|(p, a)| wildcard::matches(p, a, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(operator: &str, key: &str, values: serde_json::Value) -> Condition {
        Condition::parse(operator, &serde_json::json!({ key: values }))
            .unwrap()
            .remove(0)
    }

    fn context(pairs: &[(&str, &[&str])]) -> Context {
        pairs
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn the_families_compare_as_iam_does() {
        let source = context(&[("aws:SourceArn", &["arn:aws:sns:us-east-1:111122223333:events"])]);
        assert!(
            condition(
                "ArnEquals",
                "aws:SourceArn",
                "arn:aws:sns:*:111122223333:events".into()
            )
            .holds(&source)
        );
        assert!(!condition("ArnLike", "aws:sourcearn", "arn:aws:sns:*:444455556666:*".into()).holds(&source));
        assert!(
            condition(
                "ArnNotLike",
                "aws:SourceArn",
                "arn:aws:sns:*:444455556666:*".into()
            )
            .holds(&source)
        );
        let ip = context(&[("aws:SourceIp", &["10.1.2.3"])]);
        assert!(condition("IpAddress", "aws:SourceIp", "10.0.0.0/8".into()).holds(&ip));
        assert!(
            condition(
                "NotIpAddress",
                "aws:SourceIp",
                serde_json::json!(["192.168.0.0/16"])
            )
            .holds(&ip)
        );
        let now = context(&[("aws:CurrentTime", &["2026-12-04T10:00:00Z"])]);
        assert!(condition("DateLessThan", "aws:CurrentTime", "2027-01-01T00:00:00Z".into()).holds(&now));
        assert!(
            !condition(
                "DateGreaterThan",
                "aws:CurrentTime",
                "2027-01-01T00:00:00Z".into()
            )
            .holds(&now)
        );
        let secure = context(&[("aws:SecureTransport", &["false"])]);
        assert!(!condition("Bool", "aws:SecureTransport", "true".into()).holds(&secure));
        assert!(condition("NumericLessThan", "n", 10.into()).holds(&context(&[("n", &["9.5"])])));
    }

    #[test]
    fn absent_keys_if_exists_null_and_sets() {
        let empty = Context::new();
        assert!(!condition("StringEquals", "aws:SourceAccount", "1".into()).holds(&empty));
        assert!(condition("StringNotEquals", "aws:SourceAccount", "1".into()).holds(&empty));
        assert!(condition("StringEqualsIfExists", "aws:SourceAccount", "1".into()).holds(&empty));
        assert!(condition("Null", "aws:SourceAccount", "true".into()).holds(&empty));
        assert!(!condition("Null", "aws:SourceAccount", "false".into()).holds(&empty));
        let tags = context(&[("aws:TagKeys", &["team", "cost"])]);
        assert!(condition("ForAnyValue:StringEquals", "aws:TagKeys", "cost".into()).holds(&tags));
        assert!(!condition("ForAllValues:StringEquals", "aws:TagKeys", "cost".into()).holds(&tags));
        assert!(
            condition(
                "ForAllValues:StringLike",
                "aws:TagKeys",
                serde_json::json!(["t*", "c*"])
            )
            .holds(&tags)
        );
        assert!(condition("ForAllValues:StringEquals", "aws:TagKeys", "x".into()).holds(&empty));
    }

    #[test]
    fn malformed_conditions_are_refused() {
        let refused = |operator: &str, value: serde_json::Value| {
            Condition::parse(operator, &serde_json::json!({ "k": value }))
                .unwrap_err()
                .to_string()
        };
        assert!(refused("StringEqualz", "x".into()).contains("StringEqualz"));
        assert!(refused("NullIfExists", "true".into()).contains("NullIfExists"));
        assert!(refused("NumericEquals", "ten".into()).contains("not a number"));
        assert!(refused("DateLessThan", "yesterday".into()).contains("not an ISO 8601"));
        assert!(refused("IpAddress", "10.0.0.0/33".into()).contains("CIDR"));
        assert!(refused("Bool", "yes".into()).contains("true or false"));
        assert!(refused("StringEquals", serde_json::json!({"a": 1})).contains("value or a list"));
    }
}
