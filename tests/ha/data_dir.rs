//! The data directory is its user's alone: made private whatever the
//! umask, refused when others own it or may write to it, no link followed
//! inside it, a database ssq cannot write refused at start, and its path
//! shown by `/status` only to a signed-in admin.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Server, ssq_binary, wait_for};
use crate::disk::{DataDir, start_on};

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

/// Runs ssq with `args` behind `prefix` (a command that runs it as
/// someone else, or none), expecting it to refuse to start: its exit code (None
/// if it was still running after 20 s, and was killed) and what it said.
pub(crate) fn refused_start(prefix: &[&str], args: &[&str]) -> (Option<i32>, String) {
    refused_start_of(&ssq_binary(), prefix, args)
}

/// [`refused_start`] of the ssq binary at `binary`.
fn refused_start_of(binary: &Path, prefix: &[&str], args: &[&str]) -> (Option<i32>, String) {
    let mut command = match prefix.split_first() {
        None => Command::new(binary),
        Some((first, rest)) => {
            let mut command = Command::new(first);
            command.args(rest).arg(binary);
            command
        }
    };
    let mut child = command
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ssq starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    (code, said)
}

/// ssq started under umask 022, as most shells have it.
fn start_with_umask(dir: &DataDir) -> Server {
    let binary = ssq_binary();
    let shell = format!("umask 022 && exec {} \"$@\"", binary.display());
    let port = crate::common::free_port();
    let child = Command::new("sh")
        .args([
            "-c",
            &shell,
            "ssq",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
            dir.path(),
        ])
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    crate::common::wait_for_port(port, "ssq");
    Server::adopt(child, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_directory_and_its_files_are_the_users_alone_whatever_the_umask() {
    let dir = DataDir::new("private");
    let server = start_with_umask(&dir);
    assert!(
        wait_for(Duration::from_secs(20), || server.is_ready())
            .await
            .is_some()
    );
    // A write, so that the log and its index exist.
    crate::common::create_queue_url(&server.client(), "q", &[]).await;
    let root = Path::new(dir.path());
    assert_eq!(mode(root), 0o700, "the directory");
    for file in ["ssq.sqlite3", "ssq.sqlite3-wal", "ssq.sqlite3-shm", "LOCK"] {
        assert_eq!(mode(&root.join(file)), 0o600, "{file}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_planted_in_the_directory_is_refused_and_what_it_points_to_untouched() {
    let target = std::env::temp_dir().join(format!("ssq-planted-target-{}", std::process::id()));
    for planted in ["LOCK", "ssq.sqlite3", "ssq.sqlite3-wal"] {
        std::fs::write(&target, "someone's file").unwrap();
        let dir = DataDir::new("planted");
        std::fs::create_dir(dir.path()).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(&target, Path::new(dir.path()).join(planted)).unwrap();
        let (code, said) = refused_start(&[], &["--data-dir", dir.path()]);
        assert_eq!(code, Some(1), "{planted}: {said}");
        assert!(
            said.contains("is a symbolic link") && said.contains(planted),
            "{planted}: {said}"
        );
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "someone's file",
            "{planted}: the file it points to is untouched"
        );
    }
    let _ = std::fs::remove_file(&target);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_others_may_write_to_or_another_user_owns_is_refused() {
    let dir = DataDir::new("shared");
    std::fs::create_dir(dir.path()).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, said) = refused_start(&[], &["--data-dir", dir.path()]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("other users can write") && said.contains("chmod go-w"),
        "{said}"
    );
    assert!(
        !Path::new(dir.path()).join("ssq.sqlite3").exists(),
        "nothing made in it"
    );

    // Another user's (only root can give a directory away).
    if running_as_root() {
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let chowned = Command::new("chown")
            .args(["nobody", dir.path()])
            .status()
            .unwrap();
        assert!(chowned.success());
        let (code, said) = refused_start(&[], &["--data-dir", dir.path()]);
        assert_eq!(code, Some(1), "{said}");
        assert!(said.contains("belongs to user 65534"), "{said}");
    }
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A database ssq may not write (its file made read-only) is refused at
/// start rather than served as ready and failing every write. Root writes
/// to read-only files, so as root ssq runs as nobody here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_cannot_be_written_is_refused_at_start() {
    let dir = DataDir::new("read-only");
    let prefix: &[&str] = match running_as_root() {
        true => &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
        false => &[],
    };
    // A copy nobody can run, wherever the checkout is (root's home is not
    // nobody's to enter).
    let bin = DataDir::new("read-only-bin");
    std::fs::create_dir(bin.path()).unwrap();
    std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let binary = Path::new(bin.path()).join("ssq");
    std::fs::copy(ssq_binary(), &binary).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A first start makes the database.
    drop(start_on(&dir, &[]).await);
    if running_as_root() {
        assert!(
            Command::new("chown")
                .args(["-R", "nobody", dir.path()])
                .status()
                .unwrap()
                .success()
        );
    }
    let file = Path::new(dir.path()).join("ssq.sqlite3");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    let (code, said) = refused_start_of(&binary, prefix, &["--data-dir", dir.path()]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("cannot be written") && said.contains(&file.display().to_string()),
        "{said}"
    );
    assert!(!said.contains("Ready."), "never said it serves: {said}");
}

/// With `--credentials`, `/status` answers anyone, and names the data
/// directory only to a signed-in admin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_names_the_data_directory_only_to_a_signed_in_admin() {
    let dir = DataDir::new("status");
    let credentials = std::env::temp_dir().join(format!("ssq-status-credentials-{}", std::process::id()));
    std::fs::write(&credentials, "admin:secret\n").unwrap();
    let server = start_on(&dir, &["--credentials", credentials.to_str().unwrap()]).await;
    let status = |authorization: Option<&'static str>| {
        let url = format!("{}/status", server.url);
        async move {
            let mut request = reqwest::Client::new().get(url);
            if let Some(value) = authorization {
                request = request.header("authorization", value);
            }
            let text = request.send().await.unwrap().text().await.unwrap();
            serde_json::from_str::<serde_json::Value>(&text).unwrap()
        }
    };
    let anyone = status(None).await;
    assert_eq!(anyone["storage"]["mode"], "disk", "{anyone}");
    assert!(anyone["storage"].get("data_dir").is_none(), "{anyone}");
    assert!(!anyone.to_string().contains(dir.path()), "{anyone}");
    // admin:secret
    let admin = status(Some("Basic YWRtaW46c2VjcmV0")).await;
    assert_eq!(admin["storage"]["data_dir"], dir.path(), "{admin}");
    let _ = std::fs::remove_file(&credentials);
}
