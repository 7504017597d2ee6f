//! The job ids a shard of a directory replayed, by file, and `merge`'s check that no job of
//! them is given by two files (docs/simulate.md: a directory's files hold different jobs).
//! One process refuses the second file's copy as it reads it (`source`); a shard reads its
//! own byte range only, so two copies in two shards' ranges meet only when the shards' ids
//! do, in the merge, which refuses them: each shard replayed its copy, and a merge that
//! added them up would count the job twice.
//!
//! Owns: [`Tap`] (a source that notes the ids it hands over), [`FileIds`] (as a partial
//! holds them) and [`Twice`] (the ids met so far, in the source's order, and the jobs two
//! files give). Must not: read a history itself, decide what a shard replays, or word
//! anything but the problem it finds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::shard::{line_job_id, Shard};
use super::source::{Body, Counted, Entry, HistorySource, Progress};

/// One file's job ids as a shard replayed them, in order: `[FILE, [ID, …]]` in a partial.
pub type FileIds = (String, Vec<String>);

/// What a [`Tap`] noted, read once the replay has ended.
#[derive(Debug, Clone, Default)]
pub struct Noted(Option<Arc<Mutex<Vec<FileIds>>>>);

impl Noted {
    /// The ids by file, in the order read; `None` when the source is not a directory of
    /// more than one file (no two files to give a job).
    pub fn take(&self) -> Option<Vec<FileIds>> {
        self.0
            .as_ref()
            .map(|ids| std::mem::take(&mut *ids.lock().unwrap_or_else(|e| e.into_inner())))
    }
}

/// A source that notes the job id of every entry it hands over, by file: the ids one
/// process's reader compares across a directory's files (a JSON line's `job.id` as
/// [`line_job_id`] reads it, whether or not the line decodes; a YAML document's non-empty
/// `job.id`). A line the reader refused as another file's job is not in its block, and is
/// not noted.
pub struct Tap<S> {
    source: S,
    ids: Option<Arc<Mutex<Vec<FileIds>>>>,
}

impl<S: HistorySource> Tap<S> {
    /// Notes ids only when `source` is a directory of more than one file (its progress
    /// counts files, more than one): one file cannot give a job twice as two files do.
    pub fn new(source: S) -> (Tap<S>, Noted) {
        let Progress { total, counted, .. } = source.progress();
        let ids = (counted == Counted::Files && total > 1).then(Arc::default);
        let noted = Noted(ids.clone());
        (Tap { source, ids }, noted)
    }
}

/// `entry`'s ids appended to `ids`, under its file.
fn note(ids: &mut Vec<FileIds>, entry: &Entry) {
    let file = &*entry.origin.file;
    let list = |ids: &mut Vec<FileIds>| -> usize {
        if ids.last().is_none_or(|(f, _)| f != file) {
            ids.push((file.to_string(), Vec::new()));
        }
        ids.len() - 1
    };
    match &entry.body {
        Body::Lines(block) => {
            let at = list(ids);
            for (_, _, line) in block.lines() {
                if let Some(id) = line_job_id(line) {
                    ids[at].1.push(String::from_utf8_lossy(&id).into_owned());
                }
            }
        }
        Body::History(h) if !h.job.id.is_empty() => {
            let at = list(ids);
            ids[at].1.push(h.job.id.clone());
        }
        _ => {}
    }
}

impl<S: HistorySource> Iterator for Tap<S> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        let entry = self.source.next()?;
        if let Some(ids) = &self.ids {
            note(&mut ids.lock().unwrap_or_else(|e| e.into_inner()), &entry);
        }
        Some(entry)
    }
}

impl<S: HistorySource> HistorySource for Tap<S> {
    fn progress(&self) -> Progress {
        self.source.progress()
    }

    fn bulk(&self) -> bool {
        self.source.bulk()
    }

    fn sift(&mut self, shard: Shard) -> bool {
        self.source.sift(shard)
    }

    fn one_queue(&self) -> Option<crate::replay::source::OneQueue> {
        self.source.one_queue()
    }
}

/// Jobs of two files found by [`Twice`] listed one by one; past them, counted.
const LISTED: usize = 10;

/// The job ids of every shard, added in the source's order (shard after shard, each one's
/// files in order), and the jobs that two files give: the first file that gave each, as one
/// process's reader keeps it. Ids are kept as 128-bit hashes (two alike by chance are not to
/// be expected before 2^64 of them), each with its file and shard; an id met again in the
/// same file is not looked at.
#[derive(Debug, Default)]
pub struct Twice {
    /// An id's first file (its place in `files`) and the shard that read it there.
    seen: HashMap<u128, (u32, u32)>,
    files: Vec<String>,
    /// The problems found, the first [`LISTED`].
    found: Vec<String>,
    more: u64,
}

impl Twice {
    /// `shard`'s ids (the shards in order).
    pub fn add(&mut self, shard: Shard, ids: Vec<FileIds>) {
        for (file, list) in ids {
            if self.files.last() != Some(&file) {
                self.files.push(file);
            }
            let here = ((self.files.len() - 1) as u32, shard.index as u32);
            for id in list {
                let (file, by) = *self
                    .seen
                    .entry(xxhash_rust::xxh3::xxh3_128(id.as_bytes()))
                    .or_insert(here);
                if file != here.0 {
                    let first = Shard {
                        index: u64::from(by),
                        count: shard.count,
                    };
                    self.found(&id, file as usize, first, shard);
                }
            }
        }
    }

    fn found(&mut self, id: &str, first: usize, first_shard: Shard, shard: Shard) {
        if self.found.len() == LISTED {
            self.more += 1;
            return;
        }
        let file = self.files.last().map_or("", String::as_str);
        self.found.push(format!(
            "job {} of `{file}` (shard {shard}) is also in `{}` (shard {first_shard}): a directory's files hold different jobs, and each shard replayed its copy, which the merge would count twice",
            crate::diag::quote(id),
            self.files[first]
        ));
    }

    /// The problems: each of the first jobs two files give, then how many more there are.
    pub fn problems(self) -> Vec<String> {
        let mut problems = self.found;
        if self.more > 0 {
            problems.push(format!(
                "{} more {} given by two files of the directory",
                self.more,
                if self.more == 1 { "job is" } else { "jobs are" }
            ));
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::scheduler::SchedulerConfig;
    use crate::replay::source::{Files, Overrides};

    fn ids(list: &[(&str, &[&str])]) -> Vec<FileIds> {
        list.iter()
            .map(|(f, ids)| (f.to_string(), ids.iter().map(|i| i.to_string()).collect()))
            .collect()
    }

    fn shard(index: u64) -> Shard {
        Shard { index, count: 2 }
    }

    /// The lines' ids whether or not they decode, a YAML document's, none for a line without
    /// one; one file alone notes nothing.
    #[test]
    fn a_tap_notes_the_ids_of_a_directorys_files_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.jsonl"),
            "{\"job\":{\"id\":\"j1\"},\"runs\":[{}]}\n\n{\"runs\":[{}]}\n{\"job\":{\"id\":\"j2\"},\"runs\":\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b.yaml"),
            "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j3, queue: q}\nruns: [{outcome: succeeded}]\n---\napiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j4, queue: q}\nruns: [{outcome: succeeded}]\n",
        )
        .unwrap();
        let open = |p: &std::path::Path| Files::open(p, SchedulerConfig::default(), Overrides::default()).unwrap();
        let (tap, noted) = Tap::new(open(dir.path()));
        assert_eq!(tap.count(), 3);
        let name = |f: &str| dir.path().join(f).display().to_string();
        assert_eq!(
            noted.take(),
            Some(vec![
                (name("a.jsonl"), vec!["j1".to_string(), "j2".to_string()]),
                (name("b.yaml"), vec!["j3".to_string(), "j4".to_string()]),
            ])
        );
        let (tap, noted) = Tap::new(open(&dir.path().join("a.jsonl")));
        assert_eq!(tap.count(), 1);
        assert_eq!(noted.take(), None);
    }

    /// A job met in a later file, in this shard or another, names both files and shards;
    /// one met again in its own file (split between two shards) does not.
    #[test]
    fn twice_finds_a_job_in_two_files_across_shards() {
        let mut t = Twice::default();
        t.add(shard(0), ids(&[("a", &["j1", "j2"]), ("b", &["j3"])]));
        t.add(shard(1), ids(&[("b", &["j3", "j1"]), ("c", &["j2"])]));
        assert_eq!(
            t.problems(),
            [
                "job `j1` of `b` (shard 1/2) is also in `a` (shard 0/2): a directory's files hold different jobs, and each shard replayed its copy, which the merge would count twice",
                "job `j2` of `c` (shard 1/2) is also in `a` (shard 0/2): a directory's files hold different jobs, and each shard replayed its copy, which the merge would count twice",
            ]
        );
        let mut t = Twice::default();
        t.add(shard(0), ids(&[("a", &["j1"])]));
        t.add(shard(1), ids(&[("a", &["j1"]), ("b", &["j2"])]));
        assert!(t.problems().is_empty());
    }

    /// Past the first ten, the jobs of two files are counted.
    #[test]
    fn twice_lists_the_first_ten() {
        let all: Vec<String> = (0..13).map(|i| format!("j{i}")).collect();
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let mut t = Twice::default();
        t.add(shard(0), ids(&[("a", &refs)]));
        t.add(shard(1), ids(&[("b", &refs)]));
        let problems = t.problems();
        assert_eq!(problems.len(), 11);
        assert!(problems[9].starts_with("job `j9` of `b`"), "{}", problems[9]);
        assert_eq!(problems[10], "3 more jobs are given by two files of the directory");
    }
}
