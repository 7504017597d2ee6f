//! Reading `-f PATH...`: files, directories (`-R` to recurse), and `-` for stdin.
//!
//! Owns: every filesystem and stdin read of input documents (the scheduler and categorizer config files too), the
//! size limit, and the attribution of documents to the file they came from. Must not: decode
//! documents itself (that is `model::document`) or print.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::diag::Diagnostic;
use crate::error::CliError;
use crate::model::categorizer::ErrorCategories;
use crate::model::document::Resource;
use crate::model::scheduler::{parse_scheduler_document, SchedulerConfig};
use crate::model::{parse_documents, Document, Kind};
use crate::yaml::Node;

/// Largest input file read. Policy and queue files are a few KiB; a larger file is a mistake.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// One input file, its documents and the problems that concern the file as a whole.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path as the user should read it (`-` is `<stdin>`).
    pub name: String,
    pub documents: Vec<Document>,
    pub errors: Vec<Diagnostic>,
    /// The comment lines that head the file's documents (before each one's first key,
    /// whatever blank lines, `---`, directives or byte-order marks stand among them), each
    /// without its `#` and the spaces after it: `suggest -o policy` heads a proposal with its
    /// verdict there (`verdict: …`), which `apply` reads.
    pub heads: Vec<String>,
}

impl SourceFile {
    /// The reasons of each `verdict: reject` heading one of its documents ([`rejected`]):
    /// a proposal `suggest` rejected.
    pub fn rejected(&self) -> impl Iterator<Item = &str> {
        self.heads.iter().filter_map(|h| rejected(h))
    }

    pub fn error_count(&self) -> usize {
        self.errors.len()
            + self
                .documents
                .iter()
                .flat_map(|d| &d.diagnostics)
                .filter(|d| d.is_error())
                .count()
    }
}

/// Every file named by `paths`, in order, directories expanded (sorted by name).
pub fn read_sources(paths: &[PathBuf], recursive: bool, expected: Option<&[Kind]>) -> Vec<SourceFile> {
    read_sources_seen(paths, recursive, expected).files
}

/// What `-f PATH...` read, and what its directories hold that it did not read.
pub struct Sources {
    pub files: Vec<SourceFile>,
    /// In the order met, directories walked in name order.
    pub skipped: Vec<Skipped>,
}

/// A file in a directory of `-f` that is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: SkipReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Its name does not end in `.yaml`, `.yml` or `.json` (`beta.YAML`, `README.md`).
    Extension,
    /// A `.yaml`, `.yml` or `.json` file in a subdirectory, and no `-R`.
    Subdirectory,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = match self.why {
            SkipReason::Extension => "a directory's files are read only when named `*.yaml`, `*.yml` or `*.json`",
            SkipReason::Subdirectory => "in a subdirectory, read only with `-R`",
        };
        let path = self.path.display().to_string();
        write!(f, "skipped `{}`: {why}", crate::diag::shown(&path))
    }
}

/// [`read_sources`], and the files its directories hold that it did not read ([`Skipped`]):
/// what a run that acts on "every file given" (`apply --prune`) must not take for all.
pub fn read_sources_seen(paths: &[PathBuf], recursive: bool, expected: Option<&[Kind]>) -> Sources {
    let mut skipped = Vec::new();
    let mut out = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            let mut text = Vec::new();
            let result = io::stdin().take(MAX_FILE_BYTES + 1).read_to_end(&mut text);
            out.push(source_from_bytes("<stdin>".into(), result.map(|_| text), expected));
            continue;
        }
        if path.is_dir() {
            let mut files = Vec::new();
            if let Err(e) = collect_dir(path, recursive, &mut files, &mut skipped) {
                out.push(file_error(path, &e));
                continue;
            }
            if files.is_empty() {
                let what = if recursive {
                    ""
                } else {
                    " (use `-R` to look in subdirectories)"
                };
                out.push(SourceFile {
                    name: path.display().to_string(),
                    documents: Vec::new(),
                    heads: Vec::new(),
                    errors: vec![Diagnostic::error(
                        "no-documents",
                        "",
                        format!("no `.yaml`, `.yml` or `.json` files in this directory{what}"),
                    )],
                });
            }
            for file in files {
                out.push(read_file(&file, expected));
            }
            continue;
        }
        out.push(read_file(path, expected));
    }
    Sources { files: out, skipped }
}

/// Whether a directory's file is read: by its name's ending, exactly (`beta.YAML` is not).
fn is_read(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"))
}

fn collect_dir(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>, skipped: &mut Vec<Skipped>) -> io::Result<()> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            if recursive {
                collect_dir(&entry, recursive, out, skipped)?;
            } else {
                let mut seen = std::collections::HashSet::new();
                unread_documents(&entry, &mut seen, skipped);
            }
        } else if is_read(&entry) {
            out.push(entry);
        } else {
            skipped.push(Skipped {
                path: entry,
                why: SkipReason::Extension,
            });
        }
    }
    Ok(())
}

/// The files `-R` would read in `dir`, a subdirectory read without it: the documents a user
/// may take for given. A directory that cannot be listed, or met again through a symbolic
/// link (`seen`: a loop), adds nothing: this only says what is left out, and reads nothing.
fn unread_documents(dir: &Path, seen: &mut std::collections::HashSet<PathBuf>, skipped: &mut Vec<Skipped>) {
    let Ok(real) = fs::canonicalize(dir) else { return };
    if !seen.insert(real) {
        return;
    }
    let Ok(list) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = list.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            unread_documents(&entry, seen, skipped);
        } else if is_read(&entry) {
            skipped.push(Skipped {
                path: entry,
                why: SkipReason::Subdirectory,
            });
        }
    }
}

fn read_file(path: &Path, expected: Option<&[Kind]>) -> SourceFile {
    let result = fs::File::open(path).and_then(|f| {
        // Sized from the file's length: behind `take`, `read_to_end` cannot see it and would
        // start at 32 bytes and double (seven reads for a 600-byte policy instead of two).
        let len = f.metadata().map_or(0, |m| m.len()).min(MAX_FILE_BYTES + 1);
        let mut bytes = Vec::with_capacity(len as usize);
        f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
        Ok(bytes)
    });
    source_from_bytes(path.display().to_string(), result, expected)
}

fn file_error(path: &Path, e: &io::Error) -> SourceFile {
    SourceFile {
        name: path.display().to_string(),
        documents: Vec::new(),
        heads: Vec::new(),
        errors: vec![Diagnostic::error(
            "unreadable",
            "",
            format!("cannot read: {}", io_reason(e)),
        )],
    }
}

/// The most symbolic links followed in a row, as Linux's path resolution (ELOOP past 40).
pub const MAX_LINKS: usize = 40;

/// The process and descriptor a symbolic link in `/proc` names: `/proc/<pid>/fd/<n>` or a
/// thread's `/proc/<pid>/task/<tid>/fd/<n>` (`/proc/self/fd/N`, which `/dev/stdin` and
/// `/dev/fd/N` lead to, included: its directory is read as it resolves). `None` for any
/// other path.
#[cfg(target_os = "linux")]
pub fn proc_descriptor(link: &Path) -> Option<(u32, i32)> {
    use std::path::Component;
    let dir = fs::canonicalize(link.parent()?).ok()?;
    let parts: Vec<&str> = dir
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    let pid = match parts.as_slice() {
        ["proc", pid, "fd"] | ["proc", pid, "task", _, "fd"] => pid.parse::<u32>().ok()?,
        _ => return None,
    };
    let fd = link.file_name()?.to_str()?.parse().ok()?;
    Some((pid, fd))
}

#[cfg(not(target_os = "linux"))]
pub fn proc_descriptor(_: &Path) -> Option<(u32, i32)> {
    None
}

/// Whether `path`, through its symbolic links, names a descriptor this process has open
/// (`/dev/stdin`, `/dev/fd/3`, `/proc/self/fd/0`): what the shell handed it (`< file`, a
/// pipe, `<(…)`), to be read as it comes whatever it is, not as a file known by its name.
pub fn names_own_descriptor(path: &Path) -> bool {
    let mut path = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        if proc_descriptor(&path).is_some_and(|(pid, _)| pid == std::process::id()) {
            return true;
        }
        let Ok(to) = fs::read_link(&path) else { return false };
        // A relative target is read from the link's directory (`join` keeps an absolute one).
        path = match path.parent() {
            Some(dir) => dir.join(to),
            None => to,
        };
    }
    false
}

/// The scheduler config file of `--scheduler-config` (`validate`, `simulate`, `describe`): an error
/// naming the file when it cannot be read, and one line per problem (`FILE:LINE:COL: FIELD:
/// message`) when it does not decode.
pub fn read_scheduler_config(path: &Path) -> Result<SchedulerConfig, CliError> {
    read_scheduler_source(path).map(|source| source.config)
}

/// A scheduler config file as `tune` needs it: what it decodes to, and the tree of its
/// document (the template that `--vary scheduler:...` edits).
#[derive(Debug, Clone)]
pub struct SchedulerSource {
    /// The path as the user should read it.
    pub name: String,
    /// Its first document (an empty mapping when the file has none).
    pub node: Node,
    pub config: SchedulerConfig,
}

impl SchedulerSource {
    /// Decodes a scheduler config's text; `Err` holds every problem, placed.
    pub fn parse(name: String, text: &str) -> Result<SchedulerSource, Vec<Diagnostic>> {
        let (node, config) = parse_scheduler_document(text)?;
        Ok(SchedulerSource { name, node, config })
    }
}

/// [`read_scheduler_config`], keeping the file's tree: the same errors.
pub fn read_scheduler_source(path: &Path) -> Result<SchedulerSource, CliError> {
    let text = fs::read_to_string(path).map_err(|e| {
        CliError::invalid(format!(
            "cannot read scheduler config `{}`: {}",
            path.display(),
            io_reason(&e)
        ))
    })?;
    let file = path.display().to_string();
    SchedulerSource::parse(file.clone(), &text).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|d| format!("  {}", placed(&file, d))).collect();
        CliError::invalid(format!("invalid scheduler config `{file}`\n{}", lines.join("\n")))
    })
}

/// The file of `--categorizer FILE` (`simulate`, `tune`, `validate`, `suggest`): its
/// categorizer documents. A file of `suggest -o policy` holds the categorizer and the policy
/// it goes with: the policies and queues of such a file are `-f`'s, not an error here; any
/// other file is read as a categorizer file alone (another kind is its error).
pub fn categorizer_file(path: &Path) -> SourceFile {
    let mut file = read_file(path, None);
    let categorizers = file
        .documents
        .iter()
        .filter(|d| d.kind == Some(Kind::ErrorCategories))
        .count();
    let others_are_policies = file
        .documents
        .iter()
        .all(|d| matches!(d.kind, Some(Kind::ErrorCategories | Kind::RetryPolicy | Kind::Queue)));
    if categorizers == 1 && others_are_policies && file.errors.is_empty() {
        file.documents.retain(|d| d.kind == Some(Kind::ErrorCategories));
        file
    } else {
        read_file(path, Some(&[Kind::ErrorCategories]))
    }
}

/// A categorizer file as [`read_categorizer`] reads it: its name, its one document (kept
/// whole for `tune`'s `categorizer:` varies), the config it decodes to, and its warnings.
#[derive(Debug, Clone)]
pub struct CategorizerFile {
    pub name: String,
    pub document: Document,
    pub config: ErrorCategories,
    pub warnings: Vec<String>,
}

/// The executor's categorizer config of `--categorizer FILE` (docs/categorizer.md): the one
/// categorizer document of the file, valid, and its warnings (said by the caller). Else an
/// error naming the flag's file and each problem at its line (`FILE:LINE:COL: FIELD:
/// message`), exit 3, as `--scheduler-config` does.
pub fn read_categorizer(path: &Path) -> Result<CategorizerFile, CliError> {
    let file = categorizer_file(path);
    let name = file.name.as_str();
    if let Some(e) = file.errors.iter().find(|e| e.code == "unreadable") {
        let why = e.message.strip_prefix("cannot read: ").unwrap_or(&e.message);
        return Err(CliError::invalid(format!("cannot read categorizer `{name}`: {why}")));
    }
    let indented = |d: &Diagnostic| format!("  {}", placed(name, d));
    let mut problems: Vec<String> = file.errors.iter().map(indented).collect();
    for d in &file.documents {
        problems.extend(d.diagnostics.iter().filter(|d| d.is_error()).map(indented));
    }
    if problems.is_empty() && file.documents.len() > 1 {
        problems.push(format!(
            "  {name}: {} documents: give the one categorizer config of an executor",
            file.documents.len()
        ));
    }
    if !problems.is_empty() {
        return Err(CliError::invalid(format!(
            "invalid categorizer `{name}`\n{}",
            problems.join("\n")
        )));
    }
    let doc = file.documents.into_iter().next();
    match doc.and_then(|d| match &d.resource {
        Some(Resource::ErrorCategories(c)) => Some((c.clone(), d)),
        _ => None,
    }) {
        Some((config, document)) => {
            let warnings = document.diagnostics.iter().map(|d| placed(name, d)).collect();
            Ok(CategorizerFile {
                name: name.to_string(),
                document,
                config,
                warnings,
            })
        }
        // Refused by its kind above, so not reached; said all the same.
        None => Err(CliError::invalid(format!(
            "invalid categorizer `{name}`: it holds no `errorCategories`"
        ))),
    }
}

/// The categorizer document of `file` as its file writes it (its comments, key order and
/// quoting), read again from the file: the lines between the document markers (`---`,
/// `...`) around its first key. `None` when it cannot be (stdin, a file gone or changed
/// since: what is read must decode to `file`'s config), and the caller writes the config
/// encoded instead.
pub fn categorizer_as_written(file: &CategorizerFile) -> Option<String> {
    let text = fs::read_to_string(&file.name).ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let piece = document_lines(text, file.document.pos.line)?;
    let again = parse_text(&file.name, &piece, Some(&[Kind::ErrorCategories]));
    let same = again.error_count() == 0
        && again.documents.len() == 1
        && matches!(&again.documents[0].resource, Some(Resource::ErrorCategories(c)) if *c == file.config);
    same.then_some(piece)
}

/// The lines of the document of `text` that holds line `line` (1-based), its markers left
/// out, ending in a line break. `---` or `...` at the start of a line, alone or before a
/// blank, bounds a document (as [`head_comments`] reads them).
fn document_lines(text: &str, line: usize) -> Option<String> {
    let mut piece = String::new();
    for (at, l) in text.lines().enumerate() {
        let bare = l.trim_end_matches('\r');
        let marker = ["---", "..."].into_iter().any(|m| {
            bare.strip_prefix(m)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
        });
        if marker {
            if at + 1 > line {
                break;
            }
            piece.clear();
            continue;
        }
        piece.push_str(l);
        piece.push('\n');
    }
    (!piece.trim().is_empty()).then_some(piece)
}

/// A config file's problem as its error or warning line says it: `FILE:LINE:COL: FIELD:
/// message` (the position and the field when known).
pub fn placed(file: &str, d: &Diagnostic) -> String {
    let field = if d.path.is_empty() {
        String::new()
    } else {
        format!("{}: ", d.path)
    };
    match d.pos {
        Some(pos) => format!("{file}:{pos}: {field}{}", d.message),
        None => format!("{file}: {field}{}", d.message),
    }
}

/// An I/O error in words, without Rust's `(os error 2)` suffix.
pub fn io_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        io::ErrorKind::IsADirectory => "is a directory".into(),
        _ => {
            let text = e.to_string();
            match text.find(" (os error") {
                Some(i) => text[..i].to_lowercase(),
                None => text.to_lowercase(),
            }
        }
    }
}

/// Takes the executor's categorizer documents out of `files` (what `suggest -o policy` writes
/// for today's Armada beside its policy, or the executor's config in a directory of what the
/// cluster runs), so that the server verbs read the rest; returns where each was (`FILE`
/// document N, 1-based).
pub fn set_aside_categorizers(files: &mut [SourceFile]) -> Vec<String> {
    let mut aside = Vec::new();
    for f in files.iter_mut() {
        let is_categorizer = |d: &crate::model::Document| crate::model::categorizer::shape_of(&d.node).is_some();
        for d in f.documents.iter().filter(|d| is_categorizer(d)) {
            aside.push(format!("`{}` document {}", f.name, d.index + 1));
        }
        f.documents.retain(|d| !is_categorizer(d));
    }
    aside
}

/// The reasons of a rejected proposal: `head` is a comment line heading a document, as the
/// first line of a file `suggest -o policy` wrote is, `verdict: reject (do not adopt): REASONS` (its gloss optional: an older or
/// hand-edited head still counts); `None` for any other verdict or comment.
pub fn rejected(head: &str) -> Option<&str> {
    let rest = head.strip_prefix("verdict:")?.trim_start().strip_prefix("reject")?;
    let rest = rest.trim_start();
    let rest = match rest.strip_prefix('(') {
        Some(glossed) => glossed.split_once(')')?.1,
        None => rest,
    };
    match rest.strip_prefix(':') {
        Some(reasons) => Some(reasons.trim()),
        None if rest.trim().is_empty() => Some("no reason given"),
        None => None,
    }
}

/// The documents of `text` as if read from a file named `name` (`suggest` reads what it
/// proposes through the reader `validate` uses).
pub fn parse_text(name: &str, text: &str, expected: Option<&[Kind]>) -> SourceFile {
    source_from_bytes(name.to_string(), Ok(text.as_bytes().to_vec()), expected)
}

/// The comment lines heading each document of `text` (its `#` and the blanks after it taken
/// off): every comment before a document's first key, in a stream's prefix (after `---`,
/// `...`, a `%` directive, a byte-order mark, blank lines or other comments) or on its `---`
/// line. A comment inside a document's content (after its first key) heads nothing. Lines are
/// read as YAML reads them: `---` or `...` at the start of a line, alone or before a blank,
/// always ends a document's content (no scalar can hold one there).
fn head_comments(text: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut heading = true;
    let comment = |rest: &str| {
        rest.trim_start_matches([' ', '\t'])
            .trim_end_matches([' ', '\t'])
            .to_string()
    };
    for line in text.lines() {
        let line = line.trim_start_matches('\u{feff}').trim_end_matches('\r');
        let marker = ["---", "..."].into_iter().find(|m| {
            line.strip_prefix(m)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
        });
        let rest = match marker {
            Some(m) => {
                heading = true;
                &line[m.len()..]
            }
            None => line,
        };
        let rest = rest.trim_start_matches([' ', '\t']);
        if !heading || rest.is_empty() {
            continue;
        }
        if let Some(text) = rest.strip_prefix('#') {
            heads.push(comment(text));
        } else if !(marker.is_none() && line.starts_with('%')) {
            // The document's first key (or any content): what follows is the document's.
            heading = false;
        }
    }
    heads
}

fn source_from_bytes(name: String, bytes: io::Result<Vec<u8>>, expected: Option<&[Kind]>) -> SourceFile {
    let mut file = SourceFile {
        name,
        documents: Vec::new(),
        errors: Vec::new(),
        heads: Vec::new(),
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => {
            file.errors.push(Diagnostic::error(
                "unreadable",
                "",
                format!("cannot read: {}", io_reason(&e)),
            ));
            return file;
        }
    };
    if bytes.len() as u64 > MAX_FILE_BYTES {
        file.errors.push(Diagnostic::error(
            "too-large",
            "",
            format!(
                "file is larger than {} MiB; policy and queue files are a few KiB",
                MAX_FILE_BYTES / 1024 / 1024
            ),
        ));
        return file;
    }
    if bytes.contains(&0) {
        file.errors.push(Diagnostic::error(
            "not-text",
            "",
            "not a text file (it contains NUL bytes); expected YAML or JSON",
        ));
        return file;
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            file.errors.push(Diagnostic::error(
                "not-text",
                "",
                format!(
                    "not UTF-8 text (invalid byte at offset {}); expected YAML or JSON",
                    e.utf8_error().valid_up_to()
                ),
            ));
            return file;
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    file.heads = head_comments(text);
    let parsed = parse_documents(text, expected);
    file.documents = parsed.documents;
    if let Some(e) = parsed.syntax_error {
        file.errors.push(e);
    }
    if file.documents.is_empty() && file.errors.is_empty() {
        file.errors.push(Diagnostic::error(
            "no-documents",
            "",
            "no documents: the input is empty or holds only comments; expected a YAML or JSON document",
        ));
    }
    file
}

#[cfg(test)]
mod tests {
    use super::{document_lines, rejected};

    #[test]
    fn a_document_is_cut_from_its_file_between_its_markers_with_its_comments() {
        let text = "# policies\nkind: RetryPolicy\n---\n# the executor's\nerrorCategories:\n  enabled: true\n--- # next\nkind: Queue\n";
        assert_eq!(
            document_lines(text, 5).as_deref(),
            Some("# the executor's\nerrorCategories:\n  enabled: true\n")
        );
        assert_eq!(
            document_lines(text, 2).as_deref(),
            Some("# policies\nkind: RetryPolicy\n")
        );
        assert_eq!(document_lines(text, 8).as_deref(), Some("kind: Queue\n"));
        // A `---` inside a line is no marker; one alone ends a document, blank or not.
        assert_eq!(document_lines("a: '---'\nb: 1", 1).as_deref(), Some("a: '---'\nb: 1\n"));
        assert_eq!(document_lines("---\n\n---\n", 2), None);
    }

    #[test]
    fn a_rejected_proposal_is_known_by_its_head_alone() {
        let head = "verdict: reject (do not adopt): loses 1 job (ml-05); the proposal costs more";
        assert_eq!(rejected(head), Some("loses 1 job (ml-05); the proposal costs more"));
        assert_eq!(rejected("verdict: reject: loses 1 job"), Some("loses 1 job"));
        assert_eq!(rejected("verdict: reject"), Some("no reason given"));
        assert_eq!(rejected("verdict: adopt (a change worth making): 3 rescued"), None);
        assert_eq!(rejected("verdict: keep (keep today's policy): nothing"), None);
        assert_eq!(rejected("verdict: rejected by hand"), None);
        assert_eq!(rejected("Proposed by `retryctl suggest`"), None);
    }
}
