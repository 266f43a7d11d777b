//! The commit ssq is built from, for `ssq --version` and the
//! `ssq_build_info` metric: `SSQ_COMMIT` when the builder sets it (a
//! release pipeline, an image built without its `.git`), else what git
//! says of the checkout, else `unknown` (a packaged crate has no history).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SSQ_COMMIT");
    let commit = std::env::var("SSQ_COMMIT")
        .ok()
        .filter(|commit| !commit.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SSQ_COMMIT={}", commit.trim());
    // Built again when HEAD moves: a checkout, or a commit on the branch.
    // Only files that exist are named: cargo takes a missing one as changed
    // at every build (a fresh clone has no packed-refs), and would build
    // ssq again each time it is asked, for the wheel, the npm packages and
    // the image in turn.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let mut watched = vec![format!("{dir}/HEAD"), format!("{dir}/packed-refs")];
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(format!("{dir}/{branch}"));
        }
        for path in watched.iter().filter(|path| std::path::Path::new(path).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// What `git args` prints, trimmed; `None` when git is missing or fails.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}
