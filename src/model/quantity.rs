//! Kubernetes resource quantities (`512Mi`, `1Gi`, `1.5G`, `100m`), as `mutate.resources.memory.static`.
//!
//! Owns: parsing a quantity into a number of base units, and writing a number of bytes back
//! exactly (every output format's memory). Must not: round, or reformat the user's text
//! (the text is what is stored and sent).

/// Parses a quantity into base units (bytes for memory). Follows the Kubernetes grammar
/// `^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$`.
pub fn parse_quantity(text: &str) -> Result<f64, String> {
    let s = text.trim();
    let split = s
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || *c == '.' || ((*c == '+' || *c == '-') && *i == 0)))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    if number.is_empty() || number == "+" || number == "-" || number.matches('.').count() > 1 {
        return Err(
            "quantities must match the regular expression `^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$`".into(),
        );
    }
    let value: f64 = number.parse().map_err(|_| format!("`{number}` is not a number"))?;
    let (binary, exp) = scale(suffix).ok_or_else(|| format!("unable to parse quantity's suffix `{suffix}`"))?;
    // Exact for every suffix: powers of 1024 and 10 up to 10^22 are doubles, and a negative
    // power is one correctly rounded division (`1e-9` itself).
    let multiplier = 1024f64.powi(binary as i32) * 10f64.powi(exp);
    let result = value * multiplier;
    if !result.is_finite() {
        return Err("quantity is too large".into());
    }
    Ok(result)
}

/// A quantity's suffix as the power of 1024 and the power of 10 it multiplies by (`Ki`:
/// `(1, 0)`, `m`: `(0, -3)`, `e6`: `(0, 6)`); `None` for a suffix Kubernetes does not read.
fn scale(suffix: &str) -> Option<(u32, i32)> {
    Some(match suffix {
        "" => (0, 0),
        "Ki" => (1, 0),
        "Mi" => (2, 0),
        "Gi" => (3, 0),
        "Ti" => (4, 0),
        "Pi" => (5, 0),
        "Ei" => (6, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        other => (0, other.strip_prefix(['e', 'E'])?.parse().ok()?),
    })
}

/// A quantity of CPUs or GPUs in whole thousandths, exactly and rounded **up**, as Kubernetes'
/// `MilliValue` reads a request (`100u` and `2.4m` are `1m` and `3m`): `None` past `max`, or
/// for a text [`parse_quantity`] refuses or a negative one (its caller says why). Decimal
/// arithmetic on the text's digits, not `f64`: `9007199254740993m` is that many thousandths,
/// not the nearest double.
pub fn thousandths_up(text: &str, max: u64) -> Option<u64> {
    let s = text.trim();
    // The usual request, whole devices (`4`) or thousandths (`500m`) in at most 15 digits:
    // read directly (a history's every job has one or two).
    let (digits, per) = match s.strip_suffix('m') {
        Some(d) => (d, 1),
        None => (s, 1000),
    };
    if (1..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) {
        let n = digits.bytes().fold(0u64, |n, b| n * 10 + u64::from(b - b'0')) * per;
        return (n <= max).then_some(n);
    }
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    if !number.bytes().any(|b| b.is_ascii_digit()) || number.matches('.').count() > 1 {
        return None;
    }
    // Value = digits × 1024^binary × 10^exp; in thousandths, × 10^3 more.
    let (binary, exp) = scale(suffix)?;
    let exp = i64::from(exp);
    // The number's digits without its point, read in place (no allocation: a history's every
    // job has a request or two).
    let dot = number.find('.');
    let fraction = dot.map_or(0, |d| number.len() - d - 1);
    let digit = |k: usize| -> u128 {
        let at = match dot {
            Some(d) if k >= d => k + 1,
            _ => k,
        };
        u128::from(number.as_bytes()[at] - b'0')
    };
    let all = number.len() - usize::from(dot.is_some());
    let lead = (0..all).take_while(|&k| digit(k) == 0).count();
    let len = all - lead;
    if len == 0 {
        return Some(0);
    }
    if negative {
        return None;
    }
    // Where the decimal point falls among the `len` significant digits.
    let point = len as i64 + exp + 3 - fraction as i64;
    // More whole digits than any request up to 2^64 has (20): too large.
    if point > 21 {
        return None;
    }
    // Below 10^-20 of a thousandth, times a unit below 10^19: under one, so one, rounded up.
    if point < -20 {
        return (max >= 1).then_some(1);
    }
    let unit = 1024u128.pow(binary);
    // The whole part: at most 21 digits, which 128 bits hold.
    let whole = (0..point.max(0) as usize).fold(0u128, |n, k| n * 10 + if k < len { digit(lead + k) } else { 0 });
    let mut total = whole.checked_mul(unit)?;
    // The fraction times the unit, rounded up: multiplied digit by digit from the last (it may
    // be longer than any integer; `-point` zeros before it when the point is further left),
    // what passes the fraction's digits is whole thousandths, any digit left below one more.
    let mut carry = 0u128;
    let mut below = false;
    let mut step = |d: u128| {
        let n = d * unit + carry;
        below |= n % 10 != 0;
        carry = n / 10;
    };
    for k in (point.max(0) as usize..len).rev() {
        step(digit(lead + k));
    }
    for _ in 0..(-point).max(0) {
        step(0);
    }
    total = total.checked_add(carry)?.checked_add(u128::from(below))?;
    u64::try_from(total).ok().filter(|&t| t <= max)
}

/// Formats a byte count exactly, so that [`parse_quantity`] reads back the same value
/// (docs/engines.md: memory is never rounded). A whole number of bytes is written in Kubernetes'
/// canonical style: the largest binary suffix that divides it (`8Gi`, `1536Mi`), else the
/// largest decimal one (`1100M`, `2500k`), else plain bytes; a fraction of a byte (a
/// quantity such as `1.1Ki` is 1126.4 bytes) as the shortest decimal that reads back the
/// same (`1126.4`).
pub fn format_bytes(bytes: f64) -> String {
    if !bytes.is_finite() {
        return format!("{bytes}");
    }
    if bytes > 0.0 && bytes.fract() == 0.0 {
        for (suffix, unit) in [
            ("Ei", 1024f64.powi(6)),
            ("Pi", 1024f64.powi(5)),
            ("Ti", 1024f64.powi(4)),
            ("Gi", 1024f64.powi(3)),
            ("Mi", 1024f64.powi(2)),
            ("Ki", 1024f64),
            ("E", 1e18),
            ("P", 1e15),
            ("T", 1e12),
            ("G", 1e9),
            ("M", 1e6),
            ("k", 1e3),
        ] {
            let n = bytes / unit;
            // `n * unit` is what `parse_quantity` computes from the text: only a suffix it
            // reads back exactly is used (a decimal unit need not divide an f64 exactly).
            if n >= 1.0 && n.fract() == 0.0 && n * unit == bytes {
                return format!("{n}{suffix}");
            }
        }
    }
    // Rust writes the shortest decimal that parses back to the same f64, never with an
    // exponent: plain bytes.
    format!("{bytes}")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn parses() {
        assert_eq!(parse_quantity("512Mi"), Ok(512.0 * 1024.0 * 1024.0));
        assert_eq!(parse_quantity("1.5G"), Ok(1.5e9));
        assert_eq!(parse_quantity("100m"), Ok(0.1));
        assert_eq!(parse_quantity("1e3"), Ok(1000.0));
        assert_eq!(parse_quantity("-1Gi"), Ok(-((1u64 << 30) as f64)));
        // Each suffix's multiplier is the double its literal is.
        for (text, want) in [
            ("1n", 1e-9),
            ("1u", 1e-6),
            ("1m", 1e-3),
            ("1k", 1e3),
            ("1M", 1e6),
            ("1G", 1e9),
            ("1T", 1e12),
            ("1P", 1e15),
            ("1E", 1e18),
            ("1e-9", 1e-9),
            ("1e22", 1e22),
            ("3Ei", 3.0 * 1024f64.powi(6)),
        ] {
            assert_eq!(parse_quantity(text), Ok(want), "{text}");
        }
        assert_eq!(parse_quantity("1e400"), Err("quantity is too large".into()));
        assert_eq!(
            parse_quantity("1x"),
            Err("unable to parse quantity's suffix `x`".into())
        );
        assert!(parse_quantity("1Gb").is_err());
        assert!(parse_quantity("abc").is_err());
        assert!(parse_quantity("").is_err());
    }

    #[test]
    fn formats() {
        assert_eq!(format_bytes(1536.0 * 1024.0 * 1024.0), "1536Mi");
        assert_eq!(format_bytes(8.0 * (1u64 << 30) as f64), "8Gi");
        // These were `1.02Gi` and `2.38Mi`, wrong by megabytes.
        assert_eq!(format_bytes(1_100_000_000.0), "1100M");
        assert_eq!(format_bytes(parse_quantity("2500k").unwrap()), "2500k");
        assert_eq!(format_bytes(1_100_000_001.0), "1100000001");
        assert_eq!(format_bytes(parse_quantity("1.1Ki").unwrap()), "1126.4");
        assert_eq!(format_bytes(1024.0 * 1000.0), "1000Ki");
        assert_eq!(format_bytes(0.5), "0.5");
    }

    /// A quantity as a user or Lookout writes it: a number (with a fraction sometimes) and
    /// any suffix `parse_quantity` knows.
    fn quantity_text() -> impl Strategy<Value = String> {
        let suffix = prop::sample::select(vec![
            "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E", "m", "u", "n", "e3", "E6",
        ]);
        (1u64..1_000_000, prop::option::of(0u32..1000), suffix).prop_map(|(whole, frac, suffix)| match frac {
            Some(f) => format!("{whole}.{f}{suffix}"),
            None => format!("{whole}{suffix}"),
        })
    }

    /// Thousandths of a CPU or GPU exactly, rounded up as Kubernetes reads a request, and
    /// refused past the most a reader takes rather than rounded to a double.
    #[test]
    fn thousandths_are_exact_and_rounded_up() {
        let max = 1u64 << 53;
        let t = |text: &str| thousandths_up(text, max);
        for (text, want) in [
            ("1", Some(1000)),
            ("+4", Some(4000)),
            ("500m", Some(500)),
            ("1.5", Some(1500)),
            ("2.5m", Some(3)),
            ("2.4m", Some(3)),
            ("100u", Some(1)),
            ("1n", Some(1)),
            ("1000000n", Some(1)),
            ("1500000n", Some(2)),
            ("1e-4", Some(1)),
            ("1e-400", Some(1)),
            ("0", Some(0)),
            ("0.000m", Some(0)),
            ("-0", Some(0)),
            ("1Ki", Some(1_024_000)),
            ("0.5Ki", Some(512_000)),
            ("0.0001Ki", Some(103)),
            ("2e3", Some(2_000_000)),
            ("9007199254740992m", Some(max)),
            ("9007199254740.992", Some(max)),
            ("9007199254740993m", None),
            ("9007199254740.9921", None),
            ("1e300", None),
            ("1Ei", None),
            ("-1", None),
            ("1Gb", None),
            ("", None),
            (".", None),
        ] {
            assert_eq!(t(text), want, "{text}");
        }
        // Exactly at a whole thousandth, a long fraction of zeros adds nothing.
        assert_eq!(t("1.000000000000000000000000000000000000000000"), Some(1000));
        assert_eq!(t("1.000000000000000000000000000000000000000001"), Some(1001));
    }

    proptest! {
        /// On every quantity a double holds closely, the exact thousandths are the double's,
        /// rounded up.
        #[test]
        fn thousandths_agree_with_the_double_rounded_up(text in quantity_text()) {
            let q = parse_quantity(&text).unwrap() * 1000.0;
            if let Some(m) = thousandths_up(&text, u64::MAX) {
                let m = m as f64;
                let slack = 1e-9 * q.max(1.0);
                prop_assert!(m + slack >= q && m < q + 1.0 + slack, "{} read {} from {}", text, m, q);
            } else {
                prop_assert!(q > 1.8e19, "{} refused at {}", text, q);
            }
        }

        #[test]
        fn printed_memory_reads_back_the_same_bytes(text in quantity_text()) {
            let bytes = parse_quantity(&text).unwrap();
            let printed = format_bytes(bytes);
            prop_assert_eq!(parse_quantity(&printed), Ok(bytes), "{} printed as {}", text, printed);
        }

        #[test]
        fn any_byte_count_reads_back(bytes in 1u64..(1 << 62)) {
            let b = bytes as f64;
            prop_assert_eq!(parse_quantity(&format_bytes(b)), Ok(b));
        }

        /// A memory mutation's result (`ceil(current × factor)`, or a static added) prints
        /// exactly too.
        #[test]
        fn grown_memory_reads_back(start in quantity_text(), factor in 1.0001f64..10.0, add in quantity_text()) {
            let m = parse_quantity(&start).unwrap();
            for grown in [(m * factor).ceil(), m + parse_quantity(&add).unwrap()] {
                prop_assert_eq!(parse_quantity(&format_bytes(grown)), Ok(grown), "{}", grown);
            }
        }
    }
}
