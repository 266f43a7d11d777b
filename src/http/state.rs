//! What every request handler shares ([`AppState`]): the shards, the
//! settings requests are read and answered by, the budgets they draw on and
//! what each surface keeps; and what an action needs to know of a request
//! (`AppState::context`). It imports no handler: every part of `http/`
//! takes it, and it takes only the data they keep.

use std::sync::Arc;

use axum::http::{HeaderMap, Uri, header};

use crate::api::{RequestContext, RequestRegion};
use crate::cluster::group::Membership;
use crate::config::Regions;
use crate::http::admin_api::state::AdminState;
use crate::http::control_api::state::ControlApiState;
use crate::http::intake::audit_log::AuditLog;
use crate::http::intake::authorization::Caller;
use crate::http::intake::credentials_file::CredentialsFile;
use crate::http::intake::hosts::AllowedHosts;
use crate::http::intake::request_body::BodyBudget;
use crate::http::intake::sign_in_guard::SignInGuard;
use crate::http::intake::throttle::Throttle;
use crate::http::shards::{Forwarding, ShardFront};
use crate::http::sns_api::signing_key::SnsApiState;
use crate::leader::Role;
use crate::metrics::Metrics;
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
    pub allowed_hosts: AllowedHosts,
    /// With `--audit-log`: where refused requests and admin actions are recorded.
    pub audit: Option<Arc<AuditLog>>,
    /// When set, every SQS request must be signed with one of its keys.
    pub credentials: Option<Arc<CredentialsFile>>,
    /// Failed sign-ins to the operational endpoints, and the waits they earn.
    pub sign_ins: SignInGuard,
    /// The request rates of the keys that have one, and of the accounts.
    pub throttle: Throttle,
    pub account_throttle: Throttle,
    /// Time a client has to send a request's body.
    pub request_timeout: std::time::Duration,
    /// In a sharded group: every shard has had a leader this instance knew
    /// of (`/ready` waits for it).
    pub every_shard_led: std::sync::atomic::AtomicBool,
    /// What all request bodies and large answers in memory may take together.
    pub body_budget: BodyBudget,
    /// How calls reach the shards led elsewhere.
    pub forwarding: Forwarding,
    /// What each surface keeps of its own.
    pub sns: SnsApiState,
    pub admin: AdminState,
    pub control: ControlApiState,
    /// Where the state is kept (`/status`, `/metrics`).
    pub storage: Storage,
    /// With `--lock-url`: where the lock is kept instead, its password
    /// hidden.
    pub lock_url: Option<String>,
}

/// Where an instance keeps its state.
pub enum Storage {
    Memory,
    Disk { dir: std::path::PathBuf },
    Redis,
    Postgres,
    Mysql,
}

impl AppState {
    pub(in crate::http) fn sharded(&self) -> bool {
        self.shards.len() > 1
    }

    /// The shard of the queue keyed `key`.
    pub(in crate::http) fn shard_of(&self, key: &str) -> &ShardFront {
        &self.shards[self.placement.shard_of(key)]
    }

    /// Where requests that name no queue run (ListQueues, and requests
    /// whose queue cannot be told, which their action refuses): the first
    /// shard, the only one unless `--shards`.
    pub(in crate::http) fn first_shard(&self) -> &ShardFront {
        &self.shards[0]
    }

    /// How many shards this instance serves now (the one shard, 0 or 1,
    /// unless `--shards`).
    pub(in crate::http) fn shards_served(&self) -> usize {
        self.shards
            .iter()
            .filter(|shard| shard.leadership.is_serving())
            .count()
    }

    /// The instance's role as `/status` and the admin page name it: its
    /// leadership's, or in a sharded group, where each shard has its own,
    /// "member" (until it shuts down).
    pub(in crate::http) fn role_name(&self) -> &'static str {
        match self.first_shard().leadership.role() {
            Role::ShuttingDown => "shutting-down",
            _ if self.sharded() => "member",
            role => role.name(),
        }
    }

    /// The region a request is in: with `--regions signed`, the one its
    /// client signed it for (checked with the signature when credentials
    /// are configured), read when an action asks; unsigned requests are in
    /// the instance's own.
    pub(in crate::http) fn request_region(&self, uri: &Uri, headers: &HeaderMap) -> RequestRegion {
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
                    crate::http::intake::sigv4::signed_region(authorization.as_ref(), presigned.as_deref())
                        .unwrap_or_else(|| home.clone())
                })
            }
        }
    }

    /// What an action needs to know of a request: `caller` is its signer,
    /// with `--credentials`, whose account it acts in.
    pub(in crate::http) fn context(
        &self,
        uri: &Uri,
        headers: &HeaderMap,
        caller: Option<&Caller>,
    ) -> RequestContext {
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

/// The leader as `/status` and the admin page show it.
pub(in crate::http) fn leader_json(leader: crate::leader::LeaderInfo) -> serde_json::Value {
    serde_json::json!({"node_id": leader.node_id, "url": leader.url, "epoch": leader.epoch})
}

/// The shard map as `/status` and the admin page show it: each shard's
/// leader and whether this instance serves it, and the group's members.
pub(in crate::http) fn shard_map_json(state: &AppState) -> serde_json::Value {
    let shards: Vec<serde_json::Value> = state
        .shards
        .iter()
        .enumerate()
        .map(|(index, shard)| {
            let status = shard.leadership.status();
            serde_json::json!({
                "shard": index,
                "role": status.role.name(),
                "serving": status.serving,
                "leader": status.leader.map(leader_json),
            })
        })
        .collect();
    let (members, share) = match &state.membership {
        Some(membership) => (membership.members(), Some(membership.share())),
        None => (Vec::new(), None),
    };
    serde_json::json!({"count": state.shards.len(), "members": members, "share": share, "shards": shards})
}

/// Where the state is kept, and the lock if it is kept elsewhere
/// (`"lock": "etcd"`), for `/status` and the admin page; the data
/// directory's path and etcd's URL only for an admin.
pub(in crate::http) fn storage_json(state: &AppState, admin: bool) -> serde_json::Value {
    let mut storage = mode_json(&state.storage, admin);
    if let Some(url) = &state.lock_url {
        storage["lock"] = "etcd".into();
        if admin {
            storage["lock_url"] = url.clone().into();
        }
    }
    storage
}

fn mode_json(storage: &Storage, admin: bool) -> serde_json::Value {
    match storage {
        Storage::Memory => serde_json::json!({"mode": "memory"}),
        Storage::Redis => serde_json::json!({"mode": "redis"}),
        Storage::Postgres => serde_json::json!({"mode": "postgres"}),
        Storage::Mysql => serde_json::json!({"mode": "mysql"}),
        Storage::Disk { dir } => {
            let mut disk = serde_json::json!({
                "mode": "disk",
                "bytes": crate::store::disk::bytes_on_disk(dir),
            });
            if admin {
                disk["data_dir"] = dir.display().to_string().into();
            }
            disk
        }
    }
}
