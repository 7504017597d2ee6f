//! HTTP/2 on one connection, served with `h2` (the HTTP/2 library hyper is built on) in the
//! connection's own task: gRPC calls to the gRPC services, anything else to the same REST
//! service as HTTP/1.1.
//!
//! Owns: accepting a connection's streams, answering the hot gRPC read (GetRetryPolicy whose
//! message came with its header) right there, handing every other request to the services on
//! a task of its own, and sending answers as hyper's HTTP/2 server sent them (its settings,
//! connection headers stripped, `date`, a body's known length, resets), except that a gRPC
//! answer has no `date`, as grpc-go's have none. Must not: know routes, credentials or the
//! database (`App` and the services have them), or accept connections (`accept` does, and
//! chooses HTTP/2 by ALPN or preface).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use h2::server::SendResponse;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use super::dispatch::App;
use super::grpc::Grpc;
/// HTTP/2 on one connection until the client closes, a timeout closes it, or shutdown (which
/// sends GOAWAY and lets the streams in flight finish): gRPC calls go to the gRPC services,
/// anything else to the same REST service as HTTP/1.1 (a TLS client such as curl may
/// choose HTTP/2 for REST too).
///
/// Served with `h2` (the HTTP/2 library hyper is built on) in one task: the requests one read
/// brought are accepted first (a few at a time), then each is answered, and a call whose
/// answer is ready at once (GetRetryPolicy, whose message comes with its header) is answered
/// right here, with no task of its own; the next turn of the loop writes those answers in
/// one `writev`; a connection whose client multiplexes stays awake for [`WAKEFUL`] before it
/// sleeps.
/// hyper's server spawned a task per stream and wrote each answer alone (BENCHMARKS.md,
/// "gRPC"). A call that must wait (a write, a body still arriving, a stream) continues on
/// a task of its own, as under hyper. What a client sees is what hyper's server sent (but
/// for `date`, see the module docs): the same settings, the same headers, the same frames, a
/// reset stream when the client resets it or the body fails.
pub(super) async fn http2<I>(io: I, addr: SocketAddr, app: Arc<App>, mut shutdown: watch::Receiver<()>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = h2::server::Builder::new();
    // hyper's defaults (hyper 1's `proto::h2::server::Config`), which serve used until now.
    builder
        .initial_window_size(1 << 20)
        .initial_connection_window_size(1 << 20)
        .max_frame_size(16 << 10)
        .max_header_list_size(16 << 10)
        .max_local_error_reset_streams(Some(1024))
        .max_send_buffer_size(400 << 10)
        // Bounded per connection, as grpc-go bounds them by default (and a client that opens
        // streams and never finishes them holds this many at most).
        .max_concurrent_streams(MAX_STREAMS);
    let mut conn = tokio::select! {
        c = builder.handshake::<_, Bytes>(io) => match c {
            Ok(conn) => conn,
            Err(_) => return,
        },
        _ = shutdown.changed() => return,
    };
    let mut stop = std::pin::pin!(shutdown.changed());
    let mut stopping = false;
    let mut batch = Vec::new();
    // Since when the connection has had nothing to do: `None` while it has work.
    let mut idle_since: Option<Instant> = None;
    // Whether the client keeps several calls going (see `WAKEFUL`).
    let mut multiplexing = false;
    loop {
        let turn = std::future::poll_fn(|cx| {
            if !stopping && stop.as_mut().poll(cx).is_ready() {
                stopping = true;
                conn.graceful_shutdown();
            }
            // Each `poll_accept` first writes what the answers so far queued: the requests
            // received are accepted (up to `ANSWERED_PER_WRITE`) before any is answered.
            loop {
                match conn.poll_accept(cx) {
                    Poll::Ready(Some(Ok(stream))) => {
                        batch.push(stream);
                        if batch.len() == ANSWERED_PER_WRITE {
                            return Poll::Ready(Turn::Answer);
                        }
                    }
                    Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(Turn::Closed),
                    Poll::Pending if !batch.is_empty() => return Poll::Ready(Turn::Answer),
                    Poll::Pending if multiplexing && idle_since.is_none_or(|t| t.elapsed() < WAKEFUL) => {
                        return Poll::Ready(Turn::Idle)
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
        })
        .await;
        match turn {
            Turn::Closed => return,
            Turn::Idle => {
                idle_since.get_or_insert_with(Instant::now);
                // Lets the runtime look for I/O without sleeping, and run its other tasks.
                tokio::task::yield_now().await;
            }
            Turn::Answer => {
                // Several requests in one turn, or one caught while awake.
                multiplexing = batch.len() > 1 || idle_since.is_some_and(|t| t.elapsed() < WAKEFUL);
                idle_since = None;
                for (req, respond) in batch.drain(..) {
                    start_stream(req, respond, &app, addr);
                }
            }
        }
    }
}

/// What one turn of a connection's loop found.
enum Turn {
    /// Requests to answer (in `batch`).
    Answer,
    /// Nothing yet, and a multiplexing client's connection has not been idle for [`WAKEFUL`].
    Idle,
    /// The client closed the connection, or it failed.
    Closed,
}

/// How long a connection whose client multiplexes its calls keeps looking for the next ones
/// after answering (yielding to the runtime, which then looks for I/O without sleeping when
/// it has nothing else to run) before its task sleeps. Such a client (a gRPC channel with
/// several calls in flight) answers the last answers with its next calls within
/// microseconds; a server asleep by then is woken by the kernel, and on this VM a sleep and
/// a wake-up cost more than the calls in between. With 16 calls in flight on one connection
/// the server's core idled 7–9% of the time, 1–2% when awake 20 µs more (50 µs did no
/// better). Only a turn that brought several requests, or one caught while awake, keeps a
/// connection awake: a client that makes one call at a time pays nothing, one that sends its
/// calls in bursts at most 20 µs per burst (BENCHMARKS.md, for both).
const WAKEFUL: std::time::Duration = std::time::Duration::from_micros(20);

/// Concurrent HTTP/2 streams per connection.
const MAX_STREAMS: u32 = 100;

/// How many requests of one read are answered before their answers are written. All of
/// them in one write (16 calls in flight on one connection: one `writev` for ~13) made client
/// and server take turns: the client got its answers all at once and sent its next calls all
/// at once, and each side idled while the other worked (h2load -c1 -m16: ~95,000 calls/s with
/// the server's core 56% busy, on a quiet machine where REST did 190,000). Written 4 at a
/// time, the client works on the first answers while the server makes the next: ~180,000
/// calls/s, the core 94% busy, and less CPU per call (5.3 µs against 6.0: a server that does
/// not idle pays no wake-up per read). 8 at a time behaved like all at once (BENCHMARKS.md).
const ANSWERED_PER_WRITE: usize = 4;

/// Answers one stream on the connection's task when it can be answered at once: the hot
/// read whose whole message came with its header is answered without a future
/// ([`Grpc::call_now`]); anything else is polled once here, and only a call that is not
/// answered by then gets a task of its own (polled again there at once, so nothing this first
/// poll waited for is missed).
fn start_stream(
    mut req: hyper::Request<h2::RecvStream>,
    respond: SendResponse<Bytes>,
    app: &Arc<App>,
    addr: SocketAddr,
) {
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let mut first = None;
    if super::grpc::is_grpc(&req) && Grpc::answers_now(&req) {
        if let Poll::Ready(Some(Ok(data))) = req.body_mut().poll_data(&mut cx) {
            let _ = req.body_mut().flow_control().release_capacity(data.len());
            if req.body().is_end_stream() {
                send_now(respond, app.grpc.call_now(&req, &data, addr));
                return;
            }
            first = Some(data);
        }
    }
    let mut call = Box::pin(h2_stream(req, first, respond, app.clone(), addr));
    // A panic here (the services catch their own) ends this stream only, as it ended its
    // task under hyper: the dropped handle resets the stream.
    if let Ok(Poll::Pending) = std::panic::catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut cx))) {
        tokio::spawn(call);
    }
}

/// Sends [`Grpc::call_now`]'s answer: the frames hyper sent for it (the header; then the
/// message and the trailers, or nothing more for a trailers-only answer). The message is
/// queued whatever room the stream has: h2 sends it as the client's window allows, the
/// trailers after it.
fn send_now(mut respond: SendResponse<Bytes>, resp: hyper::Response<super::grpc::Unary>) {
    let (head, body) = resp.into_parts();
    let body = body.into_parts();
    match respond.send_response(hyper::Response::from_parts(head, ()), body.is_none()) {
        Ok(mut tx) => {
            if let Some((message, trailers)) = body {
                if tx.send_data(message, false).is_ok() {
                    let _ = tx.send_trailers(trailers);
                }
            }
        }
        Err(_) => respond.send_reset(h2::Reason::INTERNAL_ERROR),
    }
}

/// One request answered and its answer sent, as hyper's `H2Stream` did it. `first`: what
/// [`start_stream`] already took of the body.
async fn h2_stream(
    req: hyper::Request<h2::RecvStream>,
    first: Option<Bytes>,
    mut respond: SendResponse<Bytes>,
    app: Arc<App>,
    addr: SocketAddr,
) {
    use hyper::body::Body as _;
    let length = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok());
    let remaining = length.map(|n: u64| n.saturating_sub(first.as_ref().map_or(0, |b| b.len() as u64)));
    let mut req = req.map(|stream| RecvBody {
        stream,
        first,
        data_done: false,
        remaining,
    });
    let grpc = super::grpc::is_grpc(&req);
    let answer = async {
        if grpc {
            return app.grpc.call(req, addr).await;
        }
        // HTTP/2 names the host in `:authority`: the REST checks read `Host`.
        if !req.headers().contains_key(hyper::header::HOST) {
            if let Some(host) = req
                .uri()
                .authority()
                .and_then(|a| hyper::header::HeaderValue::from_str(a.as_str()).ok())
            {
                req.headers_mut().insert(hyper::header::HOST, host);
            }
        }
        match app.call(req, addr).await {
            Ok(resp) => resp,
            Err(never) => match never {},
        }
    };
    let mut answer = std::pin::pin!(answer);
    // A client that resets the stream cancels the call.
    let resp = std::future::poll_fn(|cx| match answer.as_mut().poll(cx) {
        Poll::Ready(resp) => Poll::Ready(Some(resp)),
        Poll::Pending => respond.poll_reset(cx).map(|_| None),
    })
    .await;
    let Some(resp) = resp else { return };
    let (mut head, body) = resp.into_parts();
    strip_connection_headers(&mut head.headers);
    // A gRPC answer has no `date`, as Armada's (grpc-go's) have none: no gRPC client reads
    // it, and making, inserting and HPACK-encoding it was ~3% of a GetRetryPolicy's CPU.
    if !grpc {
        head.headers.entry(hyper::header::DATE).or_insert_with(date);
    }
    let end = body.is_end_stream();
    if !end {
        if let Some(len) = body.size_hint().exact() {
            head.headers.entry(hyper::header::CONTENT_LENGTH).or_insert(len.into());
        }
    }
    match respond.send_response(hyper::Response::from_parts(head, ()), end) {
        Ok(tx) if !end => send_body(body, tx).await,
        Ok(_) => {}
        Err(_) => respond.send_reset(h2::Reason::INTERNAL_ERROR),
    }
}

/// Sends a response body on its stream, as hyper's `PipeToSendStream`: a frame at a time,
/// each data frame once the stream has room for it (claiming one byte of the connection's
/// window at a time, so that a body that never produces data pins none), the last data frame
/// marked as the end unless trailers follow; the stream reset when the body fails, and the
/// body dropped when the client resets the stream.
async fn send_body(mut body: axum::body::Body, mut tx: h2::SendStream<Bytes>) {
    use hyper::body::Body as _;
    let mut waiting: Option<(Bytes, bool)> = None;
    std::future::poll_fn(|cx| loop {
        if tx.poll_reset(cx).is_ready() {
            return Poll::Ready(());
        }
        if let Some((_, end)) = waiting {
            while tx.capacity() == 0 {
                match tx.poll_capacity(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Some(Ok(0))) => {}
                    Poll::Ready(Some(Ok(_))) => break,
                    Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(()),
                }
            }
            let (data, _) = waiting.take().expect("checked above");
            if tx.send_data(data, end).is_err() || end {
                return Poll::Ready(());
            }
            continue;
        }
        match std::pin::Pin::new(&mut body).poll_frame(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => {
                    let end = body.is_end_stream();
                    if data.is_empty() {
                        // Needs no room: sent at once (an explicit end of the stream).
                        if tx.send_data(data, end).is_err() || end {
                            return Poll::Ready(());
                        }
                        continue;
                    }
                    tx.reserve_capacity(1);
                    waiting = Some((data, end));
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        tx.reserve_capacity(0);
                        let _ = tx.send_trailers(trailers);
                        return Poll::Ready(());
                    }
                }
            },
            Poll::Ready(Some(Err(e))) => {
                tx.send_reset(reset_reason(&e));
                return Poll::Ready(());
            }
            Poll::Ready(None) => {
                let _ = tx.send_data(Bytes::new(), true);
                return Poll::Ready(());
            }
        }
    })
    .await;
}

/// The reason a failed body resets its stream with: an HTTP/2 error's own (a request body
/// reset by the client, passed through), `INTERNAL_ERROR` otherwise, as hyper chose it.
fn reset_reason(e: &(dyn std::error::Error + 'static)) -> h2::Reason {
    let mut cause = Some(e);
    while let Some(err) = cause {
        if let Some(reason) = err.downcast_ref::<h2::Error>().and_then(h2::Error::reason) {
            return reason;
        }
        cause = err.source();
    }
    h2::Reason::INTERNAL_ERROR
}

/// Removes what HTTP/2 forbids in a response (RFC 9113 §8.2.2), as hyper did: the
/// connection-specific headers and those a `Connection` header names (the REST answers say
/// `Connection: close` after a misframed request, meaningful over HTTP/1.1 only).
fn strip_connection_headers(headers: &mut hyper::HeaderMap) {
    use hyper::header::{CONNECTION, TE, TRANSFER_ENCODING, UPGRADE};
    for name in ["keep-alive", "proxy-connection"] {
        headers.remove(name);
    }
    for name in [TRANSFER_ENCODING, UPGRADE, TE] {
        headers.remove(name);
    }
    if let Some(named) = headers.remove(CONNECTION) {
        if let Ok(named) = named.to_str() {
            for name in named.split(',') {
                headers.remove(name.trim());
            }
        }
    }
}

/// The `date` header's value, made once a second per thread (as hyper makes it).
fn date() -> hyper::header::HeaderValue {
    use std::cell::RefCell;
    use std::time::{SystemTime, UNIX_EPOCH};
    thread_local!(static DATE: RefCell<(u64, hyper::header::HeaderValue)> =
        const { RefCell::new((u64::MAX, hyper::header::HeaderValue::from_static(""))) });
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|cached| {
        let mut cached = cached.borrow_mut();
        if cached.0 != second {
            let text = httpdate::fmt_http_date(now);
            *cached = (
                second,
                hyper::header::HeaderValue::from_str(&text).expect("an HTTP date is a header value"),
            );
        }
        cached.1.clone()
    })
}

/// A request body as it arrives on its stream: each data frame handed on and its room given
/// back to the client's window at once, then the trailers, as hyper's `Incoming` did.
struct RecvBody {
    stream: h2::RecvStream,
    /// A data frame taken before the body was handed on, handed on first.
    first: Option<Bytes>,
    data_done: bool,
    /// From `content-length`, less what has arrived: the body's size hint.
    remaining: Option<u64>,
}

impl hyper::body::Body for RecvBody {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, h2::Error>>> {
        let this = &mut *self;
        if let Some(data) = this.first.take() {
            return Poll::Ready(Some(Ok(hyper::body::Frame::data(data))));
        }
        if !this.data_done {
            match this.stream.poll_data(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(data))) => {
                    let _ = this.stream.flow_control().release_capacity(data.len());
                    if let Some(left) = &mut this.remaining {
                        *left = left.saturating_sub(data.len() as u64);
                    }
                    return Poll::Ready(Some(Ok(hyper::body::Frame::data(data))));
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => this.data_done = true,
            }
        }
        match this.stream.poll_trailers(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(Some(trailers))) => Poll::Ready(Some(Ok(hyper::body::Frame::trailers(trailers)))),
            Poll::Ready(Ok(None)) => Poll::Ready(None),
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.stream.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match self.remaining {
            Some(n) => hyper::body::SizeHint::with_exact(n),
            None => hyper::body::SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, Location, Server};
    use bytes::Bytes;

    /// One request over HTTP/2 (prior knowledge, as gRPC's plaintext): its body sent as the
    /// given frames (a yield between them, so that they arrive in separate reads), then the
    /// answer's header, body and trailers.
    async fn h2_request(
        addr: std::net::SocketAddr,
        req: hyper::Request<()>,
        frames: &[&[u8]],
    ) -> (axum::http::response::Parts, Vec<u8>, Option<hyper::HeaderMap>) {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        let mut client = client.ready().await.unwrap();
        let (resp, mut body) = client.send_request(req, frames.is_empty()).unwrap();
        for (i, frame) in frames.iter().enumerate() {
            body.send_data(Bytes::copy_from_slice(frame), i + 1 == frames.len())
                .unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let (head, mut recv) = resp.await.unwrap().into_parts();
        let mut data = Vec::new();
        while let Some(chunk) = recv.data().await {
            data.extend_from_slice(&chunk.unwrap());
        }
        let trailers = recv.trailers().await.unwrap();
        (head, data, trailers)
    }

    fn grpc_get(addr: std::net::SocketAddr) -> hyper::Request<()> {
        hyper::Request::post(format!("http://{addr}/api.RetryPolicyService/GetRetryPolicy"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap()
    }

    /// The answers of the connection's own task (the hot read whose message came with its
    /// header) and of the general way (the same call with its message in two reads, REST
    /// over HTTP/2 with a body in two reads) are what a client of hyper's server saw.
    #[test]
    fn http2_answers_whether_the_body_came_with_the_header_or_later() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let server = Server::bind(Config::new("127.0.0.1:0", Location::InMemory))
                .await
                .unwrap();
            let addr = server.local_addr();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let run = tokio::spawn(server.run(async move {
                let _ = stopped.await;
            }));

            // REST over HTTP/2, the body in two frames: created, then read back.
            let policy = br#"{"name":"p1","retryLimit":2,"defaultAction":"Fail","rules":[]}"#;
            let create = hyper::Request::post(format!("http://{addr}/v1/retry-policy"))
                .header("content-type", "application/json")
                .body(())
                .unwrap();
            let (head, body, _) = h2_request(addr, create, &[&policy[..10], &policy[10..]]).await;
            assert_eq!(head.status, 200, "{}", String::from_utf8_lossy(&body));
            assert!(head.headers.contains_key("date"));
            assert_eq!(head.headers[crate::wire::DIALECT_HEADER], "v1");
            let get = hyper::Request::get(format!("http://{addr}/v1/retry-policy/p1"))
                .body(())
                .unwrap();
            let (head, body, _) = h2_request(addr, get, &[]).await;
            assert_eq!(head.status, 200);
            let got: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(got["name"], "p1");
            assert_eq!(got["retryLimit"], 2);

            // GetRetryPolicy{name: "p1"} in one frame (answered on the connection's task) and
            // in two (the general way): the same message, the same headers and trailers.
            let message = b"\x00\x00\x00\x00\x04\x0a\x02p1";
            let (one_head, one_body, one_trailers) = h2_request(addr, grpc_get(addr), &[message]).await;
            let (two_head, two_body, two_trailers) =
                h2_request(addr, grpc_get(addr), &[&message[..3], &message[3..]]).await;
            assert_eq!(one_head.status, 200);
            assert_eq!(one_trailers.as_ref().unwrap()["grpc-status"], "0");
            assert!(one_body.len() > 5 && one_body[0] == 0, "{one_body:?}");
            assert_eq!(one_body, two_body);
            assert_eq!(one_trailers, two_trailers);
            assert_eq!(one_head.headers, two_head.headers);
            assert_eq!(one_head.headers["content-type"], "application/grpc");
            // As Armada's grpc-go server: no `date` on a gRPC answer (REST's has one, above).
            assert!(!one_head.headers.contains_key("date"), "{:?}", one_head.headers);

            // A missing policy: trailers-only, NotFound, both ways.
            let missing = b"\x00\x00\x00\x00\x06\x0a\x04nope";
            for frames in [&[&missing[..]][..], &[&missing[..2], &missing[2..]][..]] {
                let (head, body, trailers) = h2_request(addr, grpc_get(addr), frames).await;
                assert_eq!(head.headers["grpc-status"], "5");
                assert_eq!(
                    head.headers["grpc-message"],
                    "error:%20could%20not%20find%20retry%20policy%20%22nope%22"
                );
                assert!(body.is_empty() && trailers.is_none());
            }

            let _ = stop.send(());
            run.await.unwrap().unwrap();
        });
    }
}
