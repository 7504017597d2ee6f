//! One row's values, decoded by hand from PostgreSQL's binary format: a job's own columns
//! ([`job_row`]) and a run's ([`run_row`]), each value that cannot be read an error naming
//! its column; `error` and `debug` inflated under their caps ([`Inflater`]).
//!
//! Owns: the binary formats of the columns read (`int2`/`int4`/`int8`, `timestamp`, text) and
//! what is refused (text that is not UTF-8, a time past [`Timestamp`]'s range, a zlib bomb).
//! Must not: read the stream or group rows into jobs (`stream`).

use super::columns::*;
use super::connect::key_of;
use crate::lookout::mapping::{self, error_text, JobRow, Place, RowError, RunRow, ERROR_TEXT_MAX};
use crate::model::failure_history::Timestamp;

/// A column's problem, for a [`RowError`] at it.
type Why = (usize, String);

/// A job's own row; one whose text is not UTF-8 (a `SQL_ASCII` database's) is an error like
/// any value that cannot be read, its id named with those bytes as `\xNN` and keyed by its
/// exact bytes ([`key_of`]).
pub(super) fn job_row(row: &Row) -> Result<JobRow, RowError> {
    let raw_id = row.get(JOB_ID).unwrap_or_default();
    let shown_id = shown_bytes(raw_id);
    let key = std::str::from_utf8(raw_id).is_err().then(|| key_of(raw_id));
    let bad = |(col, why): Why| RowError {
        key: key.clone(),
        ..RowError::job(&shown_id, Place::Column(NAMES[col]), why)
    };
    let job_id = text(raw_id).map_err(|w| bad((JOB_ID, w)))?.to_string();
    let memory = int8(row.get(MEMORY))
        .and_then(|m| m.ok_or_else(not_null))
        .map_err(|w| bad((MEMORY, w)))?;
    let request = |col: usize| {
        int8(row.get(col))
            .and_then(|m| m.ok_or_else(not_null))
            .map_err(|w| bad((col, w)))
    };
    let (cpu, gpu) = (request(CPU)?, request(GPU)?);
    let submitted = time(row.get(SUBMITTED))
        .and_then(|t| t.ok_or_else(not_null).map(Some))
        .map_err(|w| bad((SUBMITTED, w)))?;
    let annotations = annotations(row.get(ANNOTATIONS)).map_err(|w| bad((ANNOTATIONS, w)))?;
    let queue = opt_text(row.get(QUEUE))
        .and_then(|q| q.ok_or_else(not_null))
        .map_err(|w| bad((QUEUE, w)))?;
    // NULL (which the schema forbids) only leaves the job's end unsaid: no need to leave the
    // job out for it.
    let state = int2(row.get(JOB_STATE)).map_err(|w| bad((JOB_STATE, w)))?;
    // NULL (which the schema forbids) only leaves the job in no job set.
    let job_set = opt_text(row.get(JOB_SET)).map_err(|w| bad((JOB_SET, w)))?;
    Ok(JobRow {
        job_id,
        queue,
        job_set,
        memory,
        cpu,
        gpu,
        submitted,
        annotations,
        state,
    })
}

pub(super) fn run_row(row: &Row, job_id: &str, inflater: &mut Inflater) -> Result<RunRow, RowError> {
    decode_run(row, inflater).map_err(|(col, why)| {
        let run_id = row.get(RUN_ID).map(shown_bytes).unwrap_or_default();
        RowError::run(job_id, &run_id, Place::Column(NAMES[col]), why)
    })
}

fn decode_run(row: &Row, inflater: &mut Inflater) -> Result<RunRow, Why> {
    let at = |col: usize| move |why: String| (col, why);
    let run_id = text(row.get(RUN_ID).ok_or_else(|| (RUN_ID, not_null()))?).map_err(at(RUN_ID))?;
    let state = int2(row.get(STATE))
        .map_err(at(STATE))?
        .ok_or_else(|| (STATE, not_null()))?;
    let (error, error_truncated) = match row.get(ERROR) {
        Some(b) => {
            let (text, cut) = inflater.text(b).map_err(at(ERROR))?;
            (Some(text), cut)
        }
        None => (None, false),
    };
    // Stored like `error` (a zlib stream, `internal/common/compress`), so read under the same
    // caps; a document cut there is no longer JSON, and the mapping leaves its fields unset.
    let debug = match row.get(DEBUG) {
        Some(b) => Some(inflater.text(b).map_err(at(DEBUG))?.0),
        None => None,
    };
    Ok(RunRow {
        run_id: run_id.to_string(),
        node: opt_text(row.get(NODE)).map_err(at(NODE))?,
        state,
        leased: time(row.get(LEASED)).map_err(at(LEASED))?,
        pending: time(row.get(PENDING)).map_err(at(PENDING))?,
        started: time(row.get(STARTED)).map_err(at(STARTED))?,
        finished: time(row.get(FINISHED)).map_err(at(FINISHED))?,
        exit_code: int4(row.get(EXIT_CODE)).map_err(at(EXIT_CODE))?,
        error,
        error_truncated,
        category: opt_text(row.get(CATEGORY)).map_err(at(CATEGORY))?,
        subcategory: opt_text(row.get(SUBCATEGORY)).map_err(at(SUBCATEGORY))?,
        debug,
        pool: opt_text(row.get(POOL)).map_err(at(POOL))?,
    })
}

fn not_null() -> String {
    "NULL, which Lookout's schema does not allow".into()
}

/// A text column's value; bytes that are not UTF-8 (a `SQL_ASCII` database keeps any) make
/// the row unreadable: no text is guessed.
fn text(b: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(b).map_err(|e| format!("not UTF-8 (byte {})", e.valid_up_to()))
}

fn opt_text(b: Option<&[u8]>) -> Result<Option<String>, String> {
    b.map(|b| text(b).map(str::to_string)).transpose()
}

/// `bytes` as a report names them: text as it is, each byte that is not UTF-8 as `\xNN`
/// (control characters are escaped where the line is printed).
pub(super) fn shown_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

fn fixed<const N: usize>(b: Option<&[u8]>, what: &str) -> Result<Option<[u8; N]>, String> {
    b.map(|b| <[u8; N]>::try_from(b).map_err(|_| format!("{} bytes where {what} has {N}", b.len())))
        .transpose()
}

fn int2(b: Option<&[u8]>) -> Result<Option<i16>, String> {
    Ok(fixed::<2>(b, "a smallint")?.map(i16::from_be_bytes))
}

fn int4(b: Option<&[u8]>) -> Result<Option<i32>, String> {
    Ok(fixed::<4>(b, "an int")?.map(i32::from_be_bytes))
}

fn int8(b: Option<&[u8]>) -> Result<Option<i64>, String> {
    Ok(fixed::<8>(b, "a bigint")?.map(i64::from_be_bytes))
}

/// Microseconds from PostgreSQL's epoch (2000-01-01) to the Unix epoch.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// What a [`Timestamp`] (nanoseconds in an `i64`) spans, for messages.
const TIME_RANGE: &str = "retryctl's times span 1677-09-21 to 2262-04-11";

/// A `timestamp` (microseconds since 2000-01-01; `infinity` is `i64::MAX`).
fn time(b: Option<&[u8]>) -> Result<Option<Timestamp>, String> {
    let Some(us) = int8(b)? else { return Ok(None) };
    match us {
        i64::MAX => Err(format!("`infinity` is not a time ({TIME_RANGE})")),
        i64::MIN => Err(format!("`-infinity` is not a time ({TIME_RANGE})")),
        _ => us
            .checked_add(PG_EPOCH_MICROS)
            .and_then(|u| u.checked_mul(1000))
            .map(|ns| Some(Timestamp(ns)))
            .ok_or_else(|| {
                let side = if us > 0 { "after 2262" } else { "before 1677" };
                format!("a time {side} is out of range ({TIME_RANGE})")
            }),
    }
}

fn annotations(b: Option<&[u8]>) -> Result<std::collections::BTreeMap<String, String>, String> {
    let Some(b) = b else { return Ok(Default::default()) };
    let t = text(b)?;
    if t.len() > ANNOTATIONS_MAX && t.chars().count() > ANNOTATIONS_MAX {
        return Err(format!("longer than {ANNOTATIONS_MAX} characters"));
    }
    // The usual case in one pass; the slow path says what is wrong.
    if let Ok(map) = serde_json::from_str(t) {
        return Ok(map);
    }
    let value: serde_json::Value = serde_json::from_str(t).map_err(|e| format!("not JSON ({e})"))?;
    mapping::annotations(&value)
}

/// zlib streams (`internal/common/compress`) → text, at most [`ERROR_TEXT_MAX`] bytes of it,
/// with one decompressor and one output buffer reused for every run.
pub(super) struct Inflater {
    z: flate2::Decompress,
    /// One byte more than kept: filling it tells a cut text from one of exactly the cap.
    out: Box<[u8]>,
}

impl Inflater {
    pub(super) fn new() -> Inflater {
        Inflater {
            z: flate2::Decompress::new(true),
            out: vec![0; ERROR_TEXT_MAX + 1].into_boxed_slice(),
        }
    }

    /// `(text, cut)`; `Err` when `input` is not a zlib stream. `input` is at most
    /// [`ERROR_BYTES_MAX`] + 1 bytes of the column: more means the server cut it.
    pub(super) fn text(&mut self, input: &[u8]) -> Result<(String, bool), String> {
        let input_cut = input.len() > ERROR_BYTES_MAX;
        let input = &input[..input.len().min(ERROR_BYTES_MAX)];
        // RFC 1950's header (deflate, a check multiple of 31): the decoder only says
        // "decompression error" about it.
        let header =
            input.len() >= 2 && input[0] & 0x0F == 8 && (u16::from(input[0]) << 8 | u16::from(input[1])) % 31 == 0;
        if !header {
            return Err("not a zlib stream (no zlib header)".into());
        }
        self.z.reset(true);
        let (mut read, mut written) = (0, 0);
        loop {
            let (in0, out0) = (self.z.total_in(), self.z.total_out());
            let status = self
                .z
                .decompress(&input[read..], &mut self.out[written..], flate2::FlushDecompress::None)
                .map_err(|e| format!("a corrupt zlib stream ({e})"))?;
            read += (self.z.total_in() - in0) as usize;
            written += (self.z.total_out() - out0) as usize;
            if status == flate2::Status::StreamEnd {
                return Ok((error_text(&self.out[..written], false), false));
            }
            if written > ERROR_TEXT_MAX {
                return Ok((error_text(&self.out[..written], true), true));
            }
            if self.z.total_in() == in0 && self.z.total_out() == out0 {
                if input_cut {
                    // Past what was read, the stream was not looked at.
                    return Ok((error_text(&self.out[..written], true), true));
                }
                return Err("a zlib stream that ends early".into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn zlib(bytes: &[u8], level: u32) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn inflating_stops_at_the_cap() {
        let mut inf = Inflater::new();
        assert_eq!(
            inf.text(&zlib(b"OOMKilled", 6)).unwrap(),
            ("OOMKilled".to_string(), false)
        );
        assert_eq!(inf.text(&zlib(b"boom", 0)).unwrap(), ("boom".to_string(), false));
        // Exactly the cap: not cut.
        let exact = vec![b'a'; ERROR_TEXT_MAX];
        let (t, cut) = inf.text(&zlib(&exact, 6)).unwrap();
        assert_eq!((t.len(), cut), (ERROR_TEXT_MAX, false));
        // A bomb: 64 MiB of zeros in 64 KiB; the text is cut at the cap, marked.
        let bomb = zlib(&vec![0u8; 64 << 20], 9);
        assert!(bomb.len() < 128 << 10, "{}", bomb.len());
        let (t, cut) = inf.text(&bomb).unwrap();
        assert!(cut);
        assert_eq!(t.len(), ERROR_TEXT_MAX + mapping::TRUNCATED.len());
        assert!(t.ends_with("\0… [truncated]"));
        // A stored (level 0) text longer than the cap, read only in part by the server.
        let long = zlib(&vec![b'x'; 3 * ERROR_TEXT_MAX], 0);
        let (t, cut) = inf.text(&long[..ERROR_BYTES_MAX + 1]).unwrap();
        assert!(cut);
        assert_eq!(t, format!("{}… [truncated]", "x".repeat(ERROR_TEXT_MAX)));
        // A character cut in two by the cap is dropped, not replaced.
        let mut text = vec![b'a'; ERROR_TEXT_MAX - 1];
        text.extend_from_slice("é and more".as_bytes());
        let (t, _) = inf.text(&zlib(&text, 6)).unwrap();
        assert_eq!(t, format!("{}… [truncated]", "a".repeat(ERROR_TEXT_MAX - 1)));
        // The decompressor is reused: a good stream after a cut one reads whole.
        assert_eq!(inf.text(&zlib(b"again", 6)).unwrap(), ("again".to_string(), false));
    }

    #[test]
    fn streams_that_are_not_zlib_are_refused() {
        let mut inf = Inflater::new();
        assert_eq!(
            inf.text(b"not a zlib stream").unwrap_err(),
            "not a zlib stream (no zlib header)"
        );
        let mut corrupt = zlib(b"a message", 6);
        corrupt[2] ^= 0xFF;
        assert_eq!(
            inf.text(&corrupt).unwrap_err(),
            "a corrupt zlib stream (deflate decompression error: invalid code lengths set)"
        );
        let good = zlib(b"a message long enough to be cut short", 6);
        assert_eq!(
            inf.text(&good[..good.len() / 2]).unwrap_err(),
            "a zlib stream that ends early"
        );
        assert_eq!(inf.text(&zlib(b"fine", 6)).unwrap(), ("fine".to_string(), false));
    }

    #[test]
    fn times_outside_a_timestamp_are_errors() {
        let t = |us: i64| time(Some(&us.to_be_bytes()));
        assert_eq!(t(0).unwrap().unwrap().to_string(), "2000-01-01T00:00:00Z");
        assert_eq!(t(-1).unwrap().unwrap().to_string(), "1999-12-31T23:59:59.999999Z");
        assert_eq!(
            t(i64::MAX).unwrap_err(),
            "`infinity` is not a time (retryctl's times span 1677-09-21 to 2262-04-11)"
        );
        assert_eq!(
            t(i64::MIN).unwrap_err(),
            "`-infinity` is not a time (retryctl's times span 1677-09-21 to 2262-04-11)"
        );
        // 294276-12-31, PostgreSQL's last day; and 1500-01-01.
        assert_eq!(
            t(9_223_371_244_800_000_000).unwrap_err(),
            "a time after 2262 is out of range (retryctl's times span 1677-09-21 to 2262-04-11)"
        );
        assert_eq!(
            t(-15_778_454_400_000_000).unwrap_err(),
            "a time before 1677 is out of range (retryctl's times span 1677-09-21 to 2262-04-11)"
        );
        assert_eq!(time(None), Ok(None));
        assert_eq!(time(Some(&[0, 1])).unwrap_err(), "2 bytes where a bigint has 8");
    }
}
