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
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

use serde::Serialize;

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
pub(super) struct Line {
    pub(super) time: String,
    pub(super) key_id: Option<String>,
    pub(super) account: String,
    /// The SQS or SNS action when the request named one, else the method
    /// and path.
    pub(super) action: String,
    /// The permission that governed the call, as policies name it: the
    /// single action's for a batch (`sqs:SendMessage` for SendMessageBatch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) permission: Option<&'static str>,
    /// The path the request was sent to: a queue URL's, `/` for calls that
    /// name their queue in the body, an admin API's.
    pub(super) resource: String,
    pub(super) source: Option<String>,
    /// `allowed`, `refused` (401, 403 or 429), or `failed` (any other error).
    pub(super) outcome: &'static str,
    pub(super) status: u16,
    /// The error code of a refused or failed call, when it has one.
    pub(super) code: Option<&'static str>,
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

    pub(super) fn record(&self, line: Line) {
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
