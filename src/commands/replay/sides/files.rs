//! A side's files (`-f`, `--baseline`, `tune`'s template): every document valid, and the
//! categorizer document among them taken out as that side's own (docs/categorizer.md).
//!
//! Owns: [`SideFiles`], [`read_side`]. Must not: build policy sets or read a categorizer.

use std::path::PathBuf;

use crate::app::Context;
use crate::input::{self, SourceFile};
use crate::model::{Document, Kind};

use super::categorizer::two_categorizers;
use crate::commands::replay::policy_set::{report_invalid, Side};

/// One side's files: its policies and queues, and the categorizer document among them, which
/// is that side's: its file's name and the document.
pub struct SideFiles {
    pub files: Vec<SourceFile>,
    pub categorizer: Option<(String, Document)>,
}

impl SideFiles {
    /// No files: a side with no policy (`simulate` without `-f`).
    pub fn none() -> SideFiles {
        SideFiles {
            files: Vec::new(),
            categorizer: None,
        }
    }
}

/// `paths` read as `side`'s files: every document valid (else validate's report on stderr,
/// `nothing was DONE`, and `None`: exit 3), the categorizer document among them taken out as
/// the side's own. Two categorizer documents are a usage error naming both.
pub fn read_side(
    ctx: &mut Context,
    paths: &[PathBuf],
    recursive: bool,
    side: Side,
    done: &str,
) -> anyhow::Result<Option<SideFiles>> {
    let mut files = input::read_sources(
        paths,
        recursive,
        Some(&[Kind::RetryPolicy, Kind::Queue, Kind::ErrorCategories]),
    );
    if !report_invalid(ctx, &files, done)? {
        return Ok(None);
    }
    let mut found: Vec<(String, Document)> = Vec::new();
    for f in &mut files {
        let (categorizers, rest): (Vec<Document>, Vec<Document>) = std::mem::take(&mut f.documents)
            .into_iter()
            .partition(|d| d.kind == Some(Kind::ErrorCategories));
        f.documents = rest;
        found.extend(categorizers.into_iter().map(|d| (f.name.clone(), d)));
    }
    if let [(a, da), (b, db), ..] = &found[..] {
        let one = |file: &str, d: &Document| format!("`{file}` document {}", d.index + 1);
        return Err(two_categorizers(side, &one(a, da), &one(b, db)).into());
    }
    Ok(Some(SideFiles {
        files,
        categorizer: found.pop(),
    }))
}
