//! Which signatures each container's exit codes belong to, over every failed run of the
//! history, every queue's (docs/reference/suggest.md "Categories"): an exit code that is one
//! signature's alone in its container splits that signature from others of its message by an
//! `onExitCodes` rule with `containerName`, which takes no other signature's runs.
//!
//! Owns: the index ([`ExitCodes`]), folded in the source's order as pass 1 reads every job,
//! and what it says of one signature ([`ExitCodes::alone`]). Pure: no I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::failure_history::{FailureHistory, Outcome};

use crate::model::signature::{text_into, Signature};

/// Exit codes of containers the index holds at most: past them it stops telling any code
/// apart (every answer is [`Alone::Uncounted`]), as a history of that many is none a split
/// should be guessed on.
pub const MAX_CODES: usize = 100_000;

/// The signatures one exit code of one container was met with: the first, and the first
/// other after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Owners {
    code: i64,
    first: String,
    other: Option<String>,
}

/// Every failed run's containers with a non-zero exit code (the ones upstream's
/// `onExitCodes` considers, init containers included, `containerName` scoping them by name),
/// by container name, with the signatures of the runs they failed in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExitCodes {
    containers: BTreeMap<String, Vec<Owners>>,
    codes: usize,
    /// Past [`MAX_CODES`]: nothing is told apart.
    full: bool,
    #[serde(skip)]
    text: String,
    #[serde(skip)]
    scratch: String,
}

/// What the index says of one signature's exit code in its container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Alone {
    /// No other signature's failed run has it in the container.
    Alone,
    /// Another signature's failed run has it too (the first met).
    SharedWith(String),
    /// The history holds more exit codes than the index counts.
    Uncounted,
}

/// Why no `onExitCodes` rule splits a signature from the others of its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsplit {
    /// It has no exit code (an OOM kill, a pod error, a condition).
    NoExitCode,
    /// Its container has no name, so no `containerName` scopes the rule.
    UnnamedContainer,
    /// Exit `code` of `container` is also another signature's (`with`; `None`: the history
    /// holds more exit codes than the index counts).
    Shared {
        container: String,
        code: i64,
        with: Option<String>,
    },
}

/// Why no `onExitCodes` rule with `containerName` splits `signature` (printed `text`) from
/// the other signatures of its message; `None`: one does (its exit code is its alone in its
/// container among every queue's failed runs).
pub fn unsplit(signature: &Signature, text: &str, exits: &ExitCodes) -> Option<Unsplit> {
    let Signature::Container {
        exit: Some(code), name, ..
    } = signature
    else {
        return Some(Unsplit::NoExitCode);
    };
    if name.is_empty() {
        return Some(Unsplit::UnnamedContainer);
    }
    let with = match exits.alone(name, *code, text) {
        Alone::Alone => return None,
        Alone::SharedWith(other) => Some(other),
        Alone::Uncounted => None,
    };
    Some(Unsplit::Shared {
        container: name.clone(),
        code: *code,
        with,
    })
}

impl ExitCodes {
    /// Adds the failed runs of `history` (any queue's).
    pub fn add_job(&mut self, history: &FailureHistory) {
        if self.full {
            return;
        }
        for run in history.runs.iter().filter(|r| r.outcome == Outcome::Failed) {
            let mut signed = false;
            for c in run.containers.iter().filter(|c| c.exit_code != 0) {
                let known = self
                    .containers
                    .get(c.name.as_str())
                    .and_then(|v| v.iter().find(|o| o.code == c.exit_code));
                // A code met with two signatures already needs no signature read again.
                if known.is_some_and(|o| o.other.is_some()) {
                    continue;
                }
                if !signed {
                    text_into(run, &mut self.text, &mut self.scratch);
                    signed = true;
                }
                let text = std::mem::take(&mut self.text);
                self.note(&c.name, c.exit_code, &text, None);
                self.text = text;
                if self.full {
                    return;
                }
            }
        }
    }

    /// `code` of `container` met with `first` (and `other` after it), in the source's order.
    fn note(&mut self, container: &str, code: i64, first: &str, other: Option<&str>) {
        if let Some(v) = self.containers.get_mut(container) {
            if let Some(o) = v.iter_mut().find(|o| o.code == code) {
                if o.other.is_none() {
                    o.other = if o.first != first {
                        Some(first.to_string())
                    } else {
                        other.map(str::to_string)
                    };
                }
                return;
            }
        }
        if self.codes >= MAX_CODES {
            self.full = true;
            self.containers.clear();
            return;
        }
        self.codes += 1;
        self.containers.entry(container.to_string()).or_default().push(Owners {
            code,
            first: first.to_string(),
            other: other.map(str::to_string),
        });
    }

    /// Adds the index of the jobs after these (a worker's unit, a later shard's).
    pub fn merge(&mut self, later: ExitCodes) {
        if later.full {
            self.full = true;
        }
        if self.full {
            self.containers.clear();
            return;
        }
        for (container, owners) in later.containers {
            for o in owners {
                self.note(&container, o.code, &o.first, o.other.as_deref());
                if self.full {
                    return;
                }
            }
        }
    }

    /// Whether exit `code` of `container` is `signature`'s alone among the failed runs.
    pub fn alone(&self, container: &str, code: i64, signature: &str) -> Alone {
        if self.full {
            return Alone::Uncounted;
        }
        let Some(o) = self
            .containers
            .get(container)
            .and_then(|v| v.iter().find(|o| o.code == code))
        else {
            // A signature's own code is always met with it; one not met is no run's.
            return Alone::Uncounted;
        };
        let other = match (&o.other, o.first == signature) {
            (None, true) => return Alone::Alone,
            (Some(other), true) => other,
            (_, false) => &o.first,
        };
        Alone::SharedWith(other.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::failure_history::{Container, Run};

    fn job(runs: Vec<Run>) -> FailureHistory {
        FailureHistory {
            runs,
            ..FailureHistory::default()
        }
    }

    fn failed(name: &str, code: i64, message: &str) -> Run {
        Run {
            outcome: Outcome::Failed,
            containers: vec![Container {
                name: name.into(),
                exit_code: code,
                message: Some(message.into()),
                ..Container::default()
            }],
            ..Run::default()
        }
    }

    #[test]
    fn an_exit_code_is_a_signatures_alone_until_another_signature_fails_with_it() {
        let mut whole = ExitCodes::default();
        whole.add_job(&job(vec![failed("main", 3, "boom"), failed("main", 4, "boom")]));
        let a3 = "exit:3@main \"boom\"";
        let a4 = "exit:4@main \"boom\"";
        assert_eq!(whole.alone("main", 4, a4), Alone::Alone);
        assert_eq!(whole.alone("side", 4, a4), Alone::Uncounted);
        // A later unit's run of another message with exit 4 in `main`: shared.
        let mut later = ExitCodes::default();
        later.add_job(&job(vec![failed("main", 4, "other")]));
        later.add_job(&job(vec![failed("main", 3, "boom")]));
        whole.merge(later);
        assert_eq!(whole.alone("main", 3, a3), Alone::Alone);
        assert_eq!(
            whole.alone("main", 4, a4),
            Alone::SharedWith("exit:4@main \"other\"".into())
        );
        assert_eq!(
            whole.alone("main", 4, "exit:4@main \"other\""),
            Alone::SharedWith(a4.into())
        );
        // Past the cap nothing is told apart.
        whole.full = true;
        assert_eq!(whole.alone("main", 3, a3), Alone::Uncounted);
    }
}
