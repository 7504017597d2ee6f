//! What one search of a list's shared regexes found ([`Hits`]: per policy slot, the rules
//! whose regex matched, and the first messages with a match) and the bounds of that answer
//! ([`SLOTS`] policies, [`KEPT_MESSAGES`] messages).
//!
//! Owns: that answer's shape. Must not: search (that is `list_dfa`) or read it (each policy's
//! `message_regexes`, the list's `policy_list`); both sides import it, so it imports neither.

/// Policies a `SharedRegexes` covers, each with one word of rule bits in a search's answer:
/// the first [`SLOTS`] policies of a list that have regex message rules (a later one keeps its
/// own path).
pub(crate) const SLOTS: usize = 4;

/// Messages whose hits a search keeps (as `message_regexes::MessageHits` does per policy): past
/// these, a rule that matched finds its message with its own regex.
pub(crate) const KEPT_MESSAGES: usize = 4;

/// What one search found, per policy slot (its rule bits): the rules whose regex matches a
/// non-init message (`plain`) or any searched message (`any`), and the first
/// [`KEPT_MESSAGES`] messages with a match, in container order: (container, init container,
/// rules matching it); `len` counts them all.
pub(crate) struct Hits {
    pub(crate) plain: [u64; SLOTS],
    pub(crate) any: [u64; SLOTS],
    pub(crate) len: usize,
    pub(crate) at: [(u32, bool, [u64; SLOTS]); KEPT_MESSAGES],
}

impl Hits {
    pub(crate) const NONE: Hits = Hits {
        plain: [0; SLOTS],
        any: [0; SLOTS],
        len: 0,
        at: [(0, false, [0; SLOTS]); KEPT_MESSAGES],
    };
}
