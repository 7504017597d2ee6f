//! A failed run's signature (docs/reference/suggest.md "Signatures"): the text that names what
//! went wrong in it, from its own signals, so that a reader can recompute it by hand.
//!
//! Owns: [`signature`] (one run → its signature), [`template`] (a message → its masked
//! template), [`pod_error_template`] (a pod-error text → the template of the line that says
//! what went wrong) and the parts a proposed rule is built from ([`Signature`]). Pure: no I/O, and
//! no regular expressions (the masks are scanned by hand so that every step is the one the
//! docs write down, in their order).

use crate::model::categorizer::CATEGORY_PREEMPTION;
use crate::model::failure_history::{Container, Run};
use crate::model::policy::Condition;

/// Characters of a message's first line a template keeps.
pub const TEMPLATE_CHARS: usize = 160;

/// The pod-level conditions a signature names, in their order of precedence.
pub const CONDITIONS: [Condition; 4] = [
    Condition::Evicted,
    Condition::DeadlineExceeded,
    Condition::Preempted,
    Condition::Unschedulable,
];

/// What a signature is made of: enough to print it and to build its rule. Serialized in a
/// sharded suggest's partial, whose merge builds the rules.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Signature {
    Condition(Condition),
    Container {
        /// `None`: an OOM kill (`oom`); else the exit code.
        exit: Option<i64>,
        /// Empty for an unnamed container.
        name: String,
        init: bool,
        /// The termination message's template; empty when it has none.
        template: String,
        /// The message's first line was longer than [`TEMPLATE_CHARS`].
        cut: bool,
    },
    PodError {
        template: String,
        cut: bool,
    },
    Category {
        category: String,
        subcategory: Option<String>,
    },
    Unknown,
}

impl Signature {
    /// The printed signature: its identity.
    pub fn text(&self) -> String {
        match self {
            Signature::Condition(c) => format!("condition:{}", c.as_str()),
            Signature::Container {
                exit,
                name,
                init,
                template,
                ..
            } => {
                let mut s = String::new();
                push_container(&mut s, *exit, name, *init, template);
                s
            }
            Signature::PodError { template, .. } => format!("podError \"{template}\""),
            Signature::Category {
                category,
                subcategory: Some(sub),
            } => format!("category:{category}/{sub}"),
            Signature::Category { category, .. } => format!("category:{category}"),
            Signature::Unknown => "unknown".to_string(),
        }
    }

    /// The message template of a container or pod-error signature (empty for others).
    pub fn template(&self) -> &str {
        match self {
            Signature::Container { template, .. } | Signature::PodError { template, .. } => template,
            _ => "",
        }
    }
}

/// The first failed non-init container of `run`, else its first failed init container.
pub fn failed_container(run: &Run) -> Option<&Container> {
    run.containers
        .iter()
        .find(|c| !c.init && c.failed())
        .or_else(|| run.containers.iter().find(|c| c.init && c.failed()))
}

/// How many of `run`'s containers failed (init containers included).
pub fn failed_containers(run: &Run) -> usize {
    run.containers.iter().filter(|c| c.failed()).count()
}

/// A run Armada itself categorized as preempted (`preemption/<type>`, upstream #5155): its
/// signature is that category as recorded, before its `Preempted` condition.
fn armadas_preemption(run: &Run) -> bool {
    run.category.as_deref() == Some(CATEGORY_PREEMPTION)
}

/// The signature of a failed run, by the docs' order of precedence.
pub fn signature(run: &Run) -> Signature {
    if armadas_preemption(run) {
        return Signature::Category {
            category: CATEGORY_PREEMPTION.to_string(),
            subcategory: run.subcategory.clone().filter(|s| !s.is_empty()),
        };
    }
    if let Some(c) = CONDITIONS.iter().find(|c| run.conditions.contains(c)) {
        return Signature::Condition(*c);
    }
    if let Some(c) = failed_container(run) {
        let (template, cut) = c.message.as_deref().map_or((String::new(), false), template);
        return Signature::Container {
            exit: (c.reason.as_deref() != Some("OOMKilled")).then_some(c.exit_code),
            name: c.name.clone(),
            init: c.init,
            template,
            cut,
        };
    }
    if let Some(e) = run.pod_error.as_deref() {
        let (template, cut) = pod_error_template(e);
        if !template.is_empty() {
            return Signature::PodError { template, cut };
        }
    }
    match run.category.as_deref() {
        Some(c) if !c.is_empty() => Signature::Category {
            category: c.to_string(),
            subcategory: run.subcategory.clone().filter(|s| !s.is_empty()),
        },
        _ => Signature::Unknown,
    }
}

/// [`signature`]`(run).text()` written into `out` without building the signature (the
/// per-run path of the counts); `scratch` holds the template. Returns whether the message's
/// first line was cut.
pub fn text_into(run: &Run, out: &mut String, scratch: &mut String) -> bool {
    out.clear();
    if armadas_preemption(run) {
        out.push_str("category:");
        out.push_str(CATEGORY_PREEMPTION);
        if let Some(sub) = run.subcategory.as_deref().filter(|s| !s.is_empty()) {
            out.push('/');
            out.push_str(sub);
        }
        return false;
    }
    if let Some(c) = CONDITIONS.iter().find(|c| run.conditions.contains(c)) {
        out.push_str("condition:");
        out.push_str(c.as_str());
        return false;
    }
    if let Some(c) = failed_container(run) {
        let cut = c.message.as_deref().is_some_and(|m| template_into(m, scratch));
        if c.message.is_none() {
            scratch.clear();
        }
        let exit = (c.reason.as_deref() != Some("OOMKilled")).then_some(c.exit_code);
        push_container(out, exit, &c.name, c.init, scratch);
        return cut && !scratch.is_empty();
    }
    if let Some(e) = run.pod_error.as_deref() {
        let cut = pod_error_template_into(e, scratch);
        if !scratch.is_empty() {
            out.push_str("podError \"");
            out.push_str(scratch);
            out.push('"');
            return cut;
        }
    }
    match run.category.as_deref() {
        Some(c) if !c.is_empty() => {
            out.push_str("category:");
            out.push_str(c);
            if let Some(sub) = run.subcategory.as_deref().filter(|s| !s.is_empty()) {
                out.push('/');
                out.push_str(sub);
            }
        }
        _ => out.push_str("unknown"),
    }
    false
}

/// The signature texts of one job's failed runs ([`text_into`]), each computed once for the job
/// however many of a pass's counts read it: suggest's learning and the incident windows' mix
/// both name every failed run by it, and a template is the dearest step of a run's count.
#[derive(Debug, Clone, Default)]
pub struct FailedTexts {
    /// The texts, one after the other.
    texts: String,
    /// Per run of the job: where its text ends in `texts`, and whether its message's first line
    /// was cut; a run that did not fail has an empty text.
    ends: Vec<(usize, bool)>,
    /// Whether `texts` holds the job's: [`FailedTexts::clear`] at each job, filled once.
    ready: bool,
    one: String,
    scratch: String,
}

impl FailedTexts {
    /// A new job: the texts are computed again at its first [`FailedTexts::of`].
    pub fn clear(&mut self) {
        self.ready = false;
    }

    /// The texts of `runs` (one job's), computed at the first call since [`FailedTexts::clear`].
    pub fn of(&mut self, runs: &[Run]) -> &FailedTexts {
        if !self.ready {
            self.texts.clear();
            self.ends.clear();
            for run in runs {
                let mut cut = false;
                if run.outcome == crate::model::failure_history::Outcome::Failed {
                    cut = text_into(run, &mut self.one, &mut self.scratch);
                    self.texts.push_str(&self.one);
                }
                self.ends.push((self.texts.len(), cut));
            }
            self.ready = true;
        }
        self
    }

    /// Run `k`'s text and whether its message's first line was cut (`""` for a run that did
    /// not fail).
    pub fn get(&self, k: usize) -> (&str, bool) {
        let start = k.checked_sub(1).map_or(0, |p| self.ends[p].0);
        let (end, cut) = self.ends[k];
        (&self.texts[start..end], cut)
    }
}

/// `oom` or `exit:N`, `@NAME` / `@init:NAME` / `@init`, and ` "TEMPLATE"` when there is one.
fn push_container(out: &mut String, exit: Option<i64>, name: &str, init: bool, template: &str) {
    use std::fmt::Write as _;
    match exit {
        None => out.push_str("oom"),
        Some(code) => {
            let _ = write!(out, "exit:{code}");
        }
    }
    match (init, name.is_empty()) {
        (true, true) => out.push_str("@init"),
        (true, false) => {
            out.push_str("@init:");
            out.push_str(name);
        }
        (false, false) => {
            out.push('@');
            out.push_str(name);
        }
        (false, true) => {}
    }
    if !template.is_empty() {
        out.push_str(" \"");
        out.push_str(template);
        out.push('"');
    }
}

/// The header of a stuck pod's text (upstream `createStuckPodMessage`, both forms start so).
const STUCK_HEADER: &str = "Unable to start pod";
/// The line a pod check's event match starts with (`Matched check: %q\n%s`, upstream
/// `podchecks/event_checks.go:102`): the event's message follows on the next line.
const MATCHED_CHECK: &str = "Matched check: ";

/// The line of a pod-error text that says what went wrong (docs/reference/suggest.md
/// "Signatures"): the last line that is not blank, not the `Unable to start pod…` header and
/// not a `Matched check:` line. A stuck pod's text is the header and the pod checks'
/// messages, each event check's after its `Matched check:` line: what is left is the
/// kubelet's event message or a container's state, the last one checked when there are
/// several. Empty when no line is left.
pub fn distinguishing_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| {
            let l = l.trim_matches([' ', '\t', '\r', '\x0c']);
            !l.is_empty() && !l.starts_with(STUCK_HEADER) && !l.starts_with(MATCHED_CHECK)
        })
        .unwrap_or("")
}

/// What a container-state check's line (upstream `podchecks/container_state_checks.go:116`,
/// `Container %s has been in state %s for reason %s (%s - check %q) for more than timeout %v`)
/// becomes as a template: the state and the reason, the rest left out, since the container's
/// name, the kubelet's message (the image's name), the check's name and its timeout vary
/// where the failure does not.
const WAITING_STATE: &str = "Container <name> has been in state ";
/// What follows the state in that template, before the reason.
const WAITING_REASON: &str = " for reason ";

/// `(state, reason)` of a container-state check's line, when `line` is one: a name, a state
/// and a reason that hold no blank, then ` (`.
fn waiting_line(line: &str) -> Option<(&str, &str)> {
    let rest = line
        .trim_start_matches([' ', '\t', '\r', '\x0c'])
        .strip_prefix("Container ")?;
    let (name, rest) = rest.split_once(" has been in state ")?;
    let (state, rest) = rest.split_once(" for reason ")?;
    let (reason, _) = rest.split_once(" (")?;
    let word = |w: &str| !w.is_empty() && !w.contains([' ', '\t', '\r', '\x0c']);
    (word(name) && word(state) && word(reason)).then_some((state, reason))
}

/// `(state, reason)` of a pod-error template made of a container-state check's line
/// ([`pod_error_template`]): what its pattern matches.
pub fn waiting_template(template: &str) -> Option<(&str, &str)> {
    let rest = template.strip_prefix(WAITING_STATE)?;
    let (state, reason) = rest.split_once(WAITING_REASON)?;
    let word = |w: &str| !w.is_empty() && !w.contains(' ');
    (word(state) && word(reason)).then_some((state, reason))
}

/// A pod-error text's template: its [`distinguishing_line`]'s, or for a container-state
/// check's line `Container <name> has been in state STATE for reason REASON`; and whether the
/// line was cut.
pub fn pod_error_template(text: &str) -> (String, bool) {
    let mut out = String::new();
    let cut = pod_error_template_into(text, &mut out);
    (out, cut)
}

/// [`pod_error_template`] into `out` (cleared first).
pub fn pod_error_template_into(text: &str, out: &mut String) -> bool {
    let line = distinguishing_line(text);
    match waiting_line(line) {
        Some((state, reason)) => {
            out.clear();
            out.push_str(WAITING_STATE);
            out.push_str(state);
            out.push_str(WAITING_REASON);
            out.push_str(reason);
            false
        }
        None => template_into(line, out),
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A message's template, and whether its first line was longer than [`TEMPLATE_CHARS`]:
/// the first line, its first 160 characters, UUIDs → `<uuid>`, hex words → `<hex>`, runs
/// of digits → `<n>`, blanks → one space, trimmed.
pub fn template(message: &str) -> (String, bool) {
    let mut out = String::new();
    let cut = template_into(message, &mut out);
    (out, cut)
}

/// [`template`] into `out` (cleared first), in one pass: a UUID can neither start nor end
/// inside a word, so the words the hex rule reads are the line's own words outside UUIDs,
/// and the digits left for `<n>` are those outside both; the steps' order holds. Returns
/// whether the first line was cut.
pub fn template_into(message: &str, out: &mut String) -> bool {
    out.clear();
    let line = message.split('\n').next().unwrap_or("");
    let (line, cut) = match line.char_indices().nth(TEMPLATE_CHARS) {
        Some((at, _)) => (&line[..at], true),
        None => (line, false),
    };
    let b = line.as_bytes();
    let mut blank = false;
    // Text is pushed through this, so that a run of blanks becomes one space between two
    // pieces of text and none at either end.
    let push = |out: &mut String, piece: &str, blank: &mut bool| {
        if *blank && !out.is_empty() {
            out.push(' ');
        }
        *blank = false;
        out.push_str(piece);
    };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if matches!(c, b' ' | b'\t' | b'\r' | 0x0c) {
            blank = true;
            i += 1;
            continue;
        }
        if c.is_ascii_hexdigit() && (i == 0 || !is_word(b[i - 1])) {
            if let Some(end) = uuid_at(b, i) {
                push(out, "<uuid>", &mut blank);
                i = end;
                continue;
            }
        }
        if is_word(c) {
            let start = i;
            while i < b.len() && is_word(b[i]) {
                i += 1;
            }
            let word = &b[start..i];
            if is_hex_word(word) {
                push(out, "<hex>", &mut blank);
                continue;
            }
            // The word with its runs of digits masked.
            let mut k = 0;
            while k < word.len() {
                let from = k;
                if word[k].is_ascii_digit() {
                    while k < word.len() && word[k].is_ascii_digit() {
                        k += 1;
                    }
                    push(out, "<n>", &mut blank);
                } else {
                    while k < word.len() && !word[k].is_ascii_digit() {
                        k += 1;
                    }
                    push(out, &line[start + from..start + k], &mut blank);
                }
            }
            continue;
        }
        // Any other character, whole (a multi-byte one is never a word byte or a blank).
        let len = line[i..].chars().next().map_or(1, char::len_utf8);
        push(out, &line[i..i + len], &mut blank);
        i += len;
    }
    cut
}

/// The end of an `8-4-4-4-12` hex UUID starting at `i` and not followed by a word byte.
fn uuid_at(b: &[u8], i: usize) -> Option<usize> {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let mut j = i;
    for (k, n) in GROUPS.iter().enumerate() {
        if k > 0 {
            if b.get(j) != Some(&b'-') {
                return None;
            }
            j += 1;
        }
        if j + n > b.len() || !b[j..j + n].iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        j += n;
    }
    (j == b.len() || !is_word(b[j])).then_some(j)
}

/// A word that is `0x` and hex digits, or 6 or more hex digits with both a digit and a
/// letter a–f.
fn is_hex_word(w: &[u8]) -> bool {
    if w.len() > 2 && w.starts_with(b"0x") && w[2..].iter().all(u8::is_ascii_hexdigit) {
        return true;
    }
    w.len() >= 6
        && w.iter().all(u8::is_ascii_hexdigit)
        && w.iter().any(u8::is_ascii_digit)
        && w.iter().any(u8::is_ascii_alphabetic)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure_history::Outcome;

    /// The docs' steps one after the other, each over the whole line: the reference the
    /// one-pass [`template_into`] must agree with.
    fn reference(message: &str) -> (String, bool) {
        let line = message.split('\n').next().unwrap_or("");
        let (line, cut) = match line.char_indices().nth(TEMPLATE_CHARS) {
            Some((at, _)) => (&line[..at], true),
            None => (line, false),
        };
        // 1. UUIDs.
        let b = line.as_bytes();
        let mut s = String::new();
        let (mut i, mut from) = (0, 0);
        while i < b.len() {
            match (i == 0 || !is_word(b[i - 1])).then(|| uuid_at(b, i)).flatten() {
                Some(end) => {
                    s.push_str(&line[from..i]);
                    s.push_str("<uuid>");
                    i = end;
                    from = end;
                }
                None => i += 1,
            }
        }
        s.push_str(&line[from..]);
        // 2. Hex words.
        let b = s.as_bytes();
        let mut t = String::new();
        let (mut i, mut from) = (0, 0);
        while i < b.len() {
            if !is_word(b[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && is_word(b[i]) {
                i += 1;
            }
            if is_hex_word(&b[start..i]) {
                t.push_str(&s[from..start]);
                t.push_str("<hex>");
                from = i;
            }
        }
        t.push_str(&s[from..]);
        // 3. Digits.
        let mut u = String::new();
        let mut in_digits = false;
        for ch in t.chars() {
            if ch.is_ascii_digit() {
                if !in_digits {
                    u.push_str("<n>");
                }
                in_digits = true;
            } else {
                in_digits = false;
                u.push(ch);
            }
        }
        // 4. Blanks.
        let words: Vec<&str> = u.split([' ', '\t', '\r', '\x0c']).filter(|w| !w.is_empty()).collect();
        (words.join(" "), cut)
    }

    proptest::proptest! {
        #[test]
        fn one_pass_is_the_steps_in_order(message in "([0-9a-fA-Fx_ \t\r\x0c\n.:<>-]|[g-z]|é|123e4567-e89b-12d3-a456-426614174000){0,60}") {
            proptest::prop_assert_eq!(template(&message), reference(&message));
        }
    }

    fn t(s: &str) -> String {
        template(s).0
    }

    #[test]
    fn templates_mask_in_the_documented_order() {
        let rows = [
            (
                "RuntimeError: CUDA error 700 at step 1234",
                "RuntimeError: CUDA error <n> at step <n>",
            ),
            ("job 123e4567-e89b-12d3-a456-426614174000 failed", "job <uuid> failed"),
            // inside a longer word: not a UUID; its hex parts are words of their own.
            (
                "x123e4567-e89b-12d3-a456-426614174000",
                "x<n>e<n>-e<n>b-<n>d<n>-a<n>-<n>",
            ),
            ("addr 0x7ffd1234 and 0XAB", "addr <hex> and <n>XAB"),
            (
                "sha deadbeef1 vs cafe12 vs abcdef vs 123456",
                "sha <hex> vs <hex> vs abcdef vs <n>",
            ),
            ("DEADBEEF12 upper", "<hex> upper"),
            ("pod-7f9c4b-xk2 died", "pod-<hex>-xk<n> died"),
            ("  tabs\tand\r\x0c  spaces  ", "tabs and spaces"),
            ("first line\nsecond 42", "first line"),
            ("v1.2.3 ok", "v<n>.<n>.<n> ok"),
            ("", ""),
            ("   ", ""),
            ("literal <n> text", "literal <n> text"),
            ("ünïcödé 12", "ünïcödé <n>"),
        ];
        for (input, want) in rows {
            assert_eq!(t(input), want, "template of {input:?}");
        }
    }

    #[test]
    fn a_template_keeps_160_characters_of_the_first_line() {
        let long = "é".repeat(170);
        let (s, cut) = template(&long);
        assert_eq!(s.chars().count(), 160);
        assert!(cut);
        let (s, cut) = template(&"a".repeat(160));
        assert_eq!(s.len(), 160);
        assert!(!cut);
        // The cut is before masking: a number across the 160th character loses its tail.
        let (s, _) = template(&format!("{}12345", "z".repeat(158)));
        assert_eq!(s, format!("{}<n>", "z".repeat(158)));
    }

    fn run() -> Run {
        Run {
            outcome: Outcome::Failed,
            ..Run::default()
        }
    }

    fn container(name: &str, init: bool, exit: i64, reason: Option<&str>, message: Option<&str>) -> Container {
        Container {
            name: name.into(),
            init,
            exit_code: exit,
            reason: reason.map(Into::into),
            message: message.map(Into::into),
        }
    }

    /// `signature(run).text()`, checked against [`text_into`] on the way.
    fn text(r: &Run) -> String {
        let (mut out, mut scratch) = (String::new(), String::new());
        text_into(r, &mut out, &mut scratch);
        let s = signature(r);
        assert_eq!(out, s.text());
        s.text()
    }

    #[test]
    fn signatures_follow_the_order_of_precedence() {
        let mut r = run();
        r.conditions = vec![Condition::OOMKilled, Condition::Preempted, Condition::Evicted];
        r.containers = vec![container("main", false, 137, Some("OOMKilled"), None)];
        assert_eq!(text(&r), "condition:Evicted");

        let mut r = run();
        r.conditions = vec![Condition::OOMKilled];
        r.containers = vec![
            container("init", true, 1, None, None),
            container("side", false, 0, None, None),
            container("main", false, 137, Some("OOMKilled"), Some("killed")),
        ];
        assert_eq!(text(&r), "oom@main \"killed\"");

        let mut r = run();
        r.containers = vec![
            container("setup", true, 2, None, Some("  ")),
            container("main", false, 0, None, None),
        ];
        assert_eq!(text(&r), "exit:2@init:setup");
        r.containers[0].name.clear();
        assert_eq!(text(&r), "exit:2@init");

        let mut r = run();
        r.containers = vec![container("", false, 1, None, Some("Error: id 42"))];
        assert_eq!(text(&r), "exit:1 \"Error: id <n>\"");

        let mut r = run();
        r.pod_error = Some("failed to pull image \"reg/x:1.2\": 404".into());
        r.category = Some("infra".into());
        assert_eq!(text(&r), "podError \"failed to pull image \"reg/x:<n>.<n>\": <n>\"");

        // A stuck pod's text: the line that says what went wrong, not its header.
        let mut r = run();
        r.pod_error = Some(
            "Unable to start pod - encountered an unrecoverable problem.\nMatched check: \"check-0\"\nFailed to pull image \"reg/x:1.2\": not found".into(),
        );
        assert_eq!(
            text(&r),
            "podError \"Failed to pull image \"reg/x:<n>.<n>\": not found\""
        );
        r.pod_error = Some(
            "Unable to start pod.\nContainer main has been in state Waiting for reason ErrImagePull (Back-off pulling image \"reg/x:1.2\" - check \"check-2\") for more than timeout 15m0s".into(),
        );
        assert_eq!(
            text(&r),
            "podError \"Container <name> has been in state Waiting for reason ErrImagePull\""
        );
        // A header alone says nothing: the recorded category does.
        r.pod_error = Some("Unable to start pod.\n\n".into());
        r.category = Some("infra".into());
        assert_eq!(text(&r), "category:infra");

        let mut r = run();
        r.category = Some("gpu".into());
        r.subcategory = Some("xid".into());
        assert_eq!(text(&r), "category:gpu/xid");
        // Armada's own `preemption/<type>` is shown as recorded, before the condition.
        let mut p = run();
        p.conditions = vec![Condition::Preempted];
        p.category = Some("preemption".into());
        p.subcategory = Some("fair-share".into());
        assert_eq!(text(&p), "category:preemption/fair-share");
        p.category = None;
        assert_eq!(text(&p), "condition:Preempted");
        r.subcategory = None;
        assert_eq!(text(&r), "category:gpu");
        r.category = Some(String::new());
        assert_eq!(text(&r), "unknown");
    }

    /// The line of a pod-error text that says what went wrong: the last one that is neither
    /// blank, nor the stuck pod's header, nor a `Matched check:` line (the pod checks join
    /// their messages with `\n`, a container that no check matched giving an empty one).
    #[test]
    fn the_distinguishing_line_is_the_last_that_is_not_a_header() {
        let rows = [
            ("one line", "one line"),
            ("Unable to start pod.\nMatched check: \"check-0\"\nevent message", "event message"),
            (
                "Unable to start pod.\nMatched check: \"a\"\nfirst event\nContainer c has been in state Waiting for reason R (m - check \"b\") for more than timeout 1m0s\n",
                "Container c has been in state Waiting for reason R (m - check \"b\") for more than timeout 1m0s",
            ),
            ("Unable to start pod - encountered an unrecoverable problem.\n\nPod could not been scheduled in within 5m0s deadline. Retrying\n\n", "Pod could not been scheduled in within 5m0s deadline. Retrying"),
            ("Unable to start pod.\n  \t\nMatched check: \"x\"\n", ""),
            ("", ""),
        ];
        for (text, want) in rows {
            assert_eq!(distinguishing_line(text), want, "{text:?}");
        }
        // A line that only looks like a container state's is an ordinary line.
        assert_eq!(
            pod_error_template("Container a b has been in state Waiting for reason R (x)").0,
            "Container a b has been in state Waiting for reason R (x)"
        );
        assert_eq!(
            waiting_template("Container <name> has been in state Waiting for reason ErrImagePull"),
            Some(("Waiting", "ErrImagePull"))
        );
        assert_eq!(
            waiting_template("Container main has been in state Waiting for reason ErrImagePull"),
            None
        );
    }
}
