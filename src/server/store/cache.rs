//! The read cache: every stored body with its version, in memory, which every read of the
//! store answers from (docs/cli.md's GETs and gRPC's Get/List calls never touch SQLite).
//!
//! Owns: the two maps (policies and queues, ordered by name), the reads over them, and the
//! changes a committed write makes to them ([`CacheUpdate`]). Must not: change a map before
//! the write it reflects has committed; only the writer thread applies updates, after the
//! commit (`writer.rs`), so a read never sees an uncommitted write.
//!
//! Why a cache: rusqlite is blocking and a read through `spawn_blocking` costs a thread hop
//! and a statement per request; the whole data set of a retry-policy server is small (a few
//! thousand documents at most), so every read is answered from memory and SQLite only sees
//! writes. A read clones `Bytes` (a reference count), never a body.

use std::collections::BTreeMap;

use axum::body::Bytes;

use super::types::Versioned;

#[derive(Default)]
pub(super) struct Cache {
    pub(super) policies: BTreeMap<String, Versioned>,
    pub(super) queues: BTreeMap<String, Versioned>,
}

/// One of the cache's two maps, for the writes that change either the same way.
pub(super) type CacheMap = fn(&mut Cache) -> &mut BTreeMap<String, Versioned>;

/// What a write changes in the cache, applied by the writer once its batch has committed.
pub(super) type CacheUpdate = Box<dyn FnOnce(&mut Cache) + Send>;

impl Cache {
    pub(super) fn policies_mut(&mut self) -> &mut BTreeMap<String, Versioned> {
        &mut self.policies
    }

    pub(super) fn queues_mut(&mut self) -> &mut BTreeMap<String, Versioned> {
        &mut self.queues
    }

    pub(super) fn policy(&self, name: &str) -> Option<Versioned> {
        self.policies.get(name).cloned()
    }

    /// Every policy body, ordered by name.
    pub(super) fn policy_bodies(&self) -> Vec<Bytes> {
        self.policies.values().map(|v| v.body.clone()).collect()
    }

    pub(super) fn queue(&self, name: &str) -> Option<Versioned> {
        self.queues.get(name).cloned()
    }

    /// The first `limit` queue bodies ordered by name (all when `None`).
    pub(super) fn queue_bodies(&self, limit: Option<usize>) -> Vec<Bytes> {
        self.queues
            .values()
            .take(limit.unwrap_or(usize::MAX))
            .map(|v| v.body.clone())
            .collect()
    }

    /// Every policy with its name, ordered by name.
    pub(super) fn policy_entries(&self) -> Vec<(String, Versioned)> {
        self.policies.iter().map(|(n, v)| (n.clone(), v.clone())).collect()
    }

    /// The first `limit` queues with their names, ordered by name (all when `None`).
    pub(super) fn queue_entries(&self, limit: Option<usize>) -> Vec<(String, Versioned)> {
        self.queues
            .iter()
            .take(limit.unwrap_or(usize::MAX))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect()
    }
}

/// A write's answer that stores `body` as `version` of `name` in `map` once the batch has
/// committed.
pub(super) fn cache_put(map: CacheMap, name: String, body: Bytes, version: u64) -> (u64, CacheUpdate) {
    let update = move |cache: &mut Cache| {
        map(cache).insert(name, Versioned { body, version });
    };
    (version, Box::new(update))
}

/// A delete's answer (0) that drops `name` from `map` once the batch has committed.
pub(super) fn cache_remove(map: CacheMap, name: String) -> (u64, CacheUpdate) {
    let update = move |cache: &mut Cache| {
        map(cache).remove(&name);
    };
    (0, Box::new(update))
}
