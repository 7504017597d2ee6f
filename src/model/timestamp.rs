//! An instant of a history ([`Timestamp`]): nanoseconds since the Unix epoch, read from and
//! written as RFC 3339 in UTC, within the span an `i64` of nanoseconds holds (1677-09-21 to
//! 2262-04-11), refused past it with its own words.
//!
//! Owns: [`Timestamp`], its parse and its text. Must not: read a clock.

use super::duration::GoDuration;
use crate::diag::quote;

/// An instant, as nanoseconds since the Unix epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Timestamp(pub i64);

/// Why a text is not a [`Timestamp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeError {
    /// Not RFC 3339's shape (`2026-01-01T00:00:00Z`).
    Shape,
    /// RFC 3339's shape, but a time that does not exist: the reason (`day `30` does not exist
    /// in 2026-02 (28 days)`).
    Range(String),
    /// A time that exists but lies outside what 64 bits of nanoseconds since 1970 hold (as
    /// Armada's Go times and protobuf timestamps in nanoseconds do): after
    /// [`Timestamp::LATEST_SECS`] (`Later`) or before [`Timestamp::EARLIEST_SECS`].
    Beyond { later: bool },
}

impl Timestamp {
    /// The latest time read, in whole seconds since 1970: 2262-04-11T23:47:16Z, the last whole
    /// second a signed 64-bit count of nanoseconds holds. Whole seconds, so that the time the
    /// refusal names is itself read.
    pub const LATEST_SECS: i64 = i64::MAX / 1_000_000_000;
    /// The earliest, 1677-09-21T00:12:44Z, the first whole second of that range.
    pub const EARLIEST_SECS: i64 = -(i64::MAX / 1_000_000_000);

    /// RFC 3339: `2026-01-01T00:00:00Z`, optional fraction, `Z` or `±HH:MM`.
    pub fn parse(text: &str) -> Option<Timestamp> {
        Timestamp::read(text).ok()
    }

    /// [`Timestamp::parse`], saying why not: a time of RFC 3339's shape that does not exist
    /// (February 30th, hour 24, second 60, offset `+25:00`) is refused with its reason, not
    /// carried into the next day or month. Second 60 (a leap second) is refused: nothing
    /// here could place it.
    pub fn read(text: &str) -> Result<Timestamp, TimeError> {
        let b = text.as_bytes();
        if b.len() < 20
            || b[4] != b'-'
            || b[7] != b'-'
            || !matches!(b[10], b'T' | b't' | b' ')
            || b[13] != b':'
            || b[16] != b':'
        {
            return Err(TimeError::Shape);
        }
        // Read from the bytes, never from slices of `text`: a multi-byte character where a
        // digit or separator belongs (`2026-01-01T00:00:0é`) would put a slice's end inside
        // it. Each field is at most nine ASCII digits, which an `i64` holds.
        let num = |from: usize, to: usize| -> Result<i64, TimeError> {
            let digits = &b[from..to];
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(TimeError::Shape);
            }
            Ok(digits.iter().fold(0, |n, &c| n * 10 + i64::from(c - b'0')))
        };
        let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
        let (h, mi, s) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
        let mut at = 19;
        let mut nanos = 0i64;
        if b[at] == b'.' {
            let digits = b[at + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 || digits > 9 {
                return Err(TimeError::Shape);
            }
            nanos = num(at + 1, at + 1 + digits)? * 10i64.pow(9 - digits as u32);
            at += 1 + digits;
        }
        let rest = &b[at..];
        let offset = match rest {
            b"Z" | b"z" => 0,
            [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
                let (oh, om) = (num(at + 1, at + 3)?, num(at + 4, at + 6)?);
                if oh > 23 || om > 59 {
                    // Every byte of the offset is ASCII here: the slice is on characters.
                    let rest = &text[at..];
                    return Err(TimeError::Range(format!(
                        "offset `{rest}` is out of range (hours 00–23, minutes 00–59)"
                    )));
                }
                let v = oh * 3600 + om * 60;
                if *sign == b'-' {
                    -v
                } else {
                    v
                }
            }
            _ => return Err(TimeError::Shape),
        };
        let range = |what: &str, text: &str, limits: &str| {
            Err(TimeError::Range(format!("{what} `{text}` is out of range ({limits})")))
        };
        if !(1..=12).contains(&mo) {
            return range("month", &text[5..7], "01–12");
        }
        let days = days_in_month(y, mo);
        if d < 1 || d > days {
            return Err(TimeError::Range(format!(
                "day `{}` does not exist in {} ({days} days)",
                &text[8..10],
                &text[0..7]
            )));
        }
        if h > 23 {
            return range("hour", &text[11..13], "00–23");
        }
        if mi > 59 {
            return range("minute", &text[14..16], "00–59");
        }
        if s > 59 {
            return range("second", &text[17..19], "00–59; a leap second is not read");
        }
        let days = days_from_civil(y, mo, d);
        // Years have four digits: the seconds always fit, the nanoseconds may not.
        let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset;
        if secs > Timestamp::LATEST_SECS || (secs == Timestamp::LATEST_SECS && nanos > 0) {
            return Err(TimeError::Beyond { later: true });
        }
        if secs < Timestamp::EARLIEST_SECS {
            return Err(TimeError::Beyond { later: false });
        }
        Ok(Timestamp(secs * 1_000_000_000 + nanos))
    }

    /// Why a time [`TimeError::Beyond`] the range is not read, after the time itself:
    /// `is past the latest time retryctl reads, 2262-04-11T23:47:16Z`.
    pub fn beyond(later: bool) -> String {
        let (word, secs) = if later {
            ("past the latest", Timestamp::LATEST_SECS)
        } else {
            ("before the earliest", Timestamp::EARLIEST_SECS)
        };
        format!(
            "is {word} time retryctl reads, {} (the nanoseconds since 1970 that 64 bits hold)",
            Timestamp(secs * 1_000_000_000)
        )
    }

    /// The message for `text`, a `noun` (`time`, `start`) that [`Timestamp::read`] refused
    /// with `error`: `invalid time `…`` with the reason when the time does not exist, else
    /// with `otherwise` (what was expected); a time outside the range is no invalid one:
    /// `time `…` is past the latest time retryctl reads, …`.
    pub fn refusal(error: &TimeError, noun: &str, text: &str, otherwise: &str) -> String {
        let quoted = quote(text);
        match error {
            TimeError::Range(reason) => format!("invalid {noun} {quoted}: {reason}"),
            TimeError::Shape => format!("invalid {noun} {quoted}, {otherwise}"),
            TimeError::Beyond { later } => format!("{noun} {quoted} {}", Timestamp::beyond(*later)),
        }
    }

    pub fn plus(self, d: GoDuration) -> Timestamp {
        Timestamp(self.0.saturating_add(i64::try_from(d.0).unwrap_or(i64::MAX)))
    }

    /// Nanoseconds from `earlier` to `self`, or `None` when `self` is before it. In 128 bits:
    /// any two times retryctl reads are at most 2^64 − 1 ns apart, which a `GoDuration`
    /// holds, while their difference can pass `i64` (1678 to 2262 read as "before").
    pub fn since(self, earlier: Timestamp) -> Option<GoDuration> {
        u64::try_from(i128::from(self.0) - i128::from(earlier.0))
            .ok()
            .map(GoDuration)
    }
}

impl std::fmt::Display for Timestamp {
    /// `2026-01-01T00:02:05Z`, with a fraction only when there is one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.0.div_euclid(1_000_000_000);
        let nanos = self.0.rem_euclid(1_000_000_000);
        let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            sod / 3600,
            sod / 60 % 60,
            sod % 60
        )?;
        if nanos != 0 {
            let frac = format!("{nanos:09}");
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        write!(f, "Z")
    }
}

/// The days of month `m` (1–12) of year `y`, in the proleptic Gregorian calendar.
fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's civil-calendar algorithms: exact for the proleptic Gregorian calendar.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod since_tests {
    use super::*;

    /// The span between the earliest and the latest times is a span, not "before".
    #[test]
    fn the_span_from_the_earliest_time_to_the_latest_is_counted_not_refused() {
        let (first, last) = (Timestamp(i64::MIN), Timestamp(i64::MAX));
        assert_eq!(last.since(first), Some(GoDuration(u64::MAX)));
        assert_eq!(first.since(last), None);
        assert_eq!(Timestamp(5).since(Timestamp(5)), Some(GoDuration(0)));
        assert_eq!(Timestamp(4).since(Timestamp(5)), None);
    }
}

#[cfg(test)]
mod read_tests {
    use super::*;

    /// A character of two, three or four bytes anywhere in a time, or in place of its
    /// fraction or offset, is a time of the wrong shape, never a slice inside a character.
    #[test]
    fn a_multi_byte_character_anywhere_is_the_wrong_shape_not_a_panic() {
        for valid in [
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00.5+01:30",
            "2026-01-01T00:00:00-00:00",
        ] {
            assert!(Timestamp::read(valid).is_ok(), "{valid}");
            for wide in ['é', '€', '𝟘'] {
                for at in 0..valid.len() {
                    let mut text = valid.to_string();
                    text.replace_range(at..at + 1, &wide.to_string());
                    assert_eq!(Timestamp::read(&text), Err(TimeError::Shape), "{text}");
                    // And the time cut there, ending in the character: shorter than any
                    // time, refused whatever it holds.
                    text.truncate(at);
                    text.push(wide);
                    assert!(Timestamp::read(&text).is_err(), "{text}");
                }
            }
        }
        assert_eq!(Timestamp::read("2026-01-01T00:00:0é"), Err(TimeError::Shape));
        assert_eq!(Timestamp::read("2026-01-01T00:00:00+0é00"), Err(TimeError::Shape));
    }

    /// Each part read as before: the fraction to nine digits, the offset's sign and range.
    #[test]
    fn the_parts_read_as_rfc_3339_gives_them() {
        let read = |t: &str| Timestamp::read(t).map(|t| t.to_string());
        assert_eq!(
            read("2026-01-01T00:00:00.123456789Z"),
            Ok("2026-01-01T00:00:00.123456789Z".into())
        );
        assert_eq!(read("2026-01-01T01:30:00+01:30"), Ok("2026-01-01T00:00:00Z".into()));
        assert_eq!(read("2025-12-31T22:30:00-01:30"), Ok("2026-01-01T00:00:00Z".into()));
        assert_eq!(read("2026-01-01t00:00:00.5z"), Ok("2026-01-01T00:00:00.5Z".into()));
        assert_eq!(read("2026-01-01T00:00:00.1234567891Z"), Err(TimeError::Shape));
        assert_eq!(read("2026-01-01T00:00:00.Z"), Err(TimeError::Shape));
        assert_eq!(read("2026-01-01T00:00:00+0100"), Err(TimeError::Shape));
        assert_eq!(
            read("2026-01-01T00:00:00+24:00"),
            Err(TimeError::Range(
                "offset `+24:00` is out of range (hours 00–23, minutes 00–59)".into()
            ))
        );
    }
}
