//! The `ssq` binary: reads the configuration, sets up logging and wires the
//! parts together. Everything else lives in the library.

use std::sync::Arc;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use ssq::clock::SystemClock;
use ssq::config::{Config, LogFormat};
use ssq::http::{AppState, router};
use ssq::metrics::Metrics;
use ssq::service::Service;

#[tokio::main]
async fn main() {
    let config = Config::parse();
    init_logging(config.log_format);
    let node_id = config.node_id();

    if config.redis_url.is_some() {
        tracing::error!("--redis-url is not supported yet: run without it for memory-only mode");
        std::process::exit(2);
    }

    let metrics = Arc::new(Metrics::new(&node_id));
    let service = Arc::new(Service::new(Arc::new(SystemClock), metrics.clone()));
    metrics.leader.set(1);

    let listener = match tokio::net::TcpListener::bind(config.listen).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(listen = %config.listen, %error, "cannot listen; is another server on that port? pick another with --listen");
            std::process::exit(1);
        }
    };
    let address = listener.local_addr().map_or(config.listen, |a| a);
    tracing::info!(mode = "memory-only", listen = %address, node_id = %node_id, "ssq started");
    tracing::warn!(
        "memory-only mode: a single instance with no failover; queues and messages are lost when it stops"
    );

    let state = Arc::new(AppState {
        service,
        metrics,
        account_id: config.account_id.clone(),
        region: config.region.clone(),
        public_url: config.public_url.clone(),
    });
    let served = axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown_signal())
        .await;
    if let Err(error) = served {
        tracing::error!(%error, "server failed");
        std::process::exit(1);
    }
    tracing::info!("ssq stopped");
}

fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
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
    tracing::info!("shutdown requested: finishing requests in flight");
}
