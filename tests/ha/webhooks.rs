//! HTTP subscriptions as durable and as isolated as queue copies, through
//! real ssq processes and endpoints on loopback (`common::webhook`): a
//! stuck endpoint and a trickling one beside healthy ones of the same topic
//! and of another; kills (SIGKILL) on `--data-dir`, and failovers on Redis,
//! Postgres and a sharded group, while endpoints answer 500 to some first
//! tries, every acknowledged publication reaching every endpoint; an
//! endpoint down at first getting everything once it is up, within its
//! delivery policy; a stuck endpoint's backlog given up into its
//! dead-letter queue once its policy's time has passed.

use std::time::{Duration, Instant};

use crate::common::webhook::{Answer, Receiver};
use crate::common::{PostgresServer, RedisServer, Server, sns_client_for, wait_for};
use crate::disk::{DataDir, kill_9, start_on};

/// A delivery policy with short waits: three retries a second apart.
const QUICK_RETRIES: &str =
    r#"{"healthyRetryPolicy": {"minDelayTarget": 1, "maxDelayTarget": 1, "numRetries": 3}}"#;

/// Subscribes `receiver` to `topic` with raw delivery (its notifications
/// are the messages) and `policy`, and confirms it as an endpoint does.
async fn subscribe(sns: &aws_sdk_sns::Client, topic: &str, receiver: &Receiver, policy: Option<&str>) {
    let mut request = sns
        .subscribe()
        .topic_arn(topic)
        .protocol("http")
        .endpoint(&receiver.url)
        .attributes("RawMessageDelivery", "true");
    if let Some(policy) = policy {
        request = request.attributes("DeliveryPolicy", policy);
    }
    request.send().await.unwrap();
    let confirmed = wait_for(Duration::from_secs(10), || async {
        receiver.confirm_all().await > 0
    })
    .await;
    assert!(
        confirmed.is_some(),
        "{} got its SubscriptionConfirmation",
        receiver.url
    );
}

/// Three endpoints subscribed to `topic` with quick retries, each
/// answering 500 to one first try in ten.
async fn flaky_endpoints(sns: &aws_sdk_sns::Client, topic: &str) -> Vec<Receiver> {
    let mut receivers = Vec::new();
    for _ in 0..3 {
        let receiver = Receiver::start(Answer::Healthy).await;
        subscribe(sns, topic, &receiver, Some(QUICK_RETRIES)).await;
        receiver.answer(Answer::FailFirstTryOneIn(10));
        receivers.push(receiver);
    }
    receivers
}

async fn create_topic(sns: &aws_sdk_sns::Client, name: &str) -> String {
    crate::common::create_topic(sns, name).await
}

/// Waits until `receiver` holds every one of `bodies`; how long it took,
/// or the test fails naming how many are missing.
async fn everything_reaches(receiver: &Receiver, bodies: &[String], limit: Duration) -> Duration {
    let took = wait_for(limit, || async {
        let got = receiver.notifications();
        bodies.iter().all(|body| got.contains(body))
    })
    .await;
    let got = receiver.notifications();
    let missing = bodies.iter().filter(|body| !got.contains(*body)).count();
    took.unwrap_or_else(|| {
        panic!(
            "{} missed {missing} of {} after {limit:?}",
            receiver.url,
            bodies.len()
        )
    })
}

/// One stuck endpoint and one that answers a byte at a time hold up no
/// other: a healthy endpoint of the same topic, and one of another topic,
/// get every publication within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_endpoint_holds_up_no_other() {
    let server = Server::start();
    let sns = sns_client_for(&server.url);
    let (a, b) = (
        create_topic(&sns, "team-a").await,
        create_topic(&sns, "team-b").await,
    );
    let stuck = Receiver::start(Answer::Healthy).await;
    let trickling = Receiver::start(Answer::Healthy).await;
    let healthy_a = Receiver::start(Answer::Healthy).await;
    let healthy_b = Receiver::start(Answer::Healthy).await;
    for receiver in [&stuck, &trickling, &healthy_a] {
        subscribe(&sns, &a, receiver, None).await;
    }
    subscribe(&sns, &b, &healthy_b, None).await;
    stuck.answer(Answer::Stuck);
    trickling.answer(Answer::Trickle(Duration::from_millis(100)));

    let padding = "p".repeat(16 * 1024);
    let started = Instant::now();
    let mut to_a = Vec::new();
    let mut to_b = Vec::new();
    let mut publishing = tokio::task::JoinSet::new();
    for task in 0..8 {
        let (sns, a, b, padding) = (sns.clone(), a.clone(), b.clone(), padding.clone());
        publishing.spawn(async move {
            let mut sent = (Vec::new(), Vec::new());
            for n in 0..250 {
                let body = format!("a-{task}-{n}-{padding}");
                sns.publish().topic_arn(&a).message(&body).send().await.unwrap();
                sent.0.push(body);
                if n % 10 == 0 {
                    let body = format!("b-{task}-{n}");
                    sns.publish().topic_arn(&b).message(&body).send().await.unwrap();
                    sent.1.push(body);
                }
            }
            sent
        });
    }
    while let Some(sent) = publishing.join_next().await {
        let (a, b) = sent.unwrap();
        to_a.extend(a);
        to_b.extend(b);
    }
    let published = started.elapsed();
    let took_a = everything_reaches(&healthy_a, &to_a, Duration::from_secs(10)).await;
    let took_b = everything_reaches(&healthy_b, &to_b, Duration::from_secs(10)).await;
    println!(
        "{} publications to A and {} to B in {published:?}; every one at A's healthy endpoint {took_a:?} later, at \
         B's {took_b:?}; the trickling endpoint had {}",
        to_a.len(),
        to_b.len(),
        trickling.notifications().len()
    );
    assert_eq!((to_a.len(), to_b.len()), (2_000, 200));
    // The stuck endpoint's backlog is seen from outside.
    let (_, metrics) = server.get("/metrics").await.expect("/metrics answers");
    let waiting: Vec<u64> = metrics
        .lines()
        .filter(|line| line.starts_with("ssq_sns_subscription_deliveries_waiting{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
        .collect();
    assert!(
        waiting.iter().any(|n| *n > 1_000),
        "the stuck endpoint's deliveries wait, as /metrics shows: {waiting:?}"
    );
    assert!(
        metrics.contains("ssq_sns_subscription_oldest_delivery_age_seconds{"),
        "{metrics}"
    );
}

/// With `--data-dir`, killed three times while it publishes to endpoints
/// that answer 500 to one first try in ten: every acknowledged publication
/// reaches every endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_lose_no_acknowledged_publication_on_disk() {
    let dir = DataDir::new("webhook-kills");
    let mut server = start_on(&dir, &[]).await;
    let sns = sns_client_for(&server.url);
    let topic = create_topic(&sns, "durable").await;
    let receivers = flaky_endpoints(&sns, &topic).await;
    let mut acknowledged = Vec::new();
    let mut n = 0;
    for _round in 0..3 {
        let sns = sns_client_for(&server.url);
        for _ in 0..150 {
            let body = format!("disk-{n}");
            n += 1;
            if sns
                .publish()
                .topic_arn(&topic)
                .message(&body)
                .send()
                .await
                .is_ok()
            {
                acknowledged.push(body);
            }
        }
        kill_9(&mut server);
        server = start_on(&dir, &[]).await;
    }
    for receiver in &receivers {
        let took = everything_reaches(receiver, &acknowledged, Duration::from_secs(30)).await;
        println!(
            "{} acknowledged publications, all at {} within {took:?} of the last start",
            acknowledged.len(),
            receiver.url
        );
    }
}

/// On Redis, the leader killed while it publishes: the passive takes over
/// and sends what the old leader had not, so every acknowledged
/// publication reaches every endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_loses_no_acknowledged_publication_on_redis() {
    let redis = RedisServer::start();
    let first = Server::start_node(&redis, "webhook-a");
    assert!(
        wait_for(Duration::from_secs(10), || first.is_ready())
            .await
            .is_some()
    );
    a_failover_loses_no_acknowledged_publication(first, Server::start_node(&redis, "webhook-b")).await;
}

/// The same on Postgres.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_loses_no_acknowledged_publication_on_postgres() {
    let postgres = PostgresServer::start();
    let first = Server::start_postgres_node(&postgres, "webhook-a");
    assert!(
        wait_for(Duration::from_secs(10), || first.is_ready())
            .await
            .is_some()
    );
    a_failover_loses_no_acknowledged_publication(first, Server::start_postgres_node(&postgres, "webhook-b"))
        .await;
}

/// The same in a sharded group (`--shards 4` on Postgres, on MariaDB),
/// whose first shard holds the topics and their deliveries: its leader is
/// the one killed, calls go through the other member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_loses_no_acknowledged_publication_when_sharded() {
    when_sharded::<PostgresServer>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_loses_no_acknowledged_publication_when_sharded_on_mysql() {
    when_sharded::<crate::common::MariadbServer>().await;
}

async fn when_sharded<D: crate::databases::Database>() {
    let database = D::start();
    let shards = ["--shards", "4"];
    let first = database.node_with("webhook-a", &shards);
    assert!(
        wait_for(Duration::from_secs(10), || first.is_ready())
            .await
            .is_some()
    );
    let second = database.node_with("webhook-b", &shards);
    // Both lead shards before the test goes on.
    let shared = wait_for(Duration::from_secs(20), || async {
        first_shard_led(&first).await != first_shard_led(&second).await
            && led_any(&first).await
            && led_any(&second).await
    })
    .await;
    assert!(shared.is_some(), "the two members share the shards");
    a_failover_loses_no_acknowledged_publication(first, second).await;
}

/// Publishes 300 messages through the member that will survive to a topic
/// with three endpoints answering 500 to one first try in ten, kills the
/// leader of the topics' shard (SIGKILL), and checks that every endpoint
/// gets every acknowledged publication from its successor.
async fn a_failover_loses_no_acknowledged_publication(a: Server, b: Server) {
    let (mut leader, survivor) = match first_shard_led(&a).await {
        true => (a, b),
        false => (b, a),
    };
    // Unsharded, the passive serves no call: go through the leader.
    let front = match survivor.is_ready().await {
        true => &survivor,
        false => &leader,
    };
    let sns = sns_client_for(&front.url);
    let topic = create_topic(&sns, "failover").await;
    let receivers = flaky_endpoints(&sns, &topic).await;
    let mut acknowledged = Vec::new();
    for n in 0..300 {
        let body = format!("failover-{n}");
        if sns
            .publish()
            .topic_arn(&topic)
            .message(&body)
            .send()
            .await
            .is_ok()
        {
            acknowledged.push(body);
        }
    }
    kill_9(&mut leader);
    let took_over = wait_for(Duration::from_secs(20), || first_shard_led(&survivor)).await;
    assert!(took_over.is_some(), "the survivor leads the topics' shard");
    for receiver in &receivers {
        let took = everything_reaches(receiver, &acknowledged, Duration::from_secs(30)).await;
        println!(
            "{} acknowledged, all at {} {took:?} after the takeover",
            acknowledged.len(),
            receiver.url
        );
    }
}

/// Whether `server` serves the first shard (the topics'), unsharded or not.
async fn first_shard_led(server: &Server) -> bool {
    shards_served(server).await.contains(&0)
}

async fn led_any(server: &Server) -> bool {
    !shards_served(server).await.is_empty()
}

/// The shards `server` serves, by its `/status`: shard 0 alone for an
/// unsharded leader.
async fn shards_served(server: &Server) -> Vec<u64> {
    let Some((200, text)) = server.get("/status").await else {
        return Vec::new();
    };
    let status: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    match status["sharding"]["shards"].as_array() {
        Some(shards) => shards
            .iter()
            .filter(|shard| shard["serving"] == true)
            .filter_map(|shard| shard["shard"].as_u64())
            .collect(),
        None => match server.is_ready().await {
            true => vec![0],
            false => Vec::new(),
        },
    }
}

/// An endpoint that refuses connections for its first seconds is tried
/// again as its delivery policy says, and gets everything once it is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_is_down_gets_everything_once_it_is_up() {
    let server = Server::start();
    let sns = sns_client_for(&server.url);
    let topic = create_topic(&sns, "patient").await;
    let receiver = Receiver::start(Answer::Healthy).await;
    subscribe(
        &sns,
        &topic,
        &receiver,
        Some(r#"{"healthyRetryPolicy": {"minDelayTarget": 1, "maxDelayTarget": 1, "numRetries": 10}}"#),
    )
    .await;
    // The same port, down for three seconds: a new endpoint takes it then.
    let port = receiver.port;
    drop(receiver);
    let later = Receiver::start_on_after(port, Answer::Healthy, Duration::from_secs(3)).await;
    let bodies: Vec<String> = (0..50).map(|n| format!("while-down-{n}")).collect();
    for body in &bodies {
        sns.publish()
            .topic_arn(&topic)
            .message(body)
            .send()
            .await
            .unwrap();
    }
    let took = everything_reaches(&later, &bodies, Duration::from_secs(20)).await;
    println!(
        "an endpoint down for 3 s had all {} within {took:?}",
        bodies.len()
    );
}

/// Deliveries to an endpoint go over connections kept open between them,
/// not a new one each; one the endpoint closed while idle costs no try (a
/// new connection is made at once, no retry 20 s later).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_kept_between_deliveries_and_one_closed_idle_costs_no_try() {
    let server = Server::start();
    let sns = sns_client_for(&server.url);
    let topic = create_topic(&sns, "kept").await;
    let receiver = Receiver::start(Answer::Healthy).await;
    subscribe(&sns, &topic, &receiver, None).await;
    let bodies: Vec<String> = (0..400).map(|n| format!("kept-{n}")).collect();
    let mut publishing = tokio::task::JoinSet::new();
    for chunk in bodies.chunks(50) {
        let (sns, topic, chunk) = (sns.clone(), topic.clone(), chunk.to_vec());
        publishing.spawn(async move {
            for body in chunk {
                sns.publish()
                    .topic_arn(&topic)
                    .message(body)
                    .send()
                    .await
                    .unwrap();
            }
        });
    }
    publishing.join_all().await;
    everything_reaches(&receiver, &bodies, Duration::from_secs(10)).await;
    let connections = receiver.connections();
    println!("{} deliveries over {connections} connections", bodies.len() + 1);
    // The confirmation's connection, and at most the lane's 8 at once.
    assert!(
        connections <= 9,
        "{connections} connections for {} deliveries",
        bodies.len()
    );

    receiver.answer(Answer::HealthyClosingIdleAfter(Duration::from_millis(50)));
    let bodies: Vec<String> = (0..10).map(|n| format!("after-idle-{n}")).collect();
    for body in &bodies {
        tokio::time::sleep(Duration::from_millis(150)).await;
        sns.publish()
            .topic_arn(&topic)
            .message(body)
            .send()
            .await
            .unwrap();
    }
    // AWS's default policy would try again 20 s later: within 3 s means
    // each went on its first try.
    everything_reaches(&receiver, &bodies, Duration::from_secs(3)).await;
}

/// A stuck endpoint takes 8 tries per 15 s: what it cannot take within its
/// delivery policy's time (here no retry: one try's 15 s) is given up into
/// its subscription's dead-letter queue rather than left to fill its
/// backlog, so that its topic's Publish is not refused for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_endpoints_backlog_is_given_up_within_its_policy() {
    let server = Server::start();
    let sns = sns_client_for(&server.url);
    let sqs = server.client();
    let topic = create_topic(&sns, "stuck").await;
    let dead = sqs.create_queue().queue_name("stuck-dlq").send().await.unwrap();
    let dead_url = dead.queue_url().unwrap().to_string();
    let dead_arn = "arn:aws:sqs:us-east-1:000000000000:stuck-dlq";
    let stuck = Receiver::start(Answer::Healthy).await;
    subscribe(
        &sns,
        &topic,
        &stuck,
        Some(r#"{"healthyRetryPolicy": {"numRetries": 0}}"#),
    )
    .await;
    let arn = sns
        .list_subscriptions_by_topic()
        .topic_arn(&topic)
        .send()
        .await
        .unwrap()
        .subscriptions()[0]
        .subscription_arn()
        .unwrap()
        .to_string();
    sns.set_subscription_attributes()
        .subscription_arn(&arn)
        .attribute_name("RedrivePolicy")
        .attribute_value(format!(r#"{{"deadLetterTargetArn": "{dead_arn}"}}"#))
        .send()
        .await
        .unwrap();
    stuck.answer(Answer::Stuck);
    let started = Instant::now();
    for n in 0..100 {
        sns.publish()
            .topic_arn(&topic)
            .message(format!("stuck-{n}"))
            .send()
            .await
            .unwrap();
    }
    let held = || async {
        let attributes = sqs
            .get_queue_attributes()
            .queue_url(&dead_url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .unwrap();
        attributes
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0)
    };
    // All but the 8 in flight at the start, and then those 8 as their
    // tries time out.
    let given_up = wait_for(Duration::from_secs(45), || async { held().await == 100 }).await;
    assert!(
        given_up.is_some(),
        "{} of 100 in the dead-letter queue",
        held().await
    );
    println!(
        "100 publications to a stuck endpoint given up into its dead-letter queue within {:?}",
        started.elapsed()
    );
}
