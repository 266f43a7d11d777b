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
