//! What operators load beside ssq: the Prometheus alert rules
//! (docker/prometheus/ssq-alerts.yml) and the Grafana dashboard
//! (docker/grafana/ssq-dashboard.json) may only name metrics that ssq
//! exports; each is checked against a live `/metrics`. (`promtool check
//! rules` checks the rules' syntax in `make test`.)

use std::collections::BTreeSet;

use crate::common::{Server, create_queue_url, get_text, send_body};

/// The metric names a text uses: its words starting `ssq_` or `process_`
/// (histograms' `_bucket`, `_sum` and `_count` series as they are written).
fn metric_names(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with("ssq_") || word.starts_with("process_"))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn the_alert_rules_and_the_dashboard_name_only_metrics_ssq_exports() {
    let server = Server::start();
    let sqs = server.client();
    let url = create_queue_url(&sqs, "watched", &[]).await;
    send_body(&sqs, &url, "one").await;
    let exported: BTreeSet<String> = get_text(&format!("{}/metrics", server.url))
        .await
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split(['{', ' ']).next())
        .map(str::to_string)
        .collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [
        "docker/prometheus/ssq-alerts.yml",
        "docker/grafana/ssq-dashboard.json",
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let named = metric_names(&text);
        assert!(named.len() >= 5, "{file} names {named:?}");
        let unknown: Vec<&String> = named.iter().filter(|name| !exported.contains(*name)).collect();
        assert!(
            unknown.is_empty(),
            "{file} names metrics ssq does not export: {unknown:?}"
        );
    }
}

#[test]
fn metric_names_are_read_off_expressions() {
    let names =
        metric_names("sum by (le) (rate(ssq_commit_seconds_bucket[5m])) > process_open_fds{job=\"ssq\"}");
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["process_open_fds", "ssq_commit_seconds_bucket"]
    );
}

/// `ssq --version` names the release and the commit it was built from, as
/// git names this checkout's HEAD (the binary is built again when HEAD
/// moves); `/metrics` carries the same in `ssq_build_info`.
#[tokio::test]
async fn the_version_names_the_release_and_the_commit() {
    let output = std::process::Command::new(crate::common::ssq_binary())
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    let printed = String::from_utf8(output.stdout).unwrap();
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let expected = format!("ssq {} ({head})\n", env!("CARGO_PKG_VERSION"));
    if std::env::var_os("SSQ_BIN").is_none() && std::env::var_os("SSQ_COMMIT").is_none() {
        assert_eq!(printed, expected);
    }
    let (release, commit) = printed
        .trim_end()
        .strip_prefix("ssq ")
        .and_then(|rest| rest.split_once(" ("))
        .expect("ssq VERSION (COMMIT)");
    let commit = commit.trim_end_matches(')');
    let server = Server::start();
    let metrics = get_text(&format!("{}/metrics", server.url)).await;
    let line = format!("ssq_build_info{{commit=\"{commit}\",version=\"{release}\"}} 1");
    assert!(metrics.contains(&line), "{line} in /metrics");
}
