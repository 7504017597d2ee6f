//! The kit the replay verbs (`simulate`, `tune`, `suggest`, and `merge` ending them) share:
//! each side of a comparison resolved once ([`sides`]: documents, categorizer, engine), the
//! history source opened, driven and finished ([`source`]), the policy sets ([`policy_set`]),
//! stdout held until a command knows it succeeds ([`held`]), Lookout's flags and the words of
//! an empty input ([`lookout`]), the checks and messages several verbs make alike
//! ([`checks`]), and what each verb's end of a merge shares ([`merged`]).
//!
//! Owns: what is the same for every replay verb, so that they cannot disagree about it.
//! Must not: import a verb, replay, count or render (that is `replay` and `output`).

pub mod checks;
pub mod held;
pub mod lookout;
pub mod merged;
pub mod policy_set;
pub mod sides;
pub mod source;
pub mod spool;
