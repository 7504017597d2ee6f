//! A bounded plain HTTP/1.1 server that closes its oldest connection at the cap: `watch`'s
//! (docs/watch.md "Its HTTP server"). Whatever the clients do, a new connection is served: a
//! request whose header is not complete within [`Bounds::header_read_timeout`] is closed (a
//! header trickled a byte every few seconds included), the connection's read buffer holds at
//! most [`Bounds::max_header_bytes`], and the open connections are capped below the process's
//! file limit ([`max_connections`], less [`Bounds::reserved`]): at the cap, the oldest
//! connection is closed to let the new one in, and the new one is served once the oldest's
//! socket is gone (so the descriptors never pass the cap), so that idle or half-sent
//! connections can never lock a scrape out.
//!
//! Why not serve's policy (`accept`, `conn`: refuse at the cap, and an idle timeout): a
//! watch's answers are scrapes of milliseconds, so the connection open longest is the
//! likeliest idle or stalled, and closing it costs no write in flight; serve's connections
//! may hold one, and its idle timeout frees the stalled ones.
//!
//! Owns: the accept loop and each connection's task. Must not: know the routes (the router
//! has them), or what the caller keeps its descriptors for.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch, Semaphore};

use super::conn::max_connections;

/// What bounds each connection, and how many are open.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// How long a client has to send a request's whole header, from the connection's start or
    /// the end of the previous request.
    pub header_read_timeout: Duration,
    /// The most bytes of one request's header the connection reads.
    pub max_header_bytes: usize,
    /// Descriptors kept back from the connections, for what else the process holds open.
    pub reserved: usize,
}

/// The open connections, oldest first: each one's number and what closes it.
type Open = Arc<Mutex<VecDeque<(u64, oneshot::Sender<()>)>>>;

/// Serves `router` on `listener` until `stop` resolves; then stops accepting and lets each
/// connection finish its request in flight (the caller bounds that wait).
pub async fn serve_closing_oldest(
    listener: TcpListener,
    router: Router,
    bounds: Bounds,
    stop: impl Future<Output = ()>,
) {
    let cap = max_connections(bounds.reserved);
    // A permit per open connection, given back only once its socket is closed: closing the
    // oldest is a message to its task, and an accept loop that did not wait for the socket to
    // go would run ahead of the closes under a burst of connections (1,500 at once on two
    // cores went 50 descriptors past the cap).
    let permits = Arc::new(Semaphore::new(cap));
    let open: Open = Arc::default();
    let (shutdown, shutdown_rx) = watch::channel(());
    tokio::pin!(stop);
    let mut next = 0u64;
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                // EMFILE and friends: wait and try again.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                // The oldest goes: a scrape takes milliseconds, a connection that has been
                // open longest is the likeliest idle or stalled. The new one waits for its
                // socket to be closed.
                let oldest = open.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                if let Some((_, oldest)) = oldest {
                    let _ = oldest.send(());
                }
                permits
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed")
            }
        };
        next += 1;
        let (close, closed) = oneshot::channel();
        open.lock().unwrap_or_else(|e| e.into_inner()).push_back((next, close));
        let (router, open, mut shutdown) = (router.clone(), open.clone(), shutdown_rx.clone());
        let id = next;
        tokio::spawn(async move {
            {
                let mut http = hyper::server::conn::http1::Builder::new();
                http.timer(TokioTimer::new())
                    .header_read_timeout(bounds.header_read_timeout)
                    .max_buf_size(bounds.max_header_bytes);
                let conn = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router));
                tokio::pin!(conn);
                tokio::select! {
                    _ = conn.as_mut() => {}
                    _ = closed => {}
                    _ = shutdown.changed() => {
                        conn.as_mut().graceful_shutdown();
                        let _ = conn.await;
                    }
                }
            }
            // The socket is closed (the connection dropped above); only now may another
            // connection take its place.
            open.lock().unwrap_or_else(|e| e.into_inner()).retain(|(n, _)| *n != id);
            drop(permit);
        });
    }
    drop(listener);
    drop(shutdown);
}
