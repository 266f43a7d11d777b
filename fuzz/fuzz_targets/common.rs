//! Runs one decoded request through the whole action layer on a fresh
//! memory-only service, on a paused clock (long polls then cost nothing),
//! its answer rendered by `R` as its wire format renders it; and that
//! service, with its queues, for the SNS target.

use std::sync::Arc;

use ssq::api::{Action, Api, Input, Render, RequestContext, dispatch};
use ssq::queue::clock::SystemClock;
use ssq::metrics::Metrics;
use ssq::service::Service;

// Every target but SNS's, which dispatches its own actions.
#[allow(dead_code)]
pub fn run<R: Render>(action: Action, input: Input) {
    with_queues(|api, ctx| async move {
        // Any answer is fine; a panic or a hang is not. Errors must be SQS's.
        if let Err(error) = dispatch::<R>(&api, &ctx, action, input).await {
            assert_ne!(error.code, ssq::error::ErrorCode::InternalError, "{error}");
        }
    });
}

/// Runs `then` on a fresh memory-only service holding a standard queue `q`
/// and a FIFO queue `q.fifo`, on a paused clock (long polls then cost
/// nothing).
pub fn with_queues<F: std::future::Future<Output = ()>>(then: impl FnOnce(Arc<Api>, Arc<RequestContext>) -> F) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let api = Arc::new(Api::new(Arc::new(Service::new(Arc::new(SystemClock), Arc::new(Metrics::new("fuzz"))))));
        let ctx = Arc::new(RequestContext {
            base_url: "http://fuzz".into(),
            account_id: "000000000000".into(),
            region: ssq::api::RequestRegion::known("us-east-1"),
            home: ssq::queue::Home { account: "000000000000".into(), region: "us-east-1".into() },
            key_id: None,
            identity: None,
            max_queues: None,
            sender_id: "000000000000".into(),
            trace_id: None,
        });
        for name in ["q", "q.fifo"] {
            let tree = serde_json::json!({"QueueName": name, "Attributes": if name.ends_with(".fifo") { serde_json::json!({"FifoQueue": "true"}) } else { serde_json::json!({}) }});
            dispatch::<ssq::api::AsTree>(&api, &ctx, Action::CreateQueue, Input::Tree(tree)).await.expect("the queues are valid");
        }
        then(api, ctx).await;
    });
}
