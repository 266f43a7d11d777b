//! Policies read and evaluated: AWS's documented cases, malformed documents,
//! and 10,000 random policies against a reference model written apart (a
//! recursive wildcard matcher, the evaluation logic spelled out plainly),
//! each asked its requests twice (the second answer remembered).

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::*;

fn evaluate(policy: &Value, action: &str, resource: &str, context: &Context) -> Decision {
    Policy::parse(&policy.to_string()).unwrap().evaluate(&Request {
        action,
        resource,
        context,
        principal: None,
    })
}

const ORDERS: &str = "arn:aws:sqs:us-east-1:111122223333:orders";

#[test]
fn deny_beats_allow_beats_the_implicit_deny() {
    let none = Context::new();
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sqs:*", "Resource": "arn:aws:sqs:*:111122223333:*"},
            {"Effect": "Deny", "Action": ["sqs:DeleteQueue", "sqs:Purge*"], "Resource": "*"}
        ]
    });
    assert_eq!(
        evaluate(&policy, "sqs:SendMessage", ORDERS, &none),
        Decision::Allow
    );
    assert_eq!(
        evaluate(&policy, "sqs:sendmessage", ORDERS, &none),
        Decision::Allow,
        "actions ignore case"
    );
    assert_eq!(
        evaluate(&policy, "sqs:PurgeQueue", ORDERS, &none),
        Decision::ExplicitDeny
    );
    assert_eq!(
        evaluate(
            &policy,
            "sqs:SendMessage",
            "arn:aws:sqs:us-east-1:444455556666:orders",
            &none
        ),
        Decision::ImplicitDeny
    );
    assert_eq!(
        evaluate(&policy, "sns:Publish", ORDERS, &none),
        Decision::ImplicitDeny
    );
}

#[test]
fn not_action_and_not_resource() {
    let none = Context::new();
    let everything_but_deletes = json!({
        "Statement": {"Effect": "Allow", "NotAction": "sqs:Delete*", "NotResource": "arn:aws:sqs:*:*:audit-*"}
    });
    assert_eq!(
        evaluate(&everything_but_deletes, "sqs:ReceiveMessage", ORDERS, &none),
        Decision::Allow
    );
    assert_eq!(
        evaluate(&everything_but_deletes, "sns:Publish", ORDERS, &none),
        Decision::Allow
    );
    assert_eq!(
        evaluate(&everything_but_deletes, "sqs:DeleteMessage", ORDERS, &none),
        Decision::ImplicitDeny
    );
    let audit = "arn:aws:sqs:us-east-1:111122223333:audit-log";
    assert_eq!(
        evaluate(&everything_but_deletes, "sqs:SendMessage", audit, &none),
        Decision::ImplicitDeny
    );
}

#[test]
fn conditions_decide_with_the_request_context() {
    let policy = json!({
        "Statement": {
            "Effect": "Allow", "Action": "sqs:SendMessage", "Resource": ORDERS,
            "Condition": {"ArnEquals": {"aws:SourceArn": "arn:aws:sns:us-east-1:111122223333:events"}}
        }
    });
    let from = |arn: &str| -> Context { [("aws:sourcearn".to_string(), vec![arn.to_string()])].into() };
    let events = from("arn:aws:sns:us-east-1:111122223333:events");
    assert_eq!(
        evaluate(&policy, "sqs:SendMessage", ORDERS, &events),
        Decision::Allow
    );
    let other = from("arn:aws:sns:us-east-1:444455556666:events");
    assert_eq!(
        evaluate(&policy, "sqs:SendMessage", ORDERS, &other),
        Decision::ImplicitDeny
    );
    assert_eq!(
        evaluate(&policy, "sqs:SendMessage", ORDERS, &Context::new()),
        Decision::ImplicitDeny
    );
}

#[test]
fn malformed_documents_get_iams_errors() {
    let refused = |document: &str| Policy::parse(document).unwrap_err();
    assert!(matches!(refused("{"), PolicyError::Syntax(_)));
    assert_eq!(
        refused(r#"{"Version":"2013-01-01","Statement":{"Effect":"Allow","Action":"*","Resource":"*"}}"#),
        PolicyError::Version
    );
    assert_eq!(
        refused(r#"{"Statement":{"Effect":"Permit","Action":"*","Resource":"*"}}"#),
        PolicyError::Effect("\"Permit\"".into())
    );
    assert_eq!(
        refused(r#"{"Statement":{"Effect":"Allow","Resource":"*"}}"#),
        PolicyError::NoActions
    );
    assert_eq!(
        refused(r#"{"Statement":{"Effect":"Allow","Action":"sqs:*"}}"#),
        PolicyError::NoResources
    );
    assert_eq!(
        refused(r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Resource":"*"}}"#),
        PolicyError::Principal
    );
    assert_eq!(
        refused(r#"{"Statement":{"Effect":"Allow","Action":"SendMessage","Resource":"*"}}"#),
        PolicyError::Vendor("SendMessage".into())
    );
    assert!(matches!(
        refused(r#"{"Statement":{"Effect":"Allow","Action":"sqs:*","NotAction":"sqs:x","Resource":"*"}}"#),
        PolicyError::Syntax(_)
    ));
    assert!(matches!(refused(r#"{"Statement":[]}"#), PolicyError::Syntax(_)));
    let long = format!(
        r#"{{"Statement":{{"Sid":"{}","Effect":"Allow","Action":"*","Resource":"*"}}}}"#,
        "x".repeat(7_000)
    );
    assert_eq!(refused(&long), PolicyError::TooLong);
}

/// The reference model's wildcard: every way of matching tried, recursively.
fn reference_matches(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) => (0..=text.len()).any(|skip| reference_matches(rest, &text[skip..])),
        Some(('?', rest)) => !text.is_empty() && reference_matches(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && reference_matches(rest, &text[1..]),
    }
}

fn reference_like(pattern: &str, text: &str, ignore_case: bool) -> bool {
    let fold = |s: &str| -> Vec<char> {
        match ignore_case {
            true => s.to_lowercase().chars().collect(),
            false => s.chars().collect(),
        }
    };
    reference_matches(&fold(pattern), &fold(text))
}

/// A random statement, kept as data for the reference model and rendered
/// as JSON for the parser.
#[derive(Debug)]
struct Spec {
    allow: bool,
    not_action: bool,
    actions: Vec<String>,
    not_resource: bool,
    resources: Vec<String>,
    /// (operator, if_exists, values) on `aws:SourceAccount`.
    condition: Option<(&'static str, bool, Vec<String>)>,
}

const ACTIONS: [&str; 6] = [
    "sqs:SendMessage",
    "sqs:ReceiveMessage",
    "sqs:DeleteQueue",
    "sns:Publish",
    "sqs:*",
    "*",
];
const RESOURCES: [&str; 4] = [
    "arn:aws:sqs:us-east-1:111122223333:orders",
    "arn:aws:sqs:eu-west-1:111122223333:audit",
    "arn:aws:sns:us-east-1:444455556666:events",
    "*",
];
const ACCOUNTS: [&str; 3] = ["111122223333", "444455556666", "1*"];

fn pattern_from(rng: &mut StdRng, examples: &[&str]) -> String {
    let base: Vec<char> = examples[rng.gen_range(0..examples.len())].chars().collect();
    // Mangle it: a character swapped for `?`, a run for `*`, a case change.
    let mut out: Vec<char> = base.clone();
    match rng.gen_range(0..5) {
        0 if !out.is_empty() => {
            let at = rng.gen_range(0..out.len());
            out[at] = '?';
        }
        1 if !out.is_empty() => {
            let from = rng.gen_range(0..out.len());
            let to = rng.gen_range(from..=out.len());
            out.splice(from..to, ['*']);
        }
        2 => out = out.iter().flat_map(|c| c.to_uppercase()).collect(),
        _ => {}
    }
    out.into_iter().collect()
}

fn random_spec(rng: &mut StdRng) -> Spec {
    let list = |rng: &mut StdRng, examples: &[&str]| -> Vec<String> {
        (0..rng.gen_range(1..=3))
            .map(|_| {
                loop {
                    // An action keeps its vendor prefix, as IAM requires.
                    let pattern = pattern_from(rng, examples);
                    if examples != ACTIONS || pattern == "*" || pattern.contains(':') {
                        break pattern;
                    }
                }
            })
            .collect()
    };
    let condition = match rng.gen_range(0..4) {
        0 => None,
        n => {
            let operator = ["StringEquals", "StringNotEquals", "StringLike"][n - 1];
            let values = (0..rng.gen_range(1..=2))
                .map(|_| ACCOUNTS[rng.gen_range(0..ACCOUNTS.len())].to_string())
                .collect();
            Some((operator, rng.gen_bool(0.3), values))
        }
    };
    Spec {
        allow: rng.gen_bool(0.7),
        not_action: rng.gen_bool(0.2),
        actions: list(rng, &ACTIONS),
        not_resource: rng.gen_bool(0.2),
        resources: list(rng, &RESOURCES),
        condition,
    }
}

fn render(specs: &[Spec]) -> String {
    let statements: Vec<Value> = specs
        .iter()
        .map(|s| {
            let mut statement = serde_json::Map::new();
            statement.insert("Effect".into(), json!(if s.allow { "Allow" } else { "Deny" }));
            let actions = if s.not_action { "NotAction" } else { "Action" };
            statement.insert(actions.into(), json!(s.actions));
            let resources = if s.not_resource { "NotResource" } else { "Resource" };
            statement.insert(resources.into(), json!(s.resources));
            if let Some((operator, if_exists, values)) = &s.condition {
                let name = format!("{operator}{}", if *if_exists { "IfExists" } else { "" });
                statement.insert(
                    "Condition".into(),
                    json!({ name: { "aws:SourceAccount": values } }),
                );
            }
            Value::Object(statement)
        })
        .collect();
    json!({ "Version": "2012-10-17", "Statement": statements }).to_string()
}

/// The reference: AWS's evaluation logic, spelled out.
fn reference(specs: &[Spec], action: &str, resource: &str, account: Option<&str>) -> Decision {
    let applies = |s: &Spec| {
        let action_listed = s.actions.iter().any(|p| reference_like(p, action, true));
        let resource_listed = s.resources.iter().any(|p| reference_like(p, resource, false));
        let condition = match (&s.condition, account) {
            (None, _) => true,
            (Some((_, true, _)), None) => true,
            (Some((operator, false, _)), None) => *operator == "StringNotEquals",
            (Some((operator, _, values)), Some(account)) => match *operator {
                "StringEquals" => values.iter().any(|v| v == account),
                "StringNotEquals" => values.iter().all(|v| v != account),
                _ => values.iter().any(|v| reference_like(v, account, false)),
            },
        };
        action_listed != s.not_action && resource_listed != s.not_resource && condition
    };
    if specs.iter().any(|s| !s.allow && applies(s)) {
        Decision::ExplicitDeny
    } else if specs.iter().any(|s| s.allow && applies(s)) {
        Decision::Allow
    } else {
        Decision::ImplicitDeny
    }
}

#[test]
fn ten_thousand_random_policies_agree_with_the_reference_model() {
    let seed = std::env::var("POLICY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261204);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut decisions = [0usize; 3];
    for round in 0..10_000 {
        let specs: Vec<Spec> = (0..rng.gen_range(1..=4)).map(|_| random_spec(&mut rng)).collect();
        let document = render(&specs);
        let policy = Policy::parse(&document).unwrap_or_else(|e| panic!("{document}: {e}"));
        // A few requests, each asked twice in a random order: the second
        // answer comes from what the policy remembers (`decisions.rs`),
        // and must agree as the first does.
        let requests: Vec<_> = (0..4)
            .map(|_| {
                let action = [
                    "sqs:SendMessage",
                    "sqs:DeleteQueue",
                    "sns:Publish",
                    "sqs:ListQueues",
                ][rng.gen_range(0..4)];
                let resource = RESOURCES[rng.gen_range(0..RESOURCES.len())];
                let account = [None, Some("111122223333"), Some("444455556666")][rng.gen_range(0..3)];
                (action, resource, account)
            })
            .collect();
        let mut asked: Vec<_> = requests.iter().chain(&requests).collect();
        asked.shuffle(&mut rng);
        for &(action, resource, account) in asked {
            let context: Context = account
                .map(|a| [("aws:sourceaccount".to_string(), vec![a.to_string()])].into())
                .unwrap_or_default();
            let got = policy.evaluate(&Request {
                action,
                resource,
                context: &context,
                principal: None,
            });
            let expected = reference(&specs, action, resource, account);
            assert_eq!(
                got, expected,
                "round {round} (POLICY_SEED={seed}): {action} on {resource} from {account:?} under {document}"
            );
            decisions[got as usize] += 1;
        }
    }
    // Each outcome is exercised, so agreement means something.
    assert!(decisions.iter().all(|&n| n > 500), "{decisions:?}");
}

#[test]
fn resource_policies_name_their_principals() {
    let who = |account| Principal::User {
        account,
        arn: "arn:aws:iam::111122223333:user/AKIDA",
    };
    let decide = |document: &str, principal| {
        Policy::parse_resource(document).unwrap().evaluate(&Request {
            action: "sqs:SendMessage",
            resource: ORDERS,
            context: &Context::new(),
            principal: Some(principal),
        })
    };
    let everyone_but = r#"{"Statement": {"Effect": "Allow", "NotPrincipal": {"AWS": "444455556666"}, "Action": "sqs:SendMessage"}}"#;
    assert_eq!(decide(everyone_but, who("111122223333")), Decision::Allow);
    assert_eq!(decide(everyone_but, who("444455556666")), Decision::ImplicitDeny);
    let sns = r#"{"Statement": {"Effect": "Allow", "Principal": {"Service": "sns.amazonaws.com"}, "Action": "sqs:SendMessage", "Resource": "*"}}"#;
    assert_eq!(
        decide(sns, Principal::Service("sns.amazonaws.com")),
        Decision::Allow
    );
    assert_eq!(decide(sns, who("111122223333")), Decision::ImplicitDeny);
    let user = r#"{"Statement": {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::111122223333:user/AKID*"]}, "Action": "sqs:*"}}"#;
    assert_eq!(decide(user, who("111122223333")), Decision::Allow);

    let refused = |document: &str| Policy::parse_resource(document).unwrap_err();
    assert_eq!(
        refused(r#"{"Statement": {"Effect": "Allow", "Action": "sqs:*"}}"#),
        PolicyError::NoPrincipal
    );
    assert!(matches!(
        refused(r#"{"Statement": {"Effect": "Allow", "Principal": {"Robot": "x"}, "Action": "sqs:*"}}"#),
        PolicyError::Syntax(_)
    ));
    assert_eq!(
        Policy::parse(sns).unwrap_err(),
        PolicyError::Principal,
        "an identity policy names no principal"
    );
}

#[test]
fn decisions_are_remembered_boundedly_and_never_when_the_time_is_read() {
    let ask = |policy: &Policy, resource: &str| {
        policy.evaluate(&Request {
            action: "sqs:SendMessage",
            resource,
            context: &Context::new(),
            principal: None,
        })
    };
    let plain = Policy::parse(
        &json!({"Statement": {"Effect": "Allow", "Action": "sqs:*", "Resource": ORDERS}}).to_string(),
    )
    .unwrap();
    assert_eq!(ask(&plain, ORDERS), Decision::Allow);
    assert_eq!(ask(&plain, ORDERS), Decision::Allow);
    assert_eq!(plain.decisions.len(), 1, "one request, remembered once");
    let others: Vec<String> = (0..5000).map(|n| format!("{ORDERS}-{n}")).collect();
    for resource in &others {
        assert_eq!(ask(&plain, resource), Decision::ImplicitDeny);
    }
    assert!(plain.decisions.len() <= 4096, "{}", plain.decisions.len());
    assert_eq!(
        ask(&plain, ORDERS),
        Decision::Allow,
        "still right after forgetting"
    );

    let until = Policy::parse(
        &json!({"Statement": {"Effect": "Allow", "Action": "sqs:*", "Resource": "*",
            "Condition": {"DateLessThan": {"aws:CurrentTime": "2027-01-01T00:00:00Z"}}}})
        .to_string(),
    )
    .unwrap();
    ask(&until, ORDERS);
    assert_eq!(
        until.decisions.len(),
        0,
        "a policy that reads the time decides every call"
    );
}
