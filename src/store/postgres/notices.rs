//! Notices over Postgres's `LISTEN`: a member joining or leaving, messages
//! arriving from another shard. Each wakes a task at once instead of at its
//! next poll; a lost notice costs only that wait, as every task also polls.
//! (A lock's own session listens for its release notices: `lock.rs`.)

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::sleep;

use super::{Channels, PostgresError, Target};

/// A connection of its own listens on `channels`
/// until `stopped`, and is made again when it breaks (waking every
/// channel's task, since a notice may have been lost meanwhile).
pub async fn listen(
    target: Target,
    channels: Vec<(String, Arc<Notify>)>,
    retry_every: Duration,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let channels: Channels = channels.into();
    let listen: String = channels
        .iter()
        .map(|(name, _)| format!("LISTEN {name};"))
        .collect();
    while !*stopped.borrow() {
        let listening = async {
            let client = target.connect_notifying(channels.clone()).await?;
            target.bounded(client.batch_execute(&listen)).await?;
            Ok::<_, PostgresError>(client)
        };
        match listening.await {
            Ok(client) => {
                channels.iter().for_each(|(_, wake)| wake.notify_one());
                while !client.is_closed() {
                    tokio::select! {
                        _ = sleep(retry_every) => {}
                        _ = stopped.changed() => return,
                    }
                }
            }
            Err(error) => tracing::debug!(%error, "listening for notices on Postgres failed; retrying"),
        }
        tokio::select! {
            _ = sleep(retry_every) => {}
            _ = stopped.changed() => return,
        }
    }
}
