//! How a client framed its HTTP/1.1 requests, read from the bytes as it sent them: a request
//! whose header holds both `Content-Length` and `Transfer-Encoding` is refused (docs/serve.md;
//! RFC 9112 section 6.1: such a request is how one request is smuggled inside another's body
//! through a proxy that reads the other header).
//!
//! Why here: hyper takes `Transfer-Encoding` and drops `Content-Length` from such a request
//! before any service sees it (and closes the connection after it), so only the bytes tell.
//! [`Framed`] reads the connection for hyper and follows its requests as hyper will: each
//! header parsed with hyper's own parser (`httparse`), its body skipped by `Content-Length` or
//! by its chunks, so that it knows where the next request starts. [`Framing`] says, for the
//! n-th request the service is handed, whether its header held both, or whether it came after
//! bytes that were not followed (refused too: fail closed).
//!
//! Owns: that reading and the count of requests. Must not: answer or change a request, or
//! change a byte hyper reads. Once the bytes are not a request it can follow (a header hyper
//! refuses, a chunk it cannot read, a header past hyper's buffer), it stops looking, and every
//! later request of the connection is refused: hyper answers most such connections with an
//! error and closes them, and one it would go on reading is not trusted.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What the service asks of the requests [`Framed`] read.
#[derive(Default)]
pub struct Framing {
    /// The number (from 0) of the first request whose header held both headers, or
    /// `u64::MAX`. hyper serves no request after it on the connection.
    both: AtomicU64,
    /// The requests whose header ended before the bytes stopped being followed, or `u64::MAX`.
    /// A request after them is one whose framing is not known: refused, as the connection is
    /// (fail closed: hyper may read bytes this reading could not, a chunk size written in a
    /// way it does not take, and serve a request smuggled after them).
    followed: AtomicU64,
    /// The requests the service was handed so far.
    handed: AtomicU64,
}

/// What the next request the service is handed is, by its framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFraming {
    /// Followed, one way to tell where it ends: served.
    Served,
    /// Its header held both `Content-Length` and `Transfer-Encoding`.
    Both,
    /// After bytes that were not followed: where it starts is not known.
    Unfollowed,
}

impl Framing {
    /// What the next request the service is handed is; called once per request, in order.
    pub fn next(&self) -> RequestFraming {
        let n = self.handed.fetch_add(1, Ordering::Relaxed);
        if self.both.load(Ordering::Relaxed) == n {
            RequestFraming::Both
        } else if n >= self.followed.load(Ordering::Relaxed) {
            RequestFraming::Unfollowed
        } else {
            RequestFraming::Served
        }
    }
}

/// The longest request header followed: past hyper's buffer (400 KiB), which refuses it.
const HEAD_MAX: usize = 512 * 1024;

/// The longest chunk-size line or trailer section followed (hyper's are shorter).
const LINE_MAX: usize = 64 * 1024;

/// The most headers a request may have (hyper's limit, over which it refuses the request).
const HEADERS_MAX: usize = 100;

enum State {
    /// In a request's header (its bytes so far in `held` when they came in more than one read).
    Head,
    /// In a body of a known length: the bytes left.
    Length(u64),
    /// In a chunk-size line (held until its line end).
    ChunkSize,
    /// In a chunk's data: the bytes left, then its line end.
    ChunkData(u64),
    /// After a chunk's data, up to its line end.
    ChunkEnd,
    /// In the trailer section after the last chunk (held until an empty line).
    Trailers,
    /// Not followed any more.
    Stopped,
}

/// A connection read for hyper, its requests' framing followed on the way.
pub struct Framed<I> {
    io: I,
    state: State,
    /// The bytes of a header, chunk-size line or trailer section that came in more than one read.
    held: Vec<u8>,
    /// Requests whose header ended.
    requests: u64,
    framing: Arc<Framing>,
}

impl<I> Framed<I> {
    pub fn new(io: I) -> (Framed<I>, Arc<Framing>) {
        let framing = Arc::new(Framing {
            both: AtomicU64::new(u64::MAX),
            followed: AtomicU64::new(u64::MAX),
            handed: AtomicU64::new(0),
        });
        let framed = Framed {
            io,
            state: State::Head,
            held: Vec::new(),
            requests: 0,
            framing: framing.clone(),
        };
        (framed, framing)
    }

    /// Follows `bytes`, the next bytes read from the client.
    fn follow(&mut self, bytes: &[u8]) {
        self.follow_bytes(bytes);
        if matches!(self.state, State::Stopped) {
            self.framing.followed.fetch_min(self.requests, Ordering::Relaxed);
        }
    }

    fn follow_bytes(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            bytes = match self.state {
                State::Stopped => return,
                State::Head => self.head(bytes),
                State::Length(left) => {
                    let n = left.min(bytes.len() as u64);
                    self.state = if n == left {
                        State::Head
                    } else {
                        State::Length(left - n)
                    };
                    &bytes[n as usize..]
                }
                State::ChunkSize => self.line(bytes, |me, line| {
                    me.state = match chunk_size(line) {
                        Some(0) => State::Trailers,
                        Some(size) => State::ChunkData(size),
                        None => State::Stopped,
                    };
                }),
                State::ChunkData(left) => {
                    let n = left.min(bytes.len() as u64);
                    self.state = if n == left {
                        State::ChunkEnd
                    } else {
                        State::ChunkData(left - n)
                    };
                    &bytes[n as usize..]
                }
                State::ChunkEnd => self.line(bytes, |me, _| me.state = State::ChunkSize),
                State::Trailers => self.line(bytes, |me, line| {
                    // An empty line ends the trailers (and the request); a trailer field
                    // line is followed by another.
                    if line.iter().all(|&b| b == b'\r' || b == b'\n') {
                        me.state = State::Head;
                    }
                }),
            };
        }
    }

    /// Holds `bytes` up to a line end, then hands the whole line to `done`; the bytes after it.
    fn line<'b>(&mut self, bytes: &'b [u8], done: impl FnOnce(&mut Self, &[u8])) -> &'b [u8] {
        let Some(end) = memchr::memchr(b'\n', bytes) else {
            self.hold(bytes, LINE_MAX);
            return &[];
        };
        if self.held.is_empty() {
            done(self, &bytes[..=end]);
        } else {
            self.hold(&bytes[..=end], LINE_MAX);
            let line = std::mem::take(&mut self.held);
            if !matches!(self.state, State::Stopped) {
                done(self, &line);
            }
        }
        &bytes[end + 1..]
    }

    /// Keeps `bytes` for later, or stops past `max`.
    fn hold(&mut self, bytes: &[u8], max: usize) {
        if self.held.len() + bytes.len() > max {
            self.held = Vec::new();
            self.state = State::Stopped;
        } else {
            self.held.extend_from_slice(bytes);
        }
    }

    /// In a header: parses it once it is whole, as hyper will; the bytes after it.
    fn head<'b>(&mut self, bytes: &'b [u8]) -> &'b [u8] {
        if self.held.is_empty() {
            // Most headers come whole in one read: parsed where they are.
            return match parse(bytes) {
                Parsed::Whole(len, body) => {
                    self.begin(body);
                    &bytes[len..]
                }
                Parsed::Partial => {
                    self.hold(bytes, HEAD_MAX);
                    &[]
                }
                Parsed::Refused => {
                    self.state = State::Stopped;
                    &[]
                }
            };
        }
        // A header in parts: parsed again only when the new bytes may end it (a line end
        // among them), so that a header trickled a byte at a time costs no parse per byte.
        let before = self.held.len();
        self.hold(bytes, HEAD_MAX);
        if matches!(self.state, State::Stopped) || !bytes.contains(&b'\n') {
            return &[];
        }
        let held = std::mem::take(&mut self.held);
        match parse(&held) {
            Parsed::Whole(len, body) => {
                self.begin(body);
                &bytes[len.saturating_sub(before).min(bytes.len())..]
            }
            Parsed::Partial => {
                self.held = held;
                &[]
            }
            Parsed::Refused => {
                self.state = State::Stopped;
                &[]
            }
        }
    }

    /// A request's header ended: what its body is.
    fn begin(&mut self, body: Body) {
        let n = self.requests;
        self.requests += 1;
        self.state = match body {
            Body::None => State::Head,
            Body::Length(len) => State::Length(len),
            Body::Chunked => State::ChunkSize,
            Body::Both => {
                self.framing.both.fetch_min(n, Ordering::Relaxed);
                // hyper closes the connection after this request: nothing more to follow.
                State::Stopped
            }
            Body::Refused => State::Stopped,
        };
    }
}

/// What a request's header says of its body.
enum Body {
    None,
    Length(u64),
    Chunked,
    /// Both `Content-Length` and `Transfer-Encoding`.
    Both,
    /// A framing hyper refuses (an unreadable length, two that differ, a transfer coding
    /// other than chunked last, `Transfer-Encoding` in HTTP/1.0).
    Refused,
}

enum Parsed {
    /// The header's length and its body.
    Whole(usize, Body),
    Partial,
    Refused,
}

/// A request header at the start of `bytes`, parsed by hyper's parser with hyper's limits.
fn parse(bytes: &[u8]) -> Parsed {
    // Uninitialised, as hyper has them: zeroing 100 headers per request is a visible cost.
    let mut headers = [std::mem::MaybeUninit::<httparse::Header<'_>>::uninit(); HEADERS_MAX];
    let mut req = httparse::Request::new(&mut []);
    let len = match httparse::ParserConfig::default().parse_request_with_uninit_headers(&mut req, bytes, &mut headers) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Refused,
    };
    let (mut length, mut chunked, mut te) = (None::<u64>, false, false);
    let mut lengths = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            te = true;
            // The last coding decides, as hyper reads it.
            chunked = h
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("content-length") {
            lengths = true;
            let Some(n) = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
            else {
                return Parsed::Whole(len, if te { Body::Both } else { Body::Refused });
            };
            if length.is_some_and(|l| l != n) {
                return Parsed::Whole(len, Body::Refused);
            }
            length = Some(n);
        }
    }
    let body = match (te, lengths) {
        (true, true) => Body::Both,
        (true, false) if req.version == Some(1) && chunked => Body::Chunked,
        (true, false) => Body::Refused,
        (false, _) => length.filter(|&n| n > 0).map_or(Body::None, Body::Length),
    };
    Parsed::Whole(len, body)
}

/// A chunk-size line's size (hex digits, then extensions or blanks up to its line end), read
/// as hyper reads it: any number of leading zeros, `None` past `u64`.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return None;
    }
    line[..digits].iter().try_fold(0u64, |size, &b| {
        let digit = (b as char).to_digit(16)?;
        size.checked_mul(16)?.checked_add(u64::from(digit))
    })
}

impl<I: AsyncRead + Unpin> AsyncRead for Framed<I> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            if !matches!(this.state, State::Stopped) {
                this.follow(&buf.filled()[before..]);
            }
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Framed<I> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The requests of `bytes`, fed in pieces of `step` bytes: which held both headers.
    fn both(bytes: &[u8], step: usize) -> (u64, Vec<bool>) {
        let (mut framed, framing) = Framed::new(());
        for piece in bytes.chunks(step) {
            framed.follow(piece);
        }
        let flags = (0..framed.requests)
            .map(|_| framing.next() == RequestFraming::Both)
            .collect();
        (framed.requests, flags)
    }

    #[test]
    fn a_chunk_size_is_read_as_hyper_reads_it() {
        assert_eq!(chunk_size(b"0000000000000000000005\r\n"), Some(5));
        assert_eq!(chunk_size(b"ffffffffffffffff;ext=1\r\n"), Some(u64::MAX));
        assert_eq!(chunk_size(b"10000000000000000\r\n"), None);
        assert_eq!(chunk_size(b"\r\n"), None);
    }

    /// Bytes that cannot be followed (a chunk-size line past 64 KiB, come in more than one
    /// read) stop the reading, and every request the service is handed after the one they are
    /// in is refused: fail closed.
    #[test]
    fn requests_after_bytes_not_followed_are_refused() {
        let (mut framed, framing) = Framed::new(());
        let long = format!(
            "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;{}\r\nhello\r\n0\r\n\r\n\
             GET /b HTTP/1.1\r\n\r\n",
            "x".repeat(70 * 1024)
        );
        for piece in long.as_bytes().chunks(1024) {
            framed.follow(piece);
        }
        assert_eq!(framing.next(), RequestFraming::Served);
        assert_eq!(framing.next(), RequestFraming::Unfollowed);
        assert_eq!(framing.next(), RequestFraming::Unfollowed);
    }

    #[test]
    fn requests_are_followed_through_their_bodies_however_the_bytes_come() {
        // Bodies that look like a request with both headers: they are bodies.
        let fake = "GET /x HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
        let pipelined = format!(
            "GET /a HTTP/1.1\r\nHost: h\r\n\r\n\
             POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n{fake}\
             POST /c HTTP/1.1\r\nHost: h\r\ntransfer-encoding: chunked\r\n\r\n\
             5;ext=1\r\nhello\r\n{:x}\r\n{fake}\r\n0\r\nTrailer: t\r\n\r\n\
             POST /d HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
            fake.len(),
            fake.len()
        );
        for step in [pipelined.len(), 1, 7, 64] {
            let (requests, flags) = both(pipelined.as_bytes(), step);
            assert_eq!(requests, 4, "{step}");
            assert_eq!(flags, [false, false, false, true], "{step}");
        }
    }

    #[test]
    fn both_headers_in_either_order_and_any_case_are_found() {
        for head in [
            "POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nTRANSFER-ENCODING: chunked\r\ncontent-length: 4\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: x\r\n\r\n",
        ] {
            assert_eq!(both(head.as_bytes(), 3), (1, vec![true]), "{head}");
        }
        assert_eq!(both(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 1), (1, vec![false]));
    }

    #[test]
    fn what_hyper_refuses_stops_the_following() {
        for bytes in [
            &b"GET / HTTP/1.1\r\nBad Header\r\n\r\nGET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            let (requests, flags) = both(bytes, 5);
            assert!(flags.iter().all(|f| !f), "{flags:?}");
            assert!(requests <= 1);
        }
    }
}
