//! The proposed rules as documents (docs/reference/suggest.md "The proposal"): a design
//! `RetryPolicy`; or, for today's Armada, the executor's `errorCategories` config and a
//! v1beta1 `RetryPolicy` whose rules match its categories; and with `--queue`, the Queue
//! with the proposal first.
//!
//! Owns: the documents' text (each rule under a comment with its evidence, a template's
//! pattern as `pattern` builds it) and the categories' names. Pure: text in, text out;
//! whether the documents validate is checked by the command, through `validate`'s own reader.
//!
//! One concern a file: `rules` (a comment line, the policy's settings, a rule's words and
//! one-line text, today's rules kept), `design` (the design policy), `categories` (a new
//! category's name and matcher), `upstream` (what today's Armada's documents are made of and
//! keep of the deployed config), `placement` (where each rule goes among the categories),
//! `written` (today's Armada's two documents written). This file declares and re-exports.

pub use crate::yaml::quoted;

mod categories;
mod design;
mod placement;
mod rules;
mod upstream;
mod written;

pub use categories::{category_rule_yaml, fnv1a64, matcher, short_category_name, Matcher, NewCategory};
pub use design::design_policy;
pub use rules::{comment, Documented, PolicySettings};
pub use upstream::{kept_head, shaped, without_suggests_head, ActionChange, Deployed, Merged, Upstream, NOT_COMPLETE};
pub use written::upstream_documents;

#[cfg(test)]
mod tests;
