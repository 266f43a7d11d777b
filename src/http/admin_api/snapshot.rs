//! `GET /admin/api/snapshot`: the whole state this instance serves, as a
//! snapshot file (`store/snapshot.rs`), whichever store keeps it.
//!
//! A snapshot of a million messages is a gigabyte of text, so it is never
//! whole in memory: a task reads each queue a piece at a time (its lock
//! held only to copy a piece's references), renders the piece on the
//! blocking pool (`blocking_pool.rs`) and hands it to the connection, one
//! piece ahead of what the client has read; each piece waiting to be
//! written holds its size from the body budget (`large_answers.rs`). A queue
//! under traffic is exported as each piece found it, as a Redis SCAN sees
//! a changing hash: every message held throughout is there once. Topics
//! follow, a hundred at a time, each with its subscriptions and archived
//! publications read in pieces the same way. If the
//! instance stops serving during the export (a failover, a reload), the
//! answer breaks off without its end line, and the import refuses it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use http_body::Frame;
use tokio::sync::mpsc;

use crate::error::{ErrorCode, SqsError};
use crate::http::call::{Protocol, answer_error, not_serving};
use crate::http::intake::large_answers::InPieces;
use crate::http::intake::request_body::BodyPermit;
use crate::http::intake::sign_in::Admin;
use crate::http::state::AppState;
use crate::queue::Message;
use crate::service::Service;
use crate::store::snapshot::Writer;

/// Messages copied out of a queue under its lock at a time.
const PIECE_MESSAGES: usize = 1_000;

/// Topics copied out under the topics' lock at a time, and a topic's
/// subscriptions (their archived publications go as messages do).
const PIECE_TOPICS: usize = 100;
const PIECE_SUBSCRIPTIONS: usize = 1_000;

/// A piece is handed on once it holds about this much text.
const PIECE_BYTES: usize = 1024 * 1024;

/// Why an export broke off: logged, and the answer ends without its end
/// line.
#[derive(Debug, thiserror::Error)]
enum ExportError {
    #[error("{}", .0.message)]
    Refused(SqsError),
    #[error("this instance stopped serving shard {0} during the export")]
    StoppedServing(usize),
    #[error("the client went away")]
    Gone,
}

impl From<SqsError> for ExportError {
    fn from(error: SqsError) -> ExportError {
        ExportError::Refused(error)
    }
}

pub(in crate::http) async fn export(State(state): State<Arc<AppState>>, admin: Admin) -> Response {
    match admin {
        // A snapshot holds every account's queues and topics.
        Admin::OfAccount { .. } => {
            let request_id = crate::queue::random::uuid().to_string();
            let error = SqsError::new(
                ErrorCode::AccessDenied,
                "A snapshot holds every account's queues and topics: only a key with admin = \"all\" may export it.",
            );
            return answer_error(&state, Protocol::Json, &request_id, "AdminSnapshot", &error);
        }
        Admin::OfAll => {}
    }
    // A passive's memory is empty: its snapshot would look like an empty
    // state, so only an instance serving every shard exports.
    if let Some(shard) = state.shards.iter().find(|shard| !shard.leadership.is_serving()) {
        let request_id = crate::queue::random::uuid().to_string();
        let error = not_serving(&state, &shard.leadership);
        return answer_error(&state, Protocol::Json, &request_id, "AdminSnapshot", &error);
    }
    let (pieces, receiver) = mpsc::channel(1);
    let exporting = state.clone();
    tokio::spawn(async move {
        let mut export = Export {
            state: &exporting,
            pieces: &pieces,
            out: Vec::new(),
        };
        if let Err(error) = export.run().await {
            tracing::warn!(%error, "a snapshot export broke off");
            let _ = pieces.send(Err(std::io::Error::other(error.to_string()))).await;
        }
    });
    let mut response = Response::new(Body::new(Pieces {
        receiver,
        _held: None,
    }));
    let file = format!(
        "attachment; filename=\"ssq-{}-{}.jsonl\"",
        state.node_id,
        state.first_shard().api.service.now()
    );
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    if let Ok(value) = HeaderValue::from_str(&file) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response.extensions_mut().insert(InPieces);
    response
}

type Piece = Result<(Bytes, BodyPermit), std::io::Error>;

struct Export<'a> {
    state: &'a AppState,
    pieces: &'a mpsc::Sender<Piece>,
    out: Vec<u8>,
}

impl Export<'_> {
    async fn run(&mut self) -> Result<(), ExportError> {
        let now = self.state.first_shard().api.service.now();
        let mut writer = Writer::start(&self.state.home, now, &mut self.out);
        for (index, shard) in self.state.shards.iter().enumerate() {
            let service = &shard.api.service;
            let generation = service.generation();
            let still_serving = || match shard.leadership.is_serving() && service.generation() == generation {
                true => Ok(()),
                false => Err(ExportError::StoppedServing(index)),
            };
            for name in service.queues_where(|_| true) {
                let mut after = None;
                // Until a piece comes back empty, or the queue is gone.
                while let Some(piece) = read_piece(service, &name, after) {
                    still_serving()?;
                    let last = match (piece.messages.last(), after) {
                        (Some(message), _) => message.seq,
                        // An empty queue: its line alone.
                        (None, None) => 0,
                        (None, Some(_)) => break,
                    };
                    after = Some(last);
                    writer = self
                        .render(writer, move |writer, out| {
                            if let Some((meta, next)) = &piece.head {
                                writer.queue(meta, *next, out);
                            }
                            for message in &piece.messages {
                                writer.message(message, out);
                            }
                        })
                        .await?;
                    self.hand_on_when_full().await?;
                }
            }
            let mut after = None;
            loop {
                let topics = service.topics().topics_after(after.as_deref(), PIECE_TOPICS);
                let Some(last) = topics.last() else { break };
                after = Some(last.arn.to_string());
                for topic in topics {
                    still_serving()?;
                    writer = self.export_topic(writer, service, topic).await?;
                }
            }
            still_serving()?;
        }
        writer.end(&mut self.out);
        self.hand_on().await
    }

    /// A topic's line, then its subscriptions and its archived
    /// publications, each copied out a piece at a time under the topics'
    /// lock (a topic may hold a hundred thousand subscriptions, each with
    /// a filter policy of 256 KB).
    async fn export_topic(
        &mut self,
        writer: Writer,
        service: &Service,
        topic: crate::topic::TopicSnapshot,
    ) -> Result<Writer, ExportError> {
        let arn = topic.arn.clone();
        let mut writer = self
            .render(writer, move |writer, out| writer.topic(&topic, out))
            .await?;
        let mut cursor = crate::topic::SubscriptionCursor::default();
        loop {
            let page =
                service
                    .topics()
                    .subscriptions_page(&arn, &mut cursor, PIECE_SUBSCRIPTIONS, PIECE_BYTES);
            if page.is_empty() {
                break;
            }
            writer = self
                .render(writer, move |writer, out| {
                    for subscription in &page {
                        writer.subscription(subscription, out);
                    }
                })
                .await?;
            self.hand_on_when_full().await?;
        }
        let mut after = 0;
        loop {
            let page = service
                .topics()
                .archived_after(&arn, after, PIECE_MESSAGES, PIECE_BYTES as u64);
            let Some(last) = page.last() else { break };
            after = last.sequence;
            writer = self
                .render(writer, move |writer, out| {
                    for archived in &page {
                        writer.archived(archived, out);
                    }
                })
                .await?;
            self.hand_on_when_full().await?;
        }
        self.hand_on_when_full().await?;
        Ok(writer)
    }

    /// Hands what is rendered on once it is a piece's worth.
    async fn hand_on_when_full(&mut self) -> Result<(), ExportError> {
        match self.out.len() >= PIECE_BYTES {
            true => self.hand_on().await,
            false => Ok(()),
        }
    }

    /// Renders lines on the blocking pool: `lines` writes them with the
    /// writer into the text not yet handed on.
    async fn render(
        &mut self,
        mut writer: Writer,
        lines: impl FnOnce(&mut Writer, &mut Vec<u8>) + Send + 'static,
    ) -> Result<Writer, ExportError> {
        let mut out = std::mem::take(&mut self.out);
        let (writer, out) = self
            .state
            .admin
            .blocking_pool
            .run(move || {
                lines(&mut writer, &mut out);
                (writer, out)
            })
            .await?;
        self.out = out;
        Ok(writer)
    }

    /// Hands what is rendered to the connection, under the body budget.
    async fn hand_on(&mut self) -> Result<(), ExportError> {
        let bytes = Bytes::from(std::mem::take(&mut self.out));
        let permit = self.state.body_budget.hold(bytes.len())?;
        self.pieces
            .send(Ok((bytes, permit)))
            .await
            .map_err(|_| ExportError::Gone)
    }
}

/// A queue's settings (with its first piece) and some of its messages.
struct QueuePiece {
    head: Option<(crate::queue::QueueMeta, u64)>,
    messages: Vec<Message>,
}

/// The messages of queue `name` after sequence number `after`; its
/// settings too when `after` is `None` (the first piece). `None` when the
/// queue is gone (deleted during the export: it is left out from there).
fn read_piece(service: &Service, name: &str, after: Option<u64>) -> Option<QueuePiece> {
    service
        .inspect(name, |queue, _| QueuePiece {
            head: after
                .is_none()
                .then(|| (queue.meta(), queue.next_sequence_number())),
            messages: queue.messages_after(after.unwrap_or(0), PIECE_MESSAGES, PIECE_BYTES as u64),
        })
        .ok()
}

/// The answer's body: the pieces as the export hands them on, each
/// holding its share of the budget until the next is asked for.
struct Pieces {
    receiver: mpsc::Receiver<Piece>,
    _held: Option<BodyPermit>,
}

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.receiver.poll_recv(context) {
            Poll::Ready(Some(Ok((bytes, permit)))) => {
                self._held = Some(permit);
                Poll::Ready(Some(Ok(Frame::data(bytes))))
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
