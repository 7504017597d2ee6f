//! A file source's files as they are at one moment, to tell whether they changed between two
//! reads (`suggest` reads its history twice).
//!
//! Owns: [`Stamps`] and [`Altered`]. Must not: read a file's content, or decide what a change
//! means for a command.

use std::path::PathBuf;

/// A file source's files as they are at one moment: each one's size and modification time.
/// Two taken at two moments tell whether the files changed in between (`suggest` reads its
/// history twice, docs/reference/suggest.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamps(Vec<(PathBuf, Option<(u64, std::time::SystemTime)>)>);

/// How a file of a source changed between two [`Stamps`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Altered {
    Added,
    Removed,
    /// Its size or modification time.
    Written,
}

impl Stamps {
    pub(super) fn of<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> Stamps {
        Stamps(
            paths
                .map(|p| {
                    let stamp = std::fs::metadata(p)
                        .ok()
                        .map(|m| (m.len(), m.modified().unwrap_or(std::time::UNIX_EPOCH)));
                    (p.clone(), stamp)
                })
                .collect(),
        )
    }

    /// The first file (in the source's order) that is not as it was in `self`, and how.
    pub fn changed(&self, now: &Stamps) -> Option<(PathBuf, Altered)> {
        let before: std::collections::HashMap<&PathBuf, _> = self.0.iter().map(|(p, s)| (p, s)).collect();
        let after: std::collections::HashMap<&PathBuf, _> = now.0.iter().map(|(p, s)| (p, s)).collect();
        for (p, s) in &self.0 {
            match after.get(p) {
                None => return Some((p.clone(), Altered::Removed)),
                Some(now) if *now != s => return Some((p.clone(), Altered::Written)),
                Some(_) => {}
            }
        }
        now.0
            .iter()
            .find(|(p, _)| !before.contains_key(p))
            .map(|(p, _)| (p.clone(), Altered::Added))
    }
}
