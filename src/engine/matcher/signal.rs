//! The signal of docs/engines.md: what a matched rule (or a default action) saw in the run, held as
//! indices into the run while deciding and put into words only when a record is written.
//!
//! Owns: [`Signal`] and its wording (`container main exit 137, category infra`), used by both
//! engines' records. Must not: allocate while deciding (a [`Signal`] is indices and flags;
//! [`Signal::write`] runs only for a record that carries the text).
//!
//! The wording stays here rather than in `output`: a record ([`crate::engine::Decision`])
//! carries its signal as text, and the replay, `--baseline`'s comparison and every output
//! format read that text (docs/engines.md's `signal` field).

use crate::model::failure_history::{Container, Run};
use crate::model::policy::Condition;

/// What matched, as indices into the run and flags: enough to write the signal of
/// docs/engines.md (`container main exit 137, category infra`) later, and nothing to allocate now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// No rule matched; a default action decided.
    NoRuleMatched,
    /// The matchers of the matched rule, in the order the signal names them.
    Rule {
        /// The condition that held, and for `OOMKilled` the container (index in the run).
        condition: Option<(Condition, Option<u32>)>,
        /// The container whose exit code matched.
        exit: Option<u32>,
        /// The container whose termination message matched.
        message: Option<u32>,
        /// The run's category matched (and its subcategory, when the rule lists some).
        category: Option<bool>,
    },
}

impl Signal {
    /// The signal in words, as docs/engines.md writes it, for `run` (the run that was decided).
    pub fn write(&self, run: &Run, out: &mut String) {
        let container = |i: u32| &run.containers[i as usize];
        let mut add = |parts: &[&str]| {
            if !out.is_empty() {
                out.push_str(", ");
            }
            for p in parts {
                out.push_str(p);
            }
        };
        match *self {
            Signal::NoRuleMatched => add(&["no rule matched"]),
            Signal::Rule {
                condition,
                exit,
                message,
                category,
            } => {
                match condition {
                    // An unnamed container (a Lookout import) reads `container exit 137`.
                    Some((Condition::OOMKilled, Some(i))) => {
                        let c = container(i);
                        add(&["container", sep(c), &c.name, " OOMKilled"]);
                    }
                    Some((hit, _)) => add(&["condition ", hit.as_str()]),
                    None => {}
                }
                if let Some(i) = exit {
                    let c = container(i);
                    add(&["container", sep(c), &c.name, " exit ", &c.exit_code.to_string()]);
                }
                if let Some(i) = message {
                    let c = container(i);
                    add(&["message of container", sep(c), &c.name, " matches"]);
                }
                let cat = run.category.as_deref().unwrap_or_default();
                match (category, run.subcategory.as_deref()) {
                    (Some(true), Some(sub)) => add(&["category ", cat, "/", sub]),
                    (Some(_), _) => add(&["category ", cat]),
                    (None, _) => {}
                }
            }
        }
    }

    /// [`Signal::write`] into a new string.
    pub fn to_text(&self, run: &Run) -> String {
        let mut s = String::with_capacity(48);
        self.write(run, &mut s);
        s
    }
}

/// The space before a container's name, none for an unnamed container.
fn sep(c: &Container) -> &'static str {
    if c.name.is_empty() {
        ""
    } else {
        " "
    }
}
