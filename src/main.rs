//! The `ssq` binary: reads the configuration, sets up logging and wires the
//! parts together. Everything else lives in the library.

use std::sync::Arc;
use std::time::Duration;

use fred::prelude::ClientLike;
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tracing_subscriber::EnvFilter;

use ssq::clock::SystemClock;
use ssq::config::{Config, LogFormat};
use ssq::election::{self, LockStore, RedisLock};
use ssq::http::{AppState, admin_router, router, sqs_router};
use ssq::leader::{Leadership, Role};
use ssq::metrics::Metrics;
use ssq::service::Service;
use ssq::store::Layout;
use ssq::store::committer::Committer;
use ssq::store::loader::Loader;

#[tokio::main]
async fn main() {
    let (config, startup_queues) = Config::load().unwrap_or_else(|why| {
        eprintln!("ssq: {why}");
        std::process::exit(2)
    });
    init_logging(config.log_format);
    let node_id = config.node_id();
    let election_config = config.election();
    if let Err(why) = election_config.validate() {
        fail(&format!("invalid lock timings: {why}"), 2);
    }

    let credentials = config.credentials.as_ref().map(|path| {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
            fail(
                &format!("cannot read the credentials file {}: {e}", path.display()),
                2,
            )
        });
        ssq::sigv4::Credentials::parse(&text).unwrap_or_else(|e| {
            fail(
                &format!("the credentials file {} is not valid: {e}", path.display()),
                2,
            )
        })
    });
    let metrics = Arc::new(Metrics::new(&node_id));
    let (journal, journal_rx) = mpsc::unbounded_channel();
    let service = Service::new(Arc::new(SystemClock), metrics.clone()).with_limits(config.limits());
    let service = Arc::new(if config.redis_url.is_some() {
        service.persisting_to(journal)
    } else {
        service
    });
    let role = if config.redis_url.is_some() {
        Role::Passive
    } else {
        Role::MemoryOnly
    };
    let leadership = Arc::new(Leadership::new(
        node_id.clone(),
        role,
        election_config.step_down_after,
        service.clone(),
        metrics.clone(),
    ));

    let listener = match tokio::net::TcpListener::bind(config.listen).await {
        Ok(listener) => listener,
        Err(error) => fail(
            &format!(
                "cannot listen on {}: {error}; is another server on that port? pick another with --listen",
                config.listen
            ),
            1,
        ),
    };
    let address = listener.local_addr().map_or(config.listen, |a| a);

    let (stop_tasks, stopped) = watch::channel(false);
    let lock = match &config.redis_url {
        None => {
            match ssq::config::create_startup_queues(&service, &startup_queues).await {
                Ok(0) => {}
                Ok(created) => tracing::info!(created, "created the configured queues"),
                Err(why) => fail(&why, 2),
            }
            tracing::info!(mode = "memory-only", listen = %address, node_id = %node_id, "ssq started");
            tracing::warn!(
                "memory-only mode: one instance, no failover; queues and messages are lost when it stops"
            );
            None
        }
        Some(_) => {
            let target = config.redis().expect("a Redis URL is configured");
            let client = ssq::redis::client(&target).unwrap_or_else(|e| fail(&e, 2));
            let subscriber = ssq::redis::subscriber(&target).unwrap_or_else(|e| fail(&e, 2));
            ssq::redis::log_connection_errors(&client, "commands");
            ssq::redis::log_connection_errors(&subscriber, "release notices");
            client.connect();
            subscriber.connect();
            let layout = Layout::new(&config.redis_prefix);
            let lock = Arc::new(RedisLock::new(
                client.clone(),
                &layout,
                &node_id,
                &config.advertise_url(),
                election_config.ttl,
            ));
            let loader = Arc::new(
                Loader::new(
                    client.clone(),
                    layout.clone(),
                    service.clone(),
                    leadership.clone(),
                )
                .with_startup_queues(startup_queues.clone())
                .with_retry_every(election_config.retry_every),
            );
            let committer = Committer::new(
                client,
                layout,
                leadership.clone(),
                service.clone(),
                loader.clone(),
                metrics.clone(),
                config.redis_timeout,
            )
            .with_max_reload_delay(election_config.retry_every * 4);
            tokio::spawn(committer.run(journal_rx));
            let released = Arc::new(Notify::new());
            tokio::spawn(election::watch_releases(
                subscriber,
                lock.release_channel.clone(),
                released.clone(),
                election_config.retry_every,
            ));
            tokio::spawn(election::run_elector(
                leadership.clone(),
                lock.clone(),
                election_config,
                metrics.clone(),
                Arc::new(move |term| loader.spawn_restore(term)),
                released,
                stopped.clone(),
            ));
            tokio::spawn(election::run_watchdog(
                leadership.clone(),
                lock.clone(),
                election_config,
                stopped.clone(),
            ));
            tracing::info!(
                mode = "redis", listen = %address, node_id = %node_id, advertise = %config.advertise_url(),
                "ssq started as a passive; it serves once it holds the leader lock"
            );
            Some(lock)
        }
    };

    let state = Arc::new(AppState {
        service,
        leadership: leadership.clone(),
        metrics,
        account_id: config.account_id.clone(),
        region: config.region.clone(),
        public_url: config.public_url.clone(),
        credentials,
        request_timeout: config.request_timeout,
        body_budget: ssq::request_body::BodyBudget::new(config.max_body_buffer as usize),
        admin_apart: config.admin_listen.is_some(),
    });
    let (token_tx, token_rx) = oneshot::channel();
    let shutdown = async move {
        shutdown_signal().await;
        // Refuse new queue calls and end long polls; requests in flight finish.
        let _ = token_tx.send(leadership.begin_shutdown());
    };
    let app = match config.admin_listen {
        None => router(state),
        Some(address) => {
            let admin = tokio::net::TcpListener::bind(address)
                .await
                .unwrap_or_else(|error| {
                    fail(
                        &format!("cannot listen on the admin address {address}: {error}"),
                        1,
                    )
                });
            tracing::info!(admin = %address, "status page, /health, /ready, /status and /metrics on their own address");
            let admin_app = admin_router(state.clone());
            tokio::spawn(async move { axum::serve(admin, admin_app).await });
            sqs_router(state)
        }
    };
    if config.idle_timeout <= std::time::Duration::from_secs(20) {
        tracing::warn!(
            idle_timeout = ?config.idle_timeout,
            "--idle-timeout is not above 20 s: long polls that wait longer will have their connection closed"
        );
    }
    let timeouts = ssq::listener::ConnectionTimeouts {
        idle: config.idle_timeout,
        header: config.header_timeout,
    };
    let listener = ssq::listener::LimitedListener::new(listener, config.max_connections, timeouts);
    ssq::listener::serve(listener, app, shutdown).await;
    let _ = stop_tasks.send(true);
    if let (Some(lock), Ok(Some(token))) = (lock, token_rx.await) {
        match tokio::time::timeout(Duration::from_secs(2), lock.release(&token)).await {
            Ok(Ok(true)) => tracing::info!("released the leader lock"),
            Ok(Ok(false)) => tracing::warn!("the leader lock was no longer ours to release"),
            Ok(Err(error)) => {
                tracing::warn!(%error, "could not release the leader lock; it expires with its TTL")
            }
            Err(_) => tracing::warn!("releasing the leader lock timed out; it expires with its TTL"),
        }
    }
    tracing::info!("ssq stopped");
}

fn fail(message: &str, code: i32) -> ! {
    tracing::error!("{message}");
    std::process::exit(code)
}

fn init_logging(format: LogFormat) {
    // fred logs every reconnection attempt; ssq logs Redis reachability
    // once per change itself.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,fred=error"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
    tracing::info!("shutdown requested: refusing new queue calls, finishing those in flight");
}
