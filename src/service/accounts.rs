//! What each account holds, with `--credentials` (where queues belong to
//! accounts): messages and payload bytes, kept up to date the way the
//! instance's totals are (`limits.rs`), by each operation's difference; and
//! the bytes an account may hold (`max_bytes` of its `[[accounts]]` entry),
//! beyond which its sends and its topics' publications are refused.
//!
//! An account is looked up by the queue's key (`queue::key`), so an
//! operation that changes what a queue holds pays one read of a small map;
//! one that changes nothing (most receives, every look) pays nothing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::{ErrorCode, Result, SqsError};
use crate::metrics::AccountHolding;
use crate::queue::key::{self, Home};

/// Every account's holdings, by account id.
pub(super) struct Accounts {
    /// The instance's own account and region: whose queues have short keys.
    pub(super) home: Home,
    by_id: RwLock<HashMap<String, Arc<Held>>>,
}

/// What one account holds, and may.
struct Held {
    messages: AtomicU64,
    bytes: AtomicU64,
    /// `u64::MAX` where the account has no limit.
    max_bytes: AtomicU64,
}

impl Default for Held {
    fn default() -> Self {
        Held {
            messages: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            max_bytes: AtomicU64::new(u64::MAX),
        }
    }
}

impl Accounts {
    pub(super) fn new(home: Home) -> Accounts {
        Accounts {
            home,
            by_id: RwLock::new(HashMap::new()),
        }
    }

    /// The account of the queue (or topic's queue) keyed `key`.
    pub(super) fn of<'a>(&'a self, key: &'a str) -> &'a str {
        key::split(key).account_or(&self.home)
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<String, Arc<Held>>> {
        self.by_id.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<String, Arc<Held>>> {
        self.by_id
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn held(&self, account: &str) -> Arc<Held> {
        if let Some(held) = self.read().get(account) {
            return held.clone();
        }
        self.write().entry(account.to_string()).or_default().clone()
    }

    /// Applies the change in what one of `account`'s queues holds.
    pub(super) fn apply(&self, account: &str, before: (u64, u64), after: (u64, u64)) {
        if before == after {
            return;
        }
        let held = self.held(account);
        super::limits::apply_difference((&held.messages, &held.bytes), before, after);
    }

    /// Forgets what every account holds (a new memory generation), keeping
    /// their limits.
    pub(super) fn clear(&self) {
        for held in self.read().values() {
            held.messages.store(0, Ordering::Release);
            held.bytes.store(0, Ordering::Release);
        }
    }

    /// Sets the bytes each account may hold; an account left out may hold
    /// any.
    pub(super) fn set_limits(&self, max_bytes: &HashMap<String, u64>) {
        let mut by_id = self.write();
        for account in max_bytes.keys() {
            by_id.entry(account.clone()).or_default();
        }
        for (account, held) in by_id.iter() {
            let max = max_bytes.get(account).copied().unwrap_or(u64::MAX);
            held.max_bytes.store(max, Ordering::Release);
        }
    }

    /// Refuses `bytes` more for `account` beyond its limit.
    pub(super) fn check_room(&self, account: &str, bytes: u64) -> Result<()> {
        let Some(held) = self.read().get(account).cloned() else {
            return Ok(());
        };
        let max = held.max_bytes.load(Ordering::Acquire);
        if held.bytes.load(Ordering::Acquire).saturating_add(bytes) <= max {
            return Ok(());
        }
        Err(SqsError::new(
            ErrorCode::OverLimit,
            format!(
                "Account {account} holds its maximum of {max} bytes of messages (max_bytes in the \
                 credentials file); consume some, or ask the operator to raise the limit."
            ),
        ))
    }

    /// What each account holds, given how many queues each has.
    pub(super) fn holdings(&self, queues: HashMap<String, usize>) -> Vec<AccountHolding> {
        let by_id = self.read();
        let mut accounts: Vec<&String> = by_id.keys().chain(queues.keys()).collect();
        accounts.sort();
        accounts.dedup();
        accounts
            .into_iter()
            .map(|account| {
                let held = by_id.get(account);
                let load = |field: fn(&Held) -> &AtomicU64| {
                    held.map_or(0, |held| field(held).load(Ordering::Acquire))
                };
                AccountHolding {
                    account: account.clone(),
                    queues: queues.get(account).copied().unwrap_or(0),
                    messages: load(|held| &held.messages),
                    bytes: load(|held| &held.bytes),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accounts() -> Accounts {
        Accounts::new(Home {
            account: "000000000000".into(),
            region: "us-east-1".into(),
        })
    }

    #[test]
    fn each_account_holds_what_its_queues_do_and_no_more_than_its_limit() {
        let accounts = accounts();
        accounts.set_limits(&HashMap::from([("111111111111".to_string(), 100)]));
        let other = accounts.of("111111111111/us-east-1/orders").to_string();
        let home = accounts.of("orders").to_string();
        assert_eq!((other.as_str(), home.as_str()), ("111111111111", "000000000000"));
        accounts.apply(&other, (0, 0), (2, 60));
        accounts.apply(&home, (0, 0), (5, 500));
        assert!(accounts.check_room(&other, 40).is_ok(), "exactly the limit");
        let refused = accounts.check_room(&other, 41).unwrap_err();
        assert_eq!(refused.code, ErrorCode::OverLimit);
        assert!(refused.message.contains("111111111111"), "{}", refused.message);
        assert!(accounts.check_room(&home, 1_000_000).is_ok(), "no limit");
        accounts.apply(&other, (2, 60), (1, 10));
        assert!(accounts.check_room(&other, 90).is_ok(), "a delete makes room");
        let holdings = accounts.holdings(HashMap::from([(home.clone(), 3), ("222222222222".into(), 1)]));
        assert_eq!(
            holdings,
            vec![
                AccountHolding {
                    account: home.clone(),
                    queues: 3,
                    messages: 5,
                    bytes: 500
                },
                AccountHolding {
                    account: other.clone(),
                    queues: 0,
                    messages: 1,
                    bytes: 10
                },
                AccountHolding {
                    account: "222222222222".into(),
                    queues: 1,
                    messages: 0,
                    bytes: 0
                },
            ]
        );
        accounts.clear();
        assert!(
            accounts.check_room(&other, 100).is_ok(),
            "a new generation holds nothing"
        );
        accounts.set_limits(&HashMap::new());
        assert!(
            accounts.check_room(&other, u64::MAX).is_ok(),
            "a limit taken away"
        );
    }
}
