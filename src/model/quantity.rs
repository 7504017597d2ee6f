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
    let multiplier = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        other => {
            let exp = other
                .strip_prefix('e')
                .or_else(|| other.strip_prefix('E'))
                .ok_or_else(|| format!("unable to parse quantity's suffix `{other}`"))?;
            let exp: i32 = exp
                .parse()
                .map_err(|_| format!("unable to parse quantity's suffix `{other}`"))?;
            10f64.powi(exp)
        }
    };
    let result = value * multiplier;
    if !result.is_finite() {
        return Err("quantity is too large".into());
    }
    Ok(result)
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

    proptest! {
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
