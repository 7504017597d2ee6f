//! The strict decoder of a JSON line: the one YAML documents use, so a bad line's error names
//! its field path and column as a YAML document's does.
//!
//! Owns: the JSON text read into a `yaml::Node` (a key met twice refused, with its column),
//! and the error words of a line that is not JSON. Must not: be on the hot path (it reads
//! only the lines the fast path gives up on).

use std::cell::Cell;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::diag::quote;
use crate::model::document::decode_document;
use crate::model::failure_history::FailureHistory;
use crate::model::{Kind, Resource};
use crate::yaml::{Node, Pos, Value};

/// One JSON line → the same strict decoder as YAML documents (so the errors are the same),
/// through a `yaml::Node` deserialized straight from the JSON text. `apiVersion`/`kind` may
/// be left out. Slow (a tree, a field path per field); used only for lines the fast path
/// gives up on.
pub fn decode_line_strict(line: &[u8], line_no: usize) -> Result<FailureHistory, String> {
    let pos = Pos {
        line: line_no,
        column: 1,
    };
    let track = Track {
        line,
        read: Cell::new(0),
        duplicate: Cell::new(None),
    };
    // Read through a counter of the bytes read, for the columns of a duplicate key (the
    // fast path, which reads the slice, gives up on one).
    let mut de = serde_json::Deserializer::from_reader(Counting {
        rest: line,
        read: &track.read,
    });
    let node = NodeSeed { pos, track: &track }
        .deserialize(&mut de)
        .and_then(|n| de.end().map(|()| n))
        .map_err(|e| {
            if let Some((key, at, first)) = track.duplicate.take() {
                // The words a `.json` or YAML history's duplicate key gets (`yaml`).
                return format!(
                    "invalid JSON at column {at}: duplicate key {} (first at column {first})",
                    quote(&key)
                );
            }
            // serde_json appends "at line 1 column N"; the line is ours to name, the column its.
            let text = e.to_string();
            let reason = text.split(" at line ").next().unwrap_or(&text).to_string();
            format!("invalid JSON at column {}: {reason}", e.column())
        })?;
    let Value::Map(mut entries) = node.value else {
        return Err("expected a JSON object (one FailureHistory per line)".to_string());
    };
    let scalar = |t: &str| Node {
        pos,
        value: Value::Scalar {
            text: t.to_string(),
            quoted: true,
        },
    };
    let has = |entries: &[(Node, Node)], key: &str| entries.iter().any(|(k, _)| k.as_scalar() == Some(key));
    if !has(&entries, "kind") {
        entries.insert(0, (scalar("kind"), scalar("FailureHistory")));
    }
    if !has(&entries, "apiVersion") {
        entries.insert(0, (scalar("apiVersion"), scalar("armadaproject.io/v1")));
    }
    let node = Node {
        pos,
        value: Value::Map(entries),
    };
    let doc = decode_document(node, 0, Some(&[Kind::FailureHistory]));
    let errors = crate::diag::describe_errors(&doc.diagnostics);
    match doc.resource {
        Some(Resource::FailureHistory(h)) if errors.is_empty() => Ok(*h),
        _ => Err(errors),
    }
}

/// What the strict decoder has read of its line: the bytes ([`Counting`]), and the duplicate
/// key it stopped at, with its column and its first one's.
struct Track<'a> {
    line: &'a [u8],
    read: Cell<usize>,
    duplicate: Cell<Option<(String, usize, usize)>>,
}

impl Track<'_> {
    /// The column of the key about to be read, `read` the bytes read before it: its opening
    /// quote is the first after them (serde_json reads at most one byte ahead, and only
    /// whitespace, `{` and `,` come before a key).
    fn key_column(&self, read: usize) -> usize {
        let rest = self.line.get(read..).unwrap_or_default();
        read + memchr::memchr(b'"', rest).unwrap_or(0) + 1
    }
}

/// The line as an `io::Read` that counts the bytes read (serde_json reads a reader byte by
/// byte).
struct Counting<'a> {
    rest: &'a [u8],
    read: &'a Cell<usize>,
}

impl std::io::Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.rest.read(buf)?;
        self.read.set(self.read.get() + n);
        Ok(n)
    }
}

/// Builds a `yaml::Node` from JSON: strings are quoted scalars, numbers and booleans plain
/// ones (spelled as serde_json spells them), so the YAML decoder's type checks apply as is.
/// A key met twice in one object is refused, as the YAML reader refuses it.
#[derive(Clone, Copy)]
struct NodeSeed<'t> {
    pos: Pos,
    track: &'t Track<'t>,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Node;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(self)
    }
}

impl NodeSeed<'_> {
    fn node(self, value: Value) -> Node {
        Node { pos: self.pos, value }
    }

    fn plain(self, text: String) -> Node {
        self.node(Value::Scalar { text, quoted: false })
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(self.plain(v.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(self.plain(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(self.plain(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        // `137.0` stays `137.0` (not `137`), so an integer field still rejects it.
        Ok(self.plain(serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(self.node(Value::Scalar {
            text: v.to_string(),
            quoted: true,
        }))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(self.node(Value::Scalar { text: v, quoted: true }))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(self.node(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(self.node(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(self.node(Value::Seq(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries: Vec<(Node, Node)> = Vec::with_capacity(map.size_hint().unwrap_or(8));
        let mut columns = Vec::with_capacity(entries.capacity());
        loop {
            let read = self.track.read.get();
            let Some(key) = map.next_key::<String>()? else { break };
            let column = self.track.key_column(read);
            if let Some(i) = entries.iter().position(|(k, _)| k.as_scalar() == Some(key.as_str())) {
                self.track.duplicate.set(Some((key, column, columns[i])));
                return Err(de::Error::custom("duplicate key"));
            }
            columns.push(column);
            let value = map.next_value_seed(self)?;
            entries.push((
                self.node(Value::Scalar {
                    text: key,
                    quoted: true,
                }),
                value,
            ));
        }
        Ok(self.node(Value::Map(entries)))
    }
}
