//! [`ClientError`]: every way a request to an Armada server can fail, over either transport,
//! with the exit code (docs/cli.md) and the words the CLI reports.
//!
//! Owns: the error, the gRPC status codes the client looks at ([`codes`]), the exit code of
//! each failure and its message. Must not: find the errors out (the transports do; `trust.rs`
//! tells a TLS failure's cause) or print them (`main` does, through `CliError`).

use std::fmt;
use std::time::Duration;

use reqwest::StatusCode;

use crate::error::ExitCode;
use crate::redact::redact_url;
use crate::wire::{DIALECT_HEADER, DIALECT_V1};

/// Everything that can go wrong talking to a server, each with its exit code.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientError {
    /// No connection (refused, DNS, TLS, reset).
    Unreachable { url: String, reason: String },
    /// No answer within the timeout.
    Timeout { url: String, timeout: Duration },
    /// The server's TLS certificate does not verify.
    Certificate { url: String, reason: String },
    /// `http://` to a server that speaks only TLS (`server_tls`), or `https://` to one that
    /// does not speak it.
    WrongScheme { url: String, server_tls: bool },
    /// The server understood and said no: the error body (docs/reference/wire.md) over REST, the status over gRPC.
    Api {
        /// The HTTP status of a REST answer; `None` over gRPC.
        status: Option<u16>,
        /// The gRPC code (from the REST body, when present).
        code: Option<i64>,
        message: String,
    },
    /// gRPC has no versions: before a replace, the client reads the resource again, and it
    /// is no longer what this command read (no server said so; nothing was written).
    ChangedSinceRead { noun: &'static str, name: String },
    /// 404 with a body that is not the Armada error shape: the route does not exist.
    NoRoute { method: String, url: String },
    /// A status or body this client cannot make sense of (HTML error page, bad JSON).
    Unexpected {
        method: String,
        url: String,
        status: u16,
        detail: String,
    },
    /// The server is upstream Armada and cannot store these fields, or the connection
    /// is gRPC, whose messages cannot carry them (docs/reference/wire.md): nothing was sent.
    Incompatible {
        kind: &'static str,
        name: String,
        fields: Vec<String>,
        grpc: bool,
    },
    /// A gRPC answer this client cannot make sense of (a stream cut short, a message that
    /// does not convert).
    BadAnswer {
        call: &'static str,
        url: String,
        detail: String,
    },
    /// The write was acknowledged but the read-back differs: the server dropped fields.
    Dropped {
        kind: &'static str,
        name: String,
        fields: Vec<String>,
    },
    /// Another writer changed the resource every time this client tried to (docs/reference/wire.md): the
    /// edit was given up after `attempts` tries.
    Conflict {
        kind: &'static str,
        name: String,
        attempts: u32,
    },
}

/// gRPC status codes the client looks at (over either transport: the REST error body
/// carries them too).
pub mod codes {
    pub const INVALID_ARGUMENT: i64 = 3;
    pub const NOT_FOUND: i64 = 5;
    pub const ALREADY_EXISTS: i64 = 6;
    pub const PERMISSION_DENIED: i64 = 7;
    pub const FAILED_PRECONDITION: i64 = 9;
    /// What the gRPC client answers itself when a resource changed between its read and its
    /// write (its stand-in for REST's 412, see `client::grpc`).
    pub const ABORTED: i64 = 10;
    pub const UNAVAILABLE: i64 = 14;
    pub const UNAUTHENTICATED: i64 = 16;

    pub fn name(code: i64) -> &'static str {
        match code {
            1 => "Canceled",
            2 => "Unknown",
            3 => "InvalidArgument",
            4 => "DeadlineExceeded",
            5 => "NotFound",
            6 => "AlreadyExists",
            7 => "PermissionDenied",
            8 => "ResourceExhausted",
            9 => "FailedPrecondition",
            10 => "Aborted",
            11 => "OutOfRange",
            12 => "Unimplemented",
            13 => "Internal",
            14 => "Unavailable",
            15 => "DataLoss",
            16 => "Unauthenticated",
            _ => "Unknown",
        }
    }
}

/// The innermost cause of `e`: what an error message says after its own words (the chain's
/// outer layers repeat the request, not why it failed).
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

impl ClientError {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            ClientError::ChangedSinceRead { .. } => ExitCode::Failure,
            ClientError::Unreachable { .. }
            | ClientError::Timeout { .. }
            | ClientError::Certificate { .. }
            | ClientError::WrongScheme { .. }
            | ClientError::NoRoute { .. }
            | ClientError::Unexpected { .. }
            | ClientError::BadAnswer { .. }
            | ClientError::Dropped { .. } => ExitCode::Unreachable,
            // A document the server (upstream Armada) or the transport (gRPC) cannot store is
            // invalid for that target, as `validate --upstream` finds it (exit 3); the
            // server's own refusal of such a body is InvalidArgument, 3 as well.
            ClientError::Incompatible { .. } => ExitCode::InvalidInput,
            ClientError::Conflict { .. } => ExitCode::Failure,
            ClientError::Api {
                status: Some(status),
                code,
                ..
            } => match (*status, *code) {
                (401 | 403, _) => ExitCode::Auth,
                (400, Some(codes::INVALID_ARGUMENT)) => ExitCode::InvalidInput,
                (400 | 404 | 409 | 412, _) => ExitCode::Failure,
                _ => ExitCode::Unreachable,
            },
            // gRPC: the codes the REST statuses above stand for mean the same.
            ClientError::Api { status: None, code, .. } => match code.unwrap_or(2) {
                codes::UNAUTHENTICATED | codes::PERMISSION_DENIED => ExitCode::Auth,
                codes::INVALID_ARGUMENT => ExitCode::InvalidInput,
                codes::NOT_FOUND | codes::ALREADY_EXISTS | codes::FAILED_PRECONDITION | codes::ABORTED => {
                    ExitCode::Failure
                }
                _ => ExitCode::Unreachable,
            },
        }
    }

    /// Whether this is the server's `code` (gRPC) or `status` (REST).
    fn is(&self, code: i64, status: u16) -> bool {
        match self {
            ClientError::Api { status: Some(s), .. } => *s == status,
            ClientError::Api {
                status: None, code: c, ..
            } => *c == Some(code),
            _ => false,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.is(codes::NOT_FOUND, 404)
    }

    /// 412 (REST) or Aborted (gRPC): the resource changed since it was read; someone else
    /// wrote in between.
    pub fn is_conflict(&self) -> bool {
        matches!(self, ClientError::ChangedSinceRead { .. }) || self.is(codes::ABORTED, 412)
    }

    pub fn is_already_exists(&self) -> bool {
        self.is(codes::ALREADY_EXISTS, 409)
    }

    /// 401 (REST) or Unauthenticated (gRPC): no or wrong credentials.
    pub fn is_unauthenticated(&self) -> bool {
        self.is(codes::UNAUTHENTICATED, 401)
    }

    /// A connection-level failure: the server cannot be talked to at all.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, ClientError::Unreachable { .. } | ClientError::Timeout { .. })
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Unreachable { url, reason } => {
                write!(f, "cannot reach the Armada server at `{}`: {reason}", redact_url(url))
            }
            ClientError::Timeout { url, timeout } => write!(
                f,
                "the Armada server at `{}` did not answer within {}",
                redact_url(url),
                crate::model::duration::GoDuration(timeout.as_nanos() as u64)
            ),
            ClientError::Certificate { url, reason } => write!(
                f,
                "the TLS certificate of the server at `{}` does not verify: {reason}",
                redact_url(url)
            ),
            ClientError::WrongScheme { url, server_tls } => {
                let url = redact_url(url);
                let speaks = if *server_tls {
                    "speaks TLS"
                } else {
                    "does not speak TLS"
                };
                // The same address with the other scheme of its protocol.
                let other = [("http://", "https://"), ("grpc://", "grpcs://")]
                    .iter()
                    .find_map(|(plain, tls)| {
                        let (from, to) = if *server_tls { (plain, tls) } else { (tls, plain) };
                        url.strip_prefix(from).map(|rest| format!("{to}{rest}"))
                    })
                    .unwrap_or_else(|| url.clone());
                write!(f, "the server at `{url}` {speaks}: use `{other}`")
            }
            ClientError::ChangedSinceRead { noun, name } => write!(
                f,
                "{noun} `{name}` was changed by someone else since this command read it; nothing was written"
            ),
            ClientError::Api {
                status: None,
                code,
                message,
            } => write!(f, "the server answered {}: {message}", codes::name(code.unwrap_or(2))),
            ClientError::Api {
                status: Some(status),
                code,
                message,
            } => {
                let code = code.map(codes::name).unwrap_or("");
                let status = StatusCode::from_u16(*status)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|_| status.to_string());
                if code.is_empty() {
                    write!(f, "the server answered {status}: {message}")
                } else {
                    write!(f, "the server answered {status} ({code}): {message}")
                }
            }
            ClientError::NoRoute { method, url } => write!(
                f,
                "this server has no route {method} {} (404 without an Armada error body): \
                 it is not an Armada server, or an older one without retry policy support",
                redact_url(url)
            ),
            ClientError::Unexpected {
                method,
                url,
                status,
                detail,
            } => {
                write!(
                    f,
                    "unexpected answer to {method} {}: HTTP {status}: {detail}",
                    redact_url(url)
                )
            }
            ClientError::Incompatible {
                kind,
                name,
                fields,
                grpc: false,
            } => write!(
                f,
                "the server is upstream Armada (no `{DIALECT_HEADER}: {DIALECT_V1}` header), which \
                 cannot store these fields of {kind} `{name}`: {}",
                fields.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")
            ),
            ClientError::Incompatible {
                kind,
                name,
                fields,
                grpc: true,
            } => write!(
                f,
                "Armada's gRPC API cannot carry these fields of {kind} `{name}` (they have no protobuf \
                 form): {}",
                fields.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")
            ),
            ClientError::BadAnswer { call, url, detail } => {
                write!(f, "unexpected answer to {call} from {}: {detail}", redact_url(url))
            }
            ClientError::Conflict { kind, name, attempts } => write!(
                f,
                "{kind} `{name}` was modified concurrently by another writer; gave up after {attempts} \
                 attempts to apply this change on top of the latest version, and the change is not applied"
            ),
            ClientError::Dropped { kind, name, fields } => write!(
                f,
                "the server acknowledged {kind} `{name}` but reading it back shows it dropped or \
                 changed: {}",
                fields.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

impl std::error::Error for ClientError {}

/// A client error as the CLI reports it: its words and its exit code.
impl From<ClientError> for crate::error::CliError {
    fn from(e: ClientError) -> Self {
        crate::error::CliError::new(e.exit_code(), e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, ClientError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_spec_table() {
        let api = |status, code| ClientError::Api {
            status: Some(status),
            code,
            message: String::new(),
        };
        assert_eq!(api(401, Some(16)).exit_code(), ExitCode::Auth);
        assert_eq!(api(403, Some(7)).exit_code(), ExitCode::Auth);
        assert_eq!(api(404, Some(5)).exit_code(), ExitCode::Failure);
        assert_eq!(api(409, Some(6)).exit_code(), ExitCode::Failure);
        assert_eq!(api(400, Some(9)).exit_code(), ExitCode::Failure);
        assert_eq!(api(400, Some(3)).exit_code(), ExitCode::InvalidInput);
        assert_eq!(api(500, Some(13)).exit_code(), ExitCode::Unreachable);
        assert_eq!(api(503, Some(14)).exit_code(), ExitCode::Unreachable);
        // A document this server or transport cannot store: invalid input for it.
        for grpc in [false, true] {
            let incompatible = ClientError::Incompatible {
                kind: "retry policy",
                name: "p".into(),
                fields: vec!["backoff".into()],
                grpc,
            };
            assert_eq!(incompatible.exit_code(), ExitCode::InvalidInput);
        }
        // gRPC: no HTTP status, the same exit code for the same meaning.
        let rpc = |code| ClientError::Api {
            status: None,
            code: Some(code),
            message: String::new(),
        };
        for (code, exit) in [
            (16, ExitCode::Auth),
            (7, ExitCode::Auth),
            (5, ExitCode::Failure),
            (6, ExitCode::Failure),
            (9, ExitCode::Failure),
            (10, ExitCode::Failure),
            (3, ExitCode::InvalidInput),
            (14, ExitCode::Unreachable),
            (13, ExitCode::Unreachable),
            (12, ExitCode::Unreachable),
        ] {
            assert_eq!(rpc(code).exit_code(), exit, "code {code}");
        }
        assert!(rpc(5).is_not_found() && rpc(10).is_conflict() && rpc(6).is_already_exists());
        assert!(
            !rpc(9).is_conflict(),
            "FailedPrecondition from a server is not a version conflict"
        );
        assert_eq!(rpc(5).to_string(), "the server answered NotFound: ");
    }
}
