//! Strict decoding of marked YAML nodes into model values, collecting every error.
//!
//! Owns: the [`Decoder`] (type checks, unknown-field detection with suggestions, enum
//! spelling suggestions) that every document kind's decoder uses. Must not: apply semantic
//! rules (ranges, uniqueness, cross-field checks): those belong to `validate`, which also
//! serves the server.

use crate::diag::{index, join, one_of, quote, suggest, Diagnostic};
use crate::yaml::{Node, Pos, Value};

use super::duration::GoDuration;

/// Collects diagnostics while a document is decoded.
#[derive(Debug, Default)]
pub struct Decoder {
    pub diagnostics: Vec<Diagnostic>,
}

/// The entries of a mapping whose keys were all checked against the allowed list.
pub struct Fields<'n> {
    entries: Vec<(&'n str, &'n Node)>,
    pub path: String,
}

impl<'n> Fields<'n> {
    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .filter(|v| !v.is_null())
    }

    /// A present key, even when its value is null.
    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| *k == key)
    }

    pub fn path_of(&self, key: &str) -> String {
        join(&self.path, key)
    }
}

impl Decoder {
    pub fn error(&mut self, node: &Node, code: &'static str, path: &str, message: impl Into<String>) {
        self.diagnostics
            .push(Diagnostic::error(code, path, message).at(node.pos));
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    fn type_error(&mut self, node: &Node, path: &str, expected: &str) {
        let found = match &node.value {
            // A quoted `"5"` is a string in YAML; saying "found scalar `5`" would puzzle the
            // reader, who sees a 5.
            Value::Scalar { text, quoted: true } => format!("the quoted string {}", quote(text)),
            Value::Scalar { text, .. } => format!("{} {}", node.kind_name(), quote(text)),
            _ => format!("a {}", node.kind_name()),
        };
        let mut message = format!("expected {expected}, found {found}");
        if let Value::Scalar { text, quoted: true } = &node.value {
            if (expected.contains("integer") || expected.contains("number") || expected.contains("`true`"))
                && (text.parse::<f64>().is_ok() || matches!(text.as_str(), "true" | "false"))
            {
                message.push_str("; remove the quotes");
            }
        }
        self.error(node, "invalid-type", path, message);
    }

    /// Checks that `node` is a mapping whose keys are all in `allowed`; reports each unknown
    /// key (with a suggestion when one is close) at the key's own position.
    pub fn fields<'n>(&mut self, node: &'n Node, path: &str, allowed: &[&str]) -> Option<Fields<'n>> {
        let Value::Map(entries) = &node.value else {
            self.type_error(node, path, "a mapping");
            return None;
        };
        let mut out = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let name = key.as_scalar().unwrap_or_default();
            if allowed.contains(&name) {
                out.push((name, value));
                continue;
            }
            let message = match suggest(name, allowed) {
                Some(s) => format!("unknown field {}, did you mean `{s}`?", quote(name)),
                None => format!("unknown field {}, expected one of {}", quote(name), one_of(allowed)),
            };
            self.error(key, "unknown-field", &join(path, name), message);
        }
        Some(Fields {
            entries: out,
            path: path.to_string(),
        })
    }

    /// Reports a missing required field at the mapping's position.
    pub fn require<'n>(&mut self, fields: &Fields<'n>, parent: &Node, key: &str) -> Option<&'n Node> {
        let found = fields.get(key);
        if found.is_none() {
            self.error(
                parent,
                "missing-field",
                &fields.path_of(key),
                format!("missing required field `{key}`"),
            );
        }
        found
    }

    pub fn string(&mut self, node: &Node, path: &str) -> Option<String> {
        match &node.value {
            Value::Scalar { text, .. } => Some(text.clone()),
            _ => {
                self.type_error(node, path, "a string");
                None
            }
        }
    }

    pub fn bool(&mut self, node: &Node, path: &str) -> Option<bool> {
        match &node.value {
            Value::Scalar { text, quoted: false } => match text.as_str() {
                "true" | "True" | "TRUE" => Some(true),
                "false" | "False" | "FALSE" => Some(false),
                _ => {
                    self.type_error(node, path, "`true` or `false`");
                    None
                }
            },
            _ => {
                self.type_error(node, path, "`true` or `false`");
                None
            }
        }
    }

    /// An integer written as a plain (unquoted) number.
    pub fn int(&mut self, node: &Node, path: &str) -> Option<i64> {
        if let Value::Scalar { text, quoted: false } = &node.value {
            let t = text.strip_prefix('+').unwrap_or(text);
            if let Ok(v) = t.parse::<i64>() {
                return Some(v);
            }
            if t.bytes().all(|b| b.is_ascii_digit() || b == b'-') && !t.is_empty() {
                self.error(
                    node,
                    "invalid-value",
                    path,
                    format!("integer {} is out of range", quote(text)),
                );
                return None;
            }
        }
        self.type_error(node, path, "an integer");
        None
    }

    /// A non-negative integer that fits in 32 bits (`retryLimit`).
    pub fn u32(&mut self, node: &Node, path: &str) -> Option<u32> {
        let v = self.int(node, path)?;
        match u32::try_from(v) {
            Ok(v) => Some(v),
            Err(_) if v < 0 => {
                self.error(node, "invalid-value", path, format!("must not be negative, got `{v}`"));
                None
            }
            Err(_) => {
                self.error(node, "invalid-value", path, format!("`{v}` is too large"));
                None
            }
        }
    }

    pub fn float(&mut self, node: &Node, path: &str) -> Option<f64> {
        if let Value::Scalar { text, quoted: false } = &node.value {
            let parsed = match text.as_str() {
                ".inf" | ".Inf" | ".INF" | "+.inf" => Some(f64::INFINITY),
                "-.inf" | "-.Inf" | "-.INF" => Some(f64::NEG_INFINITY),
                ".nan" | ".NaN" | ".NAN" => Some(f64::NAN),
                t if t.bytes().any(|b| b.is_ascii_digit()) && !t.contains(['_', 'x', 'o']) => t.parse().ok(),
                _ => None,
            };
            if parsed.is_some() {
                return parsed;
            }
        }
        self.type_error(node, path, "a number");
        None
    }

    pub fn duration(&mut self, node: &Node, path: &str) -> Option<GoDuration> {
        let text = match &node.value {
            Value::Scalar { text, .. } => text,
            _ => {
                self.type_error(node, path, "a duration such as `10s`");
                return None;
            }
        };
        match GoDuration::parse(text) {
            Ok(d) => Some(d),
            Err(e) => {
                self.error(
                    node,
                    "invalid-value",
                    path,
                    format!("invalid duration {}: {e}", quote(text)),
                );
                None
            }
        }
    }

    pub fn seq<'n>(&mut self, node: &'n Node, path: &str) -> Option<&'n [Node]> {
        match &node.value {
            Value::Seq(items) => Some(items),
            _ => {
                self.type_error(node, path, "a list");
                None
            }
        }
    }

    /// A list of strings; a single scalar is not silently promoted to a list.
    pub fn strings(&mut self, node: &Node, path: &str) -> Option<Vec<String>> {
        let items = self.seq(node, path)?;
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match self.string(item, &index(path, i)) {
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// A string that must be one of `names` exactly; otherwise an error with the nearest
    /// spelling.
    pub fn enumeration<T>(
        &mut self,
        node: &Node,
        path: &str,
        names: &[&str],
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<T> {
        let text = match &node.value {
            Value::Scalar { text, .. } => text,
            _ => {
                self.type_error(node, path, &format!("one of {}", one_of(names)));
                return None;
            }
        };
        if let Some(v) = parse(text) {
            return Some(v);
        }
        let mut message = format!("unknown value {}, expected one of {}", quote(text), one_of(names));
        if let Some(s) = suggest(text, names) {
            message.push_str(&format!("; did you mean `{s}`?"));
        }
        self.error(node, "invalid-value", path, message);
        None
    }
}

/// The position of the node at `path` (`spec.rules[2].action`), or of its nearest existing
/// ancestor.
pub fn locate(root: &Node, path: &str) -> Option<Pos> {
    let mut node = root;
    let mut best = root.pos;
    if path.is_empty() {
        return Some(best);
    }
    for segment in path.split('.') {
        let (key, rest) = segment
            .split_once('[')
            .map(|(k, r)| (k, Some(r)))
            .unwrap_or((segment, None));
        if !key.is_empty() {
            match node.get(key) {
                Some(n) => node = n,
                None => {
                    // An unknown key: point at the key itself when it exists.
                    if let Value::Map(entries) = &node.value {
                        if let Some((k, _)) = entries.iter().find(|(k, _)| k.as_scalar() == Some(key)) {
                            return Some(k.pos);
                        }
                    }
                    return Some(best);
                }
            }
            best = node.pos;
        }
        if let Some(rest) = rest {
            for idx in rest.split('[') {
                // A map key may itself contain `[` (a label such as `a[b`): not an index, so
                // the nearest ancestor is the best place there is.
                let Ok(i) = idx.trim_end_matches(']').parse::<usize>() else {
                    return Some(best);
                };
                match &node.value {
                    Value::Seq(items) if i < items.len() => {
                        node = &items[i];
                        best = node.pos;
                    }
                    _ => return Some(best),
                }
            }
        }
    }
    Some(best)
}
