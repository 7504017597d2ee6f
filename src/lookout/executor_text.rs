//! What the executor's error text in Lookout says of its path, and the hint it may end with.
//! Pure: text in, text out.
//!
//! Owns: telling a stuck pod's text from the others ([`stuck_pod`], the two headers of
//! upstream's `createStuckPodMessage`), and [`Hints`]: the hints of the deployed categorizer,
//! which [`Hints::strip`] takes off the end of a text they were appended to. Must not: decide
//! which path a run took from its state and category (that is `mapping`'s), or guess a hint
//! it was not given.
//!
//! Upstream (207cc9e; the texts are vendored in `contract/executor/formats.txt`):
//! - `pod_issue_handler.go:789-794` `createStuckPodMessage`: `Unable to start pod.\n%s` (the
//!   lease is returned) or `Unable to start pod - encountered an unrecoverable problem.\n%s`
//!   (the run fails), `%s` the pod checks' messages.
//! - `categorizer/classifier.go:59-64` `AppendHint`: the message, then `\n\n` and the matched
//!   rule's hint when it has one; the default category has none. `\n\n` is not unique in a
//!   text (a failed pod's container lines each end with `\n`, a kubelet message may hold a
//!   blank line), so the only sure way to the message is the hint itself: the deployed
//!   config's hint of the rule the recorded category and subcategory name.

use std::collections::HashMap;

use crate::model::categorizer::ErrorCategories;

/// `createStuckPodMessage`'s header when the pod checks' action is Retry (the lease is
/// returned).
pub const STUCK_RETRY: &str = "Unable to start pod.\n";
/// Its header when the action is Fail (the run fails).
pub const STUCK_FAIL: &str = "Unable to start pod - encountered an unrecoverable problem.\n";

/// Whether `text` is a stuck pod's message (either header).
pub fn stuck_pod(text: &str) -> bool {
    text.starts_with(STUCK_RETRY) || text.starts_with(STUCK_FAIL)
}

/// The hints of a categorizer config by the (category, subcategory) its rules give, each list
/// longest first: what the executor appends to a run's message when that rule matched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    by_rule: HashMap<(String, String), Vec<String>>,
}

impl Hints {
    /// The hints of `config`'s rules, whether or not it is enabled (the file is the one the
    /// cluster runs; a disabled one gives no category, so no recorded run asks for a hint).
    pub fn of(config: &ErrorCategories) -> Hints {
        let mut by_rule: HashMap<(String, String), Vec<String>> = HashMap::new();
        for cat in &config.categories {
            for r in cat.rules.iter().filter(|r| !r.hint.is_empty()) {
                let hints = by_rule.entry((cat.name.clone(), r.subcategory.clone())).or_default();
                if !hints.contains(&r.hint) {
                    hints.push(r.hint.clone());
                }
            }
        }
        for hints in by_rule.values_mut() {
            // Longest first: a hint that ends another must not cut the longer one short.
            hints.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        }
        Hints { by_rule }
    }

    /// `text` without the `\n\n<hint>` the executor appended, when one of the hints of the
    /// rules that give `category`/`subcategory` ends it; `None` when none does (the text is
    /// then the message as it was, or its hint is not this config's).
    pub fn strip<'t>(&self, text: &'t str, category: &str, subcategory: Option<&str>) -> Option<&'t str> {
        let key = (category.to_string(), subcategory.unwrap_or("").to_string());
        self.by_rule.get(&key)?.iter().find_map(|hint| {
            text.strip_suffix(hint.as_str())
                .and_then(|rest| rest.strip_suffix("\n\n"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::categorizer::{Category, CategoryRule};

    fn config() -> ErrorCategories {
        let rule = |sub: &str, hint: &str| CategoryRule {
            subcategory: sub.into(),
            hint: hint.into(),
            on_pod_error: Some("x".into()),
            ..CategoryRule::default()
        };
        ErrorCategories {
            enabled: true,
            categories: vec![
                Category {
                    name: "image".into(),
                    action: String::new(),
                    rules: vec![
                        rule("", "Check the image"),
                        rule("", "Check the image name and tag"),
                        rule("", "Pull failed\n\nCheck the image"),
                        rule("pull", "Retry later"),
                    ],
                },
                Category {
                    name: "quiet".into(),
                    action: String::new(),
                    rules: vec![rule("", "")],
                },
            ],
            ..ErrorCategories::default()
        }
    }

    #[test]
    fn hints_come_off_the_end_of_the_text_their_rule_appended_them_to() {
        let h = Hints::of(&config());
        let rows: [(&str, &str, Option<&str>, Option<&str>); 9] = [
            (
                "Unable to start pod.\nx\n\nCheck the image",
                "image",
                None,
                Some("Unable to start pod.\nx"),
            ),
            // The longer of two hints that end alike.
            ("msg\n\nCheck the image name and tag", "image", None, Some("msg")),
            // A hint that ends another (after its own `\n\n`): the longer comes off whole, or
            // `Pull failed` would be left in the text.
            ("msg\n\nPull failed\n\nCheck the image", "image", None, Some("msg")),
            // A failed pod's lines end with `\n`: three newlines before the hint.
            (
                "Container main failed with exit code 1 because Error: boom\n\n\nCheck the image",
                "image",
                None,
                Some("Container main failed with exit code 1 because Error: boom\n"),
            ),
            // `AppendHint` of an empty message.
            ("\n\nRetry later", "image", Some("pull"), Some("")),
            // Another subcategory's hint, a hint without its blank line, no hint at all.
            ("msg\n\nRetry later", "image", None, None),
            ("msg\nCheck the image", "image", None, None),
            ("msg", "image", None, None),
            // A category whose rules have no hint, and one the config does not have.
            ("msg\n\n", "quiet", None, None),
        ];
        for (text, cat, sub, want) in rows {
            assert_eq!(h.strip(text, cat, sub), want, "{text:?} {cat}/{sub:?}");
        }
        assert_eq!(h.strip("msg\n\nCheck the image", "other", None), None);
    }

    #[test]
    fn stuck_pods_are_told_by_either_header() {
        assert!(stuck_pod("Unable to start pod.\nMatched check: \"check-0\"\nx"));
        assert!(stuck_pod("Unable to start pod - encountered an unrecoverable problem.\nContainer main has been in state Waiting for reason ErrImagePull (x - check \"check-0\") for more than timeout 15m0s"));
        assert!(!stuck_pod("Unable to start pod"));
        assert!(!stuck_pod("Pod was unexpectedly deleted"));
        assert!(!stuck_pod("Pod unexpectedly started up after delete was called.\n\nDelete was originally called to handle issue:\nUnable to start pod.\nx"));
    }
}
