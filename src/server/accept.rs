//! The accept loop of `serve`: what `axum::serve` did, plus what it cannot do (docs/serve.md): TLS,
//! and a header read timeout that closes a client trickling a request header byte by byte
//! (which the idle timeout of [`conn`](super::conn) never sees, since bytes keep moving).
//!
//! Owns: accepting within the connection cap; the task per connection (the TLS handshake,
//! the plain-HTTP-on-a-TLS-port answer, HTTP/1.1 through hyper with its header read
//! timeout and its requests' framing followed by [`framing`](super::framing), or HTTP/2 for
//! gRPC: chosen by ALPN `h2` with TLS, by the HTTP/2 preface without);
//! HTTP/2 itself is [`http2`](super::http2)'s; graceful shutdown of every connection. Must
//! not: know routes, credentials or the database (the router has them), or block the loop on
//! one client: everything a client can stall (the handshake included) runs on that client's
//! own task, within a time limit.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use super::conn::{Guarded, GuardedListener};
use super::dispatch::App;
use super::framing::{Framed, RequestFraming};
use super::http2::http2;
use crate::tls::PLAIN_HTTP_ON_TLS;

/// What every connection is served with.
pub struct Options {
    /// From accepting the connection (TLS handshake included) or the end of the previous
    /// request until the end of the next request header.
    pub header_read_timeout: Duration,
    /// `Some`: only TLS is spoken.
    pub tls: Option<TlsAcceptor>,
}

/// The first byte of every TLS connection: a handshake record (RFC 8446 §5.1).
const TLS_HANDSHAKE: u8 = 0x16;

/// Serves until `signal` resolves, then stops accepting, lets every connection finish its
/// request in flight (idle ones close at once, handshakes are abandoned) and returns once
/// all are closed. The caller bounds that wait.
pub async fn serve(listener: GuardedListener, app: Arc<App>, options: Options, signal: impl Future<Output = ()>) {
    let options = Arc::new(options);
    // Dropping `shutdown` tells every connection; `closed` completes once every connection
    // task has dropped its receiver.
    let (shutdown, shutdown_rx) = watch::channel(());
    let (done, done_rx) = watch::channel(());
    tokio::pin!(signal);
    loop {
        let (io, addr) = tokio::select! {
            conn = listener.accept() => conn,
            () = &mut signal => break,
        };
        let (app, options) = (app.clone(), options.clone());
        let (shutdown_rx, done_rx) = (shutdown_rx.clone(), done_rx.clone());
        tokio::spawn(async move {
            connection(io, addr, app, &options, shutdown_rx).await;
            drop(done_rx);
        });
    }
    drop(listener);
    drop(shutdown);
    drop(done_rx);
    done.closed().await;
}

async fn connection(
    io: Guarded,
    addr: SocketAddr,
    app: Arc<App>,
    options: &Options,
    mut shutdown: watch::Receiver<()>,
) {
    let Some(acceptor) = &options.tls else {
        // HTTP/2 without TLS (gRPC's plaintext) starts with its preface, `PRI * HTTP/2.0`; an
        // HTTP/1 request never starts with `PRI`. Most requests are told by their first byte.
        // Peeking moves no byte, so the idle timeout bounds it too (as it bounds a read).
        let limit = options.header_read_timeout.min(io.idle_timeout());
        let h2 = tokio::select! {
            r = tokio::time::timeout(limit, preface(&io)) => r,
            _ = shutdown.changed() => return,
        };
        return match h2 {
            Ok(Some(true)) => http2(io, addr, app, shutdown).await,
            Ok(Some(false)) => http(io, addr, app, options, shutdown).await,
            // Closed, failed or timed out before its first bytes.
            _ => {}
        };
    };
    // Bounded like a request header, so a client that connects and never says hello holds
    // its socket (and a permit) for that long at most.
    let stream = tokio::select! {
        r = tokio::time::timeout(options.header_read_timeout, handshake(io, acceptor)) => r,
        _ = shutdown.changed() => return,
    };
    if let Ok(Some(stream)) = stream {
        if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
            http2(stream, addr, app, shutdown).await;
        } else {
            http(stream, addr, app, options, shutdown).await;
        }
    }
}

/// Whether the client opens with the HTTP/2 preface (`Some(true)`) or not (`Some(false)`);
/// `None` when it closed first.
async fn preface(io: &Guarded) -> Option<bool> {
    const PRI: &[u8] = b"PRI";
    match io.first_byte().await {
        Ok(Some(b'P')) => {}
        Ok(Some(_)) => return Some(false),
        _ => return None,
    }
    let mut start = [0u8; 3];
    let n = io.peek_start(&mut start).await.ok()?;
    // `peek_start` fills the buffer or reads nothing (the client closed).
    (n > 0).then(|| start == *PRI)
}

/// The TLS handshake, or the plain-HTTP answer (`None`) when the client does not speak TLS.
async fn handshake(mut io: Guarded, acceptor: &TlsAcceptor) -> Option<tokio_rustls::server::TlsStream<Guarded>> {
    match io.first_byte().await {
        Ok(Some(TLS_HANDSHAKE)) => acceptor.accept(io).await.ok(),
        Ok(Some(_)) => {
            refuse_plain_http(&mut io).await;
            None
        }
        _ => None,
    }
}

/// Answers `400` in plain HTTP and closes. The request header is read first and the
/// connection drained after, so that closing with unread bytes does not reset the
/// connection before the client has read the answer (Go waits for the same reason).
async fn refuse_plain_http(io: &mut Guarded) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    // Only the new bytes (and the 3 before them) are searched after each read: a client
    // sending its header a byte at a time must not make this loop quadratic.
    let mut searched = 0;
    loop {
        if head.windows(4).skip(searched).any(|w| w == b"\r\n\r\n") || head.len() >= 64 * 1024 {
            break;
        }
        searched = head.len().saturating_sub(3);
        match io.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{PLAIN_HTTP_ON_TLS}",
        PLAIN_HTTP_ON_TLS.len()
    );
    if io.write_all(answer.as_bytes()).await.is_err() || io.shutdown().await.is_err() {
        return;
    }
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        while matches!(io.read(&mut buf).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// Why a request with both `Content-Length` and `Transfer-Encoding` is refused (`framing`).
const BOTH_LENGTHS: &str =
    "request has both `Content-Length` and `Transfer-Encoding` headers; HTTP/1.1 allows one (RFC 9112 section 6.1)";
/// A request after bytes whose framing the server could not follow (a chunk size past 64 bits,
/// a chunk-size line past 64 KiB): where it starts is not known, so it is not served.
const UNFOLLOWED: &str =
    "request follows bytes whose framing could not be read on this connection; send it again on a new connection";

/// HTTP/1.1 on one connection until the client closes, a timeout closes it, or shutdown
/// (which lets the request in flight finish). A request framed by both `Content-Length` and
/// `Transfer-Encoding` is answered 400 without being handed on, and its connection closed.
async fn http<I>(io: I, addr: SocketAddr, app: Arc<App>, options: &Options, mut shutdown: watch::Receiver<()>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    use futures_util::future::Either;
    let (io, framing) = Framed::new(io);
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let refused = match framing.next() {
            RequestFraming::Served => None,
            RequestFraming::Both => Some(BOTH_LENGTHS),
            RequestFraming::Unfollowed => Some(UNFOLLOWED),
        };
        match refused {
            Some(why) => Either::Left(std::future::ready(Ok::<_, std::convert::Infallible>(
                app.misframed(&req, why.to_string()),
            ))),
            None => Either::Right(app.call(req, addr)),
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = shutdown.changed() => conn.as_mut().graceful_shutdown(),
    }
    let _ = conn.await;
}
