//! Who may do what, with `--credentials`. A signed call's `Caller` acts in
//! its key's account. A call signed with a key that has a policy
//! (the credentials file's `policy`) runs only if the policy allows its
//! action (`sqs:SendMessage`, `sns:Publish`) on its resource (`*` for calls
//! that name none) in the request's context; a refusal is AWS's
//! AccessDenied, naming the action, the resource and why. Keys without a
//! policy are not evaluated, and ssq without `--credentials` has no
//! `Caller`. The policy was read with the file, so a check is the
//! evaluation alone.
//!
//! Another account's resources: an SQS queue is checked where its URL is
//! read, against the queue's policy (`api::RequestContext::authorize_queue`);
//! an SNS topic is refused here ([`Caller::refuse_other_account`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::ConnectInfo;

use crate::error::{ErrorCode, SqsError};
use crate::policy::condition::Context;
use crate::policy::{Decision, Policy};
use crate::service::Service;

/// Who signed a request: its key, the account the key acts in, and the
/// policy it answers to, if it has one.
#[derive(Debug, Clone)]
pub struct Caller {
    pub key_id: String,
    pub account: String,
    pub policy: Option<Arc<Policy>>,
    /// The most queues the account may hold (its `max_queues`).
    pub max_queues: Option<usize>,
}

impl Caller {
    /// The caller as AWS names it in a refusal.
    pub fn principal(&self) -> String {
        crate::policy::user_arn(&self.account, &self.key_id)
    }

    /// Refuses `action` on `resource` (an ARN) of another account than the
    /// caller's: what no resource policy grants (SNS topics' are not read).
    pub fn refuse_other_account(&self, action: &str, resource: &str) -> Result<(), SqsError> {
        match crate::policy::account_of_arn(resource) {
            Some(owner) if owner != self.account => Err(self.denied(
                action,
                resource,
                &format!("because no resource-based policy allows the {action} action"),
            )),
            _ => Ok(()),
        }
    }

    /// Refuses the call unless the caller's policy, if it has one, allows
    /// `action` on `resource`. `source` is the peer's address
    /// ([`source_of`]), for `aws:SourceIp`.
    pub fn authorize(
        &self,
        service: &Service,
        source: Option<IpAddr>,
        action: &str,
        resource: &str,
    ) -> Result<(), SqsError> {
        self.authorize_at(&|| service.now(), source, action, resource)
    }

    /// [`Caller::authorize`], the time (`aws:CurrentTime`) told by `now`.
    fn authorize_at(
        &self,
        now: &dyn Fn() -> u64,
        source: Option<IpAddr>,
        action: &str,
        resource: &str,
    ) -> Result<(), SqsError> {
        let Some(policy) = &self.policy else {
            return Ok(());
        };
        // What the context is made of, besides the time (which a policy
        // that reads it never remembers).
        let mut address = [0u8; 17];
        match source {
            Some(IpAddr::V4(v4)) => {
                address[0] = 4;
                address[1..5].copy_from_slice(&v4.octets());
            }
            Some(IpAddr::V6(v6)) => {
                address[0] = 6;
                address[1..].copy_from_slice(&v6.octets());
            }
            None => {}
        }
        let decision = policy.evaluate_from(action, resource, &[self.account.as_bytes(), &address], || {
            request_context(now, self, policy, source)
        });
        let why = match decision {
            Decision::Allow => return Ok(()),
            Decision::ExplicitDeny => "with an explicit deny in an identity-based policy".to_string(),
            Decision::ImplicitDeny => format!("because no identity-based policy allows the {action} action"),
        };
        Err(self.denied(action, resource, &why))
    }

    fn denied(&self, action: &str, resource: &str, why: &str) -> SqsError {
        SqsError::new(
            ErrorCode::AccessDenied,
            format!(
                "User: {} is not authorized to perform: {action} on resource: {resource} {why}",
                self.principal()
            ),
        )
    }
}

/// A caller's policy, checked by the API where a call's queue is read
/// (`api::RequestContext::authorize_queue`), rather than by reading the
/// request for its queue beforehand.
pub struct CallerIdentity {
    pub caller: Caller,
    pub source: Option<IpAddr>,
    pub service: Arc<crate::service::Service>,
}

impl crate::api::IdentityPolicy for CallerIdentity {
    fn authorize(&self, action: &str, resource: &str) -> Result<(), SqsError> {
        self.caller
            .authorize_at(&|| self.service.now(), self.source, action, resource)
    }
}

/// The address a request came from, as the listener recorded it.
pub fn source_of(extensions: &axum::http::Extensions) -> Option<IpAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip())
}

/// The global condition keys a request carries that `policy` reads (keys
/// in lower case): most policies read none, and pay nothing for them.
fn request_context(
    now: &dyn Fn() -> u64,
    caller: &Caller,
    policy: &Policy,
    source: Option<IpAddr>,
) -> Context {
    let mut context = Context::new();
    for key in policy.condition_keys() {
        let value = match key.as_str() {
            "aws:currenttime" => Some(crate::topic::envelope::timestamp(now())),
            "aws:epochtime" => Some((now() / 1000).to_string()),
            // ssq serves plain HTTP; TLS, where there is any, ends before it.
            "aws:securetransport" => Some("false".to_string()),
            "aws:principalaccount" => Some(caller.account.clone()),
            "aws:sourceip" => source.map(|source| source.to_string()),
            _ => None,
        };
        if let Some(value) = value {
            context.insert(key.clone(), vec![value]);
        }
    }
    context
}
