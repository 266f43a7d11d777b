//! Passives watch the lock keys rather than wait for their next try: one
//! watch per instance over every shard's key, which wakes a shard's
//! elector when its key is deleted (its holder let go, or its lease
//! expired). The electors still try every `--lock-retry`, so a watch that
//! breaks or lags delays nothing beyond that.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use super::client::{Etcd, decode, encode};

/// Watches `etcd`'s lock keys until `stopped`, waking `electors[shard]`
/// when shard `shard`'s key goes; opens the watch again `retry` after it
/// breaks.
pub async fn wake_on_release(
    etcd: Arc<Etcd>,
    electors: Vec<Arc<Notify>>,
    retry: Duration,
    mut stopped: watch::Receiver<bool>,
) {
    let keys = etcd.lock_keys();
    // Every key that starts with `keys`: up to the same start with its
    // last byte (`/`) one higher.
    let end = format!("{}0", keys.trim_end_matches('/'));
    let request = json!({"create_request": {
        "key": encode(&keys),
        "range_end": encode(&end),
        "filters": ["NOPUT"],
    }});
    while !*stopped.borrow() {
        tokio::select! {
            ended = follow(&etcd, &request, &keys, &electors) => {
                tracing::debug!(why = %ended, "the watch of the lock keys ended; opening it again");
            }
            _ = stopped.changed() => return,
        }
        // Whatever happened while it was closed, the electors look now.
        for elector in &electors {
            elector.notify_one();
        }
        tokio::select! {
            _ = tokio::time::sleep(retry) => {}
            _ = stopped.changed() => return,
        }
    }
}

/// Reads one watch until it ends; why it ended.
async fn follow(etcd: &Arc<Etcd>, request: &Value, keys: &str, electors: &[Arc<Notify>]) -> String {
    let response = match etcd.stream("/v3/watch", request).await {
        Ok(response) => response,
        Err(error) => return error.to_string(),
    };
    let mut body = response.into_body();
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let chunk = match body.frame().await {
            Some(Ok(frame)) => frame.into_data().unwrap_or_default(),
            Some(Err(error)) => return error.to_string(),
            None => return "etcd closed it".to_string(),
        };
        pending.extend_from_slice(&chunk);
        // Each message is a JSON object on a line of its own.
        while let Some(end) = pending.iter().position(|&byte| byte == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                return "etcd sent what is not JSON".to_string();
            };
            if message.get("error").is_some() || message["result"]["canceled"].as_bool() == Some(true) {
                return format!("etcd ended it: {message}");
            }
            for event in message["result"]["events"].as_array().into_iter().flatten() {
                let key = decode(&event["kv"]["key"]);
                let shard = key.strip_prefix(keys).and_then(|rest| rest.parse::<usize>().ok());
                if let Some(elector) = shard.and_then(|shard| electors.get(shard)) {
                    elector.notify_one();
                }
            }
        }
        if pending.len() > 1 << 20 {
            return "etcd sent a line over 1 MiB".to_string();
        }
    }
}
