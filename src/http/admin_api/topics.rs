//! The admin page's SNS side: the topics and subscriptions the first shard
//! holds, with their counts (`ssq_sns_total`, `ssq_sns_subscription_total`,
//! under CloudWatch's names), and `POST /admin/api/sns`, an SNS call in
//! SNS's Query form run as any client's is (the page publishes a test
//! message with it: durable and fenced, refused on a passive).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;

use super::not_forged;
use crate::http::call::{Protocol, answer_error};
use crate::http::intake::sign_in::{Admin, sign_in_as};
use crate::http::state::AppState;
use crate::metrics::{self, SnsCounts};

#[derive(serde::Serialize)]
pub(super) struct TopicSummary {
    arn: String,
    name: String,
    fifo: bool,
    published: u64,
    delivered: u64,
    failed: u64,
    filtered_out: u64,
    subscriptions: Vec<SubscriptionSummary>,
}

#[derive(serde::Serialize)]
struct SubscriptionSummary {
    arn: String,
    protocol: &'static str,
    endpoint: String,
    pending: bool,
    raw: bool,
    filter_policy: Option<String>,
    replay_status: Option<&'static str>,
    delivered: u64,
    failed: u64,
    filtered_out: u64,
    redriven: u64,
    /// HTTP/S only: tries made to its endpoint, deliveries waiting to be
    /// sent or tried again, and the oldest one's age.
    tries: u64,
    waiting: usize,
    oldest_waiting_seconds: u64,
}

/// The topics of the first shard that `admin` sees, if this instance
/// serves it.
pub(super) fn summaries(state: &AppState, admin: &Admin) -> Vec<TopicSummary> {
    let shard = state.first_shard();
    if !shard.leadership.is_serving() {
        return Vec::new();
    }
    let counts: SnsCounts = state.metrics.sns_counts();
    let now = shard.api.service.now();
    let topics = shard.api.service.topics();
    topics
        .topics_after(None, usize::MAX)
        .into_iter()
        .filter(|topic| admin.sees(&topic.arn.account))
        .map(|topic| {
            let arn = topic.arn.to_string();
            let of_topic = |metric| counts.of_topic(&arn, metric);
            let subscriptions = topics
                .subscriptions_of(&topic.arn)
                .map(|sub| {
                    let of = |metric| counts.of_subscription(&sub.arn, metric);
                    let waiting = topics.waiting(&sub.arn);
                    SubscriptionSummary {
                        arn: sub.arn.clone(),
                        protocol: sub.protocol.as_str(),
                        endpoint: sub.endpoint.clone(),
                        pending: sub.pending,
                        raw: sub.raw(),
                        filter_policy: sub.attributes.get("FilterPolicy").cloned(),
                        replay_status: sub.replay.as_ref().map(|replay| replay.status.as_str()),
                        delivered: of(metrics::DELIVERED),
                        failed: of(metrics::FAILED),
                        filtered_out: of(metrics::FILTERED_OUT),
                        redriven: of(metrics::REDRIVEN),
                        tries: of(metrics::TRIED),
                        waiting: waiting.count,
                        oldest_waiting_seconds: waiting
                            .oldest_created_at
                            .map_or(0, |at| now.saturating_sub(at) / 1000),
                    }
                })
                .collect();
            TopicSummary {
                name: topic.arn.name.clone(),
                fifo: topic.arn.is_fifo(),
                published: of_topic("NumberOfMessagesPublished"),
                delivered: of_topic(metrics::DELIVERED),
                failed: of_topic(metrics::FAILED),
                filtered_out: of_topic(metrics::FILTERED_OUT),
                arn,
                subscriptions,
            }
        })
        .collect()
}

/// `POST /admin/api/sns`: one SNS call, its form in the body.
pub(super) async fn call(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let source = crate::http::intake::authorization::source_of(&parts.extensions);
    let admin = match sign_in_as(&state, &parts.headers, source).await {
        Ok(admin) => admin,
        Err(refused) => return refused,
    };
    let refused = |error| {
        let request_id = crate::queue::random::uuid().to_string();
        answer_error(&state, Protocol::Query, &request_id, "AdminSns", &error)
    };
    if let Err(error) = not_forged(&state, &parts.headers) {
        return refused(error);
    }
    let (body, _permit) = match state.body_budget.read(body, state.request_timeout).await {
        Ok(read) => read,
        Err(error) => return refused(error),
    };
    let form = crate::protocol::sns::read(&body, parts.uri.query());
    crate::http::call::sns::serve(&state, &parts, body, form, admin.caller().as_ref()).await
}
