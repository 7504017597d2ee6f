//! `--shard I/N` (docs/past-one-machine.md): which jobs are shard I's. Files: the jobs whose
//! document starts in the shard's byte range of the source ([`Shard::byte_range`],
//! [`Shard::owns_offset`]). stdin, which cannot be read from the middle: FNV-1a 64 of the job
//! id's UTF-8 bytes, mod N ([`Shard::owns`]), with a cheap look at a JSON line's job id, so that
//! a shard skips the other jobs without decoding them. Lookout's database decides in its own
//! query (`lookout::db`).
//!
//! Owns: which jobs a [`Shard`] holds (its byte range, [`Shard::owns`], added here to the
//! type: the value, its parse and its text are `cli`'s, `--shard`'s value parser),
//! [`fnv1a64`], [`line_job_id`]. On stdin, an entry that names no job (a line that is not
//! JSON) belongs to the shard its default id (`stdin-LINE`) falls in: exactly one shard
//! reports it. Must not: decode histories or decide what a job's replay is.

use std::borrow::Cow;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

pub use crate::cli::{Shard, MAX_SHARDS};

/// FNV-1a 64 of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Shard {
    /// `[lo, hi)`: the offsets at which the documents this shard owns start, of a source of
    /// `total` bytes: `[⌊I·S/N⌋, ⌊(I+1)·S/N⌋)`. The last shard owns `S` too (where an empty
    /// file at the end starts), so that every offset in `[0, S]` is exactly one shard's.
    pub fn byte_range(&self, total: u64) -> (u64, u64) {
        let at = |i: u64| (u128::from(i) * u128::from(total) / u128::from(self.count)) as u64;
        let hi = if self.index + 1 == self.count {
            total.saturating_add(1)
        } else {
            at(self.index + 1)
        };
        (at(self.index), hi)
    }

    /// Whether a document starting at `offset` of a source of `total` bytes is this shard's.
    pub fn owns_offset(&self, offset: u64, total: u64) -> bool {
        let (lo, hi) = self.byte_range(total);
        lo <= offset && offset < hi
    }

    /// Whether the job `id` is this shard's (stdin).
    pub fn owns(&self, id: &str) -> bool {
        fnv1a64(id.as_bytes()) % self.count == self.index
    }
}

/// [`Shard::owns`] for the file reader, which asks it of every line of the history: the
/// remainder by `N` is two multiplications by a constant made once (Lemire, Kaser and Kurz,
/// "Faster remainder by direct computation", 2019: exact for every 64-bit dividend and
/// divisor with a 128-bit constant), where a division was half of what deciding cost.
#[derive(Debug, Clone, Copy)]
pub struct Owner {
    shard: Shard,
    /// ⌈2¹²⁸ / N⌉; 0 (wrapped) for N = 1, where every remainder is 0 as it must be.
    m: u128,
}

impl Owner {
    pub fn new(shard: Shard) -> Owner {
        Owner {
            shard,
            m: (u128::MAX / u128::from(shard.count)).wrapping_add(1),
        }
    }

    /// `fnv1a64(id) % N == I`.
    pub fn owns(&self, id: &[u8]) -> bool {
        self.remainder(fnv1a64(id)) == self.shard.index
    }

    /// `a % N`: the high 64 bits of the low 128 bits of `m × a`, times `N`.
    fn remainder(&self, a: u64) -> u64 {
        let low = self.m.wrapping_mul(u128::from(a));
        let d = u128::from(self.shard.count);
        let bottom = (u128::from(low as u64) * d) >> 64;
        let top = (low >> 64) * d;
        ((bottom + top) >> 64) as u64
    }

    /// Whether a JSON line is this shard's: by its job id ([`line_job_id`]), else by its
    /// default id, made only when it is needed.
    pub fn owns_line(&self, line: &[u8], default_id: impl FnOnce() -> String) -> bool {
        match line_job_id(line) {
            Some(id) => self.owns(&id),
            None => self.owns(default_id().as_bytes()),
        }
    }
}

/// The job id of a JSON line (its UTF-8 bytes, which are what decides its shard), without
/// decoding the line: `Some(id)` when it has one, `None`
/// when it has none (the default id applies) or is not JSON. Fast when `"job"` comes with
/// its `"id"` first and the id has no escape (every line `retryctl history` writes); else a
/// pass that reads `job.id` and skips everything else. For a line that decodes, the id is
/// the one its decode gives (its top-level keys before `job` are strings, which cannot hold
/// an unescaped quote); for one that does not, it is at least the same in every shard.
pub fn line_job_id(line: &[u8]) -> Option<Cow<'_, [u8]>> {
    if let Some(id) = quick_id(line) {
        return Some(Cow::Borrowed(id));
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    match (&mut de).deserialize_map(TopVisitor) {
        Ok(Some(id)) => Some(Cow::Owned(id.into_bytes())),
        _ => None,
    }
}

/// Built once: a search made per line spent more on building its searcher than searching.
static JOB_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"job\""));

/// `"job"`, `:`, `{`, `"id"`, `:`, then a UTF-8 string without escapes: its bytes.
fn quick_id(line: &[u8]) -> Option<&[u8]> {
    // Most lines begin with it (`retryctl history` writes `job` first): no search then.
    let at = if line.starts_with(b"{\"job\"") {
        1
    } else {
        JOB_KEY.find(line)?
    };
    let mut rest = &line[at + 5..];
    for expected in [b':', b'{'] {
        rest = rest.trim_ascii_start();
        rest = rest.strip_prefix(&[expected])?;
    }
    rest = rest.trim_ascii_start().strip_prefix(b"\"id\"")?;
    rest = rest.trim_ascii_start().strip_prefix(b":")?;
    rest = rest.trim_ascii_start().strip_prefix(b"\"")?;
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    if rest[end] != b'"' {
        return None;
    }
    let id = &rest[..end];
    // Ids are ASCII but for a few: those are checked whole.
    (id.is_ascii() || std::str::from_utf8(id).is_ok()).then_some(id)
}

/// The top level: `job` read for its `id`, every other value skipped.
struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a FailureHistory")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut id = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "job" && id.is_none() {
                id = map.next_value_seed(JobSeed)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(id)
    }
}

/// `job`: its `id` when it is a string.
struct JobSeed;

impl<'de> de::DeserializeSeed<'de> for JobSeed {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(JobVisitor)
    }
}

struct JobVisitor;

impl<'de> Visitor<'de> for JobVisitor {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a job")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut id = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "id" && id.is_none() {
                id = match map.next_value::<serde_json::Value>()? {
                    serde_json::Value::String(s) => Some(s),
                    _ => None,
                };
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(id)
    }

    // Anything else (null, an array): no id.
    fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<String>, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The remainder by multiplication is the remainder, for every divisor, at the edges
    /// of both ranges and anywhere between.
    #[test]
    fn an_owner_divides_as_the_shard_does() {
        use proptest::prelude::*;
        let edges = [
            1,
            2,
            3,
            4,
            7,
            1 << 32,
            (1 << 32) + 1,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        let check = |a: u64, d: u64| {
            let owner = Owner::new(Shard { index: 0, count: d });
            assert_eq!(owner.remainder(a), a % d, "{a} % {d}");
        };
        for &d in &edges {
            for &a in edges.iter().chain(&[0, 5, 0xcbf2_9ce4_8422_2325]) {
                check(a, d);
            }
        }
        proptest!(|(a in any::<u64>(), d in 1u64..)| check(a, d));
        proptest!(|(a in any::<u64>(), d in 1u64..100_000)| check(a, d));
        // And whose line is whose, as `Shard::owns` says.
        let shard = Shard { index: 3, count: 7 };
        let owner = Owner::new(shard);
        for i in 0..1000 {
            let id = format!("job-{i:07}");
            let line = format!(r#"{{"job":{{"id":"{id}"}},"runs":[]}}"#);
            assert_eq!(
                owner.owns_line(line.as_bytes(), || unreachable!()),
                shard.owns(&id),
                "{id}"
            );
        }
        assert_eq!(owner.owns_line(b"not json", || "h-9".into()), shard.owns("h-9"));
    }

    /// Published FNV-1a 64 values (the reference test vectors of Fowler, Noll and Vo).
    #[test]
    fn fnv1a64_matches_the_reference() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// Every offset of a source, its end included, is exactly one shard's, and the ranges
    /// follow each other in shard order, whatever N and S.
    #[test]
    fn every_offset_is_exactly_one_shards() {
        for total in [0u64, 1, 2, 5, 16, 17, 1000, u64::MAX / 2] {
            for n in [1u64, 2, 3, 7, 16, 40] {
                let mut next = 0;
                for i in 0..n {
                    let (lo, hi) = Shard { index: i, count: n }.byte_range(total);
                    assert_eq!(lo, next, "{i}/{n} of {total}");
                    assert!(lo <= hi);
                    next = hi;
                }
                assert_eq!(next, total + 1, "{n} shards of {total}");
                if total < 100 {
                    for x in 0..=total {
                        let owners = (0..n).filter(|&i| Shard { index: i, count: n }.owns_offset(x, total));
                        assert_eq!(owners.count(), 1, "{x} of {total}, {n} shards");
                    }
                }
            }
        }
    }

    /// Every job is one shard's, whatever N.
    #[test]
    fn each_job_is_exactly_one_shards() {
        for n in 1..=7 {
            for id in ["a", "job-0000003", "é", ""] {
                let owners = (0..n).filter(|&i| Shard { index: i, count: n }.owns(id)).count();
                assert_eq!(owners, 1, "{id} of {n}");
            }
        }
    }

    #[test]
    fn a_lines_job_id_is_read_without_decoding_it() {
        let cases: [(&str, Option<&str>); 8] = [
            (r#"{"job":{"id":"j1","queue":"q"},"runs":[]}"#, Some("j1")),
            (
                r#"{"apiVersion": "armadaproject.io/v1", "job": {"id": "j 2"}, "runs": []}"#,
                Some("j 2"),
            ),
            // Not first in `job`, or escaped: the slower pass.
            (r#"{"job":{"queue":"q","id":"j3"},"runs":[]}"#, Some("j3")),
            (r#"{"job":{"id":"j\"4"},"runs":[]}"#, Some("j\"4")),
            // A message mentioning a job id is a string: it does not count.
            (
                r#"{"runs":[{"containers":[{"message":"\"job\":{\"id\":\"x\"}"}]}],"job":{"id":"j5"}}"#,
                Some("j5"),
            ),
            (r#"{"runs":[]}"#, None),
            (r#"{"job":{"id":5},"runs":[]}"#, None),
            ("not json", None),
        ];
        for (line, want) in cases {
            assert_eq!(
                line_job_id(line.as_bytes()).as_deref(),
                want.map(str::as_bytes),
                "{line}"
            );
        }
    }
}
