//! The audit trail (`--audit-log FILE`): every refused request (a missing or
//! bad signature, a failed sign-in, a host or a page ssq does not answer:
//! the 401s and 403s; a sign-in tried too soon after failures, 429) and every admin action (the admin API's calls and
//! looks at messages, the snapshot export) as one JSON line with the time,
//! the access key id, the account, the action, the resource, the source
//! address and the outcome.
//!
//! Off the serving path: a request hands its line to a thread of its own
//! through a bounded queue and goes on. A full queue drops the line and
//! counts it (`ssq_audit_dropped_total`) rather than slow every caller
//! behind a slow disk. The file is the user's alone (created 0600), only
//! appended to, and never opened through a symbolic link.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use serde::Serialize;

use super::AppState;
use crate::metrics::Metrics;

/// Lines waiting for the writer; beyond, they are dropped and counted.
const QUEUE: usize = 10_000;

/// Why the audit log cannot be opened: ssq does not start without it.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot open the audit log {} for appending: {source} (it must be a regular file, not a symbolic link, in a \
     directory that exists)",
    path.display()
)]
pub struct AuditLogError {
    path: PathBuf,
    source: std::io::Error,
}

/// One line of the trail.
#[derive(Debug, Serialize)]
struct Line {
    time: String,
    key_id: Option<String>,
    account: String,
    /// The SQS or SNS action when the request named one, else the method
    /// and path.
    action: String,
    /// The permission that governed the call, as policies name it: the
    /// single action's for a batch (`sqs:SendMessage` for SendMessageBatch).
    #[serde(skip_serializing_if = "Option::is_none")]
    permission: Option<&'static str>,
    /// The path the request was sent to: a queue URL's, `/` for calls that
    /// name their queue in the body, an admin API's.
    resource: String,
    source: Option<String>,
    /// `allowed`, `refused` (401, 403 or 429), or `failed` (any other error).
    outcome: &'static str,
    status: u16,
    /// The error code of a refused or failed call, when it has one.
    code: Option<&'static str>,
}

/// What an error answer tells the trail, as an extension of its response
/// (`call::error_response`, only while the trail is on): its code, and the
/// action when the request got as far as naming one. A success needs none:
/// the admin API's calls name theirs in `x-amz-target`.
#[derive(Debug, Clone)]
pub struct Answered {
    pub action: Option<&'static str>,
    /// The permission the action needs (`Action::policy_name`).
    pub permission: Option<&'static str>,
    pub code: &'static str,
}

/// The trail's writer, behind its queue.
pub struct AuditLog {
    lines: SyncSender<Line>,
    metrics: Arc<Metrics>,
}

impl AuditLog {
    /// Opens (or creates, 0600) `path` for appending and starts its writer.
    pub fn open(path: &Path, metrics: Arc<Metrics>) -> Result<AuditLog, AuditLogError> {
        use std::os::unix::fs::OpenOptionsExt;
        let error = |source| AuditLogError {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(error)?;
        if !file.metadata().map_err(error)?.is_file() {
            return Err(error(std::io::Error::other("not a regular file")));
        }
        let (lines, queued) = std::sync::mpsc::sync_channel(QUEUE);
        std::thread::Builder::new()
            .name("ssq-audit".into())
            .spawn(move || write_lines(file, queued))
            .map_err(error)?;
        Ok(AuditLog { lines, metrics })
    }

    fn record(&self, line: Line) {
        match self.lines.try_send(line) {
            Ok(()) => self.metrics.audit_lines.inc(),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => self.metrics.audit_dropped.inc(),
        }
    }
}

/// The writer: each line as it comes, flushed whenever none is waiting, so
/// that a line is on disk (in the page cache) soon after its request.
fn write_lines(file: std::fs::File, queued: Receiver<Line>) {
    let mut out = std::io::BufWriter::new(file);
    while let Ok(first) = queued.recv() {
        let mut next = Some(first);
        while let Some(line) = next {
            let written = serde_json::to_writer(&mut out, &line)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n"));
            if let Err(error) = written {
                tracing::error!(%error, "the audit log cannot be written: lines are being lost");
            }
            next = queued.try_recv().ok();
        }
        if let Err(error) = out.flush() {
            tracing::error!(%error, "the audit log cannot be written: lines are being lost");
        }
    }
}

/// The layer every route is served behind (outside the host guard, so that
/// its refusals are recorded too).
pub(super) async fn audited(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let Some(log) = &state.audit else {
        return next.run(request).await;
    };
    // Kept as they came (cheap clones): read into a line only if the
    // request is recorded.
    let method = request.method().clone();
    let uri = request.uri().clone();
    let authorization = request.headers().get(header::AUTHORIZATION).cloned();
    let target = request.headers().get("x-amz-target").cloned();
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(address)| *address);

    let response = next.run(request).await;
    let status = response.status().as_u16();
    // 429: a sign-in tried before its address's wait was over.
    let refused = status == 401 || status == 403 || status == 429;
    let resource = uri.path();
    let admin_action = resource.starts_with("/admin/api/")
        && (method == Method::POST || resource == "/admin/api/messages" || resource == "/admin/api/snapshot");
    if !refused && !admin_action {
        return response;
    }
    let target = target
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .and_then(|target| target.rsplit_once('.'))
        .map(|(_, action)| action.to_string());
    let answered = response.extensions().get::<Answered>();
    let action = answered
        .and_then(|a| a.action.map(str::to_string))
        .or(target)
        .unwrap_or_else(|| format!("{method} {resource}"));
    let key_id = key_id(authorization.as_ref(), uri.query());
    log.record(Line {
        time: crate::topic::envelope::timestamp(state.first_shard().api.service.now()),
        account: account_of(&state, key_id.as_deref()),
        key_id,
        action,
        permission: answered.and_then(|a| a.permission),
        resource: resource.to_string(),
        source: peer.map(|address| address.to_string()),
        outcome: match status {
            _ if refused => "refused",
            200..=399 => "allowed",
            _ => "failed",
        },
        status,
        code: answered.map(|a| a.code),
    });
    response
}

/// The account of the key a request names: the file's, or the instance's
/// own (also for keys it does not hold).
fn account_of(state: &AppState, key_id: Option<&str>) -> String {
    let named = state
        .credentials
        .as_ref()
        .zip(key_id)
        .and_then(|(credentials, id)| credentials.current().key(id).and_then(|key| key.account.clone()));
    named.unwrap_or_else(|| state.home.account.clone())
}

/// The access key id a request names: its signature's (header or presigned
/// query string), or the user name of an HTTP Basic sign-in. Not checked:
/// the trail records what was claimed, refused or not.
fn key_id(authorization: Option<&HeaderValue>, query: Option<&str>) -> Option<String> {
    super::sign_in::basic_credentials(authorization)
        .map(|(key, _)| key)
        .or_else(|| super::sqs_api::sigv4::signed_key_id(authorization, query))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(action: &str) -> Line {
        Line {
            time: "2026-12-04T10:00:00.000Z".into(),
            key_id: Some("AKID".into()),
            account: "000000000000".into(),
            action: action.into(),
            permission: None,
            resource: "/".into(),
            source: Some("127.0.0.1:5000".into()),
            outcome: "refused",
            status: 403,
            code: Some("InvalidClientTokenId"),
        }
    }

    #[test]
    fn lines_are_json_one_per_line_in_a_file_of_the_user_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("ssq-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.log");
        let metrics = Arc::new(Metrics::new("test"));
        let log = AuditLog::open(&path, metrics.clone()).unwrap();
        log.record(line("SendMessage"));
        log.record(line("PurgeQueue"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let text = loop {
            let text = std::fs::read_to_string(&path).unwrap();
            if text.lines().count() == 2 || std::time::Instant::now() > deadline {
                break text;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let actions: Vec<String> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["action"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(actions, ["SendMessage", "PurgeQueue"]);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(metrics.audit_lines.get(), 2);

        // A symbolic link where the log should be is not followed.
        let link = dir.join("link.log");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(AuditLog::open(&link, metrics).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
