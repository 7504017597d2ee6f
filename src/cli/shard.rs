//! The value of `--shard I/N` (docs/past-one-machine.md): shard I of N, as the command line
//! gives it, and as a partial's header and the messages name it.
//!
//! Owns: [`Shard`] as a value, its parse (`--shard`'s value parser) and its text, and
//! [`MAX_SHARDS`]. Must not: say which jobs are a shard's: that is `replay::shard`, which
//! adds those methods (`byte_range`, `owns_offset`, `owns`) to this type.

/// Shard `index` of `count` (`0 ≤ index < count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

/// Shards a run may be split into at most: far past what a year of a large cluster needs
/// (docs/past-one-machine.md), and small enough that `merge` can name what is missing.
pub const MAX_SHARDS: u64 = 1_000_000;

impl Shard {
    /// The one shard of an unsharded run (`-o partial` without `--shard`).
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// `I/N`, with `0 ≤ I < N`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad =
            |why: &str| format!("invalid `--shard` `{text}`: {why} (expected `I/N` with 0 ≤ I < N, such as `0/4`)");
        let (i, n) = text.split_once('/').ok_or_else(|| bad("no `/`"))?;
        // Digits past 64 bits are a whole number still, too large: past the cap, as any
        // count above it is, or an index past any count.
        let too_large = |e: &std::num::ParseIntError| *e.kind() == std::num::IntErrorKind::PosOverflow;
        let count: u64 = n.trim().parse().map_err(|e| match too_large(&e) {
            true => bad(&format!("more than {MAX_SHARDS} shards")),
            false => bad("the number of shards is not a whole number"),
        })?;
        let index: u64 = i.trim().parse().map_err(|e| match too_large(&e) {
            true => bad("the shard index is not below the number of shards"),
            false => bad("the shard index is not a whole number"),
        })?;
        if count == 0 {
            return Err(bad("there are no shards"));
        }
        if index >= count {
            return Err(bad("the shard index is not below the number of shards"));
        }
        if count > MAX_SHARDS {
            return Err(bad(&format!("more than {MAX_SHARDS} shards")));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse() {
        assert_eq!(Shard::parse("2/7"), Ok(Shard { index: 2, count: 7 }));
        for (bad, why) in [
            ("7/7", "the shard index is not below the number of shards"),
            ("0/0", "there are no shards"),
            ("1", "no `/`"),
            ("a/2", "the shard index is not a whole number"),
            ("1/-2", "the number of shards is not a whole number"),
            ("1/99999999999999999999", "more than 1000000 shards"),
            (
                "99999999999999999999/4",
                "the shard index is not below the number of shards",
            ),
        ] {
            assert_eq!(
                Shard::parse(bad),
                Err(format!(
                    "invalid `--shard` `{bad}`: {why} (expected `I/N` with 0 ≤ I < N, such as `0/4`)"
                ))
            );
        }
    }
}
