//! The HTTP front, a folder per surface: SQS calls at `POST /` and a
//! queue URL (`sqs_api/`) and SNS calls at `POST /` too, told apart once
//! by the front door (`front_door.rs`, `sns_api/`); the admin page at
//! `GET /` and its API under `/admin/api/`, with the developer endpoint
//! `/_aws/sqs/messages` (`admin_api/`); the control API for test suites
//! under `/_ssq/` (`control_api/`); `/health`, `/ready`, `/status`,
//! `/metrics` and LocalStack's health (`status_api/`). Below them, what
//! they share and never each other: running and answering a call
//! (`call/`), the shards and forwarding to their leaders (`shards/`),
//! taking a request in (`intake/`: hosts, bodies, signatures, sign-in,
//! rates, policies, the audit trail), the state every handler shares
//! (`state.rs`), and the listener (`listener.rs`). This file holds the
//! routers that put them on one address or two (`--admin-listen`) and the
//! layers outside every route.

pub(crate) mod admin_api;
mod call;
pub(crate) mod control_api;
mod front_door;
pub mod intake;
pub(crate) mod listener;
pub mod shards;
pub mod sns_api;
pub mod sqs_api;
pub mod state;
pub mod status_api;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use self::call::is_query_get;
use self::front_door::call as sqs;
use self::intake::{audit, host_guard, sign_in};
pub use self::shards::ShardFront;
use self::state::AppState;
pub use self::state::Storage;
use self::status_api::admin_routes;
pub use self::status_api::{ReadyLine, announce_ready};
use crate::protocol::query;

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
        .merge(status_api::localstack::routes())
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
            intake::large_answers::budgeted,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            host_guard::guard,
        ));
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
