//! The documents' YAML text: a value as a block mapping, an item of a block sequence, and
//! comment lines.
//!
//! Owns: [`list_item`], [`comment`]; [`yaml`] is `crate::yaml::from_json`'s, which keeps
//! every string a string for the YAML 1.1 readers the documents go to (kubectl, armadactl).
//! Must not: do I/O or decide what a document holds.

pub use crate::yaml::from_json::yaml_of as yaml;

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
