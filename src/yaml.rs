//! YAML (and JSON, which is YAML) text → a tree of marked nodes, and back.
//!
//! Owns: turning text into [`Node`]s that remember where they stood (line and column), one
//! tree per document, with hard limits on nesting depth and on alias expansion so that a
//! hostile file (a "billion laughs" alias bomb, 10,000 nested brackets) is an error, not an
//! unbounded allocation; a node written back ([`write_entries`]); a JSON value written as
//! YAML every reader, YAML 1.1's too, reads back the same ([`from_json`]). Must not: know
//! anything about RetryPolicy or any other kind; read files; print.

pub mod from_json;

use std::collections::HashMap;
use std::fmt;

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Deepest nesting accepted. Real documents are under 10 levels deep.
pub const MAX_DEPTH: usize = 64;
/// Most nodes one stream may expand to, aliases included. Guards against alias bombs and
/// keeps memory bounded (a node costs ~100 bytes, so this caps the tree near 25 MiB). The
/// largest legal policy (100 rules, 255 exit codes each) is under 30,000 nodes.
pub const MAX_NODES: usize = 250_000;

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

impl Pos {
    fn from_marker(m: &Marker) -> Pos {
        // yaml-rust2 reports 1-based lines and 0-based columns.
        Pos {
            line: m.line(),
            column: m.col() + 1,
        }
    }
}

/// One YAML node and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub pos: Pos,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `~`, `null`, or nothing at all.
    Null,
    /// A scalar, with whether it was quoted (a quoted `"5"` is a string, never a number).
    Scalar {
        text: String,
        quoted: bool,
    },
    Seq(Vec<Node>),
    /// Keys in document order. Keys are scalars; a complex key is kept as its text form.
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// The kind of node in words, for "expected a mapping, found a sequence".
    pub fn kind_name(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Scalar { .. } => "scalar",
            Value::Seq(_) => "sequence",
            Value::Map(_) => "mapping",
        }
    }

    pub fn as_scalar(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// Looks a key up in a mapping node.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k.as_scalar() == Some(key)).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A syntax error: where, and what the parser said.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub pos: Pos,
    pub message: String,
    /// How many documents parsed cleanly before the error.
    pub documents_before: usize,
}

/// Every document of a stream, in order; a syntax error ends the stream but keeps the
/// documents already read so that their own errors can still be reported.
#[derive(Debug, Default)]
pub struct Stream {
    pub documents: Vec<Node>,
    pub error: Option<SyntaxError>,
}

/// Parses a YAML stream. Never panics; every failure becomes a [`SyntaxError`].
pub fn parse_stream(text: &str) -> Stream {
    let mut builder = Builder {
        parser: Parser::new_from_str(text),
        anchors: HashMap::new(),
        nodes: 0,
    };
    let mut stream = Stream::default();
    loop {
        match builder.next_document() {
            Ok(Some(doc)) => stream.documents.push(doc),
            Ok(None) => break,
            Err((pos, message)) => {
                stream.error = Some(SyntaxError {
                    pos,
                    message,
                    documents_before: stream.documents.len(),
                });
                break;
            }
        }
    }
    stream
}

type BuildResult<T> = Result<T, (Pos, String)>;

struct Builder<'a> {
    parser: Parser<std::str::Chars<'a>>,
    /// Each anchored node with its size in nodes, so that an alias is counted before it is
    /// copied (copying first would be the very allocation the limit is there to prevent).
    anchors: HashMap<usize, (Node, usize)>,
    nodes: usize,
}

impl Builder<'_> {
    fn next_event(&mut self) -> BuildResult<(Event, Pos)> {
        match self.parser.next_token() {
            Ok((event, marker)) => Ok((event, Pos::from_marker(&marker))),
            Err(e) => {
                // yaml-rust2 has its own nesting guard for flow collections; say it in the
                // same words as ours.
                let message = match e.info() {
                    "recursion limit exceeded" => format!("nesting deeper than {MAX_DEPTH} levels"),
                    other => other.to_string(),
                };
                Err((Pos::from_marker(e.marker()), message))
            }
        }
    }

    fn next_document(&mut self) -> BuildResult<Option<Node>> {
        loop {
            let (event, pos) = self.next_event()?;
            match event {
                Event::StreamStart | Event::Nothing | Event::DocumentEnd => continue,
                Event::StreamEnd => return Ok(None),
                Event::DocumentStart => {
                    // Anchors are scoped to one document.
                    self.anchors.clear();
                    let (first, first_pos) = self.next_event()?;
                    if matches!(first, Event::DocumentEnd) {
                        return Ok(Some(Node {
                            pos: first_pos,
                            value: Value::Null,
                        }));
                    }
                    let node = self.node(first, first_pos, 0)?;
                    return Ok(Some(node));
                }
                other => {
                    return Err((pos, format!("unexpected YAML event {other:?}")));
                }
            }
        }
    }

    fn count(&mut self, pos: Pos, n: usize, alias: bool) -> BuildResult<()> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES {
            let why = if alias {
                format!("aliases expand the input to more than {MAX_NODES} nodes (an alias bomb?)")
            } else {
                format!("the input has more than {MAX_NODES} nodes (a policy file has a few hundred)")
            };
            return Err((pos, format!("{why}; refusing to read further")));
        }
        Ok(())
    }

    fn node(&mut self, event: Event, pos: Pos, depth: usize) -> BuildResult<Node> {
        if depth > MAX_DEPTH {
            return Err((pos, format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        self.count(pos, 1, false)?;
        let (node, anchor) = match event {
            Event::Scalar(text, style, anchor, tag) => {
                let quoted = !matches!(style, TScalarStyle::Plain) || tag.is_some();
                let value = if !quoted && matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL") {
                    Value::Null
                } else {
                    Value::Scalar { text, quoted }
                };
                (Node { pos, value }, anchor)
            }
            Event::Alias(id) => {
                let Some(size) = self.anchors.get(&id).map(|(_, size)| *size) else {
                    return Err((pos, "alias to an unknown anchor".to_string()));
                };
                self.count(pos, size, true)?;
                let value = self.anchors[&id].0.value.clone();
                return Ok(Node { pos, value });
            }
            Event::SequenceStart(anchor, _) => {
                let mut items = Vec::new();
                loop {
                    let (event, item_pos) = self.next_event()?;
                    if matches!(event, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(event, item_pos, depth + 1)?);
                }
                (
                    Node {
                        pos,
                        value: Value::Seq(items),
                    },
                    anchor,
                )
            }
            Event::MappingStart(anchor, _) => {
                let mut entries: Vec<(Node, Node)> = Vec::new();
                loop {
                    let (event, key_pos) = self.next_event()?;
                    if matches!(event, Event::MappingEnd) {
                        break;
                    }
                    let key = self.node(event, key_pos, depth + 1)?;
                    let key = match key.value {
                        Value::Scalar { .. } => key,
                        Value::Null => Node {
                            pos: key.pos,
                            value: Value::Scalar {
                                text: String::new(),
                                quoted: false,
                            },
                        },
                        _ => return Err((key.pos, "mapping keys must be scalars".to_string())),
                    };
                    let (event, value_pos) = self.next_event()?;
                    let value = self.node(event, value_pos, depth + 1)?;
                    if let Some((first, _)) = entries.iter().find(|(k, _)| k.value == key.value) {
                        return Err((
                            key.pos,
                            format!(
                                "duplicate key `{}` (first at {})",
                                key.as_scalar().unwrap_or_default(),
                                first.pos
                            ),
                        ));
                    }
                    entries.push((key, value));
                }
                // A block mapping's start marker can sit after its first key; the first key
                // is where a reader looks.
                let pos = entries.first().map_or(pos, |(k, _)| k.pos.min(pos));
                (
                    Node {
                        pos,
                        value: Value::Map(entries),
                    },
                    anchor,
                )
            }
            other => return Err((pos, format!("unexpected YAML event {other:?}"))),
        };
        if anchor > 0 {
            let size = node_count(&node);
            self.anchors.insert(anchor, (node.clone(), size));
        }
        Ok(node)
    }
}

fn node_count(node: &Node) -> usize {
    match &node.value {
        Value::Null | Value::Scalar { .. } => 1,
        Value::Seq(items) => 1 + items.iter().map(node_count).sum::<usize>(),
        Value::Map(entries) => {
            1 + entries
                .iter()
                .map(|(k, v)| node_count(k) + node_count(v))
                .sum::<usize>()
        }
    }
}

/// A YAML double-quoted scalar of `s`: printable ASCII as is, everything else escaped, so
/// that no message text can end the scalar or the line.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(ch),
            c if (c as u32) <= 0xFFFF => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// A scalar as written back: plain as it was when it was plain and printable ASCII (so it
/// reads back the same), else [`quoted`] (a quoted scalar stays a string; a line break or a
/// control character never reaches the text).
fn scalar_text(text: &str, was_quoted: bool) -> String {
    let plain = !was_quoted && !text.is_empty() && text.chars().all(|c| matches!(c, ' '..='~'));
    if plain {
        text.to_string()
    } else {
        quoted(text)
    }
}

/// A node written inline when it has no lines of its own: a scalar, null, `{}` or `[]`.
fn inline(node: &Node) -> Option<String> {
    match &node.value {
        Value::Null => Some("null".into()),
        Value::Scalar { text, quoted } => Some(scalar_text(text, *quoted)),
        Value::Map(entries) if entries.is_empty() => Some("{}".into()),
        Value::Seq(items) if items.is_empty() => Some("[]".into()),
        _ => None,
    }
}

/// The entries of a mapping written back as block YAML at `indent` spaces, in their order:
/// what a document held, without its comments and with its scalars plain or double-quoted
/// ([`scalar_text`]). For writing a document back with one key replaced (`suggest` keeps a
/// deployed config's other keys as they were).
pub fn write_entries(entries: &[(Node, Node)], indent: usize, out: &mut String) {
    for (key, value) in entries {
        write_entry(key, value, indent, out);
    }
}

/// One `key: value` at `indent` spaces.
pub fn write_entry(key: &Node, value: &Node, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    let key = inline(key).unwrap_or_else(|| quoted(""));
    match inline(value) {
        Some(v) => out.push_str(&format!("{pad}{key}: {v}\n")),
        None => {
            out.push_str(&format!("{pad}{key}:\n"));
            write_block(value, indent + 2, out);
        }
    }
}

/// A mapping's entries or a sequence's items (not inline) at `indent` spaces.
fn write_block(node: &Node, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match &node.value {
        Value::Map(entries) => write_entries(entries, indent, out),
        Value::Seq(items) => {
            for item in items {
                match (inline(item), &item.value) {
                    (Some(v), _) => out.push_str(&format!("{pad}- {v}\n")),
                    (None, Value::Map(entries)) => {
                        // The first entry on the dash's line, the others under it.
                        let mut first = String::new();
                        write_entries(&entries[..1], indent + 2, &mut first);
                        out.push_str(&format!("{pad}- {}", &first[indent + 2..]));
                        write_entries(&entries[1..], indent + 2, out);
                    }
                    (None, _) => {
                        out.push_str(&format!("{pad}-\n"));
                        write_block(item, indent + 2, out);
                    }
                }
            }
        }
        Value::Null | Value::Scalar { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based() {
        let s = parse_stream("a: 1\nb:\n  c: x\n");
        let doc = &s.documents[0];
        assert_eq!(doc.get("a").unwrap().pos, Pos { line: 1, column: 4 });
        let c = doc.get("b").unwrap().get("c").unwrap();
        assert_eq!(c.pos, Pos { line: 3, column: 6 });
    }

    #[test]
    fn several_documents_and_error_keeps_earlier() {
        let s = parse_stream("a: 1\n---\nb: 2\n---\nc: [\n");
        assert_eq!(s.documents.len(), 2);
        let err = s.error.unwrap();
        assert_eq!(err.documents_before, 2);
    }

    #[test]
    fn alias_bomb_is_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let s = parse_stream(&text);
        assert!(s.error.unwrap().message.contains("alias bomb"));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = "[".repeat(10_000);
        let s = parse_stream(&text);
        assert!(s.error.is_some());
    }

    #[test]
    fn written_back_entries_read_back_the_same() {
        let text = "a: 1\nb: \"x: y\"\nc:\n  - 1\n  - k: v\n    l: [w]\n  - []\n  -\n    - z\nd: {}\ne: \"\u{2028}\u{85}é\"\nf: ~\n";
        let node = parse_stream(text).documents.remove(0);
        let Value::Map(entries) = &node.value else { panic!() };
        let mut out = String::new();
        write_entries(entries, 0, &mut out);
        assert!(out.is_ascii(), "{out}");
        let back = parse_stream(&out).documents.remove(0);
        let strip = |n: &Node| format!("{:?}", n.value).replace(char::is_numeric, "");
        assert_eq!(strip(&back), strip(&node), "{out}");
        assert!(out.contains("e: \"\\u2028\\u0085\\u00E9\"\n"), "{out}");
    }

    #[test]
    fn quoted_scalars_are_marked() {
        let s = parse_stream("a: \"5\"\nb: 5\nc: ~\n");
        let d = &s.documents[0];
        assert!(matches!(d.get("a").unwrap().value, Value::Scalar { quoted: true, .. }));
        assert!(matches!(d.get("b").unwrap().value, Value::Scalar { quoted: false, .. }));
        assert!(d.get("c").unwrap().is_null());
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let s = parse_stream("a: 1\na: 2\n");
        assert!(s.error.unwrap().message.contains("duplicate key `a`"));
    }
}
