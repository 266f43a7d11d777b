//! Injected faults for test suites (`--control-api`), so that a consumer's
//! retry and duplicate handling runs as it would against AWS on a bad day.
//! `POST /_ssq/faults` adds rules, `GET` lists them, `DELETE` removes them:
//!
//! - `{"action": "ReceiveMessage", "queue": "orders", "error": "ServiceUnavailable", "probability": 0.5, "count": 10}`
//!   answers matching calls with that error, rendered as every error is for
//!   the request's protocol (status, code, `x-amzn-query-error`), so SDKs
//!   retry as they would;
//! - `{"action": "SendMessage", "latency_ms": 300}` delays them first;
//! - `{"action": "ReceiveMessage", "duplicate": true}` delivers a message a
//!   receive returned once more: it is visible again at once, as an
//!   at-least-once delivery may be.
//!
//! `action` and `queue` (a queue's name) are optional: a rule without them
//! matches every call. `probability` (default 1) is each matching call's
//! chance; `count` (default: no end) how many times the rule acts before it
//! is gone. The first rule that matches and acts decides.

use std::sync::Mutex;
use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::api::Action;
use crate::error::{ErrorCode, SqsError};

/// The errors a rule may inject: those an SQS client meets from a healthy
/// request on a bad day.
const INJECTABLE: [ErrorCode; 3] = [
    ErrorCode::ServiceUnavailable,
    ErrorCode::InternalError,
    ErrorCode::OverLimit,
];

/// A rule as the control API takes and lists it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// How many more times it acts; none: every time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

/// What a rule does to one call.
#[derive(Debug, Default)]
pub struct Fault {
    pub latency: Duration,
    pub error: Option<SqsError>,
    pub duplicate: bool,
}

/// The rules in force.
#[derive(Default)]
pub struct Faults {
    rules: Mutex<Vec<Checked>>,
}

struct Checked {
    rule: Rule,
    action: Option<Action>,
    error: Option<ErrorCode>,
}

/// The most rules in force at once. A test suite sets a few at a time;
/// every SQS call is matched against them under one lock, so their number
/// (and each rule's size, see [`check`]) is bounded.
pub const MAX_RULES: usize = 100;

/// The longest queue name a rule may give: a queue key's (a region, a
/// slash and an 80-character name).
const MAX_QUEUE_BYTES: usize = 128;

impl Faults {
    /// Adds `rules`, all or none; returns how many are in force.
    pub fn add(&self, rules: Vec<Rule>) -> Result<usize, SqsError> {
        if rules.len() > MAX_RULES {
            return Err(too_many(0, rules.len()));
        }
        let checked = rules.into_iter().map(check).collect::<Result<Vec<_>, _>>()?;
        let mut in_force = self.lock();
        if in_force.len() + checked.len() > MAX_RULES {
            return Err(too_many(in_force.len(), checked.len()));
        }
        in_force.extend(checked);
        Ok(in_force.len())
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    pub fn list(&self) -> Vec<Rule> {
        self.lock().iter().map(|checked| checked.rule.clone()).collect()
    }

    /// The fault for a call of `action` on `queue`, if a rule acts on it.
    pub fn take(&self, action: Action, queue: Option<&str>) -> Option<Fault> {
        let mut rules = self.lock();
        let at = rules.iter().position(|checked| {
            checked.action.is_none_or(|a| a == action)
                && checked.rule.queue.as_deref().is_none_or(|q| Some(q) == queue)
                && rand::thread_rng().gen_bool(checked.rule.probability.unwrap_or(1.0))
        })?;
        let checked = &mut rules[at];
        let fault = Fault {
            latency: Duration::from_millis(checked.rule.latency_ms.unwrap_or(0)),
            error: checked.error.map(injected),
            duplicate: checked.rule.duplicate,
        };
        if let Some(count) = &mut checked.rule.count {
            *count -= 1;
            if *count == 0 {
                rules.remove(at);
            }
        }
        Some(fault)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Checked>> {
        self.rules.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn too_many(in_force: usize, adding: usize) -> SqsError {
    SqsError::invalid_parameter(format!(
        "At most {MAX_RULES} fault rules are in force at once: {in_force} are, and this adds {adding}. \
         Remove them with DELETE /_ssq/faults, or use count and probability."
    ))
}

fn check(rule: Rule) -> Result<Checked, SqsError> {
    let invalid = |why: String| Err(SqsError::invalid_parameter(why));
    if rule
        .queue
        .as_ref()
        .is_some_and(|queue| queue.len() > MAX_QUEUE_BYTES)
    {
        return invalid(format!(
            "queue is a queue's name, at most {MAX_QUEUE_BYTES} bytes."
        ));
    }
    let action = match &rule.action {
        None => None,
        Some(name) => match Action::from_name(name) {
            Some(action) => Some(action),
            None => return invalid(format!("{name} is not an SQS action.")),
        },
    };
    let error = match &rule.error {
        None => None,
        Some(name) => match INJECTABLE.into_iter().find(|code| code.code() == name) {
            Some(code) => Some(code),
            None => {
                let names: Vec<&str> = INJECTABLE.iter().map(|code| code.code()).collect();
                return invalid(format!(
                    "error {name} cannot be injected; one of: {}.",
                    names.join(", ")
                ));
            }
        },
    };
    // NaN and the infinities are outside the range too.
    if !(0.0..=1.0).contains(&rule.probability.unwrap_or(1.0)) {
        return invalid("probability is from 0 to 1.".into());
    }
    if rule.count == Some(0) || rule.latency_ms.is_some_and(|ms| ms > 60_000) {
        return invalid("count is at least 1, latency_ms at most 60000.".into());
    }
    if error.is_none() && rule.latency_ms.is_none() && !rule.duplicate {
        return invalid("a rule needs an error, a latency_ms or duplicate.".into());
    }
    if error.is_some() && rule.duplicate {
        return invalid("a rule with an error answers no message to duplicate.".into());
    }
    if rule.duplicate && action.is_some_and(|a| a != Action::ReceiveMessage) {
        return invalid("duplicate acts on ReceiveMessage only.".into());
    }
    Ok(Checked { rule, action, error })
}

/// The error a client gets, in AWS's words where AWS's are known.
fn injected(code: ErrorCode) -> SqsError {
    let message = match code {
        ErrorCode::InternalError => "We encountered an internal error. Please try again.",
        ErrorCode::OverLimit => {
            "The request would exceed a limit (a fault injected through ssq's control API)."
        }
        _ => "The service is unavailable. Please try again (a fault injected through ssq's control API).",
    };
    SqsError::new(code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(json: &str) -> Rule {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_rule_acts_on_its_action_and_queue_count_times() {
        let faults = Faults::default();
        faults
            .add(vec![rule(r#"{"action": "ReceiveMessage", "queue": "orders", "error": "ServiceUnavailable", "count": 2}"#)])
            .unwrap();
        assert!(faults.take(Action::SendMessage, Some("orders")).is_none());
        assert!(faults.take(Action::ReceiveMessage, Some("other")).is_none());
        for _ in 0..2 {
            let fault = faults.take(Action::ReceiveMessage, Some("orders")).unwrap();
            assert_eq!(fault.error.unwrap().code, ErrorCode::ServiceUnavailable);
        }
        assert!(
            faults.take(Action::ReceiveMessage, Some("orders")).is_none(),
            "used up"
        );
        assert!(faults.list().is_empty());
    }

    #[test]
    fn probability_is_each_calls_chance() {
        let faults = Faults::default();
        faults
            .add(vec![rule(r#"{"latency_ms": 1, "probability": 0.0}"#)])
            .unwrap();
        assert!((0..100).all(|_| faults.take(Action::SendMessage, None).is_none()));
        faults.clear();
        faults
            .add(vec![rule(r#"{"latency_ms": 5, "probability": 0.5}"#)])
            .unwrap();
        let acted = (0..1_000)
            .filter(|_| faults.take(Action::SendMessage, None).is_some())
            .count();
        assert!((350..650).contains(&acted), "{acted} of 1000");
    }

    #[test]
    fn rules_that_cannot_act_are_refused_whole() {
        let faults = Faults::default();
        for bad in [
            r#"{"action": "Nope", "latency_ms": 1}"#,
            r#"{"error": "QueueDoesNotExist"}"#,
            r#"{"latency_ms": 1, "probability": 2}"#,
            r#"{"latency_ms": 1, "count": 0}"#,
            r#"{"action": "SendMessage"}"#,
            r#"{"action": "SendMessage", "duplicate": true}"#,
            r#"{"error": "InternalError", "duplicate": true}"#,
            &format!(r#"{{"queue": "{}", "latency_ms": 1}}"#, "q".repeat(129)),
        ] {
            let refused = faults.add(vec![rule(r#"{"latency_ms": 1}"#), rule(bad)]);
            assert_eq!(
                refused.unwrap_err().code,
                ErrorCode::InvalidParameterValue,
                "{bad}"
            );
        }
        assert!(faults.list().is_empty(), "none of a refused list is added");
    }

    #[test]
    fn no_more_than_the_most_rules_are_in_force() {
        let faults = Faults::default();
        let many = |n| (0..n).map(|_| rule(r#"{"latency_ms": 1}"#)).collect::<Vec<_>>();
        let refused = faults.add(many(MAX_RULES + 1)).unwrap_err();
        assert!(refused.message.contains("At most 100"), "{}", refused.message);
        assert_eq!(faults.add(many(MAX_RULES - 1)).unwrap(), MAX_RULES - 1);
        assert_eq!(faults.add(many(1)).unwrap(), MAX_RULES);
        assert!(faults.add(many(1)).is_err(), "one past the most");
        assert_eq!(faults.list().len(), MAX_RULES);
    }
}
