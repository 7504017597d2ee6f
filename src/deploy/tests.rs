use crate::cli::{EmitArgs, EmitKind};

use super::invocation::test_invocation;
use super::pod::{escape, expand};
use super::values::{check_name, check_subdomain, container_path, is_quantity};
use super::*;

fn invocation(flags: &[(&str, &[&str], bool)]) -> Invocation {
    test_invocation("tune", flags)
}

fn emit_args() -> EmitArgs {
    EmitArgs {
        emit: Some(EmitKind::Kubernetes),
        shard_count: Some(3),
        image: Some("img".into()),
        volume: Some("claim:/data/".into()),
        ..EmitArgs::default()
    }
}

#[test]
fn escape_and_expand_are_inverse_and_expand_is_the_kubelets() {
    for text in ["plain", "$", "a$b", "$$", "$(X)", "$$(X)", "x$(", "end$", "$((a))"] {
        assert_eq!(expand(&escape(text), &|_| Some("!".into())), text, "{text}");
    }
    let var = |n: &str| (n == "I").then(|| "7".to_string());
    assert_eq!(expand("p-$(I).json", &var), "p-7.json");
    assert_eq!(expand("$(UNSET)/$(I)", &var), "$(UNSET)/7");
    assert_eq!(expand("$$(I)", &var), "$(I)");
    assert_eq!(expand("$(I", &var), "$(I");
    assert_eq!(expand("a$b$", &var), "a$b$");
}

#[test]
fn paths_lie_under_the_mount() {
    assert_eq!(container_path("/data", "history", "h.jsonl").unwrap(), "/data/h.jsonl");
    assert_eq!(container_path("/data", "history", "./p/./h").unwrap(), "/data/p/h");
    assert_eq!(container_path("/data", "history", "/data/x/").unwrap(), "/data/x");
    assert_eq!(container_path("/data", "filename", ".").unwrap(), "/data");
    for bad in ["/database/h", "/tmp/h", "../h", "/data/../etc", "-"] {
        let e = container_path("/data", "history", bad).unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::Usage, "{bad}");
        assert!(e.message.contains(&format!("`--history {bad}`")), "{}", e.message);
    }
}

#[test]
fn claims_and_secrets_are_subdomains_job_sets_labels() {
    for ok in ["sweep", "retryctl.sweep-1", "a", "0.a"] {
        assert_eq!(check_subdomain(ok), Ok(()), "{ok}");
    }
    for bad in ["", "Sweep", "a..b", ".a", "a.", "a_b", "-a.b", "a-.b"] {
        assert!(check_subdomain(bad).is_err(), "{bad}");
    }
    assert!(check_subdomain(&"a".repeat(64)).is_err());
    let long = vec!["a".repeat(63); 4].join(".");
    assert_eq!(check_subdomain(&long[..253]), Ok(()));
    assert!(check_subdomain(&format!("{long}a")).is_err());
    assert!(check_name("retryctl.sweep", 57).is_err());
}

#[test]
fn quantities_are_kubernetes_quantities() {
    for ok in ["1", "500m", "2.5", "4Gi", "1e3", "128974848", "0.5Ki", "+1"] {
        assert!(is_quantity(ok), "{ok}");
    }
    for bad in ["", "Gi", "1GB", "1..2", "one", "1e", ".", "1 Gi"] {
        assert!(!is_quantity(bad), "{bad}");
    }
}

#[test]
fn the_shards_carry_the_flags_with_paths_moved_and_dollars_escaped() {
    let inv = invocation(&[
        ("filename", &["new", "/data/old"], true),
        ("history", &["h.jsonl"], true),
        ("vary", &["p:spec.rules[0].onTerminationMessage.pattern=a$(b),c"], false),
        ("baseline-categorizer", &["recorded"], true),
        ("max-compute", &["-5%"], false),
        ("exit-code", &[], false),
        ("output", &["html"], false),
    ]);
    let plan = plan(&emit_args(), &inv).unwrap();
    assert_eq!(
        plan.shard_args("$(JOB_COMPLETION_INDEX)"),
        [
            "tune",
            "--filename",
            "/data/new",
            "/data/old",
            "--history",
            "/data/h.jsonl",
            "--vary",
            "p:spec.rules[0].onTerminationMessage.pattern=a$$(b),c",
            "--baseline-categorizer",
            "recorded",
            "--max-compute=-5%",
            "--exit-code",
            "--shard",
            "$(JOB_COMPLETION_INDEX)/3",
            "-o",
            "partial",
            "--output-file",
            "/data/partial-$(JOB_COMPLETION_INDEX).json",
        ]
    );
    assert_eq!(
        plan.merge_args(),
        [
            "merge",
            "/data/partial-0.json",
            "/data/partial-1.json",
            "/data/partial-2.json",
            "-o",
            "html",
            "--output-file",
            "/data/result.html"
        ]
    );
    assert_eq!(plan.job_set, "retryctl-tune");
}

/// The documents say the contention section is not computed when the shards leave it out:
/// `tune` and `simulate` with the default (`auto`, given or not), not with `--contention
/// off` (the last occurrence is clap's), never `suggest` (its merge computes it).
#[test]
fn the_documents_say_a_sharded_run_computes_no_contention() {
    let says = |command: &str, flags: &[(&str, &[&str], bool)]| {
        let mut all = vec![("history", &["h.jsonl"][..], true)];
        all.extend_from_slice(flags);
        let p = plan(&emit_args(), &test_invocation(command, &all)).unwrap();
        p.volume_note()
            .iter()
            .any(|l| l.starts_with("contention: not computed for a sharded run"))
    };
    assert!(says("tune", &[]));
    assert!(says("simulate", &[("contention", &["auto"], false)]));
    assert!(says(
        "tune",
        &[("contention", &["off"], false), ("contention", &["auto"], false)]
    ));
    assert!(!says("tune", &[("contention", &["off"], false)]));
    assert!(!says("suggest", &[]));
}
