//! A map's members written as JSON (without braces) or as YAML (indented), a list's items
//! built, written and dropped one at a time: the bytes the whole map gives at once, without
//! holding it.
//!
//! Owns: that byte identity. Must not: name the record's fields or choose its members
//! (`record` does).

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use crate::output::Format;

/// A member of the record written one at a time ([`write_fields`]).
pub(super) enum Field<'a> {
    One(&'static str, Value),
    /// A list whose items are built, written and dropped one by one: a list of every
    /// signature held whole as `Value`s (several copies of it, as JSON, YAML and text) took
    /// 280 MiB at 10,000 signatures.
    Each(&'static str, Box<dyn Iterator<Item = Value> + 'a>),
}

/// `fields` as the members of a JSON object, without braces (`"k":v,"k":[…]`), or of a YAML
/// mapping indented by `indent`: the bytes [`json_fields`] and [`yaml_of`] give of the whole
/// map, a list's items rendered one at a time (a YAML block sequence is its items' texts one
/// after the other, at its key's indent).
pub(super) fn write_fields<'a>(
    out: &mut dyn Write,
    format: Format,
    fields: impl IntoIterator<Item = Field<'a>>,
    indent: usize,
) -> io::Result<()> {
    for (k, field) in fields.into_iter().enumerate() {
        if k > 0 && format == Format::Json {
            out.write_all(b",")?;
        }
        let (key, value) = match field {
            Field::One(key, value) => (key, value),
            Field::Each(key, items) => {
                let mut items = items.peekable();
                if items.peek().is_none() {
                    // `[]` in both formats, as the whole map gives it.
                    (key, Value::Array(Vec::new()))
                } else {
                    write_items(out, format, key, items, indent)?;
                    continue;
                }
            }
        };
        let mut m = Map::new();
        m.insert(key.into(), value);
        match format {
            Format::Json => out.write_all(json_fields(&m).as_bytes())?,
            _ => out.write_all(yaml_of(&m, indent).as_bytes())?,
        }
    }
    Ok(())
}

/// A list of at least one item as a member of [`write_fields`]'s.
fn write_items(
    out: &mut dyn Write,
    format: Format,
    key: &str,
    items: impl Iterator<Item = Value>,
    indent: usize,
) -> io::Result<()> {
    if format == Format::Json {
        write!(out, "{}:[", json!(key))?;
        for (k, item) in items.enumerate() {
            if k > 0 {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut *out, &item).map_err(io::Error::other)?;
        }
        return out.write_all(b"]");
    }
    writeln!(out, "{}{key}:", " ".repeat(indent))?;
    for item in items {
        out.write_all(yaml_lines(&Value::Array(vec![item]), indent).as_bytes())?;
    }
    Ok(())
}

pub(super) fn yaml_of(m: &Map<String, Value>, indent: usize) -> String {
    yaml_lines(&Value::Object(m.clone()), indent)
}

/// `value` as YAML, each line indented by `indent`.
fn yaml_lines(value: &Value, indent: usize) -> String {
    let text = serde_yaml::to_string(value).unwrap_or_default();
    let pad = " ".repeat(indent);
    let mut out = String::new();
    for line in text.lines() {
        if line == "---" {
            continue;
        }
        out.push_str(&pad);
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `"k":v,"k":v` of a map, without braces.
pub(super) fn json_fields(m: &Map<String, Value>) -> String {
    let s = Value::Object(m.clone()).to_string();
    s[1..s.len() - 1].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields written one item at a time are the bytes of the whole map rendered at once, in
    /// JSON and in YAML at any indent: empty lists, one item, many, nested maps and lists, and
    /// strings YAML must quote or break.
    #[test]
    fn fields_streamed_are_the_whole_maps_bytes() {
        let items = || {
            vec![
                json!({"signature": "exit:1@main \"a: b\"", "runs": 3, "nodes": {"top": [{"node": "n", "runs": 1}], "distinct": 1}}),
                json!({"signature": "- x\nsecond line", "runs": null, "empty": [], "map": {}}),
                json!({"signature": "", "rate": 0.5, "deep": [[1, 2], ["x", {"y": "z"}]]}),
            ]
        };
        let fields = |n: usize| {
            [
                Field::One("jobs", json!(7)),
                Field::Each("none", Box::new(std::iter::empty())),
                Field::Each("some", Box::new(items().into_iter().take(n))),
                Field::One("after", json!({"a": [1], "b": "c"})),
            ]
        };
        for n in 0..=3 {
            let mut whole = Map::new();
            whole.insert("jobs".into(), json!(7));
            whole.insert("none".into(), json!([]));
            whole.insert("some".into(), Value::Array(items().into_iter().take(n).collect()));
            whole.insert("after".into(), json!({"a": [1], "b": "c"}));
            let mut json = Vec::new();
            write_fields(&mut json, Format::Json, fields(n), 2).unwrap();
            assert_eq!(String::from_utf8(json).unwrap(), json_fields(&whole), "{n} items");
            for indent in [0, 2, 4] {
                let mut yaml = Vec::new();
                write_fields(&mut yaml, Format::Yaml, fields(n), indent).unwrap();
                assert_eq!(
                    String::from_utf8(yaml).unwrap(),
                    yaml_of(&whole, indent),
                    "{n} items at {indent}"
                );
            }
        }
    }
}
