//! `retryctl config ...` and how the config file drives the connection: masking, contexts,
//! `use-context` keeping every other key, `--config` / `$ARMADACTL_CONFIG`, and errors; the
//! one set of credentials sent (in docs/cli.md's order), the rules a server URL follows, and which
//! commands resolve the Armada address at all.

use crate::support::server::TestServer;
use crate::support::stub::{Reply, Stub};
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
    let view_only = home.path().join("view.yaml");
    std::fs::write(
        &view_only,
        std::fs::read_to_string(home.path().join(".armadactl.yaml")).unwrap()
            + "  c:\n    armadaUrl: dave:s3cr3t@grpc.example:50051\n    bearerToken: tok3n\n  d:\n    armadaRestUrl: https://erin:w0rd@rest.example\n    bearerToken: tok3n\n",
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
    // The URL's `user:password` is what b and d send (d's before its `bearerToken`); a's
    // URL is refused (a query) and c's armadactl-style gRPC address takes no user: the
    // credentials in them are not sent (nor c's token: the context cannot be used), which
    // `url (refused)` says where `none` would hide them.
    assert_eq!(
        out,
        "exit: 0\n--- stdout\n\
         CURRENT   NAME   URL                                                        AUTH\n\
         *         a      https://bob:***@armada.example.com/?access_token=***&x=1   url (refused)\n          \
         b      https://carol:***@grpc.example:443                         basic (URL)\n\
         --- stderr\n"
    );
    let out = exchange(
        retryctl(home.path())
            .args(["config", "get-contexts", "--config"])
            .arg(&view_only),
    );
    assert_eq!(
        out,
        "exit: 0\n--- stdout\n\
         CURRENT   NAME   URL                                                        AUTH\n\
         *         a      https://bob:***@armada.example.com/?access_token=***&x=1   url (refused)\n          \
         b      https://carol:***@grpc.example:443                         basic (URL)\n          \
         c      dave:***@grpc.example:50051                                url (refused)\n          \
         d      https://erin:***@rest.example                              basic (URL)\n\
         --- stderr\n"
    );
    // What "refused" means: the context cannot be used, and says why.
    assert_eq!(
        exchange(retryctl(home.path()).args(["get", "rp", "-c", "a"])),
        "exit: 2\n--- stdout\n--- stderr\nerror: invalid Armada URL `https://bob:***@armada.example.com/?access_token=***&x=1` \
         (from `armadaRestUrl` of context `a`): a server URL takes no query string (`?access_token=***&x=1`); \
         API paths such as `/v1/queue/NAME` are appended to it\n\nhint: use `https://bob:***@armada.example.com/`\n"
    );
}

/// armadactl's most common file: a context with only the gRPC `armadaUrl`. Refused (exit 2)
/// naming `armadaRestUrl`, never silently sent to http://localhost:8080; `--armada-url`
/// still works with it.
#[test]
fn a_grpc_only_context_is_spoken_to_over_grpc_with_tls() {
    let home = temp_home();
    // armadactl's context: a gRPC `host:port` alone, TLS (no `forceNoTls`, no `localhost`),
    // never replaced by the default URL. Nothing listens on port 1.
    std::fs::write(
        home.path().join(".armadactl.yaml"),
        "currentContext: b\ncontexts:\n  b:\n    armadaUrl: 127.0.0.1:1\n",
    )
    .unwrap();
    let out = exchange(retryctl(home.path()).args(["get", "rp"]));
    assert!(
        out.starts_with(
            "exit: 4\n--- stdout\n--- stderr\nerror: cannot list retry policies: cannot reach the Armada \
             server at `grpcs://127.0.0.1:1`: connection refused\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("this URL came from context `b` of the config file"),
        "{out}"
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

/// Every `Authorization` header of request `i` (from 0) that `stub` received, joined.
fn auth_headers(stub: &Stub, i: usize) -> String {
    let reqs = stub.requests();
    let all: Vec<&str> = reqs[i]
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.as_str())
        .collect();
    if all.is_empty() {
        "no header".into()
    } else {
        all.join(" + ")
    }
}

/// docs/cli.md: exactly one `Authorization` header, from the first source given of `--token` /
/// `--token-file`, `$ARMADA_TOKEN`, the URL's `user:password`, the context's `bearerToken`,
/// `basicAuth`, `execAuth`; `-v` names the source, never the secret. Each line: the
/// credentials given, the headers the server received, what `-v` said.
#[test]
fn exactly_one_authorization_header_from_the_first_source_given() {
    let home = temp_home();
    let stub = Stub::start(|_| Reply::json(200, serde_json::json!({})).v1());
    let ran = home.path().join("exec-ran");
    let token_file = home.path().join("token");
    std::fs::write(&token_file, "file-tok\n").unwrap();
    let with_user = |user: &str| stub.url.replace("http://", &format!("http://{user}:url-pw@"));
    std::fs::write(
        home.path().join(".armadactl.yaml"),
        format!(
            "currentContext: all\ncontexts:\n  all:\n    armadaRestUrl: {url}\n    bearerToken: ctx-tok\n    basicAuth: {{username: carol, password: ctx-pw}}\n    execAuth: {{cmd: sh, args: ['-c', 'touch {ran}; echo exec-tok']}}\n  basic-exec:\n    armadaRestUrl: {url}\n    basicAuth: {{username: carol, password: ctx-pw}}\n    execAuth: {{cmd: sh, args: ['-c', 'touch {ran}; echo exec-tok']}}\n  exec:\n    armadaRestUrl: {url}\n    execAuth: {{cmd: sh, args: ['-c', 'echo exec-tok']}}\n  url:\n    armadaRestUrl: {dave}\n    bearerToken: ctx-tok\n  none:\n    armadaRestUrl: {url}\n",
            url = stub.url,
            ran = ran.display(),
            dave = with_user("dave"),
        ),
    )
    .unwrap();
    let alice = with_user("alice");
    let file = token_file.to_str().unwrap();
    // What is given, the flags, `$ARMADA_TOKEN`, `$ARMADA_URL`.
    type Case<'a> = (&'a str, Vec<&'a str>, Option<&'a str>, Option<&'a str>);
    let cases: [Case; 11] = [
        // The URL's user info and `$ARMADA_TOKEN` together: once, both were sent.
        (
            "url + $ARMADA_TOKEN",
            vec!["-c", "none", "--armada-url", &alice],
            Some("env-tok"),
            None,
        ),
        (
            "url + $ARMADA_TOKEN + --token",
            vec!["-c", "none", "--armada-url", &alice, "--token", "flag-tok"],
            Some("env-tok"),
            None,
        ),
        (
            "url + $ARMADA_TOKEN + --token-file",
            vec!["-c", "none", "--armada-url", &alice, "--token-file", file],
            Some("env-tok"),
            None,
        ),
        (
            "url (flag) + context bearer, basic, exec",
            vec!["--armada-url", &alice],
            None,
            None,
        ),
        (
            "url ($ARMADA_URL) + context bearer, basic, exec",
            vec![],
            None,
            Some(&alice),
        ),
        ("url (context) + context bearer", vec!["-c", "url"], None, None),
        (
            "$ARMADA_TOKEN + context bearer, basic, exec",
            vec![],
            Some("env-tok"),
            None,
        ),
        ("context bearer, basic, exec", vec![], None, None),
        ("context basic, exec", vec!["-c", "basic-exec"], None, None),
        ("context exec", vec!["-c", "exec"], None, None),
        ("nothing", vec!["-c", "none"], None, None),
    ];
    let mut seen = String::new();
    for (i, (what, args, token, url)) in cases.iter().enumerate() {
        let mut cmd = retryctl(home.path());
        cmd.arg("-v").args(args).args(["get", "rp"]);
        if let Some(t) = token {
            cmd.env("ARMADA_TOKEN", t);
        }
        if let Some(u) = url {
            cmd.env("ARMADA_URL", u);
        }
        let out = exchange(&mut cmd);
        assert!(out.starts_with("exit: 0\n"), "{what}: {out}");
        for secret in [
            "url-pw", "env-tok", "flag-tok", "file-tok", "ctx-tok", "ctx-pw", "exec-tok",
        ] {
            assert!(!out.contains(secret), "{what}: {out}");
        }
        let shown = out
            .split_once("/v1/retry-policies (auth: ")
            .and_then(|(_, rest)| rest.split_once(")\n"))
            .map_or("?", |(auth, _)| auth);
        seen.push_str(&format!("{what}\n  sent: {}\n  -v: {shown}\n", auth_headers(&stub, i)));
    }
    let seen = seen.replace(file, "FILE");
    insta::assert_snapshot!(seen, @r"
    url + $ARMADA_TOKEN
      sent: Bearer env-tok
      -v: bearer from `$ARMADA_TOKEN`
    url + $ARMADA_TOKEN + --token
      sent: Bearer flag-tok
      -v: bearer from `--token`
    url + $ARMADA_TOKEN + --token-file
      sent: Bearer file-tok
      -v: bearer from `--token-file` `FILE`
    url (flag) + context bearer, basic, exec
      sent: Basic YWxpY2U6dXJsLXB3
      -v: basic from the URL, user `alice`
    url ($ARMADA_URL) + context bearer, basic, exec
      sent: Basic YWxpY2U6dXJsLXB3
      -v: basic from the URL, user `alice`
    url (context) + context bearer
      sent: Basic ZGF2ZTp1cmwtcHc=
      -v: basic from the URL, user `dave`
    $ARMADA_TOKEN + context bearer, basic, exec
      sent: Bearer env-tok
      -v: bearer from `$ARMADA_TOKEN`
    context bearer, basic, exec
      sent: Bearer ctx-tok
      -v: bearer from `bearerToken` of context `all`
    context basic, exec
      sent: Basic Y2Fyb2w6Y3R4LXB3
      -v: basic from `basicAuth` of context `basic-exec`, user `carol`
    context exec
      sent: Bearer exec-tok
      -v: bearer from `execAuth` of context `exec`
    nothing
      sent: no header
      -v: anonymous
    ");
    assert_eq!(stub.requests().len(), cases.len(), "one request per run");
    // `execAuth` runs only when it is the source chosen.
    assert!(!ran.exists(), "execAuth ran though another source came first");
}

/// The same order against a real `retryctl serve` that accepts alice's password or
/// `tok-1`: the first source given is the one the server judges, whatever comes after it.
#[test]
fn the_first_credentials_given_are_the_ones_a_real_server_judges() {
    let server = TestServer::start_with_auth(&["alice:pw"], &["tok-1"]);
    let home = temp_home();
    let url = |user: &str| server.url.replace("http://", &format!("http://{user}@"));
    let run = |url: &str, token: Option<&str>, args: &[&str]| {
        let mut cmd = retryctl(home.path());
        cmd.args(["--armada-url", url])
            .args(args)
            .args(["get", "rp", "-o", "name"]);
        if let Some(t) = token {
            cmd.env("ARMADA_TOKEN", t);
        }
        exchange(&mut cmd).replace(&server.url, "URL")
    };
    // The URL's good password alone, and behind a good token: accepted.
    assert_eq!(run(&url("alice:pw"), None, &[]), "exit: 0\n--- stdout\n--- stderr\n");
    assert_eq!(
        run(&url("alice:nope"), Some("tok-1"), &[]),
        "exit: 0\n--- stdout\n--- stderr\n"
    );
    assert_eq!(
        run(&url("alice:nope"), Some("nope"), &["--token", "tok-1"]),
        "exit: 0\n--- stdout\n--- stderr\n"
    );
    // A wrong token comes first: the good password after it is not sent, and the hint says
    // which source was used.
    insta::assert_snapshot!(run(&url("alice:pw"), Some("expired"), &[]), @r"
    exit: 5
    --- stdout
    --- stderr
    error: cannot list retry policies: the server answered 401 Unauthorized (Unauthenticated): request could not be authenticated: invalid bearer token

    hint: sent: bearer from `$ARMADA_TOKEN` (the first set of `--token`/`--token-file`, `$ARMADA_TOKEN`, the URL's `user:password`, the context's `bearerToken`, `basicAuth`, `execAuth`); check that one, or unset it to use the next
    ");
}

/// docs/cli.md: a query string or fragment in a server URL is a usage error (exit 2) from any
/// source, and nothing is sent; the hint gives the URL without it.
#[test]
fn a_server_url_with_a_query_or_fragment_is_a_usage_error_from_any_source() {
    let home = temp_home();
    let stub = Stub::start(|_| Reply::json(200, serde_json::json!({})).v1());
    std::fs::write(
        home.path().join(".armadactl.yaml"),
        format!(
            "currentContext: q\ncontexts:\n  q:\n    armadaRestUrl: {}/armada/?access_token=s3cret\n",
            stub.url
        ),
    )
    .unwrap();
    let flag = format!("{}/?x=1", stub.url);
    let out = exchange(retryctl(home.path()).args(["--armada-url", &flag, "get", "rp"])).replace(&stub.url, "URL");
    insta::assert_snapshot!(out, @r"
    exit: 2
    --- stdout
    --- stderr
    error: invalid Armada URL `URL/?x=1` (from `--armada-url`): a server URL takes no query string (`?x=1`); API paths such as `/v1/queue/NAME` are appended to it

    hint: use `URL/`
    ");
    let env = format!("{}/armada#top", stub.url);
    let out = exchange(
        retryctl(home.path())
            .env("ARMADA_URL", &env)
            .args(["get", "queue", "q"]),
    )
    .replace(&stub.url, "URL");
    insta::assert_snapshot!(out, @r"
    exit: 2
    --- stdout
    --- stderr
    error: invalid Armada URL `URL/armada#top` (from `$ARMADA_URL`): a server URL takes no fragment (`#top`); API paths such as `/v1/queue/NAME` are appended to it

    hint: use `URL/armada`
    ");
    // From the context, with a token in the query: masked.
    let out = exchange(retryctl(home.path()).args(["delete", "queue", "q"])).replace(&stub.url, "URL");
    insta::assert_snapshot!(out, @r"
    exit: 2
    --- stdout
    --- stderr
    error: invalid Armada URL `URL/armada/?access_token=***` (from `armadaRestUrl` of context `q`): a server URL takes no query string (`?access_token=***`); API paths such as `/v1/queue/NAME` are appended to it

    hint: use `URL/armada/`
    ");
    assert_eq!(stub.requests().len(), 0, "nothing may be sent");
}

/// A server behind an ingress at a path keeps it: `https://gw/armada/` → `/armada/v1/...`,
/// from the flag and from a context alike.
#[test]
fn a_server_url_keeps_its_path_prefix() {
    let home = temp_home();
    let stub = Stub::start(|r| match r.path.as_str() {
        "/armada/v1/retry-policies" => Reply::json(200, serde_json::json!({})).v1(),
        "/gw/armada/v1/queue/q" => Reply::error(404, 5, "queue \"q\" not found").v1(),
        _ => Reply::text(404, "text/plain", "404 page not found"),
    });
    std::fs::write(
        home.path().join(".armadactl.yaml"),
        format!(
            "currentContext: gw\ncontexts:\n  gw: {{armadaRestUrl: '{}/gw/armada'}}\n",
            stub.url
        ),
    )
    .unwrap();
    let flag = format!("{}/armada/", stub.url);
    let out = exchange(retryctl(home.path()).args(["--armada-url", &flag, "get", "rp"]));
    assert_eq!(out, "exit: 0\n--- stdout\n--- stderr\nno retry policies found\n");
    let out = exchange(retryctl(home.path()).args(["get", "queue", "q"]));
    assert!(out.starts_with("exit: 1\n"), "{out}");
    let paths: Vec<String> = stub.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/armada/v1/retry-policies", "/gw/armada/v1/queue/q"]);
}

/// A context with only armadactl's gRPC `armadaUrl` stops only the commands that talk to
/// Armada: `history --lookout-url` talks to Lookout alone and still takes
/// the context's credentials; offline commands never read the context.
#[test]
fn a_grpc_only_context_blocks_only_the_commands_that_talk_to_armada() {
    let home = temp_home();
    std::fs::write(
        home.path().join(".armadactl.yaml"),
        "currentContext: g\ncontexts:\n  g:\n    armadaUrl: grpc.example:50051\n    bearerToken: ctx-tok\n",
    )
    .unwrap();
    let lookout = Stub::start(|r| match r.path.as_str() {
        "/api/v1/jobs" => Reply::json(200, serde_json::json!({"jobs": []})),
        _ => Reply::json(404, serde_json::json!({"error": "not found"})),
    });
    let args = [
        "history",
        "--queue",
        "ml",
        "--lookout-url",
        &lookout.url,
        "--allow-empty",
    ];
    let out = exchange(retryctl(home.path()).args(args));
    assert_eq!(
        out,
        "exit: 0\n--- stdout\n--- stderr\nhistory: exported 0 jobs and 0 runs of queue `ml`\n"
    );
    // The Lookout URL's user info is its credentials; `$ARMADA_TOKEN` comes first. One header.
    let with_user = lookout.url.replace("http://", "http://me:pw@");
    let out = exchange(retryctl(home.path()).env("ARMADA_TOKEN", "env-tok").args([
        "history",
        "--queue",
        "ml",
        "--lookout-url",
        &with_user,
        "--allow-empty",
    ]));
    assert!(out.starts_with("exit: 0\n"), "{out}");
    // No job: an empty export (exit 3), which names Lookout's URL without its user info.
    let out = exchange(retryctl(home.path()).args(["history", "--queue", "ml", "--lookout-url", &with_user]));
    assert_eq!(
        out,
        format!(
            "exit: 3\n--- stdout\n--- stderr\nerror: no job in Lookout `{}` (queue `ml`): nothing to export\n",
            lookout.url
        )
    );
    let sent: Vec<String> = (0..3).map(|i| auth_headers(&lookout, i)).collect();
    assert_eq!(sent, ["Bearer ctx-tok", "Bearer env-tok", "Basic bWU6cHc="]);
    // A query in the Lookout URL: the same rule as for Armada's.
    let out = exchange(retryctl(home.path()).args([
        "history",
        "--queue",
        "ml",
        "--lookout-url",
        "http://lookout.example/?x=1",
    ]));
    assert_eq!(
        out,
        "exit: 2\n--- stdout\n--- stderr\nerror: invalid Lookout URL `http://lookout.example/?x=1` \
         (from `--lookout-url`): a server URL takes no query string (`?x=1`); API paths such as \
         `/api/v1/jobs` are appended to it\n\nhint: use `http://lookout.example/`\n"
    );
    // Offline commands: whatever the context says.
    for args in [
        &["validate", "-f", "testdata/policies/valid/infra.yaml"][..],
        &[
            "simulate",
            "-f",
            "testdata/policies/valid/infra.yaml",
            "--history",
            "testdata/histories/fail-fast.yaml",
        ],
        &["explain", "retrypolicy"],
        &["schema", "queue"],
        &["completion", "bash"],
        &["config", "get-contexts"],
        &["version", "--client"],
    ] {
        let out = exchange(retryctl(home.path()).args(args));
        assert!(out.starts_with("exit: 0\n"), "{args:?}: {out}");
    }
    // A command that talks to Armada speaks gRPC to it (TLS: no `forceNoTls`): there is no
    // such host here, so it cannot be reached (4), within the timeout.
    let out = exchange(retryctl(home.path()).args(["--timeout", "3s", "get", "rp"]));
    assert!(out.starts_with("exit: 4\n"), "{out}");
    assert!(out.contains("grpcs://grpc.example:50051"), "{out}");
}

/// `--token-file` problems are usage errors (exit 2) that never quote the file, and nothing
/// is sent; `--token` with `--token-file` is refused.
#[test]
fn a_bad_token_file_is_a_usage_error_and_nothing_is_sent() {
    let home = temp_home();
    let stub = Stub::start(|_| Reply::json(200, serde_json::json!({})).v1());
    let file = home.path().join("tokens");
    std::fs::write(&file, "s3cret-a\ns3cret-b\n").unwrap();
    let run = |args: &[&str]| {
        exchange(
            retryctl(home.path())
                .args(["--armada-url", &stub.url])
                .args(args)
                .args(["get", "rp"]),
        )
        .replace(&home.path().display().to_string(), "HOME")
    };
    assert_eq!(
        run(&["--token-file", file.to_str().unwrap()]),
        "exit: 2\n--- stdout\n--- stderr\nerror: `--token-file` `HOME/tokens` holds 2 non-empty lines; \
         expected the bearer token alone on one line (not shown here: it may hold secrets)\n"
    );
    let missing = home.path().join("missing");
    assert_eq!(
        run(&["--token-file", missing.to_str().unwrap()]),
        "exit: 2\n--- stdout\n--- stderr\nerror: cannot read `--token-file` `HOME/missing`: no such \
         file or directory\n"
    );
    assert_eq!(
        run(&["--token", "t", "--token-file", missing.to_str().unwrap()]),
        "exit: 2\n--- stdout\n--- stderr\nerror: `--token` and `--token-file` both give the bearer \
         token: pass one of them\n"
    );
    assert_eq!(stub.requests().len(), 0, "nothing may be sent");
}

/// With no `$HOME` (`env -u HOME`, as in a scratch container): a command that needs no config
/// file works (the server from `--armada-url` or `$ARMADA_URL`, the file from `--config`);
/// one that needs the default `~/.armadactl.yaml` says where it looked and how to name one,
/// exit 2, instead of falling back to http://localhost:8080 or failing on the home.
#[test]
fn without_home_a_command_needs_no_config_file_or_says_where_it_looked() {
    let server = TestServer::start();
    let home = temp_home();
    let no_home = |args: &[&str]| {
        let mut cmd = retryctl(home.path());
        cmd.env_remove("HOME").args(args);
        exchange(&mut cmd)
    };
    assert_eq!(
        no_home(&["get", "queues", "--armada-url", &server.url]),
        "exit: 0\n--- stdout\n--- stderr\nno queues found\n"
    );
    let mut env_url = retryctl(home.path());
    env_url
        .env_remove("HOME")
        .env("ARMADA_URL", &server.url)
        .args(["get", "queues"]);
    assert_eq!(
        exchange(&mut env_url),
        "exit: 0\n--- stdout\n--- stderr\nno queues found\n"
    );
    let config = home.path().join("armadactl.yaml");
    std::fs::write(
        &config,
        format!(
            "currentContext: here\ncontexts:\n  here:\n    armadaRestUrl: {}\n",
            server.url
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    assert_eq!(
        no_home(&["get", "queues", "--config", config]),
        "exit: 0\n--- stdout\n--- stderr\nno queues found\n"
    );
    assert!(no_home(&["config", "get-contexts", "--config", config]).starts_with("exit: 0\n"));
    // Offline commands read no config file at all.
    assert_eq!(
        no_home(&["validate", "-f", "testdata/policies/valid/"]).lines().next(),
        Some("exit: 0")
    );

    let looked = "`--config` and `$ARMADACTL_CONFIG` are not given and `$HOME` is not set, so there is no `~/.armadactl.yaml` to read";
    assert_eq!(
        no_home(&["get", "queues"]),
        format!(
            "exit: 2\n--- stdout\n--- stderr\nerror: no server given: `--armada-url` and `$ARMADA_URL` are not set, and no config file: {looked}\n\n\
             hint: give the server with `--armada-url URL`, or the config file with `--config FILE`\n"
        )
    );
    assert_eq!(
        no_home(&["get", "queues", "--context", "prod", "--armada-url", &server.url]),
        format!(
            "exit: 2\n--- stdout\n--- stderr\nerror: context `prod` given, but there is no config file: {looked}\n\n\
             hint: name the config file with `--config FILE` or `$ARMADACTL_CONFIG`\n"
        )
    );
    for config in [
        &["config", "view"][..],
        &["config", "get-contexts"],
        &["config", "use-context", "prod"],
    ] {
        assert_eq!(
            no_home(config),
            format!(
                "exit: 2\n--- stdout\n--- stderr\nerror: no config file: {looked}\n\n\
                 hint: name it with `--config FILE` or `$ARMADACTL_CONFIG`\n"
            ),
            "{config:?}"
        );
    }
}
