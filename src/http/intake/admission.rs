//! Admitting a request: its signature checked (when credentials are
//! configured) before a byte of its body is read, its body read within the
//! process-wide budget, and its action and input parsed in its wire format.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Uri};

use crate::api::{Action, Input};
use crate::config::Regions;
use crate::error::{ErrorCode, SqsError};
use crate::http::call::Protocol;
use crate::http::intake::authorization::Caller;
use crate::http::intake::request_body::BodyPermit;
use crate::http::state::AppState;
use crate::protocol::{json, query};

/// A request read and checked: its action and input, its body as sent
/// (to send it on), and its share of the body budget.
pub(in crate::http) struct Admitted {
    pub(in crate::http) action: Action,
    pub(in crate::http) input: Input,
    pub(in crate::http) body: Bytes,
    _permit: BodyPermit,
}

/// A request whose body was read (by [`authenticate_and_read`]): its
/// action and input parsed in `wire`'s format.
pub(in crate::http) fn admit(
    wire: Protocol,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
    permit: BodyPermit,
) -> Result<Admitted, SqsError> {
    // POST /{account}/{queue}: the path is the queue URL.
    let queue_path = Some(uri.path()).filter(|p| p.trim_matches('/').contains('/'));
    let (action, input) = read_request(wire, uri, queue_path, headers, body.clone())?;
    Ok(Admitted {
        action,
        input,
        body,
        _permit: permit,
    })
}

/// Authenticates and reads a request: what every request to the SQS
/// address goes through. With credentials configured, the signature's head
/// is checked before a byte of the body is read, so that requests without
/// a valid key, date and scope take no body memory; the body is then bound
/// to the signature. Bodies draw on the process-wide budget until the
/// request is answered (the permit returned). A signed request's caller is
/// returned: the account it acts in, and the policy it answers to
/// (`authorization.rs`).
pub(in crate::http) async fn authenticate_and_read(
    state: &AppState,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Bytes, BodyPermit, Option<Caller>), SqsError> {
    let signature = match &state.credentials {
        None => None,
        Some(credentials) => {
            let keys = credentials.current();
            let now = (state.first_shard().api.service.now() / 1000) as i64;
            let region = match state.regions {
                Regions::Signed => None,
                Regions::One => Some(state.home.region.as_str()),
            };
            Some((keys.check_head(method, uri, headers, region, now)?, keys))
        }
    };
    let (body, permit) = state.body_budget.read(body, state.request_timeout).await?;
    let Some((signature, keys)) = signature else {
        return Ok((body, permit, None));
    };
    let key_id = signature.access_key_id().to_string();
    signature.check_body(&body)?;
    let key = keys.key(&key_id).ok_or_else(SqsError::unknown_key)?;
    let account = key.account.clone().unwrap_or_else(|| state.home.account.clone());
    let limits = keys.account(&account).copied().unwrap_or_default();
    state
        .metrics
        .account_requests
        .with_label_values(&[&account])
        .inc();
    // Only a request its key's secret signed spends that key's budget, and
    // its account's.
    let now = tokio::time::Instant::now();
    if let Some(limit) = key.rate {
        state
            .throttle
            .take(&key_id, limit, now)
            .inspect_err(|_| state.metrics.throttled.with_label_values(&[&key_id]).inc())?;
    }
    if let Some(limit) = limits.rate {
        state
            .account_throttle
            .take(&account, limit, now)
            .inspect_err(|_| {
                state
                    .metrics
                    .account_throttled
                    .with_label_values(&[&account])
                    .inc()
            })?;
    }
    let caller = Caller {
        account,
        policy: key.policy.clone(),
        max_queues: limits.max_queues,
        key_id,
    };
    Ok((body, permit, Some(caller)))
}

/// The action and input of a request in `wire`'s format. A Query call sent
/// to a queue URL (`queue_path`) acts on that queue.
pub(in crate::http) fn read_request(
    wire: Protocol,
    uri: &Uri,
    queue_path: Option<&str>,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<(Action, Input), SqsError> {
    match wire {
        Protocol::Json => {
            let action = json::target(headers)?;
            match uri.query() {
                // A presigned URL: the parameters are in the signed query
                // string and there is no body (botocore moves the JSON
                // members there).
                Some(parameters) if body.is_empty() => {
                    Ok((action, Input::Tree(query::parse_parameters(action, parameters)?)))
                }
                _ => Ok((action, Input::Json(body))),
            }
        }
        Protocol::Query => {
            let (action, tree) = query::parse(&body, uri.query(), queue_path)?;
            if queue_path.is_some() && !action.served_at_queue_url() {
                return Err(SqsError::new(
                    ErrorCode::InvalidAction,
                    format!("The action {} is not valid for this endpoint.", action.name()),
                ));
            }
            Ok((action, Input::Tree(tree)))
        }
    }
}
