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
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{branch}");
        }
        println!("cargo:rerun-if-changed={dir}/packed-refs");
    }
}

/// What `git args` prints, trimmed; `None` when git is missing or fails.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}
