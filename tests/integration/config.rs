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
    exit: 1
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

/// `config use-context nope` is a failed operation (exit 1, as kubectl's), and the file is
/// left as it was.
#[test]
fn use_context_of_an_unknown_name_exits_1() {
    let home = home_with_config();
    let out = exchange(retryctl(home.path()).args(["config", "use-context", "nope"]))
        .replace(&home.path().display().to_string(), "HOME");
    assert_eq!(
        out,
        "exit: 1\n--- stdout\n--- stderr\nerror: context `nope` not found under `contexts` in \
         `HOME/.armadactl.yaml`\n\nhint: defined contexts: `local`, `prod`, `ci`\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join(".armadactl.yaml")).unwrap(),
        CONFIG
    );
}

/// A password or token in a context's URL is masked in `config view` and `get-contexts`.
#[test]
fn urls_with_passwords_are_masked_in_view_and_get_contexts() {
    let home = temp_home();
    std::fs::write(
        home.path().join(".armadactl.yaml"),
        "currentContext: a\ncontexts:\n  a:\n    armadaRestUrl: https://bob:hunter3@armada.example.com/?access_token=t0k&x=1\n  b:\n    armadaUrl: https://carol:pa55@grpc.example:443\n",
    )
    .unwrap();
    let out = exchange(retryctl(home.path()).args(["config", "view"]));
    assert_eq!(
        out,
        "exit: 0\n--- stdout\ncurrentContext: a\ncontexts:\n  a:\n    armadaRestUrl: \
         https://bob:***@armada.example.com/?access_token=***&x=1\n  b:\n    armadaUrl: \
         https://carol:***@grpc.example:443\n--- stderr\n"
    );
    let out = exchange(retryctl(home.path()).args(["config", "get-contexts"]));
    for secret in ["hunter3", "t0k", "pa55"] {
        assert!(!out.contains(secret), "{out}");
    }
    assert!(
        out.contains("a      https://bob:***@armada.example.com/?access_token=***&x=1"),
        "{out}"
    );
    assert!(out.contains("b      https://carol:***@grpc.example:443"), "{out}");
}

/// armadactl's most common file: a context with only the gRPC `armadaUrl`. Refused (exit 2)
/// naming `armadaRestUrl`, never silently sent to http://localhost:8080; `--armada-url`
/// still works with it.
#[test]
fn a_grpc_only_context_is_refused_naming_armada_rest_url() {
    let home = temp_home();
    std::fs::write(
        home.path().join(".armadactl.yaml"),
        "currentContext: b\ncontexts:\n  b:\n    armadaUrl: grpc.example:50051\n",
    )
    .unwrap();
    let out = exchange(retryctl(home.path()).args(["get", "rp"])).replace(&home.path().display().to_string(), "HOME");
    assert_eq!(
        out,
        "exit: 2\n--- stdout\n--- stderr\nerror: context `b` sets only `armadaUrl: grpc.example:50051`, \
         a gRPC address; retryctl speaks Armada's REST API and needs `armadaRestUrl`\n\nhint: add \
         `armadaRestUrl: https://HOST` (the URL of Armada's REST gateway) to context `b` in \
         `HOME/.armadactl.yaml`, or pass `--armada-url URL` (or set `$ARMADA_URL`)\n"
    );
    let server = crate::support::server::TestServer::start();
    let out = exchange(retryctl(home.path()).args(["--armada-url", &server.url, "get", "rp"]));
    assert!(out.starts_with("exit: 0\n"), "{out}");
}

/// execAuth through the binary against a real `retryctl serve --token-file`: the helper's
/// token is accepted; a helper printing two lines is an auth error (exit 5) that names the
/// command and never shows what it printed.
#[test]
fn exec_auth_against_serve_with_a_token_file() {
    let home = temp_home();
    let tokens = home.path().join("tokens");
    std::fs::write(&tokens, "tok-exec\n").unwrap();
    let serve = crate::serve_process::spawn(&[
        "--listen",
        "127.0.0.1:0",
        "--in-memory",
        "--token-file",
        tokens.to_str().unwrap(),
    ]);
    std::fs::write(
        home.path().join(".armadactl.yaml"),
        format!(
            "currentContext: ok\ncontexts:\n  ok:\n    armadaRestUrl: {0}\n    execAuth: {{cmd: sh, args: ['-c', 'echo tok-$N; sleep 30 &'], env: [{{name: N, value: exec}}]}}\n  two-lines:\n    armadaRestUrl: {0}\n    execAuth: {{cmd: sh, args: ['-c', 'echo tok-exec; echo tok-other']}}\n  wrong:\n    armadaRestUrl: {0}\n    execAuth: {{cmd: sh, args: ['-c', 'echo tok-wrong']}}\n",
            serve.url
        ),
    )
    .unwrap();
    // The helper leaves a child holding its stdout: the token is taken when the helper exits.
    let started = std::time::Instant::now();
    let out = exchange(retryctl(home.path()).args(["get", "rp", "-o", "json"]));
    assert!(out.starts_with("exit: 0\n--- stdout\n{"), "{out}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "waited for the child"
    );
    let out = exchange(retryctl(home.path()).args(["-c", "two-lines", "get", "rp"]));
    assert_eq!(
        out,
        "exit: 5\n--- stdout\n--- stderr\nerror: execAuth command `sh` printed 2 non-empty lines; \
         expected the bearer token alone on one line (not shown here: it may hold secrets)\n"
    );
    // The server checks the token: a wrong one is refused (exit 5).
    let out = exchange(retryctl(home.path()).args(["-c", "wrong", "get", "rp"]));
    assert!(out.starts_with("exit: 5\n"), "{out}");
}
