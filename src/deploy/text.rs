//! The documents' YAML text: a value as a block mapping, an item of a block sequence, and
//! comment lines.
//!
//! Owns: [`yaml`], [`list_item`], [`comment`]. Must not: do I/O or decide what a document
//! holds.

/// `value` as YAML (a block mapping; serializing JSON values cannot fail).
pub fn yaml(value: &serde_json::Value) -> String {
    serde_yaml::to_string(value).expect("a JSON value is YAML")
}

/// `text` (YAML lines) as the item of a block sequence: `- ` before its first line, two
/// spaces before the others.
pub fn list_item(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for (i, line) in text.lines().enumerate() {
        out.push_str(match (i, line.is_empty()) {
            (0, _) => "- ",
            (_, true) => "",
            _ => "  ",
        });
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `lines` as YAML comment lines.
pub fn comment(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| {
            if l.is_empty() {
                "#\n".to_string()
            } else {
                format!("# {l}\n")
            }
        })
        .collect()
}
