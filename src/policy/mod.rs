//! IAM policies, read and evaluated as AWS evaluates them: an identity
//! policy (what a key of the credentials file may do) is a list of
//! statements, each an `Effect` (Allow or Deny) over actions (`Action`, or
//! every action but those in `NotAction`), resources (`Resource` or
//! `NotResource`, ARN patterns) and conditions (`condition.rs`). An explicit
//! Deny beats an Allow, which beats the implicit deny of anything no
//! statement allows. Patterns take IAM's wildcards (`wildcard.rs`). A
//! resource policy (a queue's `Policy`) has the same statements, each also
//! naming whom it is for (`Principal` or `NotPrincipal`: `*`, accounts and
//! users under `AWS`, services under `Service`).
//!
//! A policy is read once, when the credentials file is (each version of the
//! file compiles its keys' policies), and evaluated without allocating for
//! the statements; what it decided of a request it remembers
//! (`decisions.rs`), so a key's repeated calls cost a lookup.

pub mod condition;
mod decisions;
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
    #[error("MalformedPolicyDocument: Policy statement must contain a principal.")]
    NoPrincipal,
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
    /// Who calls: what a resource policy's principals are matched against
    /// (an identity policy is the caller's own, and names none).
    pub principal: Option<Principal<'a>>,
}

/// Who makes a call, as a resource policy's `Principal` sees it.
#[derive(Debug, Clone, Copy)]
pub enum Principal<'a> {
    /// A key of `account`, `arn` its user (`arn:aws:iam::<account>:user/<key>`).
    User { account: &'a str, arn: &'a str },
    /// An AWS service acting for one of its resources (`sns.amazonaws.com`).
    Service(&'a str),
}

/// One entry of a `Principal`.
#[derive(Debug, Clone)]
enum PrincipalPattern {
    /// `"*"`: anyone.
    Anyone,
    /// Under `AWS`: an account (`123456789012`, `arn:aws:iam::123456789012:root`),
    /// a user's ARN (wildcards allowed), or `*`.
    Aws(String),
    /// Under `Service`.
    Service(String),
}

impl PrincipalPattern {
    fn matches(&self, who: &Principal<'_>) -> bool {
        match (self, who) {
            (PrincipalPattern::Anyone, _) => true,
            (PrincipalPattern::Aws(pattern), Principal::User { account, arn }) => {
                pattern == "*"
                    || pattern == account
                    || pattern
                        .strip_prefix("arn:aws:iam::")
                        .and_then(|rest| rest.strip_suffix(":root"))
                        == Some(account)
                    || wildcard::matches(pattern, arn, false)
            }
            (PrincipalPattern::Service(service), Principal::Service(name)) => service == name,
            _ => false,
        }
    }
}

/// `Principal` or `NotPrincipal`.
#[derive(Debug, Clone)]
enum Principals {
    Only(Vec<PrincipalPattern>),
    AllBut(Vec<PrincipalPattern>),
}

impl Principals {
    fn admit(&self, who: &Principal<'_>) -> bool {
        match self {
            Principals::Only(patterns) => patterns.iter().any(|p| p.matches(who)),
            Principals::AllBut(patterns) => !patterns.iter().any(|p| p.matches(who)),
        }
    }
}

/// Which kind of policy a document is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A key's: names no principal.
    Identity,
    /// A queue's: each statement names its principals.
    Resource,
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
    /// A resource policy's; `None` in an identity policy.
    principals: Option<Principals>,
    actions: Patterns,
    resources: Patterns,
    conditions: Vec<Condition>,
}

impl Statement {
    fn applies(&self, request: &Request<'_>) -> bool {
        let for_caller = match &self.principals {
            None => true,
            Some(principals) => request.principal.is_some_and(|who| principals.admit(&who)),
        };
        for_caller
            && self.actions.admit(request.action, true)
            && self.resources.admit(request.resource, false)
            && self
                .conditions
                .iter()
                .all(|condition| condition.holds(request.context))
    }
}

/// A policy, read.
#[derive(Debug, Clone)]
pub struct Policy {
    statements: Vec<Statement>,
    /// The condition keys its statements read (lower case, each once).
    reads: Vec<String>,
    /// Whether a condition reads the time, so that no decision holds for
    /// the next call.
    reads_time: bool,
    decisions: decisions::Decisions,
}

impl Policy {
    /// Reads an identity policy document (JSON).
    pub fn parse(document: &str) -> Result<Policy, PolicyError> {
        Policy::parse_as(document, Kind::Identity)
    }

    /// Reads a resource policy document (a queue's `Policy`). A statement
    /// without a `Resource` is for the resource the policy is attached to.
    pub fn parse_resource(document: &str) -> Result<Policy, PolicyError> {
        Policy::parse_as(document, Kind::Resource)
    }

    fn parse_as(document: &str, kind: Kind) -> Result<Policy, PolicyError> {
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
            .map(|value| statement(value, kind))
            .collect::<Result<Vec<_>, _>>()?;
        let mut reads: Vec<String> = statements
            .iter()
            .flat_map(|statement: &Statement| &statement.conditions)
            .map(|condition| condition.key().to_string())
            .collect();
        reads.sort();
        reads.dedup();
        let reads_time = reads
            .iter()
            .any(|key| key == "aws:currenttime" || key == "aws:epochtime");
        Ok(Policy {
            statements,
            reads,
            reads_time,
            decisions: Default::default(),
        })
    }

    /// The condition keys the policy reads (lower case, sorted): most
    /// policies read none.
    pub fn condition_keys(&self) -> &[String] {
        &self.reads
    }

    /// What the policy says of `request`: remembered, where the same
    /// request was decided before (`decisions.rs`).
    pub fn evaluate(&self, request: &Request<'_>) -> Decision {
        match self.reads_time {
            true => self.decide(request),
            false => self
                .decisions
                .get_or(decisions::key_of(request), || self.decide(request)),
        }
    }

    /// What the policy says of `action` on `resource` (no principal: an
    /// identity policy) in the context `context` makes, where `facts` are
    /// all that context is made of but the time: remembered by the facts,
    /// so that a repeated call neither makes the context (an address
    /// formatted, a map filled) nor evaluates.
    pub fn evaluate_from(
        &self,
        action: &str,
        resource: &str,
        facts: &[&[u8]],
        context: impl FnOnce() -> condition::Context,
    ) -> Decision {
        let decide = |context: condition::Context| {
            self.decide(&Request {
                action,
                resource,
                context: &context,
                principal: None,
            })
        };
        match self.reads_time {
            true => decide(context()),
            false => self
                .decisions
                .get_or(decisions::key_of_facts(action, resource, facts), || {
                    decide(context())
                }),
        }
    }

    /// What the policy's statements say of `request`.
    fn decide(&self, request: &Request<'_>) -> Decision {
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

fn statement(value: &Value, kind: Kind) -> Result<Statement, PolicyError> {
    let Value::Object(fields) = value else {
        return Err(PolicyError::Syntax("each statement must be an object".into()));
    };
    for key in fields.keys() {
        match key.as_str() {
            "Sid" | "Effect" | "Action" | "NotAction" | "Resource" | "NotResource" | "Condition" => {}
            "Principal" | "NotPrincipal" if kind == Kind::Resource => {}
            "Principal" | "NotPrincipal" => return Err(PolicyError::Principal),
            other => return Err(PolicyError::Syntax(format!("unknown field {other}"))),
        }
    }
    let principals = match kind {
        Kind::Identity => None,
        Kind::Resource => Some(principals(fields.get("Principal"), fields.get("NotPrincipal"))?),
    };
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
    let resources = match patterns(fields.get("Resource"), fields.get("NotResource"))? {
        Some(resources) => resources,
        None if kind == Kind::Resource => Patterns::Only(vec!["*".to_string()]),
        None => return Err(PolicyError::NoResources),
    };
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
        principals,
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

/// `Principal` or `NotPrincipal`: `"*"`, or an object of `AWS` and
/// `Service` entries, each a string or a list of strings.
fn principals(only: Option<&Value>, all_but: Option<&Value>) -> Result<Principals, PolicyError> {
    let read = |value: &Value| -> Result<Vec<PrincipalPattern>, PolicyError> {
        let entries = match value {
            Value::String(star) if star == "*" => return Ok(vec![PrincipalPattern::Anyone]),
            Value::Object(entries) => entries,
            _ => return Err(PolicyError::Syntax("Principal must be \"*\" or an object".into())),
        };
        let mut patterns = Vec::new();
        for (kind, names) in entries {
            let names = match names {
                Value::String(one) => vec![one.as_str()],
                Value::Array(items) => items
                    .iter()
                    .map(Value::as_str)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| PolicyError::Syntax("principals must be strings".into()))?,
                _ => return Err(PolicyError::Syntax("principals must be strings".into())),
            };
            for name in names {
                patterns.push(match kind.as_str() {
                    "AWS" => PrincipalPattern::Aws(name.to_string()),
                    "Service" => PrincipalPattern::Service(name.to_string()),
                    // Federated and CanonicalUser principals never call ssq.
                    "Federated" | "CanonicalUser" => continue,
                    other => return Err(PolicyError::Syntax(format!("unknown principal type {other}"))),
                });
            }
        }
        Ok(patterns)
    };
    match (only, all_but) {
        (Some(_), Some(_)) => Err(PolicyError::Syntax(
            "a statement takes Principal or NotPrincipal, not both".into(),
        )),
        (Some(value), None) => Ok(Principals::Only(read(value)?)),
        (None, Some(value)) => Ok(Principals::AllBut(read(value)?)),
        (None, None) => Err(PolicyError::NoPrincipal),
    }
}

/// The account an ARN names (`arn:aws:sqs:<region>:<account>:<name>`,
/// `arn:aws:sns:<region>:<account>:<topic>`, `arn:aws:iam::<account>:user/<name>`).
pub fn account_of_arn(arn: &str) -> Option<&str> {
    arn.strip_prefix("arn:")?.split(':').nth(3)
}

/// The user a key is to policies: `arn:aws:iam::<account>:user/<key id>`.
pub fn user_arn(account: &str, key_id: &str) -> String {
    format!("arn:aws:iam::{account}:user/{key_id}")
}

#[cfg(test)]
mod tests;
