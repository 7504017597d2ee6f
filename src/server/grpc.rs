//! `serve`'s gRPC front door (docs/serve.md): Armada's `api.RetryPolicyService`, `api.QueueService`
//! and the queue methods and `Health` of `api.Submit` (what armadactl's queue verbs call), over
//! the same store, validation and error texts as the REST routes (`api`).
//!
//! Owns: the service implementations (protobuf in, the store's writes and reads, protobuf
//! out), the protobuf form of stored resources (made once per stored body and kept), and
//! [`Grpc::call`], which answers one gRPC request: credentials and host checked like REST's,
//! the dialect marked, the request logged, a panic turned into `Internal`. Must not: decode
//! JSON, validate or write queues by itself (`api`, `wire`, `model::validate` do, one
//! implementation for both front doors: `api::write_decoded_queue` one queue,
//! `api::write_batch` a batch), or know connections (`accept` hands HTTP/2 requests over).
//!
//! Decisions the design leaves open (also in the README's `serve` section):
//! - The same rules as REST, not upstream's: a create of an existing name is AlreadyExists,
//!   a delete of a missing one NotFound, a delete of a policy queues use FailedPrecondition,
//!   no owner is filled in (upstream upserts, succeeds, detaches, fills in the caller).
//! - A stored design-dialect policy has no protobuf form: reading it over gRPC is
//!   FailedPrecondition naming the fields (REST shows it whole). Never a lossy answer, which a
//!   read-modify-write would then store back without those fields.
//! - `PreemptOnQueue` and `CancelOnQueue` (and every job method of `Submit`) are
//!   Unimplemented: serve runs no jobs. `Health` needs no credentials, like `/health`.
//! - A request field the contract does not define is InvalidArgument (`StrictCodec`);
//!   upstream's generated code drops it without a word. So in the upstream dialect too, where
//!   a policy is otherwise checked by upstream's own rules and words (`validation`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use axum::body::Bytes;
use axum::http::{HeaderName, HeaderValue, Request};
use axum::response::Response;
use tonic::codec::CompressionEncoding;
use tonic::codegen::Service as _;
use tonic::{Code as GrpcCode, Status};

use super::api::{self, ApiError, Code};
use super::guard::Guard;
use super::hygiene::{log_start, mark_and_log, panic_payload_text, Log};
use super::store::{Store, StoreError, Versioned};
use crate::armada_api::api as pb;
use crate::armada_api::api::queue_service_server::{QueueService, QueueServiceServer};
use crate::armada_api::api::retry_policy_service_server::{RetryPolicyService, RetryPolicyServiceServer};
use crate::armada_api::api::submit_server::{Submit, SubmitServer};
use crate::armada_api::{self as armada};
use crate::armada_api::{gateway, validation};
use crate::model::validate::name_problem;
use crate::wire::{self, Dialect};

use crate::armada_api::MAX_MESSAGE;

/// The gRPC request service of one server.
pub struct Grpc {
    guard: Arc<Guard>,
    log: Option<Log>,
    services: Arc<Services>,
    policies: RetryPolicyServiceServer<Services>,
    queues: QueueServiceServer<Services>,
    submit: SubmitServer<Services>,
}

/// The hot read, answered without tonic ([`Services::get_policy_unary`]).
const GET_POLICY: &str = "/api.RetryPolicyService/GetRetryPolicy";

// gRPC's header names, made once: a name given as text is parsed and checked at every use,
// which a call answered in a few microseconds notices.
const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
const GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");
const GRPC_ENCODING: HeaderName = HeaderName::from_static("grpc-encoding");
const GRPC_ACCEPT_ENCODING: HeaderName = HeaderName::from_static("grpc-accept-encoding");

/// Whether a request's message is sent as is (`grpc-encoding` absent or `identity`).
fn uncompressed<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(&GRPC_ENCODING)
        .is_none_or(|v| v.as_bytes() == b"identity")
}

/// A unary answer: one message, then the trailers saying OK (nothing for a trailers-only
/// answer, `Default`).
#[derive(Default)]
pub struct Unary {
    message: Option<Bytes>,
    trailers: Option<axum::http::HeaderMap>,
}

impl Unary {
    /// The message and the trailers, when there are any.
    pub fn into_parts(self) -> Option<(Bytes, axum::http::HeaderMap)> {
        self.message.zip(self.trailers)
    }
}

/// The OK answer carrying `message` (a whole gRPC frame), as tonic's server sends it.
fn unary_ok(message: Bytes) -> axum::http::Response<Unary> {
    let mut trailers = axum::http::HeaderMap::with_capacity(1);
    trailers.insert(GRPC_STATUS, HeaderValue::from_static("0"));
    let mut resp = axum::http::Response::new(Unary {
        message: Some(message),
        trailers: Some(trailers),
    });
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    resp.headers_mut()
        .insert(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
    resp
}

impl hyper::body::Body for Unary {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let frame = match this.message.take() {
            Some(m) => Some(hyper::body::Frame::data(m)),
            None => this.trailers.take().map(hyper::body::Frame::trailers),
        };
        std::task::Poll::Ready(frame.map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.trailers.is_none()
    }
}

/// The methods of `api.Submit` that serve answers (armadactl's queue verbs, and Health).
const SUBMIT_SERVED: [&str; 8] = [
    "CreateQueue",
    "CreateQueues",
    "UpdateQueue",
    "UpdateQueues",
    "DeleteQueue",
    "GetQueue",
    "GetQueues",
    "Health",
];

/// Whether `req` is a gRPC call (`content-type: application/grpc…`).
pub fn is_grpc<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

impl Grpc {
    pub fn new(store: Arc<Store>, guard: Arc<Guard>, log: Option<Log>, dialect: Dialect) -> Grpc {
        let services = Arc::new(Services {
            store,
            protos: Protos {
                dialect,
                ..Protos::default()
            },
            dialect,
        });
        macro_rules! configured {
            ($server:ident) => {
                $server::from_arc(services.clone())
                    .accept_compressed(CompressionEncoding::Gzip)
                    .send_compressed(CompressionEncoding::Gzip)
                    .max_decoding_message_size(MAX_MESSAGE)
                    .max_encoding_message_size(MAX_MESSAGE)
            };
        }
        Grpc {
            guard,
            log,
            services: services.clone(),
            policies: configured!(RetryPolicyServiceServer),
            queues: configured!(QueueServiceServer),
            submit: configured!(SubmitServer),
        }
    }

    /// Answers one gRPC request (whatever the body type of the connection that carried it).
    pub async fn call<B>(&self, req: Request<B>, peer: SocketAddr) -> Response
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
    {
        use futures_util::FutureExt;
        let started = Instant::now();
        let line = log_start(self.log.as_ref(), req.method(), req.uri());
        let path = req.uri().path();
        let resp = if let Some(status) = self.refusal(&req, peer) {
            status.into_http::<axum::body::Body>()
        } else {
            // Every answer as an axum response: tonic's bodies are wrapped.
            fn axum_body(
                r: Result<axum::http::Response<tonic::body::Body>, std::convert::Infallible>,
            ) -> Result<Response, std::convert::Infallible> {
                r.map(|resp| resp.map(axum::body::Body::new))
            }
            let answer = if Self::answers_now(&req) {
                let services = self.services.clone();
                async move { Ok(services.get_policy_unary(req).await) }.boxed()
            } else if path.starts_with("/api.RetryPolicyService/") {
                self.policies.clone().call(req).map(axum_body).boxed()
            } else if path.starts_with("/api.QueueService/") {
                self.queues.clone().call(req).map(axum_body).boxed()
            } else if path.starts_with("/api.Submit/") && SUBMIT_SERVED.contains(&&path["/api.Submit/".len()..]) {
                self.submit.clone().call(req).map(axum_body).boxed()
            } else if let Some(method) = path.strip_prefix("/api.Submit/") {
                let status = Status::unimplemented(format!(
                    "retryctl serve runs no jobs: api.Submit/{method} is not served (its queue methods and Health are)"
                ));
                std::future::ready(Ok(status.into_http::<axum::body::Body>())).boxed()
            } else {
                let status = Status::unimplemented(format!("unknown service or method {path}"));
                std::future::ready(Ok(status.into_http::<axum::body::Body>())).boxed()
            };
            // AssertUnwindSafe: as in the REST handlers, nothing of the request is used after
            // a panic and the store's locks recover from poisoning.
            match std::panic::AssertUnwindSafe(answer).catch_unwind().await {
                Ok(Ok(resp)) => resp,
                Ok(Err(never)) => match never {},
                Err(payload) => panic_status(payload.as_ref()).into_http::<axum::body::Body>(),
            }
        };
        self.finish(resp, line, started)
    }

    /// Whether `req` is the hot read that [`Grpc::call_now`] answers, given its message.
    pub fn answers_now<B>(req: &Request<B>) -> bool {
        req.uri().path() == GET_POLICY && uncompressed(req)
    }

    /// Answers the hot read ([`Grpc::answers_now`]) whose whole request body, `body`, has
    /// arrived with its header: what [`Grpc::call`] answers (the same checks, statuses, log
    /// line), without a future, so that the connection's task answers it at once. The body of
    /// the answer is the message and the trailers (empty for a refusal: trailers-only).
    pub fn call_now<B>(&self, req: &Request<B>, body: &[u8], peer: SocketAddr) -> axum::http::Response<Unary> {
        let started = Instant::now();
        let line = log_start(self.log.as_ref(), req.method(), req.uri());
        let resp = match self.refusal(req, peer) {
            Some(status) => status.into_http::<Unary>(),
            // AssertUnwindSafe: as in `call`.
            None => {
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.services.get_policy_message(body)))
                {
                    Ok(Ok(message)) => unary_ok(message),
                    Ok(Err(status)) => status.into_http::<Unary>(),
                    Err(payload) => panic_status(payload.as_ref()).into_http::<Unary>(),
                }
            }
        };
        self.finish(resp, line, started)
    }

    /// What every answer gets last: the too-large status renamed, the code named in the log
    /// line, the dialect header, the log line sent.
    fn finish<T>(
        &self,
        mut resp: axum::http::Response<T>,
        line: Option<String>,
        started: Instant,
    ) -> axum::http::Response<T> {
        too_large_is_resource_exhausted(resp.headers_mut());
        // A refusal is answered in the headers alone (trailers-only): name its code in the log.
        let line = line.map(|mut l| {
            if let Some(code) = resp.headers().get(&GRPC_STATUS).and_then(|v| v.to_str().ok()) {
                let code = code.parse::<i64>().map_or("Unknown", crate::client::codes::name);
                l.push_str(&format!(" ({code})"));
            }
            l
        });
        mark_and_log(
            &mut resp,
            self.log.as_ref(),
            line,
            started,
            self.services.dialect == Dialect::V1,
        );
        resp
    }

    /// The host check and the credentials, as REST's; `Health` needs none (like `/health`).
    fn refusal<B>(&self, req: &Request<B>, peer: SocketAddr) -> Option<Status> {
        if req.uri().path() == "/api.Submit/Health" {
            return None;
        }
        // HTTP/2 carries the host in `:authority`, which h2 puts in the URI.
        let authority = req
            .uri()
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok());
        let host = req.headers().get(axum::http::header::HOST).or(authority.as_ref());
        self.guard
            .screen(req.headers(), host, Some(peer.ip()))
            .err()
            .map(status)
    }
}

/// tonic refuses a request frame longer than the limit as OutOfRange; grpc-go, whose clients
/// armadactl and Armada's Python client are, as ResourceExhausted (docs/serve.md). The refusal is
/// answered in the headers alone (the request was never decoded), so it is renamed there.
fn too_large_is_resource_exhausted(headers: &mut axum::http::HeaderMap) {
    const OUT_OF_RANGE: &[u8] = b"11";
    let too_large = headers.get(&GRPC_STATUS).is_some_and(|v| v.as_bytes() == OUT_OF_RANGE)
        && headers
            .get(&GRPC_MESSAGE)
            // Percent-encoded as tonic writes it (a space is `%20`).
            .is_some_and(|m| {
                m.as_bytes()
                    .starts_with(b"Error,%20decoded%20message%20length%20too%20large")
            });
    if too_large {
        headers.insert(GRPC_STATUS, HeaderValue::from_static("8"));
    }
}

/// An [`ApiError`] as the gRPC status of the same code.
fn status(e: ApiError) -> Status {
    Status::new(GrpcCode::from_i32(e.code.number()), e.message)
}

fn store_status(e: StoreError, kind: &str, name: &str, doing: &str) -> Status {
    status(api::store_error(e, kind, name, doing))
}

const POLICY: &str = "retry policy";
const QUEUE: &str = "queue";

/// A name from a request, checked before it reaches storage (REST checks its path the same).
fn check_name(kind: &str, name: &str) -> Result<(), Status> {
    if name.is_empty() {
        return Err(Status::invalid_argument(format!("{kind} name must not be empty")));
    }
    match name_problem(name) {
        Some(problem) => Err(Status::invalid_argument(format!("invalid {kind} name: {problem}"))),
        None => Ok(()),
    }
}

/// A request message over the limit, as grpc-go refuses it.
fn too_large() -> Status {
    Status::resource_exhausted(format!(
        "grpc: received message larger than max (more than {MAX_MESSAGE} bytes)"
    ))
}

/// A handler's panic as the call's answer (as a REST handler's panic is a 500).
fn panic_status(payload: &(dyn std::any::Any + Send)) -> Status {
    Status::internal(format!("internal server error: {}", panic_payload_text(payload)))
}

/// The implementations of the three services.
pub struct Services {
    store: Arc<Store>,
    protos: Protos,
    /// The server's dialect: `Upstream` decodes and checks policies as today's Armada does.
    dialect: Dialect,
}

/// The protobuf form of stored bodies, made once per body: the REST bodies are what the store
/// keeps, and a gRPC read then costs a map look-up instead of a JSON parse per request.
/// Keyed by name and checked against the body (a deleted and re-created resource starts
/// again at version 1, so the version alone could match an older body).
struct Protos {
    /// How the stored bodies read (an absent `retryLimit` is 0 in the upstream dialect).
    dialect: Dialect,
    policies: BodyCache<PolicyForms>,
    queues: BodyCache<Result<pb::Queue, Status>>,
}

/// A stored policy's message and GetRetryPolicy's answer frame (or why it has neither: a
/// design-dialect policy): the hot read then costs a look-up and a reference count, not a
/// copy of the message and its encoding.
struct PolicyForms {
    proto: Result<pb::RetryPolicy, Status>,
    frame: Result<Bytes, Status>,
}

impl Default for Protos {
    fn default() -> Self {
        Protos {
            dialect: Dialect::V1,
            policies: BodyCache::default(),
            queues: BodyCache::default(),
        }
    }
}

/// Entries kept at most; past it the cache starts afresh (deleted names would otherwise stay).
const MAX_CACHED: usize = 8192;

impl Protos {
    fn policy(&self, name: &str, stored: &Versioned) -> Result<pb::RetryPolicy, Status> {
        let make = |n: &str, b: &[u8]| policy_forms(n, b, self.dialect);
        self.policies.answer(name, stored, make, |f| f.proto.clone())
    }

    /// GetRetryPolicy's answer: the policy as one uncompressed gRPC message frame.
    fn policy_frame(&self, name: &str, stored: &Versioned) -> Result<Bytes, Status> {
        let make = |n: &str, b: &[u8]| policy_forms(n, b, self.dialect);
        self.policies.answer(name, stored, make, |f| f.frame.clone())
    }

    fn queue(&self, name: &str, stored: &Versioned) -> Result<pb::Queue, Status> {
        self.queues.answer(name, stored, queue_proto, Clone::clone)
    }
}

/// What is made of stored bodies, by name, each checked against the body it was made from.
struct BodyCache<T>(RwLock<HashMap<String, (Bytes, T)>>);

impl<T> Default for BodyCache<T> {
    fn default() -> Self {
        BodyCache(RwLock::default())
    }
}

impl<T> BodyCache<T> {
    /// `answer` of what `make` makes of `name`'s stored body, made once per body.
    fn answer<R>(
        &self,
        name: &str,
        stored: &Versioned,
        make: impl FnOnce(&str, &[u8]) -> T,
        answer: impl Fn(&T) -> R,
    ) -> R {
        if let Some((body, made)) = self.0.read().unwrap_or_else(|e| e.into_inner()).get(name) {
            if *body == stored.body {
                return answer(made);
            }
        }
        let made = make(name, &stored.body);
        let out = answer(&made);
        let mut map = self.0.write().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_CACHED {
            map.clear();
        }
        map.insert(name.to_string(), (stored.body.clone(), made));
        out
    }
}

fn policy_forms(name: &str, body: &[u8], dialect: Dialect) -> PolicyForms {
    let proto = policy_proto(name, body, dialect);
    let frame = proto.as_ref().map(message_frame).map_err(Clone::clone);
    PolicyForms { proto, frame }
}

/// One uncompressed gRPC message frame: flag 0, the length (4 bytes, big-endian), the message.
fn message_frame(message: &pb::RetryPolicy) -> Bytes {
    let len = prost::Message::encoded_len(message);
    let mut frame = Vec::with_capacity(5 + len);
    frame.push(0);
    frame.extend_from_slice(&(len as u32).to_be_bytes());
    // Encoding into a Vec with room for the message cannot fail.
    let _ = prost::Message::encode(message, &mut frame);
    Bytes::from(frame)
}

/// A stored policy body as upstream's message; FailedPrecondition for a design-dialect one.
/// `dialect` is the server's: the upstream dialect stores an absent `retryLimit` for 0.
fn policy_proto(name: &str, body: &[u8], dialect: Dialect) -> Result<pb::RetryPolicy, Status> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| Status::internal(format!("stored retry policy {name:?} is not JSON: {e}")))?;
    let policy = wire::policy_from_json(&value, dialect).map_err(|d| {
        Status::internal(format!(
            "stored retry policy {name:?} does not decode: {}",
            crate::diag::describe_errors(&d)
        ))
    })?;
    armada::policy_to_proto(&policy).map_err(|fields| {
        Status::failed_precondition(format!(
            "retry policy {name:?} uses fields Armada's gRPC API cannot carry: {}; read it over REST \
             (GET /v1/retry-policy/{name})",
            fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
        ))
    })
}

fn queue_proto(name: &str, body: &[u8]) -> Result<pb::Queue, Status> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| Status::internal(format!("stored queue {name:?} is not JSON: {e}")))?;
    let queue = wire::queue_from_json(&value).map_err(|d| {
        Status::internal(format!(
            "stored queue {name:?} does not decode: {}",
            crate::diag::describe_errors(&d)
        ))
    })?;
    Ok(armada::queue_to_proto(&queue))
}

/// A policy of a create or update request: decoded (upstream's dialect), validated, encoded
/// as the store keeps it. The upstream dialect checks it as upstream's service does
/// (`validation`, its message behind `invalid retry policy: `) and stores what its gateway
/// would answer.
fn policy_body(p: &pb::RetryPolicy, dialect: Dialect) -> Result<Bytes, Status> {
    if dialect == Dialect::Upstream {
        validation::validate_policy(p, &[])
            .map_err(|e| Status::invalid_argument(format!("invalid retry policy: {e}")))?;
        return Ok(api::encode(&gateway::policy_to_json(p)));
    }
    if p.name.is_empty() {
        return Err(Status::invalid_argument("retry policy name must not be empty"));
    }
    let policy = armada::policy_from_proto(p)
        .map_err(|d| Status::invalid_argument(format!("invalid retry policy: {}", crate::diag::describe_errors(&d))))?;
    api::check_policy(&policy).map_err(status)
}

/// A queue of a request as the model's, refused when it sets a field this server does not
/// keep (InvalidArgument, as REST's validation errors).
fn queue_of(q: &pb::Queue) -> Result<crate::model::Queue, ApiError> {
    let (queue, unsupported) = armada::queue_from_proto(q);
    if let Some(field) = unsupported.first() {
        return Err(ApiError::invalid(format!(
            "invalid queue: {field}: `{field}` is not supported by this server"
        )));
    }
    Ok(queue)
}

/// Writes one queue as REST's `POST` (create) or `PUT` (upsert) does.
async fn write_queue(store: &Arc<Store>, q: &pb::Queue, create: bool) -> Result<(), Status> {
    let queue = queue_of(q).map_err(status)?;
    api::write_decoded_queue(store.clone(), queue, None, create, None)
        .await
        .map(drop)
        .map_err(status)
}

/// The answers of CreateQueues and UpdateQueues: the same list of failures (each the queue as
/// sent and its status text) in two generated types, and which write each method does.
trait BatchAnswer {
    /// CreateQueues creates (a taken name fails); UpdateQueues upserts.
    const CREATE: bool;
    fn of(failed: Vec<(&pb::Queue, String)>) -> Self;
}

macro_rules! batch_answer {
    ($answer:ident, $failure:ident, $create:literal) => {
        impl BatchAnswer for pb::$answer {
            const CREATE: bool = $create;
            fn of(failed: Vec<(&pb::Queue, String)>) -> Self {
                let failed_queues = failed.into_iter().map(|(queue, error)| pb::$failure {
                    queue: Some(queue.clone()),
                    error,
                });
                pb::$answer {
                    failed_queues: failed_queues.collect(),
                }
            }
        }
    };
}

batch_answer!(BatchQueueCreateResponse, QueueCreateResponse, true);
batch_answer!(BatchQueueUpdateResponse, QueueUpdateResponse, false);

/// CreateQueues or UpdateQueues (by the answer's type): REST's batched write
/// ([`api::write_batch`]); a queue with a field this server does not keep is one more failure.
async fn write_queues<A: BatchAnswer>(
    store: &Arc<Store>,
    request: tonic::Request<pb::QueueList>,
) -> Result<tonic::Response<A>, Status> {
    let queues = &request.get_ref().queues;
    // A fn, not a closure: tonic needs the future `Send`, which rustc cannot prove while it
    // holds a closure that returns a borrow of its argument ("not general enough").
    fn item(q: &pb::Queue) -> (&pb::Queue, Result<crate::model::Queue, ApiError>) {
        (q, queue_of(q))
    }
    let items = queues.iter().map(item);
    Ok(answer(A::of(api::write_batch(store, items, A::CREATE).await)))
}

fn answer<T>(message: T) -> tonic::Response<T> {
    tonic::Response::new(message)
}

impl Services {
    /// `GetRetryPolicy` as tonic's generated server answers it, without tonic: polled by
    /// clients as the REST GET is, and tonic's per-call machinery (a codec, a decoder and an
    /// encoder per call) was a third of its CPU. The same checks (the message is one whole
    /// uncompressed frame, within the limit, with no field the contract does not define),
    /// the same [`Services::get_policy`], the same statuses.
    async fn get_policy_unary<B>(&self, req: Request<B>) -> Response
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let body = axum::body::to_bytes(axum::body::Body::new(req.into_body()), MAX_MESSAGE + 5).await;
        let message = body
            .map_err(|_| too_large())
            .and_then(|body| self.get_policy_message(&body));
        match message {
            Ok(message) => unary_ok(message).map(axum::body::Body::new),
            Err(status) => status.into_http::<axum::body::Body>(),
        }
    }

    /// The answer's message (a whole gRPC frame) to a GetRetryPolicy request's body.
    fn get_policy_message(&self, body: &[u8]) -> Result<Bytes, Status> {
        if body.len() > MAX_MESSAGE + 5 {
            return Err(too_large());
        }
        let message = match (body.first(), body.get(1..5), body.get(5..)) {
            (Some(0), Some(len), Some(rest))
                if u32::from_be_bytes(len.try_into().unwrap_or_default()) as usize == rest.len() =>
            {
                rest
            }
            _ => return Err(Status::internal("protocol error: the request is not one gRPC message")),
        };
        let request: pb::RetryPolicyGetRequest = armada::codec::decode_strict(message)?;
        check_name(POLICY, &request.name)?;
        match self.store.policy(&request.name) {
            Some(stored) => self.protos.policy_frame(&request.name, &stored),
            None => Err(store_status(StoreError::NotFound, POLICY, &request.name, "getting")),
        }
    }

    fn get_policy(&self, name: &str) -> Result<pb::RetryPolicy, Status> {
        check_name(POLICY, name)?;
        match self.store.policy(name) {
            Some(stored) => self.protos.policy(name, &stored),
            None => Err(store_status(StoreError::NotFound, POLICY, name, "getting")),
        }
    }

    fn get_queue(&self, name: &str) -> Result<pb::Queue, Status> {
        check_name(QUEUE, name)?;
        match self.store.queue(name) {
            Some(stored) => self.protos.queue(name, &stored),
            None => Err(store_status(StoreError::NotFound, QUEUE, name, "getting")),
        }
    }

    /// The first `num` queues by name (all for 0), then the end marker (docs/serve.md).
    fn queue_stream(&self, num: u32) -> QueueStream {
        let limit = (num > 0).then_some(num as usize);
        let mut out: Vec<Result<pb::StreamingQueueMessage, Status>> = self
            .store
            .queue_entries(limit)
            .into_iter()
            .map(|(name, stored)| {
                self.protos.queue(&name, &stored).map(|q| pb::StreamingQueueMessage {
                    event: Some(pb::streaming_queue_message::Event::Queue(q)),
                })
            })
            .collect();
        out.push(Ok(pb::StreamingQueueMessage {
            event: Some(pb::streaming_queue_message::Event::End(pb::EndMarker {})),
        }));
        futures_util::stream::iter(out)
    }

    async fn delete_queue(&self, name: &str) -> Result<(), Status> {
        check_name(QUEUE, name)?;
        self.store
            .delete_queue(name, None)
            .await
            .map(drop)
            .map_err(|e| store_status(e, QUEUE, name, "deleting"))
    }

    /// Sets `cordoned` on an existing queue, on condition that it is still the version read
    /// (a concurrent writer's change is never overwritten: read again and retry).
    async fn set_cordoned(&self, name: &str, cordoned: bool) -> Result<(), Status> {
        let doing = if cordoned { "cordon" } else { "uncordon" };
        if name.is_empty() {
            // Upstream's own words (queue_service.go).
            return Err(Status::unknown(format!("cannot {doing} queue with empty name")));
        }
        check_name(QUEUE, name)?;
        for _ in 0..crate::client::CONFLICT_ATTEMPTS {
            let Some(stored) = self.store.queue(name) else {
                return Err(store_status(StoreError::NotFound, QUEUE, name, "getting"));
            };
            let mut queue = queue_of(&self.protos.queue(name, &stored)?).map_err(status)?;
            if queue.cordoned == cordoned {
                return Ok(());
            }
            queue.cordoned = cordoned;
            match api::write_decoded_queue(
                self.store.clone(),
                queue,
                None,
                false,
                Some(api::IfMatch::Versions(vec![stored.version])),
            )
            .await
            {
                Ok(_) => return Ok(()),
                Err(e) if e.code == Code::Stale => continue,
                Err(e) => return Err(status(e)),
            }
        }
        Err(Status::aborted(format!(
            "queue {name:?} kept changing while it was being {doing}ed; try again"
        )))
    }
}

type QueueStream = futures_util::stream::Iter<std::vec::IntoIter<Result<pb::StreamingQueueMessage, Status>>>;

#[tonic::async_trait]
impl RetryPolicyService for Services {
    async fn create_retry_policy(
        &self,
        request: tonic::Request<pb::RetryPolicy>,
    ) -> Result<tonic::Response<()>, Status> {
        let p = request.get_ref();
        let body = policy_body(p, self.dialect)?;
        self.store
            .create_policy(&p.name, body)
            .await
            .map_err(|e| store_status(e, POLICY, &p.name, "creating"))?;
        Ok(answer(()))
    }

    async fn update_retry_policy(
        &self,
        request: tonic::Request<pb::RetryPolicy>,
    ) -> Result<tonic::Response<()>, Status> {
        let p = request.get_ref();
        let body = policy_body(p, self.dialect)?;
        self.store
            .update_policy(&p.name, body, None)
            .await
            .map_err(|e| store_status(e, POLICY, &p.name, "updating"))?;
        Ok(answer(()))
    }

    async fn delete_retry_policy(
        &self,
        request: tonic::Request<pb::RetryPolicyDeleteRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        let name = &request.get_ref().name;
        check_name(POLICY, name)?;
        self.store
            .delete_policy(name, None)
            .await
            .map_err(|e| store_status(e, POLICY, name, "deleting"))?;
        Ok(answer(()))
    }

    async fn get_retry_policy(
        &self,
        request: tonic::Request<pb::RetryPolicyGetRequest>,
    ) -> Result<tonic::Response<pb::RetryPolicy>, Status> {
        self.get_policy(&request.get_ref().name).map(answer)
    }

    async fn get_retry_policies(
        &self,
        _: tonic::Request<pb::RetryPolicyListRequest>,
    ) -> Result<tonic::Response<pb::RetryPolicyList>, Status> {
        let retry_policies = self
            .store
            .policy_entries()
            .into_iter()
            .map(|(name, stored)| self.protos.policy(&name, &stored))
            .collect::<Result<_, _>>()?;
        let list = pb::RetryPolicyList { retry_policies };
        // The one answer that can outgrow the limit (one policy body is at most 1 MiB):
        // said as grpc-go says it, not as tonic's encoder would (OutOfRange, mid-answer).
        let len = prost::Message::encoded_len(&list);
        if len > MAX_MESSAGE {
            return Err(Status::resource_exhausted(format!(
                "grpc: trying to send message larger than max ({len} vs. {MAX_MESSAGE})"
            )));
        }
        Ok(answer(list))
    }
}

#[tonic::async_trait]
impl QueueService for Services {
    type GetQueuesStream = QueueStream;

    async fn create_queue(&self, request: tonic::Request<pb::Queue>) -> Result<tonic::Response<()>, Status> {
        write_queue(&self.store, request.get_ref(), true).await.map(answer)
    }

    async fn create_queues(
        &self,
        request: tonic::Request<pb::QueueList>,
    ) -> Result<tonic::Response<pb::BatchQueueCreateResponse>, Status> {
        write_queues(&self.store, request).await
    }

    async fn update_queue(&self, request: tonic::Request<pb::Queue>) -> Result<tonic::Response<()>, Status> {
        write_queue(&self.store, request.get_ref(), false).await.map(answer)
    }

    async fn update_queues(
        &self,
        request: tonic::Request<pb::QueueList>,
    ) -> Result<tonic::Response<pb::BatchQueueUpdateResponse>, Status> {
        write_queues(&self.store, request).await
    }

    async fn delete_queue(
        &self,
        request: tonic::Request<pb::QueueDeleteRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        Services::delete_queue(self, &request.get_ref().name).await.map(answer)
    }

    async fn get_queue(
        &self,
        request: tonic::Request<pb::QueueGetRequest>,
    ) -> Result<tonic::Response<pb::Queue>, Status> {
        Services::get_queue(self, &request.get_ref().name).map(answer)
    }

    async fn get_queues(
        &self,
        request: tonic::Request<pb::StreamingQueueGetRequest>,
    ) -> Result<tonic::Response<QueueStream>, Status> {
        Ok(answer(self.queue_stream(request.get_ref().num)))
    }

    async fn cordon_queue(
        &self,
        request: tonic::Request<pb::QueueCordonRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        self.set_cordoned(&request.get_ref().name, true).await.map(answer)
    }

    async fn uncordon_queue(
        &self,
        request: tonic::Request<pb::QueueUncordonRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        self.set_cordoned(&request.get_ref().name, false).await.map(answer)
    }

    async fn preempt_on_queue(
        &self,
        _: tonic::Request<pb::QueuePreemptRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        Err(Status::unimplemented(
            "retryctl serve runs no jobs: there is nothing to preempt",
        ))
    }

    async fn cancel_on_queue(&self, _: tonic::Request<pb::QueueCancelRequest>) -> Result<tonic::Response<()>, Status> {
        Err(Status::unimplemented(
            "retryctl serve runs no jobs: there is nothing to cancel",
        ))
    }
}

/// armadactl's queue verbs call these (docs/serve.md): the same as `QueueService`'s.
#[tonic::async_trait]
impl Submit for Services {
    type GetQueuesStream = QueueStream;

    async fn create_queue(&self, request: tonic::Request<pb::Queue>) -> Result<tonic::Response<()>, Status> {
        QueueService::create_queue(self, request).await
    }

    async fn create_queues(
        &self,
        request: tonic::Request<pb::QueueList>,
    ) -> Result<tonic::Response<pb::BatchQueueCreateResponse>, Status> {
        QueueService::create_queues(self, request).await
    }

    async fn update_queue(&self, request: tonic::Request<pb::Queue>) -> Result<tonic::Response<()>, Status> {
        QueueService::update_queue(self, request).await
    }

    async fn update_queues(
        &self,
        request: tonic::Request<pb::QueueList>,
    ) -> Result<tonic::Response<pb::BatchQueueUpdateResponse>, Status> {
        QueueService::update_queues(self, request).await
    }

    async fn delete_queue(
        &self,
        request: tonic::Request<pb::QueueDeleteRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        QueueService::delete_queue(self, request).await
    }

    async fn get_queue(
        &self,
        request: tonic::Request<pb::QueueGetRequest>,
    ) -> Result<tonic::Response<pb::Queue>, Status> {
        QueueService::get_queue(self, request).await
    }

    async fn get_queues(
        &self,
        request: tonic::Request<pb::StreamingQueueGetRequest>,
    ) -> Result<tonic::Response<QueueStream>, Status> {
        QueueService::get_queues(self, request).await
    }

    async fn health(&self, _: tonic::Request<()>) -> Result<tonic::Response<pb::HealthCheckResponse>, Status> {
        Ok(answer(pb::HealthCheckResponse {
            status: pb::health_check_response::ServingStatus::Serving as i32,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::store::Location;

    fn services() -> Services {
        Services {
            store: Arc::new(Store::open(Location::InMemory).unwrap()),
            protos: Protos::default(),
            dialect: Dialect::V1,
        }
    }

    fn queue(name: &str, priority_factor: f64) -> pb::Queue {
        pb::Queue {
            name: name.into(),
            priority_factor,
            ..Default::default()
        }
    }

    fn list(queues: Vec<pb::Queue>) -> tonic::Request<pb::QueueList> {
        tonic::Request::new(pb::QueueList { queues })
    }

    fn version(s: &Services, name: &str) -> Option<u64> {
        s.store.queue(name).map(|v| v.version)
    }

    /// CreateQueues and UpdateQueues write each queue on its own, in order: every failure is
    /// listed (the queue as sent, upstream's status text) and the others are written, on
    /// both services that carry them.
    #[test]
    fn a_batch_lists_each_failure_in_order_and_writes_the_rest() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let s = services();
        rt.block_on(async {
            s.store.create_policy("p1", Bytes::from_static(b"{\"name\":\"p1\"}")).await.unwrap();
            QueueService::create_queue(&s, tonic::Request::new(queue("q1", 1.0))).await.unwrap();
            let unsupported = pb::Queue {
                resource_limits: [("cpu".to_string(), 1.0)].into(),
                ..queue("b3", 1.0)
            };
            let with_unknown_policy = pb::Queue {
                retry_policies: vec!["nope".into()],
                ..queue("b2", 1.0)
            };
            let with_policy = pb::Queue {
                retry_policies: vec!["p1".into()],
                ..queue("b5", 2.0)
            };
            let sent = vec![
                queue("b1", 1.0),
                queue("q1", 1.0),
                with_unknown_policy.clone(),
                unsupported.clone(),
                queue("b4", 0.0),
                queue("", 1.0),
                with_policy,
            ];
            let created = QueueService::create_queues(&s, list(sent)).await.unwrap().into_inner();
            let failed: Vec<(Option<pb::Queue>, &str)> = created
                .failed_queues
                .iter()
                .map(|f| (f.queue.clone(), f.error.as_str()))
                .collect();
            assert_eq!(
                failed,
                [
                    (
                        Some(queue("q1", 1.0)),
                        "rpc error: code = AlreadyExists desc = queue \"q1\" already exists"
                    ),
                    (
                        Some(with_unknown_policy),
                        "rpc error: code = InvalidArgument desc = error creating queue: retry policies do not exist: \"nope\""
                    ),
                    (
                        Some(unsupported.clone()),
                        "rpc error: code = InvalidArgument desc = invalid queue: resourceLimits: `resourceLimits` is not supported by this server"
                    ),
                    (
                        Some(queue("b4", 0.0)),
                        "rpc error: code = InvalidArgument desc = invalid queue: priorityFactor: must be at least 1.0, got `0`"
                    ),
                    (
                        Some(queue("", 1.0)),
                        "rpc error: code = InvalidArgument desc = queue name must not be empty"
                    ),
                ]
            );
            assert_eq!(
                ["b1", "q1", "b2", "b3", "b4", "b5"].map(|n| version(&s, n)),
                [Some(1), Some(1), None, None, None, Some(1)]
            );

            // UpdateQueues upserts; nothing failed is an empty list. Submit's answers as
            // QueueService's.
            let sent = vec![queue("b1", 3.0), queue("b6", 1.0), unsupported.clone()];
            let updated = Submit::update_queues(&s, list(sent)).await.unwrap().into_inner();
            assert_eq!(
                updated.failed_queues,
                [pb::QueueUpdateResponse {
                    queue: Some(unsupported),
                    error: "rpc error: code = InvalidArgument desc = invalid queue: resourceLimits: `resourceLimits` is not supported by this server".into(),
                }]
            );
            assert_eq!(["b1", "b6"].map(|n| version(&s, n)), [Some(2), Some(1)]);
            let updated = QueueService::update_queues(&s, list(vec![queue("b1", 4.0)])).await.unwrap();
            assert_eq!(updated.into_inner().failed_queues, []);
            assert_eq!(version(&s, "b1"), Some(3));
            let created = Submit::create_queues(&s, list(vec![queue("b1", 1.0)])).await.unwrap();
            assert_eq!(
                created.into_inner().failed_queues,
                [pb::QueueCreateResponse {
                    queue: Some(queue("b1", 1.0)),
                    error: "rpc error: code = AlreadyExists desc = queue \"b1\" already exists".into(),
                }]
            );
            assert_eq!(version(&s, "b1"), Some(3));
        });
        s.store.close().unwrap();
    }
}
