//! Connection hygiene for `serve` (docs/serve.md): a cap on open connections below the process's
//! file limit ([`max_connections`], which `watch`'s server shares: `close_oldest`), and an idle timeout that closes a connection on which no byte moved for a
//! while (a client that opens a socket and sends nothing, or half a request, or keeps an
//! idle keep-alive connection), so that idle sockets can never lock new clients out.
//!
//! Must not: know HTTP or TLS; it sees bytes only. A client that keeps bytes moving slowly
//! (one header byte every few seconds) defeats the idle timeout by design: the header read
//! timeout, which needs to know where a request header ends, is `accept`'s (hyper's).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// The open-connection cap of a server (serve's when none is configured, watch's always):
/// the soft file limit less the `reserved` descriptors the process keeps for itself (the
/// database, the log, the listener, files it writes), at least 16 and at most 65,536.
pub fn max_connections(reserved: usize) -> usize {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
            let soft = usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX);
            return soft.saturating_sub(reserved).clamp(16, 65_536);
        }
    }
    1024
}

/// The descriptors serve keeps back from its connections: the database, the log and the
/// listener.
pub const SERVE_RESERVED: usize = 64;

/// A listener that holds a permit per open connection and wraps each in [`Guarded`].
pub struct GuardedListener {
    inner: TcpListener,
    permits: Arc<Semaphore>,
    idle: Duration,
}

impl GuardedListener {
    pub fn new(inner: TcpListener, max_connections: usize, idle: Duration) -> Self {
        GuardedListener {
            inner,
            permits: Arc::new(Semaphore::new(max_connections.max(1))),
            idle,
        }
    }

    /// The next connection, once fewer than the cap are open.
    pub async fn accept(&self) -> (Guarded, std::net::SocketAddr) {
        // At the cap, stop accepting: new clients wait in the kernel's backlog until an idle
        // connection times out, instead of the process running out of descriptors. Refused,
        // not closed as `close_oldest` closes watch's oldest: a serve connection may hold a
        // write in flight, and the idle timeout frees the stalled ones; watch's answers are
        // scrapes of milliseconds, and it has no idle timeout.
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    return (Guarded::new(stream, permit, self.idle), addr);
                }
                // EMFILE and friends: wait and retry, as axum's own loop does.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

/// A connection that fails with `TimedOut` once no byte was read or written for `idle`.
pub struct Guarded {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    idle: Duration,
    /// When a byte last moved.
    last: Instant,
    /// Fires at the earliest moment the connection can have been idle for `idle`; it is
    /// moved only when it fires (lazily), not on every read and write: a timer reset per I/O
    /// was a visible share of a GET's CPU (BENCHMARKS.md "serve").
    deadline: Pin<Box<Sleep>>,
}

impl Guarded {
    fn new(stream: TcpStream, permit: OwnedSemaphorePermit, idle: Duration) -> Self {
        Guarded {
            stream,
            _permit: permit,
            idle,
            last: Instant::now(),
            deadline: Box::pin(tokio::time::sleep(idle)),
        }
    }

    fn progressed(&mut self) {
        self.last = Instant::now();
    }

    /// Whether the connection has been idle for `idle`; otherwise the deadline is armed (with
    /// `cx`'s waker) for the earliest moment it could be.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        while self.deadline.as_mut().poll(cx).is_ready() {
            let due = self.last + self.idle;
            if due <= Instant::now() {
                return true;
            }
            self.deadline.as_mut().reset(due);
        }
        false
    }

    /// The first byte the client sent, without consuming it; `None` when it closed first.
    /// Not bounded here: the caller bounds it (the TLS handshake's time limit).
    pub async fn first_byte(&self) -> io::Result<Option<u8>> {
        let mut byte = [0u8; 1];
        let n = self.stream.peek(&mut byte).await?;
        Ok((n == 1).then_some(byte[0]))
    }
}

impl Guarded {
    /// How long the connection may stay without a byte moving.
    pub fn idle_timeout(&self) -> Duration {
        self.idle
    }

    /// The first `buf.len()` bytes the client sent (fewer if it closed first), without
    /// consuming them. Not bounded here: the caller bounds it.
    pub async fn peek_start(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.stream.peek(buf).await?;
            if n == 0 || n == buf.len() {
                return Ok(n);
            }
            // Part of it only (a client sending its first bytes one at a time): peeking again
            // at once would return the same bytes without waiting.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connection idle for too long")
}

impl AsyncRead for Guarded {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(r) => {
                this.progressed();
                Poll::Ready(r)
            }
            Poll::Pending if this.expired(cx) => Poll::Ready(Err(timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_write(cx, buf) {
            Poll::Ready(r) => {
                this.progressed();
                Poll::Ready(r)
            }
            Poll::Pending if this.expired(cx) => Poll::Ready(Err(timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Vectored like the stream underneath: hyper then sends a response's head and body with
    /// one `writev` instead of first copying the body behind the head (as the hello-world's
    /// plain `TcpStream` does; BENCHMARKS.md "serve").
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => {
                this.progressed();
                Poll::Ready(r)
            }
            Poll::Pending if this.expired(cx) => Poll::Ready(Err(timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The client's address, for the per-address limit on failed authentication.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);
