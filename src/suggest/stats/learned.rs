//! What a history taught ([`Learned`]), folded unit by unit in input order: the first
//! 10,000 signatures met, `other` past them, the nodes.
//!
//! Owns: where a unit's signature is counted (kept, `other`, or held by a later shard).
//! Must not: count a job (that is `unit`) or write a partial (that is `shard`).

use super::signature::{Map, NodeStats, SignatureStats, MAX_SIGNATURES, OTHER};
use super::unit::UnitLearned;

/// What a history taught, folded job by job in input order.
#[derive(Debug, Default)]
pub struct Learned {
    pub jobs: u64,
    pub failed_runs: u64,
    /// Retries the baseline's replay says collide (a Retry of a failure whose pod its
    /// categorizer keeps) that the record shows ran (docs/reference/suggest.md "A collided
    /// retry is no trial").
    pub collisions_ran: u64,
    /// In the order first met.
    pub signatures: Vec<SignatureStats>,
    index: Map<usize>,
    /// The runs of signatures past [`MAX_SIGNATURES`].
    pub other: Option<SignatureStats>,
    pub nodes: Map<NodeStats>,
    /// A later shard's learning (not the first in the source's order): the signatures it
    /// meets past its own first [`MAX_SIGNATURES`], held for its partial
    /// ([`Learned::take_past`]) instead of counted under `other`. None of them can be new to
    /// the merge's first 10,000 (the shard's own 10,000 come before it in the source), but
    /// one can be among them, met first by an earlier shard: only the merge knows which, so
    /// only the merge may count the rest under `other`.
    pub(super) past: Option<Past>,
}

/// A later shard's signatures past its own first [`MAX_SIGNATURES`], held between two
/// [`Learned::take_past`]: each with its failed runs by node (what [`NodeStats::signatures`]
/// counts of a signature the shard lists).
#[derive(Debug, Default)]
pub(super) struct Past {
    pub(super) held: Vec<(SignatureStats, Map<u64>)>,
    pub(super) index: Map<usize>,
}

impl Past {
    /// The place of `text` among the held, held anew if it is not.
    fn slot(&mut self, text: &str) -> usize {
        if let Some(&i) = self.index.get(text) {
            return i;
        }
        self.index.insert(text.to_string(), self.held.len());
        self.held
            .push((SignatureStats::new(text.to_string(), None), Map::default()));
        self.held.len() - 1
    }
}

/// Where a unit's signature is counted.
#[derive(Debug, Clone, Copy)]
pub(super) enum Slot {
    /// Among [`Learned::signatures`].
    Kept(usize),
    Other,
    /// Among a later shard's held signatures ([`Past`]).
    Past(usize),
}

impl Learned {
    /// A shard's learning. The first in the source's order (shard 0: a sharded suggest reads
    /// files, by byte range) keeps what one process keeps, `other` included: its own first
    /// 10,000 signatures are the merge's first 10,000, so what is past them is past the
    /// merge's. A later shard holds what is past its own first 10,000 for its partial (see
    /// the field `past`), as many at a time as it keeps: it holds about what one process
    /// holds, whatever the signatures.
    pub fn of_a_shard(first: bool) -> Learned {
        Learned {
            past: (!first).then(Past::default),
            ..Learned::default()
        }
    }

    /// The counts a slot names (`other` made when first needed).
    pub(super) fn stats_at(&mut self, slot: Slot) -> &mut SignatureStats {
        match (slot, &mut self.past) {
            (Slot::Kept(i), _) => &mut self.signatures[i],
            (Slot::Past(i), Some(past)) => &mut past.held[i].0,
            _ => self
                .other
                .get_or_insert_with(|| SignatureStats::new(OTHER.to_string(), None)),
        }
    }

    /// Adds a unit's counts (units in the source's order: the 10,000 kept are the first
    /// met). A signature past the cap counts under `other` (a later shard holds it: see the
    /// field `past`); a job with two such signatures counts in `other`'s `jobs` once per
    /// signature.
    pub fn merge_unit(&mut self, unit: UnitLearned) {
        self.jobs += unit.jobs;
        self.failed_runs += unit.failed_runs;
        self.collisions_ran += unit.collisions_ran;
        let mut global = Vec::with_capacity(unit.sigs.len());
        for stats in unit.sigs {
            let slot = match self.index.get(stats.text.as_str()) {
                Some(&i) => Slot::Kept(i),
                None if self.signatures.len() < MAX_SIGNATURES => {
                    self.index.insert(stats.text.clone(), self.signatures.len());
                    self.signatures
                        .push(SignatureStats::new(stats.text.clone(), stats.signature.clone()));
                    Slot::Kept(self.signatures.len() - 1)
                }
                None => match &mut self.past {
                    Some(past) => Slot::Past(past.slot(&stats.text)),
                    None => Slot::Other,
                },
            };
            global.push(slot);
            self.stats_at(slot).merge(stats);
        }
        let Learned { nodes, past, .. } = self;
        for (name, n) in unit.nodes {
            // A unit's slot `usize::MAX` (a shard's `other`, [`Learned::merge_shard`]) is
            // `other` here too.
            let slot = |local: usize| global.get(local).copied().unwrap_or(Slot::Other);
            if let Some(past) = past.as_mut() {
                for (&local, &k) in &n.signatures {
                    if let Slot::Past(i) = slot(local) {
                        *past.held[i].1.entry(name.clone()).or_default() += k;
                    }
                }
            }
            let node = nodes.entry(name).or_default();
            node.runs += n.runs;
            node.failed += n.failed;
            for (local, k) in n.signatures {
                let at = match slot(local) {
                    Slot::Kept(i) => i,
                    Slot::Other => usize::MAX,
                    Slot::Past(_) => continue,
                };
                *node.signatures.entry(at).or_default() += k;
            }
        }
    }

    /// The slot of a signature's text: its index in [`Learned::signatures`], `usize::MAX`
    /// for `other`.
    pub fn slot_of(&self, text: &str) -> usize {
        self.index.get(text).copied().unwrap_or(usize::MAX)
    }

    /// Every signature's counts, `other` last, sorted as the docs say: hours (GPU, then
    /// CPU, each run once) descending, then failed runs descending, then signature.
    pub fn sorted(&self) -> Vec<&SignatureStats> {
        let mut v: Vec<&SignatureStats> = self.signatures.iter().chain(self.other.as_ref()).collect();
        v.sort_by(|a, b| {
            (b.gpu.once().cmp(&a.gpu.once()))
                .then(b.cpu.once().cmp(&a.cpu.once()))
                .then(b.failed_runs.cmp(&a.failed_runs))
                .then(a.text.as_bytes().cmp(b.text.as_bytes()))
        });
        v
    }

    /// The signature text of a slot of [`NodeStats::signatures`].
    pub fn text_of(&self, slot: usize) -> &str {
        self.signatures.get(slot).map_or(OTHER, |s| s.text.as_str())
    }
}
