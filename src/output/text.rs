//! Text from the history on a terminal: job ids, termination messages, node names,
//! categories and file names shown where they stand, never acted on.
//!
//! Owns: the one rule for writing such text in the table formats and on stderr
//! ([`shown`]: control characters and line breaks as escapes, `\x1b`), and [`Escaping`],
//! the writer that applies it to text that has lines of its own (an error's report). A
//! history is anyone's text: a raw `ESC[A ESC[K` would move the cursor over the lines above
//! and erase them, an OSC sequence would retitle the terminal, a newline would start a line
//! that looks like retryctl's own. Must not: escape what the machine formats carry (JSON and
//! YAML escape for themselves, markdown and html have their own rules), or touch colour:
//! [`crate::output::Style`] paints after the text is escaped.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

use crate::diag::is_escaped;
pub use crate::diag::shown;

/// `s` with its own lines kept and everything else [`shown`]: for a message that may hold
/// more than one line (a diagnostic).
pub fn shown_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_escaped(c)) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.split('\n').map(shown).collect::<Vec<_>>().join("\n"))
}

/// A writer that passes text through [`shown`] line by line: its own newlines kept, every
/// other control character escaped. For text that holds values from anywhere and no colour
/// (an error and its causes). Bytes that are not UTF-8 are written as `\xNN` too.
pub struct Escaping<'a> {
    inner: &'a mut dyn Write,
    /// The start of a UTF-8 sequence a write cut, completed by the next write.
    pending: Vec<u8>,
}

impl<'a> Escaping<'a> {
    pub fn new(inner: &'a mut dyn Write) -> Self {
        Escaping {
            inner,
            pending: Vec::new(),
        }
    }

    fn write_text(&mut self, text: &str) -> io::Result<()> {
        self.inner.write_all(shown_lines(text).as_bytes())
    }
}

/// Bytes that are not UTF-8, as `\xNN` each.
fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 4);
    for b in bytes {
        let _ = write!(out, "\\x{b:02x}");
    }
    out
}

impl Write for Escaping<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        let bytes = std::mem::take(&mut self.pending);
        let mut rest = &bytes[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    self.write_text(text)?;
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    // Valid by construction: `valid_up_to` says so.
                    self.write_text(std::str::from_utf8(good).unwrap_or_default())?;
                    match e.error_len() {
                        Some(n) => {
                            self.inner.write_all(hex(&bad[..n]).as_bytes())?;
                            rest = &bad[n..];
                        }
                        None => {
                            // A sequence cut at the buffer's end: kept for the next write.
                            self.pending = bad.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let bytes = std::mem::take(&mut self.pending);
            self.inner.write_all(hex(&bytes).as_bytes())?;
        }
        self.inner.flush()
    }
}

impl Drop for Escaping<'_> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_line_breaks_are_escaped() {
        assert_eq!(
            shown("a\x1b[A\x1b[Kb\x1b]0;t\x07c\0d\ne\rf\u{85}g\u{2028}h\u{2029}i\x7fé\tj"),
            "a\\x1b[A\\x1b[Kb\\x1b]0;t\\x07c\\x00d\\x0ae\\x0df\\u0085g\\u2028h\\u2029i\\x7fé\\x09j"
        );
        assert!(matches!(shown("job-1 `x` é"), Cow::Borrowed("job-1 `x` é")));
    }

    #[test]
    fn the_writer_keeps_its_lines_and_escapes_the_rest_across_writes() {
        let mut out = Vec::new();
        {
            let mut w = Escaping::new(&mut out);
            w.write_all(b"error: `a\x1b[2Jb`\n  caused by: \xc2").unwrap();
            w.write_all(b"\x85 \xff\n").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "error: `a\\x1b[2Jb`\n  caused by: \\u0085 \\xff\n"
        );
    }
}
