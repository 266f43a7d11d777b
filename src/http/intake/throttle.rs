//! Request rates per access key and per account (`requests_per_second` and
//! `burst` of a key or an account in the credentials file): a token bucket
//! for each that has a rate, taken from once a request's signature has
//! checked out (so that no one without the secret can spend a key's or an
//! account's budget). An empty bucket answers AWS's `RequestThrottled`,
//! which the SDKs retry with backoff; each key and each account has its own
//! bucket, so a throttled key or team never slows another, and a check is
//! one short lock on one map.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::time::Instant;

use crate::error::{ErrorCode, SqsError};

/// A key's budget: `per_second` on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: f64,
}

#[derive(Debug)]
struct Bucket {
    limit: RateLimit,
    tokens: f64,
    filled: Instant,
}

/// The buckets of the keys, or the accounts, that have called, by id.
#[derive(Debug)]
pub struct Throttle {
    /// What the buckets are of, for the refusal: "access key", "account".
    holder: &'static str,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl Throttle {
    /// The buckets of access keys.
    pub fn of_keys() -> Throttle {
        Throttle {
            holder: "access key",
            buckets: Default::default(),
        }
    }

    /// The buckets of accounts.
    pub fn of_accounts() -> Throttle {
        Throttle {
            holder: "account",
            buckets: Default::default(),
        }
    }

    /// Takes one request from `id`'s bucket, or refuses it. A bucket
    /// starts full; a new limit (a reloaded file) applies from the next
    /// request, keeping what the bucket holds up to the new burst.
    pub fn take(&self, id: &str, limit: RateLimit, now: Instant) -> Result<(), SqsError> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let bucket = match buckets.get_mut(id) {
            Some(bucket) => bucket,
            None => buckets.entry(id.to_string()).or_insert(Bucket {
                limit,
                tokens: limit.burst,
                filled: now,
            }),
        };
        let elapsed = now.saturating_duration_since(bucket.filled).as_secs_f64();
        bucket.limit = limit;
        bucket.tokens = (bucket.tokens + elapsed * limit.per_second).min(limit.burst);
        bucket.filled = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        Err(SqsError::new(
            ErrorCode::RequestThrottled,
            format!(
                "Rate exceeded: the {holder} {id} may make {} requests per second (bursts of {}), as the \
                 credentials file says. Retry later (the AWS SDKs back off and retry this error), or raise the \
                 {holder}'s requests_per_second.",
                limit.per_second,
                limit.burst,
                holder = self.holder
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const FIVE: RateLimit = RateLimit {
        per_second: 5.0,
        burst: 5.0,
    };

    #[tokio::test(start_paused = true)]
    async fn a_burst_then_the_rate_and_each_key_on_its_own() {
        let throttle = Throttle::of_keys();
        let start = Instant::now();
        for _ in 0..5 {
            throttle.take("SLOW", FIVE, start).unwrap();
        }
        let refused = throttle.take("SLOW", FIVE, start).unwrap_err();
        assert_eq!(refused.code, ErrorCode::RequestThrottled);
        assert!(refused.message.contains("the access key SLOW"), "{refused}");
        let accounts = Throttle::of_accounts();
        accounts.take("111122223333", FIVE, start).unwrap();
        let refused = (0..5)
            .find_map(|_| accounts.take("111122223333", FIVE, start).err())
            .unwrap();
        assert!(refused.message.contains("the account 111122223333"), "{refused}");
        // Another key is not touched by SLOW's empty bucket.
        throttle.take("OTHER", FIVE, start).unwrap();

        // 200 ms later, one more (5 per second).
        tokio::time::advance(Duration::from_millis(200)).await;
        throttle.take("SLOW", FIVE, Instant::now()).unwrap();
        assert!(throttle.take("SLOW", FIVE, Instant::now()).is_err());

        // An idle key refills to its burst, not beyond.
        tokio::time::advance(Duration::from_secs(60)).await;
        let now = Instant::now();
        let taken = (0..10)
            .filter(|_| throttle.take("SLOW", FIVE, now).is_ok())
            .count();
        assert_eq!(taken, 5);
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_limit_applies_from_the_next_request() {
        let throttle = Throttle::of_keys();
        let now = Instant::now();
        let one = RateLimit {
            per_second: 1.0,
            burst: 1.0,
        };
        throttle.take("KEY", FIVE, now).unwrap();
        // The bucket held 4: the new burst caps it at 1.
        throttle.take("KEY", one, now).unwrap();
        assert!(throttle.take("KEY", one, now).is_err());
    }
}
