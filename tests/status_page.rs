//! The status page, loaded in headless Chromium as a person would see it.
//! Needs Debian's chromium (`make test` installs it: scripts/test-deps.sh).

mod common;

use std::process::Command;

use common::Server;

#[tokio::test]
async fn the_status_page_shows_the_node_its_role_and_queue_counts() {
    let server = Server::start_with(&["--node-id", "page-node"]);
    let sqs = server.client();
    let url = sqs
        .create_queue()
        .queue_name("shown")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    for body in ["a", "b", "c"] {
        sqs.send_message()
            .queue_url(&url)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }
    sqs.receive_message().queue_url(&url).send().await.unwrap();

    let profile = std::env::temp_dir().join(format!("ssq-chromium-{}", std::process::id()));
    let server_url = format!("{}/", server.url);
    let output = tokio::task::spawn_blocking(move || {
        Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(["--dump-dom", &server_url])
            .output()
            .expect("chromium is installed: apt-get install chromium (`make test` installs it: scripts/test-deps.sh)")
    })
    .await
    .unwrap();
    let dom = String::from_utf8_lossy(&output.stdout);
    assert!(
        dom.contains(r#"<dd id="node">page-node</dd>"#),
        "node id shown: {dom}"
    );
    assert!(dom.contains(r#"id="role">memory-only<"#), "role shown");
    assert!(
        dom.contains(r#"<td class="queue">shown</td><td>2</td><td>1</td><td>0</td>"#),
        "2 visible, 1 in flight, 0 delayed: {dom}"
    );
    assert!(
        !dom.contains(">a<") && !dom.contains(">b<"),
        "no message bodies on the page"
    );
}
