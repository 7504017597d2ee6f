//! The partial file's format (docs/past-one-machine.md, "The partial file"): what its bytes
//! are, as its writer and its reader both need them.
//!
//! Owns: the [`VERSION`] and the strings that frame a partial (what it begins with, where its
//! header ends and its end begins, where the seal goes), the [`Header`] and the run's
//! [`fingerprint`], the [`End`] as written and as read back ([`EndIn`]) with a database's
//! [`Lookout`] counts, the [`Seal`], and the wire shape of a changed job's rest (`MoreOut`,
//! `MoreIn`; its steps as numbers, `StepsOut` and `steps_of`), both ways in one place so that
//! writing and reading cannot drift apart. Must not: write or read a file (that is `write` and
//! `read`), or decode a whole entry (that is `entry`).

use serde::{Deserialize, Serialize};

use crate::model::failure_history::{Outcome, Resources};
use crate::replay::compare::{RunStep, Step, Steps};
use crate::replay::estimate::FailureClass;
use crate::replay::shard::Shard;
use crate::replay::shard_ids::FileIds;
use crate::replay::source::ExportTotals;
use crate::replay::spool::Changed;

/// The version this build writes and reads; a partial of another one is refused. 3: a
/// changed job is its record as `-o json` prints it, then the rest as an array
/// ([`Recorder::change`](super::Recorder::change)); 4: a step is one number and its class
/// ([`StepsOut`]); 5: a changed job with no side Pending past the first of its transition
/// that keep their steps has no rest; 6: a shard of a directory of files lists the job ids
/// it replayed, by file, in its end (`jobIds`), which `merge` checks across the shards.
pub const VERSION: u64 = 6;

/// How a partial begins: what tells one from any other JSON.
pub(super) const MAGIC: &str = "{\"partial\":\"retryctl\",\"version\":";

/// Whether `start` (a file's first bytes, at least `MAGIC`'s length when the file is that
/// long) begins as a partial result does (`merge DIR` reads only those).
pub fn looks_like_partial(start: &[u8]) -> bool {
    start.starts_with(MAGIC.as_bytes())
}
/// The end of the header line, and the start of the end line.
pub(super) const ENTRIES: &str = ",\"entries\":[";
pub(super) const END: &str = "],\"end\":";
/// What closes the end line: the seal of every byte before it ([`Seal`]), hex, then `"}`. A partial
/// is input: one edited by hand (or by anything but its recorder) is refused, not trusted.
pub(super) const SEAL: &str = ",\"xxh3\":\"";

/// The seal of a partial's bytes: XXH3-128, hex. A checksum, not a signature: it finds a
/// partial damaged or edited since its shard wrote it; what a partial resealed by hand says
/// is checked as numbers ([`counts`](super::counts)) and by `merge`.
pub type Seal = xxhash_rust::xxh3::Xxh3;

/// A seal's value as a partial writes it.
pub fn seal_hex(seal: &Seal) -> String {
    format!("{:032x}", seal.digest128())
}

/// A partial's first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always `retryctl`.
    pub partial: String,
    pub version: u64,
    /// The retryctl that wrote it.
    pub retryctl: String,
    pub shard: ShardOut,
    /// SHA-256 of the inputs that change the answer, hex.
    pub fingerprint: String,
    /// What the command's output needs besides the entries and totals (the command's own
    /// shape; `command` says which).
    pub run: serde_json::Value,
}

/// `shard` in a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardOut {
    pub index: u64,
    pub count: u64,
}

impl From<Shard> for ShardOut {
    fn from(s: Shard) -> ShardOut {
        ShardOut {
            index: s.index,
            count: s.count,
        }
    }
}

impl Header {
    pub fn new(shard: Shard, fingerprint: String, run: serde_json::Value) -> Header {
        Header {
            partial: "retryctl".into(),
            version: VERSION,
            retryctl: env!("CARGO_PKG_VERSION").into(),
            shard: shard.into(),
            fingerprint,
            run,
        }
    }
}

/// The fingerprint of a run's inputs: SHA-256 of their JSON, hex. The command gathers them
/// (its run, its policies, its source, the number of shards): equal fingerprints, the same
/// answer from the same jobs.
pub fn fingerprint(inputs: &serde_json::Value) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"retryctl partial ");
    h.update(VERSION.to_string().as_bytes());
    h.update(b" ");
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(b"\n");
    // A `Value` always serializes.
    h.update(serde_json::to_string(inputs).unwrap_or_default().as_bytes());
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A partial's last part, its totals in the command's own type: written straight from it, not
/// through a `serde_json::Value`, whose numbers stop at 64 bits (a shard's sums of nanoseconds
/// × thousandths of a device pass that at about 5,000 device-hours).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct End<T> {
    /// Entries before it.
    pub entries: u64,
    /// Some job got the policies given on the command line.
    pub used_given: bool,
    /// The digest of the history, hex (`None`: a source that is not files, whose
    /// identity the fingerprint holds).
    pub source: Option<String>,
    /// The shard's totals, in the command's own shape.
    pub totals: T,
    /// A database's export: the queue and what the shard's export read and left out (the
    /// summary `merge` says after the answer, as the command does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookout: Option<Lookout>,
    /// A directory of files: the job ids the shard replayed, by file
    /// ([`shard_ids`](crate::replay::shard_ids)), for `merge` to find a job two files give.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_ids: Option<Vec<FileIds>>,
}

/// What a shard's Lookout export read: its queue and counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lookout {
    pub queue: String,
    pub totals: ExportTotals,
}

/// A partial's end as read back: [`End`] with its totals and its job ids in the shapes the
/// reader asks for (skipped, [`serde::de::IgnoredAny`], until they are needed).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct EndIn<T, J = serde::de::IgnoredAny> {
    pub entries: u64,
    pub used_given: bool,
    pub source: Option<String>,
    pub totals: T,
    #[serde(default)]
    pub lookout: Option<Lookout>,
    /// [`End::job_ids`]; absent, `None`.
    pub job_ids: Option<J>,
}

/// A changed job's rest, after its record (which a Pending side's estimate aside, is what
/// `-o json` prints): `[baselineRunsLeft, baselineCompute, candidateRunsLeft,
/// candidateCompute, resources, class, depth, steps]`, durations in nanoseconds, steps as
/// [`StepsOut`].
#[derive(Serialize)]
pub(super) struct MoreOut<'a>(
    u32,
    u64,
    u32,
    u64,
    &'a Option<Resources>,
    &'a Option<FailureClass>,
    u32,
    StepsOut<'a>,
);

/// A changed job's steps as a partial holds them: `[[[code, class], …], gap]`, each run as
/// one number for its outcome and both sides' steps (`outcome × 36 + baseline × 6 +
/// candidate`, by their places in `Outcome::ALL` and `Step::ALL`) and its failure class;
/// a run's number is its place (after the gap, the gap's count added). The shards of a plan
/// write the steps of up to 500 jobs per transition each, the most a shard writes, and
/// N shards N times as many: the names of outcomes and steps, written and escaped for every
/// run, were most of what sixteen shards paid more than four.
pub(super) struct StepsOut<'a>(&'a Option<Box<Steps>>);

/// The places of an outcome and a step in `Outcome::ALL` and `Step::ALL`.
fn place<T: PartialEq>(all: &[T], x: &T) -> usize {
    all.iter().position(|a| a == x).unwrap_or(0)
}

impl Serialize for StepsOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        struct Runs<'a>(&'a [RunStep]);
        impl Serialize for Runs<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for r in self.0 {
                    let code = place(&Outcome::ALL, &r.outcome) * 36
                        + place(&Step::ALL, &r.baseline) * 6
                        + place(&Step::ALL, &r.candidate);
                    seq.serialize_element(&(code, &r.class))?;
                }
                seq.end()
            }
        }
        match self.0 {
            None => s.serialize_none(),
            Some(steps) => (Runs(&steps.runs), steps.gap).serialize(s),
        }
    }
}

/// [`StepsOut`] read back.
pub(super) type StepsIn = Option<(Vec<(usize, Option<FailureClass>)>, Option<(usize, usize)>)>;

pub(super) fn steps_of(wire: StepsIn) -> Result<Option<Box<Steps>>, String> {
    let Some((runs, gap)) = wire else { return Ok(None) };
    if gap.is_some_and(|(at, _)| at > runs.len()) {
        return Err(format!(
            "its steps' gap is at step {}, past their {} steps (expected one among them)",
            gap.map_or(0, |(at, _)| at),
            runs.len()
        ));
    }
    let runs = runs
        .into_iter()
        .enumerate()
        .map(|(i, (code, class))| {
            let (o, b, c) = (code / 36, code / 6 % 6, code % 6);
            let outcome = *Outcome::ALL
                .get(o)
                .ok_or_else(|| format!("a step's code `{code}` is not one a shard writes (0 to 143)"))?;
            let run = match gap {
                Some((at, skipped)) if i >= at => i + skipped,
                _ => i,
            };
            Ok(RunStep {
                run,
                outcome,
                class,
                baseline: Step::ALL[b],
                candidate: Step::ALL[c],
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Some(Box::new(Steps { runs, gap })))
}

impl MoreOut<'_> {
    pub(super) fn of(c: &Changed) -> MoreOut<'_> {
        let d = &c.diff;
        MoreOut(
            d.baseline.runs_left,
            d.baseline.compute.0,
            d.candidate.runs_left,
            d.candidate.compute.0,
            &d.resources,
            &c.class,
            c.depth,
            StepsOut(&c.steps),
        )
    }
}

#[derive(Debug, Deserialize)]
#[serde(
    expecting = "the rest of a changed job: [baselineRunsLeft, baselineCompute, candidateRunsLeft, candidateCompute, resources, class, depth, steps]"
)]
pub(super) struct MoreIn(
    pub(super) u32,
    pub(super) u64,
    pub(super) u32,
    pub(super) u64,
    pub(super) Option<Resources>,
    pub(super) Option<FailureClass>,
    pub(super) u32,
    pub(super) StepsIn,
);
