//! The tables of retry policies and queues (and of `config get-contexts`), plus the canonical
//! YAML and unified diff that `diff` shows. What `get` prints around them (`-o yaml|json|name`,
//! one object or a `kind: List`) is `view`'s.
//!
//! Owns: how resources look in a table. Must not: call the client, read files or decide exit
//! codes.
//!
//! Decisions: every cell is [`shown`] (control characters, line breaks and bidirectional
//! controls as escapes, `\x1b`), as history text is; tables are borderless with three spaces between columns, like kubectl; unset
//! values show as `-`, an unset policy `retryLimit` as `-` too (it inherits
//! `globalMaxRetries`).

use std::io::{self, Write};

use tabled::builder::Builder;
use tabled::settings::{Padding, Style};
use tabled::Tabled;

use crate::model::document::ApiVersion;
use crate::model::encode;
use crate::model::policy::Backoff;
use crate::model::{Queue, RetryPolicy};
use crate::output::text::shown;

#[derive(Tabled)]
struct PolicyRow {
    #[tabled(rename = "NAME")]
    name: String,
    #[tabled(rename = "RETRY LIMIT")]
    retry_limit: String,
    #[tabled(rename = "DEFAULT")]
    default_action: String,
    #[tabled(rename = "RULES")]
    rules: usize,
}

#[derive(Tabled)]
struct PolicyWideRow {
    #[tabled(rename = "NAME")]
    name: String,
    #[tabled(rename = "RETRY LIMIT")]
    retry_limit: String,
    #[tabled(rename = "DEFAULT")]
    default_action: String,
    #[tabled(rename = "RULES")]
    rules: usize,
    #[tabled(rename = "BACKOFF")]
    backoff: String,
    #[tabled(rename = "ANTI-AFFINITY")]
    anti_affinity: String,
    #[tabled(rename = "MATCHES")]
    matches: String,
}

#[derive(Tabled)]
struct QueueRow {
    #[tabled(rename = "NAME")]
    name: String,
    #[tabled(rename = "PRIORITY FACTOR")]
    priority_factor: f64,
    #[tabled(rename = "CORDONED")]
    cordoned: bool,
    #[tabled(rename = "RETRY POLICIES")]
    retry_policies: String,
}

#[derive(Tabled)]
struct QueueWideRow {
    #[tabled(rename = "NAME")]
    name: String,
    #[tabled(rename = "PRIORITY FACTOR")]
    priority_factor: f64,
    #[tabled(rename = "CORDONED")]
    cordoned: bool,
    #[tabled(rename = "RETRY POLICIES")]
    retry_policies: String,
    #[tabled(rename = "OWNERS")]
    owners: String,
    #[tabled(rename = "GROUPS")]
    groups: String,
    #[tabled(rename = "LABELS")]
    labels: String,
}

fn table<R: Tabled>(out: &mut dyn Write, rows: impl Iterator<Item = R>) -> io::Result<()> {
    table_with(out, rows, false)
}

/// Tables of policies or queues for `get`, with `--no-headers` (column widths then fit the
/// values alone, as kubectl's do).
pub fn write_table(
    out: &mut dyn Write,
    policies: &[RetryPolicy],
    queues: &[Queue],
    wide: bool,
    no_headers: bool,
) -> io::Result<()> {
    match (wide, policies.is_empty()) {
        (false, false) => table_with(out, policies.iter().map(policy_row), no_headers),
        (true, false) => table_with(out, policies.iter().map(policy_wide_row), no_headers),
        (false, true) => table_with(out, queues.iter().map(queue_row), no_headers),
        (true, true) => table_with(out, queues.iter().map(queue_wide_row), no_headers),
    }
}

fn table_with<R: Tabled>(out: &mut dyn Write, rows: impl Iterator<Item = R>, no_headers: bool) -> io::Result<()> {
    let mut b = Builder::default();
    if !no_headers {
        b.push_record(R::headers());
    }
    for row in rows {
        b.push_record(row.fields().iter().map(|f| shown(f).into_owned()));
    }
    write_cells(out, b)
}

/// A table of cells already [`shown`]: every value of a stored resource is anyone's text (a
/// server other than retryctl's stores what it is sent), and a control character, a line
/// break or a bidirectional control in a cell would act on the terminal, break the row or
/// reorder it. Borderless, three spaces between columns, as kubectl's.
pub fn write_cells(out: &mut dyn Write, b: Builder) -> io::Result<()> {
    if b.count_records() == 0 {
        return Ok(());
    }
    let mut t = b.build();
    t.with(Style::blank()).with(Padding::new(0, 2, 0, 0));
    // The blank style separates columns by one space, the padding adds two; it leaves spaces after the last column: strip them, as kubectl has none.
    for line in t.to_string().lines() {
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn policy_row(p: &RetryPolicy) -> PolicyRow {
    PolicyRow {
        name: p.name.clone(),
        retry_limit: p.retry_limit.map_or("-".into(), |l| l.to_string()),
        default_action: p.default_action().as_str().into(),
        rules: p.rules.len(),
    }
}

fn policy_wide_row(p: &RetryPolicy) -> PolicyWideRow {
    let matches: Vec<String> = p
        .rules
        .iter()
        .map(|r| {
            let mut m = Vec::new();
            if let Some(c) = &r.on_conditions {
                m.extend(c.iter().map(|c| c.as_str().to_string()));
            }
            if let Some(e) = &r.on_exit_codes {
                let vals: Vec<String> = e.values.iter().map(i64::to_string).collect();
                m.push(format!("exit {} {}", e.operator.as_str(), vals.join(",")));
            }
            if r.on_termination_message.is_some() {
                m.push("message".into());
            }
            if let Some(c) = &r.on_failure_category {
                m.push(format!("category {}", c.join(",")));
            }
            format!("{}:{}", r.action.as_str(), m.join("+"))
        })
        .collect();
    PolicyWideRow {
        name: p.name.clone(),
        retry_limit: p.retry_limit.map_or("-".into(), |l| l.to_string()),
        default_action: p.default_action().as_str().into(),
        rules: p.rules.len(),
        backoff: backoff_summary(&p.backoff),
        anti_affinity: p.anti_affinity.map_or("-".into(), |m| m.as_str().into()),
        matches: if matches.is_empty() {
            "-".into()
        } else {
            matches.join(" ")
        },
    }
}

fn backoff_summary(b: &Backoff) -> String {
    if b.is_empty() {
        return "-".into();
    }
    let d = |x: Option<crate::model::duration::GoDuration>| x.map_or("-".into(), |d| d.to_string());
    let mut s = format!("{}..{}", d(b.initial_delay), d(b.max_delay));
    if let Some(m) = b.multiplier {
        s.push_str(&format!(" x{m}"));
    }
    if let Some(j) = b.jitter {
        s.push_str(&format!(" ±{j}"));
    }
    s
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "-".into()
    } else {
        items.join(",")
    }
}

fn queue_row(q: &Queue) -> QueueRow {
    QueueRow {
        name: q.name.clone(),
        priority_factor: q.priority_factor,
        cordoned: q.cordoned,
        retry_policies: list(&q.retry_policies),
    }
}

fn queue_wide_row(q: &Queue) -> QueueWideRow {
    // Upstream returns owners only inside `permissions`: show them from there too.
    let from_perms = |kind: &str| -> Vec<String> {
        q.permissions
            .iter()
            .flat_map(|p| &p.subjects)
            .filter(|s| s.kind == kind)
            .map(|s| s.name.clone())
            .collect()
    };
    let owners = if q.user_owners.is_empty() {
        from_perms("User")
    } else {
        q.user_owners.clone()
    };
    let groups = if q.group_owners.is_empty() {
        from_perms("Group")
    } else {
        q.group_owners.clone()
    };
    let labels: Vec<String> = q.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    QueueWideRow {
        name: q.name.clone(),
        priority_factor: q.priority_factor,
        cordoned: q.cordoned,
        retry_policies: list(&q.retry_policies),
        owners: list(&owners),
        groups: list(&groups),
        labels: list(&labels),
    }
}

#[derive(Tabled)]
struct ContextRow {
    #[tabled(rename = "CURRENT")]
    current: String,
    #[tabled(rename = "NAME")]
    name: String,
    #[tabled(rename = "URL")]
    url: String,
    #[tabled(rename = "AUTH")]
    auth: String,
}

/// `config get-contexts`: rows of (current mark, name, URL, auth kind).
pub fn write_contexts(out: &mut dyn Write, rows: &[[String; 4]]) -> io::Result<()> {
    table(
        out,
        rows.iter().map(|[current, name, url, auth]| ContextRow {
            current: current.clone(),
            name: name.clone(),
            url: url.clone(),
            auth: auth.clone(),
        }),
    )
}

/// The canonical YAML `diff` compares: the v1 document of a policy.
pub fn policy_yaml(p: &RetryPolicy) -> String {
    encode::policy_document(p, ApiVersion::V1)
        .map(|d| encode::to_yaml(&d))
        .unwrap_or_default()
}

pub fn queue_yaml(q: &Queue) -> String {
    encode::to_yaml(&encode::queue_document(q))
}

/// A unified diff (3 lines of context) from `old` to `new`; empty when they are equal.
pub fn unified_diff(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_borderless_without_trailing_spaces() {
        let p = RetryPolicy {
            name: "ml-training".into(),
            retry_limit: Some(5),
            ..RetryPolicy::default()
        };
        let q = RetryPolicy {
            name: "p".into(),
            ..RetryPolicy::default()
        };
        let mut out = Vec::new();
        write_table(&mut out, &[p, q], &[], false, false).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "NAME          RETRY LIMIT   DEFAULT   RULES\nml-training   5             Fail      0\np             -             Fail      0\n"
        );
    }

    #[test]
    fn diff_is_unified_and_empty_when_equal() {
        assert_eq!(unified_diff("a\n", "a\n", "x", "y"), "");
        assert_eq!(
            unified_diff("a\nb\n", "a\nc\n", "server", "file"),
            "--- server\n+++ file\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
        );
    }
}
