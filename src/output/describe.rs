//! `describe`: a retry policy or a queue in words, for a person deciding what will happen to
//! a failed job (docs/cli.md).
//!
//! Owns: the wording and layout. Must not: call the client, read files, or compute backoff
//! itself: delays come from the evaluator's own `resolve_backoff` / `backoff_delay`, so
//! what is described is what `simulate` (and the scheduler) does.
//!
//! Decisions: everything is written through [`Escaping`]: a stored resource's text (a
//! category, a pattern, an owner, a label) is anyone's, and its control characters, line
//! breaks and bidirectional controls are shown as escapes (`\x1b`), as history text is; the
//! description's own lines are kept. A rule's effective limit is its own `retryLimit`, else the policy's, else the
//! scheduler's `globalMaxRetries` (docs/engines.md), and is shown capped at `globalMaxRetries`
//! (which also caps the job's retries across all rules). The backoff schedule lists one
//! line per retry up to the limit, collapsing the tail once the delay reaches `maxDelay`.
//! Without `--scheduler-config` retryctl's defaults (docs/simulate.md) are used, and the text says
//! they are not a scheduler's.

use std::io::{self, Write};

use crate::engine::{backoff_delay, resolve_backoff, Settings};
use crate::model::duration::GoDuration;
use crate::model::policy::{AntiAffinityMode, Mutation};
use crate::model::{Action, Queue, RetryPolicy, Rule};
use crate::output::text::Escaping;

/// Where the scheduler settings came from, for the reader.
pub struct Scheduler<'a> {
    pub settings: &'a Settings,
    /// `None`: built-in defaults (no `--scheduler-config`).
    pub source: Option<&'a str>,
}

impl Scheduler<'_> {
    fn global_words(&self) -> String {
        format!(
            "globalMaxRetries {} ({})",
            self.settings.global_max_retries,
            self.global_source()
        )
    }

    /// Where `globalMaxRetries` comes from. Without a file it is retryctl's own assumption
    /// (docs/simulate.md, what `simulate` assumes too), not any scheduler's: upstream's shipped
    /// config (`config/scheduler/config.yaml` at `207cc9e`) has the engine off and 5.
    fn global_source(&self) -> String {
        match self.source {
            Some(file) => format!("from {file}"),
            None => "retryctl's default without --scheduler-config, not your scheduler's: upstream \
                     Armada ships `enabled: false, globalMaxRetries: 5`; pass --scheduler-config \
                     FILE for yours"
                .to_string(),
        }
    }
}

/// Describes `policy`; `used_by` are the queues that attach it, with its position in each
/// queue's list (1-based) and the list's length.
pub fn write_policy(
    out: &mut dyn Write,
    policy: &RetryPolicy,
    used_by: &[(String, usize, usize)],
    scheduler: &Scheduler,
) -> io::Result<()> {
    let out = &mut Escaping::new(out);
    writeln!(out, "Name:            {}", policy.name)?;
    write_used_by(out, policy, used_by, |q, pos, of| format!("{q} (policy {pos} of {of})"))?;
    let limit = match policy.retry_limit {
        Some(l) => format!("{l} (the policy's retryLimit; rules without their own use it)"),
        None => format!(
            "not set: rules without their own limit use {}",
            scheduler.global_words()
        ),
    };
    writeln!(out, "Retry limit:     {limit}")?;
    writeln!(
        out,
        "Global cap:      {} retries per job, across all rules and policies",
        scheduler.settings.global_max_retries
    )?;
    writeln!(
        out,
        "Default action:  {}",
        match policy.default_action() {
            Action::Fail => "Fail: a failure no rule matches fails the job".to_string(),
            Action::Retry => format!(
                "Retry: a failure no rule matches is retried, up to {} times",
                effective_limit(None, policy, scheduler).0
            ),
        }
    )?;
    writeln!(
        out,
        "Anti-affinity:   {}",
        anti_affinity_words(policy.anti_affinity.unwrap_or(AntiAffinityMode::None))
    )?;
    if policy.rules.is_empty() {
        writeln!(out, "Rules:           <none>")?;
    } else {
        writeln!(out, "Rules (the first that matches a failure decides):")?;
        for (i, rule) in policy.rules.iter().enumerate() {
            write_rule(out, i + 1, rule, policy, scheduler)?;
        }
    }
    if policy.default_action() == Action::Retry {
        writeln!(out, "  default (no rule matched): Retry")?;
        write_retry_details(out, None, policy, scheduler)?;
    }
    Ok(())
}

fn write_rule(out: &mut dyn Write, n: usize, rule: &Rule, policy: &RetryPolicy, s: &Scheduler) -> io::Result<()> {
    writeln!(out, "  {n}. {} when {}", rule.action.as_str(), matcher_words(rule))?;
    if let Some(c) = &rule.container_name {
        writeln!(out, "     Container:     only container `{c}` is looked at")?;
    }
    if rule.include_init_containers {
        writeln!(out, "     Containers:    init containers are looked at too")?;
    }
    match rule.action {
        Action::Fail => writeln!(out, "     The job fails at once, without retry."),
        Action::Retry => write_retry_details(out, Some(rule), policy, s),
    }
}

fn write_retry_details(
    out: &mut dyn Write,
    rule: Option<&Rule>,
    policy: &RetryPolicy,
    s: &Scheduler,
) -> io::Result<()> {
    let (limit, from) = effective_limit(rule, policy, s);
    let times = if limit == 1 { "time" } else { "times" };
    writeln!(
        out,
        "     Retried:       up to {limit} {times}, {} attempts in all ({from})",
        u64::from(limit) + 1
    )?;
    let (initial, max, multiplier, jitter) =
        resolve_backoff(rule.map(|r| &r.backoff), &policy.backoff, &s.settings.default_backoff);
    writeln!(out, "     Backoff:       {}", schedule(initial, max, multiplier, limit))?;
    if jitter > 0.0 {
        writeln!(
            out,
            "                    each delay plus up to {}% jitter (never above {max})",
            (jitter * 100.0).round()
        )?;
    }
    let mode = rule
        .and_then(|r| r.anti_affinity)
        .or(policy.anti_affinity)
        .unwrap_or(AntiAffinityMode::None);
    let mutation = rule.and_then(|r| r.mutate.as_ref());
    // Where a retry may run is said once: `mutate.affinity.avoidSameNode` (upstream's
    // mutation) avoids every earlier node, which covers what any anti-affinity mode does.
    let avoids_all = mutation
        .and_then(|m| m.affinity.as_ref())
        .is_some_and(|a| a.avoid_same_node);
    let placement = match (avoids_all, mode) {
        (false, mode) => anti_affinity_words(mode),
        (true, AntiAffinityMode::None) => {
            "avoidSameNode (mutate.affinity): a retry avoids every node the job already ran on"
        }
        (true, AntiAffinityMode::Node) => {
            "avoidSameNode (mutate.affinity): a retry avoids every node the job already ran on, \
             the one it last failed on (antiAffinity node) among them"
        }
    };
    writeln!(out, "     Anti-affinity: {placement}")?;
    if let Some(m) = mutation {
        for line in mutation_words(m) {
            writeln!(out, "     Mutation:      {line}")?;
        }
    }
    Ok(())
}

/// The effective limit of a rule (or the default action, `None`) and where it comes from.
pub fn effective_limit(rule: Option<&Rule>, policy: &RetryPolicy, s: &Scheduler) -> (u32, String) {
    let global = s.settings.global_max_retries;
    let (limit, from) = match (rule.and_then(|r| r.retry_limit), policy.retry_limit) {
        (Some(l), _) => (l, "the rule's retryLimit".to_string()),
        (None, Some(l)) => (l, "the policy's retryLimit".to_string()),
        (None, None) => (global, "the scheduler's globalMaxRetries".to_string()),
    };
    if limit > global {
        (global, format!("{from} {limit}, capped by {}", s.global_words()))
    } else {
        (limit, from)
    }
}

/// "retry 1 after 30s, 2 after 1m, 3 after 2m, 4-10 after 5m (capped at maxDelay)".
pub fn schedule(initial: GoDuration, max: GoDuration, multiplier: f64, limit: u32) -> String {
    if limit == 0 {
        return "none: the limit is 0, so this rule never retries".to_string();
    }
    if initial.0 == 0 {
        return "none: every retry is scheduled at once (initialDelay 0s)".to_string();
    }
    let mut parts = Vec::new();
    let mut n = 1;
    while n <= limit {
        let d = backoff_delay(initial, max, multiplier, n);
        if d >= max && n < limit {
            parts.push(format!("{n}-{limit} after {d} (capped at maxDelay)"));
            break;
        }
        let capped = if d >= max { " (capped at maxDelay)" } else { "" };
        if n == 1 {
            parts.push(format!("retry 1 after {d}{capped}"));
        } else {
            parts.push(format!("{n} after {d}{capped}"));
        }
        // Long uniform schedules (multiplier 1) stay short too.
        if parts.len() == 8 && n < limit {
            let last = backoff_delay(initial, max, multiplier, limit);
            parts.push(format!("... {limit} after {last}"));
            break;
        }
        n += 1;
    }
    parts.join(", ")
}

fn matcher_words(rule: &Rule) -> String {
    let mut m = Vec::new();
    if let Some(c) = &rule.on_conditions {
        let names: Vec<&str> = c.iter().map(|c| c.as_str()).collect();
        m.push(format!("the condition is {}", or_list(&names)));
    }
    if let Some(e) = &rule.on_exit_codes {
        let vals: Vec<String> = e.values.iter().map(i64::to_string).collect();
        let vals: Vec<&str> = vals.iter().map(String::as_str).collect();
        let verb = match e.operator {
            crate::model::policy::Operator::In => "is",
            crate::model::policy::Operator::NotIn => "is not",
        };
        m.push(format!("the exit code {verb} {}", or_list(&vals)));
    }
    if let Some(p) = &rule.on_termination_message {
        m.push(format!("the termination message matches `{p}`"));
    }
    if let Some(c) = &rule.on_failure_category {
        let c: Vec<&str> = c.iter().map(String::as_str).collect();
        m.push(format!("the failure category is {}", or_list(&c)));
    }
    if let Some(c) = &rule.on_failure_subcategory {
        let c: Vec<&str> = c.iter().map(String::as_str).collect();
        m.push(format!("the subcategory is {}", or_list(&c)));
    }
    if m.is_empty() {
        "<no matcher>".to_string()
    } else {
        m.join(" and ")
    }
}

fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

fn anti_affinity_words(mode: AntiAffinityMode) -> &'static str {
    match mode {
        AntiAffinityMode::None => "none: a retry may run on the same node",
        AntiAffinityMode::Node => "node: a retry avoids the node the job last failed on",
    }
}

fn mutation_words(m: &Mutation) -> Vec<String> {
    // `affinity.avoidSameNode` is said on the Anti-affinity line.
    let mut out = Vec::new();
    if let Some(mem) = m.resources.as_ref().and_then(|r| r.memory.as_ref()) {
        if let Some(f) = mem.factor {
            out.push(format!(
                "the job's memory is multiplied by {f} at each retry (compounding)"
            ));
        }
        if let Some(s) = &mem.fixed {
            out.push(format!("the job's memory grows by {s} at each retry"));
        }
    }
    out
}

/// The `Used by queues:` line: each queue (`(name, position, list length)`), in `position`'s
/// words when it lists more than one policy; `<none>` with how to attach one.
fn write_used_by(
    out: &mut dyn Write,
    policy: &RetryPolicy,
    used_by: &[(String, usize, usize)],
    position: impl Fn(&str, usize, usize) -> String,
) -> io::Result<()> {
    if used_by.is_empty() {
        return writeln!(
            out,
            "Used by queues:  <none> (attach it with `retryctl update queue NAME --add-retry-policy {}`)",
            policy.name
        );
    }
    let list: Vec<String> = used_by
        .iter()
        .map(|(q, pos, of)| if *of == 1 { q.clone() } else { position(q, *pos, *of) })
        .collect();
    writeln!(out, "Used by queues:  {}", list.join(", "))
}

/// Describes a policy in today's Armada's terms (a v1beta1 document, or a policy read from a
/// server that stores only that dialect): what upstream's engine does with it, and nothing it
/// cannot store. No backoff (upstream requeues a retry at once), no anti-affinity mode, one
/// limit for the whole policy; the global cap is the scheduler's, a number only when
/// `--scheduler-config` gives one (retryctl's own default is not upstream's).
pub fn write_policy_upstream(
    out: &mut dyn Write,
    policy: &RetryPolicy,
    used_by: &[(String, usize, usize)],
    scheduler: &Scheduler,
) -> io::Result<()> {
    let out = &mut Escaping::new(out);
    writeln!(out, "Name:            {}", policy.name)?;
    writeln!(
        out,
        "Dialect:         armadaproject.io/v1beta1 (today's Armada: category rules, one retry limit, no backoff)"
    )?;
    write_used_by(out, policy, used_by, |q, pos, of| match pos {
        1 => format!("{q} (its first policy, the one Armada evaluates)"),
        _ => format!("{q} (policy {pos} of {of}: Armada evaluates only the first, so not this one)"),
    })?;
    let limit = policy.retry_limit.unwrap_or(0);
    if limit == 0 {
        writeln!(
            out,
            "Retry limit:     0: this policy never retries (an absent retryLimit is 0)"
        )?;
    } else {
        // Upstream counts a job's failures, whichever rule matched each (engine.go's
        // FailureCount): one budget for the policy.
        writeln!(
            out,
            "Retry limit:     {limit}: a job is retried up to {limit} {} in all, {} attempts, whichever rules matched",
            if limit == 1 { "time" } else { "times" },
            u64::from(limit) + 1
        )?;
    }
    write_upstream_cap(out, scheduler, "policy")?;
    writeln!(
        out,
        "Default action:  {}",
        match policy.default_action() {
            Action::Fail => "Fail: a failure no rule matches fails the job",
            Action::Retry => "Retry: a failure no rule matches is retried, within the retry limit",
        }
    )?;
    writeln!(out, "Backoff:         none: today's Armada requeues a retry at once")?;
    if policy.rules.is_empty() {
        writeln!(out, "Rules:           <none>")?;
        return Ok(());
    }
    writeln!(out, "Rules (the first whose category matches a failure decides):")?;
    for (i, rule) in policy.rules.iter().enumerate() {
        writeln!(
            out,
            "  {}. {} when {}",
            i + 1,
            rule.action.as_str(),
            matcher_words(rule)
        )?;
        if rule.action == Action::Fail {
            writeln!(out, "     The job fails at once, without retry.")?;
            continue;
        }
        if limit == 0 {
            writeln!(out, "     Never retried: the retry limit is 0.")?;
        } else {
            writeln!(out, "     Retried:       within the policy's retry limit ({limit})")?;
        }
        let mutation = rule.mutate.as_ref();
        if mutation
            .and_then(|m| m.affinity.as_ref())
            .is_some_and(|a| a.avoid_same_node)
        {
            writeln!(
                out,
                "     Placement:     avoidSameNode (mutate.affinity): a retry avoids every node the job already ran on"
            )?;
        }
        if let Some(m) = mutation {
            for line in mutation_words(m) {
                writeln!(out, "     Mutation:      {line}")?;
            }
        }
    }
    Ok(())
}

/// A queue's own fields, the first lines of either dialect's description.
fn write_queue_head(out: &mut dyn Write, queue: &Queue) -> io::Result<()> {
    writeln!(out, "Name:            {}", queue.name)?;
    writeln!(out, "Priority factor: {}", queue.priority_factor)?;
    writeln!(
        out,
        "Cordoned:        {}",
        if queue.cordoned { "yes: no new jobs" } else { "no" }
    )
}

/// Describes `queue` with its policies in precedence order; `policies` holds those found
/// (`None` for a name that does not exist).
pub fn write_queue(
    out: &mut dyn Write,
    queue: &Queue,
    policies: &[(String, Option<RetryPolicy>)],
    scheduler: &Scheduler,
) -> io::Result<()> {
    let out = &mut Escaping::new(out);
    write_queue_head(out, queue)?;
    if policies.is_empty() {
        let default = match &scheduler.settings.default_policy_name {
            Some(d) => format!("the scheduler's defaultPolicyName `{d}` applies"),
            None => "failed jobs follow the legacy behaviour (docs/engines.md)".to_string(),
        };
        writeln!(out, "Retry policies:  <none>: {default}")?;
        return Ok(());
    }
    writeln!(
        out,
        "Retry policies (precedence order; their rules are tried in this order, first match wins):"
    )?;
    for (i, (name, p)) in policies.iter().enumerate() {
        match p {
            None => writeln!(out, "  {}. {name}: NOT FOUND (jobs of this queue cannot use it)", i + 1)?,
            Some(p) => {
                writeln!(
                    out,
                    "  {}. {name}: {} {}, default {}",
                    i + 1,
                    p.rules.len(),
                    if p.rules.len() == 1 { "rule" } else { "rules" },
                    p.default_action().as_str()
                )?;
                for (r, rule) in p.rules.iter().enumerate() {
                    let detail = match rule.action {
                        Action::Fail => "fail".to_string(),
                        Action::Retry => {
                            let (limit, from) = effective_limit(Some(rule), p, scheduler);
                            let (initial, max, multiplier, _) =
                                resolve_backoff(Some(&rule.backoff), &p.backoff, &scheduler.settings.default_backoff);
                            format!(
                                "retry up to {limit} ({from}); {}",
                                schedule(initial, max, multiplier, limit)
                            )
                        }
                    };
                    writeln!(out, "     {}. when {}: {detail}", r + 1, matcher_words(rule))?;
                }
            }
        }
    }
    writeln!(
        out,
        "Global cap:      {} retries per job ({})",
        scheduler.settings.global_max_retries,
        scheduler.global_source()
    )?;
    Ok(())
}

/// Today's Armada's global cap: the scheduler's, checked before any rule, not part of the
/// `what` (policy, queue) described.
fn write_upstream_cap(out: &mut dyn Write, scheduler: &Scheduler, what: &str) -> io::Result<()> {
    match scheduler.source {
        Some(file) => writeln!(
            out,
            "Global cap:      globalMaxRetries {} (from {file}), checked before any rule",
            scheduler.settings.global_max_retries
        ),
        None => writeln!(
            out,
            "Global cap:      the scheduler's globalMaxRetries, checked before any rule (not part of the {what}; pass \
             --scheduler-config FILE to see it)"
        ),
    }
}

/// A queue whose policies are today's Armada's (docs/cli.md "describe"): only its first
/// policy decides, with its one retry limit and no backoff; the others are listed as the
/// ones Armada does not evaluate.
pub fn write_queue_upstream(
    out: &mut dyn Write,
    queue: &Queue,
    policies: &[(String, Option<RetryPolicy>)],
    scheduler: &Scheduler,
) -> io::Result<()> {
    let out = &mut Escaping::new(out);
    write_queue_head(out, queue)?;
    writeln!(
        out,
        "Dialect:         armadaproject.io/v1beta1 (today's Armada: the queue's first policy alone decides)"
    )?;
    writeln!(out, "Retry policies (only the first is evaluated):")?;
    for (i, (name, p)) in policies.iter().enumerate() {
        match (i, p) {
            (_, None) => writeln!(out, "  {}. {name}: NOT FOUND (jobs of this queue cannot use it)", i + 1)?,
            (0, Some(p)) => {
                let limit = p.retry_limit.unwrap_or(0);
                writeln!(
                    out,
                    "  1. {name}: {} {}, default {}, retry limit {limit} (a job's retries in all, whichever rules matched)",
                    p.rules.len(),
                    if p.rules.len() == 1 { "rule" } else { "rules" },
                    p.default_action().as_str(),
                )?;
                for (r, rule) in p.rules.iter().enumerate() {
                    let detail = match (rule.action, limit) {
                        (Action::Fail, _) => "fail".to_string(),
                        (Action::Retry, 0) => "never retried: the retry limit is 0".to_string(),
                        (Action::Retry, _) => format!("retry within the policy's retry limit ({limit}), at once"),
                    };
                    writeln!(out, "     {}. when {}: {detail}", r + 1, matcher_words(rule))?;
                }
            }
            (_, Some(_)) => writeln!(
                out,
                "  {}. {name}: not evaluated (Armada evaluates only the first)",
                i + 1
            )?,
        }
    }
    write_upstream_cap(out, scheduler, "queue")
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn schedule_doubles_then_caps() {
        assert_eq!(
            schedule(GoDuration(30 * S), GoDuration(300 * S), 2.0, 10),
            "retry 1 after 30s, 2 after 1m, 3 after 2m, 4 after 4m, 5-10 after 5m (capped at maxDelay)"
        );
        assert_eq!(
            schedule(GoDuration(30 * S), GoDuration(300 * S), 2.0, 2),
            "retry 1 after 30s, 2 after 1m"
        );
        assert_eq!(
            schedule(GoDuration(0), GoDuration(300 * S), 2.0, 3),
            "none: every retry is scheduled at once (initialDelay 0s)"
        );
        assert_eq!(
            schedule(GoDuration(10 * S), GoDuration(300 * S), 2.0, 0),
            "none: the limit is 0, so this rule never retries"
        );
    }
}
