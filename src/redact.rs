//! Secrets in URLs: the one function that hides them before a URL is printed anywhere
//! (error messages, `version`, `config view`, `config get-contexts`, the `-v` request log),
//! and the same masking of a query string alone (`serve`'s request log).
//!
//! Owns: [`redact_url`], [`push_masked_params`], [`redact_conninfo`] (PostgreSQL's key=value
//! DSNs). Must not: import any other module of the crate (everyone who
//! prints a URL uses this, so it stays a leaf), or parse URLs strictly: it must also hide
//! the password in a URL too broken to use, since that is the one an error message quotes.
//!
//! Decisions the design leaves open:
//! - `user:password@` becomes `user:***@`, as docs/cli.md shows; a user without a password is
//!   kept (a user name is not a secret, and `git@host`-style text must stay readable).
//! - In the query and the fragment (OAuth puts `#access_token=` there), the value of every
//!   parameter whose name says it is a credential becomes `***`: names containing `token`,
//!   `password`, `passwd`, `secret` or `apikey`/`api_key`/`api-key`, and `key`, `sig`,
//!   `signature`, `auth`, `authorization`. Other parameters are kept, for debugging.
//! - The text is otherwise left exactly as given (no normalising): what the user typed is
//!   what they see, minus the secrets.

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

fn is_secret_param(name: &str) -> bool {
    let mut name = name.to_ascii_lowercase();
    if name.contains(['%', '+']) {
        name = percent_decoded(&name);
    }
    ["token", "password", "passwd", "secret", "apikey", "api_key", "api-key"]
        .iter()
        .any(|s| name.contains(s))
        || ["key", "sig", "signature", "auth", "authorization"].contains(&name.as_str())
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

/// A PostgreSQL key=value DSN (`host=db password=s3cret`) with the value of every `password`
/// replaced by [`MASK`], read as libpq and tokio-postgres read it: spaces around `=`, values
/// in single quotes (with `\'` and `\\` escapes) or bare up to whitespace; an unterminated
/// quote hides the rest. Everything else is left exactly as given.
pub fn redact_conninfo(text: &str) -> String {
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
    let (mut copied, mut i) = (0, skip_space(0));
    while i < bytes.len() {
        let key_start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &text[key_start..i];
        let eq = skip_space(i);
        if bytes.get(eq) != Some(&b'=') {
            // Not `key=value`: the driver refuses it; nothing here to hide.
            i = skip_space(i);
            continue;
        }
        let start = skip_space(eq + 1);
        let end = value_end(start).min(bytes.len());
        if key == "password" {
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
    use super::redact_url;

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

    /// docs/serve.md: what `serve` logs of a query string. The five names docs/serve.md lists, in any case
    /// and percent-encoded, lose their values; everything else stays as sent.
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
            ("monkey=1&keys=2&x=token", "monkey=1&keys=2&x=token"),
            ("token=&key", "token=&key"),
            ("token=a=b", "token=***"),
            ("%zz=1&%7=2&%", "%zz=1&%7=2&%"),
            ("", ""),
        ] {
            assert_eq!(masked(query), format!("GET /v1/retry-policies?{want}"), "{query}");
        }
    }
}
