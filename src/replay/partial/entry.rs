//! One entry of a partial, as `merge` reads it: its position first, from its leading bytes and
//! without decoding the rest, then what it says ([`Entry`], [`Item`]): a job's report, a
//! changed job (or, for a merge that prints JSON, its final record copied as it is:
//! [`Record`]), a missing queue's first job, or an entry that was not replayed; or, in a
//! `suggest` shard's partial, what it learned, in its command's shape ([`decode_learned`]).
//!
//! Owns: the decoding of an entry's JSON and every check of one entry on its own (it says one
//! thing, `n` only before a final record, a record's transition is its final states', steps
//! within their codes), in words that follow the file's name. Must not: read a file (that is
//! `read`), compare entries with each other (that is `streams`), or know what a command does
//! with them.

use serde::Deserialize;

use crate::engine::{JobReport, RuleRef};
use crate::model::duration::GoDuration;
use crate::model::failure_history::Final;
use crate::model::validate::MAX_RULES;
use crate::replay::compare::{JobDiff, Side, Transition};
use crate::replay::source::Pos;
use crate::replay::spool::Changed;

use super::format::{steps_of, MoreIn};

/// A changed job's record as read back (`-o json`'s shape: the output module writes it,
/// these names must follow it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RecordIn {
    job: String,
    baseline: SideIn,
    candidate: SideIn,
    transition: Option<String>,
    compute_added: String,
    compute_removed: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SideIn {
    #[serde(rename = "final")]
    final_state: Final,
    retries: u32,
    delay: String,
    runs: usize,
    /// A Pending side's: `null` here, always (the merge estimates it); anything else is
    /// refused.
    #[serde(default, rename = "estimate")]
    _estimate: Option<()>,
}

fn duration(field: &str, text: &str) -> Result<GoDuration, String> {
    GoDuration::parse(text).map_err(|_| {
        format!("its `{field}` `{text}` is not a duration: expected one as `-o json` writes it, such as `1m30s`")
    })
}

impl SideIn {
    fn side(self, name: &str, runs_left: u32, compute: u64) -> Result<Side, String> {
        Ok(Side {
            final_state: self.final_state,
            retries: self.retries,
            delay: duration(&format!("{name}.delay"), &self.delay)?,
            runs: self.runs,
            runs_left,
            compute: GoDuration(compute),
        })
    }
}

/// A changed job from its record and its rest. Without a rest (a final record past the jobs
/// that keep their steps: [`Recorder::change`](super::Recorder::change)), what only the
/// shard's totals and the estimates read (each side's run time and runs left, the job's
/// resources, class and depth) is zero or none: no output prints it for such a job.
fn changed(record: RecordIn, more: Option<MoreIn>) -> Result<Changed, String> {
    let MoreIn(b_left, b_compute, c_left, c_compute, resources, class, depth, steps) =
        more.unwrap_or(MoreIn(0, 0, 0, 0, None, None, 0, None));
    let diff = JobDiff {
        job: record.job,
        baseline: record.baseline.side("baseline", b_left, b_compute)?,
        candidate: record.candidate.side("candidate", c_left, c_compute)?,
        compute_added: duration("computeAdded", &record.compute_added)?,
        compute_removed: duration("computeRemoved", &record.compute_removed)?,
        resources,
    };
    // The record's transition is the one its final states make: one written by hand
    // otherwise would be printed as it is by a merge that copies records.
    let transition = diff.transition().map(Transition::name);
    if record.transition.as_deref() != transition {
        return Err(format!(
            "its `transition` {} is not the one of its final states ({})",
            record.transition.map_or("null".into(), |t| format!("`{t}`")),
            transition.map_or("null".into(), |t| format!("`{t}`")),
        ));
    }
    Ok(Changed {
        diff,
        class,
        depth,
        steps: steps_of(steps)?,
    })
}

/// One entry as read back.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EntryIn {
    at: Pos,
    missing_queue: Option<String>,
    job_id: Option<String>,
    job: Option<Box<JobReport>>,
    /// With `change`: the record's length, when it is final.
    n: Option<u64>,
    change: Option<Box<RecordIn>>,
    more: Option<Box<MoreIn>>,
    error: Option<String>,
    invalid: Option<String>,
    left_out: Option<String>,
}

/// What an entry says.
#[derive(Debug)]
pub enum Item {
    /// A plain replay's job.
    Job(Box<JobReport>),
    /// A comparison's changed job.
    Change(Box<Changed>),
    /// A comparison's changed job with no side Pending, as its JSON record, not read
    /// (asked for by a merge that prints JSON: [`decode_entry`]).
    Record(Record),
    /// A job listed for its missing queue alone.
    Fallback(String),
    Error(String),
    /// An invalid history file's diagnostics, rendered.
    Invalid(String),
    LeftOut(String),
}

/// A changed job's entry whose record is final (`"n":LEN` before it): the record copied as
/// it is, the rest read only when it must be ([`Record::changed`]).
#[derive(Debug)]
pub struct Record {
    json: Vec<u8>,
    record: std::ops::Range<usize>,
    number: u64,
}

impl Record {
    /// The record: what `-o json` prints for the job.
    pub fn json(&self) -> &[u8] {
        &self.json[self.record.clone()]
    }

    /// The whole entry read into a changed job; an error names the partial (`name`) and
    /// the entry.
    pub fn changed(&self, name: &str) -> Result<Changed, String> {
        match decode_entry(name, self.number, &self.json)?.item {
            Item::Change(c) => Ok(*c),
            _ => Err(format!("`{name}` is damaged: entry {}: not a changed job", self.number)),
        }
    }

    /// The job it names (read only for an error's words).
    pub fn job(&self, name: &str) -> String {
        self.changed(name).map_or_else(|_| "?".into(), |c| c.diff.job)
    }
}

/// `{"at":[A,B],"n":LEN,"change":` then LEN bytes of a record then `,"more":` or the
/// entry's end: where the
/// record is. `None` for any other entry (or one whose bytes do not hold that shape).
fn final_record(json: &[u8]) -> Option<std::ops::Range<usize>> {
    let rest = past_at(json)?;
    let rest = rest.strip_prefix(b",\"n\":")?;
    let (len, rest) = leading_number(rest)?;
    let len = usize::try_from(len).ok()?;
    let rest = rest.strip_prefix(b",\"change\":")?;
    let start = json.len() - rest.len();
    let record = rest.get(..len)?;
    let after = &rest[len..];
    if !(record.starts_with(b"{\"job\":")
        && record.ends_with(b"}")
        && (after == b"}" || after.starts_with(b",\"more\":")))
    {
        return None;
    }
    Some(start..start + len)
}

/// One entry: where, the missing queue it is the first job of (in its shard), and what.
#[derive(Debug)]
pub struct Entry {
    pub at: Pos,
    pub missing_queue: Option<String>,
    pub item: Item,
}

impl TryFrom<EntryIn> for Entry {
    type Error = String;

    fn try_from(e: EntryIn) -> Result<Entry, String> {
        let change = match (e.change, e.more) {
            (None, None) => None,
            (None, Some(_)) => return Err("a `more` must follow a changed job's `change`".into()),
            (Some(_), None) if e.n.is_none() => {
                return Err("a changed job without an `n` (a side Pending) must have its `more`".into())
            }
            (Some(record), more) => Some(Box::new(changed(*record, more.map(|m| *m))?)),
        };
        if e.n.is_some() && change.as_ref().is_none_or(|c| c.diff.pending()) {
            return Err("only a changed job with no side Pending has an `n`".into());
        }
        if let Some(job) = &e.job {
            rules_within(job)?;
        }
        let items = [
            e.job.map(Item::Job),
            change.map(Item::Change),
            e.job_id.map(Item::Fallback),
            e.error.map(Item::Error),
            e.invalid.map(Item::Invalid),
            e.left_out.map(Item::LeftOut),
        ];
        let mut items = items.into_iter().flatten();
        let (Some(item), None) = (items.next(), items.next()) else {
            return Err("an entry must say one thing: a job, a change, an error, …".into());
        };
        Ok(Entry {
            at: e.at,
            missing_queue: e.missing_queue,
            item,
        })
    }
}

/// Every decision's rule is one a policy can have ([`MAX_RULES`] a policy): the summary
/// counts decisions by rule, in a slot a rule, so a rule index no shard writes would be an
/// overflow or a table of that many slots.
fn rules_within(job: &JobReport) -> Result<(), String> {
    for (k, run) in job.runs.iter().enumerate() {
        if let Some(RuleRef::Index(i)) = run.decision.as_ref().and_then(|d| d.rule) {
            if i >= MAX_RULES {
                return Err(format!(
                    "run {k}'s decision names rule `{i}`, past the {MAX_RULES} rules a policy can have"
                ));
            }
        }
    }
    Ok(())
}

/// `{"at":[A,B],…`: what every recorder writes first, read without decoding the rest.
pub(super) fn quick_at(json: &[u8]) -> Option<Pos> {
    at_prefix(json).map(|(at, _)| at)
}

/// `{"at":[A,B]`: the position, and the bytes after it.
pub(super) fn at_prefix(json: &[u8]) -> Option<(Pos, &[u8])> {
    at_shape(json, leading_number).map(|(a, b, rest)| (Pos(a, b), rest))
}

/// What follows `{"at":[A,B]`, its numbers passed over, not read: the merge has read the
/// position already ([`quick_at`]), and reads the rest of a changed job's entry here.
pub(super) fn past_at(json: &[u8]) -> Option<&[u8]> {
    at_shape(json, past_digits).map(|(_, _, rest)| rest)
}

/// What follows the decimal digits `bytes` begins with (`None`: no digit), as [`at_shape`]
/// takes a number: nothing made of the digits.
fn past_digits(bytes: &[u8]) -> Option<((), &[u8])> {
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    (digits > 0).then(|| ((), &bytes[digits..]))
}

/// The shape of `{"at":[A,B]`, each number taken by `number` (what it makes of the digits,
/// and what follows them), and the bytes after it.
fn at_shape<T>(json: &[u8], number: impl Fn(&[u8]) -> Option<(T, &[u8])>) -> Option<(T, T, &[u8])> {
    let rest = json.strip_prefix(b"{\"at\":[")?;
    let (a, rest) = number(rest)?;
    let (b, rest) = number(rest.strip_prefix(b",")?)?;
    Some((a, b, rest.strip_prefix(b"]")?))
}

/// The decimal digits `bytes` begins with, as a number (`None`: no digit, or past `u64`),
/// and what follows them. A merge reads every entry's position this way.
pub(super) fn leading_number(bytes: &[u8]) -> Option<(u64, &[u8])> {
    // One pass (counting the digits first, then reading them, took twice the instructions),
    // unchecked for the first 19 digits, which never overflow a `u64`; checked past them.
    let digit = |i: usize| bytes.get(i).map(|b| b.wrapping_sub(b'0')).filter(|&d| d <= 9);
    let mut n: u64 = 0;
    let mut digits = 0;
    while digits < 19 {
        let Some(d) = digit(digits) else { break };
        n = n * 10 + u64::from(d);
        digits += 1;
    }
    while let Some(d) = digit(digits) {
        n = n.checked_mul(10)?.checked_add(u64::from(d))?;
        digits += 1;
    }
    (digits > 0).then(|| (n, &bytes[digits..]))
}

/// The position of an entry.
#[derive(Deserialize)]
pub(super) struct AtOnly {
    pub(super) at: Pos,
}

/// An entry of the partial `name`, its `number`th, at `at` (its position, read already), as
/// a merge printing JSON reads it: a changed job whose record is final is left as that record
/// ([`Item::Record`]), the rest not read; any other entry decoded ([`decode_entry`]).
pub fn decode_for_records(name: &str, at: Pos, number: u64, json: Vec<u8>) -> Result<Entry, String> {
    match final_record(&json) {
        Some(record) => Ok(Entry {
            at,
            missing_queue: None,
            item: Item::Record(Record { json, record, number }),
        }),
        _ => decode_entry(name, number, &json),
    }
}

/// An entry of a `suggest` shard's partial, `{"at":[A,B],"learned":…}`
/// ([`Recorder::learned`](super::Recorder::learned)): what it learned, in the shape `T` its
/// command reads (or `Counts`, to check its numbers as a partial's totals are checked). An
/// error names the partial `name` and the entry, its `number`th.
pub fn decode_learned<T: serde::de::DeserializeOwned>(name: &str, number: u64, json: &[u8]) -> Result<T, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct LearnedIn<T> {
        /// Read already ([`quick_at`]).
        #[serde(rename = "at")]
        _at: serde::de::IgnoredAny,
        learned: T,
    }
    serde_json::from_slice::<LearnedIn<T>>(json)
        .map(|e| e.learned)
        .map_err(|e| format!("`{name}` is damaged: entry {number}: {e}"))
}

/// An entry of the partial `name`, its `number`th, decoded; an error names both.
pub fn decode_entry(name: &str, number: u64, json: &[u8]) -> Result<Entry, String> {
    let bad = |why: String| format!("`{name}` is damaged: entry {number}: {why}");
    let e: EntryIn = serde_json::from_slice(json).map_err(|e| bad(e.to_string()))?;
    Entry::try_from(e).map_err(bad)
}
