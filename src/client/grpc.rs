//! The gRPC transport (docs/serve.md): Armada's `api.RetryPolicyService` and `api.QueueService`
//! over HTTP/2, as armadactl and Armada's Python client call them.
//!
//! Owns: the connection (TCP, TLS with the same trust as REST and ALPN `h2`, then HTTP/2
//! through hyper), the calls (tonic's generated clients, [`crate::armada_api`]), the
//! credentials in the `authorization` metadata (`Bearer …` / `Basic …`, as armadactl sends
//! them), gzip both ways (armadactl compresses every request), the 4 MiB message limit both
//! ways (grpc-go's default), the `-v` log, and the status of a failed call mapped to
//! [`ClientError`]. Must not: decide what a write means (that is `conflict`).
//!
//! Blocking like the REST client: each call runs on a one-thread tokio runtime owned by the
//! client, within `--timeout`. Every call takes one path (`GrpcClient::call`: the metadata,
//! the timeout, the log, the answer's metadata, the status mapped) through a generated client
//! set up in one place (`Stub`: the same origin, gzip and limits for every service).
//! Connection failures (refused, DNS, TLS, a handshake that is not HTTP/2) are
//! [`ClientError::Unreachable`] / [`ClientError::Certificate`], exit 4; a status the server
//! answered is [`ClientError::Api`] with no HTTP status.
//!
//! No versions: upstream's gRPC API has no ETag or If-Match. What this client does instead
//! (read–compare–write): it keeps the answer it last read of each resource, and a replace of
//! a resource read before first reads it again and refuses (Aborted, the conflict the
//! callers retry) when it changed since. What that cannot rule out, and REST's If-Match
//! does: a write by someone else between that re-read and this write (a window of one round
//! trip) is overwritten; the README says so.
//!
//! The server's dialect: `retryctl serve` marks its gRPC answers with the
//! `armada-retry-policy-dialect: v1` metadata, shown by `version`; a design-dialect policy
//! still cannot be sent (protobuf has no form for it), so [`Client::is_v1`] is always false
//! here.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use base64::Engine as _;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message as _;
use tonic::codec::CompressionEncoding;
use tonic::codegen::http;
use tonic::metadata::{AsciiMetadataValue, MetadataMap};
use tonic::Status;

use super::config::{Auth, ClientConfig};
use super::error::{codes, ClientError, Result};
use super::transport::{log, Client, Noun, WriteOp};
use super::trust;
use crate::armada_api::api::queue_service_client::QueueServiceClient;
use crate::armada_api::api::retry_policy_service_client::RetryPolicyServiceClient;
use crate::armada_api::api::streaming_queue_message::Event;
use crate::armada_api::api::submit_client::SubmitClient;
use crate::armada_api::{self as armada, api, MAX_MESSAGE};
use crate::model::{Queue, RetryPolicy};
use crate::redact::redact_url;
use crate::wire::DIALECT_HEADER;

/// Whether `url` names a gRPC server: `grpc://host:port` or `grpcs://host:port`.
pub fn is_grpc_url(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("grpc://") || lower.starts_with("grpcs://")
}

/// A gRPC client for one server.
pub struct GrpcClient {
    config: ClientConfig,
    host: String,
    port: u16,
    tls: bool,
    /// `http://host:port` or `https://host:port`: the `:scheme` and `:authority` of calls.
    origin: http::Uri,
    authorization: Option<AsciiMetadataValue>,
    rt: tokio::runtime::Runtime,
    conn: RefCell<Option<H2>>,
    /// The answer last read of each resource (encoded), for the check before a replace.
    seen: RefCell<HashMap<(Noun, String), Vec<u8>>>,
    /// `Some(v1)` once the server answered anything: whether it marked itself `retryctl serve`.
    dialect: Cell<Option<bool>>,
}

impl GrpcClient {
    /// Checks the address and the credentials; connects at the first call.
    pub fn new(config: ClientConfig) -> Result<GrpcClient> {
        let bad = |reason: String| ClientError::Unreachable {
            url: config.base_url.clone(),
            reason,
        };
        let (scheme, rest) = config
            .base_url
            .split_once("://")
            .ok_or_else(|| bad("not a grpc:// or grpcs:// address".into()))?;
        let tls = scheme.eq_ignore_ascii_case("grpcs");
        let authority: http::uri::Authority = rest
            .trim_end_matches('/')
            .parse()
            .map_err(|e| bad(format!("not a `host:port` address: {e}")))?;
        let port = authority
            .port_u16()
            .ok_or_else(|| bad("the address has no port (expected `host:port`)".into()))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let origin = format!("{}://{authority}", if tls { "https" } else { "http" })
            .parse()
            .map_err(|e| bad(format!("not a `host:port` address: {e}")))?;
        let authorization = match &config.auth {
            Auth::None => None,
            Auth::Bearer(t) => Some(format!("Bearer {t}")),
            Auth::Basic { username, password } => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
            )),
        }
        .map(|v| {
            v.parse::<AsciiMetadataValue>()
                .map_err(|_| bad("the credentials cannot be sent as gRPC metadata (not printable ASCII)".into()))
        })
        .transpose()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| bad(format!("cannot start the client's runtime: {e}")))?;
        Ok(GrpcClient {
            config,
            host,
            port,
            tls,
            origin,
            authorization,
            rt,
            conn: RefCell::new(None),
            seen: RefCell::new(HashMap::new()),
            dialect: Cell::new(None),
        })
    }

    // -----------------------------------------------------------------------------------
    // Connection

    /// The open connection, or a new one.
    fn channel(&self) -> Result<H2> {
        if let Some(c) = self.conn.borrow().as_ref().filter(|c| !c.0.is_closed()) {
            return Ok(c.clone());
        }
        let opened = self
            .rt
            .block_on(async { tokio::time::timeout(self.config.timeout, self.open()).await });
        let h2 = opened.map_err(|_| self.timeout())??;
        *self.conn.borrow_mut() = Some(h2.clone());
        Ok(h2)
    }

    async fn open(&self) -> Result<H2> {
        let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| self.unreachable(connect_reason(&e)))?;
        let _ = tcp.set_nodelay(true);
        if !self.tls {
            return self.handshake(TokioIo::new(tcp)).await;
        }
        let mut tls = if self.config.tls.insecure {
            trust::insecure_config()
        } else {
            trust::client_config(&self.config.tls.extra_roots)
        }
        .map_err(|e| self.unreachable(format!("cannot set up TLS: {e}")))?;
        tls.alpn_protocols = vec![b"h2".to_vec()];
        let name = tokio_rustls::rustls::pki_types::ServerName::try_from(self.host.clone())
            .map_err(|e| self.unreachable(format!("`{}` is not a valid TLS server name: {e}", self.host)))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
            .connect(name, tcp)
            .await
            .map_err(|e| {
                trust::tls_failure(&e, &self.config.base_url)
                    .unwrap_or_else(|| self.unreachable(format!("the TLS handshake failed: {e}")))
            })?;
        self.handshake(TokioIo::new(stream)).await
    }

    async fn handshake<I>(&self, io: TokioIo<I>) -> Result<H2>
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (send, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .handshake(io)
            .await
            .map_err(|e| self.not_http2(&e))?;
        // Driven on this client's runtime while a call runs.
        tokio::spawn(conn);
        Ok(H2(send))
    }

    fn unreachable(&self, reason: String) -> ClientError {
        ClientError::Unreachable {
            url: self.config.base_url.clone(),
            reason,
        }
    }

    fn timeout(&self) -> ClientError {
        ClientError::Timeout {
            url: self.config.base_url.clone(),
            timeout: self.config.timeout,
        }
    }

    /// The connection is open but does not speak HTTP/2: an HTTP/1 server (a REST port), or
    /// plaintext to a TLS port.
    fn not_http2(&self, e: &hyper::Error) -> ClientError {
        let hint = if self.tls {
            "is this the server's gRPC address?"
        } else {
            "is this the server's gRPC address, and does it speak TLS (then use `grpcs://`)?"
        };
        self.unreachable(format!(
            "it does not speak gRPC (HTTP/2): {}; {hint}",
            super::error::root_cause(e)
        ))
    }

    // -----------------------------------------------------------------------------------
    // Calls

    /// Runs call `name` (`api.RetryPolicyService/GetRetryPolicy`): `f`, a method of the
    /// service's generated client (such as `Policies::get_retry_policy`), sending `message`
    /// with the credentials and the deadline, on a connection, within the timeout, logging it
    /// with `-v`. The answer's metadata marks the dialect; a failed status becomes a
    /// [`ClientError`].
    fn call<S, M, T, F>(&self, name: &'static str, message: M, f: F) -> Result<T>
    where
        S: Stub,
        F: AsyncFnOnce(&mut S, tonic::Request<M>) -> std::result::Result<tonic::Response<T>, Status>,
    {
        let mut req = tonic::Request::new(message);
        if let Some(v) = &self.authorization {
            req.metadata_mut().insert("authorization", v.clone());
        }
        req.set_timeout(self.config.timeout);
        let started = Instant::now();
        if self.config.verbose {
            log(&format!(
                "{name} {} (auth: {})",
                redact_url(&self.config.base_url),
                self.config.auth.shown(&self.config.auth_from)
            ));
        }
        let h2 = self.channel()?;
        let result = self.rt.block_on(async {
            let mut stub = S::open(h2, self.origin.clone());
            tokio::time::timeout(self.config.timeout, f(&mut stub, req)).await
        });
        let result = match result {
            Err(_) => {
                if self.config.verbose {
                    log(&format!("{name} -> timed out in {}ms", started.elapsed().as_millis()));
                }
                // The connection may be stuck mid-call: start afresh next time.
                self.conn.borrow_mut().take();
                return Err(self.timeout());
            }
            Ok(r) => r,
        };
        if self.config.verbose {
            let what = match &result {
                Ok(_) => "OK".to_string(),
                Err(s) => codes::name(s.code() as i64).to_string(),
            };
            log(&format!("{name} -> {what} in {}ms", started.elapsed().as_millis()));
        }
        match result {
            Ok(answer) => {
                let (metadata, value, _) = answer.into_parts();
                self.mark_dialect(&metadata);
                Ok(value)
            }
            Err(status) => {
                self.mark_dialect(status.metadata());
                Err(self.status_error(name, status))
            }
        }
    }

    fn mark_dialect(&self, metadata: &MetadataMap) {
        let v1 = metadata
            .get(DIALECT_HEADER.to_ascii_lowercase().as_str())
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case(crate::wire::DIALECT_V1));
        self.dialect.set(Some(v1));
    }

    /// A status the server answered, or the transport's own failure (which carries its
    /// cause: the connection broke mid-call).
    fn status_error(&self, call: &'static str, status: Status) -> ClientError {
        if let Some(source) = std::error::Error::source(&status) {
            self.conn.borrow_mut().take();
            if let Some(tls) = trust::tls_failure(source, &self.config.base_url) {
                return tls;
            }
            return self.unreachable(format!("the connection failed: {}", super::error::root_cause(source)));
        }
        // tonic's own decoder refusing an answer over the limit: not the server's word.
        if status.code() == tonic::Code::OutOfRange
            && status.message().starts_with("Error, decoded message length too large")
        {
            return self.bad_answer(
                call,
                format!(
                    "it is larger than the {} MiB a gRPC message may be ({})",
                    MAX_MESSAGE >> 20,
                    status.message()
                ),
            );
        }
        self.refused(status.code() as i64, status.message().to_string())
    }

    fn bad_answer(&self, call: &'static str, detail: String) -> ClientError {
        ClientError::BadAnswer {
            call,
            url: self.config.base_url.clone(),
            detail,
        }
    }

    /// The policy as the server answers it, not remembered.
    fn fetch_policy(&self, name: &str) -> Result<api::RetryPolicy> {
        let message = api::RetryPolicyGetRequest { name: name.to_string() };
        self.call(GET_POLICY, message, Policies::get_retry_policy)
    }

    fn fetch_queue(&self, name: &str) -> Result<api::Queue> {
        let message = api::QueueGetRequest { name: name.to_string() };
        self.call(GET_QUEUE, message, Queues::get_queue)
    }

    /// The model's policy of `p`, as call `call` answered it about policy `name`.
    fn policy_from(&self, call: &'static str, name: &str, p: &api::RetryPolicy) -> Result<RetryPolicy> {
        armada::policy_from_proto(p).map_err(|d| {
            self.bad_answer(
                call,
                format!("retry policy `{name}`: {}", crate::diag::describe_errors(&d)),
            )
        })
    }

    /// The model's queue of `q`, as call `call` answered it about queue `name`: refused when it
    /// holds what the model cannot (see [`unsupported_fields`]).
    fn queue_from(&self, call: &'static str, name: &str, q: &api::Queue) -> Result<Queue> {
        let (queue, unsupported) = armada::queue_from_proto(q);
        if !unsupported.is_empty() {
            return Err(self.bad_answer(call, unsupported_fields(name, &unsupported)));
        }
        Ok(queue)
    }

    /// Write call `name` about resource `noun` `subject` (a create, replace or delete): what was
    /// read of it before is stale afterwards, whether or not the write went through.
    fn write<S, M, F>(&self, noun: Noun, subject: &str, name: &'static str, message: M, f: F) -> Result<()>
    where
        S: Stub,
        F: AsyncFnOnce(&mut S, tonic::Request<M>) -> std::result::Result<tonic::Response<()>, Status>,
    {
        let result = self.call(name, message, f);
        self.forget(noun, subject);
        result
    }

    fn remember(&self, noun: Noun, name: &str, encoded: Vec<u8>) {
        self.seen.borrow_mut().insert((noun, name.to_string()), encoded);
    }

    fn forget(&self, noun: Noun, name: &str) {
        self.seen.borrow_mut().remove(&(noun, name.to_string()));
    }

    /// For a replace: when `name` was read before, it must still be what was read (the
    /// stand-in for REST's If-Match, see the module docs); Aborted otherwise.
    fn unchanged_since_read(&self, noun: Noun, name: &str) -> Result<()> {
        let Some(read) = self.seen.borrow().get(&(noun, name.to_string())).cloned() else {
            return Ok(());
        };
        let now = match noun {
            Noun::Policy => self.fetch_policy(name).map(|p| p.encode_to_vec()),
            Noun::Queue => self.fetch_queue(name).map(|q| q.encode_to_vec()),
        };
        let changed = match now {
            Ok(now) => now != read,
            Err(e) if e.is_not_found() => true,
            Err(e) => return Err(e),
        };
        if changed {
            return Err(ClientError::ChangedSinceRead {
                noun: match noun {
                    Noun::Policy => "retry policy",
                    Noun::Queue => "queue",
                },
                name: name.to_string(),
            });
        }
        Ok(())
    }

    fn health(&self) -> Result<()> {
        let answered = self.call(HEALTH, (), SubmitClient::health);
        match answered {
            Ok(_) => Ok(()),
            // Any status the server answered says it is there.
            Err(ClientError::Api { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Client for GrpcClient {
    fn base_url(&self) -> &str {
        &self.config.base_url
    }

    fn protocol(&self) -> &'static str {
        "gRPC"
    }

    fn is_grpc(&self) -> bool {
        true
    }

    /// Never: a design-dialect policy has no protobuf form. Asks the server (`Health`) when
    /// nothing was heard from it yet, so that an unreachable server is reported.
    fn is_v1(&self) -> Result<bool> {
        if self.dialect.get().is_none() {
            self.health()?;
        }
        Ok(false)
    }

    fn dialect_name(&self) -> Result<&'static str> {
        self.is_v1()?;
        Ok(if self.dialect.get() == Some(true) {
            "v1"
        } else {
            "upstream"
        })
    }

    fn get_policy(&self, name: &str) -> Result<RetryPolicy> {
        let p = self.fetch_policy(name)?;
        self.remember(Noun::Policy, name, p.encode_to_vec());
        self.policy_from(GET_POLICY, name, &p)
    }

    fn list_policies(&self) -> Result<Vec<RetryPolicy>> {
        let list = self.call(
            LIST_POLICIES,
            api::RetryPolicyListRequest {},
            Policies::get_retry_policies,
        )?;
        list.retry_policies
            .iter()
            .map(|p| self.policy_from(LIST_POLICIES, &p.name, p))
            .collect()
    }

    fn send_policy(&self, op: WriteOp, policy: &RetryPolicy) -> Result<()> {
        let message = armada::policy_to_proto(policy).map_err(|fields| ClientError::Incompatible {
            kind: "retry policy",
            name: policy.name.clone(),
            fields,
            grpc: true,
        })?;
        let name = &policy.name;
        match op {
            WriteOp::Create => self.write(
                Noun::Policy,
                name,
                CREATE_POLICY,
                message,
                Policies::create_retry_policy,
            ),
            WriteOp::Update => {
                self.unchanged_since_read(Noun::Policy, name)?;
                self.write(
                    Noun::Policy,
                    name,
                    UPDATE_POLICY,
                    message,
                    Policies::update_retry_policy,
                )
            }
        }
    }

    fn delete_policy(&self, name: &str) -> Result<()> {
        let message = api::RetryPolicyDeleteRequest { name: name.to_string() };
        self.write(
            Noun::Policy,
            name,
            DELETE_POLICY,
            message,
            Policies::delete_retry_policy,
        )
    }

    fn get_queue(&self, name: &str) -> Result<Queue> {
        let q = self.fetch_queue(name)?;
        self.remember(Noun::Queue, name, q.encode_to_vec());
        self.queue_from(GET_QUEUE, name, &q)
    }

    fn list_queues(&self) -> Result<Vec<Queue>> {
        let message = api::StreamingQueueGetRequest { num: 0 };
        let messages = self.call(LIST_QUEUES, message, async |queues: &mut Queues, req| {
            let (metadata, mut stream, extensions) = queues.get_queues(req).await?.into_parts();
            let mut out = Vec::new();
            // Until the end marker, not the end of the stream (docs/serve.md).
            while let Some(message) = stream.message().await? {
                let end = matches!(message.event, Some(Event::End(_)));
                out.push(message);
                if end {
                    break;
                }
            }
            Ok(tonic::Response::from_parts(metadata, out, extensions))
        })?;
        let mut queues = Vec::with_capacity(messages.len());
        for message in messages {
            match message.event {
                Some(Event::Queue(q)) => queues.push(self.queue_from(LIST_QUEUES, &q.name, &q)?),
                Some(Event::End(_)) => return Ok(queues),
                None => {
                    return Err(
                        self.bad_answer(LIST_QUEUES, "a stream message holds neither a queue nor the end".into())
                    )
                }
            }
        }
        // Without the end marker the list may be cut short: never present it as complete.
        Err(self.bad_answer(LIST_QUEUES, "the queue stream ended without its end marker".into()))
    }

    fn send_queue(&self, op: WriteOp, queue: &Queue) -> Result<()> {
        let (name, message) = (&queue.name, armada::queue_to_proto(queue));
        match op {
            WriteOp::Create => self.write(Noun::Queue, name, CREATE_QUEUE, message, Queues::create_queue),
            WriteOp::Update => {
                self.unchanged_since_read(Noun::Queue, name)?;
                self.write(Noun::Queue, name, UPDATE_QUEUE, message, Queues::update_queue)
            }
        }
    }

    fn delete_queue(&self, name: &str) -> Result<()> {
        let message = api::QueueDeleteRequest { name: name.to_string() };
        self.write(Noun::Queue, name, DELETE_QUEUE, message, Queues::delete_queue)
    }

    fn version(&self, _: Noun, _: &str) -> Option<String> {
        None
    }

    fn refused(&self, code: i64, message: String) -> ClientError {
        ClientError::Api {
            status: None,
            code: Some(code),
            message,
        }
    }

    fn verbose(&self) -> bool {
        self.config.verbose
    }
}

/// One HTTP/2 connection as the tower service tonic's clients call.
#[derive(Clone)]
pub struct H2(SendRequest<tonic::body::Body>);

impl tonic::codegen::Service<http::Request<tonic::body::Body>> for H2 {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = hyper::Error;
    type Future = Pin<Box<dyn Future<Output = std::result::Result<Self::Response, hyper::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), hyper::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(self.0.send_request(req))
    }
}

/// A generated client of one service (tonic's, [`crate::armada_api`]) on a connection, set up
/// as every call here needs it.
trait Stub {
    fn open(h2: H2, origin: http::Uri) -> Self;
}

/// The one set-up of every generated client: `:scheme` and `:authority` from the address,
/// gzip both ways, the 4 MiB limit both ways. A macro because tonic's generated clients share
/// no trait for these builder methods.
macro_rules! stub {
    ($($client:ident),+) => {$(
        impl Stub for $client<H2> {
            fn open(h2: H2, origin: http::Uri) -> Self {
                $client::with_origin(h2, origin)
                    .send_compressed(CompressionEncoding::Gzip)
                    .accept_compressed(CompressionEncoding::Gzip)
                    .max_decoding_message_size(MAX_MESSAGE)
                    .max_encoding_message_size(MAX_MESSAGE)
            }
        }
    )+};
}

stub!(RetryPolicyServiceClient, QueueServiceClient, SubmitClient);

type Policies = RetryPolicyServiceClient<H2>;
type Queues = QueueServiceClient<H2>;

// The calls this client makes, as the `-v` log and `ClientError::BadAnswer` name them.
const GET_POLICY: &str = "api.RetryPolicyService/GetRetryPolicy";
const LIST_POLICIES: &str = "api.RetryPolicyService/GetRetryPolicies";
const CREATE_POLICY: &str = "api.RetryPolicyService/CreateRetryPolicy";
const UPDATE_POLICY: &str = "api.RetryPolicyService/UpdateRetryPolicy";
const DELETE_POLICY: &str = "api.RetryPolicyService/DeleteRetryPolicy";
const GET_QUEUE: &str = "api.QueueService/GetQueue";
const LIST_QUEUES: &str = "api.QueueService/GetQueues";
const CREATE_QUEUE: &str = "api.QueueService/CreateQueue";
const UPDATE_QUEUE: &str = "api.QueueService/UpdateQueue";
const DELETE_QUEUE: &str = "api.QueueService/DeleteQueue";
const HEALTH: &str = "api.Submit/Health";

/// What the model cannot hold of a queue: refused on reading, as the REST client refuses it,
/// rather than dropped by a later replace.
fn unsupported_fields(name: &str, fields: &[&str]) -> String {
    format!("queue `{name}` {}", armada::unheld_fields(fields))
}

/// Why a TCP connection failed, in the words the REST client uses.
fn connect_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn grpc_addresses_are_told_from_rest_urls() {
        for url in ["grpc://h:1", "grpcs://h:1", "GRPC://h:1"] {
            assert!(is_grpc_url(url), "{url}");
        }
        for url in ["http://h:1", "https://h:1", "h:1", "grpcx://h:1", ""] {
            assert!(!is_grpc_url(url), "{url}");
        }
    }

    fn config(url: &str) -> ClientConfig {
        ClientConfig {
            base_url: url.into(),
            auth: Auth::Basic {
                username: "u".into(),
                password: "p".into(),
            },
            auth_from: "a test".into(),
            timeout: Duration::from_secs(1),
            verbose: false,
            tls: Default::default(),
        }
    }

    #[test]
    fn an_address_needs_a_port_and_credentials_go_in_metadata() {
        let c = GrpcClient::new(config("grpcs://armada.example:50051")).unwrap();
        assert_eq!((c.host.as_str(), c.port, c.tls), ("armada.example", 50051, true));
        assert_eq!(c.origin.to_string(), "https://armada.example:50051/");
        assert_eq!(c.authorization.as_ref().unwrap(), "Basic dTpw");
        let e = GrpcClient::new(config("grpc://armada.example")).err().unwrap();
        assert_eq!(
            e.to_string(),
            "cannot reach the Armada server at `grpc://armada.example`: the address has no port (expected `host:port`)"
        );
    }

    #[test]
    fn a_refused_connection_is_unreachable() {
        // A port nothing listens on: bind one, then close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = GrpcClient::new(config(&format!("grpc://127.0.0.1:{port}"))).unwrap();
        let e = c.get_policy("p").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("cannot reach the Armada server at `grpc://127.0.0.1:{port}`: connection refused")
        );
        assert_eq!(e.exit_code(), crate::error::ExitCode::Unreachable);
    }
}
