//! The docs run: every command and output block of README.md and docs/*.md is
//! checked here, so a doc whose output drifts from the binary fails `cargo test`.
//!
//! How. A ```` ```console ```` block is run by [`console`] (tests/integration/support/console.rs):
//! `$ retryctl …` lines are run from the repository root (split into words as a shell
//! would, quotes and backslashes, but no shell: no pipes, no `$VAR`), and the lines under
//! each are its stdout and stderr together, in the order written; `? N` after a command is
//! its exit status (0 when absent); `...` alone on a line and `[..]` inside one elide.
//! Everything else is compared byte for byte, `\` included: the guides show patterns and
//! Markdown a reader copies, so a block shows exactly what the binary prints (trycmd, which
//! ran these blocks before, turned every `\` of an output into `/` and could not be told
//! not to). The docs that talk to a server (the
//! README's tour, docs/cli.md's kubectl habits and docs/serve.md's walkthrough,
//! [`SERVER_DOCS`]) run against a `retryctl serve` this test starts in process
//! (`support::server::TestServer`, in memory, on a free port), one per file (each file's
//! commands change what the server holds), its URL in `$ARMADA_URL`, so their blocks name no
//! address and read as a user's against the default one; every other
//! doc gets an address where nothing listens, so a command that reaches for a server there
//! fails visibly instead of finding whatever runs on this machine. A failure names the
//! file, the command's line and the exit status if it differs, and shows the doc's output
//! and the binary's as one diff.
//!
//! Not run: a block that cannot run here is ```` ```console,ignore ```` and must be listed
//! in [`NOT_RUN`] with the reason, and the test that covers it where there is one: the
//! PostgreSQL of Lookout (docs/lookout.md; tests/integration/history.rs and cluster.rs run
//! those commands against a real PostgreSQL, tune.rs docs/tune.md's and route.rs the README's
//! route, each reading its block from the doc), starting a server on a fixed port (this test starts its own), shell pipelines and
//! redirections, installs, builds and CI recipes. An ignored block that is not listed, or a
//! listed one that is gone, fails [`every_block_is_run_or_listed_as_not_run`]. A block in
//! any other language must be an input (a config file, settings), never a command or an
//! output: `yaml`, `json` and `lua` only, with no `$ ` line; a block without a language
//! says neither what it is nor whether it runs, so it is refused too.
//!
//! Also checked: the README's exit-code table is the binary's (one table, asserted
//! in tests), the README stays a page (≤ 300 lines) with the quick start's two commands and
//! a link to every guide, every guide links back, every relative link resolves, and the
//! example files are what the docs say they are (the estimates example is
//! `simulate_report.rs`'s history and policies; the backtest history is made from it by the
//! rule docs/estimates.md states; the Lookout week is the fixture's export, as
//! `history.rs` snapshots it from a real PostgreSQL).
//!
//! To rewrite the outputs after an intended change: `RETRYCTL_DOCS=overwrite cargo test
//! --test integration docs::`, then read the diff (each output and `? N` that differed is
//! replaced by what the binary printed; a `...` or `[..]` line that still matches stays,
//! one that no longer does is replaced by the lines it stood for, and may need putting
//! back by hand).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use retryctl::error::ExitCode;

use crate::support::console::{self, Runner};
use crate::support::{root, server::TestServer, temp_home};

/// The fenced blocks of a Markdown text, as the runner reads them, and the `console,ignore`
/// one that starts as a `NOT_RUN` entry says: also the other tests' readers (tune.rs and
/// route.rs run such blocks for real), so that a block is found the same way here and there.
pub(crate) use crate::support::console::{blocks, ignored_block};

/// Docs whose blocks talk to a server: each runs against its own, in file order.
const SERVER_DOCS: &[&str] = &["README.md", "docs/cli.md", "docs/serve.md"];

/// The `console,ignore` blocks, by file and the first command of the block (its start is
/// enough), with why they are not run here.
const NOT_RUN: &[(&str, &str, &str)] = &[
    (
        "docs/suggest.md",
        "$ retryctl suggest --lookout-db",
        "a Lookout database; tests/integration/suggest.rs runs suggest against a real PostgreSQL (lookout_gives_what_its_export_gives)",
    ),
    (
        "docs/suggest.md",
        "$ for i in 0 1 2 3; do retryctl suggest",
        "a shell loop with redirections; tests/integration/suggest_shards.rs runs suggest's shards and merges",
    ),
    (
        "docs/install.md",
        "$ sha256sum -c SHA256SUMS",
        "needs a release archive and installs into /usr/local; scripts/test-dist.sh checks the archive and its checksums",
    ),
    (
        "docs/install.md",
        "$ scripts/release.sh",
        "builds the dist profile (minutes) and needs a Docker daemon; scripts/test-dist.sh runs the binary in an empty root",
    ),
    (
        "docs/past-one-machine.md",
        "$ cd docs/examples/estimates",
        "a shell loop with redirections; tests/integration/shards.rs runs shards and merges",
    ),
    (
        "docs/past-one-machine.md",
        "$ retryctl tune … --emit armada",
        "a redirection, csplit and an Armada cluster; tests/integration/shard_examples.rs runs the jobs' args as written",
    ),
    (
        "docs/past-one-machine.md",
        "$ retryctl tune … --emit kubernetes",
        "a redirection and a Kubernetes cluster; tests/integration/shard_examples.rs runs the pods' args as written",
    ),
    (
        "docs/categorizer.md",
        "$ retryctl apply -f ml.yaml --categorizer current/executor.yaml",
        "the README route's files and an Armada to write to; tests/integration/route.rs runs it on the route's files against a real `retryctl serve` and compares its output with the block",
    ),
    (
        "docs/watch.md",
        "$ retryctl watch --baseline current/",
        "a long-running process on Lookout's PostgreSQL; tests/integration/watch.rs runs watch on the README route's week in a real PostgreSQL and holds its counters to simulate's (the_counters_over_a_window_are_simulate_baselines_numbers)",
    ),
    (
        "docs/watch.md",
        "$ retryctl watch --baseline testdata/lookout/old",
        "a long-running process on Lookout's PostgreSQL; tests/integration/watch.rs runs watch against a real PostgreSQL",
    ),
    (
        "docs/watch.md",
        "warning: 20 jobs of queue `ml` written more than --lookback",
        "a line of a running watch's log; tests/integration/watch_clocks.rs makes the example and holds its words (jobs_written_behind_the_lookback_are_counted_late_and_said)",
    ),
    (
        "docs/watch.md",
        "$ curl -s localhost:9464/metrics",
        "curl and a pipeline against a running watch; tests/integration/watch.rs scrapes /metrics and checks it with promtool",
    ),
    (
        "docs/watch.md",
        "$ promtool check rules deploy/watch/rules.yaml",
        "promtool, from Debian's prometheus; tests/integration/watch.rs runs both lines as printed, from the repository's root (the_alerts_pass_promtool_and_their_own_rule_tests_as_the_guide_prints_them)",
    ),
    (
        "docs/watch.md",
        "$ kubectl -n armada apply",
        "a Kubernetes cluster; tests/integration/watch.rs checks deploy/watch/'s documents (emit_kubernetes_prints_the_deployment_of_deploy_watch) and rules",
    ),
    (
        "README.md",
        "$ cargo run --locked",
        "builds the project: it is what runs these tests",
    ),
    (
        "README.md",
        "$ cargo install",
        "installs into ~/.cargo and writes a system directory",
    ),
    (
        "README.md",
        "$ retryctl serve",
        "the test starts its own server on a free port",
    ),
    (
        "README.md",
        "$ export ARMADA_URL=",
        "a shell builtin: the test sets `$ARMADA_URL` to the URL of the server it starts",
    ),
    (
        "README.md",
        "$ retryctl history --lookout-db",
        "Lookout's PostgreSQL, redirections and an Armada to write to; tests/integration/route.rs reads this block and runs it as written against a real PostgreSQL loaded with testdata/route/week.jsonl and a `retryctl serve --dialect upstream` (the_readme_route_runs_as_written_on_a_week_of_todays_armada); the runnable block after it shows suggest, tune and validate on the same files",
    ),
    (
        "docs/serve.md",
        "$ retryctl serve --in-memory",
        "the test starts its own server on a free port",
    ),
    (
        "docs/serve.md",
        "$ retryctl serve --tls-cert",
        "needs a certificate; tests/integration/tls.rs makes one and runs it",
    ),
    (
        "docs/serve.md",
        "$ curl",
        "curl against a running server; tests/integration/serve.rs checks these answers",
    ),
    (
        "docs/policies.md",
        "$ cargo install cargo-fuzz",
        "fuzzing runs for minutes (BENCHMARKS.md), not in cargo test",
    ),
    (
        "docs/cli.md",
        "$ retryctl schema retrypolicy > .schemas/retrypolicy.json",
        "writes files; `schema` itself is checked in cli_traps.rs",
    ),
    (
        "docs/what-if.md",
        "$ mkdir -p old",
        "a CI recipe against a real cluster's Lookout",
    ),
    (
        "docs/lookout.md",
        "$ work=$(mktemp -d)",
        "starts PostgreSQL as root; tests/integration/support/pg.rs does the same",
    ),
    (
        "docs/lookout.md",
        "$ retryctl history --lookout-db",
        "needs PostgreSQL; its output is the snapshot history.rs checks, compared below",
    ),
    (
        "docs/lookout.md",
        "$ psql -X -v ON_ERROR_STOP=1",
        "needs PostgreSQL; tests/integration/cluster.rs loads these rows and reads them back with `get --lookout-db`",
    ),
    (
        "docs/lookout.md",
        "$ retryctl simulate -f new/ --lookout-db",
        "needs PostgreSQL and a cluster's policies",
    ),
    (
        "docs/lookout.md",
        "$ retryctl simulate -f new/ --history week.jsonl --lookout-db",
        "needs PostgreSQL and a cluster's policies; tests/integration/cluster.rs runs it (the_baseline_from_the_cluster_is_the_same_plan_as_from_its_files)",
    ),
    (
        "docs/lookout.md",
        "$ retryctl simulate -f testdata/lookout/new/ --lookout-db",
        "needs PostgreSQL; cluster.rs asserts the plan equals the offline one above plus its `baseline:` line",
    ),
    (
        "docs/tune.md",
        "$ retryctl tune -f testdata/lookout/new/ --lookout-db",
        "needs PostgreSQL; tune.rs runs this command line against the fixture and the cluster's rows and asserts these lines",
    ),
];

/// Languages of blocks that hold inputs (config files, editor settings, documents).
const INPUT_LANGUAGES: &[&str] = &["yaml", "json", "lua"];

/// README.md and every Markdown file under docs/, as paths relative to the root.
fn md_files() -> Vec<String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().into_string().unwrap();
            let path = format!("{rel}/{name}");
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &path, out);
            } else if name.ends_with(".md") {
                out.push(path);
            }
        }
    }
    let mut files = vec!["README.md".to_string()];
    walk(&root().join("docs"), "docs", &mut files);
    files
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn every_block_is_run_or_listed_as_not_run() {
    let mut problems = Vec::new();
    let mut listed_found = BTreeSet::new();
    let mut run = 0;
    for file in md_files() {
        for b in blocks(&read(&file)) {
            let at = format!("{file}:{}", b.line);
            match b.language() {
                "console" if b.ignored() => {
                    let first = b.lines.first().map_or("", String::as_str);
                    match NOT_RUN.iter().position(|(f, start, _)| *f == file && first.starts_with(start)) {
                        Some(i) => {
                            if !listed_found.insert(i) {
                                problems.push(format!("{at}: a second block matches NOT_RUN entry `{}`: list each one", NOT_RUN[i].1));
                            }
                        }
                        None => problems.push(format!(
                            "{at}: a `console,ignore` block that NOT_RUN does not list (first line `{first}`): run it, or list it with the reason"
                        )),
                    }
                }
                "console" => {
                    run += 1;
                    if !b.lines.first().is_some_and(|l| l.starts_with("$ ")) {
                        problems.push(format!("{at}: a console block starts with its command (`$ …`)"));
                    }
                }
                "" => problems.push(format!("{at}: a block without a language: name one (`console` runs it)")),
                lang if INPUT_LANGUAGES.contains(&lang) => {
                    if let Some(l) = b.lines.iter().find(|l| l.starts_with("$ ")) {
                        problems.push(format!("{at}: a command in a `{lang}` block (`{l}`): commands go in console blocks"));
                    }
                }
                lang => problems.push(format!(
                    "{at}: a `{lang}` block is neither run nor an input: write commands and their output as a console block"
                )),
            }
        }
    }
    for (i, (file, start, _)) in NOT_RUN.iter().enumerate() {
        if !listed_found.contains(&i) {
            problems.push(format!(
                "NOT_RUN lists `{start}` in {file}, which has no such ignored block"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The check above would hold on docs without a single command: they have many.
    assert!(run > 20, "only {run} console blocks run");
}

/// Runs the console blocks of `files` with `armada_url` in `$ARMADA_URL`, a few files at a
/// time: what failed, each described.
fn run_blocks(files: &[String], armada_url: &str) -> Vec<String> {
    let overwrite = match std::env::var("RETRYCTL_DOCS") {
        Err(_) => false,
        Ok(v) if v == "overwrite" => true,
        Ok(v) => panic!("RETRYCTL_DOCS={v}: the one value is `overwrite`"),
    };
    let home = temp_home();
    let runner = Runner {
        bin: PathBuf::from(env!("CARGO_BIN_EXE_retryctl")),
        cwd: root(),
        // What a user's shell would add and the examples must not depend on; an empty value
        // is unset to retryctl (and to clap's `env`). The rest of the test's environment is
        // passed on.
        env: [
            ("HOME", home.path().display().to_string()),
            ("NO_COLOR", "1".to_string()),
            ("ARMADA_URL", armada_url.to_string()),
            ("ARMADA_TOKEN", String::new()),
            ("ARMADACTL_CONFIG", String::new()),
            ("LOOKOUT_DB", String::new()),
            ("COMPLETE", String::new()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
        overwrite,
    };
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(files.len());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(file) = files.get(i) else { break };
                let found = runner.check_file(file);
                failures.lock().unwrap().extend(found);
            });
        }
    });
    failures.into_inner().unwrap()
}

#[test]
fn console_blocks_print_what_the_docs_say() {
    let (server_docs, offline): (Vec<String>, Vec<String>) =
        md_files().into_iter().partition(|f| SERVER_DOCS.contains(&f.as_str()));
    assert_eq!(server_docs.len(), SERVER_DOCS.len(), "{SERVER_DOCS:?} exist");
    let mut failures = Vec::new();
    for f in &server_docs {
        let server = TestServer::start();
        failures.extend(run_blocks(std::slice::from_ref(f), &server.url));
    }
    // Port 1: nothing listens there (binding it needs root).
    failures.extend(run_blocks(&offline, "http://127.0.0.1:1"));
    assert!(
        failures.is_empty(),
        "{} of the docs' commands do not do what their docs say (to take the binary's \
         outputs: RETRYCTL_DOCS=overwrite cargo test --test integration docs::, then \
         read the diff):\n\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Every run block has its steps: a block the runner skipped would pass unseen.
    let steps: usize = md_files()
        .iter()
        .map(|f| console::steps(&read(f)).map_or(0, |s| s.len()))
        .sum();
    assert!(steps > 50, "only {steps} commands run");
}

/// The runner compares bytes: a `\` the doc shows as `/` is a difference, as is any other
/// byte; `...` and `[..]` elide lines and text within a line, and nothing more.
#[test]
fn the_runner_compares_bytes_but_for_its_elisions() {
    use console::{line_matches, matches};
    assert!(matches("a\\b\n", "a\\b\n"));
    assert!(!matches("a/b\n", "a\\b\n"), "the filter trycmd applied would pass this");
    assert!(!matches("[ //t//r//f]\n", "[ \\\\t\\\\r\\\\f]\n"));
    assert!(!matches("a\\b\n", "a/b\n"));
    assert!(!matches("ab\n", "ab"), "a newline is a byte");
    assert!(!matches("ab\n", "ab\r\n"), "so is a carriage return");
    assert!(matches("", ""));
    assert!(!matches("", "x\n"));
    // `...` alone on a line: any number of lines, none included.
    let doc = "first\n...\nlast\n";
    assert!(matches(doc, "first\nx\ny\nlast\n"));
    assert!(matches(doc, "first\nlast\n"));
    assert!(!matches(doc, "first\nx\n"));
    assert!(!matches(doc, "x\nfirst\nlast\n"));
    assert!(matches("a\n...", "a\nb\nc\n"), "a last `...` takes the rest");
    assert!(
        matches("...\nb\n...\nb\n", "b\nx\nb\nb\n"),
        "the first `b` that works, not the first `b`"
    );
    assert!(!matches(" ...\n", "x\n"), "only alone on its line");
    // `[..]`: any text within one line.
    assert!(line_matches("took [..] ms\n", "took 12 ms\n"));
    assert!(line_matches("took [..] ms\n", "took  ms\n"));
    assert!(!line_matches("took [..] ms\n", "took 12 s\n"));
    assert!(line_matches("a[..]b\n", "abxb\n"), "the last part is the line's end");
    assert!(line_matches("[..]:[..]\n", "http://127.0.0.1:80\n"));
    assert!(!line_matches("a[..]\n", "a/b\\c"), "the newline is not elided");
    assert!(!line_matches("x [..] y/z\n", "x 1 y\\z\n"));
    assert!(!matches("a[..]c\n", "a\nc\n"), "nor are lines");
}

/// The words of a command line, split as trycmd split them (a shell's quoting, no shell).
#[test]
fn the_runner_splits_command_lines_as_a_shell() {
    let split = |l: &str| console::split(l).unwrap();
    assert_eq!(split("get rp  -o yaml"), ["get", "rp", "-o", "yaml"]);
    assert_eq!(
        split("--vary 'p:rules[1].action=Fail,Retry'"),
        ["--vary", "p:rules[1].action=Fail,Retry"]
    );
    // docs/cli.md's jsonpath: `\n` stays two characters within single quotes.
    assert_eq!(split(r#"-o jsonpath='{"\n"}{end}'"#), ["-o", r#"jsonpath={"\n"}{end}"#]);
    assert_eq!(split(r#""a \"b\" \$c \d" e\ f"#), [r#"a "b" $c \d"#, "e f"]);
    assert_eq!(split("a'b'\"c\"d"), ["abcd"]);
    assert_eq!(split("''"), [""]);
    assert_eq!(split("a #b c"), ["a"]);
    assert_eq!(split("a#b"), ["a#b"]);
    assert_eq!(split("$ARMADA_URL a|b"), ["$ARMADA_URL", "a|b"], "nothing is expanded");
    assert!(console::split("'open").is_err());
    assert!(console::split("\"open").is_err());
    assert!(console::split("end\\").is_err());
}

/// A block run end to end: split, run (here a shell stands in for `retryctl`), its two
/// streams read back in order, its status and output compared, and rewritten on request.
#[cfg(unix)]
#[test]
fn the_runner_runs_a_block_and_rewrites_it() {
    let runner = |overwrite| Runner {
        bin: PathBuf::from("/bin/sh"),
        cwd: root(),
        env: vec![("DOCS_TEST_VALUE".to_string(), "v".to_string())],
        overwrite,
    };
    let doc = "# A guide\n\n```console\n\
               $ retryctl -c 'echo out; echo err >&2; echo \"$DOCS_TEST_VALUE\"; printf \"a\\\\\\\\b\\\\n\"'\n\
               out\nerr\nv\na\\b\n\n\
               $ retryctl -c 'echo one; echo two; echo three; exit 3'\n? 3\none\n...\n\n\
               $ retryctl -c true\n\
               ```\n";
    let (failures, rewritten) = runner(false).check_text("guide.md", doc);
    assert_eq!(failures, Vec::<String>::new());
    assert_eq!(rewritten, None);

    // The same doc, as trycmd let it be written: `/` for `\`; and a wrong status.
    let wrong = doc.replace("a\\b\n", "a/b\n").replace("? 3\n", "");
    let (failures, rewritten) = runner(false).check_text("guide.md", &wrong);
    assert_eq!(rewritten, None);
    assert_eq!(failures.len(), 2, "{failures:#?}");
    assert!(
        failures[0].starts_with("guide.md:4: `$ retryctl -c 'echo out;"),
        "{}",
        failures[0]
    );
    assert!(failures[0].contains("\n-a/b\n+a\\b\n"), "{}", failures[0]);
    assert!(
        failures[1].starts_with("guide.md:10: `$ retryctl -c 'echo one;"),
        "{}",
        failures[1]
    );
    assert!(
        failures[1].contains("exit status: the doc says 0, was 3"),
        "{}",
        failures[1]
    );

    // Rewritten: the binary's bytes and status, the `...` that still matches kept.
    let (failures, rewritten) = runner(true).check_text("guide.md", &wrong);
    assert_eq!(failures, Vec::<String>::new());
    assert_eq!(rewritten.as_deref(), Some(doc));
}

/// The exit codes are one table in the README; it is the binary's own.
#[test]
fn readme_exit_codes_are_the_binarys() {
    let readme = read("README.md");
    let section = readme
        .split("\n## Exit codes\n")
        .nth(1)
        .expect("README has an `## Exit codes` section");
    let rows: Vec<(u8, String)> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the header and its rule
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            (cells[0].parse().unwrap(), cells[1].to_string())
        })
        .collect();
    let binary: Vec<(u8, String)> = ExitCode::TABLE.iter().map(|(c, m)| (c.code(), m.to_string())).collect();
    assert_eq!(rows, binary);
}

/// The README is a page: what it is, the quick start, the exit codes, a tour, and a link
/// to every guide; each guide starts from it and links back; no relative link is broken.
#[test]
fn readme_is_a_page_and_the_guides_hang_together() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: move detail to a guide under docs/"
    );
    // The quick start's two commands, exactly (BENCHMARKS.md times them; .ci/run runs the second).
    for cmd in [
        "$ cargo run --locked -- simulate -f testdata/policies/valid --history testdata/histories/design-composition.yaml",
        "$ cargo test --locked",
    ] {
        assert!(readme.lines().any(|l| l == cmd), "README's quick start lost `{cmd}`");
    }
    let guides: Vec<String> = md_files().into_iter().filter(|f| f != "README.md").collect();
    assert!(guides.len() >= 8, "{guides:?}");
    let mut problems = Vec::new();
    for g in &guides {
        let link = format!("]({})", g);
        if !readme.contains(&link) {
            problems.push(format!("README.md does not link {g}"));
        }
        let text = read(g);
        let intro: String = text
            .lines()
            .skip(1)
            .skip_while(|l| l.is_empty())
            .take_while(|l| !l.is_empty())
            .collect();
        // docs/x.md links `../README.md`, docs/reference/x.md `../../README.md`.
        let back = format!("{}README.md", "../".repeat(g.matches('/').count()));
        if !intro.contains(&format!("]({back})")) {
            problems.push(format!(
                "{g}: its first paragraph (the summary) does not link back to {back}"
            ));
        }
    }
    for file in md_files() {
        problems.extend(broken_links(&file));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Relative links `](path)` and `](path#anchor)` of `file` that point nowhere.
fn broken_links(file: &str) -> Vec<String> {
    let text = read(file);
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    let mut broken = Vec::new();
    let mut in_block = false;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_block = !in_block;
        }
        if in_block {
            continue;
        }
        for target in line.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let resolved: PathBuf = if path.is_empty() {
                PathBuf::from(file)
            } else {
                dir.join(path)
            };
            let full = root().join(&resolved);
            if !full.exists() {
                broken.push(format!("{file}:{}: `{target}` does not exist", n + 1));
                continue;
            }
            if !anchor.is_empty() && full.extension().is_some_and(|e| e == "md") {
                let headings = std::fs::read_to_string(&full).unwrap();
                let found = headings
                    .lines()
                    .filter(|l| l.starts_with('#'))
                    .any(|h| slug(h.trim_start_matches('#')) == anchor);
                if !found {
                    broken.push(format!("{file}:{}: `{target}`: no such heading", n + 1));
                }
            }
        }
    }
    broken
}

/// GitHub's anchor of a heading: lowercase, spaces to `-`, punctuation other than `-` and
/// `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn yaml(text: &str) -> serde_yaml::Value {
    serde_yaml::from_str(text).unwrap()
}

/// docs/estimates.md works `simulate_report.rs`'s example by hand: the files are that
/// test's history and policies, so the two worked examples are one.
#[test]
fn the_estimates_example_is_simulate_reports() {
    use crate::simulate_report::{history, NEW, OLD, QUEUE};
    let dir = "docs/examples/estimates";
    assert_eq!(read(&format!("{dir}/history.jsonl")), history());
    for (side, policy) in [("old", OLD), ("new", NEW)] {
        assert_eq!(
            yaml(&read(&format!("{dir}/{side}/policy.yaml"))),
            yaml(policy),
            "{side}"
        );
        assert_eq!(yaml(&read(&format!("{dir}/{side}/queue.yaml"))), yaml(QUEUE), "{side}");
    }
}

/// docs/estimates.md says how backtest.jsonl is made from history.jsonl: made again here by
/// that rule, it is the same file.
#[test]
fn the_backtest_history_is_made_as_the_guide_says() {
    let dir = "docs/examples/estimates";
    let base: Vec<serde_json::Value> = read(&format!("{dir}/history.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut want = String::new();
    for day in 1..=14u32 {
        for (i, h) in base.iter().enumerate() {
            let id = h["job"]["id"].as_str().unwrap();
            let gpu = id.starts_with("cuda") || id == "c1";
            let resources = if gpu {
                serde_json::json!({"cpu": "8", "gpu": 1})
            } else {
                serde_json::json!({"cpu": "2"})
            };
            let mut runs = h["runs"].as_array().unwrap().clone();
            // From day 8 on, cuda4 and cuda5 fail with a CUDA error twice before they succeed.
            if day >= 8 && (id == "cuda4" || id == "cuda5") {
                runs.insert(1, runs[0].clone());
            }
            let job = serde_json::json!({
                "job": {
                    "id": format!("{id}-d{day:02}"),
                    "queue": "q",
                    "submittedAt": format!("2026-11-{:02}T{:02}:00:00Z", day + 1, 8 + i),
                    "resources": resources,
                },
                "runs": runs,
            });
            want.push_str(&job.to_string());
            want.push('\n');
        }
    }
    assert_eq!(read(&format!("{dir}/backtest.jsonl")), want);
}

/// docs/lookout.md replays a checked-in week instead of an export it cannot make without
/// PostgreSQL: that file, and the export's summary the guide shows, are what `history.rs`
/// snapshots from the real database (its test fails when the export changes).
#[test]
fn the_lookout_week_is_the_fixtures_export() {
    let snap = read("tests/integration/snapshots/integration__history__db_export_of_the_fixture_is_exact.snap");
    let body = snap.split("--- stdout\n").nth(1).unwrap();
    let (stdout, stderr) = body.split_once("--- stderr\n").unwrap();
    assert_eq!(read("docs/examples/lookout/week.jsonl"), stdout);
    let guide = read("docs/lookout.md");
    let export = ignored_block(&guide, "$ retryctl history --lookout-db").expect("docs/lookout.md shows the export");
    assert_eq!(export.output_of("$ retryctl history").trim_end(), stderr.trim_end());
}

/// Files other work in flight still edits; their citations go when that work lands (the
/// merger empties this list). Each entry is a path prefix and why it is exempt.
const CITATIONS_PENDING: &[(&str, &str)] = &[];

/// The repository stands alone: a reader has this tree and nothing else, so no file cites
/// the behaviour contract the project was built from (by name or by its numbered sections)
/// or a tracker's issue numbers; each cites the docs under docs/ (docs/reference/ for the
/// wire contract and the bars) instead.
#[test]
fn the_repository_cites_only_itself() {
    // Spelled in pieces so that this file does not match itself.
    let contract = ["SP", "EC"].concat();
    let mut found = Vec::new();
    let mut files = Vec::new();
    walk_tree(&root(), "", &mut files);
    assert!(files.len() > 100, "{files:?}");
    for rel in files {
        if CITATIONS_PENDING.iter().any(|(prefix, _)| rel.starts_with(prefix)) {
            continue;
        }
        // Binary files (fixtures, images) cannot cite anything a reader sees.
        let Ok(text) = std::fs::read_to_string(root().join(&rel)) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            let what = if has_word(line, &contract) {
                Some(format!("`{contract}`"))
            } else if let Some(section) = section_number(line) {
                Some(format!("section `{section}`"))
            } else {
                issue_number(line)
            };
            if let Some(what) = what {
                found.push(format!("{rel}:{}: cites {what}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "cite the repository's own docs (docs/*.md, docs/reference/*.md) instead:\n{}",
        found.join("\n")
    );
}

/// A section sign and a number: a numbered section of a document the reader does not have.
/// An RFC's sections are public and stay (an RFC's number, then the sign and the section).
fn section_number(line: &str) -> Option<String> {
    line.match_indices('§').find_map(|(at, _)| {
        let rest = line[at + '§'.len_utf8()..].trim_start();
        let number: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let mut words = line[..at].split_whitespace().rev();
        let rfc_number = words.next().is_some_and(|w| w.chars().all(|c| c.is_ascii_digit()));
        let after_rfc = rfc_number
            && words
                .next()
                .is_some_and(|w| w.trim_start_matches(|c: char| !c.is_ascii_alphanumeric()) == "RFC");
        (number.starts_with(|c: char| c.is_ascii_digit()) && !after_rfc).then(|| format!("§{number}"))
    })
}

/// Every file under the root, as a path relative to it, but for git's and cargo's own.
fn walk_tree(dir: &Path, rel: &str, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().into_string().unwrap();
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let kind = e.file_type().unwrap();
        if kind.is_dir() {
            if name != ".git" && name != "target" {
                walk_tree(&e.path(), &path, out);
            }
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// `word` in `line` with no letter, digit or `_` on either side (so `UNSPECIFIED` and
/// `SPEC_FIELDS` are other words).
fn has_word(line: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// An issue tracker's number (the word, a space, an optional `#`, digits), which a reader cannot look up.
fn issue_number(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    lower.match_indices("issue").find_map(|(at, _)| {
        if lower[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            return None;
        }
        let rest = lower[at + "issue".len()..]
            .strip_prefix('s')
            .unwrap_or(&lower[at + 5..]);
        let rest = rest.strip_prefix(' ')?;
        let rest = rest.strip_prefix('#').unwrap_or(rest);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        // ASCII lowercasing keeps every byte offset, so `end` is one in `line` too.
        let end = lower.len() - rest.len() + digits.len();
        (!digits.is_empty()).then(|| format!("`{}`", &line[at..end]))
    })
}
