//! The writes the commands make, over either transport (docs/reference/wire.md): the
//! dialect refusal before sending and the read-back after, and the read-modify-write that never loses a concurrent
//! writer's change.
//!
//! Must not: know routes, JSON or protobuf; it calls [`Client`]'s single requests only.
//!
//! - A read-back that differs from what was written is [`ClientError::Dropped`], exit 4: the
//!   server answered something unexpected, and the write must not be taken as done. A
//!   read-back whose version is newer than the write's shows a later writer's change, not a
//!   dropped field.
//! - A write based on a read is refused as a conflict when the resource changed since
//!   (REST: 412 to its `If-Match`; gRPC: the client's re-read just before the write, see
//!   `client::grpc`); [`modify_queue`] then re-reads and re-applies the edit up to
//!   [`CONFLICT_ATTEMPTS`] times, then fails with [`ClientError::Conflict`] (exit 1).

use std::time::Duration;

use super::error::{ClientError, Result};
use super::read_back::{diff_fields, queue_differences};
use super::transport::{log, Client, Noun, WriteOp};
use crate::model::{Queue, RetryPolicy};
use crate::wire;

/// How many times a read-modify-write is tried when others keep writing (kubectl's
/// `retry.DefaultRetry` tries 5 times with 10 ms steps and jitter; more here because a CLI
/// process per edit is slower than a controller loop, so races last longer).
pub const CONFLICT_ATTEMPTS: u32 = 10;

/// What a read-modify-write did.
#[derive(Debug, Clone, PartialEq)]
pub enum Modified {
    /// The edit changed nothing: nothing was sent.
    Unchanged,
    /// The edited queue was written (the value written).
    Written(Queue),
}

impl dyn Client + '_ {
    /// Creates or replaces a policy, with the dialect checks (docs/reference/wire.md): refused before sending when the
    /// server or the transport cannot store it; read back after and compared.
    pub fn write_policy(&self, op: WriteOp, policy: &RetryPolicy) -> Result<()> {
        write_policy(self, op, policy)
    }

    /// Creates or replaces (upserts) a queue, then reads it back and compares.
    pub fn write_queue(&self, op: WriteOp, queue: &Queue) -> Result<()> {
        write_queue(self, op, queue)
    }

    /// The pause before re-reading after a conflict (see [`pause`]).
    pub fn conflict_pause(&self, name: &str, attempt: u32) {
        pause(self, name, attempt)
    }

    /// Reads queue `name`, applies `edit` and writes the result, again on a conflict: see
    /// [`modify_queue`].
    pub fn modify_queue<E>(
        &self,
        name: &str,
        edit: impl FnMut(&mut Queue) -> std::result::Result<(), E>,
    ) -> std::result::Result<Modified, ModifyError<E>> {
        modify_queue(self, name, edit)
    }
}

/// Why a read-modify-write failed: the edit refused (its own error) or the server did.
#[derive(Debug)]
pub enum ModifyError<E> {
    Edit(E),
    Client(ClientError),
}

impl<E> From<ClientError> for ModifyError<E> {
    fn from(e: ClientError) -> Self {
        ModifyError::Client(e)
    }
}

/// The refusal of a policy this connection cannot store (docs/reference/wire.md: a design-dialect field
/// for an upstream server, or over gRPC), before anything is sent; also what a dry run says.
pub fn refuse_incompatible<C: Client + ?Sized>(c: &C, policy: &RetryPolicy) -> Result<()> {
    if c.is_v1()? {
        return Ok(());
    }
    let fields = policy.upstream_incompatibilities();
    if fields.is_empty() {
        return Ok(());
    }
    Err(ClientError::Incompatible {
        kind: "retry policy",
        name: policy.name.clone(),
        fields,
        grpc: c.is_grpc(),
    })
}

/// Creates or replaces a policy: refused before sending when the server (upstream Armada)
/// or the transport (gRPC) cannot store it; read back after and compared.
pub fn write_policy<C: Client + ?Sized>(c: &C, op: WriteOp, policy: &RetryPolicy) -> Result<()> {
    refuse_incompatible(c, policy)?;
    c.send_policy(op, policy)?;
    let written = c.version(Noun::Policy, &policy.name);
    let back = c.get_policy(&policy.name)?;
    // Another write landed after ours: the read-back shows theirs, not a dropped field.
    let overtaken = written.is_some() && c.version(Noun::Policy, &policy.name) != written;
    let fields = diff_fields(&wire::policy_to_json(policy), &wire::policy_to_json(&back));
    if fields.is_empty() || overtaken {
        Ok(())
    } else {
        Err(ClientError::Dropped {
            kind: "retry policy",
            name: policy.name.clone(),
            fields,
        })
    }
}

/// Creates or replaces (upserts) a queue, then reads it back and compares. A replace of a
/// queue read before is refused when it changed since ([`ClientError::is_conflict`]).
pub fn write_queue<C: Client + ?Sized>(c: &C, op: WriteOp, queue: &Queue) -> Result<()> {
    let (back, overtaken) = put_queue(c, op, queue)?;
    let fields = queue_differences(queue, &back);
    if fields.is_empty() || overtaken {
        Ok(())
    } else {
        Err(ClientError::Dropped {
            kind: "queue",
            name: queue.name.clone(),
            fields,
        })
    }
}

/// Writes and reads back; `overtaken` when the versions show another write landed after
/// this one (the read-back then shows theirs, and says nothing about ours).
fn put_queue<C: Client + ?Sized>(c: &C, op: WriteOp, queue: &Queue) -> Result<(Queue, bool)> {
    c.send_queue(op, queue)?;
    let written = c.version(Noun::Queue, &queue.name);
    let back = c.get_queue(&queue.name)?;
    let overtaken = written.is_some() && c.version(Noun::Queue, &queue.name) != written;
    Ok((back, overtaken))
}

/// Reads queue `name`, applies `edit`, and writes the result on condition that the queue is
/// still what was read; when another writer got in between, reads again and re-applies the
/// edit, up to [`CONFLICT_ATTEMPTS`] times with a short jittered pause, then gives up with
/// [`ClientError::Conflict`]. `edit` returns an error to stop without writing.
///
/// Against a server without versions (upstream: no ETag; gRPC) the read-back decides too:
/// when it no longer shows this edit, another writer overwrote it and the edit is tried
/// again; when it shows the edit plus other changes, those are another writer's and the edit
/// landed. A server that answers the same read-back to two writes of the edit drops those
/// fields itself: [`ClientError::Dropped`].
pub fn modify_queue<C: Client + ?Sized, E>(
    c: &C,
    name: &str,
    mut edit: impl FnMut(&mut Queue) -> std::result::Result<(), E>,
) -> std::result::Result<Modified, ModifyError<E>> {
    let mut current = c.get_queue(name)?;
    // The previous read-back that lacked this edit (servers without versions only).
    let mut last_back: Option<Queue> = None;
    for attempt in 1..=CONFLICT_ATTEMPTS {
        let mut queue = current.clone();
        edit(&mut queue).map_err(ModifyError::Edit)?;
        if queue == current {
            return Ok(Modified::Unchanged);
        }
        let (back, overtaken) = match put_queue(c, WriteOp::Update, &queue) {
            Ok(r) => r,
            Err(e) if e.is_conflict() => {
                pause(c, name, attempt);
                current = c.get_queue(name)?;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let fields = queue_differences(&queue, &back);
        if fields.is_empty() || overtaken {
            return Ok(Modified::Written(queue));
        }
        if c.version(Noun::Queue, name).is_some() {
            // A versioned server answered our write and nobody wrote since: the
            // difference is the server's own doing.
            return Err(ClientError::Dropped {
                kind: "queue",
                name: name.to_string(),
                fields,
            }
            .into());
        }
        // No versions: does the read-back still carry this edit?
        let mut again = back.clone();
        edit(&mut again).map_err(ModifyError::Edit)?;
        if again == back {
            return Ok(Modified::Written(back));
        }
        // The same answer twice to two writes of the edit: nobody else is writing, the
        // server itself drops the fields.
        if last_back.as_ref() == Some(&back) {
            return Err(ClientError::Dropped {
                kind: "queue",
                name: name.to_string(),
                fields,
            }
            .into());
        }
        last_back = Some(back.clone());
        pause(c, name, attempt);
        current = back;
    }
    Err(ClientError::Conflict {
        kind: "queue",
        name: name.to_string(),
        attempts: CONFLICT_ATTEMPTS,
    }
    .into())
}

/// The pause before re-reading after a conflict: 10 ms doubling per attempt, with up to
/// 100% jitter so that racing writers spread out instead of colliding again.
pub fn pause<C: Client + ?Sized>(c: &C, name: &str, attempt: u32) {
    let base = 10u64 << attempt.min(5);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    let jitter = (nanos ^ (std::process::id() as u64).wrapping_mul(2654435761)) % (base + 1);
    let pause = Duration::from_millis(base + jitter);
    if c.verbose() {
        log(&format!(
            "`{name}` changed since it was read (conflict {attempt} of {CONFLICT_ATTEMPTS}); re-reading in {}ms",
            pause.as_millis()
        ));
    }
    std::thread::sleep(pause);
}
