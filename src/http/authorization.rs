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

use super::AppState;
use crate::error::{ErrorCode, SqsError};
use crate::policy::condition::Context;
use crate::policy::{Decision, Policy, Request};

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
        format!("arn:aws:iam::{}:user/{}", self.account, self.key_id)
    }

    /// Refuses `action` on `resource` (an ARN) of another account than the
    /// caller's: what no resource policy grants (SNS topics' are not read).
    pub fn refuse_other_account(&self, action: &str, resource: &str) -> Result<(), SqsError> {
        match account_of_arn(resource) {
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
        state: &AppState,
        source: Option<IpAddr>,
        action: &str,
        resource: &str,
    ) -> Result<(), SqsError> {
        let Some(policy) = &self.policy else {
            return Ok(());
        };
        let context = request_context(state, self, policy, source);
        let decision = policy.evaluate(&Request {
            action,
            resource,
            context: &context,
            principal: None,
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

/// The account an ARN names (`arn:aws:sqs:<region>:<account>:<name>`).
fn account_of_arn(arn: &str) -> Option<&str> {
    arn.strip_prefix("arn:")?.split(':').nth(3)
}

/// The address a request came from, as the listener recorded it.
pub fn source_of(extensions: &axum::http::Extensions) -> Option<IpAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip())
}

/// The global condition keys a request carries that `policy` reads (keys
/// in lower case): most policies read none, and pay nothing for them.
fn request_context(state: &AppState, caller: &Caller, policy: &Policy, source: Option<IpAddr>) -> Context {
    let mut context = Context::new();
    let mut set = |key: &str, value: &dyn Fn() -> Option<String>| {
        if policy.reads(key)
            && let Some(value) = value()
        {
            context.insert(key.to_string(), vec![value]);
        }
    };
    let now = || state.first_shard().api.service.now();
    set("aws:currenttime", &|| {
        Some(crate::topic::envelope::timestamp(now()))
    });
    set("aws:epochtime", &|| Some((now() / 1000).to_string()));
    // ssq serves plain HTTP; TLS, where there is any, ends before it.
    set("aws:securetransport", &|| Some("false".to_string()));
    set("aws:principalaccount", &|| Some(caller.account.clone()));
    set("aws:sourceip", &|| source.map(|source| source.to_string()));
    context
}
