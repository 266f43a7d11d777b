//! The listening socket: how many connections ssq holds, and how long a
//! connection may hold its place without doing its part.
//!
//! At most `--max-connections` are open; beyond that, accepting waits until
//! one closes (new clients queue in the kernel's backlog) instead of taking
//! on unbounded work. A connection gives its place back when it closes, and
//! it is closed when:
//! - no byte moves for `--idle-timeout`;
//! - a request head (request line and headers) is not complete within
//!   `--header-timeout` of its first byte, however slowly bytes keep coming
//!   (a "slowloris" client would otherwise hold its place for ever).
//!
//! Connections are served here too ([`serve`]), with hyper's read buffer
//! capped at [`MAX_READ_BUFFER`] (hyper's default is about 400 KiB): a request
//! head larger than that gets a 431, and a connection holds at most that much
//! of its own beyond the bodies' shared budget ([`crate::http::intake::request_body`]).
//!
//! The head rules are kept here, on the byte stream, rather than in hyper:
//! hyper's header timer also runs while a keep-alive connection waits idle
//! between requests, which is the idle timeout's business. A head ends at
//! the first blank line; the stream looks for it only while a head is being
//! read (from the first byte after a response, or of the connection), so a
//! body is never scanned.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// How long a connection may take for what, as the flags set them.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionTimeouts {
    /// No byte in either direction for this long closes the connection.
    pub idle: Duration,
    /// A request head must be complete this long after its first byte.
    pub header: Duration,
}

/// What hyper may buffer of one connection's input: a request head must fit.
pub const MAX_READ_BUFFER: usize = 64 * 1024;

pub struct LimitedListener {
    inner: tokio::net::TcpListener,
    permits: Arc<tokio::sync::Semaphore>,
    timeouts: ConnectionTimeouts,
}

impl LimitedListener {
    pub fn new(inner: tokio::net::TcpListener, max: usize, timeouts: ConnectionTimeouts) -> LimitedListener {
        LimitedListener {
            inner,
            permits: Arc::new(tokio::sync::Semaphore::new(max.max(1))),
            timeouts,
        }
    }

    /// The next connection, and its peer's address.
    async fn accept(&mut self) -> (LimitedStream<tokio::net::TcpStream>, std::net::SocketAddr) {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        loop {
            match self.inner.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    return (LimitedStream::new(stream, permit, self.timeouts), peer);
                }
                // Out of file descriptors and the like: wait, as axum's own
                // listener does, rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

/// Serves `app` over HTTP/1.1 on every connection `listener` accepts until
/// `shutdown` resolves; then accepts no more, lets each connection finish
/// the request it is on, and returns once all have closed.
pub async fn serve(mut listener: LimitedListener, app: axum::Router, shutdown: impl Future<Output = ()>) {
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    use tower::ServiceExt;

    // Every connection is watched: at shutdown each finishes the request it
    // is serving, answers it, and closes; `shutdown()` waits for the last.
    let connections = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        // The peer's address, as axum's own server gives it (the audit trail
        // records it).
        let service = TowerToHyperService::new(app.clone().map_request(
            move |request: axum::http::Request<hyper::body::Incoming>| {
                let mut request = request.map(axum::body::Body::new);
                request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                request
            },
        ));
        let connection = hyper::server::conn::http1::Builder::new()
            .max_buf_size(MAX_READ_BUFFER)
            .serve_connection(TokioIo::new(stream), service);
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
    connections.shutdown().await;
}

/// Where the connection is in reading a request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Head {
    /// Between requests: the next byte read starts a head.
    Awaiting,
    /// Reading a head that started at the header deadline's start.
    Reading {
        /// The last bytes seen, to find a blank line split over two reads.
        tail: [u8; 3],
    },
    /// The head is complete; the body and the answer follow.
    Complete,
}

/// A connection that gives its permit back when it closes and ends itself
/// when it breaks the rules of [`LimitedListener`]. Ending means reading
/// nothing more: what a closed peer looks like to hyper.
pub struct LimitedStream<S> {
    stream: S,
    _permit: tokio::sync::OwnedSemaphorePermit,
    timeouts: ConnectionTimeouts,
    /// Fires at the idle deadline, or earlier: see [`LimitedStream::expired`].
    idle: Pin<Box<Sleep>>,
    /// When bytes last moved either way.
    last_traffic: Instant,
    head: Head,
    head_deadline: Pin<Box<Sleep>>,
    /// When the head being read started.
    head_started: Instant,
    /// Broke a rule: reads nothing more.
    ended: bool,
}

impl<S> LimitedStream<S> {
    pub fn new(stream: S, permit: tokio::sync::OwnedSemaphorePermit, timeouts: ConnectionTimeouts) -> Self {
        LimitedStream {
            stream,
            _permit: permit,
            timeouts,
            idle: Box::pin(tokio::time::sleep(timeouts.idle)),
            last_traffic: Instant::now(),
            head: Head::Awaiting,
            head_deadline: Box::pin(tokio::time::sleep(timeouts.header)),
            head_started: Instant::now(),
            ended: false,
        }
    }

    /// Notes traffic. The idle timer is not moved here, which would cost a
    /// timer-wheel update for every read and write: it is moved when it
    /// fires early (see [`LimitedStream::expired`]).
    fn touched(&mut self) {
        self.last_traffic = Instant::now();
    }

    /// Whether `deadline` has passed, polling `timer` to be woken then.
    /// The timer may be set earlier than the deadline (the deadline moved
    /// on since it was set); it is then moved to the deadline, so a busy
    /// connection moves its timers about once per timeout instead of once
    /// per request.
    fn expired(timer: &mut Pin<Box<Sleep>>, deadline: Instant, cx: &mut Context<'_>) -> bool {
        if timer.deadline() != deadline && (timer.is_elapsed() || timer.deadline() > deadline) {
            timer.as_mut().reset(deadline);
        }
        timer.as_mut().poll(cx).is_ready() && Instant::now() >= deadline
    }

    /// Follows the request head through the bytes just read.
    fn saw(&mut self, read: &[u8]) {
        if self.head == Head::Awaiting {
            self.head_started = self.last_traffic;
            self.head = Head::Reading { tail: [0; 3] };
        }
        if let Head::Reading { tail } = &mut self.head
            && head_ends(tail, read)
        {
            self.head = Head::Complete;
        }
    }

    /// Whether the head being read has run out of time.
    fn head_overdue(&mut self, cx: &mut Context<'_>) -> bool {
        let deadline = self.head_started + self.timeouts.header;
        matches!(self.head, Head::Reading { .. }) && Self::expired(&mut self.head_deadline, deadline, cx)
    }

    /// Whether the connection has been idle too long.
    fn idle_overdue(&mut self, cx: &mut Context<'_>) -> bool {
        let deadline = self.last_traffic + self.timeouts.idle;
        Self::expired(&mut self.idle, deadline, cx)
    }

    /// The server writes: traffic, and once a head was complete, an answer,
    /// so the next byte read starts the next request's head.
    fn answering(&mut self) {
        self.touched();
        if self.head == Head::Complete {
            self.head = Head::Awaiting;
        }
    }
}

/// Whether a request head ends (at `\r\n\r\n`, or `\n\n`, which hyper also
/// accepts) in `read`; `tail` holds the last three bytes before it and is
/// moved along, so that an end split over two reads is found.
fn head_ends(tail: &mut [u8; 3], read: &[u8]) -> bool {
    // Only a line feed can end a head: look at the bytes before each one
    // (memchr finds them many bytes at a time), taking them from `tail`
    // where the read starts.
    let before = |at: usize, back: usize| match at.checked_sub(back) {
        Some(i) => read[i],
        None => tail[3 + at - back],
    };
    let ends = memchr::memchr_iter(b'\n', read)
        .any(|at| before(at, 1) == b'\n' || (before(at, 1) == b'\r' && before(at, 2) == b'\n'));
    let kept = read.len().min(3);
    let mut moved = [0; 3];
    moved[..3 - kept].copy_from_slice(&tail[kept..]);
    moved[3 - kept..].copy_from_slice(&read[read.len() - kept..]);
    *tail = moved;
    ends
}

impl<S: AsyncRead + Unpin> AsyncRead for LimitedStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.ended {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() == before {
                    return Poll::Ready(Ok(()));
                }
                self.touched();
                self.saw(&buf.filled()[before..]);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => {
                if self.head_overdue(cx) {
                    tracing::debug!("closing a connection whose request head did not arrive in time");
                } else if !self.idle_overdue(cx) {
                    return Poll::Pending;
                }
                self.ended = true;
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for LimitedStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.answering();
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.answering();
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const TIMEOUTS: ConnectionTimeouts = ConnectionTimeouts {
        idle: Duration::from_secs(60),
        header: Duration::from_secs(5),
    };

    fn stream(io: tokio::io::DuplexStream) -> LimitedStream<tokio::io::DuplexStream> {
        let permit = Arc::new(tokio::sync::Semaphore::new(1))
            .try_acquire_owned()
            .unwrap();
        LimitedStream::new(io, permit, TIMEOUTS)
    }

    #[test]
    fn a_blank_line_ends_the_head_even_split_over_reads() {
        assert!(head_ends(&mut [0; 3], b"GET / HTTP/1.1\r\n\r\nbody"));
        assert!(head_ends(&mut [0; 3], b"GET / HTTP/1.1\n\n"));
        let mut tail = [0; 3];
        assert!(!head_ends(&mut tail, b"GET / HTTP/1.1\r\nHost: a\r\n\r"));
        assert!(head_ends(&mut tail, b"\nrest"));
        assert!(!head_ends(&mut [0; 3], b"a\r\nb\r\nc"));
        // One byte a read: the end is found at the last byte and only there.
        let mut tail = [0; 3];
        let found: Vec<bool> = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
            .iter()
            .map(|byte| head_ends(&mut tail, std::slice::from_ref(byte)))
            .collect();
        assert_eq!(found.iter().position(|&ends| ends), Some(found.len() - 1));
    }

    /// A client that trickles its head one byte a second is cut off at the
    /// header deadline, though it is never idle.
    #[tokio::test(start_paused = true)]
    async fn a_trickled_head_is_cut_off_at_the_header_deadline() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut server = stream(server);
        let started = Instant::now();
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 64];
            while server.read(&mut buf).await.unwrap() > 0 {}
            started.elapsed()
        });
        for byte in b"GET / HTTP/1.1\r\nHost: x\r\n".iter().cycle().take(100) {
            if client.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            if reader.is_finished() {
                break;
            }
        }
        let ended_after = reader.await.unwrap();
        assert!(
            ended_after >= Duration::from_secs(5) && ended_after < Duration::from_secs(7),
            "ended after {ended_after:?}"
        );
    }

    /// A complete head stops the clock: a slow body and a long wait for the
    /// answer are the request timeout's and the idle timeout's business.
    #[tokio::test(start_paused = true)]
    async fn a_complete_head_stops_the_clock_until_the_next_request() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut server = stream(server);
        client
            .write_all(b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 128];
        assert!(server.read(&mut buf).await.unwrap() > 0);
        tokio::time::sleep(Duration::from_secs(20)).await;
        client.write_all(b"abc").await.unwrap();
        assert_eq!(server.read(&mut buf).await.unwrap(), 3, "the body still arrives");
        server.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        // The next request's head is timed from its own first byte.
        tokio::time::sleep(Duration::from_secs(30)).await;
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        assert!(server.read(&mut buf).await.unwrap() > 0);
        tokio::time::sleep(Duration::from_secs(4)).await;
        client.write_all(b"\r\n").await.unwrap();
        assert_eq!(server.read(&mut buf).await.unwrap(), 2);
    }

    /// The idle timer is moved only when it fires: traffic just before it
    /// fires keeps the connection open for a whole idle timeout more, and a
    /// connection quiet that long is closed on time.
    #[tokio::test(start_paused = true)]
    async fn traffic_moves_the_idle_deadline_though_the_timer_fires_first() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut server = stream(server);
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(50)).await;
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let mut buf = [0u8; 128];
        assert!(server.read(&mut buf).await.unwrap() > 0);
        server.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        // The timer set at the start fires at 60 s; the deadline is 110 s.
        assert_eq!(server.read(&mut buf).await.unwrap(), 0, "closed once idle");
        let closed_after = started.elapsed();
        assert!(
            closed_after >= Duration::from_secs(110) && closed_after < Duration::from_secs(111),
            "closed after {closed_after:?}"
        );
    }
}
