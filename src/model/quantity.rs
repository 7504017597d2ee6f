//! Kubernetes resource quantities (`512Mi`, `1Gi`, `1.5G`, `100m`), as `mutate.resources.memory.static`.
//!
//! Owns: parsing a quantity into a number of base units. Must not: round or reformat the
//! user's text (the text is what is stored and sent).

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

/// Formats a byte count the way `kubectl` would show memory: the largest binary suffix that
/// divides it, else plain bytes.
pub fn format_bytes(bytes: f64) -> String {
    let b = bytes.round();
    if b <= 0.0 || !b.is_finite() {
        return format!("{b}");
    }
    for (suffix, unit) in [
        ("Ei", 1u64 << 60),
        ("Pi", 1 << 50),
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ] {
        let unit = unit as f64;
        if b >= unit && (b / unit).fract() == 0.0 {
            return format!("{}{suffix}", b / unit);
        }
    }
    for (suffix, unit) in [("Gi", (1u64 << 30) as f64), ("Mi", (1u64 << 20) as f64)] {
        if b >= unit {
            return format!("{:.2}{suffix}", b / unit);
        }
    }
    format!("{b}")
}

#[cfg(test)]
mod tests {
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
    }
}
