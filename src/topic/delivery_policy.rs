//! Delivery policies for HTTP subscriptions: how often and how far apart a
//! failed delivery is tried again, and the Content-Type it is sent with.
//! The topic's `http.defaultHealthyRetryPolicy`, `defaultThrottlePolicy`
//! and `defaultRequestPolicy` apply unless the subscription's own
//! `healthyRetryPolicy`, `throttlePolicy` and `requestPolicy` override them
//! (and the topic does not disable overrides); AWS's defaults fill in the
//! rest.

use serde_json::Value;

/// AWS's limit on retries of an HTTP delivery.
const MAX_RETRIES: u64 = 100;
/// AWS's limit on a delay between tries, in seconds.
const MAX_DELAY_SECONDS: u64 = 3600;

/// How a delivery is sent and retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryPolicy {
    pub min_delay: u64,
    pub max_delay: u64,
    pub retries: u64,
    pub no_delay_retries: u64,
    pub min_delay_retries: u64,
    pub max_delay_retries: u64,
    pub backoff: Backoff,
    pub content_type: String,
    /// The throttle policy's `maxReceivesPerSecond`: at most this many
    /// deliveries a second to the subscription (none when unset).
    pub max_per_second: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    Linear,
    Arithmetic,
    Geometric,
    Exponential,
}

impl Default for DeliveryPolicy {
    /// AWS's default for HTTP/S: three retries, 20 seconds apart.
    fn default() -> DeliveryPolicy {
        DeliveryPolicy {
            min_delay: 20,
            max_delay: 20,
            retries: 3,
            no_delay_retries: 0,
            min_delay_retries: 0,
            max_delay_retries: 0,
            backoff: Backoff::Linear,
            content_type: "text/plain; charset=UTF-8".into(),
            max_per_second: None,
        }
    }
}

impl DeliveryPolicy {
    /// The policy a subscription's deliveries follow.
    pub fn effective(topic: Option<&str>, subscription: Option<&str>) -> DeliveryPolicy {
        let mut policy = DeliveryPolicy::default();
        let parse = |text: Option<&str>| text.and_then(|text| serde_json::from_str::<Value>(text).ok());
        let topic = parse(topic);
        let http = topic.as_ref().and_then(|topic| topic.get("http"));
        if let Some(http) = http {
            policy.apply_retry(http.get("defaultHealthyRetryPolicy"));
            policy.apply_throttle(http.get("defaultThrottlePolicy"));
            policy.apply_request(http.get("defaultRequestPolicy"));
        }
        let overrides_allowed = !http
            .and_then(|http| http.get("disableSubscriptionOverrides"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if overrides_allowed && let Some(own) = parse(subscription) {
            policy.apply_retry(own.get("healthyRetryPolicy"));
            policy.apply_throttle(own.get("throttlePolicy"));
            policy.apply_request(own.get("requestPolicy"));
        }
        policy
    }

    fn apply_retry(&mut self, retry: Option<&Value>) {
        let Some(retry) = retry else { return };
        let number = |name: &str, limit: u64| retry.get(name).and_then(Value::as_u64).map(|n| n.min(limit));
        self.min_delay = number("minDelayTarget", MAX_DELAY_SECONDS).unwrap_or(self.min_delay);
        self.max_delay = number("maxDelayTarget", MAX_DELAY_SECONDS)
            .unwrap_or(self.max_delay)
            .max(self.min_delay);
        self.retries = number("numRetries", MAX_RETRIES).unwrap_or(self.retries);
        self.no_delay_retries = number("numNoDelayRetries", MAX_RETRIES).unwrap_or(self.no_delay_retries);
        self.min_delay_retries = number("numMinDelayRetries", MAX_RETRIES).unwrap_or(self.min_delay_retries);
        self.max_delay_retries = number("numMaxDelayRetries", MAX_RETRIES).unwrap_or(self.max_delay_retries);
        self.backoff = match retry.get("backoffFunction").and_then(Value::as_str) {
            Some("arithmetic") => Backoff::Arithmetic,
            Some("geometric") => Backoff::Geometric,
            Some("exponential") => Backoff::Exponential,
            Some("linear") => Backoff::Linear,
            _ => self.backoff,
        };
    }

    fn apply_throttle(&mut self, throttle: Option<&Value>) {
        if let Some(rate) = throttle
            .and_then(|throttle| throttle.get("maxReceivesPerSecond"))
            .and_then(Value::as_u64)
            .filter(|rate| *rate > 0)
        {
            self.max_per_second = Some(rate);
        }
    }

    fn apply_request(&mut self, request: Option<&Value>) {
        if let Some(content_type) = request
            .and_then(|request| request.get("headerContentType"))
            .and_then(Value::as_str)
        {
            self.content_type = content_type.to_string();
        }
    }

    /// The delay in seconds before each retry, in AWS's four phases: the
    /// immediate retries, those at the minimum delay, the backoff phase
    /// from the minimum to the maximum, and those at the maximum.
    pub fn delays(&self) -> Vec<u64> {
        let no_delay = self.no_delay_retries.min(self.retries);
        let at_min = self.min_delay_retries.min(self.retries - no_delay);
        let at_max = self.max_delay_retries.min(self.retries - no_delay - at_min);
        let backoff = self.retries - no_delay - at_min - at_max;
        let (min, max) = (self.min_delay, self.max_delay);
        let step = |i: u64| -> u64 {
            if backoff <= 1 {
                return max;
            }
            let fraction = (i + 1) as f64 / backoff as f64;
            let shaped = match self.backoff {
                Backoff::Linear => fraction,
                Backoff::Arithmetic => fraction * fraction,
                Backoff::Geometric => fraction.powi(3),
                Backoff::Exponential => (2f64.powf(fraction * 10.0) - 1.0) / 1023.0,
            };
            min + ((max - min) as f64 * shaped).round() as u64
        };
        let mut delays = Vec::with_capacity(self.retries as usize);
        delays.extend((0..no_delay).map(|_| 0));
        delays.extend((0..at_min).map(|_| min));
        delays.extend((0..backoff).map(step));
        delays.extend((0..at_max).map(|_| max));
        delays
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_default_is_three_retries_twenty_seconds_apart() {
        assert_eq!(DeliveryPolicy::effective(None, None).delays(), vec![20, 20, 20]);
    }

    #[test]
    fn phases_follow_the_policy_and_subscriptions_override_the_topic() {
        let topic = r#"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":1,"maxDelayTarget":9,"numRetries":6,
            "numNoDelayRetries":1,"numMinDelayRetries":1,"numMaxDelayRetries":1,"backoffFunction":"linear"},
            "defaultRequestPolicy":{"headerContentType":"application/json"}}}"#;
        let policy = DeliveryPolicy::effective(Some(topic), None);
        assert_eq!(policy.delays(), vec![0, 1, 4, 6, 9, 9]);
        assert_eq!(policy.content_type, "application/json");
        let throttled = DeliveryPolicy::effective(
            Some(r#"{"http":{"defaultThrottlePolicy":{"maxReceivesPerSecond":5}}}"#),
            Some(r#"{"throttlePolicy":{"maxReceivesPerSecond":2}}"#),
        );
        assert_eq!(
            throttled.max_per_second,
            Some(2),
            "the subscription's own throttle"
        );
        assert_eq!(DeliveryPolicy::effective(None, None).max_per_second, None);
        let own = r#"{"healthyRetryPolicy":{"numRetries":1,"minDelayTarget":2,"maxDelayTarget":2}}"#;
        assert_eq!(
            DeliveryPolicy::effective(Some(topic), Some(own)).delays().len(),
            1
        );
        let locked = r#"{"http":{"disableSubscriptionOverrides":true}}"#;
        assert_eq!(
            DeliveryPolicy::effective(Some(locked), Some(own)).delays(),
            vec![20, 20, 20]
        );
        let huge = r#"{"healthyRetryPolicy":{"numRetries":100000,"maxDelayTarget":999999}}"#;
        let capped = DeliveryPolicy::effective(None, Some(huge));
        assert_eq!(capped.delays().len(), 100);
        assert!(capped.delays().iter().all(|d| *d <= 3600));
    }
}
