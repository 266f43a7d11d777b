//! The admin page at `GET /` and the small API behind it.
//!
//! The page is one HTML document, a script and a style sheet, all compiled
//! into the binary (`admin/`): it works with no network beyond ssq. Its
//! script reads `/admin/api/overview` (the instance, its role and each
//! queue's counts, oldest message and recent rates), looks at messages
//! through `/admin/api/messages` (the developer endpoint's look, as JSON),
//! and acts through `/admin/api/sqs`: an SQS call in the JSON protocol, run
//! by the same `api::dispatch` as any client's, so what the page does is
//! durable and fenced like every call, and refused on a passive (and
//! `/admin/api/sns`, an SNS call, likewise: `topics.rs`).
//!
//! Security. With `--credentials`, the page and its API ask for HTTP Basic
//! authentication with a key pair that has an admin grant (access key id as
//! the user, secret as the password; `sign_in.rs`). An admin of one account
//! sees and acts on that account's queues and topics alone, and may not
//! export the snapshot, which holds every account's. Whatever the credentials, a state-changing call
//! must carry the page's anti-forgery token in `x-ssq-csrf` (a random
//! value drawn at start, which another site cannot read), and is refused
//! when the browser says it comes from another site (`Origin`,
//! `Sec-Fetch-Site`). Without credentials the page says that it is open.

pub(crate) mod activity;
pub(crate) mod blocking_pool;
pub(crate) mod developer_endpoint;
mod snapshot;
pub(crate) mod state;
mod topics;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use self::activity::SAMPLE_EVERY;
use crate::api::peek::{self, PeekParams};
use crate::api::{self, Action, Route};
use crate::error::{ErrorCode, SqsError};
use crate::http::call::{Output, Protocol, answer, answer_error, record, run, serving};
use crate::http::intake::admission::read_request;
use crate::http::intake::sign_in::Admin;
use crate::http::intake::sigv4::constant_time_eq;
use crate::http::state::AppState;
use crate::http::state::leader_json;
use crate::protocol::xml::escape;
use crate::queue::{QueueArn, key};

const PAGE: &str = include_str!("page/page.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");

/// The page, its two assets and its API.
pub(in crate::http) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/admin/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/admin/app.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route("/admin/api/overview", get(overview))
        .route("/admin/api/messages", get(messages))
        .route("/admin/api/depth", get(depth))
        .route("/admin/api/sqs", post(call))
        .route("/admin/api/sns", post(topics::call))
        .route("/admin/api/snapshot", get(snapshot::export))
}

/// `GET /`: the page, with the instance's facts written in.
pub(in crate::http) async fn page(State(state): State<Arc<AppState>>, _: Admin) -> Response {
    let open = if state.credentials.is_none() {
        "open"
    } else {
        "secured"
    };
    let html = PAGE
        .replace("{{node}}", &escape(&state.node_id))
        .replace("{{role}}", state.role_name())
        .replace("{{access}}", open)
        .replace("{{csrf}}", &state.admin.csrf_token);
    with_security_headers(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response())
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    with_security_headers(([(header::CONTENT_TYPE, content_type)], body).into_response())
}

/// No framing (clickjacking), no code or data from anywhere but ssq, no
/// caching of what shows messages.
fn with_security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A state-changing call must carry the page's token and must not come
/// from another site.
fn not_forged(state: &AppState, headers: &HeaderMap) -> Result<(), SqsError> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let token_matches = header("x-ssq-csrf")
        .is_some_and(|token| constant_time_eq(token.as_bytes(), state.admin.csrf_token.as_bytes()));
    let cross_site = matches!(header("sec-fetch-site"), Some("cross-site" | "same-site"));
    // Host names only: a proxy may drop the port from Host (nginx's $host).
    let host_name = |authority: &str| match authority.split_once(']') {
        Some((ipv6, _)) => format!("{ipv6}]"),
        None => authority.split(':').next().unwrap_or_default().to_string(),
    };
    let foreign_origin = match (header("origin"), header("host")) {
        (Some(origin), Some(host)) => {
            origin
                .split_once("://")
                .map(|(_, authority)| host_name(authority))
                != Some(host_name(host))
        }
        (Some(_), None) => true,
        (None, _) => false,
    };
    if token_matches && !cross_site && !foreign_origin {
        return Ok(());
    }
    Err(SqsError::new(
        ErrorCode::InvalidRequest,
        "This admin call lacks the page's anti-forgery token (x-ssq-csrf) or comes from another site: reload the admin page and try again.",
    ))
}

#[derive(serde::Serialize)]
struct Overview {
    node_id: String,
    role: &'static str,
    serving: bool,
    leader: Option<serde_json::Value>,
    /// The shard map, in a sharded group (as `/status` shows it).
    #[serde(skip_serializing_if = "Option::is_none")]
    sharding: Option<serde_json::Value>,
    /// No credentials configured: anyone who reaches the page may act.
    open: bool,
    /// Where the state is kept (as `/status` says).
    storage: serde_json::Value,
    sample_seconds: u64,
    queues: Vec<QueueSummary>,
    /// SNS topics with their subscriptions and counts.
    topics: Vec<topics::TopicSummary>,
}

#[derive(serde::Serialize)]
struct QueueSummary {
    key: String,
    name: String,
    url: String,
    arn: String,
    fifo: bool,
    visible: usize,
    in_flight: usize,
    delayed: usize,
    oldest_age_seconds: Option<u64>,
    /// A standard queue's noisy tenants (fair queues), most in flight first.
    noisy_groups: Vec<NoisyGroup>,
    rates: activity::Rates,
    /// The key of its dead-letter queue, if it has one that exists.
    dead_letter_queue: Option<String>,
    /// The keys of the queues whose dead-letter queue it is.
    sources: Vec<String>,
}

#[derive(serde::Serialize)]
struct NoisyGroup {
    group: String,
    messages: u64,
    in_flight: u64,
    last_send_age_seconds: u64,
}

/// `GET /admin/api/depth?queue=KEY`: the queue's messages by state and the
/// age of its oldest, every 30 seconds over the last hour.
async fn depth(State(state): State<Arc<AppState>>, admin: Admin, uri: Uri) -> Response {
    #[derive(Deserialize)]
    struct DepthQuery {
        queue: String,
    }
    match serde_urlencoded::from_str::<DepthQuery>(uri.query().unwrap_or_default()) {
        Ok(query) if !sees_queue(&state, &admin, &query.queue) => not_seen(&state, "AdminDepth"),
        Ok(query) => json_response(&state.admin.activity.depths(&query.queue)),
        Err(error) => answer_error(
            &state,
            Protocol::Json,
            &crate::queue::random::uuid().to_string(),
            "AdminDepth",
            &SqsError::invalid_parameter(format!("The parameters could not be read: {error}.")),
        ),
    }
}

/// `GET /admin/api/overview`: the instance and every queue.
async fn overview(
    State(state): State<Arc<AppState>>,
    admin: Admin,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let mut ctx = state.context(&uri, &headers, None);
    if let Some(base) = &state.admin.queue_base_url {
        ctx.base_url = base.clone();
    }
    let mut queues: Vec<QueueSummary> = Vec::new();
    for shard in &state.shards {
        queues.extend(shard.api.service.each_queue(|queue_key, queue, now| {
            let counts = queue.counts(now);
            QueueSummary {
                key: queue_key.to_string(),
                name: key::split(queue_key).name.to_string(),
                url: ctx.queue_url(queue_key),
                arn: ctx.queue_arn(queue_key),
                fifo: queue.is_fifo(),
                visible: counts.visible,
                in_flight: counts.in_flight,
                delayed: counts.delayed,
                oldest_age_seconds: counts.oldest_sent_at.map(|sent| now.saturating_sub(sent) / 1000),
                noisy_groups: queue
                    .noisy_tenants(now)
                    .into_iter()
                    .map(|tenant| NoisyGroup {
                        group: tenant.group.to_string(),
                        messages: tenant.held,
                        in_flight: tenant.in_flight,
                        last_send_age_seconds: now.saturating_sub(tenant.last_send) / 1000,
                    })
                    .collect(),
                rates: Default::default(),
                dead_letter_queue: queue
                    .attributes
                    .redrive_policy
                    .as_ref()
                    .and_then(|policy| QueueArn::parse(&policy.dead_letter_target_arn))
                    .map(|arn| key::of(&ctx.home, &arn.account, &arn.region, &arn.name)),
                sources: Vec::new(),
            }
        }));
    }
    queues.retain(|queue| sees_queue(&state, &admin, &queue.key));
    queues.sort_by(|a, b| a.key.cmp(&b.key));
    // Outside the queues' locks: rates, and the links between dead-letter
    // queues and their sources (the list is in key order).
    for at in 0..queues.len() {
        queues[at].rates = state.admin.activity.rates(&queues[at].key);
        let Some(dlq) = queues[at].dead_letter_queue.clone() else {
            continue;
        };
        match queues.binary_search_by(|q| q.key.as_str().cmp(&dlq)) {
            Ok(target) => {
                let source = queues[at].key.clone();
                queues[target].sources.push(source);
            }
            // A RedrivePolicy naming a queue that does not exist (any more).
            Err(_) => queues[at].dead_letter_queue = None,
        }
    }
    // A sharded instance has no one leader: each shard has its own.
    let sharding = state
        .sharded()
        .then(|| crate::http::state::shard_map_json(&state));
    let leader = match &sharding {
        None => state.first_shard().leadership.status().leader,
        Some(_) => None,
    };
    let overview = Overview {
        node_id: state.node_id.clone(),
        role: state.role_name(),
        serving: state.shards_served() > 0,
        leader: leader.map(leader_json),
        sharding,
        open: state.credentials.is_none(),
        // The overview is answered to signed-in admins only.
        storage: crate::http::state::storage_json(&state, true),
        sample_seconds: SAMPLE_EVERY.as_secs(),
        queues,
        topics: topics::summaries(&state, &admin),
    };
    json_response(&overview)
}

/// Whether `admin` sees the queue keyed `queue_key`.
fn sees_queue(state: &AppState, admin: &Admin, queue_key: &str) -> bool {
    admin.sees(key::split(queue_key).account_or(&state.home))
}

/// The answer about a queue an admin does not see: as if it did not exist.
fn not_seen(state: &AppState, label: &str) -> Response {
    let request_id = crate::queue::random::uuid().to_string();
    answer_error(
        state,
        Protocol::Json,
        &request_id,
        label,
        &SqsError::queue_does_not_exist(),
    )
}

fn json_response(value: &impl serde::Serialize) -> Response {
    let body = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    with_security_headers(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

#[derive(Deserialize)]
struct MessagesQuery {
    queue: String,
    #[serde(default)]
    next: Option<String>,
    #[serde(default)]
    max: Option<String>,
}

/// `GET /admin/api/messages?queue=<key>&next=<token>&max=<n>`: one page of
/// the developer endpoint's look (every message, whatever its state), as
/// JSON with the next page's token.
async fn messages(State(state): State<Arc<AppState>>, admin: Admin, uri: Uri) -> Response {
    let request_id = crate::queue::random::uuid().to_string();
    let looking = state.clone();
    let look = move || {
        serving(&looking)?;
        let query: MessagesQuery = serde_urlencoded::from_str(uri.query().unwrap_or_default())
            .map_err(|e| SqsError::invalid_parameter(format!("The parameters could not be read: {e}.")))?;
        let mut parameters = vec![("ShowInvisible", "true"), ("ShowDelayed", "true")];
        parameters.extend(query.next.as_deref().map(|token| ("NextToken", token)));
        parameters.extend(query.max.as_deref().map(|max| ("MaxResults", max)));
        let params = PeekParams::read(parameters)?;
        if !sees_queue(&looking, &admin, &query.queue) {
            return Err(SqsError::queue_does_not_exist());
        }
        let page = peek::peek(
            &crate::http::call::serving_shard(&looking, &query.queue)?.api,
            &query.queue,
            &params,
        )?;
        Ok(json_response(
            &serde_json::json!({"Messages": page.output.messages, "NextToken": page.next_token}),
        ))
    };
    // The look and its JSON grow with the page: off the runtime (blocking_pool.rs).
    match state
        .admin
        .blocking_pool
        .run(look)
        .await
        .and_then(|looked| looked)
    {
        Ok(response) => response,
        Err(error) => answer_error(&state, Protocol::Json, &request_id, "AdminMessages", &error),
    }
}

/// `POST /admin/api/sqs`: one SQS call in the JSON protocol
/// (`x-amz-target: AmazonSQS.<Action>`), run as any client's is.
async fn call(
    State(state): State<Arc<AppState>>,
    admin: Admin,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let request_id = crate::queue::random::uuid().to_string();
    let result: Result<(Action, Output), SqsError> = async {
        not_forged(&state, &headers)?;
        let (body, _permit) = state.body_budget.read(body, state.request_timeout).await?;
        let (action, input) = read_request(Protocol::Json, &uri, None, &headers, body)?;
        serving(&state)?;
        let ctx = state.context(&uri, &headers, admin.caller().as_ref());
        let api = match api::route(&ctx, action, &input) {
            Route::Queue(key) => &crate::http::call::serving_shard(&state, &key)?.api,
            Route::Here => &state.first_shard().api,
        };
        Ok((action, run(api, &ctx, Protocol::Json, action, input).await?))
    }
    .await;
    let label = match &result {
        Ok((action, _)) => action.name(),
        Err(_) => "AdminCall",
    };
    record(&state, label, &result, started);
    match result {
        Ok((action, output)) => answer(&headers, &request_id, action, output),
        Err(error) => answer_error(&state, Protocol::Json, &request_id, label, &error),
    }
}
