//! IAM policies, read and evaluated as AWS evaluates them: an identity
//! policy (what a key of the credentials file may do) is a list of
//! statements, each an `Effect` (Allow or Deny) over actions (`Action`, or
//! every action but those in `NotAction`), resources (`Resource` or
//! `NotResource`, ARN patterns) and conditions (`condition.rs`). An explicit
//! Deny beats an Allow, which beats the implicit deny of anything no
//! statement allows. Patterns take IAM's wildcards (`wildcard.rs`).
//!
//! A policy is read once, when the credentials file is (each version of the
//! file compiles its keys' policies), and evaluated on every call without
//! allocating for the statements.

pub mod condition;
pub mod wildcard;

use serde_json::Value;

use self::condition::{Condition, Context};

/// The largest policy document read: IAM's limit for a managed policy.
pub const MAX_DOCUMENT_CHARS: usize = 6_144;

/// Why a policy document is refused: IAM's MalformedPolicyDocument cases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("MalformedPolicyDocument: Syntax errors in policy. {0}")]
    Syntax(String),
    #[error(
        "MalformedPolicyDocument: Policy document length exceeds the limit of {MAX_DOCUMENT_CHARS} characters."
    )]
    TooLong,
    #[error(
        "MalformedPolicyDocument: The policy failed legacy parsing (Version must be 2012-10-17 or 2008-10-17)."
    )]
    Version,
    #[error("MalformedPolicyDocument: Invalid effect: {0}")]
    Effect(String),
    #[error("MalformedPolicyDocument: Policy statement must contain actions.")]
    NoActions,
    #[error("MalformedPolicyDocument: Policy statement must contain resources.")]
    NoResources,
    #[error("MalformedPolicyDocument: Policy document should not specify a principal.")]
    Principal,
    #[error("MalformedPolicyDocument: Invalid Condition type : {0}")]
    UnknownOperator(String),
    #[error(
        "MalformedPolicyDocument: Actions/Conditions must be prefaced by a vendor, e.g., iam, sdb, ec2, etc. ({0})"
    )]
    Vendor(String),
}

/// What a policy says of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// A statement denies it: nothing else can allow it.
    ExplicitDeny,
    /// No statement allows it.
    ImplicitDeny,
}

/// A call as a policy sees it.
#[derive(Debug)]
pub struct Request<'a> {
    /// `sqs:SendMessage`, `sns:Publish`.
    pub action: &'a str,
    /// The ARN acted on, or `*` for calls that name none (ListQueues).
    pub resource: &'a str,
    pub context: &'a Context,
}

#[derive(Debug, Clone)]
enum Patterns {
    Only(Vec<String>),
    AllBut(Vec<String>),
}

impl Patterns {
    fn admit(&self, text: &str, ignore_case: bool) -> bool {
        match self {
            Patterns::Only(patterns) => patterns.iter().any(|p| wildcard::matches(p, text, ignore_case)),
            Patterns::AllBut(patterns) => !patterns.iter().any(|p| wildcard::matches(p, text, ignore_case)),
        }
    }
}

#[derive(Debug, Clone)]
struct Statement {
    allow: bool,
    actions: Patterns,
    resources: Patterns,
    conditions: Vec<Condition>,
}

impl Statement {
    fn applies(&self, request: &Request<'_>) -> bool {
        self.actions.admit(request.action, true)
            && self.resources.admit(request.resource, false)
            && self
                .conditions
                .iter()
                .all(|condition| condition.holds(request.context))
    }
}

/// An identity policy, read.
#[derive(Debug, Clone)]
pub struct Policy {
    statements: Vec<Statement>,
}

impl Policy {
    /// Reads an identity policy document (JSON).
    pub fn parse(document: &str) -> Result<Policy, PolicyError> {
        if document.chars().count() > MAX_DOCUMENT_CHARS {
            return Err(PolicyError::TooLong);
        }
        let value: Value = serde_json::from_str(document).map_err(|e| PolicyError::Syntax(e.to_string()))?;
        let Value::Object(top) = value else {
            return Err(PolicyError::Syntax("the document must be a JSON object".into()));
        };
        for key in top.keys() {
            if !matches!(key.as_str(), "Version" | "Id" | "Statement") {
                return Err(PolicyError::Syntax(format!("unknown field {key}")));
            }
        }
        match top.get("Version") {
            None => {}
            Some(Value::String(version)) if version == "2012-10-17" || version == "2008-10-17" => {}
            Some(_) => return Err(PolicyError::Version),
        }
        let statements = match top.get("Statement") {
            Some(Value::Array(items)) if !items.is_empty() => items.iter().collect(),
            Some(item @ Value::Object(_)) => vec![item],
            _ => {
                return Err(PolicyError::Syntax(
                    "Statement must be an object or a non-empty list".into(),
                ));
            }
        };
        let statements = statements
            .into_iter()
            .map(statement)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Policy { statements })
    }

    /// Whether a condition of the policy reads `key` (lower case): a
    /// request's condition keys are gathered only when a policy reads them.
    pub fn reads(&self, key: &str) -> bool {
        self.statements
            .iter()
            .flat_map(|statement| &statement.conditions)
            .any(|condition| condition.key() == key)
    }

    /// What the policy says of `request`.
    pub fn evaluate(&self, request: &Request<'_>) -> Decision {
        let mut allowed = false;
        for statement in &self.statements {
            if statement.applies(request) {
                if !statement.allow {
                    return Decision::ExplicitDeny;
                }
                allowed = true;
            }
        }
        match allowed {
            true => Decision::Allow,
            false => Decision::ImplicitDeny,
        }
    }
}

fn statement(value: &Value) -> Result<Statement, PolicyError> {
    let Value::Object(fields) = value else {
        return Err(PolicyError::Syntax("each statement must be an object".into()));
    };
    for key in fields.keys() {
        match key.as_str() {
            "Sid" | "Effect" | "Action" | "NotAction" | "Resource" | "NotResource" | "Condition" => {}
            "Principal" | "NotPrincipal" => return Err(PolicyError::Principal),
            other => return Err(PolicyError::Syntax(format!("unknown field {other}"))),
        }
    }
    let allow = match fields.get("Effect") {
        Some(Value::String(effect)) if effect == "Allow" => true,
        Some(Value::String(effect)) if effect == "Deny" => false,
        Some(other) => return Err(PolicyError::Effect(other.to_string())),
        None => return Err(PolicyError::Syntax("a statement needs an Effect".into())),
    };
    let actions = patterns(fields.get("Action"), fields.get("NotAction"))?.ok_or(PolicyError::NoActions)?;
    for action in match &actions {
        Patterns::Only(p) | Patterns::AllBut(p) => p,
    } {
        if action != "*" && !action.contains(':') {
            return Err(PolicyError::Vendor(action.clone()));
        }
    }
    let resources =
        patterns(fields.get("Resource"), fields.get("NotResource"))?.ok_or(PolicyError::NoResources)?;
    let conditions = match fields.get("Condition") {
        None => Vec::new(),
        Some(Value::Object(operators)) => {
            let mut conditions = Vec::new();
            for (operator, block) in operators {
                conditions.extend(Condition::parse(operator, block)?);
            }
            conditions
        }
        Some(_) => return Err(PolicyError::Syntax("Condition must be an object".into())),
    };
    Ok(Statement {
        allow,
        actions,
        resources,
        conditions,
    })
}

/// `Action` or `NotAction` (likewise resources): one of the two, a string
/// or a non-empty list of strings.
fn patterns(only: Option<&Value>, all_but: Option<&Value>) -> Result<Option<Patterns>, PolicyError> {
    let list = |value: &Value| match value {
        Value::String(one) => Ok(vec![one.clone()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| PolicyError::Syntax("actions and resources must be strings".into())),
        _ => Err(PolicyError::Syntax(
            "actions and resources must be a string or a non-empty list".into(),
        )),
    };
    match (only, all_but) {
        (Some(_), Some(_)) => Err(PolicyError::Syntax(
            "a statement takes Action or NotAction (Resource or NotResource), not both".into(),
        )),
        (Some(value), None) => Ok(Some(Patterns::Only(list(value)?))),
        (None, Some(value)) => Ok(Some(Patterns::AllBut(list(value)?))),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests;
