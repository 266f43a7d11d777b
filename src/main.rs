//! The `ssq` binary: reads the configuration, sets up logging, and runs a
//! [`ssq::node::Node`] until SIGINT or SIGTERM. Everything else lives in
//! the library.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use ssq::config::{Config, LogFormat};
use ssq::http::status_api::health_check;
use ssq::node::{Listeners, Node};

#[tokio::main]
async fn main() {
    let (config, queues) = Config::load().unwrap_or_else(|why| {
        eprintln!("ssq: {why}");
        std::process::exit(2)
    });
    if config.check_health {
        let address = health_check::address_to_ask(config.admin_listen.unwrap_or(config.listen));
        match health_check::check(address, std::time::Duration::from_secs(2)) {
            Ok(()) => std::process::exit(0),
            Err(why) => {
                eprintln!("ssq: {why}");
                std::process::exit(1)
            }
        }
    }
    init_logging(config.log_format);
    let started = async move {
        let listeners = Listeners::bind(&config).await?;
        Node::new(config, queues)?
            .serve(listeners, shutdown_signal())
            .await
    };
    if let Err(error) = started.await {
        tracing::error!("{error}");
        std::process::exit(error.exit_code());
    }
}

fn init_logging(format: LogFormat) {
    // fred logs every reconnection attempt; ssq logs Redis reachability
    // once per change itself.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,fred=error"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        ))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Whether log lines are coloured: only for a person at a terminal, never
/// into a file, a pipe or `docker logs`, and never with `NO_COLOR` set to
/// anything but the empty string (no-color.org).
fn colour(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|value| value.is_empty())
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

#[cfg(test)]
mod tests {
    use super::colour;

    #[test]
    fn logs_are_coloured_only_on_a_terminal_without_no_color() {
        let set = Some(std::ffi::OsStr::new("1"));
        let empty = Some(std::ffi::OsStr::new(""));
        assert!(colour(true, None));
        assert!(colour(true, empty), "an empty NO_COLOR is not set");
        assert!(!colour(true, set));
        assert!(!colour(false, None));
        assert!(!colour(false, set));
    }
}
