//! Prometheus metrics: what `/metrics` shows.
//!
//! Counters are bumped on the request path (an atomic add each). Per-queue
//! message gauges are not maintained on that path at all: they are read from
//! the queues when a scrape asks for them.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use crate::queue::{Counts, FairCounts};
use crate::topic::deliveries::Waiting;

/// What one account holds, as the metrics show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountHolding {
    pub account: String,
    pub queues: usize,
    pub messages: u64,
    pub bytes: u64,
}

/// The SNS counters' values (`Metrics::sns_counts`).
#[derive(Debug, Default)]
pub struct SnsCounts {
    /// By topic ARN and metric name.
    pub topics: std::collections::HashMap<(String, String), u64>,
    /// By subscription ARN and metric name.
    pub subscriptions: std::collections::HashMap<(String, String), u64>,
}

impl SnsCounts {
    pub fn of_topic(&self, topic: &str, metric: &str) -> u64 {
        self.topics
            .get(&(topic.to_string(), metric.to_string()))
            .copied()
            .unwrap_or(0)
    }

    pub fn of_subscription(&self, subscription: &str, metric: &str) -> u64 {
        self.subscriptions
            .get(&(subscription.to_string(), metric.to_string()))
            .copied()
            .unwrap_or(0)
    }
}

/// CloudWatch's names of SNS's per-subscription counts.
pub const DELIVERED: &str = "NumberOfNotificationsDelivered";
pub const FAILED: &str = "NumberOfNotificationsFailed";
pub const FILTERED_OUT: &str = "NumberOfNotificationsFilteredOut";
pub const REDRIVEN: &str = "NumberOfNotificationsRedrivenToDlq";
pub const NOT_REDRIVEN: &str = "NumberOfNotificationsFailedToRedriveToDlq";
/// ssq's own beside them: tries to deliver to an HTTP/S endpoint.
pub const TRIED: &str = "NumberOfNotificationTries";
const SUBSCRIPTION_METRICS: [&str; 6] = [DELIVERED, FAILED, FILTERED_OUT, REDRIVEN, NOT_REDRIVEN, TRIED];

pub struct Metrics {
    registry: Registry,
    pub requests: IntCounterVec,
    pub request_seconds: HistogramVec,
    pub messages_sent: IntCounter,
    pub messages_received: IntCounter,
    pub messages_deleted: IntCounter,
    queue_messages: IntGaugeVec,
    oldest_message_age: IntGaugeVec,
    noisy_groups: IntGaugeVec,
    quiet_group_messages: IntGaugeVec,
    quiet_group_oldest_age: IntGaugeVec,
    /// 1 while this instance leads a shard and serves its queue calls, by shard.
    pub leader: IntGaugeVec,
    pub leader_transitions: IntCounter,
    pub step_downs: IntCounterVec,
    pub lock_acquire_attempts: IntCounter,
    pub lock_renew_failures: IntCounter,
    pub lock_renew_seconds: Histogram,
    pub commit_writes: Histogram,
    pub commit_seconds: Histogram,
    pub commit_failures: IntCounter,
    /// Shards this instance serves, set when scraped.
    pub shards_led: IntGauge,
    /// With --data-dir: bytes the data files take on disk.
    pub data_bytes: IntGauge,
    /// Requests this instance sent on to the leader of their queue's shard.
    pub forwarded: IntCounterVec,
    pub forward_seconds: Histogram,
    /// Messages between shards (`transfers.rs`), by step.
    pub transfers: IntCounterVec,
    /// SNS, by topic and CloudWatch's metric name.
    sns: IntCounterVec,
    sns_subscriptions: IntCounterVec,
    /// With --credentials: the keys in force, and the file's reloads by outcome.
    pub credential_keys: IntGauge,
    pub credential_reloads: IntCounterVec,
    /// With --audit-log: lines handed to its writer, and lines dropped.
    pub audit_lines: IntCounter,
    pub audit_dropped: IntCounter,
    /// Requests refused for their key's rate, by key.
    pub throttled: IntCounterVec,
    /// With --credentials: signed requests by account, and those refused
    /// for their account's rate.
    pub account_requests: IntCounterVec,
    pub account_throttled: IntCounterVec,
    /// With --credentials: what each account holds (queues, messages,
    /// bytes), set at each scrape.
    account_holdings: IntGaugeVec,
    /// HTTP/S subscriptions' deliveries waiting, and the oldest one's age,
    /// set at each scrape.
    deliveries_waiting: IntGaugeVec,
    oldest_delivery_age: IntGaugeVec,
}

impl Metrics {
    pub fn new(node_id: &str) -> Metrics {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "ssq_requests_total",
                "SQS API requests by action and outcome (ok, or the error code).",
            ),
            &["action", "outcome"],
        )
        .expect("valid metric");
        let request_seconds = HistogramVec::new(
            HistogramOpts::new(
                "ssq_request_duration_seconds",
                "Time to answer an SQS API request, by action.",
            )
            .buckets(vec![
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                5.0, 10.0, 20.0,
            ]),
            &["action"],
        )
        .expect("valid metric");
        let counter = |name: &str, help: &str| IntCounter::new(name, help).expect("valid metric");
        let messages_sent = counter(
            "ssq_messages_sent_total",
            "Messages accepted by SendMessage and SendMessageBatch.",
        );
        let messages_received = counter(
            "ssq_messages_received_total",
            "Messages handed out by ReceiveMessage.",
        );
        let messages_deleted = counter(
            "ssq_messages_deleted_total",
            "Messages deleted by DeleteMessage and DeleteMessageBatch.",
        );
        let queue_messages = IntGaugeVec::new(
            Opts::new(
                "ssq_queue_messages",
                "Messages per queue by state: visible, in_flight or delayed.",
            ),
            &["queue", "state"],
        )
        .expect("valid metric");
        let oldest_message_age = IntGaugeVec::new(
            Opts::new(
                "ssq_queue_oldest_message_age_seconds",
                "Age of the oldest message a queue holds, in any state (CloudWatch's ApproximateAgeOfOldestMessage); 0 when it holds none.",
            ),
            &["queue"],
        )
        .expect("valid metric");
        let noisy_groups = IntGaugeVec::new(
            Opts::new(
                "ssq_queue_noisy_groups",
                "Tenants (message groups) of a standard queue that fair delivery holds back (CloudWatch's ApproximateNumberOfNoisyGroups).",
            ),
            &["queue"],
        )
        .expect("valid metric");
        let quiet_group_messages = IntGaugeVec::new(
            Opts::new(
                "ssq_queue_quiet_group_messages",
                "Messages of quiet tenants (and without a group) by state: visible, in_flight or delayed (CloudWatch's ApproximateNumberOfMessages{Visible,NotVisible,Delayed}InQuietGroups).",
            ),
            &["queue", "state"],
        )
        .expect("valid metric");
        let quiet_group_oldest_age = IntGaugeVec::new(
            Opts::new(
                "ssq_queue_quiet_group_oldest_message_age_seconds",
                "Age of the oldest message of a quiet tenant or without a group (CloudWatch's ApproximateAgeOfOldestMessageInQuietGroups); 0 when there is none.",
            ),
            &["queue"],
        )
        .expect("valid metric");
        let leader = IntGaugeVec::new(
            Opts::new(
                "ssq_leader",
                "1 while this instance leads the shard and serves its queue calls, else 0 (one shard, 0, unless --shards).",
            )
            .const_label("node_id", node_id),
            &["shard"],
        )
        .expect("valid metric");
        let leader_transitions = counter(
            "ssq_leader_transitions_total",
            "Times this instance became leader or stopped being leader.",
        );
        let step_downs = IntCounterVec::new(
            Opts::new(
                "ssq_step_downs_total",
                "Times this leader stepped down, by reason.",
            ),
            &["reason"],
        )
        .expect("valid metric");
        let lock_acquire_attempts = counter(
            "ssq_lock_acquire_attempts_total",
            "Attempts to take the leader lock.",
        );
        let lock_renew_failures = counter(
            "ssq_lock_renew_failures_total",
            "Lock renewals that failed: an error, a timeout, or the lock lost.",
        );
        let lock_renew_seconds = Histogram::with_opts(
            HistogramOpts::new("ssq_lock_renew_seconds", "Round trip of a leader lock renewal.").buckets(
                vec![
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                ],
            ),
        )
        .expect("valid metric");
        let commit_writes = Histogram::with_opts(
            HistogramOpts::new(
                "ssq_commit_writes",
                "Requests' writes gathered into one Redis commit.",
            )
            .buckets(vec![
                1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
            ]),
        )
        .expect("valid metric");
        let commit_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "ssq_commit_seconds",
                "One group commit to the store: a round trip to Redis, or a transaction on disk.",
            )
            .buckets(vec![
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
            ]),
        )
        .expect("valid metric");
        let commit_failures = counter(
            "ssq_commit_failures_total",
            "Group commits that failed (not counting fenced ones).",
        );
        let data_bytes = IntGauge::new(
            "ssq_data_bytes",
            "With --data-dir: bytes the data files (database, WAL) take on disk.",
        )
        .expect("valid metric");
        let credential_keys = IntGauge::new(
            "ssq_credential_keys",
            "With --credentials: the access keys in force.",
        )
        .expect("valid metric");
        let credential_reloads = IntCounterVec::new(
            Opts::new(
                "ssq_credential_reloads_total",
                "With --credentials: the file read again (SIGHUP, or a change), by outcome: applied, or refused (the keys in force stay).",
            ),
            &["outcome"],
        )
        .expect("valid metric");
        let audit_lines = counter(
            "ssq_audit_lines_total",
            "With --audit-log: lines handed to the audit log's writer.",
        );
        let audit_dropped = counter(
            "ssq_audit_dropped_total",
            "With --audit-log: lines dropped because the writer was behind (its queue full), rather than slow requests.",
        );
        let throttled = IntCounterVec::new(
            Opts::new(
                "ssq_throttled_total",
                "Requests refused with RequestThrottled: over their access key's requests_per_second, by key.",
            ),
            &["key"],
        )
        .expect("valid metric");
        let by_account = |name: &str, help: &str| {
            IntCounterVec::new(Opts::new(name, help), &["account"]).expect("valid metric")
        };
        let account_requests = by_account(
            "ssq_account_requests_total",
            "With --credentials: signed requests (SQS and SNS), by the account of their key.",
        );
        let account_throttled = by_account(
            "ssq_account_throttled_total",
            "Requests refused with RequestThrottled: over their account's requests_per_second, by account.",
        );
        let account_holdings = IntGaugeVec::new(
            Opts::new(
                "ssq_account_holdings",
                "With --credentials: what each account holds, by what: queues, messages, or bytes (message payload, counted against its max_bytes).",
            ),
            &["account", "what"],
        )
        .expect("valid metric");
        let subscription_gauge = |name: &str, help: &str| {
            IntGaugeVec::new(Opts::new(name, help), &["topic", "subscription"]).expect("valid metric")
        };
        let deliveries_waiting = subscription_gauge(
            "ssq_sns_subscription_deliveries_waiting",
            "Deliveries an HTTP/S subscription has waiting to be sent or tried again (at most 10,000, past which \
             its topic's Publish is refused).",
        );
        let oldest_delivery_age = subscription_gauge(
            "ssq_sns_subscription_oldest_delivery_age_seconds",
            "Age of an HTTP/S subscription's oldest waiting delivery.",
        );
        let shards_led = IntGauge::new(
            "ssq_shards_led",
            "Shards this instance leads and serves (--shards; 1 or 0 in an unsharded group).",
        )
        .expect("valid metric");
        let forwarded = IntCounterVec::new(
            Opts::new(
                "ssq_forwarded_requests_total",
                "SQS requests for a queue of a shard led elsewhere, sent on to its leader, by outcome \
                 (the HTTP status it answered, or no_leader, unreachable).",
            ),
            &["outcome"],
        )
        .expect("valid metric");
        let forward_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "ssq_forward_seconds",
                "Time from sending a request on to a shard's leader to its answer (long polls included).",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0,
            ]),
        )
        .expect("valid metric");
        let transfers = IntCounterVec::new(
            Opts::new(
                "ssq_shard_transfers_total",
                "Dead letters and moved messages bound for a queue of another shard, by step: delivered (from \
                 this instance's outbox into the other shard's inbox), returned (their queue did not exist: back \
                 where they were), taken_in (from this instance's inbox into its queues).",
            ),
            &["step"],
        )
        .expect("valid metric");
        let sns = IntCounterVec::new(
            Opts::new(
                "ssq_sns_total",
                "SNS by topic and CloudWatch's metric name: NumberOfMessagesPublished, \
                 NumberOfNotificationsDelivered, NumberOfNotificationsFailed, NumberOfNotificationsFilteredOut.",
            ),
            &["topic", "metric"],
        )
        .expect("valid metric");
        let sns_subscriptions = IntCounterVec::new(
            Opts::new(
                "ssq_sns_subscription_total",
                "SNS notifications by subscription and CloudWatch's metric name: NumberOfNotificationsDelivered, \
                 NumberOfNotificationsFailed, NumberOfNotificationsFilteredOut, NumberOfNotificationsRedrivenToDlq, \
                 NumberOfNotificationsFailedToRedriveToDlq, and ssq's NumberOfNotificationTries (tries to \
                 deliver to an HTTP/S endpoint).",
            ),
            &["topic", "subscription", "metric"],
        )
        .expect("valid metric");
        let build_info = IntGaugeVec::new(
            Opts::new(
                "ssq_build_info",
                "1, labelled with the version of ssq this instance runs and the commit it was built from (join on \
                 it to see what runs where).",
            ),
            &["version", "commit"],
        )
        .expect("valid metric");
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION"), env!("SSQ_COMMIT")])
            .set(1);
        // The process_* metrics every Prometheus client exports: CPU time,
        // resident memory, open and maximum file descriptors, start time.
        #[cfg(target_os = "linux")]
        registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .expect("metric names are unique");
        for collector in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(build_info),
            Box::new(transfers.clone()),
            Box::new(sns.clone()),
            Box::new(sns_subscriptions.clone()),
            Box::new(shards_led.clone()),
            Box::new(credential_keys.clone()),
            Box::new(credential_reloads.clone()),
            Box::new(audit_lines.clone()),
            Box::new(audit_dropped.clone()),
            Box::new(throttled.clone()),
            Box::new(account_requests.clone()),
            Box::new(account_throttled.clone()),
            Box::new(account_holdings.clone()),
            Box::new(deliveries_waiting.clone()),
            Box::new(oldest_delivery_age.clone()),
            Box::new(data_bytes.clone()),
            Box::new(forwarded.clone()),
            Box::new(forward_seconds.clone()),
            Box::new(request_seconds.clone()),
            Box::new(messages_sent.clone()),
            Box::new(messages_received.clone()),
            Box::new(messages_deleted.clone()),
            Box::new(queue_messages.clone()),
            Box::new(oldest_message_age.clone()),
            Box::new(noisy_groups.clone()),
            Box::new(quiet_group_messages.clone()),
            Box::new(quiet_group_oldest_age.clone()),
            Box::new(leader.clone()),
            Box::new(leader_transitions.clone()),
            Box::new(step_downs.clone()),
            Box::new(lock_acquire_attempts.clone()),
            Box::new(lock_renew_failures.clone()),
            Box::new(lock_renew_seconds.clone()),
            Box::new(commit_writes.clone()),
            Box::new(commit_seconds.clone()),
            Box::new(commit_failures.clone()),
        ] {
            registry.register(collector).expect("metric names are unique");
        }
        Metrics {
            registry,
            requests,
            request_seconds,
            messages_sent,
            messages_received,
            messages_deleted,
            queue_messages,
            oldest_message_age,
            noisy_groups,
            quiet_group_messages,
            quiet_group_oldest_age,
            leader,
            leader_transitions,
            step_downs,
            lock_acquire_attempts,
            lock_renew_failures,
            lock_renew_seconds,
            commit_writes,
            commit_seconds,
            commit_failures,
            shards_led,
            data_bytes,
            forwarded,
            forward_seconds,
            transfers,
            sns,
            sns_subscriptions,
            credential_keys,
            credential_reloads,
            audit_lines,
            audit_dropped,
            throttled,
            account_requests,
            account_throttled,
            account_holdings,
            deliveries_waiting,
            oldest_delivery_age,
        }
    }

    /// Counts one Publish on `topic` (its ARN): the copies delivered, the
    /// ones that failed, and the subscriptions its filters kept it from.
    pub fn sns_published(&self, topic: &str, delivered: usize, failed: usize, filtered_out: usize) {
        let count = |metric: &str, n: usize| {
            if n > 0 {
                self.sns.with_label_values(&[topic, metric]).inc_by(n as u64);
            }
        };
        count("NumberOfMessagesPublished", 1);
        count("NumberOfNotificationsDelivered", delivered);
        count("NumberOfNotificationsFailed", failed);
        count("NumberOfNotificationsFilteredOut", filtered_out);
    }

    /// Counts one notification of `subscription` (of `topic`) under one of
    /// [`SUBSCRIPTION_METRICS`].
    pub fn sns_notification(&self, topic: &str, subscription: &str, metric: &'static str) {
        self.sns_subscriptions
            .with_label_values(&[topic, subscription, metric])
            .inc();
    }

    /// What the SNS counters say: by (topic, metric), and by (subscription,
    /// metric). Read from the counters as they are, creating no series.
    pub fn sns_counts(&self) -> SnsCounts {
        let mut counts = SnsCounts::default();
        let label = |metric: &prometheus::proto::Metric, name: &str| {
            metric
                .get_label()
                .iter()
                .find(|pair| pair.name() == name)
                .map(|pair| pair.value().to_string())
                .unwrap_or_default()
        };
        for family in prometheus::core::Collector::collect(&self.sns) {
            for metric in family.get_metric() {
                let key = (label(metric, "topic"), label(metric, "metric"));
                counts.topics.insert(key, metric.get_counter().get_value() as u64);
            }
        }
        for family in prometheus::core::Collector::collect(&self.sns_subscriptions) {
            for metric in family.get_metric() {
                let key = (label(metric, "subscription"), label(metric, "metric"));
                counts
                    .subscriptions
                    .insert(key, metric.get_counter().get_value() as u64);
            }
        }
        counts
    }

    /// Drops an ended subscription's series.
    pub fn sns_subscription_ended(&self, topic: &str, subscription: &str) {
        for metric in SUBSCRIPTION_METRICS {
            let _ = self
                .sns_subscriptions
                .remove_label_values(&[topic, subscription, metric]);
        }
    }

    /// Drops a deleted topic's series, so that they do not outlive it.
    pub fn sns_topic_deleted(&self, topic: &str) {
        for metric in [
            "NumberOfMessagesPublished",
            "NumberOfNotificationsDelivered",
            "NumberOfNotificationsFailed",
            "NumberOfNotificationsFilteredOut",
        ] {
            let _ = self.sns.remove_label_values(&[topic, metric]);
        }
    }

    /// Sets what each account holds, summed over the shards' `holdings`.
    pub fn set_account_holdings(&self, holdings: &[AccountHolding]) {
        self.account_holdings.reset();
        for holding in holdings {
            for (what, value) in [
                ("queues", holding.queues as u64),
                ("messages", holding.messages),
                ("bytes", holding.bytes),
            ] {
                self.account_holdings
                    .with_label_values(&[holding.account.as_str(), what])
                    .add(value as i64);
            }
        }
    }

    /// Sets what each HTTP/S subscription has waiting: `(subscription,
    /// topic, waiting)`, `now` in wall-clock milliseconds for the oldest
    /// one's age. Subscriptions with nothing waiting have no series.
    pub fn set_deliveries_waiting(&self, waiting: &[(String, String, Waiting)], now: u64) {
        self.deliveries_waiting.reset();
        self.oldest_delivery_age.reset();
        for (subscription, topic, waiting) in waiting {
            let labels = [topic.as_str(), subscription.as_str()];
            self.deliveries_waiting
                .with_label_values(&labels)
                .set(waiting.count as i64);
            let age = waiting
                .oldest_created_at
                .map_or(0, |at| now.saturating_sub(at) / 1000);
            self.oldest_delivery_age
                .with_label_values(&labels)
                .set(age as i64);
        }
    }

    /// The text exposition format, with queue gauges set from `counts`
    /// (`now` in wall-clock milliseconds, for the messages' ages).
    pub fn render(&self, counts: &[(String, Counts, FairCounts)], now: u64) -> String {
        for gauge in [
            &self.queue_messages,
            &self.oldest_message_age,
            &self.noisy_groups,
            &self.quiet_group_messages,
            &self.quiet_group_oldest_age,
        ] {
            gauge.reset();
        }
        let age_seconds =
            |sent_at: Option<u64>| (sent_at.map_or(0, |sent_at| now.saturating_sub(sent_at)) / 1000) as i64;
        for (queue, counts, fair) in counts {
            let queue = queue.as_str();
            self.oldest_message_age
                .with_label_values(&[queue])
                .set(age_seconds(counts.oldest_sent_at));
            self.quiet_group_oldest_age
                .with_label_values(&[queue])
                .set(age_seconds(fair.oldest_in_quiet_groups_sent_at));
            self.noisy_groups
                .with_label_values(&[queue])
                .set(fair.noisy_groups as i64);
            for (state, all, quiet) in [
                ("visible", counts.visible, fair.visible_in_quiet_groups),
                ("in_flight", counts.in_flight, fair.not_visible_in_quiet_groups),
                ("delayed", counts.delayed, fair.delayed_in_quiet_groups),
            ] {
                self.queue_messages
                    .with_label_values(&[queue, state])
                    .set(all as i64);
                self.quiet_group_messages
                    .with_label_values(&[queue, state])
                    .set(quiet as i64);
            }
        }
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("text encoding into a Vec cannot fail");
        String::from_utf8(out).expect("the text format is UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_and_the_build_are_reported() {
        let text = Metrics::new("test").render(&[], 1_700_000_000_000);
        for name in [
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_open_fds ",
            "process_max_fds ",
            "process_start_time_seconds ",
        ] {
            assert!(
                text.lines().any(|line| line.starts_with(name)),
                "{name} in {text}"
            );
        }
        let build = format!(
            "ssq_build_info{{commit=\"{}\",version=\"{}\"}} 1",
            env!("SSQ_COMMIT"),
            env!("CARGO_PKG_VERSION")
        );
        assert!(text.contains(&build), "{build} in {text}");
    }

    #[test]
    fn queues_report_the_age_of_their_oldest_message() {
        let metrics = Metrics::new("test");
        let now = 1_700_000_090_000;
        let held = Counts {
            visible: 1,
            in_flight: 1,
            delayed: 0,
            oldest_sent_at: Some(now - 90_500),
        };
        let fair = FairCounts {
            noisy_groups: 1,
            visible_in_quiet_groups: 1,
            not_visible_in_quiet_groups: 0,
            delayed_in_quiet_groups: 0,
            oldest_in_quiet_groups_sent_at: Some(now - 20_000),
        };
        let text = metrics.render(
            &[
                ("orders".into(), held, fair),
                ("empty".into(), Counts::default(), FairCounts::default()),
            ],
            now,
        );
        assert!(
            text.contains("ssq_queue_oldest_message_age_seconds{queue=\"orders\"} 90"),
            "{text}"
        );
        assert!(
            text.contains("ssq_queue_oldest_message_age_seconds{queue=\"empty\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("ssq_queue_messages{queue=\"orders\",state=\"in_flight\"} 1"),
            "{text}"
        );
        for line in [
            "ssq_queue_noisy_groups{queue=\"orders\"} 1",
            "ssq_queue_quiet_group_messages{queue=\"orders\",state=\"in_flight\"} 0",
            "ssq_queue_quiet_group_messages{queue=\"orders\",state=\"visible\"} 1",
            "ssq_queue_quiet_group_oldest_message_age_seconds{queue=\"orders\"} 20",
            "ssq_queue_quiet_group_oldest_message_age_seconds{queue=\"empty\"} 0",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
