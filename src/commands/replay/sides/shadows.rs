//! `watch`'s sides (docs/watch.md): today's side, `--baseline`'s files, and one shadow side
//! per `-f`, each with its own files, resolved with the same pieces as [`super::resolve`]
//! (files, dialect, each side's categorizer named, the borrow rule, compile, policy sets,
//! attach). One today's side for every candidate, so that each candidate's shadow counts are
//! against the same baseline: its engine is the one the documents of every side pick.
//!
//! Owns: [`resolve`] for `watch` and a candidate's label, [`candidate_name`]. Must not: read
//! the history or count.

use std::path::{Path, PathBuf};

use crate::app::Context;
use crate::cli::WatchArgs;
use crate::commands::replay::policy_set::{build, Side};
use crate::engine::EngineKind;
use crate::error::CliError;
use crate::input::SourceFile;
use crate::model::{Kind, Resource};
use crate::watch::job::Sides;

use super::categorizer::{attach, borrow_rule, compiled, Named};
use super::dialect::{self, Dialect};
use super::files::read_side;

/// A candidate's label: its file's (or directory's) base name, extension kept.
pub fn candidate_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The sides, each resolved as `simulate --baseline` resolves its own (docs/categorizer.md
/// "Replaying with a categorizer", docs/engines.md), with the same pieces
/// (`commands::replay::sides`): `--baseline`'s files are today's side; each `-f` one
/// candidate with its own files. The engine is the one the documents of every side pick
/// (design when they mix dialects), `--engine`/`--baseline-engine` over it: one today's side
/// for every candidate, so that each candidate's shadow counts are against the same
/// baseline; a side's categorizer is its flag or the document among its files, never both,
/// and neither side borrows the other's. Also the Queue documents' names, in order.
/// `None` after reporting invalid documents (exit 3).
pub fn resolve(ctx: &mut Context, args: &WatchArgs) -> anyhow::Result<Option<(Sides, Vec<String>)>> {
    let read = |ctx: &mut Context, paths: &[PathBuf], side| read_side(ctx, paths, args.recursive, side, "watched");
    let Some(today) = read(ctx, &args.baseline, Side::Baseline)? else {
        return Ok(None);
    };
    let mut candidates = Vec::new();
    for path in &args.candidates {
        let Some(files) = read(ctx, std::slice::from_ref(path), Side::Candidate)? else {
            return Ok(None);
        };
        candidates.push((candidate_name(path), files));
    }
    let mut dialects: Vec<Dialect> = candidates.iter().map(|(_, f)| Dialect::of(&f.files)).collect();
    dialects.push(Dialect::of(&today.files));
    let engine = args
        .engine
        .map(EngineKind::from)
        .unwrap_or_else(|| dialect::of_files(&dialects));
    let today_engine = args.baseline_engine.map_or(engine, EngineKind::from);
    let queues = queue_documents(today.files.iter().chain(candidates.iter().flat_map(|(_, f)| &f.files)));
    let today_named = Named::new(
        Side::Baseline,
        "--baseline-categorizer",
        args.baseline_categorizer.as_deref(),
        today.categorizer,
    )?;
    let mut named = Vec::new();
    for (name, files) in candidates {
        let n = Named::new(
            Side::Candidate,
            "--categorizer",
            args.categorizer.as_deref(),
            files.categorizer,
        )?;
        borrow_rule(true, false, &n, &today_named)?;
        named.push((name, files.files, n));
    }
    let retry_policies = args.scheduler.retry_policies.as_deref();
    let today_categorizer = today_named.read(ctx)?;
    let baseline = attach(
        build(&today.files, retry_policies, today_engine, Side::Baseline)?,
        compiled(today_categorizer.as_ref()),
    );
    let mut shadows = Vec::new();
    for (name, files, n) in named {
        // A queue the candidate's files do not name replays under today's documents, as in
        // `simulate --baseline`: otherwise its jobs would count as changed by a candidate
        // that says nothing of them, and the counters would part from simulate's.
        let sim = build(&files, retry_policies, engine, Side::Candidate)?
            .with_queues_of(&baseline)
            .map_err(CliError::invalid)?;
        shadows.push((name, attach(sim, compiled(n.read(ctx)?.as_ref()))));
    }
    Ok(Some((
        Sides {
            baseline,
            candidates: shadows,
        },
        queues,
    )))
}

/// The names of the Queue documents among `files`, each once, in order.
fn queue_documents<'a>(files: impl Iterator<Item = &'a SourceFile>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for doc in files.flat_map(|f| &f.documents) {
        if let (Some(Kind::Queue), Some(Resource::Queue(q))) = (doc.kind, &doc.resource) {
            if !out.contains(&q.name) {
                out.push(q.name.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_named_by_their_base_name() {
        assert_eq!(candidate_name(Path::new("/data/suggested.yaml")), "suggested.yaml");
        assert_eq!(candidate_name(Path::new("new/")), "new");
    }
}
