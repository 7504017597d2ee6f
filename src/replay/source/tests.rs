//! The file reader's own tests: over-long lines, a shard's lines read once, YAML markers.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::model::scheduler::SchedulerConfig;
use crate::replay::shard::Shard;

use super::documents::{doc_start, markers};
use super::line_reader::{skip_line, Input};
use super::lines::{LINE_MAX, LONG_LINE};
use super::*;

/// What is left of an over-long line, longer than the reader's buffer many times over,
/// is skipped: the next read starts at the next line, and a last line without a newline
/// is skipped to the input's end (and skipping at the end is a no-op).
/// What each shard of `path` yields: `(line, order, text)` of every line with content,
/// and `(line, order, message)` of every error, shard after shard.
fn sharded(path: &Path, n: u64) -> Vec<(usize, u64, String)> {
    let mut out = Vec::new();
    for i in 0..n {
        let mut files = Files::open(path, SchedulerConfig::default(), Overrides::default()).unwrap();
        assert!(files.sift(Shard { index: i, count: n }));
        for entry in files {
            match entry.body {
                Body::Lines(block) => {
                    let mut origin = entry.origin.clone();
                    for (line, at, text) in block.lines() {
                        origin.at_line(line, at);
                        let text = String::from_utf8_lossy(text).into_owned();
                        out.push((origin.line().unwrap(), origin.pos().1, text));
                    }
                }
                Body::Error(message) => out.push((entry.origin.line().unwrap(), entry.origin.pos().1, message)),
                Body::Empty => out.push((
                    entry.origin.line().unwrap(),
                    entry.origin.pos().1,
                    EMPTY_TEXT.to_string(),
                )),
                other => panic!("{other:?}"),
            }
        }
    }
    out
}

/// A line longer than the limit, crossing several shards' ranges, is reported once, by
/// the shard where it starts, with its line number; the lines around it are each read
/// once, numbered as in the file and ordered by their offsets, whatever N.
#[test]
fn shards_read_each_line_once_even_across_an_over_long_one() {
    let mut f = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
    let long = "x".repeat(LINE_MAX as usize + 10);
    let text = format!("a\n\n{long}\nb\nc");
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    let b_at = text.find("\nb").unwrap() as u64 + 2;
    let want = vec![
        (1, 1, "a".to_string()),
        (3, 4, LONG_LINE.to_string()),
        (4, b_at, "b".to_string()),
        (5, b_at + 2, "c".to_string()),
    ];
    for n in [1, 2, 3, 5, 40] {
        assert_eq!(sharded(f.path(), n), want, "{n} shards");
    }
}

/// A YAML document starts at its `---` (or the file's start): markers only at a line's
/// start and followed by a blank or the end.
#[test]
fn yaml_documents_start_at_their_markers() {
    let text = "# c\nkind: A\n--- \nkind: B\n---x\n  ---\n---\n---";
    let m = markers(text);
    assert_eq!(m, vec![(3, 12), (7, 36), (8, 40)]);
    assert_eq!(doc_start(&m, 2), 0);
    assert_eq!(doc_start(&m, 3), 12);
    assert_eq!(doc_start(&m, 6), 12);
    assert_eq!(doc_start(&m, 7), 36);
}

#[test]
fn skipping_a_line_stops_after_its_newline_or_at_the_end() {
    let text = format!("{}\nnext\n{}", "x".repeat(100_000), "y".repeat(5_000));
    let mut reader: Input = Box::new(BufReader::with_capacity(1024, std::io::Cursor::new(text.into_bytes())));
    assert_eq!(skip_line(&mut reader, u64::MAX), (100_001, true));
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "next\n");
    assert_eq!(skip_line(&mut reader, u64::MAX), (5_000, true));
    assert_eq!(reader.fill_buf().unwrap(), b"");
    assert_eq!(skip_line(&mut reader, u64::MAX), (0, true));
    assert_eq!(reader.fill_buf().unwrap(), b"");
}

/// A limit stops the skip where it is (`false`: no line end before it), buffers of any
/// size; a newline within it ends the skip as without one.
#[test]
fn skipping_a_line_stops_at_its_limit() {
    let text = format!("{}\nnext", "x".repeat(10_000));
    for capacity in [7, 1024, 1 << 16] {
        let mut reader: Input = Box::new(BufReader::with_capacity(
            capacity,
            std::io::Cursor::new(text.clone().into_bytes()),
        ));
        assert_eq!(skip_line(&mut reader, 4_000), (4_000, false), "{capacity}");
        assert_eq!(skip_line(&mut reader, 6_001), (6_001, true), "{capacity}");
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"next");
    }
}
