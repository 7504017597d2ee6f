//! clap's own refusals (an unknown flag, a value not among a flag's choices, a value missing,
//! two flags that exclude each other) in the house's words, as every other error of retryctl
//! says things (docs/cli.md "Errors"): each flag, value and subcommand in backticks,
//! not clap's 'single quotes', and a number refused with what was expected rather than Rust's
//! parse error ("invalid digit found in string").
//!
//! clap renders the message (its layout, its usage line and its suggestions stay); this
//! rewrites the quotes around the strings the error itself names, and the few of clap's own
//! words that quote (`'--help'`, a tip's `'-- VALUE'`). A value with a quote of its own keeps
//! it; a quote clap writes around anything else is left as it is rather than guessed at.
//!
//! Owns: the text of a clap error written to stderr. Must not: change which errors clap
//! raises, their exit code, or `--help` and `--version` (written to stdout as clap renders
//! them).

use std::num::{IntErrorKind, ParseFloatError, ParseIntError};

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// `error`'s message as `main` writes it to stderr, ending in a line break; `None` for the
/// help a verb without its subcommand shows, which is written as clap writes its `--help`.
pub fn house_words(error: &clap::Error) -> Option<String> {
    if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return None;
    }
    let named = named_strings(error);
    let mut text = plain(&error.render().ansi().to_string(), &named);
    if let Some(why) = number_refused(error) {
        if let Some(source) = std::error::Error::source(error) {
            text = text.replacen(&format!(": {source}"), &format!(": {why}"), 1);
        }
    }
    for named in named {
        // Shown as the house shows a value: a line break in it, `\n`, not a line of its own.
        let shown = crate::diag::shown(&named);
        text = text.replace(&format!("'{named}'"), &format!("`{shown}`"));
        // A tip: "to pass '-1' as a value, use '-- -1'" (and after a verb's name).
        let tail = format!("-- {shown}'");
        text = text.replace(&format!("-- {named}'"), &tail);
        while let Some(end) = text.find(&tail) {
            let Some(start) = text[..end].rfind('\'') else { break };
            let end = end + tail.len() - 1;
            text.replace_range(end..=end, "`");
            text.replace_range(start..=start, "`");
        }
    }
    for word in ["--help", "--", "-h"] {
        text = text.replace(&format!("'{word}'"), &format!("`{word}`"));
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Some(text)
}

/// clap's rendering `ansi` without its styles (the colours of a terminal): the SGR
/// sequences clap writes around its words, taken out, and the strings the error names kept
/// whole. clap's own plain text strips every escape sequence, the user's too: a value of
/// `a\x1b[31mb` read `ab`, a value the user did not give. Kept, it is escaped where it is
/// written, as every error's values are.
fn plain(ansi: &str, named: &[String]) -> String {
    // Each named string with an escape of its own stands aside as a mark no text holds
    // (Unicode's noncharacters), while clap's sequences go.
    let held: Vec<&String> = named.iter().filter(|s| s.contains('\x1b')).collect();
    let mark = |i: usize| format!("\u{FDD0}{i}\u{FDD1}");
    let mut text = ansi.to_string();
    for (i, s) in held.iter().enumerate() {
        text = text.replace(s.as_str(), &mark(i));
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let params = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        if after[params..].starts_with('m') {
            rest = &after[params + 1..];
        } else {
            // Not a style: kept, to be escaped where it is written.
            out.push_str("\x1b[");
            rest = after;
        }
    }
    out.push_str(rest);
    for (i, s) in held.iter().enumerate() {
        out = out.replace(&mark(i), s);
    }
    out
}

/// What a number flag expected, when `error` is its value refused by Rust's parse or by
/// clap's range ("5 is not in 1..=4"): said as the house says it.
fn number_refused(error: &clap::Error) -> Option<String> {
    if error.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let source = std::error::Error::source(error)?;
    if let Some(parse) = source.downcast_ref::<ParseIntError>() {
        return Some(
            match parse.kind() {
                IntErrorKind::PosOverflow => "too large",
                IntErrorKind::NegOverflow => "too small",
                IntErrorKind::Zero => "expected a whole number above 0",
                _ => "expected a whole number",
            }
            .to_string(),
        );
    }
    if source.is::<ParseFloatError>() {
        return Some("expected a number".to_string());
    }
    // clap's ranged integers: "{value} is not in {low}..={high}".
    let text = source.to_string();
    let (_, range) = text.split_once(" is not in ")?;
    let (low, high) = range.split_once("..=")?;
    let whole = |s: &str| !s.is_empty() && s.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit());
    (whole(low) && whole(high)).then(|| format!("expected a whole number from {low} to {high}"))
}

/// The flags, values and subcommands `error` names, longest first (so that a name inside
/// another, `--from` in `--from <TIME>`, is not rewritten inside it).
fn named_strings(error: &clap::Error) -> Vec<String> {
    let mut named = Vec::new();
    for (kind, value) in error.context() {
        let user_or_flag = matches!(
            kind,
            ContextKind::InvalidArg
                | ContextKind::PriorArg
                | ContextKind::InvalidValue
                | ContextKind::InvalidSubcommand
                | ContextKind::SuggestedArg
                | ContextKind::SuggestedSubcommand
                | ContextKind::SuggestedValue
        );
        if !user_or_flag {
            continue;
        }
        match value {
            ContextValue::String(s) => named.push(s.clone()),
            ContextValue::Strings(all) => named.extend(all.iter().cloned()),
            _ => {}
        }
    }
    named.retain(|s| !s.is_empty());
    named.sort_by_key(|s| std::cmp::Reverse(s.len()));
    named.dedup();
    named
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::command;

    fn refused(line: &str) -> String {
        let args: Vec<&str> = line.split(' ').collect();
        match command().try_get_matches_from(args) {
            Ok(_) => panic!("{line} parsed"),
            Err(e) => house_words(&e).expect("a refusal, not a help"),
        }
    }

    /// Each kind of refusal the verbs' flags give, in backticks, with clap's layout kept.
    #[test]
    fn clap_refusals_name_flags_and_values_in_backticks() {
        assert_eq!(
            refused("retryctl simulate --contention maybe"),
            "error: invalid value `maybe` for `--contention <MODE>`\n  [possible values: auto, on, off]\n\nFor more information, try `--help`.\n"
        );
        assert_eq!(
            refused("retryctl tune --max-lost abc"),
            "error: invalid value `abc` for `--max-lost <N>`: expected a whole number\n\nFor more information, try `--help`.\n"
        );
        assert_eq!(
            refused("retryctl tune --max-lost 99999999999999999999999"),
            "error: invalid value `99999999999999999999999` for `--max-lost <N>`: too large\n\nFor more information, try `--help`.\n"
        );
        // A negative number reaches the flag's parser (not "unexpected argument `-1`").
        assert_eq!(
            refused("retryctl tune --max-lost -1"),
            "error: invalid value `-1` for `--max-lost <N>`: expected a whole number\n\nFor more information, try `--help`.\n"
        );
        assert_eq!(
            refused("retryctl simulate --global-max-retries 99999999999"),
            "error: invalid value `99999999999` for `--global-max-retries <N>`: expected a whole number from 0 to 4294967295\n\nFor more information, try `--help`.\n"
        );
        assert_eq!(
            refused("retryctl suggest --futile abc"),
            "error: invalid value `abc` for `--futile <P>`: expected a number\n\nFor more information, try `--help`.\n"
        );
        assert_eq!(
            refused("retryctl simulate --history"),
            "error: a value is required for `--history <PATH>` but none was supplied\n\nFor more information, try `--help`.\n"
        );
        let unexpected = refused("retryctl get rp -1");
        assert!(
            unexpected
                .starts_with("error: unexpected argument `-1` found\n\n  tip: to pass `-1` as a value, use `-- -1`\n"),
            "{unexpected}"
        );
        let similar = refused("retryctl get rp --outpt json");
        assert!(
            similar.starts_with(
                "error: unexpected argument `--outpt` found\n\n  tip: a similar argument exists: `--output`\n"
            ),
            "{similar}"
        );
        assert!(refused("retryctl bogus").starts_with("error: unrecognized subcommand `bogus`\n"));
        let conflict = refused("retryctl serve --db x --in-memory");
        assert!(
            conflict.starts_with("error: the argument `--db <PATH>` cannot be used with `--in-memory`\n"),
            "{conflict}"
        );
    }

    /// A value with a quote of its own, a terminal's escape or a line break is shown whole,
    /// escaped as every error's values are; no quote of clap's is left around a string the error names.
    #[test]
    fn a_value_with_a_quote_or_an_escape_is_shown_whole() {
        let tail =
            " for `--contention <MODE>`\n  [possible values: auto, on, off]\n\nFor more information, try `--help`.\n";
        assert_eq!(
            refused("retryctl simulate --contention it's"),
            format!("error: invalid value `it's`{tail}")
        );
        assert_eq!(
            refused("retryctl simulate --contention a\x1b[31mb"),
            format!("error: invalid value `a\\x1b[31mb`{tail}")
        );
        assert_eq!(
            refused("retryctl simulate --contention a\nb"),
            format!("error: invalid value `a\\x0ab`{tail}")
        );
    }

    /// clap's styles go, whatever else holds an escape.
    #[test]
    fn only_styles_are_taken_out() {
        let named = ["v\x1b[1mw".to_string()];
        assert_eq!(
            plain(
                "\x1b[1m\x1b[31merror:\x1b[0m '\x1b[33mv\x1b[1mw\x1b[0m' \x1b[2J",
                &named
            ),
            "error: 'v\x1b[1mw' \x1b[2J"
        );
    }

    /// The help a verb without its subcommand shows is left to clap, as its `--help` is.
    #[test]
    fn a_verbs_help_is_not_rewritten() {
        let help = command().try_get_matches_from(["retryctl"]).unwrap_err();
        assert_eq!(house_words(&help), None, "a verb's help is clap's");
    }
}
