//! Notices over Redis pub/sub: a leader letting go of a lock, a member
//! joining or leaving, messages arriving from another shard. Each wakes a
//! task at once instead of at its next poll; a lost notice costs only that
//! wait, as every task also polls.

use std::sync::Arc;
use std::time::Duration;

use fred::prelude::*;
use tokio::sync::Notify;
use tokio::time::sleep;

/// Wakes whoever waits on a channel's notice: each shard's elector when its
/// leader announces that it let go, and in a sharded group the heartbeat
/// when a member joined or left and each shard's inbox task when messages
/// arrived from another shard. `channels` pairs each channel with what it
/// wakes.
pub async fn watch_notices(
    subscriber: fred::clients::SubscriberClient,
    channels: Vec<(String, Arc<Notify>)>,
    retry_every: Duration,
) {
    let mut messages = subscriber.message_rx();
    // Re-subscribes after every reconnection; the task runs detached.
    drop(subscriber.manage_subscriptions());
    // Only a subscription that succeeded is renewed after reconnections, so
    // the first one is retried until Redis takes it.
    let names: Vec<String> = channels.iter().map(|(name, _)| name.clone()).collect();
    while let Err(error) = subscriber.subscribe(names.clone()).await {
        tracing::debug!(%error, "subscribing to notices failed; retrying");
        sleep(retry_every).await;
    }
    let wake_all = || channels.iter().for_each(|(_, wake)| wake.notify_one());
    loop {
        match messages.recv().await {
            Ok(message) => match channels.iter().find(|(name, _)| message.channel == name.as_str()) {
                Some((_, wake)) => wake.notify_one(),
                None => wake_all(),
            },
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => wake_all(),
            Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                sleep(Duration::from_millis(100)).await;
                messages = subscriber.message_rx();
            }
        }
    }
}
