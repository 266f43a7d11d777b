//! Identity policies enforced. A call signed with a key that has a policy
//! (the credentials file's `policy`) runs only if the policy allows its
//! action (`sqs:SendMessage`, `sns:Publish`) on its resource (the queue's or
//! topic's ARN, `*` for calls that name none) in the request's context; a
//! refusal is AWS's AccessDenied, naming the action, the resource and why.
//! Keys without a policy, and ssq without `--credentials`, are not checked:
//! their requests have no `Caller`.
//! The policy was read with the file, so a check is the evaluation alone.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::ConnectInfo;

use super::AppState;
use crate::error::{ErrorCode, SqsError};
use crate::policy::condition::Context;
use crate::policy::{Decision, Policy, Request};

/// Who signed a request, when their key has a policy to answer to (a
/// request signed with a key without one has no `Caller`: nothing to check).
#[derive(Debug, Clone)]
pub struct Caller {
    pub key_id: String,
    pub policy: Arc<Policy>,
}

impl Caller {
    /// Refuses the call unless the caller's policy allows `action` on
    /// `resource`. `source` is the peer's address ([`source_of`]), for
    /// `aws:SourceIp`.
    pub fn authorize(
        &self,
        state: &AppState,
        source: Option<IpAddr>,
        action: &str,
        resource: &str,
    ) -> Result<(), SqsError> {
        let policy = &self.policy;
        let context = request_context(state, policy, source);
        let decision = policy.evaluate(&Request {
            action,
            resource,
            context: &context,
        });
        let why = match decision {
            Decision::Allow => return Ok(()),
            Decision::ExplicitDeny => "with an explicit deny in an identity-based policy".to_string(),
            Decision::ImplicitDeny => format!("because no identity-based policy allows the {action} action"),
        };
        Err(SqsError::new(
            ErrorCode::AccessDenied,
            format!(
                "User: arn:aws:iam::{}:user/{} is not authorized to perform: {action} on resource: {resource} {why}",
                state.account_id, self.key_id
            ),
        ))
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
fn request_context(state: &AppState, policy: &Policy, source: Option<IpAddr>) -> Context {
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
    set("aws:principalaccount", &|| Some(state.account_id.clone()));
    set("aws:sourceip", &|| source.map(|source| source.to_string()));
    context
}
