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
use tokio::sync::{oneshot, watch, OwnedSemaphorePermit, Semaphore};

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

/// A connection's place among the open ones. Left however its task ends (a handler's panic
/// included: the task is dropped then, with no code after the connection run), it takes the
/// connection out of [`Open`] and only then gives its permit back, so that no closed
/// connection stays in the queue as "oldest", a close sent to it freeing nothing.
struct Place {
    open: Open,
    id: u64,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Place {
    fn drop(&mut self) {
        let id = self.id;
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(n, _)| *n != id);
        // `_permit` is dropped after this body: the permit goes back last.
    }
}

/// Serves `router` on `listener` until `stop` resolves; then stops accepting, lets each
/// connection finish its request in flight, and returns once every one is closed (the caller
/// bounds that wait).
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
        let place = Place {
            open: open.clone(),
            id: next,
            _permit: permit,
        };
        let (router, mut shutdown) = (router.clone(), shutdown_rx.clone());
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
            drop(place);
        });
    }
    drop(listener);
    drop(shutdown);
    // Every connection's permit back: each has finished its request in flight and closed (a
    // scrape answered while the process stops, not cut by the runtime's end). The caller
    // bounds the wait: a connection still reading a header keeps its header timeout.
    let every = u32::try_from(cap).expect("max_connections is at most 65,536");
    let _ = permits.acquire_many(every).await;
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Instant;

    use axum::routing::get;

    use super::*;

    /// A connection whose handler panicked leaves the queue of the open: at the cap the oldest
    /// one still open is closed for the next, not the dead one's entry (closing it freed
    /// nothing, and the next waited for an idle connection's header timeout, here a minute).
    #[test]
    fn a_connection_whose_handler_panicked_is_not_the_oldest_at_the_cap() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new()
            .route("/panic", get(|| async { panic!("a handler's bug") as &'static str }))
            .route("/ok", get(|| async { "ok" }));
        let bounds = Bounds {
            header_read_timeout: Duration::from_secs(60),
            max_header_bytes: 64 * 1024,
            // The smallest cap there is: 16 connections.
            reserved: usize::MAX,
        };
        let (stop, stopped) = oneshot::channel::<()>();
        rt.spawn(serve_closing_oldest(listener, router, bounds, async {
            let _ = stopped.await;
        }));
        // The oldest connection's handler panics: its task ends with no answer.
        let mut first = TcpStream::connect(addr).unwrap();
        first.write_all(b"GET /panic HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let mut rest = Vec::new();
        assert_eq!(
            first.read_to_end(&mut rest).unwrap_or(0),
            0,
            "{}",
            String::from_utf8_lossy(&rest)
        );
        // Then the cap's 16 connections, each idle.
        let idle: Vec<TcpStream> = (0..16).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(200));
        let asked = Instant::now();
        let mut next = TcpStream::connect(addr).unwrap();
        next.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        next.write_all(b"GET /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        next.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        // Served once the oldest idle connection was closed, not after its header timeout.
        assert!(asked.elapsed() < Duration::from_secs(20), "{:?}", asked.elapsed());
        drop(idle);
        let _ = stop.send(());
    }

    /// A request in flight when the server stops is answered, and the server returns only
    /// once it is: a scrape at a signal is not cut when the runtime ends after it.
    #[test]
    fn a_request_in_flight_at_the_stop_is_answered_before_the_server_returns() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                "slow"
            }),
        );
        let bounds = Bounds {
            header_read_timeout: Duration::from_secs(60),
            max_header_bytes: 64 * 1024,
            reserved: usize::MAX,
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let server = rt.spawn(serve_closing_oldest(listener, router, bounds, async {
            let _ = stopped.await;
        }));
        let mut asking = TcpStream::connect(addr).unwrap();
        asking.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        asking.write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        // The handler is running; then the stop, and the runtime's end once the server
        // returns, as `watch` ends.
        std::thread::sleep(Duration::from_millis(100));
        let _ = stop.send(());
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), server).await })
            .expect("the server returns once the request is answered")
            .unwrap();
        rt.shutdown_timeout(Duration::from_millis(10));
        let mut answer = String::new();
        let _ = asking.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
        assert!(answer.ends_with("slow"), "{answer:?}");
    }
}
