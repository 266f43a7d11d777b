//! The AWS JSON 1.0 protocol, as modern SDKs (boto3, the AWS CLI,
//! aws-sdk-rust, the JS SDK v3) speak it to SQS.
//!
//! The action comes in the `X-Amz-Target: AmazonSQS.<Action>` header and the
//! input is the JSON body. Errors carry `__type` and `message` in the body and,
//! because SQS is "query-compatible", the legacy error code in the
//! `x-amzn-query-error` header, which is where the SDKs read the code from.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::api::Action;
use crate::error::{ErrorCode, SqsError};

pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";
const TARGET_PREFIX: &str = "AmazonSQS.";

/// Whether a request speaks this protocol: it names its action in
/// X-Amz-Target or declares a JSON body.
pub fn is_json(headers: &HeaderMap) -> bool {
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-amz-json"));
    json_body || headers.contains_key("x-amz-target")
}

/// The action a JSON request names in X-Amz-Target.
pub fn target(headers: &HeaderMap) -> Result<Action, SqsError> {
    let target = headers.get("x-amz-target");
    let name = target
        .and_then(|t| t.to_str().ok())
        .and_then(|t| t.strip_prefix(TARGET_PREFIX));
    name.and_then(Action::from_name).ok_or_else(|| {
        let given = target.map(|t| String::from_utf8_lossy(t.as_bytes()).into_owned()).unwrap_or_default();
        SqsError::new(
            ErrorCode::UnsupportedOperation,
            format!("Unknown operation {given:?}: X-Amz-Target must be AmazonSQS.<Action> with one of the SQS actions."),
        )
    })
}

/// A successful answer whose body the action's output was rendered into.
pub fn success(request_id: &str, body: Vec<u8>) -> Response {
    with_headers(StatusCode::OK, request_id, body)
}

/// A successful answer from a JSON tree.
pub fn success_tree(request_id: &str, output: &serde_json::Value) -> Response {
    success(
        request_id,
        serde_json::to_vec(output).unwrap_or_else(|_| b"{}".to_vec()),
    )
}

pub fn error(request_id: &str, error: &SqsError) -> Response {
    let body = serde_json::json!({
        "__type": error.code.json_type(),
        "message": error.message,
    });
    let status = StatusCode::from_u16(error.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = with_headers(status, request_id, body.to_string().into_bytes());
    if error.code != ErrorCode::SerializationException {
        let fault = if error.code.is_sender_fault() {
            "Sender"
        } else {
            "Receiver"
        };
        if let Ok(value) = HeaderValue::from_str(&format!("{};{fault}", error.code.legacy_code())) {
            response.headers_mut().insert("x-amzn-query-error", value);
        }
    }
    response
}

fn with_headers(status: StatusCode, request_id: &str, body: Vec<u8>) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert("x-amzn-requestid", id);
    }
    response
}
