//! `Topics`' side of subscriptions: Subscribe (a new subscription, or the
//! same one again when its attributes agree), confirmation by token,
//! Unsubscribe, a subscription's attributes, and the List calls' pages.

use std::collections::BTreeMap;
use std::ops::Bound;

use std::sync::Arc;

use super::{
    MAX_SUBSCRIPTIONS_PER_TOPIC, PAGE, Protocol, Result, SnsError, Subscribed, Subscription, Topic, TopicArn,
    Topics, attributes, page_token, read_page_token,
};

impl Topics {
    /// Subscribe: a new subscription, or the one with the same topic,
    /// protocol and endpoint when the attributes agree.
    pub fn subscribe(
        &mut self,
        topic_arn: &TopicArn,
        protocol: Protocol,
        endpoint: &str,
        given: &BTreeMap<String, String>,
        owner: &str,
    ) -> Result<Subscribed> {
        let topic = self.topic(topic_arn)?;
        protocol.check_endpoint(endpoint)?;
        if protocol == Protocol::Sqs && endpoint.ends_with(".fifo") && !topic.is_fifo() {
            return Err(SnsError::parameter(
                "Invalid parameter: Endpoint Reason: FIFO SQS Queues can not be subscribed to standard SNS topics",
            ));
        }
        let existing = topic
            .subscriptions
            .iter()
            .filter_map(|arn| self.subscriptions.get(arn))
            .find(|sub| sub.protocol == protocol && sub.endpoint == endpoint);
        if let Some(sub) = existing {
            let same = given.iter().all(|(name, value)| {
                let stored = sub.attributes.get(name).map(String::as_str);
                match name.as_str() {
                    "RawMessageDelivery" => stored.unwrap_or("false") == value.to_ascii_lowercase(),
                    "FilterPolicyScope" => stored.unwrap_or("MessageAttributes") == value,
                    _ => stored == Some(value.as_str()),
                }
            });
            if !same {
                return Err(SnsError::parameter(
                    "Attributes Reason: Subscription already exists with different attributes",
                ));
            }
            return Ok(Subscribed {
                arn: sub.arn.clone(),
                pending_token: None,
            });
        }
        if topic.subscriptions.len() >= MAX_SUBSCRIPTIONS_PER_TOPIC {
            return Err(SnsError::new(
                "SubscriptionLimitExceeded",
                403,
                "Subscription limit exceeded",
            ));
        }
        attributes::check_large_message_room(
            topic.publish_rules().max_bytes,
            topic.subscriptions.len(),
            protocol,
        )?;
        let fifo = topic.is_fifo();
        let pending_token = protocol.needs_confirmation().then(confirmation_token);
        let sub = Subscription {
            replay: None,
            arn: format!("{topic_arn}:{}", crate::queue::random::uuid()),
            topic: topic_arn.clone(),
            protocol,
            endpoint: endpoint.to_string(),
            owner: owner.to_string(),
            attributes: BTreeMap::new(),
            filter: None,
            pending: pending_token.is_some(),
            token: pending_token.clone(),
        };
        let arn = self.insert_subscription(sub, given, fifo)?;
        Ok(Subscribed { arn, pending_token })
    }

    /// A new subscription (Subscribe's, or a snapshot's) given its
    /// attributes, the scope first so that the filter policy is compiled
    /// for it, then added to its topic, the registry and its confirmation
    /// token's index. Its ARN.
    pub(super) fn insert_subscription(
        &mut self,
        mut sub: Subscription,
        attributes: &BTreeMap<String, String>,
        fifo: bool,
    ) -> Result<String> {
        let mut ordered: Vec<(&String, &String)> = attributes.iter().collect();
        ordered.sort_by_key(|(name, _)| name.as_str() != "FilterPolicyScope");
        for (name, value) in ordered {
            sub.set(name, value, fifo, true)?;
        }
        let arn = sub.arn.clone();
        self.topic_mut(&sub.topic)?.subscriptions.push(arn.clone());
        if let Some(token) = &sub.token {
            self.tokens.insert(token.clone(), arn.clone());
        }
        self.subscriptions.insert(arn.clone(), Arc::new(sub));
        self.order.insert(arn.clone(), self.next_order);
        self.next_order += 1;
        self.record_subscription(&arn);
        Ok(arn)
    }

    /// ConfirmSubscription: the subscription whose token this is. As in
    /// AWS, the token names the subscription: the topic given need only be
    /// of its region, and confirming again answers the same.
    pub fn confirm(&mut self, topic: &str, token: &str) -> Result<String> {
        let topic = TopicArn::parse("Topic", topic).map_err(|_| SnsError::parameter("Topic"))?;
        // AWS tells a token that cannot be one (its tokens are hex) from
        // one that is not known (recorded in LocalStack's
        // test_sns_confirm_subscription_wrong_token).
        let arn = match self.tokens.get(token) {
            Some(arn) => arn.clone(),
            None if !token.is_empty() && token.bytes().all(|b| b.is_ascii_hexdigit()) => {
                return Err(SnsError::parameter("Token"));
            }
            None => return Err(SnsError::new("InvalidParameter", 400, "Invalid token")),
        };
        let sub = self
            .subscriptions
            .get_mut(&arn)
            .ok_or_else(|| SnsError::parameter("Token"))?;
        if sub.topic.region != topic.region || sub.topic.account != topic.account {
            return Err(SnsError::parameter("Topic"));
        }
        let changed = std::mem::replace(&mut Arc::make_mut(sub).pending, false);
        if changed {
            self.record_subscription(&arn);
        }
        Ok(arn)
    }

    /// Unsubscribe; the subscription removed, if there was one.
    /// The token of a removed subscription is new: the one its
    /// UnsubscribeConfirmation carries.
    pub fn unsubscribe(&mut self, arn: &str) -> Option<Subscription> {
        let mut sub = Arc::unwrap_or_clone(self.subscriptions.remove(arn)?);
        if let Some(token) = &sub.token {
            self.tokens.remove(token);
        }
        sub.token = Some(confirmation_token());
        if let Some(topic) = self.topics.get_mut(&sub.topic.to_string()) {
            topic.subscriptions.retain(|s| s != arn);
            topic.deleted_subscriptions += 1;
        }
        self.order.remove(arn);
        self.record_subscription(arn);
        self.record_topic(&sub.topic.clone());
        self.drop_deliveries(arn);
        Some(sub)
    }

    /// A topic's subscriptions, in the order they were made (none when
    /// there is no such topic).
    pub fn subscriptions_of(&self, arn: &TopicArn) -> impl Iterator<Item = &Subscription> {
        self.topics
            .get(&arn.to_string())
            .map(|topic| topic.subscriptions.as_slice())
            .unwrap_or_default()
            .iter()
            .filter_map(|sub| self.subscriptions.get(sub).map(Arc::as_ref))
    }

    pub fn subscription(&self, arn: &str) -> Result<&Subscription> {
        self.subscriptions
            .get(arn)
            .map(Arc::as_ref)
            .ok_or_else(SnsError::subscription_not_found)
    }

    pub fn set_subscription_attribute(&mut self, arn: &str, name: &str, value: &str) -> Result<()> {
        let fifo = {
            let sub = self.subscription(arn)?;
            self.topic(&sub.topic).map(Topic::is_fifo).unwrap_or(false)
        };
        let sub = self
            .subscriptions
            .get_mut(arn)
            .ok_or_else(SnsError::subscription_not_found)?;
        Arc::make_mut(sub).set(name, value, fifo, false)?;
        self.record_subscription(arn);
        Ok(())
    }

    /// ListSubscriptions: a page of every subscription of `account`.
    pub fn list_subscriptions(
        &self,
        account: &str,
        token: Option<&str>,
    ) -> Result<(Vec<&Subscription>, Option<String>)> {
        let start = match token.map(read_page_token) {
            Some(Some(token)) if self.subscriptions.contains_key(&token) => Bound::Included(token),
            Some(_) => return Err(SnsError::parameter("NextToken")),
            None => Bound::Unbounded,
        };
        let mut page: Vec<&Subscription> = self
            .subscriptions
            .range((start, Bound::Unbounded))
            .map(|(_, sub)| sub.as_ref())
            .filter(|sub| sub.topic.account == account)
            .take(PAGE + 1)
            .collect();
        let next = (page.len() > PAGE)
            .then(|| page.pop().map(|sub| page_token(&sub.arn)))
            .flatten();
        Ok((page, next))
    }

    /// ListSubscriptionsByTopic: a page of one topic's subscriptions.
    pub fn list_by_topic(
        &self,
        arn: &TopicArn,
        token: Option<&str>,
    ) -> Result<(Vec<&Subscription>, Option<String>)> {
        let topic = self.topic(arn)?;
        let start = match token {
            None => 0,
            Some(token) => read_page_token(token)
                .and_then(|token| token.parse::<usize>().ok())
                .filter(|start| *start <= topic.subscriptions.len())
                .ok_or_else(|| SnsError::parameter("NextToken"))?,
        };
        let page: Vec<&Subscription> = topic.subscriptions[start..]
            .iter()
            .take(PAGE)
            .filter_map(|sub| self.subscriptions.get(sub).map(Arc::as_ref))
            .collect();
        let end = start + PAGE;
        let next = (end < topic.subscriptions.len()).then(|| page_token(&end.to_string()));
        Ok((page, next))
    }
}

/// A token a subscriber gives back to confirm: as long as AWS's.
pub(super) fn confirmation_token() -> String {
    let mut token = String::with_capacity(128);
    while token.len() < 128 {
        token.push_str(&crate::queue::random::uuid().simple().to_string());
    }
    token.truncate(128);
    token
}
