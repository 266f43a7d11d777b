//! Answers held in memory, under the one budget request bodies draw on.
//!
//! An answer is rendered whole before hyper writes it, and a client that
//! never reads keeps it in memory until its connection times out: sixteen
//! such clients each asking for a 32 MiB page of a queue's messages once
//! pinned 512 MiB. So an answer larger than [`UNBUDGETED`] takes its size
//! from the budget of `--max-body-buffer` (the same one request bodies take
//! from) and gives it back only once it is written or its connection is
//! gone; past the budget the request gets a retryable 503 instead. The
//! answer goes out in pieces, so that hyper asks for the next only when it
//! has written the last, and holds at most one piece of its own beyond the
//! budget. A client that stops reading loses its connection after
//! `--idle-timeout` with no byte moving (`listener.rs`), which frees it all.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;

use crate::http::call::{Protocol, answer_error};
use crate::http::intake::request_body::BodyPermit;
use crate::http::state::AppState;

/// Answers up to this size are not counted: a connection holds that much
/// of its own anyway (its read buffer), and most answers are far smaller.
pub const UNBUDGETED: usize = 64 * 1024;

/// The piece of an answer handed to hyper at a time.
const PIECE: usize = 64 * 1024;

/// Marks an answer that holds its pieces under the budget itself, as it
/// makes them (a snapshot: `admin_api/snapshot.rs`), and is not to be taken whole.
#[derive(Clone, Copy)]
pub(in crate::http) struct InPieces;

/// Puts every large answer under the budget.
pub(in crate::http) async fn budgeted(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let wire = Protocol::of(request.headers());
    let response = next.run(request).await;
    if response.extensions().get::<InPieces>().is_some() {
        return response;
    }
    let size = http_body::Body::size_hint(response.body())
        .exact()
        .unwrap_or(u64::MAX);
    if size <= UNBUDGETED as u64 {
        return response;
    }
    let (parts, body) = response.into_parts();
    // Every answer ssq renders is already whole in memory: this only takes it.
    let Ok(collected) = body.collect().await else {
        return Response::from_parts(parts, Body::empty());
    };
    let bytes = collected.to_bytes();
    match state.body_budget.hold(bytes.len()) {
        Ok(permit) => Response::from_parts(
            parts,
            Body::new(HeldAnswer {
                bytes,
                _permit: permit,
            }),
        ),
        Err(error) => {
            let request_id = crate::queue::random::uuid().to_string();
            answer_error(&state, wire, &request_id, "answer", &error)
        }
    }
}

/// An answer and its share of the budget, given back when hyper drops it.
struct HeldAnswer {
    bytes: Bytes,
    _permit: BodyPermit,
}

impl http_body::Body for HeldAnswer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.bytes.is_empty() {
            return Poll::Ready(None);
        }
        let len = PIECE.min(self.bytes.len());
        let piece = self.bytes.split_to(len);
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.bytes.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.bytes.len() as u64)
    }
}
