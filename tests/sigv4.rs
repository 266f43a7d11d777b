//! Signature Version 4, checked when credentials are configured: the
//! official SDK signing with the right secret gets through; a wrong secret,
//! an unknown key, no signature or a stale date get AWS's errors with 403.

mod common;

use common::{Server, client_signing_with, error_code};

fn credentials_file() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("ssq-credentials-{}", std::process::id()));
    std::fs::write(&path, "# test keys\nAKIDSSQTEST:s3cr3t/with+chars\n").unwrap();
    path
}

#[tokio::test]
async fn requests_must_be_signed_with_a_configured_secret() {
    let path = credentials_file();
    let server = Server::start_with(&["--credentials", path.to_str().unwrap()]);

    let good = client_signing_with(&server.url, "AKIDSSQTEST", "s3cr3t/with+chars");
    let url = good
        .create_queue()
        .queue_name("signed")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    good.send_message()
        .queue_url(&url)
        .message_body("signed body ✓")
        .send()
        .await
        .unwrap();
    let received = good.receive_message().queue_url(&url).send().await.unwrap();
    assert_eq!(received.messages()[0].body(), Some("signed body ✓"));

    let wrong_secret = client_signing_with(&server.url, "AKIDSSQTEST", "not-the-secret");
    let result = wrong_secret.list_queues().send().await;
    let error = result.as_ref().unwrap_err();
    assert_eq!(error.raw_response().unwrap().status().as_u16(), 403);
    assert_eq!(error_code(result), "SignatureDoesNotMatch");

    let unknown = client_signing_with(&server.url, "AKIDUNKNOWN", "s3cr3t/with+chars");
    assert_eq!(
        error_code(unknown.list_queues().send().await),
        "InvalidClientTokenId"
    );

    let http = reqwest::Client::new();
    let unsigned = http
        .post(&server.url)
        .header("x-amz-target", "AmazonSQS.ListQueues")
        .header("content-type", "application/x-amz-json-1.0")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 403);
    assert_eq!(
        unsigned.headers()["x-amzn-query-error"],
        "MissingAuthenticationToken;Sender"
    );

    let stale = http
        .post(&server.url)
        .header("x-amz-target", "AmazonSQS.ListQueues")
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amz-date", "20200101T000000Z")
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIDSSQTEST/20200101/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=00",
        )
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 403);
    assert_eq!(stale.headers()["x-amzn-query-error"], "RequestExpired;Sender");

    // Operational endpoints stay open: load balancers do not sign.
    assert_eq!(
        reqwest::get(format!("{}/ready", server.url))
            .await
            .unwrap()
            .status(),
        200
    );
    std::fs::remove_file(path).unwrap();
}
