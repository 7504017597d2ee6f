//! Secrets in URLs and DSNs: the one function that hides them before a URL is printed
//! anywhere (error messages, `version`, `config view`, `config get-contexts`, the `-v` request
//! log), the one that hides a PostgreSQL DSN's password wherever Lookout's database is named
//! (`history`'s and every verb's errors, `watch`'s log and `/healthz`), and the same masking
//! of a query string alone (`serve`'s request log).
//!
//! Owns: [`redact_url`], [`redact_dsn`] (a URL DSN or key=value pairs), [`push_masked_params`].
//! Must not: import any other module of the crate (everyone who prints a URL uses this, so it
//! stays a leaf), or parse strictly: it must also hide the password in a URL or DSN too
//! broken to use, since that is the one an error message quotes. Where a password's end is
//! unclear, more is hidden rather than less.
//!
//! Decisions the design leaves open:
//! - `user:password@` becomes `user:***@`, as docs/cli.md shows; a user without a password is
//!   kept (a user name is not a secret, and `git@host`-style text must stay readable).
//! - In the query and the fragment (OAuth puts `#access_token=` there), the value of every
//!   parameter whose name says it is a credential becomes `***`: names that, with case, `-`,
//!   `_` and percent-encoding set aside, contain `token`, `secret`, `passw`, `pwd`, `key`,
//!   `sig`, `auth`, `bearer`, `jwt`, `session`, `cookie` or `credential` ([`SECRET_WORDS`]:
//!   `X-Amz-Signature`, `api_key`, `session`). Other parameters are kept, for debugging.
//! - A DSN's password is hidden as the driver would read it (tokio-postgres: a URL's user
//!   information runs to its first `@`, so a password may hold `/`, `?`, `#`), and as the
//!   user may have meant it (up to the last `@`; a key=value password's words up to the next
//!   `key=value`); `password=` in a key=value DSN or a URL's query in any case.
//! - The text is otherwise left exactly as given (no normalising): what the user typed is
//!   what they see, minus the secrets; a DSN is shown on one line, its control characters
//!   escaped (`\x0a`), since it is quoted inside a message or a log line.

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// `https://user:pass@host/p?token=t` → `https://user:***@host/p?token=***`. Text without a
/// password or credential parameter comes back unchanged. A URL without a scheme
/// (`user:pass@host:8080`, as `--armada-url` accepts) is masked the same way.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let mut out = String::with_capacity(url.len());
    if let Some(scheme) = scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    // The last `@` ends the user info: a password may itself hold an `@`.
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            match userinfo.split_once(':') {
                Some((user, _password)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(MASK);
                }
                None => out.push_str(userinfo),
            }
            out.push('@');
            out.push_str(host);
        }
        None => out.push_str(authority),
    }
    // Path, then `?query`, then `#fragment`; parameters in the last two.
    let (before_fragment, fragment) = match tail.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (tail, None),
    };
    match before_fragment.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            out.push_str(&mask_params(query));
        }
        None => out.push_str(before_fragment),
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(&mask_params(fragment));
    }
    out
}

/// `a=1&token=t` → `a=1&token=***`.
fn mask_params(params: &str) -> String {
    let mut out = String::with_capacity(params.len());
    push_masked_params(&mut out, params);
    out
}

/// Appends `params` (a query string without its `?`, or a fragment) to `out` with the value of
/// every credential parameter replaced by [`MASK`]: what `serve`'s request log prints of a
/// request's query (docs/serve.md), and what [`redact_url`] does to a URL's query and fragment.
/// A parameter's name is compared percent-decoded (`%74oken` is `token`).
pub fn push_masked_params(out: &mut String, params: &str) {
    for (i, part) in params.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match part.split_once('=') {
            Some((name, value)) if !value.is_empty() && is_secret_param(name) => {
                out.push_str(name);
                out.push('=');
                out.push_str(MASK);
            }
            _ => out.push_str(part),
        }
    }
}

/// The words a credential parameter's name holds (docs/serve.md): a name is compared with
/// its case, `-`, `_` and percent-encoding set aside, so `X-Amz-Signature`, `api_key`,
/// `%74oken` and `Session-Id` all hold one. Where a name merely looks like one (`monkey`,
/// `design`), its value is hidden too: a value lost to the log costs less than a secret kept.
const SECRET_WORDS: [&str; 12] = [
    "token",
    "secret",
    "passw",
    "pwd",
    "key",
    "sig",
    "auth",
    "bearer",
    "jwt",
    "session",
    "cookie",
    "credential",
];

fn is_secret_param(name: &str) -> bool {
    let mut name = name.to_ascii_lowercase();
    if name.contains(['%', '+']) {
        name = percent_decoded(&name);
    }
    name.retain(|c| c != '-' && c != '_');
    SECRET_WORDS.iter().any(|s| name.contains(s))
}

/// `%74oken` → `token` (`+` is a space); a `%` not followed by two hex digits is kept.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).to_ascii_lowercase()
}

/// A PostgreSQL DSN (`--lookout-db`, `$LOOKOUT_DB`) as every message shows it: each password
/// replaced by [`MASK`], whatever it holds, and on one line (a control character, a line break
/// among them, written `\x0a`). A DSN that starts with a scheme (`postgresql://`) is read as
/// a URL ([`redact_dsn_url`]), anything else as key=value pairs ([`redact_conninfo`]): the
/// choice tokio-postgres makes, widened to a mistyped scheme (`postgresq://u:p@h`), which the
/// driver refuses and the message then quotes. Masking twice is masking once.
pub fn redact_dsn(dsn: &str) -> String {
    let masked = if has_scheme(dsn) {
        redact_dsn_url(dsn)
    } else {
        redact_conninfo(dsn)
    };
    one_line(&masked)
}

/// Whether `text` starts with `scheme://` (RFC 3986's letters of a scheme).
fn has_scheme(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// A DSN URL with its password masked, read as tokio-postgres reads it rather than as a web
/// URL ([`redact_url`]): the user information runs to the first `@` anywhere, so that a
/// password may hold `/`, `?` and `#` unencoded; the password, from the first `:` in it, runs
/// to the last `@` (one that holds an `@` of its own is hidden whole; a query's `@` after a
/// password hides the host too, which is no secret lost). The query's credential parameters
/// (`password=`, in any case) are masked to the next `&`, the parameters after one that are
/// not `name=value` with it (a password that held an `&`); `#` is text there, as the driver
/// reads it.
fn redact_dsn_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    out.push_str("://");
    let after_userinfo = match rest.find('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _)) => {
                let last = rest.rfind('@').unwrap_or(at);
                out.push_str(user);
                out.push(':');
                out.push_str(MASK);
                &rest[last..]
            }
            None => rest,
        },
        None => rest,
    };
    match after_userinfo.split_once('?') {
        Some((host_path, query)) => {
            out.push_str(host_path);
            out.push('?');
            let mut masking = false;
            let mut first = true;
            for part in query.split('&') {
                let secret = match part.split_once('=') {
                    Some((name, value)) => (!value.is_empty() && is_secret_param(name)).then_some(name),
                    None if masking => continue,
                    None => None,
                };
                if !first {
                    out.push('&');
                }
                first = false;
                match secret {
                    Some(name) => {
                        out.push_str(name);
                        out.push('=');
                        out.push_str(MASK);
                    }
                    None => out.push_str(part),
                }
                masking = secret.is_some();
            }
        }
        None => out.push_str(after_userinfo),
    }
    out
}

/// `text` with every control character, line break and bidirectional control written as an
/// escape (`\x0a`, `\u2028`), as the crate's messages write what a user gave (`diag::shown`,
/// which this leaf cannot import).
fn one_line(text: &str) -> String {
    use std::fmt::Write as _;
    // `diag::is_escaped`'s characters (its tests hold the two equal).
    let escaped = |c: char| {
        c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(escaped) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !escaped(c) => out.push(c),
            c if c.is_ascii() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
        }
    }
    out
}

/// A PostgreSQL key=value DSN (`host=db password=s3cret`) with the value of every credential
/// key (`password`, in any case, `sslpassword`: the names [`push_masked_params`] masks)
/// replaced by [`MASK`], read as libpq and tokio-postgres read it: spaces around `=`, values in
/// single quotes (with `\'` and `\\` escapes) or bare up to whitespace; an unterminated quote
/// hides the rest, and the words after a password that are not `key=value` are hidden with it
/// (`password=a b c`: the driver refuses the line, and `b c` is likely the password's rest).
/// Everything else is left exactly as given.
fn redact_conninfo(text: &str) -> String {
    let bytes = text.as_bytes();
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    // The end of a value starting at `i`: past its closing quote, or at whitespace.
    let value_end = |i: usize| {
        let quoted = bytes.get(i) == Some(&b'\'');
        let mut j = if quoted { i + 1 } else { i };
        while j < bytes.len() {
            match bytes[j] {
                b'\\' => j += 1,
                b'\'' if quoted => return j + 1,
                c if !quoted && c.is_ascii_whitespace() => return j,
                _ => {}
            }
            j += 1;
        }
        bytes.len()
    };
    let mut out = String::with_capacity(text.len());
    // `masking`: the last pair was a credential, whose mask covers the words that follow it
    // until the next `key=value`.
    let (mut copied, mut i, mut masking) = (0, skip_space(0), false);
    while i < bytes.len() {
        let key_start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &text[key_start..i];
        let eq = skip_space(i);
        if bytes.get(eq) != Some(&b'=') {
            // Not `key=value`: the driver refuses it.
            if masking {
                copied = i;
            }
            i = skip_space(i);
            continue;
        }
        let start = skip_space(eq + 1);
        let end = value_end(start).min(bytes.len());
        masking = is_secret_param(key);
        if masking {
            out.push_str(&text[copied..start]);
            out.push_str(MASK);
            copied = end;
        }
        i = skip_space(end);
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::{redact_dsn, redact_url};

    #[test]
    fn passwords_and_credential_parameters_never_show() {
        for (url, want) in [
            ("https://user:pass@host", "https://user:***@host"),
            ("http://u:secret@h:1/v1/x", "http://u:***@h:1/v1/x"),
            ("http://u:p@w@h/db", "http://u:***@h/db"),
            ("http://u:@h", "http://u:***@h"),
            ("https://h/p?token=abc&x=1", "https://h/p?token=***&x=1"),
            (
                "https://h/?a=1&access_token=abc#id_token=def&state=s",
                "https://h/?a=1&access_token=***#id_token=***&state=s",
            ),
            (
                "https://h?API_KEY=k&sig=s&page=2",
                "https://h?API_KEY=***&sig=***&page=2",
            ),
            ("admin:pw@localhost:8080", "admin:***@localhost:8080"),
        ] {
            assert_eq!(redact_url(url), want, "{url}");
        }
    }

    #[test]
    fn everything_else_is_kept_as_given() {
        for url in [
            "http://h:1/v1/x",
            "http://h:1/",
            "https://alice@host/path",
            "grpc.example:50051",
            "https://h/p?page=2&token=",
            "not a url at all",
            "",
        ] {
            assert_eq!(redact_url(url), url);
        }
        // Masking twice is masking once.
        let once = redact_url("https://u:p@h?token=t");
        assert_eq!(redact_url(&once), once);
    }

    /// docs/serve.md: what `serve` logs of a query string. Every name holding a word
    /// docs/serve.md lists, in any case, with `-` and `_` anywhere and percent-encoded, loses
    /// its value; everything else stays as sent.
    #[test]
    fn query_strings_lose_credential_values_only() {
        let masked = |q: &str| {
            let mut out = String::from("GET /v1/retry-policies?");
            super::push_masked_params(&mut out, q);
            out
        };
        for (query, want) in [
            ("token=abc", "token=***"),
            (
                "access_token=a&password=p&key=k&secret=s",
                "access_token=***&password=***&key=***&secret=***",
            ),
            ("Token=abc&KEY=k", "Token=***&KEY=***"),
            ("%74oken=abc&pass%77ord=p", "%74oken=***&pass%77ord=***"),
            ("num=5&token=t&page=2", "num=5&token=***&page=2"),
            ("monkey=1&keys=2&x=token", "monkey=***&keys=***&x=token"),
            (
                "X-Amz-Signature=a&X-Amz-Credential=b&X-Amz-Date=20261128",
                "X-Amz-Signature=***&X-Amz-Credential=***&X-Amz-Date=20261128",
            ),
            (
                "jwt=a&session=b&pwd=c&credential=d",
                "jwt=***&session=***&pwd=***&credential=***",
            ),
            (
                "Bearer=a&cookie=b&Auth-Header=c&x_api__key=d",
                "Bearer=***&cookie=***&Auth-Header=***&x_api__key=***",
            ),
            (
                "t-o-k-e-n=a&S_E_S_S_I_O_N=b&pass_w=c",
                "t-o-k-e-n=***&S_E_S_S_I_O_N=***&pass_w=***",
            ),
            (
                "x%2Damz%2Dsignature=a&%4A%57%54=b",
                "x%2Damz%2Dsignature=***&%4A%57%54=***",
            ),
            ("page=2&name=alice&queue=ml", "page=2&name=alice&queue=ml"),
            ("token=&key", "token=&key"),
            ("token=a=b", "token=***"),
            ("%zz=1&%7=2&%", "%zz=1&%7=2&%"),
            ("", ""),
        ] {
            assert_eq!(masked(query), format!("GET /v1/retry-policies?{want}"), "{query}");
        }
    }

    /// A DSN's password never shows, whatever it holds and whatever the DSN's shape; the
    /// rest is kept as given.
    #[test]
    fn dsn_passwords_never_show() {
        for (dsn, want) in [
            // URLs: the password as tokio-postgres reads it (to the first `@`), or as meant
            // (to the last).
            (
                "postgresql://user:s3cret@db:5432/lookout",
                "postgresql://user:***@db:5432/lookout",
            ),
            (
                "postgresql://user:p/ss?w#rd@host:5432/db",
                "postgresql://user:***@host:5432/db",
            ),
            (
                "postgresql://user:p%2Fss%3Fw%23rd%40@host:5432/db",
                "postgresql://user:***@host:5432/db",
            ),
            ("postgresql://u:p@w@h/db", "postgresql://u:***@h/db"),
            ("postgres://u:a@b/c?d#e@h/db", "postgres://u:***@h/db"),
            ("postgresql://:pw@h/db", "postgresql://:***@h/db"),
            ("postgresq://u:typo@h/db", "postgresq://u:***@h/db"),
            (
                "postgresql://u:p@h/db?sslmode=disable&password=x",
                "postgresql://u:***@h/db?sslmode=disable&password=***",
            ),
            ("postgresql://h/db?PASSWORD=x", "postgresql://h/db?PASSWORD=***"),
            (
                "postgresql://h/db?password=a#b&c&sslmode=disable",
                "postgresql://h/db?password=***&sslmode=disable",
            ),
            ("postgresql://u:pw@h/db\n", "postgresql://u:***@h/db\\x0a"),
            ("postgresql://u:p\nw@h/db", "postgresql://u:***@h/db"),
            // key=value: `password` in any case, quoted, spaced, escaped, unterminated.
            (
                "host=db user=u password=s3cret dbname=l",
                "host=db user=u password=*** dbname=l",
            ),
            ("host=db PASSWORD=secret user=x", "host=db PASSWORD=*** user=x"),
            ("Password=secret", "Password=***"),
            ("host=db sslpassword=k", "host=db sslpassword=***"),
            ("host=db password = s3cret dbname=l", "host=db password = *** dbname=l"),
            ("host=db password='a b' user=x", "host=db password=*** user=x"),
            ("password='it\\'s x' host=db", "password=*** host=db"),
            ("host=db password='unterminated s3cret", "host=db password=***"),
            // The words after a password that are not `key=value`: its rest.
            ("host=db password=a bc d user=x", "host=db password=*** user=x"),
            ("host=db password=sec\nret user=x", "host=db password=*** user=x"),
            ("host=db\tpassword=s3cret", "host=db\\x09password=***"),
            ("host=db\npassword=s3cret\n", "host=db\\x0apassword=***\\x0a"),
        ] {
            let got = redact_dsn(dsn);
            assert_eq!(got, want, "{dsn:?}");
            for secret in ["s3cret", "secret", "ss", "typo", "pw", "it", "sec", "ret", "bc"] {
                if dsn.contains(secret) && !want.contains(secret) {
                    assert!(!got.contains(secret), "{dsn:?}: {got}");
                }
            }
            assert_eq!(redact_dsn(&got), got, "masking twice is masking once: {dsn:?}");
        }
    }

    #[test]
    fn dsns_without_a_password_are_kept() {
        for dsn in [
            "postgres://user@db/lookout",
            "postgresql://db:5432/lookout?sslmode=disable",
            "host=db user=password dbname=l",
            "host=db port=5432",
            "lookout",
            "",
        ] {
            assert_eq!(redact_dsn(dsn), dsn);
        }
    }
}
