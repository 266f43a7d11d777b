//! An ssq node inside the test process, started through the same
//! [`ssq::node::Node`] the binary runs: for tests that must reach the
//! service, the leadership or the metrics while Redis is real.

use std::sync::Arc;
use std::time::Duration;

use super::process::wait_for;
use super::redis::RedisServer;

/// A node leading over `redis`, stopped when dropped.
pub struct InProcessNode {
    pub service: Arc<ssq::service::Service>,
    pub leadership: Arc<ssq::leader::Leadership>,
    pub metrics: Arc<ssq::metrics::Metrics>,
    /// A client of its own to the same Redis, to look at what the node wrote.
    pub client: fred::prelude::Client,
    pub layout: ssq::store::redis::Layout,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    serving: Option<tokio::task::JoinHandle<Result<(), ssq::node::StartError>>>,
}

impl InProcessNode {
    /// Starts a node on `redis` and waits until it leads and serves. Its
    /// lease is long and renewed rarely, so that a test can change the lock
    /// by hand without a renewal noticing first.
    pub async fn start(redis: &RedisServer) -> InProcessNode {
        let args = [
            "ssq",
            "--listen",
            "127.0.0.1:0",
            "--redis-url",
            &redis.url(),
            "--node-id",
            "in-process",
            "--lock-ttl",
            "600s",
            "--lock-renew",
            "200s",
            "--lock-step-down",
            "400s",
            "--lock-retry",
            "100ms",
        ];
        let (config, queues) = ssq::config::Config::load_from(args.iter().map(Into::into).collect()).unwrap();
        let layout = ssq::store::redis::Layout::new(&config.redis_prefix);
        let listeners = ssq::node::Listeners::bind(&config).await.unwrap();
        let node = ssq::node::Node::new(config, queues).unwrap();
        let (service, leadership, metrics) = (
            node.service().clone(),
            node.leadership().clone(),
            node.metrics().clone(),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(node.serve(listeners, async {
            let _ = stopped.await;
        }));
        wait_for(Duration::from_secs(10), || {
            let leadership = leadership.clone();
            async move { leadership.is_serving() }
        })
        .await
        .expect("the in-process node leads within 10 s");
        InProcessNode {
            service,
            leadership,
            metrics,
            client: redis.client().await,
            layout,
            stop: Some(stop),
            serving: Some(serving),
        }
    }

    /// Shuts the node down as SIGTERM would, handing the lock over, and
    /// waits until it has.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(serving) = self.serving.take() {
            serving.await.unwrap().unwrap();
        }
    }

    /// Sends one message with `body` to `queue` through the service, and
    /// panics unless it is acknowledged.
    pub async fn send_acknowledged(&self, queue: &str, body: &str) {
        self.service
            .send(queue, vec![new_message(body)])
            .await
            .unwrap()
            .pop()
            .unwrap()
            .unwrap();
    }

    /// A leading node with one empty standard queue, `queue`.
    pub async fn start_with_queue(redis: &RedisServer, queue: &str) -> InProcessNode {
        let node = InProcessNode::start(redis).await;
        node.service
            .create_queue(
                queue,
                &std::collections::BTreeMap::new(),
                std::collections::BTreeMap::new(),
            )
            .await
            .unwrap();
        node
    }
}

impl Drop for InProcessNode {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub fn new_message(body: &str) -> ssq::queue::NewMessage {
    ssq::queue::NewMessage {
        body: body.into(),
        attributes: ssq::queue::MessageAttributes::new(),
        delay_seconds: None,
        sender_id: "t".into(),
        trace_header: None,
        group_id: None,
        dedup_id: None,
    }
}
