//! `retryctl config ...` and how the config file drives the connection: masking, contexts,
//! `use-context` keeping every other key, `--config` / `$ARMADACTL_CONFIG`, and errors.

use crate::support::{exchange, retryctl, temp_home};

const CONFIG: &str = "\
currentContext: local
contexts:
  local:
    armadaRestUrl: http://localhost:8080
  prod:
    armadaUrl: armada.example.com:50051
    armadaRestUrl: https://armada.example.com
    basicAuth:
      username: alice
      password: hunter2
    executorClusters: [a, b]
  ci:
    bearerToken: tok-123
    execAuth:
      cmd: get-token
      env:
      - name: SECRET
        value: shh
# a key retryctl does not use
openIdAuth:
  providerUrl: https://id.example.com
";

fn home_with_config() -> tempfile::TempDir {
    let home = temp_home();
    std::fs::write(home.path().join(".armadactl.yaml"), CONFIG).unwrap();
    home
}

#[test]
fn view_masks_secrets() {
    let home = home_with_config();
    insta::assert_snapshot!(exchange(retryctl(home.path()).args(["config", "view"])), @r"
    exit: 0
    --- stdout
    currentContext: local
    contexts:
      local:
        armadaRestUrl: http://localhost:8080
      prod:
        armadaUrl: armada.example.com:50051
        armadaRestUrl: https://armada.example.com
        basicAuth:
          username: alice
          password: '********'
        executorClusters:
        - a
        - b
      ci:
        bearerToken: '********'
        execAuth:
          cmd: get-token
          env:
          - name: SECRET
            value: '********'
    openIdAuth:
      providerUrl: https://id.example.com
    --- stderr
    ");
}

#[test]
fn get_contexts_and_current_context() {
    let home = home_with_config();
    insta::assert_snapshot!(exchange(retryctl(home.path()).args(["config", "get-contexts"])), @r"
    exit: 0
    --- stdout
    CURRENT   NAME    URL                          AUTH
    *         local   http://localhost:8080        none
              prod    https://armada.example.com   basic
              ci      -                            bearer
    --- stderr
    ");
    let out = exchange(retryctl(home.path()).args(["config", "current-context"]));
    assert_eq!(out, "exit: 0\n--- stdout\nlocal\n--- stderr\n");
}

#[test]
fn use_context_rewrites_only_current_context() {
    use std::os::unix::fs::PermissionsExt;
    let home = home_with_config();
    let path = home.path().join(".armadactl.yaml");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = exchange(retryctl(home.path()).args(["config", "use-context", "prod"]));
    assert_eq!(out, "exit: 0\n--- stdout\nswitched to context `prod`\n--- stderr\n");
    let text = std::fs::read_to_string(home.path().join(".armadactl.yaml")).unwrap();
    let before: serde_yaml::Value = serde_yaml::from_str(CONFIG).unwrap();
    let mut after: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(after["currentContext"], "prod");
    after["currentContext"] = "local".into();
    assert_eq!(after, before, "every other key kept:\n{text}");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "a file with passwords stays private");
}

#[test]
fn unknown_context_suggests_the_nearest() {
    let home = home_with_config();
    let out = exchange(retryctl(home.path()).args(["config", "use-context", "prd"]))
        .replace(&home.path().display().to_string(), "HOME");
    insta::assert_snapshot!(out, @r"
    exit: 2
    --- stdout
    --- stderr
    error: context `prd` not found under `contexts` in `HOME/.armadactl.yaml`

    hint: did you mean `prod`? defined contexts: `local`, `prod`, `ci`
    ");
    let out = exchange(retryctl(home.path()).args(["-c", "nope", "get", "rp"]));
    assert!(out.starts_with("exit: 2\n"), "{out}");
    assert!(
        out.contains("error: context `nope` not found under `contexts`"),
        "{out}"
    );
}

#[test]
fn config_flag_and_env_choose_the_file() {
    let home = temp_home();
    let other = home.path().join("other.yaml");
    std::fs::write(
        &other,
        "currentContext: x\ncontexts:\n  x: {armadaRestUrl: 'http://127.0.0.1:9'}\n",
    )
    .unwrap();
    let out = exchange(
        retryctl(home.path())
            .env("ARMADACTL_CONFIG", &other)
            .args(["config", "current-context"]),
    );
    assert_eq!(out, "exit: 0\n--- stdout\nx\n--- stderr\n");
    let out = exchange(retryctl(home.path()).args(["--config", "missing.yaml", "config", "view"]));
    assert_eq!(
        out,
        "exit: 2\n--- stdout\n--- stderr\nerror: cannot read config file `missing.yaml` (from --config): no such file or directory\n"
    );
    // No file at all: defaults, said on stderr.
    let bare = temp_home();
    let out = exchange(retryctl(bare.path()).args(["config", "view"]));
    assert!(
        out.starts_with("exit: 0\n--- stdout\n--- stderr\nno config file at "),
        "{out}"
    );
}

#[test]
fn invalid_config_file_is_invalid_input() {
    let home = temp_home();
    std::fs::write(home.path().join(".armadactl.yaml"), "contexts: [unclosed\n").unwrap();
    let out = exchange(retryctl(home.path()).args(["get", "rp"]));
    assert!(out.starts_with("exit: 3\n"), "{out}");
    assert!(out.contains("error: invalid config file `"), "{out}");
}

#[test]
fn a_context_without_a_config_file_is_a_usage_error() {
    let home = temp_home();
    let out = exchange(retryctl(home.path()).args(["-c", "prod", "get", "rp"]))
        .replace(&home.path().display().to_string(), "HOME");
    insta::assert_snapshot!(out, @r"
    exit: 2
    --- stdout
    --- stderr
    error: context `prod` given, but there is no config file at `HOME/.armadactl.yaml`

    hint: create it (armadactl's format), or name one with `--config FILE`
    ");
}
