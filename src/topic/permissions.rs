//! `Topics`' AddPermission and RemovePermission: a labelled statement
//! written into, or taken out of, the topic's policy document.

use super::{Result, SnsError, TOPIC_POLICY_ACTIONS, Topic, TopicArn, Topics, attributes};

impl Topics {
    /// AddPermission: a statement in the topic's policy.
    pub fn add_permission(
        &mut self,
        arn: &TopicArn,
        label: &str,
        accounts: &[String],
        actions: &[String],
    ) -> Result<()> {
        let topic = self.topic_mut(arn)?;
        let mut policy = policy_of(topic, arn);
        let statements = statements(&mut policy);
        if statements.iter().any(|s| s["Sid"] == label) {
            return Err(SnsError::parameter("Statement already exists"));
        }
        let actions: Vec<String> = actions
            .iter()
            .map(|action| match action.as_str() {
                "*" => Ok("SNS:*".to_string()),
                action if TOPIC_POLICY_ACTIONS.contains(&action) => Ok(format!("SNS:{action}")),
                _ => Err(SnsError::parameter(
                    "Policy statement action out of service scope!",
                )),
            })
            .collect::<Result<_>>()?;
        let principals: Vec<String> = accounts
            .iter()
            .map(|a| format!("arn:aws:iam::{a}:root"))
            .collect();
        let one_or_many = |items: Vec<String>| match items.len() {
            1 => serde_json::Value::from(items[0].clone()),
            _ => serde_json::Value::from(items),
        };
        statements.push(serde_json::json!({
            "Sid": label,
            "Effect": "Allow",
            "Principal": {"AWS": one_or_many(principals)},
            "Action": one_or_many(actions),
            "Resource": arn.to_string(),
        }));
        topic.attributes.insert("Policy".into(), policy.to_string());
        self.record_topic(arn);
        Ok(())
    }

    pub fn remove_permission(&mut self, arn: &TopicArn, label: &str) -> Result<()> {
        let topic = self.topic_mut(arn)?;
        let mut policy = policy_of(topic, arn);
        statements(&mut policy).retain(|s| s["Sid"] != label);
        topic.attributes.insert("Policy".into(), policy.to_string());
        self.record_topic(arn);
        Ok(())
    }
}

fn policy_of(topic: &Topic, arn: &TopicArn) -> serde_json::Value {
    topic
        .attributes
        .get("Policy")
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_else(|| serde_json::from_str(&attributes::default_policy(arn)).unwrap_or_default())
}

fn statements(policy: &mut serde_json::Value) -> &mut Vec<serde_json::Value> {
    if !policy["Statement"].is_array() {
        policy["Statement"] = serde_json::Value::Array(Vec::new());
    }
    match &mut policy["Statement"] {
        serde_json::Value::Array(statements) => statements,
        _ => unreachable!("made an array above"),
    }
}
