//! A shard's learning as its partial holds it ([`ShardLearned`], [`PastSignature`]), and
//! the merge's fold of the shards back into one [`Learned`] (docs/past-one-machine.md).
//!
//! Owns: the partial's shape of the counts, and the checks of what no shard writes. Must
//! not: count a job (that is `unit`).

use std::collections::HashMap;

use crate::diag::quote;
use crate::model::policy::Action;
use crate::replay::estimate::{Tally, DEPTHS};

use crate::model::signature::Signature;

use super::learned::{Learned, Slot};
use super::signature::{CollidedCost, Current, FutileDays, Map, NodeStats, SignatureStats, MAX_SIGNATURES};
use super::unit::UnitLearned;

impl Learned {
    /// What a later shard holds past its first [`MAX_SIGNATURES`] signatures, for its
    /// partial's entries, none held after: all of it with `all` (the shard's end), else only
    /// once [`MAX_SIGNATURES`] are held (called between units: one unit's may take it a
    /// little past). A signature met again after it was taken is held anew; the merge adds
    /// the pieces up ([`Learned::merge_past`]). Nothing for one process or the first shard.
    pub fn take_past(&mut self, all: bool) -> Vec<PastSignature> {
        let Some(past) = &mut self.past else {
            return Vec::new();
        };
        if !all && past.held.len() < MAX_SIGNATURES {
            return Vec::new();
        }
        past.index.clear();
        past.held
            .drain(..)
            .map(|(mut s, on)| {
                // A run counted on a node for the signature is a failed run there.
                let mut nodes: Vec<(String, u64, u64)> = std::mem::take(&mut s.nodes)
                    .into_iter()
                    .map(|(n, k)| {
                        let on = on.get(n.as_str()).copied().unwrap_or(0);
                        (n, k, on)
                    })
                    .collect();
                nodes.sort_unstable();
                PastSignature(SignatureOut::of(s, nodes))
            })
            .collect()
    }

    /// What a shard learned, for its partial: its first [`MAX_SIGNATURES`] signatures in the
    /// order first met, `other` (the first shard's), its nodes by name (sorted: the same
    /// learning, the same bytes). A later shard's signatures past those are its entries,
    /// taken before ([`Learned::take_past`]).
    pub fn into_shard(self) -> ShardLearned {
        debug_assert!(self.past.as_ref().is_none_or(|p| p.held.is_empty()));
        let head = |mut s: SignatureStats| {
            let mut nodes: Vec<(String, u64)> = std::mem::take(&mut s.nodes).into_iter().collect();
            nodes.sort_unstable();
            SignatureOut::of(s, nodes)
        };
        let count = self.signatures.len();
        let mut nodes: Vec<NodeOut> = self
            .nodes
            .into_iter()
            .map(|(name, n)| {
                // `other` is the place after the list.
                let mut sigs: Vec<(usize, u64)> = n
                    .signatures
                    .into_iter()
                    .map(|(k, v)| (if k == usize::MAX { count } else { k }, v))
                    .collect();
                sigs.sort_unstable();
                NodeOut(name, n.runs, n.failed, sigs)
            })
            .collect();
        nodes.sort_by(|a, b| a.0.cmp(&b.0));
        ShardLearned {
            jobs: self.jobs,
            failed_runs: self.failed_runs,
            collisions_ran: self.collisions_ran,
            signatures: self.signatures.into_iter().map(head).collect(),
            other: self.other.map(head),
            nodes,
        }
    }

    /// Adds a shard's learning, as one unit of the source (shards in the source's order: the
    /// 10,000 kept are the first met in the whole source). `Err`: what no shard writes (its
    /// partial was edited), nothing added: its nodes name a signature it does not list, a
    /// signature's text is not its structure's, or it counts `other` without being the first
    /// shard with 10,000 signatures.
    pub fn merge_shard(&mut self, shard: ShardLearned) -> Result<(), String> {
        let count = shard.signatures.len();
        // `other`, when it has one, is named by the place after its list.
        let named = count + usize::from(shard.other.is_some());
        if let Some(slot) = shard
            .nodes
            .iter()
            .flat_map(|n| n.3.iter().map(|(slot, _)| *slot))
            .find(|&slot| slot >= named)
        {
            return Err(format!(
                "its totals' nodes name signature {slot}, and it lists {count} signatures"
            ));
        }
        // Runs past a shard's first 10,000 are past the merge's only when nothing came
        // before it: a later shard lists them as entries instead.
        if shard.other.is_some() && (count < MAX_SIGNATURES || !self.signatures.is_empty()) {
            return Err(
                "its totals count runs under `other`, which only the first shard with signatures does, past its first 10,000"
                    .into(),
            );
        }
        // The text is the signature's identity (the merge keys the counts by it, the proposal
        // writes its rule from the structure): a shard writes the text its structure prints.
        for (k, s) in shard.signatures.iter().enumerate() {
            let printed = s.signature.as_ref().map(Signature::text);
            if printed.as_deref() != Some(s.text.as_str()) {
                let structure = match printed {
                    Some(t) => format!("its structure prints {}", quote(&t)),
                    None => "it has no structure".to_string(),
                };
                return Err(format!(
                    "its totals' signature {k}: its text {} is not its structure's ({structure})",
                    quote(&s.text)
                ));
            }
        }
        let with_nodes = |s: SignatureOut| -> Result<SignatureStats, String> {
            let (mut stats, nodes) = s.into_stats()?;
            stats.nodes = nodes.into_iter().collect();
            Ok(stats)
        };
        let other = shard.other.map(with_nodes).transpose()?;
        let sigs = shard
            .signatures
            .into_iter()
            .map(with_nodes)
            .collect::<Result<Vec<_>, String>>()?;
        let nodes = shard
            .nodes
            .into_iter()
            .map(|NodeOut(name, runs, failed, sigs)| {
                let signatures = sigs
                    .into_iter()
                    .map(|(slot, k)| (if slot == count { usize::MAX } else { slot }, k))
                    .collect();
                let stats = NodeStats {
                    runs,
                    failed,
                    signatures,
                };
                (name, stats)
            })
            .collect();
        if let Some(o) = other {
            self.stats_at(Slot::Other).merge(o);
        }
        self.merge_unit(UnitLearned::of_counts(
            (shard.jobs, shard.failed_runs, shard.collisions_ran),
            sigs,
            nodes,
        ));
        Ok(())
    }

    /// Adds a later shard's counts of a signature past its own first 10,000 (an entry of its
    /// partial, [`Learned::take_past`]), once every shard's totals are added: to the
    /// signature kept, when an earlier shard met it among the first 10,000 of the source,
    /// else to `other`, where one process counts it. The merge's first 10,000 were complete
    /// before that shard's own 10,000 ended, so this one cannot be new among them. `Err`:
    /// what no shard writes, nothing added.
    pub fn merge_past(&mut self, past: PastSignature) -> Result<(), String> {
        let text = quote(&past.0.text);
        if self.signatures.len() < MAX_SIGNATURES {
            return Err(format!(
                "it counts signature {text} past its shard's first 10,000, and the shards list {} signatures in all",
                self.signatures.len()
            ));
        }
        if past.0.signature.is_some() {
            return Err(format!(
                "signature {text}, past its shard's first 10,000, has a structure (only those a shard lists in its totals do)"
            ));
        }
        let (mut stats, nodes) = past.0.into_stats()?;
        if let Some((node, ..)) = nodes.iter().find(|(_, all, on)| on > all) {
            return Err(format!(
                "signature {text} counts more failed runs on node {} that were not preempted than failed runs there",
                quote(node)
            ));
        }
        let slot = self.slot_of(&stats.text);
        for (node, all, on) in nodes {
            if on > 0 {
                let n = self.nodes.entry(node.clone()).or_default();
                *n.signatures.entry(slot).or_default() += on;
            }
            stats.nodes.insert(node, all);
        }
        let slot = if slot == usize::MAX {
            Slot::Other
        } else {
            Slot::Kept(slot)
        };
        self.stats_at(slot).merge(stats);
        Ok(())
    }
}

/// A shard's learning as its partial's totals hold it ([`Learned::into_shard`]): its first
/// 10,000 signatures, in the order first met, the first shard's `other`, and its nodes, whose
/// failed runs name signatures by their place in that list (`other` by the place after it).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShardLearned {
    pub jobs: u64,
    pub failed_runs: u64,
    #[serde(default)]
    pub collisions_ran: u64,
    signatures: Vec<SignatureOut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    other: Option<SignatureOut>,
    nodes: Vec<NodeOut>,
}

/// A later shard's counts of one signature past its first 10,000, as an entry of its
/// partial holds them ([`Learned::take_past`], [`Learned::merge_past`]): no structure (the
/// merge keeps the one an earlier shard listed, or counts it under `other`), and each node
/// as `[name, failed runs, of them not preempted]` (what the shard's nodes would have named
/// it by).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct PastSignature(SignatureOut<(String, u64, u64)>);

/// A signature's counts in a partial, its nodes as `N`. Maps keyed by the history's words
/// (categories, nodes) are lists of pairs: a partial's numbers are checked by their field's
/// name, and a category named `trials` must not read as one.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SignatureOut<N = (String, u64)> {
    text: String,
    /// `None` for [`OTHER`](super::OTHER) and a [`PastSignature`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signature: Option<Signature>,
    failed_runs: u64,
    jobs: u64,
    trials: Tally,
    by_depth: [Tally; DEPTHS],
    recorded: Vec<(String, u64)>,
    /// [`SignatureStats::current`] as `[rule, action, runs]`, sorted (`["", "", n]`: the
    /// runs the baseline never decided).
    current: Vec<(String, String, u64)>,
    seen: Vec<(String, u64)>,
    /// [`Hours`](super::signature::Hours) as `[failed, after, futile, again]`: 128-bit sums,
    /// under the names the partial's checks know as 128-bit.
    #[serde(rename = "gpu_milli")]
    gpu: [u128; 4],
    #[serde(rename = "cpu_milli")]
    cpu: [u128; 4],
    nodes: Vec<N>,
    same_node: Tally,
    other_node: Tally,
    cut: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    collided: u64,
    /// [`SignatureStats::collided_cost`] (its `gpu` and `cpu` 128-bit sums).
    #[serde(default, skip_serializing_if = "CollidedCost::is_zero")]
    collided_cost: CollidedCost,
    /// [`FutileDays`]: `[bucket, day, trials]`, and the untimed by bucket.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    futile_days: Vec<(u8, i64, u64)>,
    #[serde(default)]
    futile_untimed: [u64; DEPTHS],
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl<N> SignatureOut<N> {
    /// `s`'s counts, its nodes as `nodes`.
    fn of(s: SignatureStats, nodes: Vec<N>) -> SignatureOut<N> {
        SignatureOut {
            current: current_out(&s.current),
            text: s.text,
            signature: s.signature,
            failed_runs: s.failed_runs,
            jobs: s.jobs,
            trials: s.trials,
            by_depth: s.by_depth,
            recorded: s.recorded.into_iter().collect(),
            seen: s.seen.into_iter().collect(),
            gpu: s.gpu.into(),
            cpu: s.cpu.into(),
            nodes,
            same_node: s.same_node,
            other_node: s.other_node,
            cut: s.cut,
            collided: s.collided,
            collided_cost: s.collided_cost,
            futile_days: s.futile_days.out().0,
            futile_untimed: s.futile_days.out().1,
        }
    }

    /// The counts back, without nodes, and the nodes as written. `Err`: a baseline decision
    /// no shard writes.
    fn into_stats(self) -> Result<(SignatureStats, Vec<N>), String> {
        let stats = SignatureStats {
            current: current_in(self.current)?,
            text: self.text,
            signature: self.signature,
            failed_runs: self.failed_runs,
            jobs: self.jobs,
            trials: self.trials,
            by_depth: self.by_depth,
            recorded: self.recorded.into_iter().collect(),
            seen: self.seen.into_iter().collect(),
            gpu: self.gpu.into(),
            cpu: self.cpu.into(),
            nodes: Map::default(),
            same_node: self.same_node,
            other_node: self.other_node,
            cut: self.cut,
            collided: self.collided,
            collided_cost: self.collided_cost,
            in_incidents: 0,
            futile_days: FutileDays::back(self.futile_days, self.futile_untimed)?,
        };
        Ok((stats, self.nodes))
    }
}

fn current_out(current: &HashMap<Current, u64>) -> Vec<(String, String, u64)> {
    let mut v: Vec<(String, String, u64)> = current
        .iter()
        .map(|(c, n)| match c {
            Current::Decided { rule, action } => (rule.clone(), action.as_str().to_string(), *n),
            Current::Undecided => (String::new(), String::new(), *n),
        })
        .collect();
    v.sort();
    v
}

fn current_in(v: Vec<(String, String, u64)>) -> Result<HashMap<Current, u64>, String> {
    v.into_iter()
        .map(|(rule, action, n)| {
            if rule.is_empty() && action.is_empty() {
                return Ok((Current::Undecided, n));
            }
            let action = Action::parse(&action).ok_or_else(|| {
                format!("a signature's baseline decision has action `{action}`, expected `Retry` or `Fail`")
            })?;
            Ok((Current::Decided { rule, action }, n))
        })
        .collect()
}

/// A node in a partial: `[name, runs, failed, [[signature, failed runs], …]]`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct NodeOut(String, u64, u64, Vec<(usize, u64)>);

#[cfg(test)]
mod tests;
