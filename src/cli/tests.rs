//! The command line's definition, held to what it must stay: consistent, with examples on
//! every command, the same outcome however much of it is built, its help and errors as the
//! snapshot has them, and the verb table equal to the `Command` enum.

use super::*;
use clap::CommandFactory;

#[test]
fn cli_is_consistent() {
    Cli::command().debug_assert();
}

/// Every command's `--help` ends with examples, and the global flags are listed
/// under their own heading, apart from the command's own.
#[test]
fn every_command_has_examples_and_global_flags_apart() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        // clap's generated `help` subcommands are not commands of ours.
        if cmd.get_name() == "help" {
            return;
        }
        let name = format!("{path} {}", cmd.get_name());
        let examples = cmd.get_after_help().map(|h| h.to_string()).unwrap_or_default();
        if !examples.starts_with("Examples:\n  retryctl ") {
            missing.push(name.clone());
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &name, missing);
        }
    }
    let mut missing = Vec::new();
    walk(&command(), "", &mut missing);
    assert!(missing.is_empty(), "no Examples section: {missing:?}");
    // Rendered as `retryctl CMD --help` renders it: clap builds only the path entered, so
    // that is where global flags reach the subcommand.
    let help_of = |sub: &str| {
        let err = command().try_get_matches_from(["retryctl", sub, "--help"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
        err.to_string()
    };
    let help = help_of("get");
    let global = help.find("Global options:").expect("a Global options heading");
    assert!(help.find("--output").unwrap() < global, "{help}");
    assert!(help.find("--armada-url").unwrap() > global, "{help}");
    // Flags a command ignores are not shown on it, and are still accepted in place: the
    // server flags show on exactly the verbs the table says talk to a server.
    for verb in VERBS {
        let help = help_of(verb.name);
        for server in [
            "--armada-url",
            "--context",
            "--config",
            "--timeout",
            "--insecure-skip-tls-verify",
        ] {
            assert_eq!(help.contains(server), verb.server, "{} and {server}: {help}", verb.name);
        }
        assert!(help.contains("--color"), "{help}");
    }
    // tune takes its policies from files: no word of --from-server, which it refuses.
    assert!(!help_of("tune").contains("--from-server"));
    assert!(help_of("simulate").contains("--from-server"));
    let m = command()
        .try_get_matches_from(["retryctl", "validate", "-f", "a.yaml", "--context", "prod"])
        .unwrap();
    let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&m).unwrap();
    assert_eq!(cli.global.context.as_deref(), Some("prod"));
    assert_eq!(cli.global.timeout, "10s");
}

/// The verb table and the `Command` enum name the same verbs, in the same order, both as
/// clap derives the enum and in the whole definition: a verb added to one and forgotten in
/// the other fails here.
#[test]
fn the_verb_table_is_the_command_enum() {
    let names = |cmd: &clap::Command| -> Vec<String> {
        cmd.get_subcommands()
            .map(|s| s.get_name().to_string())
            .filter(|name| name != "help")
            .collect()
    };
    let table: Vec<String> = VERBS.iter().map(|v| v.name.to_string()).collect();
    assert_eq!(
        names(&Command::augment_subcommands(clap::Command::new("retryctl"))),
        table
    );
    let mut full = command();
    full.build();
    assert_eq!(names(&full), table);
}

/// What the table says of a verb's definition is what the definition has: its examples, and
/// `--output-file` exactly where `output_file` says so.
#[test]
fn the_verb_table_says_what_each_definition_has() {
    let full = command();
    for verb in VERBS {
        let sub = full.find_subcommand(verb.name).expect(verb.name);
        let examples = sub.get_after_help().map(|h| h.to_string());
        assert_eq!(examples.as_deref(), Some(verb.examples), "{}", verb.name);
        let output_file = sub.get_arguments().any(|a| a.get_id() == "output_file");
        assert_eq!(output_file, verb.output_file, "{}: --output-file", verb.name);
    }
}

/// Every command path of the definition (`["get", "retrypolicy"]`), clap's `help` apart.
fn command_paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, path: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let mut p = path.to_vec();
            p.push(sub.get_name().to_string());
            out.push(p.clone());
            walk(sub, &p, out);
        }
    }
    // Built, so that subcommands whose arguments are deferred show their own subcommands.
    let mut full = command();
    full.build();
    let mut out = vec![Vec::new()];
    walk(&full, &[], &mut out);
    out
}

/// Command lines whose outcome must not depend on how much of the definition clap builds:
/// help and `-h` of every command, a bad flag, a flag without its value and a bad value on
/// each, global flags before and after the subcommand, and what `main` sees at the top
/// level (nothing, `--version`, `help`, a misspelt subcommand).
fn argv_table() -> Vec<Vec<String>> {
    let mut table = Vec::new();
    for path in command_paths() {
        let with = |tail: &[&str]| {
            let mut argv = vec!["retryctl".to_string()];
            argv.extend(path.iter().cloned());
            argv.extend(tail.iter().map(|s| s.to_string()));
            argv
        };
        for tail in [
            &["--help"][..],
            &["-h"],
            &["--version"],
            &["--no-such-flag"],
            &["--color"],
            &["--color", "sometimes"],
            &["--timeout"],
            &["-o"],
            &["-o", "no-such-format"],
            &["-f"],
            &["--context", "prod", "--help"],
            &["an-extra-word"],
        ] {
            table.push(with(tail));
        }
    }
    let lines = [
        "help",
        "help validate",
        "help get retrypolicy",
        "help no-such-command",
        "valdate -f a.yaml",
        "simulat",
        "--color never valdate",
        "-V",
        "--color never validate -f a.yaml",
        "--context prod validate -f a.yaml -v",
        "validate -f a.yaml --context prod -vv --color=never --timeout 1s",
        "validate -f a.yaml b.yaml -R --strict -o json --upstream",
        "validate --scheduler-config s.yaml -f a.yaml",
        "get rp p1 -o yaml --armada-url http://x --insecure-skip-tls-verify",
        "get retrypolicy/infra queue/ml -o name --sort-by .metadata.name",
        "get rp -o jsonpath=",
        "create queue q1 --retry-policy a,b -l team=ml --cordon",
        "create -f a.yaml --dry-run=server",
        "create -f a.yaml --dry-run server",
        "update queue q1 --add-retry-policy x --remove-retry-policy y",
        "delete",
        "delete rp",
        "delete rp p1 --detach --ignore-not-found --dry-run",
        "simulate -f p.yaml --history h.yaml --baseline b.yaml --exit-code -o jsonl",
        "simulate -f p.yaml --exit-code --history h.yaml",
        "serve --db x --in-memory",
        "serve --tls-cert c.pem",
        "serve --in-memory --listen 127.0.0.1:0 --token t",
        "completion",
        "completion fish",
        "config",
        "config use-context",
        "config use-context prod",
        "version --client -o json",
        "describe rp ml-training -f a.yaml --scheduler-config s.yaml",
        "describe queue/ml",
        "explain",
        "explain retrypolicy.spec.rules --recursive",
        "schema nope",
        "schema rp",
        "history --queue q",
        "history --queue q --lookout-url http://l --lookout-db postgresql://x",
        "history --queue q --lookout-url http://l --since 7d --from 2026-01-01T00:00:00Z",
        "history --queue q --lookout-url http://l -o yaml --output-file f.yaml",
    ];
    for line in lines {
        let mut argv = vec!["retryctl".to_string()];
        argv.extend(line.split(' ').map(str::to_string));
        table.push(argv);
    }
    table.push(vec!["retryctl".to_string()]);
    table
}

/// What `main` makes of `argv` parsed with `cmd`: the parsed command line, or the error's
/// kind, stream and text. Callers fix the width (`term_width`): help wraps to the terminal.
fn outcome(mut cmd: clap::Command, argv: &[String]) -> String {
    match parse_with(&mut cmd, argv) {
        Ok(cli) => format!("{cli:?}"),
        Err(e) => format!("{:?}, stderr: {}\n{}", e.kind(), e.use_stderr(), e),
    }
}

/// The definition `main` parses `argv` with.
fn main_command(argv: &[String]) -> clap::Command {
    let args: Vec<std::ffi::OsString> = argv.iter().map(Into::into).collect();
    command_for(&args).term_width(100)
}

/// Every example of every command's help fits the help's width: a command wrapped onto
/// a second line cannot be copied and run.
#[test]
fn no_example_is_wrapped() {
    fn check(cmd: &mut clap::Command, path: &str, wrapped: &mut Vec<String>) {
        let help = cmd.render_long_help().to_string();
        if let Some((_, examples)) = help.split_once("Examples:\n") {
            for line in examples.lines().filter(|l| !l.trim().is_empty()) {
                if !line.starts_with("  retryctl ") {
                    wrapped.push(format!("{path}: `{line}`"));
                }
            }
        }
        for sub in cmd.get_subcommands_mut() {
            let name = format!("{path} {}", sub.get_name());
            check(sub, &name, wrapped);
        }
    }
    let mut cmd = command().term_width(100);
    cmd.build();
    let mut wrapped = Vec::new();
    check(&mut cmd, "retryctl", &mut wrapped);
    assert!(wrapped.is_empty(), "wrapped example lines:\n{}", wrapped.join("\n"));
}

#[test]
fn building_only_the_entered_command_changes_no_outcome() {
    let mut differ = Vec::new();
    for argv in argv_table() {
        let pruned = outcome(main_command(&argv), &argv);
        let lazy = outcome(command().term_width(100), &argv);
        let mut full = command().term_width(100);
        full.build();
        let full = outcome(full, &argv);
        if pruned != full || lazy != full {
            differ.push(format!(
                "{argv:?}\nas main parses it:\n{pruned}\nevery subcommand, only the entered one \
                 built:\n{lazy}\nall built:\n{full}"
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n\n"));
}

#[test]
fn only_a_subcommand_name_prunes_the_definition() {
    let subcommands = |argv: &[&str]| {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        main_command(&argv).get_subcommands().count()
    };
    assert_eq!(subcommands(&["retryctl", "validate", "-f", "a.yaml"]), 1);
    assert_eq!(subcommands(&["retryctl", "get", "rp"]), 1);
    let all = command().get_subcommands().count();
    assert!(all > 10, "{all}");
    for argv in [
        &["retryctl"][..],
        &["retryctl", "--context", "prod", "validate"],
        &["retryctl", "valdate"],
        &["retryctl", "help", "validate"],
        &["retryctl", "--help"],
    ] {
        assert_eq!(subcommands(argv), all, "{argv:?}");
    }
}

/// Help, version and usage errors of the table, as `main` prints them (successful parses
/// are compared above): any change to them shows here.
#[test]
fn help_and_errors_snapshot() {
    let mut text = String::new();
    for argv in argv_table() {
        if let Err(e) = parse_with(&mut main_command(&argv), &argv) {
            // What `main` writes: clap's rendering to stdout, the house's words to stderr.
            let shown = match e.use_stderr() {
                true => super::house_words(&e).unwrap_or_else(|| e.to_string()),
                false => e.to_string(),
            };
            let outcome = format!("{:?}, stderr: {}\n{}", e.kind(), e.use_stderr(), shown);
            text.push_str(&format!("$ {}\n{}\n\n", argv.join(" "), outcome));
        }
    }
    insta::assert_snapshot!("help_and_errors", text);
}

#[test]
fn parse_table() {
    use clap::error::ErrorKind;
    let ok = [
        "retryctl validate -f a.yaml",
        "retryctl validate -f a.yaml b.yaml -R --strict -o json",
        "retryctl create -f a.yaml --dry-run",
        "retryctl create queue q1 --retry-policy a,b -l team=ml",
        "retryctl create rp -f a.yaml",
        "retryctl get retrypolicies",
        "retryctl get rp p1 -o yaml",
        "retryctl get retry-policy p1",
        "retryctl get q -o name",
        "retryctl update queue q1 --add-retry-policy x",
        "retryctl delete rp p1 --detach --ignore-not-found",
        "retryctl delete queues q1 q2",
        "retryctl simulate -f p.yaml --history h.yaml -o json",
        "retryctl --armadaUrl http://x get queues",
        "retryctl serve --in-memory --listen 127.0.0.1:0",
        "retryctl serve --in-memory --tls-cert c.pem --tls-key k.pem",
        "retryctl --armada-url https://x --certificate-authority ca.pem get rp",
        "retryctl get rp --insecure-skip-tls-verify",
        "retryctl completion zsh",
        "retryctl config use-context prod",
        "retryctl create -f a.yaml --dry-run=server",
        "retryctl get retrypolicy/infra queue/ml -o jsonpath={.items[*].metadata.name}",
        "retryctl get rp -o custom-columns=NAME:.metadata.name --no-headers --sort-by .metadata.name",
        "retryctl delete retrypolicy/infra queue/ml --ignore-not-found",
        "retryctl delete -f dir -R --dry-run",
        "retryctl describe rp ml-training -f a.yaml",
        "retryctl describe retrypolicy/infra",
        "retryctl explain retrypolicy.spec.rules --recursive",
        "retryctl schema rp",
    ];
    for line in ok {
        let args: Vec<&str> = line.split(' ').collect();
        if let Err(e) = Cli::try_parse_from(&args) {
            panic!("{line}: {e}");
        }
    }
    let bad = [
        ("retryctl", ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand),
        ("retryctl validate -f a.yaml -o xml", ErrorKind::InvalidValue),
        ("retryctl delete rp", ErrorKind::MissingRequiredArgument),
        ("retryctl delete", ErrorKind::MissingRequiredArgument),
        ("retryctl get", ErrorKind::MissingRequiredArgument),
        ("retryctl get rp -o xml", ErrorKind::InvalidValue),
        ("retryctl get rp -o jsonpath=", ErrorKind::InvalidValue),
        ("retryctl serve --db x --in-memory", ErrorKind::ArgumentConflict),
        ("retryctl serve --tls-cert c.pem", ErrorKind::MissingRequiredArgument),
        ("retryctl serve --tls-key k.pem", ErrorKind::MissingRequiredArgument),
        ("retryctl completion tcsh", ErrorKind::InvalidValue),
    ];
    for (line, kind) in bad {
        let args: Vec<&str> = line.split(' ').collect();
        let err = Cli::try_parse_from(&args).expect_err(line);
        assert_eq!(err.kind(), kind, "{line}");
    }
}
