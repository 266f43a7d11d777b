//! One process per data directory: an OS file lock on `DIR/LOCK`, held for
//! the life of the process and released by the OS however it ends (a
//! kill -9 included), so a stale lock can never keep ssq from starting.
//! The file holds the holder's process id, for the message a second
//! process gives when it refuses to start.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Why the directory could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "the data directory {} is in use by another ssq (process {holder}): one process per directory; \
         stop that one, or give this one another --data-dir",
        dir.display()
    )]
    Held { dir: PathBuf, holder: String },
    #[error("cannot lock the data directory {} ({}): {source}", dir.display(), dir.join(LOCK_FILE).display())]
    Io { dir: PathBuf, source: std::io::Error },
    #[error(transparent)]
    File(#[from] super::directory::DirectoryError),
}

const LOCK_FILE: &str = "LOCK";

/// The lock on a data directory; dropping it (or the process ending)
/// lets the directory go.
#[derive(Debug)]
pub struct DirectoryLock {
    _file: File,
}

impl DirectoryLock {
    /// Takes `dir`, which must exist, or says which process holds it.
    pub fn take(dir: &Path) -> Result<DirectoryLock, LockError> {
        let io = |source| LockError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        // Never through a link: one planted there would have ssq truncate
        // whatever it points to and write its pid in it.
        let mut file = super::directory::open_private(&dir.join(LOCK_FILE))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = match holder.trim() {
                    "" => "unknown".to_string(),
                    pid => pid.to_string(),
                };
                return Err(LockError::Held {
                    dir: dir.to_path_buf(),
                    holder,
                });
            }
            Err(TryLockError::Error(source)) => return Err(io(source)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(DirectoryLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_directory_is_refused_naming_the_holder() {
        let dir = std::env::temp_dir().join(format!("ssq-lock-{}", crate::queue::random::nonce()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = DirectoryLock::take(&dir).unwrap();
        // Another open file description: what a second process would have.
        let refused = DirectoryLock::take(&dir).unwrap_err();
        match &refused {
            LockError::Held { holder, .. } => assert_eq!(holder, &std::process::id().to_string()),
            other => panic!("expected Held, got {other}"),
        }
        assert!(
            refused.to_string().contains(&dir.display().to_string()),
            "{refused}"
        );
        drop(first);
        DirectoryLock::take(&dir).expect("free again once the holder let go");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
