//! What a call to the SQS address is, decided once: `POST /` (and a queue
//! URL, and a Query GET) is one of SNS's unsigned links, an SNS call, or an
//! SQS call in JSON or Query. The request is taken in here (signature head,
//! body within its budget, signature) and handed to its surface, with an
//! SNS call's form read once; the surfaces never hand calls to each other.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;

use super::call::Protocol;
use super::intake::admission::authenticate_and_read;
use super::{call, sns_api, sqs_api};
use crate::http::state::AppState;

/// A call at `POST /`, a queue URL, or a Query GET. It takes the request
/// whole: axum's `HeaderMap` extractor would copy every header.
pub(crate) async fn call(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let arrived = sqs_api::Arrived::now();
    let (parts, body) = request.into_parts();
    if sns_api::is_unsigned_link(&parts) {
        // Its parameters are in the URL; a body is never read.
        let form = crate::protocol::sns::read(&[], parts.uri.query());
        return call::sns::serve(&state, &parts, Default::default(), form, None).await;
    }
    let wire = Protocol::of(&parts.headers);
    let read = authenticate_and_read(&state, &parts.method, &parts.uri, &parts.headers, body).await;
    let read = match read {
        Ok(read) => read,
        Err(error) => return sqs_api::refuse(&state, &parts, wire, arrived, error),
    };
    let (body, permit, caller) = read;
    if wire == Protocol::Query
        && let Some(form) = sns_api::claim(&parts, &body)
    {
        if let (Some(caller), Ok(form)) = (&caller, &form)
            && let Err(error) = sns_api::authorize(&state, &parts, caller, form)
        {
            return call::sns::refuse(&error);
        }
        return call::sns::serve(&state, &parts, body, form, caller.as_ref()).await;
    }
    sqs_api::serve(&state, &parts, wire, arrived, (body, permit, caller)).await
}
