//! The REST routes (docs/reference/wire.md): request bodies in, status codes and upstream-shaped JSON out.
//!
//! Owns: the handlers, the error body (`{"error","code","message"}` with gRPC codes mapped to
//! HTTP statuses as grpc-gateway does), the byte-level JSON encoding of responses, and the
//! queue writes the gRPC services share (`write_decoded_queue` one queue, `write_batch` the
//! batched ones, failures listed in upstream's words). Must not: convert JSON ⇄ model itself
//! (that is `wire`), validate (that is `model::validate`, the same code the CLI runs) or
//! touch SQL (that is `store`).
//!
//! In the upstream dialect (`serve --dialect upstream`) a policy body is decoded, checked and
//! stored as today's Armada does it (`armada_api::gateway`, `armada_api::validation`); the
//! decisions below hold in both dialects.
//!
//! Decisions the design leaves open (also in the README's `serve` section):
//! - A body whose `name` differs from the `{name}` in the path is refused (400); upstream
//!   silently lets the path win, which turns a copy-paste slip into an edit of the wrong
//!   resource. A body without a name takes the path's.
//! - Deleting a policy or queue that does not exist is 404 NotFound (upstream: silent
//!   success), so `delete` can tell the user, and `--ignore-not-found` means something.
//! - Queues are stored exactly as sent: no owner defaulting to the caller and no synthesised
//!   `permissions` (upstream adds both), so a client's read-back check sees what it wrote.
//! - Versions (docs/reference/wire.md): `ETag: "N"` on every answer about one resource (GET, and the
//!   `{}` of a create or update, carrying the new version); none on lists. `If-Match` takes
//!   `*` (any existing version) or quoted versions; a weak or unparsable tag never matches,
//!   and a missing resource matches no `If-Match` (so a queue `PUT` with one is no upsert).
//!   The batched queue routes take no `If-Match`.
//! - Numbers are written like Go's encoding/json (`1`, not `1.0`), so upstream-shaped JSON
//!   comes back byte for byte.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::Value;

use crate::diag::{describe_errors, Diagnostic};
use crate::model::validate::{name_problem, validate_policy, validate_queue};
use crate::model::Queue;
use crate::wire::{self, Dialect};

use super::store::{Store, StoreError};

/// The gRPC status codes the API produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidArgument = 3,
    NotFound = 5,
    AlreadyExists = 6,
    FailedPrecondition = 9,
    ResourceExhausted = 8,
    /// FailedPrecondition (9) answered as 412: an `If-Match` that no longer matches.
    Stale = 109,
    /// 415: a write whose body is not declared `application/json`; gRPC InvalidArgument.
    UnsupportedMediaType = 103,
    /// 403 PermissionDenied.
    PermissionDenied = 7,
    /// 429: too many failed authentications from one address; gRPC ResourceExhausted.
    TooManyRequests = 108,
    /// 408 (and the connection closed): a request body that did not arrive in time (docs/serve.md);
    /// gRPC DeadlineExceeded, which grpc-gateway would answer 504, a gateway's word.
    RequestTimeout = 104,
    Internal = 13,
    Unavailable = 14,
    Unauthenticated = 16,
}

impl Code {
    /// grpc-gateway's `HTTPStatusFromCode`, except ResourceExhausted: a body over the limit
    /// is 413 (what HTTP clients and proxies expect), not gateway's 429.
    /// The gRPC code number in the error body.
    pub fn number(self) -> i32 {
        match self {
            Code::Stale => Code::FailedPrecondition as i32,
            Code::UnsupportedMediaType => Code::InvalidArgument as i32,
            Code::TooManyRequests => Code::ResourceExhausted as i32,
            Code::RequestTimeout => 4,
            c => c as i32,
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Code::Stale => StatusCode::PRECONDITION_FAILED,
            Code::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Code::PermissionDenied => StatusCode::FORBIDDEN,
            Code::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            Code::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Code::InvalidArgument | Code::FailedPrecondition => StatusCode::BAD_REQUEST,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::AlreadyExists => StatusCode::CONFLICT,
            Code::ResourceExhausted => StatusCode::PAYLOAD_TOO_LARGE,
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        }
    }

    /// The gRPC name, for batched errors (`rpc error: code = InvalidArgument desc = …`): the
    /// name of the code number the error body carries.
    fn name(self) -> &'static str {
        crate::client::codes::name(self.number().into())
    }
}

/// An error answer: `{"error":msg,"code":n,"message":msg}` with the code's HTTP status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Code::InvalidArgument, message)
    }

    fn body(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("error".into(), Value::from(self.message.clone()));
        m.insert("code".into(), Value::from(self.code.number()));
        m.insert("message".into(), Value::from(self.message.clone()));
        Value::Object(m)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = json_response(self.code.status(), encode(&self.body()));
        if self.code == Code::RequestTimeout {
            // The rest of the body may still be on its way: the connection cannot carry
            // another request, and its slot is what a slow client must give back.
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        resp
    }
}

pub type ApiResult = Result<Response, ApiError>;

pub fn json_response(status: StatusCode, body: Bytes) -> Response {
    let mut resp = (status, body).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn ok_empty() -> Response {
    json_response(StatusCode::OK, Bytes::from_static(b"{}"))
}

/// The `ETag` of a version: the number, quoted (a strong validator).
///
/// Written by hand into a stack buffer: with `format!` and `HeaderValue::from_str` this was
/// ~900 of a GET's ~17,600 instructions (callgrind), on the path BENCHMARKS.md compares with an
/// axum hello-world.
pub fn etag(version: u64) -> HeaderValue {
    // A quote, at most 20 digits (u64::MAX), a quote.
    let mut buf = [0u8; 22];
    let mut i = buf.len() - 1;
    buf[i] = b'"';
    let mut v = version;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    i -= 1;
    buf[i] = b'"';
    HeaderValue::from_bytes(&buf[i..]).expect("digits and quotes are a valid header value")
}

fn with_etag(mut resp: Response, version: u64) -> Response {
    resp.headers_mut().insert(header::ETAG, etag(version));
    resp
}

/// What `If-Match` asks for: `None` when absent (no precondition, as upstream clients send),
/// `Some(Any)` for `*`, else the versions listed. A value that names no version of ours (a
/// weak tag, garbage) can never match, so the write is refused rather than let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum IfMatch {
    Any,
    Versions(Vec<u64>),
}

fn if_match(headers: &HeaderMap) -> Option<IfMatch> {
    let values: Vec<&str> = headers
        .get_all(header::IF_MATCH)
        .iter()
        .map(|v| v.to_str().unwrap_or(""))
        .collect();
    if values.is_empty() {
        return None;
    }
    let mut versions = Vec::new();
    for part in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if part == "*" {
            return Some(IfMatch::Any);
        }
        if let Some(n) = part
            .strip_prefix('"')
            .and_then(|p| p.strip_suffix('"'))
            .and_then(|p| p.parse::<u64>().ok())
        {
            versions.push(n);
        }
    }
    Some(IfMatch::Versions(versions))
}

/// The one version a write must find (the store compares it in its transaction), or `None`
/// for no check. `*` means "any existing": resolved against the cache, then still checked
/// by the store. Several listed versions: the current one if it is among them.
fn expected_version(cond: Option<IfMatch>, current: Option<u64>) -> Option<u64> {
    match cond {
        None => None,
        Some(IfMatch::Any) => Some(current.unwrap_or(0)),
        Some(IfMatch::Versions(vs)) => Some(match current {
            Some(c) if vs.contains(&c) => c,
            // 0 is never a stored version: the store refuses it as stale.
            _ => 0,
        }),
    }
}

// ---------------------------------------------------------------------------------------
// JSON bytes

/// Serialises like Go's encoding/json for the values we emit: integral floats without a
/// fraction (`1`, not serde_json's `1.0`), and `<`, `>`, `&` escaped as `\u003c` etc.
pub fn encode(value: &Value) -> Bytes {
    let mut out = Vec::with_capacity(128);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, GoFormatter);
    serde::Serialize::serialize(value, &mut ser).expect("a JSON value always serialises");
    Bytes::from(out)
}

struct GoFormatter;

impl serde_json::ser::Formatter for GoFormatter {
    fn write_f64<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, value: f64) -> std::io::Result<()> {
        // Go switches to exponent form at 1e21; below that an integral value has no fraction.
        if value.fract() == 0.0 && value.abs() < 1e21 {
            write!(writer, "{value:.0}")
        } else {
            writer.write_all(ryu_like(value).as_bytes())
        }
    }

    /// Go's encoding/json escapes `<`, `>`, `&` (HTML safety) and U+2028/U+2029.
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        match Self::escaped(fragment) {
            Some(e) => writer.write_all(e.as_bytes()),
            None => writer.write_all(fragment.as_bytes()),
        }
    }
}

impl GoFormatter {
    fn escaped(fragment: &str) -> Option<String> {
        if !fragment.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
            return None;
        }
        let mut out = String::with_capacity(fragment.len() + 12);
        for c in fragment.chars() {
            match c {
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                '&' => out.push_str("\\u0026"),
                '\u{2028}' => out.push_str("\\u2028"),
                '\u{2029}' => out.push_str("\\u2029"),
                c => out.push(c),
            }
        }
        Some(out)
    }
}

/// serde_json's own float text (shortest round-trip), for the non-integral case.
fn ryu_like(value: f64) -> String {
    serde_json::to_string(&value).unwrap_or_else(|_| "null".into())
}

// ---------------------------------------------------------------------------------------
// request helpers

/// The request body as JSON: empty means `{}` (grpc-gateway reads EOF as an empty message).
fn json_body(body: Result<Bytes, BytesRejection>) -> Result<Value, ApiError> {
    let bytes = body.map_err(|rejection| {
        use super::body::{cause, BodyTimeout};
        if let Some(timeout) = cause::<BodyTimeout>(&rejection) {
            ApiError::new(Code::RequestTimeout, timeout.to_string())
        } else if cause::<std::io::Error>(&rejection).is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut) {
            // The connection's idle timeout (`conn`): the body stopped arriving altogether.
            ApiError::new(
                Code::RequestTimeout,
                "the request body stopped arriving: no byte for the connection's idle timeout",
            )
        } else if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                Code::ResourceExhausted,
                format!(
                    "request body is larger than the limit of {} bytes",
                    super::body::MAX_BODY
                ),
            )
        } else {
            ApiError::invalid(format!("cannot read the request body: {}", rejection.body_text()))
        }
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    let invalid = |e: serde_json::Error| ApiError::invalid(format!("request body is not valid JSON: {e}"));
    // A repeated key is refused, not resolved: serde_json keeps the last, another reader the
    // first, and the two would then disagree about what was stored.
    serde::de::DeserializeSeed::deserialize(NoDuplicateKeys, &mut serde_json::Deserializer::from_slice(&bytes))
        .map_err(invalid)?;
    serde_json::from_slice(&bytes).map_err(invalid)
}

/// Walks a JSON document and fails on the first object with a repeated key.
struct NoDuplicateKeys;

impl<'de> serde::de::DeserializeSeed<'de> for NoDuplicateKeys {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for NoDuplicateKeys {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(NoDuplicateKeys)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!("duplicate key {key:?}")));
            }
            map.next_value_seed(NoDuplicateKeys)?;
        }
        Ok(())
    }
}

/// A name from the path, checked before it reaches storage.
fn path_name(kind: &str, name: &str) -> Result<(), ApiError> {
    if name.is_empty() {
        return Err(ApiError::invalid(format!("{kind} name must not be empty")));
    }
    match name_problem(name) {
        Some(problem) => Err(ApiError::invalid(format!("invalid {kind} name: {problem}"))),
        None => Ok(()),
    }
}

/// Fills an empty body name from the path and refuses a different one.
fn reconcile_name(kind: &str, body_name: &mut String, path: &str) -> Result<(), ApiError> {
    if body_name.is_empty() {
        *body_name = path.to_string();
        Ok(())
    } else if body_name != path {
        Err(ApiError::invalid(format!(
            "{kind} name {body_name:?} in the body does not match {path:?} in the path"
        )))
    } else {
        Ok(())
    }
}

pub(super) fn store_error(err: StoreError, kind: &str, name: &str, doing: &str) -> ApiError {
    match err {
        StoreError::AlreadyExists => ApiError::new(Code::AlreadyExists, format!("{kind} {name:?} already exists")),
        StoreError::NotFound => ApiError::new(Code::NotFound, format!("error: could not find {kind} {name:?}")),
        StoreError::UnknownPolicies(names) => ApiError::invalid(format!(
            "error {doing} {kind}: retry policies do not exist: {}",
            quoted_list(&names)
        )),
        StoreError::InUse(queues) => ApiError::new(
            Code::FailedPrecondition,
            format!(
                "retry policy {name:?} is attached to queues {}; detach it from them first",
                quoted_list(&queues)
            ),
        ),
        StoreError::Stale => ApiError::new(
            Code::Stale,
            format!("{kind} {name:?} has been modified since it was read (If-Match does not match its ETag); read it again and retry"),
        ),
        // A permanent failure is 500: a client retrying a 503 would only hammer a broken disk.
        StoreError::Sql(e) => ApiError::new(Code::Internal, format!("error {doing} {kind} {name:?}: {e}")),
        StoreError::Unavailable(e) => ApiError::new(Code::Unavailable, format!("error {doing} {kind} {name:?}: {e}")),
    }
}

fn quoted_list(names: &[String]) -> String {
    names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
}

// ---------------------------------------------------------------------------------------
// retry policies

const POLICY: &str = "retry policy";
const QUEUE: &str = "queue";

fn decode_policy(value: &Value) -> Result<crate::model::RetryPolicy, ApiError> {
    wire::policy_from_json(value, Dialect::V1)
        .map_err(|d| ApiError::invalid(format!("invalid retry policy: {}", describe_errors(&d))))
}

pub(super) fn check_policy(policy: &crate::model::RetryPolicy) -> Result<Bytes, ApiError> {
    let problems = validate_policy(policy);
    if problems.iter().any(Diagnostic::is_error) {
        return Err(ApiError::invalid(format!(
            "invalid retry policy: {}",
            describe_errors(&problems)
        )));
    }
    Ok(encode(&wire::policy_to_json(policy)))
}

/// A policy body as today's Armada takes it (`serve --dialect upstream`): decoded as its
/// gateway decodes (unknown keys dropped, so a v1 document arrives without its `metadata` and
/// `spec`), its name filled from the path when absent (`PUT`), checked by its service's
/// validation, and encoded as its gateway answers; errors in upstream's words.
fn upstream_policy(value: &Value, path: Option<&str>) -> Result<(String, Bytes), ApiError> {
    use crate::armada_api::{gateway, validation};
    let mut decoded = gateway::policy_from_json(value).map_err(ApiError::invalid)?;
    if let Some(path) = path {
        reconcile_name(POLICY, &mut decoded.policy.name, path)?;
    }
    validation::validate_policy(&decoded.policy, &decoded.nil_rules)
        .map_err(|e| ApiError::invalid(format!("invalid retry policy: {e}")))?;
    let bytes = encode(&gateway::policy_to_json(&decoded.policy));
    Ok((decoded.policy.name, bytes))
}

pub async fn create_policy(
    State(store): State<Arc<Store>>,
    Extension(dialect): Extension<Dialect>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let value = json_body(body)?;
    if dialect == Dialect::Upstream {
        let (name, bytes) = upstream_policy(&value, None)?;
        let version = store
            .create_policy(&name, bytes)
            .await
            .map_err(|e| store_error(e, POLICY, &name, "creating"))?;
        return Ok(with_etag(ok_empty(), version));
    }
    let policy = decode_policy(&value)?;
    if policy.name.is_empty() {
        return Err(ApiError::invalid("retry policy name must not be empty"));
    }
    let bytes = check_policy(&policy)?;
    let name = policy.name;
    let version = store
        .create_policy(&name, bytes)
        .await
        .map_err(|e| store_error(e, POLICY, &name, "creating"))?;
    Ok(with_etag(ok_empty(), version))
}

pub async fn get_policy(State(store): State<Arc<Store>>, Path(name): Path<String>) -> Response {
    policy_answer(&store, &name)
}

/// `GET /v1/retry-policy/{name}`, also answered by the server's fast path (`dispatch`)
/// without going through the router: one implementation for both.
pub fn policy_answer(store: &Store, name: &str) -> Response {
    let answer = || -> ApiResult {
        path_name(POLICY, name)?;
        match store.policy(name) {
            Some(v) => Ok(with_etag(json_response(StatusCode::OK, v.body), v.version)),
            None => Err(store_error(StoreError::NotFound, POLICY, name, "getting")),
        }
    };
    answer().unwrap_or_else(IntoResponse::into_response)
}

pub async fn list_policies(State(store): State<Arc<Store>>) -> Response {
    policies_answer(&store)
}

/// `GET /v1/retry-policies`, also answered by the server's fast path (`dispatch`).
pub fn policies_answer(store: &Store) -> Response {
    let bodies = store.policies();
    if bodies.is_empty() {
        return ok_empty();
    }
    let mut out = Vec::with_capacity(bodies.iter().map(|b| b.len() + 1).sum::<usize>() + 20);
    out.extend_from_slice(b"{\"retryPolicies\":[");
    for (i, b) in bodies.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b);
    }
    out.extend_from_slice(b"]}");
    json_response(StatusCode::OK, Bytes::from(out))
}

pub async fn update_policy(
    State(store): State<Arc<Store>>,
    Extension(dialect): Extension<Dialect>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let bytes = if dialect == Dialect::Upstream {
        // The name in the path is checked by upstream's validation, in its words.
        let value = json_body(body)?;
        upstream_policy(&value, Some(&name))?.1
    } else {
        path_name(POLICY, &name)?;
        let value = json_body(body)?;
        let mut policy = decode_policy(&value)?;
        reconcile_name(POLICY, &mut policy.name, &name)?;
        check_policy(&policy)?
    };
    let expected = expected_version(if_match(&headers), store.policy(&name).map(|v| v.version));
    let version = store
        .update_policy(&name, bytes, expected)
        .await
        .map_err(|e| store_error(e, POLICY, &name, "updating"))?;
    Ok(with_etag(ok_empty(), version))
}

pub async fn delete_policy(State(store): State<Arc<Store>>, Path(name): Path<String>, headers: HeaderMap) -> ApiResult {
    path_name(POLICY, &name)?;
    let expected = expected_version(if_match(&headers), store.policy(&name).map(|v| v.version));
    store
        .delete_policy(&name, expected)
        .await
        .map_err(|e| store_error(e, POLICY, &name, "deleting"))?;
    Ok(ok_empty())
}

/// `GET|PUT|DELETE /v1/retry-policy/` (empty name), as upstream answers it.
pub async fn empty_policy_name() -> ApiError {
    ApiError::invalid("retry policy name must not be empty")
}

// ---------------------------------------------------------------------------------------
// queues

fn decode_queue(value: &Value) -> Result<Queue, ApiError> {
    wire::queue_from_json(value).map_err(|d| ApiError::invalid(format!("invalid queue: {}", describe_errors(&d))))
}

fn check_queue(queue: &Queue) -> Result<Bytes, ApiError> {
    let problems = validate_queue(queue);
    if problems.iter().any(Diagnostic::is_error) {
        return Err(ApiError::invalid(format!(
            "invalid queue: {}",
            describe_errors(&problems)
        )));
    }
    Ok(encode(&wire::queue_to_json(queue)))
}

/// Decode, validate and write one queue (shared by the single and batched routes).
async fn write_queue(
    store: Arc<Store>,
    value: &Value,
    path: Option<&str>,
    create: bool,
    cond: Option<IfMatch>,
) -> Result<u64, ApiError> {
    let queue = decode_queue(value)?;
    write_decoded_queue(store, queue, path, create, cond).await
}

pub(super) async fn write_decoded_queue(
    store: Arc<Store>,
    mut queue: Queue,
    path: Option<&str>,
    create: bool,
    cond: Option<IfMatch>,
) -> Result<u64, ApiError> {
    match path {
        Some(p) => reconcile_name(QUEUE, &mut queue.name, p)?,
        None if queue.name.is_empty() => return Err(ApiError::invalid("queue name must not be empty")),
        None => {}
    }
    let bytes = check_queue(&queue)?;
    let doing = if create { "creating" } else { "updating" };
    let expected = expected_version(cond, store.queue(&queue.name).map(|v| v.version));
    store
        .put_queue(&queue, bytes, create, expected)
        .await
        .map_err(|e| store_error(e, QUEUE, &queue.name, doing))
}

/// The batched writes of both front doors (REST's `/v1/batched/…_queues`, gRPC's
/// CreateQueues and UpdateQueues): every queue written on its own and in order, as
/// [`write_decoded_queue`] writes one (no transaction spans the batch, and a failure does not
/// stop the rest), as upstream does. Each item is what a failure echoes (each protocol its own
/// form of the queue) and the queue to write, or why the protocol could make none of it (gRPC:
/// a field this server does not keep, one more failure; REST has none such, as a queue that
/// does not decode fails its whole request first). Returns the failures in order, each with
/// upstream's text (`rpc error: code = … desc = …`).
pub(super) async fn write_batch<E>(
    store: &Arc<Store>,
    items: impl IntoIterator<Item = (E, Result<Queue, ApiError>)>,
    create: bool,
) -> Vec<(E, String)> {
    let mut failed = Vec::new();
    for (echo, queue) in items {
        let written = match queue {
            Ok(queue) => write_decoded_queue(store.clone(), queue, None, create, None).await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            failed.push((
                echo,
                format!("rpc error: code = {} desc = {}", e.code.name(), e.message),
            ));
        }
    }
    failed
}

pub async fn create_queue(State(store): State<Arc<Store>>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let value = json_body(body)?;
    let version = write_queue(store, &value, None, true, None).await?;
    Ok(with_etag(ok_empty(), version))
}

pub async fn get_queue(State(store): State<Arc<Store>>, Path(name): Path<String>) -> ApiResult {
    path_name(QUEUE, &name)?;
    match store.queue(&name) {
        Some(v) => Ok(with_etag(json_response(StatusCode::OK, v.body), v.version)),
        None => Err(store_error(StoreError::NotFound, QUEUE, &name, "getting")),
    }
}

pub async fn update_queue(
    State(store): State<Arc<Store>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    path_name(QUEUE, &name)?;
    let value = json_body(body)?;
    let version = write_queue(store, &value, Some(&name), false, if_match(&headers)).await?;
    Ok(with_etag(ok_empty(), version))
}

pub async fn delete_queue(State(store): State<Arc<Store>>, Path(name): Path<String>, headers: HeaderMap) -> ApiResult {
    path_name(QUEUE, &name)?;
    let expected = expected_version(if_match(&headers), store.queue(&name).map(|v| v.version));
    store
        .delete_queue(&name, expected)
        .await
        .map_err(|e| store_error(e, QUEUE, &name, "deleting"))?;
    Ok(ok_empty())
}

pub async fn empty_queue_name() -> ApiError {
    ApiError::invalid("queue name must not be empty")
}

/// `GET /v1/batched/queues?num=N`: one `{"result":{"Event":{"queue":…}}}` line per queue,
/// sorted by name, then the end marker, exactly as upstream's gateway writes them. `num`
/// absent or 0 means all; when it is repeated the first wins (Go's `url.Values.Get`).
pub async fn stream_queues(State(store): State<Arc<Store>>, RawQuery(query): RawQuery) -> ApiResult {
    let num = query.as_deref().unwrap_or("").split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == "num").then_some(v)
    });
    let limit = match num {
        None | Some("") => None,
        Some(text) => match text.parse::<u32>() {
            Ok(0) => None,
            Ok(n) => Some(n as usize),
            Err(_) => {
                return Err(ApiError::invalid(format!(
                    "invalid query parameter `num`: expected an integer from 0 to 4294967295, got {}",
                    crate::diag::quote(text)
                )))
            }
        },
    };
    let bodies = store.queues(limit);
    let mut out = Vec::with_capacity(bodies.iter().map(|b| b.len() + 40).sum::<usize>() + 40);
    for b in &bodies {
        out.extend_from_slice(b"{\"result\":{\"Event\":{\"queue\":");
        out.extend_from_slice(b);
        out.extend_from_slice(b"}}}\n");
    }
    out.extend_from_slice(b"{\"result\":{\"Event\":{\"end\":{}}}}\n");
    Ok(json_response(StatusCode::OK, Bytes::from(out)))
}

/// `POST /v1/batched/create_queues` and `PUT /v1/batched/update_queues`: each queue is
/// written on its own (as upstream); failures are listed as `{"queue":…,"error":…}` and the
/// answer is 200 `{}` when none failed.
async fn batch(store: Arc<Store>, body: Result<Bytes, BytesRejection>, create: bool) -> ApiResult {
    let value = json_body(body)?;
    let queues = match &value {
        Value::Object(m) => match m.iter().find(|(k, _)| k.eq_ignore_ascii_case("queues")) {
            None => Vec::new(),
            Some((_, Value::Null)) => Vec::new(),
            Some((_, Value::Array(items))) => items.clone(),
            Some((_, other)) => {
                return Err(ApiError::invalid(format!(
                    "queues: expected an array, found {}",
                    wire::type_name(other)
                )))
            }
        },
        other => {
            return Err(ApiError::invalid(format!(
                "request body: expected an object, found {}",
                wire::type_name(other)
            )))
        }
    };
    if let Some((k, _)) = value
        .as_object()
        .and_then(|m| m.iter().find(|(k, _)| !k.eq_ignore_ascii_case("queues")))
    {
        return Err(ApiError::invalid(format!("unknown field {k:?}, expected \"queues\"")));
    }
    // Like upstream, a queue that does not even decode fails the whole request (there the
    // JSON decoder rejects the QueueList); only semantic failures are listed per queue, and
    // the echoed queue is the decoded one, in the API's shape.
    let mut decoded = Vec::with_capacity(queues.len());
    for (i, q) in queues.iter().enumerate() {
        let queue = wire::queue_from_json(q)
            .map_err(|d| ApiError::invalid(format!("invalid queues[{i}]: {}", describe_errors(&d))))?;
        decoded.push(queue);
    }
    let items = decoded
        .into_iter()
        .map(|queue| (wire::queue_to_json(&queue), Ok(queue)));
    let failed = write_batch(&store, items, create).await;
    if failed.is_empty() {
        return Ok(ok_empty());
    }
    let failed = failed.into_iter().map(|(echo, error)| {
        let mut m = serde_json::Map::new();
        m.insert("queue".into(), echo);
        m.insert("error".into(), Value::from(error));
        Value::Object(m)
    });
    let mut m = serde_json::Map::new();
    m.insert("failedQueues".into(), Value::Array(failed.collect()));
    Ok(json_response(StatusCode::OK, encode(&Value::Object(m))))
}

pub async fn create_queues(State(store): State<Arc<Store>>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    batch(store, body, true).await
}

pub async fn update_queues(State(store): State<Arc<Store>>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    batch(store, body, false).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The names in batched errors (`rpc error: code = NAME desc = …`), upstream's for the
    /// code each answer carries.
    #[test]
    fn codes_are_named_as_grpc_names_the_number_they_carry() {
        let named = [
            (Code::InvalidArgument, "InvalidArgument"),
            (Code::NotFound, "NotFound"),
            (Code::AlreadyExists, "AlreadyExists"),
            (Code::FailedPrecondition, "FailedPrecondition"),
            (Code::Stale, "FailedPrecondition"),
            (Code::UnsupportedMediaType, "InvalidArgument"),
            (Code::PermissionDenied, "PermissionDenied"),
            (Code::ResourceExhausted, "ResourceExhausted"),
            (Code::TooManyRequests, "ResourceExhausted"),
            (Code::RequestTimeout, "DeadlineExceeded"),
            (Code::Internal, "Internal"),
            (Code::Unavailable, "Unavailable"),
            (Code::Unauthenticated, "Unauthenticated"),
        ];
        for (code, name) in named {
            assert_eq!(code.name(), name, "{code:?}");
        }
    }

    #[test]
    fn an_etag_is_the_version_quoted() {
        for (v, want) in [
            (0, "\"0\""),
            (7, "\"7\""),
            (10, "\"10\""),
            (1234567890, "\"1234567890\""),
            (u64::MAX, "\"18446744073709551615\""),
        ] {
            assert_eq!(etag(v), want, "version {v}");
        }
    }

    #[test]
    fn numbers_are_written_as_go_writes_them() {
        let v = json!({"a": 1.0, "b": 1.5, "c": 2, "d": -3.0, "e": 1.337, "f": 1e22});
        assert_eq!(
            encode(&v),
            Bytes::from_static(b"{\"a\":1,\"b\":1.5,\"c\":2,\"d\":-3,\"e\":1.337,\"f\":1e+22}")
        );
    }

    #[test]
    fn strings_are_escaped_as_go_escapes_them() {
        let v = json!({"labels": {"a&b": "<x>\u{2028}\"é"}});
        assert_eq!(
            encode(&v),
            Bytes::from_static(b"{\"labels\":{\"a\\u0026b\":\"\\u003cx\\u003e\\u2028\\\"\xc3\xa9\"}}")
        );
    }

    #[test]
    fn a_repeated_key_is_refused_at_any_depth() {
        let body = |s: &'static str| json_body(Ok(Bytes::from_static(s.as_bytes())));
        assert_eq!(
            body(r#"{"name":"a","rules":[{"action":"Retry","action":"Fail"}]}"#)
                .unwrap_err()
                .message,
            "request body is not valid JSON: duplicate key \"action\" at line 1 column 47"
        );
        assert_eq!(
            body(r#"{"name":"a","name":"b"}"#).unwrap_err().message,
            "request body is not valid JSON: duplicate key \"name\" at line 1 column 18"
        );
        assert_eq!(
            body(r#"{"a":[1,2.5,"x",null,true,{"b":{}}]}"#).unwrap(),
            serde_json::json!({"a":[1,2.5,"x",null,true,{"b":{}}]})
        );
    }

    #[test]
    fn error_body_has_upstream_keys_in_order() {
        let e = ApiError::new(Code::NotFound, "error: could not find retry policy \"p9\"");
        assert_eq!(
            encode(&e.body()),
            Bytes::from_static(
                b"{\"error\":\"error: could not find retry policy \\\"p9\\\"\",\"code\":5,\"message\":\"error: could not find retry policy \\\"p9\\\"\"}"
            )
        );
    }
}
