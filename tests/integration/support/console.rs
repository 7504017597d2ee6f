//! The runner of the docs' console blocks (tests/integration/docs.rs), byte for byte.
//!
//! A ```` ```console ```` block is a list of commands, each `$ retryctl …` and then what it
//! prints. The command line is split into arguments as a POSIX shell would split words
//! (single quotes, double quotes, backslash escapes; a word starting with `#` starts a
//! comment), but nothing else of a shell happens: no variables, no pipes, no redirections.
//! `retryctl` is the binary under test. A `? N` line right after the command is its exit
//! status (0 when absent). The lines after it, up to the next `$ ` line or the end of the
//! block, are its stdout and stderr together, in the order it wrote them (both point at one
//! file), with the newline of the last line taken off: a block shows an output that ends
//! with a newline by a blank line before the next command or the fence, and a command whose
//! next line is another command or the fence prints nothing.
//!
//! Those lines are compared with what the command printed byte for byte, but for two
//! elisions: `...` alone on a line stands for any number of lines (none included), and
//! `[..]` within a line for any text within that line. Nothing else is rewritten on either
//! side: no path separators (trycmd, which ran these blocks before, turned every `\` of an
//! output into `/`, so a guide could show a pattern a reader would copy wrong), no line
//! endings, no placeholders (no `[EXE]`, `[CWD]`, `[ROOT]`: no guide needs one).
//!
//! With `overwrite`, an output that does not match is written into the file in its place
//! (and its `? N` line set, added or removed), keeping each `...` and `[..]` line that still
//! matches where it stands (the greedy way trycmd did: an elision that no longer fits is
//! replaced by the lines it stood for); read the diff after.

use std::io::{Read, Seek};
use std::ops::Range;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A fenced block: where it starts, its info string, its lines.
#[derive(Debug)]
pub struct Block {
    /// The line of the opening fence, from 1; the block's first line is the next one.
    pub line: usize,
    pub info: String,
    pub lines: Vec<String>,
}

impl Block {
    pub fn language(&self) -> &str {
        self.info.split(',').next().unwrap_or("").trim()
    }

    pub fn ignored(&self) -> bool {
        self.info.split(',').skip(1).any(|a| a.trim() == "ignore")
    }

    /// Whether this runner runs the block: a `console` block that is not `ignore`d.
    pub fn is_run(&self) -> bool {
        self.language() == "console" && !self.ignored()
    }

    /// The lines after the first command up to the next one (its output).
    pub fn output_of(&self, command_start: &str) -> String {
        let mut lines = self.lines.iter().skip_while(|l| !l.starts_with(command_start));
        lines.next().expect("the command is in the block");
        let out: Vec<&str> = lines.take_while(|l| !l.starts_with("$ ")).map(String::as_str).collect();
        out.join("\n").trim_end().to_string() + "\n"
    }
}

/// The fenced blocks of a Markdown text: a fence is a line starting with three or more
/// backticks, closed by the first line starting with the same run of backticks.
pub fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let ticks = line.chars().take_while(|c| *c == '`').count();
        if ticks < 3 {
            continue;
        }
        let fence = &line[..ticks];
        let mut block = Block {
            line: i + 1,
            info: line[ticks..].trim().to_string(),
            lines: Vec::new(),
        };
        for (_, l) in lines.by_ref() {
            if l.starts_with(fence) {
                break;
            }
            block.lines.push(l.to_string());
        }
        out.push(block);
    }
    out
}

/// The `console,ignore` block of a Markdown text whose first line starts with `start` (as
/// docs.rs's `NOT_RUN` names one): the block a test runs for real instead of the docs run.
pub fn ignored_block(text: &str, start: &str) -> Option<Block> {
    blocks(text)
        .into_iter()
        .find(|b| b.ignored() && b.lines.first().is_some_and(|l| l.starts_with(start)))
}

/// One command of a console block and what the block says it does.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The line of the `$ ` line, from 1.
    pub line: usize,
    /// The command line as written, after `$ `.
    pub command: String,
    /// The arguments after `retryctl`.
    pub args: Vec<String>,
    /// The exit status the block shows (`? N`, else 0).
    pub status: i32,
    /// The `? N` line, as an index into the file's lines (from 0).
    status_line: Option<usize>,
    /// The output's lines, as indices into the file's lines (from 0).
    output: Range<usize>,
    /// The output the block shows: its lines, each with its newline, but for the last.
    pub expected: String,
}

/// The steps of every console block of a Markdown text that is run, in order.
pub fn steps(text: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for block in blocks(text).into_iter().filter(Block::is_run) {
        // The block's first line is the one after the fence (`block.line`, from 1).
        let first = block.line;
        let lines = &block.lines;
        let mut k = 0;
        while k < lines.len() {
            let line = first + k + 1;
            let Some(command) = lines[k].strip_prefix("$ ") else {
                return Err(format!(
                    "line {line}: a command (`$ retryctl …`) was expected, not `{}`",
                    lines[k]
                ));
            };
            let mut args = split(command.trim()).map_err(|e| format!("line {line}: {e}"))?;
            if args.first().map(String::as_str) != Some("retryctl") {
                return Err(format!("line {line}: only `retryctl` is run here, not `{command}`"));
            }
            args.remove(0);
            k += 1;
            let mut status = 0;
            let mut status_line = None;
            if let Some(code) = lines.get(k).and_then(|l| l.strip_prefix("? ")) {
                status = code
                    .trim()
                    .parse()
                    .map_err(|_| format!("line {}: `? {code}` is not an exit status", first + k + 1))?;
                status_line = Some(first + k);
                k += 1;
            }
            let start = k;
            while k < lines.len() && !lines[k].starts_with("$ ") {
                k += 1;
            }
            let mut expected: String = lines[start..k].iter().map(|l| format!("{l}\n")).collect();
            expected.pop();
            steps.push(Step {
                line,
                command: command.to_string(),
                args,
                status,
                status_line,
                output: first + start..first + k,
                expected,
            });
        }
    }
    Ok(steps)
}

/// The words of a command line, as a POSIX shell splits them (and as trycmd did, with the
/// `shlex` crate): blanks separate words; within `'…'` every character is itself; within
/// `"…"` a backslash escapes only `$`, `` ` ``, `"`, `\` and a newline (and is kept before
/// any other character); elsewhere a backslash escapes any character; a word that starts
/// with `#` starts a comment to the end of the line. Nothing is expanded.
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let blank = |c: &char| matches!(c, ' ' | '\t' | '\n');
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(blank).is_some() {}
        match chars.peek() {
            None | Some('#') => return Ok(words),
            Some(_) => {}
        }
        let mut word = String::new();
        while let Some(c) = chars.next() {
            match c {
                ' ' | '\t' | '\n' => break,
                '\'' => loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("`{line}`: a `'` is not closed")),
                    }
                },
                '"' => loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('$' | '`' | '"' | '\\')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(format!("`{line}`: a `\"` is not closed")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("`{line}`: a `\"` is not closed")),
                    }
                },
                '\\' => match chars.next() {
                    Some('\n') => {}
                    Some(c) => word.push(c),
                    None => return Err(format!("`{line}`: a `\\` escapes nothing")),
                },
                c => word.push(c),
            }
        }
        words.push(word);
    }
}

/// `text`'s lines, each with its newline (the last may have none).
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn is_elision(line: &str) -> bool {
    line == "...\n" || line == "..."
}

/// Whether `actual` is the line `expected` shows, both with their newline if any: equal
/// bytes, but for each `[..]` of `expected`, which stands for any text within the line.
pub fn line_matches(expected: &str, actual: &str) -> bool {
    let mut parts = expected.split("[..]");
    let Some(mut rest) = actual.strip_prefix(parts.next().unwrap_or("")) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    // Each part at its first place: with only `[..]` to fill, the earliest leaves the most room.
    for part in middle {
        match rest.find(part) {
            Some(at) if !rest[..at].contains('\n') => rest = &rest[at + part.len()..],
            _ => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last) && !rest[..rest.len() - last.len()].contains('\n')
}

/// Whether `actual` is the output `expected` shows: line by line as [`line_matches`] says,
/// where a `...` line stands for any number of lines, none included.
pub fn matches(expected: &str, actual: &str) -> bool {
    let (e, a) = (lines(expected), lines(actual));
    // ok[j]: the expected lines from i on match the actual lines from j on (i from the end).
    let mut ok = vec![false; a.len() + 1];
    ok[a.len()] = true;
    for line in e.iter().rev() {
        let mut next = vec![false; a.len() + 1];
        for j in (0..=a.len()).rev() {
            next[j] = if is_elision(line) {
                ok[j] || (j < a.len() && next[j + 1])
            } else {
                j < a.len() && line_matches(line, a[j]) && ok[j + 1]
            };
        }
        ok = next;
    }
    ok[0]
}

/// `actual` with the lines of `expected` put back where they still match, as trycmd did
/// (greedily, line by line): what a failure's diff compares with `expected`, so that only
/// the lines that differ show, and what `overwrite` writes.
pub fn normalize(expected: &str, actual: &str) -> String {
    let (e, a) = (lines(expected), lines(actual));
    let mut out: Vec<&str> = Vec::new();
    let mut j = 0;
    for (i, line) in e.iter().enumerate() {
        if is_elision(line) {
            let Some(next) = e.get(i + 1) else {
                out.push(line);
                j = a.len();
                break;
            };
            let Some(skip) = a[j..].iter().position(|l| line_matches(next, l)) else {
                break;
            };
            out.push(line);
            j += skip;
        } else {
            let Some(actual) = a.get(j) else {
                break;
            };
            out.push(if line_matches(line, actual) { line } else { actual });
            j += 1;
        }
    }
    out.extend(&a[j..]);
    out.concat()
}

/// Runs `retryctl` (the binary at `bin`) in `cwd` with the test's environment plus `env`.
pub struct Runner {
    pub bin: PathBuf,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// Write each output that does not match into its file instead of failing.
    pub overwrite: bool,
}

impl Runner {
    /// Runs `retryctl args`: its exit status (`None` if a signal ended it) and what it
    /// wrote to stdout and stderr, in the order written.
    pub fn run(&self, args: &[String]) -> std::io::Result<(Option<i32>, Vec<u8>)> {
        // One open file for both streams: the two descriptors share one offset, so each
        // write lands after the one before, whichever stream it was made on.
        let mut out = tempfile::tempfile()?;
        let status = Command::new(&self.bin)
            .args(args)
            .current_dir(&self.cwd)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out.try_clone()?)
            .status()?;
        out.rewind()?;
        let mut bytes = Vec::new();
        out.read_to_end(&mut bytes)?;
        Ok((status.code(), bytes))
    }

    /// Runs every step of the console blocks of `text` (the file `name`): each failure
    /// described, and the text rewritten when `overwrite` and an output or status differs.
    pub fn check_text(&self, name: &str, text: &str) -> (Vec<String>, Option<String>) {
        let steps = match steps(text) {
            Ok(steps) => steps,
            Err(e) => return (vec![format!("{name}: {e}")], None),
        };
        let mut failures = Vec::new();
        let mut edits: Vec<(Range<usize>, Vec<String>)> = Vec::new();
        for step in &steps {
            let at = format!("{name}:{}: `$ {}`", step.line, step.command);
            let (status, bytes) = match self.run(&step.args) {
                Ok(ran) => ran,
                Err(e) => {
                    failures.push(format!("{at}: could not run {}: {e}", self.bin.display()));
                    continue;
                }
            };
            let actual = match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => {
                    failures.push(format!(
                        "{at}: the output is not UTF-8 ({e}):\n{}",
                        String::from_utf8_lossy(e.as_bytes())
                    ));
                    continue;
                }
            };
            let status_ok = status == Some(step.status);
            if status_ok && matches(&step.expected, &actual) {
                continue;
            }
            if self.overwrite {
                if let Some(code) = status {
                    edits.extend(rewrite(step, code, &normalize(&step.expected, &actual)));
                    continue;
                }
            }
            let mut failure = format!("{at}\n");
            if !status_ok {
                let was = status.map_or("a signal".to_string(), |c| c.to_string());
                failure.push_str(&format!("exit status: the doc says {}, was {was}\n", step.status));
            }
            failure.push_str(&diff(&step.expected, &actual, name));
            failures.push(failure);
        }
        if edits.is_empty() {
            return (failures, None);
        }
        // From the last edit up, so that the earlier ones' line numbers still hold.
        let mut file: Vec<String> = lines(text).into_iter().map(str::to_string).collect();
        edits.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
        for (range, new) in edits {
            file.splice(range, new);
        }
        (failures, Some(file.concat()))
    }

    /// [`Self::check_text`] on the file `rel` under the working directory, which it
    /// rewrites in place when `overwrite` changed it.
    pub fn check_file(&self, rel: &str) -> Vec<String> {
        let path = self.cwd.join(rel);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let (failures, rewritten) = self.check_text(rel, &text);
        if let Some(new) = rewritten {
            std::fs::write(&path, new).unwrap_or_else(|e| panic!("{rel}: {e}"));
            eprintln!("{rel}: outputs rewritten (RETRYCTL_DOCS=overwrite): read `git diff {rel}`");
        }
        failures
    }
}

/// The edits of the file's lines that make `step` show `status` and `output`: its `? N`
/// line (set, added after the command, or removed for 0) and its output's lines.
fn rewrite(step: &Step, status: i32, output: &str) -> Vec<(Range<usize>, Vec<String>)> {
    // An output is shown with one newline more than it has (the last line's is not its own).
    let shown = if output.is_empty() {
        Vec::new()
    } else {
        lines(&format!("{output}\n")).into_iter().map(str::to_string).collect()
    };
    // The output's edit first: a `? N` added goes at the line the output starts at, and
    // edits at one line are made in the order listed (a stable sort by line, from the end up).
    let mut edits = vec![(step.output.clone(), shown)];
    let status_line = (status != 0).then(|| format!("? {status}\n"));
    match (step.status_line, status_line) {
        (Some(at), new) => edits.push((at..at + 1, new.into_iter().collect())),
        // The command's line, from 0, is `step.line - 1`: a new `? N` goes after it.
        (None, Some(new)) => edits.push((step.line..step.line, vec![new])),
        (None, None) => {}
    }
    edits
}

/// The expected and actual output, line by line, as one unified diff with every line in
/// context: `-` only the doc's, `+` only the binary's (with the doc's elisions put back
/// where they still match, so that the lines they stand for do not show as differences).
fn diff(expected: &str, actual: &str, name: &str) -> String {
    let actual = normalize(expected, actual);
    let every_line = expected.lines().count() + actual.lines().count() + 1;
    similar::TextDiff::from_lines(expected, &actual)
        .unified_diff()
        .context_radius(every_line)
        .header(&format!("{name} (the doc)"), "the binary's output")
        .to_string()
}
