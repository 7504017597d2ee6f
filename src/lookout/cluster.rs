//! The cluster's stored state (docs/serve.md): the retry policies and queues upstream's server
//! keeps in Lookout's PostgreSQL, read-only.
//!
//! Owns: the three statements that read them (`retry_policy`, `queue`, `queue_retry_policy`,
//! each in upstream's own order: policies and queues by name, attachments by `ordinal`),
//! decoding each `definition` (protobuf `api.RetryPolicy` / `api.Queue`) through
//! `armada_api`'s conversion, the one decoder of those messages, and a queue's policy list
//! from `queue_retry_policy` (the serialized queue's `retry_policies` is not the truth:
//! upstream's repository overwrites it the same way). A row that does not decode is a
//! [`BadRow`] naming its table and name, never the end of the read. Must not: print, decide
//! exit codes, or write to the database.
//!
//! Hostile rows cost bounded work: a `definition` is read at most [`DEFINITION_MAX`] bytes
//! (gRPC's message limit: upstream could not have served a larger one), a longer one is a
//! bad row.
//!
//! A field the vendored contract does not define (a row written by a newer Armada) is never
//! dropped without a word, as prost's decode would: in a policy it makes the row bad (a rule
//! read without it could match what the cluster's does not), in a queue it is named with the
//! fields the model does not hold.

use std::fmt;

use prost::Message as _;

use super::db::{query_error, Db};
use crate::armada_api::{
    api, listed_unknown_fields, policy_from_proto, queue_from_proto, unheld_fields, unknown_fields, UnknownField,
};
use crate::error::CliError;
use crate::model::{Queue, RetryPolicy};

/// The tables read, besides the history's (migrations `007_queue.sql`,
/// `035_create_retry_policy.sql`).
pub const CLUSTER_TABLES: &[&str] = &["queue", "retry_policy", "queue_retry_policy"];

/// Bytes of a `definition` read: gRPC's default message limit, as upstream serves it.
pub const DEFINITION_MAX: usize = 4 * 1024 * 1024;

/// What the cluster runs, as read.
#[derive(Debug, Default)]
pub struct ClusterState {
    /// By name.
    pub policies: Vec<RetryPolicy>,
    /// By name, each with its policies in `ordinal` order.
    pub queues: Vec<Queue>,
    /// Queues with fields that were not read: the queue is in `queues` without them.
    pub unread_fields: Vec<Unread>,
    /// Rows that did not decode, policies first, each table by name.
    pub bad: Vec<BadRow>,
}

/// What of one queue's `definition` was not read.
#[derive(Debug)]
pub struct Unread {
    pub queue: String,
    /// Fields the model does not hold (`resourceLimits`, …), none of which changes a retry
    /// decision.
    pub unheld: Vec<&'static str>,
    /// Fields the contract does not define: what they mean is not known.
    pub unknown: Vec<UnknownField>,
}

impl Unread {
    /// The queue as a bad row, for `get`: printing it without these fields would misstate
    /// what is stored.
    fn bad_row(&self) -> BadRow {
        let mut parts = Vec::new();
        if !self.unheld.is_empty() {
            parts.push(unheld_fields(&self.unheld));
        }
        if !self.unknown.is_empty() {
            parts.push(format!("{UNKNOWN}: {}", listed_unknown_fields(&self.unknown)));
        }
        self.row(parts.join("; "))
    }

    /// What a replay notes: the fields the model does not hold, which change no retry
    /// decision. A line for after `note: `.
    pub fn replay_note(&self) -> Option<String> {
        (!self.unheld.is_empty()).then(|| {
            let one = self.unheld.len() == 1;
            let why = format!(
                "{} not read: {} not change a retry decision",
                crate::diag::one_of(&self.unheld),
                if one { "it does" } else { "they do" }
            );
            self.row(why).to_string()
        })
    }

    /// What a replay warns of: fields whose meaning is not known. A line for after
    /// `warning: `.
    pub fn replay_warning(&self) -> Option<String> {
        (!self.unknown.is_empty()).then(|| {
            let one = self.unknown.len() == 1;
            let why = format!(
                "{UNKNOWN}: {}; not read, and whether {} a retry decision is not known",
                listed_unknown_fields(&self.unknown),
                if one { "it changes" } else { "they change" }
            );
            self.row(why).to_string()
        })
    }

    /// `why`, said of this queue's row.
    fn row(&self, why: String) -> BadRow {
        BadRow {
            table: "queue",
            name: self.queue.clone(),
            why,
        }
    }
}

/// How a row with fields the contract does not define is described.
const UNKNOWN: &str =
    "has fields not in retryctl's copy of Armada's API (upstream 207cc9e; a newer Armada may have written them)";

/// A row whose `definition` cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRow {
    pub table: &'static str,
    pub name: String,
    pub why: String,
}

impl ClusterState {
    /// Queues with fields that were not read become bad rows, for a reader that shows
    /// queues (`get`): printing them without those fields would misstate what is stored.
    /// A replay keeps them, and says what was not read ([`Unread::replay_note`],
    /// [`Unread::replay_warning`]).
    pub fn refuse_unread_fields(&mut self) {
        for unread in std::mem::take(&mut self.unread_fields) {
            self.queues.retain(|q| q.name != unread.queue);
            self.bad.push(unread.bad_row());
        }
        self.bad
            .sort_by(|a, b| (a.table != "retry_policy", &a.name).cmp(&(b.table != "retry_policy", &b.name)));
    }
}

impl fmt::Display for BadRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "table `{}` row `{}`: column `definition`: {}",
            self.table, self.name, self.why
        )
    }
}

impl BadRow {
    /// The row is the policy (or queue) `name`.
    pub fn is(&self, table: &str, name: &str) -> bool {
        self.table == table && self.name == name
    }
}

/// A row's name and its decoded definition, or why it does not decode.
type Definition<T> = (String, Result<T, String>);

/// Every row of `table` (`name`, `definition`) by name, its definition (at most
/// `DEFINITION_MAX` bytes read) decoded by `decode`, or why it does not decode.
fn definitions<T>(
    db: &Db,
    table: &str,
    decode: impl Fn(&str, &[u8]) -> Result<T, String>,
) -> Result<Vec<Definition<T>>, CliError> {
    let cap = DEFINITION_MAX + 1;
    let rows = query(
        db,
        &format!("SELECT name, substring(definition FROM 1 FOR {cap}) FROM {table} ORDER BY name"),
    )?;
    Ok(rows
        .iter()
        .map(|row| {
            let name = text(row, 0);
            let decoded = definition(row).and_then(|b| decode(&name, b));
            (name, decoded)
        })
        .collect())
}

/// Reads every policy, queue and attachment (the tables are small: one row per policy or
/// queue). A connection that fails midway is an error (exit 4), a row that does not decode
/// a [`BadRow`].
pub fn read(db: &Db) -> Result<ClusterState, CliError> {
    let mut state = ClusterState::default();
    for (name, decoded) in definitions(db, "retry_policy", policy)? {
        match decoded {
            Ok(p) => state.policies.push(p),
            Err(why) => state.bad.push(BadRow {
                table: "retry_policy",
                name,
                why,
            }),
        }
    }
    for (name, decoded) in definitions(db, "queue", queue)? {
        match decoded {
            Ok((q, unread)) => {
                if let Some(unread) = unread {
                    state.unread_fields.push(unread);
                }
                state.queues.push(q);
            }
            Err(why) => state.bad.push(BadRow {
                table: "queue",
                name,
                why,
            }),
        }
    }
    // Ties in `ordinal` (upstream never writes them) are broken by name, so the order is
    // the same on every read.
    let rows = query(
        db,
        "SELECT queue_name, policy_name FROM queue_retry_policy ORDER BY queue_name, ordinal, policy_name",
    )?;
    let mut index = std::collections::HashMap::with_capacity(state.queues.len());
    for (i, q) in state.queues.iter_mut().enumerate() {
        q.retry_policies.clear();
        index.insert(q.name.clone(), i);
    }
    for row in &rows {
        // A queue whose row did not decode has no entry: its attachments go with it.
        if let Some(&i) = index.get(&text(row, 0)) {
            state.queues[i].retry_policies.push(text(row, 1));
        }
    }
    Ok(state)
}

fn query(db: &Db, statement: &str) -> Result<Vec<tokio_postgres::Row>, CliError> {
    db.rt
        .block_on(db.client.query(statement, &[]))
        .map_err(|e| query_error(&e, &db.shown))
}

/// A `text` column; the primary keys are never NULL, and a value the driver cannot read as
/// a string (a database in `SQL_ASCII` with other bytes) shows as the empty name.
fn text(row: &tokio_postgres::Row, i: usize) -> String {
    row.try_get::<_, String>(i).unwrap_or_default()
}

fn definition(row: &tokio_postgres::Row) -> Result<&[u8], String> {
    let bytes: Option<&[u8]> = row.try_get(1).map_err(|e| format!("cannot be read as `bytea` ({e})"))?;
    let bytes = bytes.ok_or_else(|| "NULL, which the schema does not allow".to_string())?;
    if bytes.len() > DEFINITION_MAX {
        return Err(format!(
            "larger than {} MiB (gRPC's message limit: upstream cannot serve it)",
            DEFINITION_MAX >> 20
        ));
    }
    Ok(bytes)
}

/// A `retry_policy.definition`: `api.RetryPolicy` bytes named like its row.
fn policy(name: &str, bytes: &[u8]) -> Result<RetryPolicy, String> {
    let p = api::RetryPolicy::decode(bytes).map_err(|e| format!("not an `api.RetryPolicy` message ({e})"))?;
    let unknown = unknown_fields::<api::RetryPolicy>(bytes);
    if !unknown.is_empty() {
        return Err(format!(
            "{UNKNOWN}: {}; a policy read without them could decide differently from the cluster's",
            listed_unknown_fields(&unknown)
        ));
    }
    let policy = policy_from_proto(&p).map_err(|d| crate::diag::describe_errors(&d))?;
    same_name(name, &policy.name)?;
    Ok(policy)
}

/// A `queue.definition`: `api.Queue` bytes named like its row; what of it was not read.
fn queue(name: &str, bytes: &[u8]) -> Result<(Queue, Option<Unread>), String> {
    let q = api::Queue::decode(bytes).map_err(|e| format!("not an `api.Queue` message ({e})"))?;
    let (queue, unheld) = queue_from_proto(&q);
    same_name(name, &queue.name)?;
    // A field unknown inside one the model does not hold at all is not read either way: the
    // outer field is named, once.
    let unknown: Vec<UnknownField> = unknown_fields::<api::Queue>(bytes)
        .into_iter()
        .filter(|f| f.inside().is_none_or(|outer| !unheld.contains(&outer)))
        .collect();
    let unread = (!unheld.is_empty() || !unknown.is_empty()).then(|| Unread {
        queue: queue.name.clone(),
        unheld,
        unknown,
    });
    Ok((queue, unread))
}

fn same_name(row: &str, defined: &str) -> Result<(), String> {
    if row != defined {
        return Err(format!("the definition is named `{defined}`, not `{row}` like its row"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_names_every_field_not_read() {
        let unread = Unread {
            queue: "q".into(),
            unheld: vec!["resourceLimits", "labelsDeprecated"],
            unknown: vec![UnknownField {
                number: 99,
                message: "api.Queue",
                path: String::new(),
            }],
        };
        assert_eq!(
            unread.bad_row().to_string(),
            "table `queue` row `q`: column `definition`: has fields retryctl does not handle: `resourceLimits`, \
             `labelsDeprecated`; has fields not in retryctl's copy of Armada's API (upstream 207cc9e; a newer Armada \
             may have written them): unknown field number `99` of api.Queue"
        );
        assert_eq!(
            unread.replay_note().unwrap(),
            "table `queue` row `q`: column `definition`: `resourceLimits`, `labelsDeprecated` not read: they do not \
             change a retry decision"
        );
        assert_eq!(
            unread.replay_warning().unwrap(),
            "table `queue` row `q`: column `definition`: has fields not in retryctl's copy of Armada's API (upstream \
             207cc9e; a newer Armada may have written them): unknown field number `99` of api.Queue; not read, and \
             whether it changes a retry decision is not known"
        );
        let nothing = Unread {
            unheld: vec![],
            unknown: vec![],
            ..unread
        };
        assert_eq!((nothing.replay_note(), nothing.replay_warning()), (None, None));
    }

    /// Field 99 (a varint) after an encoded message, as a newer Armada could write it.
    fn with_field_99(message: impl prost::Message) -> Vec<u8> {
        [message.encode_to_vec(), vec![0x98, 0x06, 0x01]].concat()
    }

    #[test]
    fn fields_the_contract_does_not_define_are_never_dropped() {
        let q = api::Queue {
            name: "q".into(),
            ..Default::default()
        };
        let unread = queue("q", &with_field_99(q.clone())).unwrap().1.unwrap();
        assert!(unread.unheld.is_empty());
        assert_eq!(
            listed_unknown_fields(&unread.unknown),
            "unknown field number `99` of api.Queue"
        );
        // Inside a field the model does not hold: that field is named, not its inside too.
        let mut limits = api::PriorityClassResourceLimits::default().encode_to_vec();
        prost::encoding::uint64::encode(7, &1, &mut limits);
        let mut entry = Vec::new();
        prost::encoding::string::encode(1, &"pc".to_string(), &mut entry);
        prost::encoding::bytes::encode(2, &limits, &mut entry);
        let mut bytes = q.encode_to_vec();
        prost::encoding::bytes::encode(7, &entry, &mut bytes);
        let unread = queue("q", &bytes).unwrap().1.unwrap();
        assert_eq!(unread.unheld, ["resourceLimitsByPriorityClassName"]);
        assert!(unread.unknown.is_empty(), "{:?}", unread.unknown);
        // A policy: refused, the field named.
        let p = api::RetryPolicy {
            name: "p".into(),
            ..Default::default()
        };
        assert_eq!(
            policy("p", &with_field_99(p)).unwrap_err(),
            "has fields not in retryctl's copy of Armada's API (upstream 207cc9e; a newer Armada may have written \
             them): unknown field number `99` of api.RetryPolicy; a policy read without them could decide differently \
             from the cluster's"
        );
    }

    #[test]
    fn definitions_that_do_not_decode_say_why() {
        assert_eq!(
            policy("p", b"\xff\xff").unwrap_err(),
            "not an `api.RetryPolicy` message (failed to decode Protobuf message: invalid varint)"
        );
        let unset = api::RetryPolicy {
            name: "p".into(),
            retry_limit: 3,
            ..Default::default()
        };
        assert_eq!(
            policy("p", &unset.encode_to_vec()).unwrap_err(),
            "defaultAction: must be `Fail` or `Retry`, got `RETRY_ACTION_UNSPECIFIED` (0): the action is not set"
        );
        let other = api::RetryPolicy {
            name: "q".into(),
            default_action: 1,
            ..Default::default()
        };
        assert_eq!(
            policy("p", &other.encode_to_vec()).unwrap_err(),
            "the definition is named `q`, not `p` like its row"
        );
        assert_eq!(
            queue("q", b"\x0a").unwrap_err(),
            "not an `api.Queue` message (failed to decode Protobuf message: Queue.name: invalid varint)"
        );
        let row = BadRow {
            table: "retry_policy",
            name: "p".into(),
            why: "x".into(),
        };
        assert_eq!(row.to_string(), "table `retry_policy` row `p`: column `definition`: x");
    }
}
