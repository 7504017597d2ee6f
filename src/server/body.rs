//! The request body's deadline (docs/serve.md): a body must have arrived in full within a fixed
//! time of its request's header, however its bytes trickle. The header read timeout ends
//! where the header does, and the idle timeout (`conn`) never fires while a byte moves every
//! few seconds, so without this a client sending `Content-Length: 1000000` and then one byte
//! a second holds its connection (and a slot under the connection cap) for days.
//!
//! Owns: the body's size limit ([`MAX_BODY`]) and [`Deadline`], a wrapper on any request body (an HTTP/1.1 body or an HTTP/2 stream's
//! alike) that fails with [`BodyTimeout`] once the deadline has passed and the body is still
//! incomplete. Must not: answer the request or close the connection (the handler that reads
//! the body turns the error into 408 with `Connection: close`, `api::json_body`), or cost a
//! request whose body is already there: the timer is created only when a read has to wait.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// Request bodies larger than this are refused with 413.
pub const MAX_BODY: usize = 1024 * 1024;

/// How long a request body may take after its header (docs/serve.md).
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The error of a body that did not arrive in time; found again by `api::json_body` in the
/// body error's source chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTimeout(pub Duration);

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body did not arrive within {} of the request header",
            seconds(self.0)
        )
    }
}

impl std::error::Error for BodyTimeout {}

/// `30s`, `0.5s`: how the deadline is named in messages.
pub fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// A request body that must be complete by a deadline.
pub struct Deadline<B> {
    inner: B,
    timeout: Duration,
    due: Instant,
    /// Armed the first time a read has to wait; `None` while every read finds data at once.
    timer: Option<Pin<Box<Sleep>>>,
    expired: bool,
}

impl<B> Deadline<B> {
    /// `inner` must be complete within `timeout` from now (when the header was read).
    pub fn new(inner: B, timeout: Duration) -> Self {
        Deadline {
            inner,
            timeout,
            due: Instant::now() + timeout,
            timer: None,
            expired: false,
        }
    }
}

impl<B> Body for Deadline<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if this.expired {
            return Poll::Ready(Some(Err(Box::new(BodyTimeout(this.timeout)))));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|r| r.map_err(Into::into))),
            Poll::Pending => {
                let due = this.due;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
                if timer.as_mut().poll(cx).is_ready() {
                    this.expired = true;
                    return Poll::Ready(Some(Err(Box::new(BodyTimeout(this.timeout)))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        !self.expired && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The first error of type `T` in `err`'s chain (`err` itself, then its sources).
pub fn cause<'a, T: std::error::Error + 'static>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a T> {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(t) = e.downcast_ref::<T>() {
            return Some(t);
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body whose bytes come from a channel, as a client sends them.
    fn trickle() -> (tokio::sync::mpsc::Sender<Bytes>, axum::body::Body) {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
        let stream = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
        });
        (tx, axum::body::Body::from_stream(stream))
    }

    async fn read(body: Deadline<axum::body::Body>) -> Result<Bytes, axum::Error> {
        axum::body::to_bytes(axum::body::Body::new(body), usize::MAX).await
    }

    /// Every gap between bytes is far shorter than the deadline, and the body still fails
    /// once the deadline has passed, through the same wrappers as in the router.
    #[tokio::test]
    async fn a_body_that_keeps_trickling_fails_at_the_deadline() {
        let (tx, body) = trickle();
        let feeder = tokio::spawn(async move {
            while tx.send(Bytes::from_static(b"x")).await.is_ok() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let err = read(Deadline::new(body, Duration::from_millis(300))).await.unwrap_err();
        assert_eq!(cause(&err), Some(&BodyTimeout(Duration::from_millis(300))), "{err:?}");
        assert_eq!(
            err.to_string(),
            "the request body did not arrive within 0.3s of the request header"
        );
        feeder.abort();
    }

    #[tokio::test]
    async fn a_body_in_time_is_passed_through() {
        let (tx, body) = trickle();
        tokio::spawn(async move {
            for part in [&b"{\"a\""[..], b":1}"] {
                tokio::time::sleep(Duration::from_millis(20)).await;
                tx.send(Bytes::from_static(part)).await.unwrap();
            }
        });
        let bytes = read(Deadline::new(body, Duration::from_secs(30))).await.unwrap();
        assert_eq!(&bytes[..], b"{\"a\":1}");
    }

    #[test]
    fn the_timeout_is_named_and_found_through_wrappers() {
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(BodyTimeout(BODY_READ_TIMEOUT));
        assert_eq!(cause(&axum::Error::new(boxed)), Some(&BodyTimeout(BODY_READ_TIMEOUT)));
        assert_eq!(cause::<BodyTimeout>(&std::io::Error::other("no")), None);
        assert_eq!(
            BodyTimeout(BODY_READ_TIMEOUT).to_string(),
            "the request body did not arrive within 30s of the request header"
        );
    }
}
