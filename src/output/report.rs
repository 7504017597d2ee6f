//! The validation report: text for people, JSON for scripts, annotations for GitHub Actions.
//!
//! The JSON shape is a stable interface (documented in the README); add fields, never rename.

use std::io::{self, Write};

use serde::Serialize;

use crate::diag::{Diagnostic, Severity};
use crate::input::SourceFile;

use super::text::{shown, shown_lines};
use super::Style;

/// Counts over a set of files.
// camelCase keys, as every other verb's JSON (docs/policies.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileCounts {
    pub files: usize,
    pub documents: usize,
    pub invalid_documents: usize,
    pub errors: usize,
    pub warnings: usize,
}

pub fn counts(files: &[SourceFile]) -> FileCounts {
    let mut t = FileCounts {
        files: files.len(),
        ..FileCounts::default()
    };
    for f in files {
        t.errors += f.errors.len();
        t.documents += f.documents.len();
        // A YAML error stops the document it is in (the first, or the one after those
        // read): that document is checked too, and invalid, though it has no entry of its own.
        let stopped = f.errors.iter().filter(|e| e.code == "syntax").count();
        t.documents += stopped;
        t.invalid_documents += stopped;
        for d in &f.documents {
            if !d.is_valid() {
                t.invalid_documents += 1;
            }
            for diag in &d.diagnostics {
                match diag.severity {
                    Severity::Error => t.errors += 1,
                    Severity::Warning => t.warnings += 1,
                }
            }
        }
    }
    t
}

/// One finding with everything needed to place it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding<'a> {
    pub severity: Severity,
    pub code: &'a str,
    pub file: &'a str,
    /// 1-based; absent for findings about the file as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    pub path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    pub message: &'a str,
}

pub fn findings(files: &[SourceFile]) -> Vec<Finding<'_>> {
    let mut out = Vec::new();
    for f in files {
        fn file_finding<'a>(f: &'a SourceFile, d: &'a Diagnostic) -> Finding<'a> {
            Finding {
                severity: d.severity,
                code: d.code,
                file: &f.name,
                document: None,
                kind: None,
                name: None,
                path: &d.path,
                line: d.pos.map(|p| p.line),
                column: d.pos.map(|p| p.column),
                message: &d.message,
            }
        }
        for doc in &f.documents {
            for d in &doc.diagnostics {
                out.push(Finding {
                    document: Some(doc.index + 1),
                    kind: doc.kind.map(|k| k.as_str()),
                    name: doc.name.as_deref(),
                    ..file_finding(f, d)
                });
            }
        }
        out.extend(f.errors.iter().map(|d| file_finding(f, d)));
    }
    out
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Findings grouped by document, to `err`; the summary line, to `out`.
pub fn write_text(
    files: &[SourceFile],
    style: Style,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<FileCounts> {
    for f in files {
        let several = f.documents.len() > 1;
        for doc in &f.documents {
            if doc.diagnostics.is_empty() {
                continue;
            }
            // A file's name and a document's are anyone's text (a directory's listing).
            let mut header = shown(&f.name).into_owned();
            if several {
                header.push_str(&format!(": document {}", doc.index + 1));
            }
            // An empty name says nothing (the error below says it is empty).
            match (doc.kind, doc.name.as_deref().filter(|n| !n.is_empty())) {
                (Some(k), Some(n)) => header.push_str(&format!(" ({} `{}`)", k.as_str(), shown(n))),
                (Some(k), None) => header.push_str(&format!(" ({})", k.as_str())),
                _ => {}
            }
            writeln!(err, "{}", style.bold(&header))?;
            for d in &doc.diagnostics {
                write_diagnostic(err, style, d)?;
            }
        }
        if !f.errors.is_empty() {
            writeln!(err, "{}", style.bold(&shown(&f.name)))?;
            for d in &f.errors {
                write_diagnostic(err, style, d)?;
            }
        }
    }
    let t = counts(files);
    let valid = t.documents - t.invalid_documents;
    let mut summary = format!(
        "checked {} in {}: {} valid, {} invalid",
        plural(t.documents, "document", "documents"),
        plural(t.files, "file", "files"),
        valid,
        t.invalid_documents
    );
    if t.errors > 0 || t.warnings > 0 {
        summary.push_str(&format!(
            "; {}, {}",
            plural(t.errors, "error", "errors"),
            plural(t.warnings, "warning", "warnings")
        ));
    }
    writeln!(out, "{summary}")?;
    Ok(t)
}

fn write_diagnostic(w: &mut dyn Write, style: Style, d: &Diagnostic) -> io::Result<()> {
    let label = match d.severity {
        Severity::Error => style.error("error"),
        Severity::Warning => style.warning("warning"),
    };
    let mut place = String::new();
    if let Some(pos) = d.pos {
        place.push_str(&format!("{pos} "));
    }
    if !d.path.is_empty() {
        place.push_str(&shown(&d.path));
        place.push_str(": ");
    } else if !place.is_empty() {
        place = format!("{}: ", place.trim_end());
    }
    writeln!(w, "  {label}: {}{}", style.dim(&place), shown_lines(&d.message))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    valid: bool,
    #[serde(flatten)]
    totals: FileCounts,
    diagnostics: Vec<Finding<'a>>,
}

pub fn write_json(files: &[SourceFile], valid: bool, out: &mut dyn Write) -> io::Result<()> {
    let report = JsonReport {
        valid,
        totals: counts(files),
        diagnostics: findings(files),
    };
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)
}

/// GitHub Actions workflow commands: `::error file=F,line=L,col=C,title=T::message`.
pub fn write_github(files: &[SourceFile], out: &mut dyn Write) -> io::Result<FileCounts> {
    for f in findings(files) {
        let level = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut props = format!("file={}", escape_property(f.file));
        if let Some(line) = f.line {
            props.push_str(&format!(",line={line}"));
        }
        if let Some(col) = f.column {
            props.push_str(&format!(",col={col}"));
        }
        props.push_str(&format!(",title={}", escape_property(&format!("retryctl {}", f.code))));
        let mut message = String::new();
        if let Some(doc) = f.document {
            message.push_str(&format!("document {doc}: "));
        }
        if !f.path.is_empty() {
            message.push_str(&format!("{}: ", f.path));
        }
        message.push_str(f.message);
        writeln!(out, "::{level} {props}::{}", escape_data(&message))?;
    }
    Ok(counts(files))
}

fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}
