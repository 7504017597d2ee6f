//! `suggest --executor-config FILE` (docs/categorizer.md, "The two halves, in order"): the
//! proposed executor config alone, in the deployed config's shape or as the executor chart's
//! values, where the executor reads its categories whatever the deployed file's shape; and a
//! FILE that is also an input or the other output of the run refused before anything is read
//! or written.

use std::fs;
use std::path::Path;

use serde_yaml::Value;

use crate::support::{format_output, retryctl, root, temp_home};

const WEEK: &str = "testdata/route/week.jsonl";
const CURRENT: &str = "testdata/route/current";

/// The deployed config of the route (`application:` and `kubernetes:`) as a bare document:
/// its `application:` part alone, `errorCategories` at the top.
fn bare(executor: &str) -> String {
    let mut out = String::from("# The ml cluster's application config, bare.\n");
    let mut inside = false;
    for line in executor.lines() {
        if line == "application:" {
            inside = true;
        } else if !line.starts_with(' ') {
            inside = false;
        } else if inside {
            out.push_str(&line[2..]);
            out.push('\n');
        }
    }
    out
}

/// `--baseline DIR` holding the route's policies and queues, and the deployed config `text`
/// beside it (given with `--categorizer`): the suggest arguments.
fn sides(dir: &Path, text: &str) -> Vec<String> {
    let baseline = dir.join("current");
    fs::create_dir_all(&baseline).unwrap();
    for f in ["policies.yaml", "queues.yaml"] {
        fs::copy(root().join(CURRENT).join(f), baseline.join(f)).unwrap();
    }
    let deployed = dir.join("deployed.yaml");
    fs::write(&deployed, text).unwrap();
    [
        "--baseline",
        baseline.to_str().unwrap(),
        "--categorizer",
        deployed.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

/// `suggest` on the route's week with `sides`, `-o policy`, the executor config written to
/// `file` in `format`: its text.
fn executor_config(home: &Path, sides: &[String], file: &Path, format: &str) -> String {
    let out = retryctl(home)
        .args(["suggest", "--history", WEEK, "--queue", "ml", "-o", "policy"])
        .args(sides)
        .args(["--executor-config", file.to_str().unwrap()])
        .args(["--executor-config-format", format])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    fs::read_to_string(file).unwrap()
}

/// The chart's values are the config as deployed under `applicationConfig:`, the verdict and
/// a line saying what they are first; a bare config is the config's `application:` part, so
/// the categories land at `applicationConfig.application.errorCategories` in both shapes,
/// which is where the executor reads them.
#[test]
fn helm_values_put_the_categories_where_the_executor_reads_them() {
    let home = temp_home();
    let executor = fs::read_to_string(root().join(CURRENT).join("executor.yaml")).unwrap();
    // The executor's file with an `errorCategories` at its top too, first, which the
    // executor does not read: the proposal goes under `application:`, the other is kept.
    let both = format!("errorCategories:\n  enabled: false\n{executor}");
    for (shape, deployed, nest) in [
        ("executor", executor.clone(), "  "),
        ("bare", bare(&executor), "    "),
        ("both", both, "  "),
    ] {
        let dir = home.path().join(shape);
        let sides = sides(&dir, &deployed);
        let config = executor_config(home.path(), &sides, &dir.join("config.yaml"), "config");
        let helm = executor_config(home.path(), &sides, &dir.join("helm.yaml"), "helm");
        let (verdict, body) = config.split_once('\n').unwrap();
        assert!(verdict.starts_with("# verdict: "), "{config}");
        let mut want =
            format!("{verdict}\n# The executor chart's values: helm upgrade … -f this file.\napplicationConfig:\n");
        if shape == "bare" {
            want.push_str("  application:\n");
        }
        for line in body.lines() {
            match line.starts_with('#') || line.is_empty() {
                true => want.push_str(&format!("{line}\n")),
                false => want.push_str(&format!("{nest}{line}\n")),
            }
        }
        assert_eq!(helm, want, "{shape}");
        let config: Value = serde_yaml::from_str(&config).unwrap();
        let helm: Value = serde_yaml::from_str(&helm).unwrap();
        let proposed = match shape {
            "bare" => &config["errorCategories"],
            _ => &config["application"]["errorCategories"],
        };
        let names = |c: &Value| -> Vec<String> {
            c["categories"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap().to_string())
                .collect()
        };
        // The proposal's categories first, the deployed ones after.
        let names = names(proposed);
        assert!(names.len() > 3, "{shape}: {proposed:?}");
        assert_eq!(names[names.len() - 3..], ["oom", "app-42", "infrastructure"], "{shape}");
        assert_eq!(
            &helm["applicationConfig"]["application"]["errorCategories"], proposed,
            "{shape}"
        );
        assert_eq!(
            helm["applicationConfig"]["application"]["clusterId"], "ml-gpu-a",
            "{shape}"
        );
        if shape == "both" {
            // The top-level one the executor does not read, as it was.
            assert_eq!(
                serde_yaml::to_string(&config["errorCategories"]).unwrap(),
                "enabled: false\n"
            );
        }
    }
}

/// `--executor-config FILE` naming a file this run reads, or its other output: exit 2 naming
/// both flags, before anything is read or written (the files as they were, none created).
#[test]
fn an_executor_config_over_an_input_is_refused_before_anything_is_written() {
    let home = temp_home();
    let dir = home.path();
    let executor = fs::read_to_string(root().join(CURRENT).join("executor.yaml")).unwrap();
    let sides = sides(dir, &executor);
    let baseline = dir.join("current");
    let deployed = dir.join("deployed.yaml");
    fs::write(baseline.join("executor.yaml"), &executor).unwrap();
    let week = dir.join("week.jsonl");
    fs::copy(root().join(WEEK), &week).unwrap();
    std::os::unix::fs::symlink(&deployed, dir.join("link.yaml")).unwrap();
    let d = dir.display();
    let cases: [(&[&str], String); 6] = [
        (
            &["--executor-config", "DIR/deployed.yaml"],
            format!("`--executor-config {d}/deployed.yaml` is also `--categorizer {d}/deployed.yaml`: the proposed config would be written over an input of this run; give another file"),
        ),
        // A link, `..`: the same file.
        (
            &["--executor-config", "DIR/link.yaml"],
            format!("`--executor-config {d}/link.yaml` is also `--categorizer {d}/deployed.yaml`: the proposed config would be written over an input of this run; give another file"),
        ),
        (
            &["--executor-config", "DIR/current/../week.jsonl"],
            format!("`--executor-config {d}/current/../week.jsonl` is also `--history {d}/week.jsonl`: the proposed config would be written over an input of this run; give another file"),
        ),
        (
            &["--executor-config", "DIR/current/executor.yaml"],
            format!("`--executor-config {d}/current/executor.yaml` lies in `--baseline {d}/current`, a directory this run reads: the proposed config would be written among its files; give a file outside it"),
        ),
        (
            &["--executor-config", "DIR/current/new.yaml"],
            format!("`--executor-config {d}/current/new.yaml` lies in `--baseline {d}/current`, a directory this run reads: the proposed config would be written among its files; give a file outside it"),
        ),
        (
            &["--executor-config", "DIR/out.yaml", "--output-file", "DIR/out.yaml"],
            format!("`--executor-config {d}/out.yaml` is also `--output-file {d}/out.yaml`: the two outputs would be written over each other; give another file"),
        ),
    ];
    for (flags, said) in cases {
        let flags: Vec<String> = flags.iter().map(|f| f.replace("DIR", &d.to_string())).collect();
        let out = retryctl(dir)
            .args([
                "suggest",
                "--history",
                week.to_str().unwrap(),
                "--queue",
                "ml",
                "-o",
                "policy",
            ])
            .args(&sides)
            .args(&flags)
            .args(["--executor-config-format", "helm"])
            .output()
            .unwrap();
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).as_ref(),
                String::from_utf8_lossy(&out.stderr).as_ref()
            ),
            (Some(2), "", format!("error: {said}\n").as_str()),
            "{flags:?}"
        );
        assert_eq!(fs::read_to_string(&deployed).unwrap(), executor);
        assert_eq!(fs::read_to_string(baseline.join("executor.yaml")).unwrap(), executor);
        assert_eq!(fs::read(&week).unwrap(), fs::read(root().join(WEEK)).unwrap());
        assert!(!baseline.join("new.yaml").exists());
        assert!(!dir.join("out.yaml").exists());
    }
}
