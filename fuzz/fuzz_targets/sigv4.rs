//! The signature verifier: lines of the input become the Authorization
//! header, X-Amz-Date, X-Amz-Content-Sha256 and the path with its query;
//! the rest is the body.
#![no_main]

use axum::http::{HeaderMap, HeaderValue, Method, Uri};
use libfuzzer_sys::fuzz_target;
use ssq::http::intake::credentials_file;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.splitn(5, '\n');
    let mut headers = HeaderMap::new();
    for name in ["authorization", "x-amz-date", "x-amz-content-sha256"] {
        if let Some(value) = lines.next().and_then(|l| HeaderValue::from_str(l).ok()) {
            headers.insert(name, value);
        }
    }
    let uri: Uri = lines.next().and_then(|l| l.parse().ok()).unwrap_or_else(|| Uri::from_static("/"));
    let body = lines.next().unwrap_or_default();
    let credentials = credentials_file::parse("AKIDFUZZ:secret").expect("valid credentials");
    let _ = credentials.verify(&Method::POST, &uri, &headers, body.as_bytes(), Some("us-east-1"), 1_700_000_000);
    // Read before any signature check, on every request.
    let _ = ssq::http::intake::sigv4::signed_region(headers.get("authorization"), uri.query());
});
