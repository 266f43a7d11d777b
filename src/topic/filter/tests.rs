use serde_json::{Value, json};

use super::matching::Subject;
use super::*;
use crate::queue::{AttributeValue, MessageAttribute, MessageAttributes};

fn policy(value: Value, scope: Scope) -> Result<FilterPolicy> {
    FilterPolicy::compile(&value.to_string(), scope, "FilterPolicy")
}

fn reason(value: Value) -> String {
    let message = policy(value, Scope::MessageBody).unwrap_err().message;
    message
        .trim_start_matches("Invalid parameter: FilterPolicy: ")
        .to_string()
}

fn attributes(pairs: &[(&str, &str, &str)]) -> MessageAttributes {
    pairs
        .iter()
        .map(|(name, data_type, value)| {
            let attribute = MessageAttribute {
                data_type: data_type.to_string(),
                value: AttributeValue::String(value.to_string()),
            };
            (name.to_string(), attribute)
        })
        .collect()
}

fn on_attributes(value: Value, pairs: &[(&str, &str, &str)]) -> bool {
    policy(value, Scope::MessageAttributes)
        .unwrap()
        .matches(&Subject::Attributes(&attributes(pairs)))
}

fn on_body(value: Value, body: Value) -> bool {
    policy(value, Scope::MessageBody)
        .unwrap()
        .matches(&Subject::Body(Some(&body)))
}

#[test]
fn every_operator_matches_attributes_as_aws_documents() {
    let color = |value| [("color", "String", value)];
    assert!(on_attributes(json!({"color": ["red", "blue"]}), &color("blue")));
    assert!(!on_attributes(json!({"color": ["red"]}), &color("Red")));
    assert!(on_attributes(json!({"color": [{"prefix": "re"}]}), &color("red")));
    assert!(on_attributes(json!({"color": [{"suffix": "ed"}]}), &color("red")));
    assert!(on_attributes(
        json!({"color": [{"equals-ignore-case": "RED"}]}),
        &color("rEd")
    ));
    assert!(on_attributes(
        json!({"color": [{"wildcard": "r*d*"}]}),
        &color("rusted")
    ));
    assert!(!on_attributes(
        json!({"color": [{"wildcard": "r*x"}]}),
        &color("rusted")
    ));
    assert!(on_attributes(
        json!({"color": [{"anything-but": ["blue"]}]}),
        &color("red")
    ));
    assert!(!on_attributes(
        json!({"color": [{"anything-but": "red"}]}),
        &color("red")
    ));
    assert!(!on_attributes(
        json!({"color": [{"anything-but": {"prefix": "r"}}]}),
        &color("red")
    ));
    assert!(on_attributes(json!({"color": [{"exists": true}]}), &color("red")));
    assert!(on_attributes(json!({"size": [{"exists": false}]}), &color("red")));
    assert!(!on_attributes(
        json!({"size": [{"anything-but": "x"}]}),
        &color("red")
    ));
    let price = |value| [("price", "Number", value)];
    assert!(on_attributes(
        json!({"price": [{"numeric": [">", 0, "<=", 100]}]}),
        &price("99.12")
    ));
    assert!(!on_attributes(
        json!({"price": [{"numeric": [">", 0, "<=", 100]}]}),
        &price("100.5")
    ));
    assert!(on_attributes(json!({"price": [100]}), &price("1e2")));
    let ip = |value| [("ip", "String", value)];
    assert!(on_attributes(
        json!({"ip": [{"cidr": "10.0.0.0/24"}]}),
        &ip("10.0.0.255")
    ));
    assert!(!on_attributes(
        json!({"ip": [{"cidr": "10.0.0.0/24"}]}),
        &ip("10.0.1.0")
    ));
    assert!(on_attributes(
        json!({"ip": [{"cidr": "2001:db8::/32"}]}),
        &ip("2001:db8::1")
    ));
    let list = [("tags", "String.Array", r#"["a", 3, true]"#)];
    assert!(on_attributes(json!({"tags": ["a"]}), &list));
    assert!(on_attributes(json!({"tags": [3]}), &list));
    assert!(!on_attributes(json!({"tags": ["b"]}), &list));
}

#[test]
fn every_key_must_match_and_one_branch_of_an_or() {
    let both = [("a", "String", "1"), ("b", "String", "2")];
    assert!(on_attributes(json!({"a": ["1"], "b": ["2"]}), &both));
    assert!(!on_attributes(json!({"a": ["1"], "b": ["3"]}), &both));
    assert!(on_attributes(json!({"$or": [{"a": ["9"]}, {"b": ["2"]}]}), &both));
    assert!(!on_attributes(
        json!({"$or": [{"a": ["9"]}, {"b": ["9"]}]}),
        &both
    ));
}

#[test]
fn body_policies_reach_nested_keys_and_arrays() {
    let body = json!({"order": {"items": [{"sku": "A1"}, {"sku": "B2"}], "paid": true, "note": null}});
    assert!(on_body(
        json!({"order": {"items": {"sku": ["B2"]}}}),
        body.clone()
    ));
    assert!(on_body(json!({"order": {"paid": [true]}}), body.clone()));
    assert!(on_body(json!({"order": {"note": [null]}}), body.clone()));
    assert!(!on_body(
        json!({"order": {"missing": [{"exists": true}]}}),
        body.clone()
    ));
    assert!(on_body(json!({"order.paid": [true]}), body.clone()));
    assert!(on_body(json!({"a.b": ["x"]}), json!({"a.b": "x"})));
    assert!(on_body(
        json!({"a": {"b.c": ["x"]}}),
        json!({"a": {"b": {"c": "x"}}})
    ));
    assert!(!on_body(json!({"a.b": ["x"]}), json!({"a": {"b": "y"}})));
    let not_json = policy(json!({"a": ["x"]}), Scope::MessageBody).unwrap();
    assert!(!not_json.matches(&Subject::Body(None)));
}

#[test]
fn bad_policies_get_aws_words() {
    assert_eq!(reason(json!({"key": []})), "Empty arrays are not allowed");
    assert_eq!(
        reason(json!({"key": [["value"]]})),
        "Match value must be String, number, true, false, or null"
    );
    assert_eq!(
        reason(json!({"key": [{"wrong-operator": true}]})),
        "Unrecognized match type wrong-operator"
    );
    assert_eq!(
        reason(json!({"key": [{"suffix": "v", "prefix": "w"}]})),
        "Only one key allowed in match expression"
    );
    assert_eq!(
        reason(json!({"key": [{"suffix": 100}]})),
        "suffix match pattern must be a string"
    );
    assert_eq!(
        reason(json!({"key": {"suffix": "value"}})),
        "\"suffix\" must be an object or an array"
    );
    assert_eq!(
        reason(json!({"key": [{"exists": null}]})),
        "exists match pattern must be either true or false."
    );
    assert_eq!(
        reason(json!({"key": [{"anything-but": {"suffix": "t"}}]})),
        "Unsupported anything-but pattern: suffix"
    );
    assert_eq!(
        reason(json!({"key": [{"numeric": []}]})),
        "Invalid member in numeric match: ]"
    );
    assert_eq!(
        reason(json!({"key": [{"numeric": [1, "<="]}]})),
        "Invalid member in numeric match: 1"
    );
    assert_eq!(
        reason(json!({"key": [{"numeric": [">", 20, 30]}]})),
        "Bad value in numeric range: 30"
    );
    assert_eq!(
        reason(json!({"key": [{"numeric": [">=", 1, ">", 2]}]})),
        "Bad numeric range operator: >"
    );
    assert_eq!(
        reason(json!({"key": [{"numeric": ["<", 100, ">", 10]}]})),
        "Too many elements in numeric expression"
    );
    assert_eq!(
        reason(json!({"key": [{"numeric": [">", 3, "<", 1]}]})),
        "Bottom must be less than top"
    );
    assert_eq!(
        reason(json!({"key": [{"numeric": ["=", "000"]}]})),
        "Value of equals must be numeric"
    );
    assert_eq!(
        reason(json!({"key": [{"numeric": [">", 20, "<", 30, "<", 50]}]})),
        "Too many terms in numeric range expression"
    );
    assert_eq!(
        reason(json!({"key": [{"cidr": "bad-filter"}]})),
        "Malformed CIDR, one '/' required"
    );
    assert_eq!(
        reason(json!({"key": [{"cidr": "bad-/64filter"}]})),
        "Malformed CIDR, mask bits must be an integer"
    );
    assert_eq!(
        reason(json!({"key": [{"cidr": "xx.11.xx/8"}]})),
        "Nonstandard IP address: xx.11.xx"
    );
    assert_eq!(
        reason(json!({"key": [{"cidr": ["bad-filter"]}]})),
        "prefix match pattern must be a string"
    );
}

#[test]
fn limits_on_keys_and_combinations_and_nesting_by_scope() {
    let six: serde_json::Map<String, Value> = (0..6).map(|i| (format!("k{i}"), json!(["v"]))).collect();
    assert_eq!(
        reason(Value::Object(six)),
        "Filter policy can not have more than 5 keys"
    );
    let values: Vec<Value> = (0..13).map(|i| json!(format!("v{i}"))).collect();
    let wide = json!({"a": values.clone(), "b": values});
    assert_eq!(reason(wide), "Filter policy is too complex");
    // A nested key's values count as many times as it is deep: 3·4 × 2·3 × 1·3 = 216.
    let deep =
        json!({"a": {"b": {"c": ["1", "2", "3", "4"]}}, "d": {"e": ["1", "2", "3"]}, "f": ["1", "2", "3"]});
    assert_eq!(reason(deep), "Filter policy is too complex");
    let or = json!({"s": ["1", "2", "3", "4"], "$or": [{"m": ["1", "2", "3", "4", "5", "6"]},
        {"t": ["1", "2", "3", "4"], "$or": [{"i": [1, 2, 3, 4]}, {"p": [1, 2, 3, 4]}]}]});
    assert_eq!(
        reason(or),
        "Filter policy is too complex",
        "4·6 + 4·4·4 + 4·4·4 = 152"
    );
    let nested = policy(json!({"a": {"b": ["c"]}}), Scope::MessageAttributes).unwrap_err();
    assert!(nested.message.contains("does not support nested filter policy"));
    assert!(
        policy(json!({"a": {"b": ["c"]}}), Scope::MessageBody)
            .unwrap()
            .is_nested()
    );
}

#[test]
fn wildcards_never_recurse_and_stay_linear_enough() {
    let text = "a".repeat(10_000);
    let pattern = format!("{}b", "*a".repeat(50));
    assert!(!super::matching::wildcard(pattern.as_bytes(), text.as_bytes()));
    assert!(super::matching::wildcard(b"*", b""));
}
