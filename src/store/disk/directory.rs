//! The data directory as its user's alone: created 0700 and its files
//! 0600 whatever the umask, refused when another user owns it or others
//! may write to it (as ssh refuses such a directory for its keys), and no
//! symbolic link followed inside it, so that nobody else on the host can
//! read the messages or make ssq write through a link where it points.
//!
//! The directory itself is taken as the operator names it; inside it,
//! which no one else may write to, ssq opens only what it made.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The permissions ssq gives what it creates: the user's alone.
const DIRECTORY_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;

/// Why the data directory or a file in it cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    #[error("cannot create the data directory {}: {source}", dir.display())]
    Create { dir: PathBuf, source: std::io::Error },
    #[error("the data directory {} is not a directory", dir.display())]
    NotADirectory { dir: PathBuf },
    #[error(
        "the data directory {} belongs to user {owner}, and ssq runs as user {user}: run ssq as the \
         directory's owner, or give it a directory of its own",
        dir.display()
    )]
    NotOwned { dir: PathBuf, owner: u32, user: u32 },
    #[error(
        "other users can write to the data directory {} (mode {mode:o}), so they could replace its files: \
         `chmod go-w {}`, or give ssq a directory of its own (it makes its own 0700)",
        dir.display(), dir.display()
    )]
    WritableByOthers { dir: PathBuf, mode: u32 },
    #[error(
        "{} is a symbolic link: ssq follows no link in its data directory; remove it (ssq makes the file itself)",
        path.display()
    )]
    Link { path: PathBuf },
    #[error("{} is not a regular file: remove it or give ssq another data directory", path.display())]
    NotAFile { path: PathBuf },
    #[error("cannot make {} private: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

/// Creates `dir` 0700 if it does not exist, or checks that it is the
/// user's own and that nobody else may write to it; one that others may
/// read is made private (with a warning: the messages are in it).
pub fn prepare(dir: &Path) -> Result<(), DirectoryError> {
    if !dir.exists() {
        DirBuilder::new()
            .recursive(true)
            .mode(DIRECTORY_MODE)
            .create(dir)
            .map_err(|source| DirectoryError::Create {
                dir: dir.to_path_buf(),
                source,
            })?;
    }
    let metadata = std::fs::metadata(dir).map_err(|source| DirectoryError::Create {
        dir: dir.to_path_buf(),
        source,
    })?;
    if !metadata.is_dir() {
        return Err(DirectoryError::NotADirectory {
            dir: dir.to_path_buf(),
        });
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    if metadata.uid() != user {
        return Err(DirectoryError::NotOwned {
            dir: dir.to_path_buf(),
            owner: metadata.uid(),
            user,
        });
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(DirectoryError::WritableByOthers {
            dir: dir.to_path_buf(),
            mode,
        });
    }
    if mode & 0o077 != 0 {
        tracing::warn!(dir = %dir.display(), mode = format!("{mode:o}"), "other users could read the data directory: made it private (0700)");
        set_mode(dir, mode & DIRECTORY_MODE)?;
    }
    Ok(())
}

/// Makes sure `path`, a file of ssq's own in the data directory, is a
/// regular file readable by its user alone: created 0600 if it does not
/// exist and `create` says so, its group and other bits taken away if it
/// does (never its owner's: a file made read-only stays read-only). A
/// symbolic link is refused, not followed.
pub fn secure_file(path: &Path, create: bool) -> Result<(), DirectoryError> {
    let io = |source| DirectoryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if create {
                // O_EXCL: made here, by this process, or not at all.
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(FILE_MODE)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(path)
                    .map_err(io)?;
            }
            return Ok(());
        }
        Err(error) => return Err(io(error)),
    };
    if metadata.file_type().is_symlink() {
        return Err(DirectoryError::Link {
            path: path.to_path_buf(),
        });
    }
    if !metadata.is_file() {
        return Err(DirectoryError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o077 != 0 {
        set_mode(path, mode & 0o700)?;
    }
    Ok(())
}

/// Opens `path` in the data directory for reading and writing without
/// following a link, creating it 0600 if it does not exist.
pub fn open_private(path: &Path) -> Result<std::fs::File, DirectoryError> {
    secure_file(path, false)?;
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            Some(libc::ELOOP) => DirectoryError::Link {
                path: path.to_path_buf(),
            },
            _ => DirectoryError::Io {
                path: path.to_path_buf(),
                source,
            },
        })
}

fn set_mode(path: &Path, mode: u32) -> Result<(), DirectoryError> {
    std::fs::set_permissions(path, Permissions::from_mode(mode)).map_err(|source| DirectoryError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ssq-dir-{name}-{}", crate::queue::random::nonce()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn what_ssq_makes_is_private_whatever_the_umask() {
        let dir = scratch("private").join("nested");
        prepare(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let file = dir.join("file");
        secure_file(&file, true).unwrap();
        assert_eq!(mode(&file), 0o600);
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_directory_others_may_write_to_is_refused_and_one_they_may_read_made_private() {
        let dir = scratch("shared");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, Permissions::from_mode(0o777)).unwrap();
        let refused = prepare(&dir).unwrap_err();
        assert!(
            matches!(refused, DirectoryError::WritableByOthers { mode: 0o777, .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("chmod go-w"), "{refused}");
        std::fs::set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
        prepare(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_is_refused_and_a_read_only_file_stays_read_only() {
        let dir = scratch("link");
        prepare(&dir).unwrap();
        let target = dir.join("target");
        std::fs::write(&target, "not ssq's").unwrap();
        let link = dir.join("LOCK");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(open_private(&link), Err(DirectoryError::Link { .. })));
        assert!(matches!(
            secure_file(&link, true),
            Err(DirectoryError::Link { .. })
        ));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "not ssq's");
        std::fs::set_permissions(&target, Permissions::from_mode(0o444)).unwrap();
        secure_file(&target, false).unwrap();
        assert_eq!(mode(&target), 0o400);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
