//! The HTTP front, a folder per surface: `POST /` and `POST
//! /{account}/{queue}` take SQS calls (`sqs_api/`); `GET /` is the admin
//! page and `/admin/api/` its API, with the developer endpoint
//! `/_aws/sqs/messages` that looks at a queue's messages without receiving
//! them (`admin_api/`); SNS calls arrive at `POST /` too and are told
//! apart there (`sns_api/`); `/_ssq/` is the control API for test suites
//! (`control_api/`). Below them, what they share: running and answering a
//! call (`call.rs`), the shards (`shard_front.rs`), the keys of
//! `--credentials` (`credentials_file.rs`), their request rates
//! (`throttle.rs`) and policies (`authorization.rs`), sign-in, the audit trail
//! (`audit.rs`), the host
//! guard, bodies and large answers, the listener; and the operational
//! endpoints `/health`, `/ready`, `/status`, `/metrics` (`status.rs`) and
//! LocalStack's health (`localstack.rs`), and `ssq --check-health`, their
//! client for a container's health check (`health_check.rs`). This file holds the state they
//! share and the routers that put them on one address or two
//! (`--admin-listen`).

pub(crate) mod admin_api;
pub mod audit;
pub mod authorization;
mod call;
pub(crate) mod control_api;
pub mod credentials_file;
pub mod health_check;
pub(crate) mod hosts;
mod large_answers;
pub(crate) mod listener;
mod localstack;
pub(crate) mod request_body;
mod shard_front;
mod sign_in;
pub mod sns_api;
pub mod sqs_api;
mod status;
pub mod throttle;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use self::authorization::Caller;
use self::call::not_serving;
pub use self::localstack::{ReadyLine, announce_ready};
pub use self::shard_front::ShardFront;
use self::sqs_api::sqs;
use self::status::{admin_routes, leader_json, shard_map_json};
use crate::api::{RequestContext, RequestRegion};
use crate::cluster::group::Membership;
use crate::config::Regions;
use crate::error::SqsError;
use crate::http::request_body::BodyBudget;
use crate::leader::Role;
use crate::metrics::Metrics;
use crate::protocol::query;
use crate::queue::key::Home;
use crate::service::shards::Placement;

/// What every request handler shares: the shards, the settings requests
/// are read and answered by, and the budgets they draw on.
pub struct AppState {
    pub node_id: String,
    /// Every shard, in order: one unless `--shards`.
    pub shards: Vec<ShardFront>,
    pub placement: Placement,
    /// The group's members and shares, in a sharded group.
    pub membership: Option<Arc<Membership>>,
    pub metrics: Arc<Metrics>,
    /// The instance's own account and region (`--account-id`, `--region`).
    pub home: Home,
    pub regions: Regions,
    /// Base of queue URLs; taken from each request's Host header when unset.
    pub public_url: Option<String>,
    /// The names requests may come by (`hosts.rs`).
    pub allowed_hosts: hosts::AllowedHosts,
    /// With `--audit-log`: where refused requests and admin actions are recorded.
    pub audit: Option<Arc<audit::AuditLog>>,
    /// When set, every SQS request must be signed with one of its keys.
    pub credentials: Option<Arc<credentials_file::CredentialsFile>>,
    /// Failed sign-ins to the operational endpoints, and the waits they earn.
    pub sign_ins: sign_in::SignInGuard,
    /// The request rates of the keys that have one, and of the accounts.
    pub throttle: throttle::Throttle,
    pub account_throttle: throttle::Throttle,
    /// Time a client has to send a request's body.
    pub request_timeout: std::time::Duration,
    /// In a sharded group: every shard has had a leader this instance knew
    /// of (`/ready` waits for it).
    pub every_shard_led: std::sync::atomic::AtomicBool,
    /// What all request bodies and large answers in memory may take together.
    pub body_budget: BodyBudget,
    /// What each surface keeps of its own.
    pub sqs: sqs_api::SqsApiState,
    pub sns: sns_api::SnsApiState,
    pub admin: admin_api::AdminState,
    pub control: control_api::ControlApiState,
    /// Where the state is kept (`/status`, `/metrics`).
    pub storage: Storage,
}

/// Where an instance keeps its state.
pub enum Storage {
    Memory,
    Disk { dir: std::path::PathBuf },
    Redis,
    Postgres,
}

impl AppState {
    fn sharded(&self) -> bool {
        self.shards.len() > 1
    }

    /// The shard of the queue keyed `key`.
    fn shard_of(&self, key: &str) -> &ShardFront {
        &self.shards[self.placement.shard_of(key)]
    }

    /// Where requests that name no queue run (ListQueues, and requests
    /// whose queue cannot be told, which their action refuses): the first
    /// shard, the only one unless `--shards`.
    fn first_shard(&self) -> &ShardFront {
        &self.shards[0]
    }

    /// How many shards this instance serves now (the one shard, 0 or 1,
    /// unless `--shards`).
    fn shards_served(&self) -> usize {
        self.shards
            .iter()
            .filter(|shard| shard.leadership.is_serving())
            .count()
    }

    /// The instance's role as `/status` and the admin page name it: its
    /// leadership's, or in a sharded group, where each shard has its own,
    /// "member" (until it shuts down).
    fn role_name(&self) -> &'static str {
        match self.first_shard().leadership.role() {
            Role::ShuttingDown => "shutting-down",
            _ if self.sharded() => "member",
            role => role.name(),
        }
    }

    /// The shard of `key`, if this instance serves it now.
    fn serving_shard(&self, key: &str) -> Result<&ShardFront, SqsError> {
        let shard = self.shard_of(key);
        match shard.leadership.is_serving() {
            true => Ok(shard),
            false => Err(not_serving(self, &shard.leadership)),
        }
    }

    /// The region a request is in: with `--regions signed`, the one its
    /// client signed it for (checked with the signature when credentials
    /// are configured), read when an action asks; unsigned requests are in
    /// the instance's own.
    fn request_region(&self, uri: &Uri, headers: &HeaderMap) -> RequestRegion {
        match self.regions {
            Regions::One => RequestRegion::known(&self.home.region),
            Regions::Signed => {
                let authorization = headers.get(header::AUTHORIZATION).cloned();
                let presigned = uri
                    .query()
                    .filter(|query| query.contains("X-Amz-Credential="))
                    .map(str::to_string);
                let home = self.home.region.clone();
                RequestRegion::read_when_asked(move || {
                    crate::http::sqs_api::sigv4::signed_region(authorization.as_ref(), presigned.as_deref())
                        .unwrap_or_else(|| home.clone())
                })
            }
        }
    }

    /// What an action needs to know of a request: `caller` is its signer,
    /// with `--credentials`, whose account it acts in.
    fn context(&self, uri: &Uri, headers: &HeaderMap, caller: Option<&Caller>) -> RequestContext {
        let base_url = match &self.public_url {
            Some(url) => url.clone(),
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()))
                    .unwrap_or("localhost");
                ["http://", host].concat()
            }
        };
        let account = caller.map_or(&self.home.account, |caller| &caller.account);
        RequestContext {
            base_url,
            account_id: account.clone(),
            region: self.request_region(uri, headers),
            home: self.home.clone(),
            key_id: caller.map(|caller| caller.key_id.clone()),
            identity: None,
            max_queues: caller.and_then(|caller| caller.max_queues),
            sender_id: account.as_str().into(),
            trace_id: headers
                .get("x-amzn-trace-id")
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
                .map(str::to_string),
        }
    }
}

/// Everything on one address: the SQS API and the operational endpoints.
pub fn router(state: Arc<AppState>) -> Router {
    let routes = admin_routes()
        .merge(admin_api::routes())
        .route("/", get(home).post(sqs))
        .merge(sqs_address_routes(&state));
    guarded(routes, state)
}

/// What the SQS address serves besides the API's own paths: queue URLs,
/// the LocalStack drop-in and, when on, the control API.
fn sqs_address_routes(state: &AppState) -> Router<Arc<AppState>> {
    let routes = queue_path_routes()
        .merge(localstack::routes())
        .route("/_ssq/sns/{file}", get(sns_api::certificate));
    match state.control.enabled {
        true => routes.merge(control_api::routes()),
        false => routes,
    }
}

/// What every address serves its routes behind: the audit trail when on
/// (`audit.rs`), the host and origin guard (`hosts.rs`), then the budget for
/// large answers (`large_answers.rs`).
fn guarded(routes: Router<Arc<AppState>>, state: Arc<AppState>) -> Router {
    let routes = routes
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            large_answers::budgeted,
        ))
        .layer(axum::middleware::from_fn_with_state(state.clone(), hosts::guard));
    // Without a trail, no layer: each costs every request a little.
    let routes = match state.audit {
        Some(_) => routes.layer(axum::middleware::from_fn_with_state(
            state.clone(),
            audit::audited,
        )),
        None => routes,
    };
    routes.with_state(state)
}

/// The SQS API alone, for when the operational endpoints have an address of
/// their own (`--admin-listen`).
pub fn sqs_router(state: Arc<AppState>) -> Router {
    let routes = Router::new()
        .route("/", get(home).post(sqs))
        .merge(sqs_address_routes(&state));
    guarded(routes, state)
}

/// The admin page, `/health`, `/ready`, `/status` and `/metrics`.
pub fn admin_router(state: Arc<AppState>) -> Router {
    let routes = admin_routes()
        .merge(admin_api::routes())
        .route("/", get(admin_api::page));
    guarded(routes, state)
}

/// SQS requests sent to a queue URL (the Query protocol's habit): posted,
/// or as GET with the parameters in the query string; and the developer
/// endpoint that looks at a queue's messages (`admin_api/developer_endpoint.rs`).
fn queue_path_routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/{account}/{queue}", get(queue_get).post(sqs))
        .route("/queue/{region}/{account}/{queue}", get(queue_get).post(sqs))
        .route(
            "/_aws/sqs/messages",
            get(admin_api::developer_endpoint::by_url).post(admin_api::developer_endpoint::by_url),
        )
        // An SDK given the endpoint as its endpoint_url may add a slash.
        .route(
            "/_aws/sqs/messages/",
            get(admin_api::developer_endpoint::by_url).post(admin_api::developer_endpoint::by_url),
        )
        .route(
            "/_aws/sqs/messages/{region}/{account}/{queue}",
            get(admin_api::developer_endpoint::by_path).post(admin_api::developer_endpoint::by_path),
        )
}

/// GET on a queue URL: a Query call when it names an action; anything else
/// is an operation SQS does not know, answered as AWS answers it.
async fn queue_get(state: State<Arc<AppState>>, request: Request) -> Response {
    if is_query_get(request.uri()) {
        return sqs(state, request).await;
    }
    query::unknown_operation()
}

/// `GET /` on the SQS address: an SQS Query request sent as a GET, else the
/// admin page, unless that lives on the admin address.
async fn home(state: State<Arc<AppState>>, request: Request) -> Response {
    if is_query_get(request.uri()) {
        return sqs(state, request).await;
    }
    if state.admin.apart {
        return (
            StatusCode::NOT_FOUND,
            "The admin page is on the admin address (--admin-listen).\n",
        )
            .into_response();
    }
    let (mut parts, _) = request.into_parts();
    match <sign_in::Admin as axum::extract::FromRequestParts<_>>::from_request_parts(&mut parts, &state).await
    {
        Ok(admin) => admin_api::page(state, admin).await,
        Err(refused) => refused,
    }
}

fn is_query_get(uri: &Uri) -> bool {
    uri.query()
        .is_some_and(|q| q.split('&').any(|pair| pair.starts_with("Action=")))
}
