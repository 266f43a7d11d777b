//! What a policy decided, remembered: a key's calls repeat the same few
//! requests (its actions on its queues from its addresses), so a policy
//! evaluates each once and looks it up after. The memory belongs to one
//! policy, which belongs to one version of the credentials file (or one
//! setting of a queue's `Policy`): a new version starts empty, so nothing
//! it remembers can outlive what it was decided by.
//!
//! A policy that reads the time (`aws:CurrentTime`, `aws:EpochTime`)
//! decides anew each call. The memory holds a bounded number of requests,
//! and forgets them all when full: a key whose requests never repeat
//! costs a lookup more than before, never unbounded memory.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{Decision, Principal, Request};

/// The most requests one policy remembers.
const MAX_REMEMBERED: usize = 4096;

/// One policy's remembered decisions, by request.
#[derive(Default)]
pub(super) struct Decisions {
    by_request: Mutex<HashMap<Vec<u8>, Decision>>,
}

impl std::fmt::Debug for Decisions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decisions").finish_non_exhaustive()
    }
}

/// A copied policy starts with nothing remembered.
impl Clone for Decisions {
    fn clone(&self) -> Self {
        Decisions::default()
    }
}

impl Decisions {
    /// The decision on the request `key` names ([`key_of`],
    /// [`key_of_facts`]), remembered or made by `decide`.
    pub(super) fn get_or(&self, key: Vec<u8>, decide: impl FnOnce() -> Decision) -> Decision {
        if let Some(decision) = self.lock().get(&key) {
            return *decision;
        }
        let decision = decide();
        let mut remembered = self.lock();
        if remembered.len() >= MAX_REMEMBERED {
            remembered.clear();
        }
        remembered.insert(key, decision);
        decision
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Decision>> {
        self.by_request
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// Everything a decision depends on, in one key: what kind of key it is,
/// then each part (the action, the resource, the principal, the context's
/// keys and values in key order) after its length, so that no two requests
/// share a key.
pub(super) fn key_of(request: &Request<'_>) -> Vec<u8> {
    let mut key = Vec::with_capacity(request.action.len() + request.resource.len() + 64);
    key.push(b'r');
    push(&mut key, request.action.as_bytes());
    push(&mut key, request.resource.as_bytes());
    match request.principal {
        None => key.push(0),
        Some(Principal::User { account, arn }) => {
            key.push(1);
            push(&mut key, account.as_bytes());
            push(&mut key, arn.as_bytes());
        }
        Some(Principal::Service(service)) => {
            key.push(2);
            push(&mut key, service.as_bytes());
        }
    }
    let mut entries: Vec<_> = request.context.iter().collect();
    entries.sort_unstable_by_key(|(name, _)| name.as_str());
    for (name, values) in entries {
        push(&mut key, name.as_bytes());
        key.extend_from_slice(&(values.len() as u64).to_le_bytes());
        for value in values {
            push(&mut key, value.as_bytes());
        }
    }
    key
}

/// A request's key from the facts its context is made of, rather than the
/// context ([`super::Policy::evaluate_from`]): the action, the resource,
/// and each fact (bytes: an address's octets), each after its length.
pub(super) fn key_of_facts(action: &str, resource: &str, facts: &[&[u8]]) -> Vec<u8> {
    let mut key = Vec::with_capacity(action.len() + resource.len() + 64);
    key.push(b'f');
    push(&mut key, action.as_bytes());
    push(&mut key, resource.as_bytes());
    for fact in facts {
        push(&mut key, fact);
    }
    key
}

/// Appends `part` after its length.
fn push(key: &mut Vec<u8>, part: &[u8]) {
    key.extend_from_slice(&(part.len() as u64).to_le_bytes());
    key.extend_from_slice(part);
}
