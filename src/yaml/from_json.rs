//! A JSON value written as YAML that every reader reads back as the same value: the one
//! writer of `get -o yaml`, `history -o yaml`, `tune`'s and `suggest`'s documents and
//! `--emit`'s manifests.
//!
//! Owns: [`yaml_of`]. Must not: parse, read files or know any document's kind.
//!
//! Every string stays a string for the readers the documents go to: kubectl and armadactl
//! read YAML 1.1 (go-yaml v2), as PyYAML does, where a plain `on`, `no`, `y`, `1_000`, `0x1F`,
//! `012`, `1:20` or `2026-11-28` is a boolean, a number or a time, and serde_yaml writes YAML
//! 1.2, which quotes only what 1.2 retypes (`true`, `1`, `0o17`, `1e3`, `~`, the empty
//! string). So [`yaml_of`] quotes what either retypes, keys and values alike. And serde_yaml
//! writes a string holding U+2028 or U+2029 (line breaks in YAML 1.1) as a folded scalar that
//! YAML 1.2 readers (this crate's parser, Go's yaml.v3) read back with extra spaces: such a
//! rare value is written as JSON instead, which is YAML too, with those two escaped.

use serde_json::Value;

/// `value` as YAML (a block mapping for an object; serializing JSON values cannot fail):
/// serde_yaml's text, with every string a YAML 1.1 reader would read as another type
/// ([`retyped_by_yaml11`]) single-quoted, as serde_yaml quotes those of YAML 1.2; a value
/// holding U+2028 or U+2029 as JSON.
pub fn yaml_of(value: &Value) -> String {
    if has_yaml11_break(value) {
        let json = serde_json::to_string_pretty(value).unwrap_or_default();
        return json.replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029") + "\n";
    }
    if !any_retyped(value) {
        return serde_yaml::to_string(value).expect("a JSON value is YAML");
    }
    // Such strings go through serde_yaml as stand-ins it writes plain (`MARKER0z`), then
    // each stand-in is replaced by its string, quoted, in one pass over the text. The marker
    // is in no string of `value`, so a stand-in is found only where it was put.
    let mut marker = String::from("retryctl-yaml11-");
    while holds(value, &marker) {
        marker.push('x');
    }
    let mut quoted = Vec::new();
    let stood_in = stand_in(value, &marker, &mut quoted);
    let text = serde_yaml::to_string(&stood_in).expect("a JSON value is YAML");
    let mut out = String::with_capacity(text.len() + 4 * quoted.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(&marker) {
        out.push_str(&rest[..at]);
        let after = &rest[at + marker.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        match (
            after[..digits].parse::<usize>().ok().and_then(|i| quoted.get(i)),
            after.as_bytes().get(digits),
        ) {
            (Some(s), Some(b'z')) => {
                out.push('\'');
                out.push_str(&s.replace('\'', "''"));
                out.push('\'');
                rest = &after[digits + 1..];
            }
            // Never met (the marker is in no string), kept as it is if it were.
            _ => {
                out.push_str(&marker);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether any string of `value` (a key or a value) holds a line break of YAML 1.1 only.
fn has_yaml11_break(value: &Value) -> bool {
    let breaks = |s: &str| s.contains(['\u{2028}', '\u{2029}']);
    match value {
        Value::String(s) => breaks(s),
        Value::Array(items) => items.iter().any(has_yaml11_break),
        Value::Object(m) => m.iter().any(|(k, v)| breaks(k) || has_yaml11_break(v)),
        _ => false,
    }
}

/// Whether any string of `value` (a key or a value) is one a YAML 1.1 reader retypes: most
/// values hold none, and are written by serde_yaml alone.
fn any_retyped(value: &Value) -> bool {
    match value {
        Value::String(s) => retyped_by_yaml11(s),
        Value::Array(items) => items.iter().any(any_retyped),
        Value::Object(map) => map.iter().any(|(k, v)| retyped_by_yaml11(k) || any_retyped(v)),
        _ => false,
    }
}

/// Whether any string of `value` (a key or a value) holds `text`.
fn holds(value: &Value, text: &str) -> bool {
    match value {
        Value::String(s) => s.contains(text),
        Value::Array(items) => items.iter().any(|v| holds(v, text)),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains(text) || holds(v, text)),
        _ => false,
    }
}

/// `value` with each string that [`retyped_by_yaml11`] in its place's stand-in, pushed on
/// `quoted`.
fn stand_in(value: &Value, marker: &str, quoted: &mut Vec<String>) -> Value {
    match value {
        Value::String(s) => Value::String(one(s, marker, quoted)),
        Value::Array(items) => Value::Array(items.iter().map(|v| stand_in(v, marker, quoted)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (one(k, marker, quoted), stand_in(v, marker, quoted)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `s`, or its stand-in when a YAML 1.1 reader retypes it.
fn one(s: &str, marker: &str, quoted: &mut Vec<String>) -> String {
    if !retyped_by_yaml11(s) {
        return s.to_string();
    }
    quoted.push(s.to_string());
    format!("{marker}{}z", quoted.len() - 1)
}

/// Whether a YAML 1.1 reader (go-yaml v2, kubectl's and armadactl's; PyYAML) reads the plain
/// scalar `s` as anything but this string: a boolean (`y`, `yes`, `on`, `off`, …), a null
/// (`~`, `null`, the empty string), an integer (`1_000`, `012`, `0b1010`, `0o17`, `0x1F`,
/// sexagesimal `1:20`), a float (`1.5`, `.5`, `1e3`, `.inf`, `.nan`), a date (`2026-11-28`),
/// or a merge key or value (`<<`, `=`). Where the readers differ, what either retypes: a
/// string quoted that need not be is still a string.
fn retyped_by_yaml11(s: &str) -> bool {
    const WORDS: [&str; 32] = [
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True",
        "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", ".nan", ".NaN", ".NAN", "<<", "=",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    let b = unsigned.as_bytes();
    // A date, with a time or not: four digits, `-`, a digit.
    if b.len() > 5 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[5].is_ascii_digit() {
        return true;
    }
    // An integer in base 2, 8 or 16, `_` anywhere after the prefix.
    let based = |prefixes: [&str; 2], digit: fn(&u8) -> bool| {
        prefixes.iter().any(|p| {
            unsigned
                .strip_prefix(p)
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c == b'_' || digit(&c)))
        })
    };
    if based(["0b", "0B"], |c| matches!(c, b'0' | b'1'))
        || based(["0o", "0O"], |c| matches!(c, b'0'..=b'7'))
        || based(["0x", "0X"], u8::is_ascii_hexdigit)
    {
        return true;
    }
    // A decimal, octal or sexagesimal integer, or a float: digits, `_`, `:` before the dot,
    // at most one dot, an exponent.
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
        !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
    });
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let starts = whole.starts_with(|c: char| c.is_ascii_digit()) || (whole.is_empty() && mantissa.starts_with('.'));
    exponent_ok
        && starts
        && whole.bytes().all(|c| c.is_ascii_digit() || c == b'_' || c == b':')
        && fraction.bytes().all(|c| c.is_ascii_digit() || c == b'_')
        && mantissa.bytes().any(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a YAML 1.1 reader retypes is single-quoted, a key as a value; everything else is
    /// written as serde_yaml writes it.
    #[test]
    fn strings_a_yaml_1_1_reader_retypes_are_quoted() {
        for s in [
            "on",
            "On",
            "ON",
            "off",
            "no",
            "No",
            "yes",
            "YES",
            "y",
            "Y",
            "n",
            "N",
            "true",
            "False",
            "null",
            "Null",
            "~",
            "",
            "1_000",
            "0x1F",
            "0X1f",
            "0o17",
            "0b1010",
            "012",
            "0",
            "-1",
            "+12",
            "1e3",
            "1E+3",
            "1.5",
            "1.",
            ".5",
            "-.5",
            "1_000.5",
            ".inf",
            "-.Inf",
            "+.INF",
            ".nan",
            ".NaN",
            "1:20",
            "190:20:30",
            "1:20.5",
            "2026-11-28",
            "2026-11-28T10:00:00Z",
            "2001-12-14 21:59:43.10 -5",
            "<<",
            "=",
        ] {
            let want = format!("'{s}': '{s}'\nlist:\n- '{s}'\n");
            assert_eq!(yaml_of(&serde_json::json!({s: s, "list": [s]})), want, "{s:?}");
            assert!(retyped_by_yaml11(s), "{s:?}");
        }
        for s in [
            "1Gi",
            "img:1",
            "0/2",
            "1.2.3",
            "1e",
            "0x",
            "e3",
            "-",
            "_1",
            "onion",
            "yesterday",
            "retryctl-simulate",
            "--queue",
            "$(JOB_COMPLETION_INDEX)/2",
            "/data/partial-0.json",
            "2026-ml",
        ] {
            assert!(!retyped_by_yaml11(s), "{s:?}");
            assert_eq!(
                yaml_of(&serde_json::json!({"k": s})),
                serde_yaml::to_string(&serde_json::json!({"k": s})).unwrap(),
                "{s:?}"
            );
        }
    }

    /// A string that holds the stand-ins' marker moves the marker on: nothing is replaced
    /// but what was stood in.
    #[test]
    fn a_string_holding_the_marker_is_kept() {
        let v = serde_json::json!({"a": "retryctl-yaml11-0z", "b": "on", "c": ["retryctl-yaml11-x1z", "off"]});
        assert_eq!(
            yaml_of(&v),
            "a: retryctl-yaml11-0z\nb: 'on'\nc:\n- retryctl-yaml11-x1z\n- 'off'\n"
        );
    }

    #[test]
    fn yaml11_line_separators_are_written_as_json() {
        let value = serde_json::json!({"a": "x\u{2028}y", "b": ["\u{2029}"], "c": 1});
        assert_eq!(
            yaml_of(&value),
            "{\n  \"a\": \"x\\u2028y\",\n  \"b\": [\n    \"\\u2029\"\n  ],\n  \"c\": 1\n}\n"
        );
    }
}
