//! Go-style durations (`300ms`, `10s`, `1h30m`), as the Armada scheduler config writes them.
//!
//! Owns: parsing and canonical formatting of [`GoDuration`]. Must not: read clocks.

use std::fmt;

/// A non-negative duration in nanoseconds, written Go-style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GoDuration(pub u64);

const NS: u64 = 1;
const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const M: u64 = 60 * S;
const H: u64 = 60 * M;

impl GoDuration {
    pub const ZERO: GoDuration = GoDuration(0);

    pub fn from_secs(s: u64) -> Self {
        GoDuration(s.saturating_mul(S))
    }

    pub fn from_millis(ms: u64) -> Self {
        GoDuration(ms.saturating_mul(MS))
    }

    pub fn as_nanos(self) -> u64 {
        self.0
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / S as f64
    }

    /// Parses `1h30m`, `1.5s`, `300ms`, `0`. Negative values parse (so that the validator can
    /// say "must not be negative") and come back as `Err(Negative)`.
    pub fn parse(text: &str) -> Result<GoDuration, DurationError> {
        match Self::parse_simple(text.as_bytes()) {
            Some(d) => Ok(d),
            None => Self::parse_general(text),
        }
    }

    /// The form histories write on almost every run, one whole number and one unit (`30s`,
    /// `1h`, `250ms`), without the general parser's searches and 128-bit arithmetic. `None`
    /// for anything else, an overflow included: [`GoDuration::parse_general`] decides those
    /// (and words the error).
    fn parse_simple(b: &[u8]) -> Option<GoDuration> {
        let (unit, digits) = match b {
            [d @ .., b'm', b's'] => (MS, d),
            [d @ .., b's'] => (S, d),
            [d @ .., b'm'] => (M, d),
            [d @ .., b'h'] => (H, d),
            _ => return None,
        };
        if digits.is_empty() {
            return None;
        }
        let mut n: u64 = 0;
        for &c in digits {
            if !c.is_ascii_digit() {
                return None;
            }
            n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        }
        n.checked_mul(unit).map(GoDuration)
    }

    /// Every form [`GoDuration::parse`] accepts.
    fn parse_general(text: &str) -> Result<GoDuration, DurationError> {
        let n = parse_nanos(text, u128::from(u64::MAX))?;
        Ok(GoDuration(n as u64))
    }
}

/// The nanoseconds of every form [`GoDuration::parse`] accepts, up to `max`.
fn parse_nanos(text: &str, max: u128) -> Result<u128, DurationError> {
    {
        let s = text.trim();
        if s.is_empty() {
            return Err(DurationError::Invalid);
        }
        let (negative, mut rest) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        if rest == "0" {
            return Ok(0);
        }
        if rest.is_empty() {
            return Err(DurationError::Invalid);
        }
        let mut total: u128 = 0;
        while !rest.is_empty() {
            let num_end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or(DurationError::MissingUnit)?;
            let number = &rest[..num_end];
            if number.is_empty() || number == "." || number.matches('.').count() > 1 {
                return Err(DurationError::Invalid);
            }
            rest = &rest[num_end..];
            let unit_end = rest
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(rest.len());
            let unit = match &rest[..unit_end] {
                "ns" => NS,
                "us" | "µs" | "μs" => US,
                "ms" => MS,
                "s" => S,
                "m" => M,
                "h" => H,
                other => return Err(DurationError::UnknownUnit(other.to_string())),
            };
            rest = &rest[unit_end..];
            let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
            let whole: u128 = if whole.is_empty() {
                0
            } else {
                whole.parse().map_err(|_| DurationError::TooLarge)?
            };
            let mut value = whole.checked_mul(unit as u128).ok_or(DurationError::TooLarge)?;
            let mut scale = unit as u128;
            for digit in frac.bytes().take(18) {
                scale /= 10;
                // Checked: a whole part just below 2^128 nanoseconds plus its fraction would
                // wrap (a panic in a debug build, a tiny duration read in a release one).
                value = value
                    .checked_add((digit - b'0') as u128 * scale)
                    .ok_or(DurationError::TooLarge)?;
            }
            total = total.checked_add(value).ok_or(DurationError::TooLarge)?;
            if total > max {
                return Err(DurationError::TooLarge);
            }
        }
        if negative && total > 0 {
            return Err(DurationError::Negative);
        }
        Ok(total)
    }
}

/// A sum of durations, in nanoseconds: the run time or delay of every run of a history, which
/// passes a [`GoDuration`]'s 64 bits at 584 years (a month of a large cluster's runs).
/// Written as a Go duration is (`2562047h47m16.854775807s` and beyond), read back exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TotalDuration(pub u128);

impl TotalDuration {
    pub const ZERO: TotalDuration = TotalDuration(0);

    /// Adds one duration (a sum of 2^64 of the longest durations still fits).
    pub fn add(&mut self, d: GoDuration) {
        self.0 = self.0.saturating_add(u128::from(d.0));
    }

    /// Adds another sum (another worker's, another shard's; `merge` has checked that the
    /// partials' sums fit).
    pub fn add_total(&mut self, o: TotalDuration) {
        self.0 = self.0.saturating_add(o.0);
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / S as f64
    }
}

impl From<GoDuration> for TotalDuration {
    fn from(d: GoDuration) -> Self {
        TotalDuration(u128::from(d.0))
    }
}

impl fmt::Display for TotalDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_nanos(f, self.0)
    }
}

impl serde::Serialize for TotalDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for TotalDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        parse_nanos(&text, u128::MAX)
            .map(TotalDuration)
            .map_err(|e| serde::de::Error::custom(format!("duration `{text}`: {e}")))
    }
}

/// Serialized in its Go form (`1m30s`), as it is written in documents.
impl serde::Serialize for GoDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Read back from its Go form, exactly (`parse(format(d)) == d`): what a partial result
/// (docs/past-one-machine.md) stores.
impl<'de> serde::Deserialize<'de> for GoDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        GoDuration::parse(&text).map_err(|e| serde::de::Error::custom(format!("duration `{text}`: {e}")))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    Invalid,
    MissingUnit,
    UnknownUnit(String),
    Negative,
    TooLarge,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Invalid => write!(f, "expected a duration such as `300ms`, `10s`, `5m` or `1h30m`"),
            DurationError::MissingUnit => write!(
                f,
                "missing unit; expected a duration such as `10s` (units: `ns`, `us`, `ms`, `s`, `m`, `h`)"
            ),
            DurationError::UnknownUnit(u) => {
                write!(f, "unknown unit `{u}`; expected one of `ns`, `us`, `ms`, `s`, `m`, `h`")
            }
            DurationError::Negative => write!(f, "must not be negative"),
            DurationError::TooLarge => write!(f, "too large"),
        }
    }
}

impl fmt::Display for GoDuration {
    /// Canonical form: largest units first, zero parts left out (`1h30m`, `1m30s`, `1.5s`,
    /// `300ms`, `0s`). `parse(format(d)) == d` for every `d`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_nanos_u64(f, self.0)
    }
}

/// `n` nanoseconds in the canonical form of [`GoDuration`]'s `Display`. A value within 64 bits
/// (every duration of a run, most sums) is written with 64-bit arithmetic: 128-bit division
/// is a call of its own, and a history's records write several durations per run.
fn write_nanos(f: &mut fmt::Formatter<'_>, n: u128) -> fmt::Result {
    match u64::try_from(n) {
        Ok(n) => write_nanos_u64(f, n),
        Err(_) => {
            // Past 64 bits: hours of 128 bits, the rest below an hour.
            write!(f, "{}h", n / u128::from(H))?;
            write_below_hour(f, (n % u128::from(H)) as u64)
        }
    }
}

fn write_nanos_u64(f: &mut fmt::Formatter<'_>, n: u64) -> fmt::Result {
    if n == 0 {
        return write!(f, "0s");
    }
    if n < S {
        return if n % MS == 0 {
            write!(f, "{}ms", n / MS)
        } else if n % US == 0 {
            write!(f, "{}us", n / US)
        } else {
            write!(f, "{n}ns")
        };
    }
    let hours = n / H;
    if hours > 0 {
        write!(f, "{hours}h")?;
    }
    write_below_hour(f, n % H)
}

/// The minutes and seconds of a duration of at least a second, `below` < 1h of it.
fn write_below_hour(f: &mut fmt::Formatter<'_>, below: u64) -> fmt::Result {
    let minutes = below / M;
    let rem = below % M;
    if minutes > 0 {
        write!(f, "{minutes}m")?;
    }
    if rem > 0 {
        let secs = rem / S;
        let frac = rem % S;
        if frac == 0 {
            write!(f, "{secs}s")?;
        } else {
            let digits = format!("{frac:09}");
            write!(f, "{secs}.{}s", digits.trim_end_matches('0'))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_total_passes_64_bits_and_reads_back() {
        let mut t = TotalDuration::ZERO;
        for _ in 0..3 {
            t.add(GoDuration(u64::MAX));
        }
        assert_eq!(t.0, 3 * u128::from(u64::MAX));
        assert_eq!(t.to_string(), "15372286h43m41.128654845s");
        let back: TotalDuration = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
        assert_eq!(
            TotalDuration::from(GoDuration(5_400_000_000_000)).to_string(),
            GoDuration(5_400_000_000_000).to_string()
        );
    }

    #[test]
    fn parses_go_forms() {
        assert_eq!(GoDuration::parse("10s"), Ok(GoDuration::from_secs(10)));
        assert_eq!(GoDuration::parse("1h30m"), Ok(GoDuration::from_secs(5400)));
        assert_eq!(GoDuration::parse("1.5s"), Ok(GoDuration::from_millis(1500)));
        assert_eq!(GoDuration::parse("300ms"), Ok(GoDuration::from_millis(300)));
        assert_eq!(GoDuration::parse("0"), Ok(GoDuration::ZERO));
        assert_eq!(GoDuration::parse("0s"), Ok(GoDuration::ZERO));
        assert_eq!(GoDuration::parse("10"), Err(DurationError::MissingUnit));
        assert_eq!(GoDuration::parse("-5s"), Err(DurationError::Negative));
        assert_eq!(GoDuration::parse("5d"), Err(DurationError::UnknownUnit("d".into())));
        assert_eq!(GoDuration::parse("s"), Err(DurationError::Invalid));
        assert!(GoDuration::parse("99999999999999999999h").is_err());
    }

    /// A whole part just below 2^128 nanoseconds with a fraction after it is too large, not a
    /// sum that wraps (a panic in a debug build, a tiny duration read in a release one).
    #[test]
    fn a_fraction_past_128_bits_is_too_large_not_a_wrap() {
        for text in [
            "340282366920938463463374607431768211.999us",
            "340282366920938463463374607431768.999999ms",
            "94522879700260684295381835.999999999999h",
        ] {
            assert_eq!(GoDuration::parse(text), Err(DurationError::TooLarge), "{text}");
            assert_eq!(parse_nanos(text, u128::MAX), Err(DurationError::TooLarge), "{text}");
        }
    }

    #[test]
    fn simple_form_agrees_with_the_general_parser() {
        for text in [
            "30s",
            "1h",
            "0s",
            "0m",
            "250ms",
            "007s",
            "18446744073s",
            "18446744074s",
            "307445734561825860h",
            "99999999999999999999s",
            "5ns",
            "5us",
            "5µs",
            "s",
            "ms",
            "1.5s",
            "1h30m",
            " 5s",
            "-5s",
            "+5s",
            "5S",
        ] {
            assert_eq!(GoDuration::parse(text), GoDuration::parse_general(text), "{text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn simple_form_agrees_with_the_general_parser_on_any_number(
            text in "[+-]?[0-9]{0,21}(ns|us|ms|s|m|h|x|)"
        ) {
            proptest::prop_assert_eq!(GoDuration::parse(&text), GoDuration::parse_general(&text));
        }
    }

    #[test]
    fn formats_canonically_and_round_trips() {
        for (n, text) in [
            (0, "0s"),
            (5400 * S, "1h30m"),
            (90 * S, "1m30s"),
            (1500 * MS, "1.5s"),
            (300 * MS, "300ms"),
            (7, "7ns"),
            (H + 1, "1h0.000000001s"),
        ] {
            let d = GoDuration(n);
            assert_eq!(d.to_string(), text);
            assert_eq!(GoDuration::parse(text), Ok(d));
        }
    }
}
