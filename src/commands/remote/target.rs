//! Resource arguments as kubectl takes them: `TYPE/NAME` (`retrypolicy/infra`, `queue/ml`,
//! what `get -o name` prints), and names after a noun (`get rp infra`), where a `TYPE/`
//! prefix of the same type is accepted too.
//!
//! Must not: talk to the server. Names are checked (RFC 1123) before they reach a URL.

use crate::commands::remote::check_names;
use crate::error::CliError;
use crate::model::Kind;

/// The spellings of each noun (docs/cli.md).
pub const POLICY_NOUNS: [&str; 5] = ["retrypolicy", "retry-policy", "retrypolicies", "retry-policies", "rp"];
pub const QUEUE_NOUNS: [&str; 3] = ["queue", "queues", "q"];

/// The kinds `schema` and `explain` know, for the usage error of either without one.
pub const KINDS: &str = "`retrypolicy` (`rp`), `queue` (`q`), `failurehistory` or `errorcategories`";

pub fn noun_kind(noun: &str) -> Option<Kind> {
    let lower = noun.to_ascii_lowercase();
    if POLICY_NOUNS.contains(&lower.as_str()) {
        Some(Kind::RetryPolicy)
    } else if QUEUE_NOUNS.contains(&lower.as_str()) {
        Some(Kind::Queue)
    } else {
        None
    }
}

pub fn noun_of(kind: Kind) -> &'static str {
    match kind {
        Kind::Queue => "queue",
        _ => "retry policy",
    }
}

/// Names wanted per kind, in the order each kind first appears.
#[derive(Debug, Default, PartialEq)]
pub struct Targets {
    pub groups: Vec<(Kind, Vec<String>)>,
}

impl Targets {
    fn push(&mut self, kind: Kind, name: String) {
        match self.groups.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, names)) => {
                if !names.contains(&name) {
                    names.push(name)
                }
            }
            None => self.groups.push((kind, vec![name])),
        }
    }

    pub fn len(&self) -> usize {
        self.groups.iter().map(|(_, n)| n.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `TYPE/NAME` arguments.
    pub fn from_typed(args: &[String]) -> Result<Targets, CliError> {
        let mut out = Targets::default();
        for a in args {
            let Some((noun, name)) = a.split_once('/') else {
                return Err(CliError::usage(format!(
                    "invalid argument `{a}`: expected `TYPE/NAME` (`retrypolicy/{a}`, `queue/{a}`) or a type \
                     followed by names (`retrypolicy {a}`)"
                )));
            };
            let kind = noun_kind(noun).ok_or_else(|| {
                CliError::usage(format!(
                    "unknown resource type `{noun}` in `{a}`: expected `retrypolicy` (`rp`) or `queue` (`q`)"
                ))
            })?;
            check_names(noun_of(kind), &[name.to_string()])?;
            out.push(kind, name.to_string());
        }
        Ok(out)
    }

    /// Names after a noun; `TYPE/NAME` of the same type is accepted, another type is not.
    pub fn from_names(kind: Kind, names: &[String]) -> Result<Targets, CliError> {
        let mut out = Targets {
            groups: vec![(kind, Vec::new())],
        };
        for n in names {
            let name = match n.split_once('/') {
                Some((noun, name)) if noun_kind(noun) == Some(kind) => name,
                Some((noun, _)) => {
                    return Err(CliError::usage(format!(
                        "`{n}` is not a {}: pass `TYPE/NAME` arguments without a type before them \
                         (`retryctl get {n}`), or names of one type after it",
                        if noun_kind(noun).is_some() {
                            noun_of(kind).to_string()
                        } else {
                            format!("{} (unknown type `{noun}`)", noun_of(kind))
                        }
                    )));
                }
                None => n.as_str(),
            };
            check_names(noun_of(kind), &[name.to_string()])?;
            out.push(kind, name.to_string());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn typed_arguments_group_by_kind_in_first_seen_order() {
        let t = Targets::from_typed(&s(&["queue/ml", "retrypolicy/infra", "rp/gpu", "q/ml"])).unwrap();
        assert_eq!(
            t.groups,
            vec![(Kind::Queue, s(&["ml"])), (Kind::RetryPolicy, s(&["infra", "gpu"])),]
        );
    }

    #[test]
    fn bad_typed_arguments_are_usage_errors_that_say_what_was_expected() {
        let e = Targets::from_typed(&s(&["infra"])).unwrap_err();
        assert_eq!(
            e.message,
            "invalid argument `infra`: expected `TYPE/NAME` (`retrypolicy/infra`, `queue/infra`) or a type followed by names (`retrypolicy infra`)"
        );
        let e = Targets::from_typed(&s(&["widget/x"])).unwrap_err();
        assert_eq!(
            e.message,
            "unknown resource type `widget` in `widget/x`: expected `retrypolicy` (`rp`) or `queue` (`q`)"
        );
        assert!(Targets::from_typed(&s(&["rp/Bad_Name"])).is_err());
    }

    #[test]
    fn names_after_a_noun_accept_the_same_type_prefix_only() {
        let t = Targets::from_names(Kind::RetryPolicy, &s(&["retrypolicy/infra", "gpu"])).unwrap();
        assert_eq!(t.groups, vec![(Kind::RetryPolicy, s(&["infra", "gpu"]))]);
        let e = Targets::from_names(Kind::RetryPolicy, &s(&["queue/ml"])).unwrap_err();
        assert!(
            e.message.starts_with("`queue/ml` is not a retry policy"),
            "{}",
            e.message
        );
    }
}
