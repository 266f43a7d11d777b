//! The Redis connection: one fred client, with the timeouts and reconnection
//! policy that high availability needs.
//!
//! Every command is bounded by the command timeout, so that a hung Redis
//! turns into an error rather than a stuck request; the client reconnects
//! forever with exponential backoff, so that an instance outlives any Redis
//! outage.

use std::time::Duration;

use fred::clients::SubscriberClient;
use fred::prelude::*;

/// Builds a client for `url`; it connects in the background and keeps
/// reconnecting. Fails only for a URL that cannot be parsed.
pub fn client(url: &str, command_timeout: Duration) -> Result<Client, String> {
    builder(url, command_timeout)?.build().map_err(|e| e.to_string())
}

/// A client for pub/sub that subscribes again after each reconnection.
pub fn subscriber(url: &str, command_timeout: Duration) -> Result<SubscriberClient, String> {
    builder(url, command_timeout)?
        .build_subscriber_client()
        .map_err(|e| e.to_string())
}

fn builder(url: &str, command_timeout: Duration) -> Result<Builder, String> {
    let config = Config::from_url(url).map_err(|e| {
        format!("--redis-url {url:?} is not a valid Redis URL ({e}); expected redis://host:port")
    })?;
    let mut builder = Builder::from_config(config);
    builder
        .with_performance_config(|performance| performance.default_command_timeout = command_timeout)
        .with_connection_config(|connection| {
            connection.connection_timeout = command_timeout.max(Duration::from_millis(500));
            connection.internal_command_timeout = command_timeout.max(Duration::from_millis(500));
            // Never resend a command on a new connection: a write whose
            // outcome is unknown is handled by reloading state, and a resend
            // arriving after that reload would change Redis behind memory.
            connection.max_command_attempts = 1;
            // A connection that stops answering is closed and replaced.
            connection.unresponsive.max_timeout = Some(command_timeout * 4);
            connection.unresponsive.interval = command_timeout.max(Duration::from_millis(100));
        })
        // Reconnect forever: 100 ms doubling to 2 s.
        .set_policy(ReconnectPolicy::new_exponential(0, 100, 2_000, 2));
    Ok(builder)
}
