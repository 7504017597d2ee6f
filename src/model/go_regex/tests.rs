//! `to_rust` against Go's own expectations, row by row.
//!
//! Go's rows are from `src/regexp/syntax/parse_test.go` at golang/go commit `0657e5d4a8a7`
//! (`parseTests`, `invalidRegexps`, `onlyPerl`, `onlyPOSIX`, parsed there with the flags
//! `regexp.Compile` uses, `Perl`, or `MatchNL | PerlX | UnicodeGroups`), and Go's words from
//! `src/regexp/syntax/parse.go` at commit `08459da00e99` (the error codes and which text each
//! quotes: `parseRepeat`, `parseInt`, `repeat`, `repeatIsValid`, `parsePerlFlags`,
//! `parseEscape`, `parseUnicodeClass`, `parseClass`), both of the Go 1.25 line or later (they
//! read 1.25's Unicode names, `\p{Letter}`). A row Go's test holds is marked `parse_test`;
//! the others are read off `parse.go` by the function named.

use super::*;
use crate::model::validate::{compile_pattern, MAX_PATTERN_BYTES};

/// The `regex` crate's reading of what `to_rust` wrote, as the rules' matcher builds it.
fn go(p: &str) -> regex::Regex {
    let rust = to_rust(p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
    regex::RegexBuilder::new(&rust)
        .nest_limit(NEST_LIMIT)
        .size_limit(1 << 30)
        .build()
        .unwrap_or_else(|e| panic!("{p:?} written as {rust:?}: {e}"))
}

/// `parse_test`'s `parseTests` (and `TestParseSimple`'s flags, which `regexp.Compile`'s differ
/// from only in `.` and `[^…]` matching `\n`): every one parses.
const GO_PARSES: &[&str] = &[
    "a",
    "a.",
    "a.b",
    "ab",
    "a.b.c",
    "abc",
    "a|^",
    "a|b",
    "(a)",
    "(a)|b",
    "a*",
    "a+",
    "a?",
    "a{2}",
    "a{2,3}",
    "a{2,}",
    "a*?",
    "a+?",
    "a??",
    "a{2}?",
    "a{2,3}?",
    "a{2,}?",
    "x{1001",
    "x{9876543210",
    "x{9876543210,",
    "x{2,1",
    "x{1,9876543210",
    "",
    "|",
    "|x|",
    ".",
    "^",
    "$",
    r"\|",
    r"\(",
    r"\)",
    r"\*",
    r"\+",
    r"\?",
    "{",
    "}",
    r"\.",
    r"\^",
    r"\$",
    r"\\",
    "[ace]",
    "[abc]",
    "[a-z]",
    "[a]",
    r"\-",
    "-",
    r"\_",
    "abc|def",
    "abc|def|ghi",
    "[[:lower:]]",
    "[^[:lower:]]",
    "[[:^lower:]]",
    "(?i)[[:lower:]]",
    "(?i)[a-z]",
    "(?i)[^[:lower:]]",
    "(?i)[[:^lower:]]",
    r"\d",
    r"\D",
    r"\s",
    r"\S",
    r"\w",
    r"\W",
    r"(?i)\w",
    r"(?i)\W",
    r"[^\\]",
    r"\p{Braille}",
    r"\P{Braille}",
    r"\p{^Braille}",
    r"\P{^Braille}",
    r"\pZ",
    r"[\p{Braille}]",
    r"[\P{Braille}]",
    r"[\p{^Braille}]",
    r"[\P{^Braille}]",
    r"[\pZ]",
    r"\p{Lu}",
    r"\p{Uppercase_Letter}",
    r"\p{upper case-let ter}",
    r"\p{__upper case-let ter}",
    r"\p{Canadian_Aboriginal}",
    r"[\p{Lu}]",
    r"(?i)[\p{Lu}]",
    r"\p{Any}",
    r"\p{^Any}",
    r"(?i)\p{ascii}",
    r"\p{Assigned}",
    r"\p{^Assigned}",
    r"[\012-\234]\141",
    r"[\x{41}-\x7a]\x61",
    "a{,2}",
    r"\.\^\$\\",
    "[a-zABC]",
    "[^a]",
    "[α-ε☺]",
    "a*{",
    "(?:ab)*",
    "(ab)*",
    "ab|cd",
    "a(b|c)d",
    "(?:a)",
    "(?:ab)(?:cd)",
    "(?:a+b+)(?:c+d+)",
    "(?:a+|b+)|(?:c+|d+)",
    "(?:a|b)|(?:c|d)",
    "a|.",
    ".|a",
    "(?:[abc]|A|Z|hello|world)",
    "(?:[abc]|A|Z)",
    r"\Q+|*?{[\E",
    r"\Q+\E+",
    r"\Qab\E+",
    r"\Q\\E",
    r"\Q\\\E",
    "(?m)^",
    "(?m)$",
    "(?-m)^",
    "(?-m)$",
    r"(?m)\A",
    r"(?m)\z",
    r"(?-m)\A",
    r"(?-m)\z",
    "(?P<name>a)",
    "(?<name>a)",
    "[Aa]",
    r"[\x{100}\x{101}]",
    "[Δδ]",
    "abcde",
    "[Aa][Bb]cd",
    "abc|abd|aef|bcx|bcy",
    "ax+y|ax+z|ay+w",
    "(?:.)",
    "(?:x|(?:xa))",
    "(?:.|(?:.a))",
    "(?:A(?:A|a))",
    "(?:A|a)",
    "A|(?:A|a)",
    "(?s).",
    "(?-s).",
    "(?:(?:^).)",
    "(?-s)(?:(?:^).)",
    r"[\s\S]a",
    "abc|abd",
    "a(?:b)c|abd",
    "abc|x|abd",
    "(?i)abc|ABD",
    "[ab]c|[ab]d",
    ".c|.d",
    "x{2}|x{2}[0-9]",
    "x{2}y|x{2}[0-9]y",
    "a.*?c|a.*?b",
    "((((((((((x{2}){2}){2}){2}){2}){2}){2}){2}){2}))",
    "((((((((((x{1}){2}){2}){2}){2}){2}){2}){2}){2}){2})",
    "(?:[a-z]{4}){0,250}",
    // `onlyPerl`: Perl's syntax, which `regexp.Compile` reads.
    "[a-b-c]",
    r"\Qabc\E",
    r"\Q*+?{[\E",
    r"\Q\\E",
    r"\Q\\\E",
    r"\Q\\\\E",
    r"\Q\\\\\E",
];

/// `parse_test`'s `invalidRegexps` (refused under `Perl`) and `onlyPOSIX` (refused under
/// `Perl`, stacked repetitions), less the rows of invalid UTF-8, which a Rust `&str` (and so a
/// decoded YAML document) cannot hold.
const GO_REFUSES: &[&str] = &[
    "(",
    ")",
    "(a",
    "a)",
    "(a))",
    "(a|b|",
    "a|b|)",
    "(a|b|))",
    "(a|b",
    "a|b)",
    "(a|b))",
    "[a-z",
    "([a-z)",
    "[a-z)",
    "([a-z]))",
    "x{1001}",
    "x{9876543210}",
    "x{2,1}",
    "x{1,9876543210}",
    "(?P<name>a",
    "(?P<name>",
    "(?P<name",
    "(?P<x y>a)",
    "(?P<>a)",
    "(?<name>a",
    "(?<name>",
    "(?<name",
    "(?<x y>a)",
    "(?<>a)",
    "[a-Z]",
    "(?i)[a-Z]",
    r"\Q\E*",
    "a{100000}",
    "a{100000,}",
    "((((((((((x{2}){2}){2}){2}){2}){2}){2}){2}){2}){2})",
    "(?:[a-z]{4}){0,251}",
    "a++",
    "a**",
    "a?*",
    "a+*",
    "a{1}*",
    ".{1}{2}.{3}",
];

#[test]
fn what_go_parses_is_read_and_what_it_refuses_is_refused() {
    for p in GO_PARSES {
        go(p);
        assert!(compile_pattern(p).is_ok(), "{p:?}: {:?}", compile_pattern(p));
    }
    for p in GO_REFUSES {
        assert!(to_rust(p).is_err(), "{p:?} read as {:?}", to_rust(p));
        assert!(compile_pattern(p).is_err(), "{p:?}");
    }
}

/// `parse_test`'s generated rows: nesting up to Go's `maxHeight` (1,000), and programs past
/// its `maxSize`. All are longer than the 1,024 bytes a rule's pattern may have, so
/// `compile_pattern` refuses every one of them for that first; `to_rust` answers as Go does.
#[test]
fn gos_nesting_and_size_limits() {
    let nested = |open: &str, close: &str, n| format!("{}{}", open.repeat(n), close.repeat(n));
    for p in [
        nested("(", ")", 999),
        nested("(?:", ")*", 999),
        format!("({})", "|".repeat(12345)),
    ] {
        assert!(to_rust(&p).is_ok(), "{}…: {:?}", &p[..20], to_rust(&p).err());
        assert!(p.len() > MAX_PATTERN_BYTES);
    }
    for (p, words) in [
        (nested("(", ")", 1000), "expression nests too deeply"),
        (nested("(?:", ")*", 1000), "expression nests too deeply"),
        (format!("({}){{1000}}", "(xx?)".repeat(1000)), "expression too large"),
        ("(xx?){1000}".repeat(1000), "expression too large"),
    ] {
        let refused = to_rust(&p).unwrap_err();
        assert!(refused.starts_with(&format!("{words}: `")), "{refused}");
        assert!(compile_pattern(&p)
            .unwrap_err()
            .contains("bytes, at most 1024 are allowed"));
    }
    // `\pL` 27,000 times (Go: "too many runes", `maxRunes`) is 81,000 bytes: the byte cap
    // refuses it long before, and no pattern within the cap holds a tenth of Go's runes.
    let runes = r"\pL".repeat(27000);
    assert!(compile_pattern(&runes)
        .unwrap_err()
        .contains("bytes, at most 1024 are allowed"));
}

/// The patterns of docs/categorizer.md and others around them, with what Go answers: read (`Ok`) or
/// refused with these words (`regexp.Compile`'s error less `error parsing regexp: `).
#[test]
fn gos_words_for_what_it_refuses() {
    let rows: &[(&str, Result<(), &str>)] = &[
        // parseInt: "Disallow leading zeros": parseRepeat fails and `{` is a literal.
        ("a{01}", Ok(())),
        ("a{00}", Ok(())),
        ("a{1,02}", Ok(())),
        ("a{01,2}", Ok(())),
        ("a{0}", Ok(())),
        ("a{0,0}", Ok(())),
        // parsePerlFlags: a flag repeated, set and cleared, none at all.
        ("(?ii)a", Ok(())),
        ("(?i-i)a", Ok(())),
        ("(?)a", Ok(())),
        ("(?i-m:a)", Ok(())),
        // parseUnicodeClass: "\p{^Han} == \P{Han}".
        (r"\p{^Greek}", Ok(())),
        (r"\P{^Greek}", Ok(())),
        (r"[\p{^Greek}]", Ok(())),
        // repeat: a repetition applies to what is on the stack, whatever read nothing since.
        ("^*", Ok(())),
        (r"\b+", Ok(())),
        ("a(?i)*", Ok(())),
        (r"a\Q\E*", Ok(())),
        ("a*(?i)*", Ok(())),
        ("(?:a*)*", Ok(())),
        ("x{2}{,3}", Ok(())),
        // parsePerlFlags: any name of `[A-Za-z0-9_]+`, twice too.
        ("(?P<1a>x)", Ok(())),
        ("(?P<n>x)(?P<n>y)", Ok(())),
        // repeatIsValid: the counts multiplied down a path, `{0}` ending it.
        ("(?:a{2}){500}", Ok(())),
        ("((a{600}){0}){2}", Ok(())),
        // parseEscape: any ASCII punctuation, space and control characters included.
        (r"\ \	\<\_", Ok(())),
        (r"\x{D800}", Ok(())),
        (r"[\x{D7FF}-\x{E000}]", Ok(())),
        // repeat: "a** is a syntax error, not a doubled star"; the text quoted runs from the
        // first operator to the end of the second (with its `?`).
        ("a**", Err("invalid nested repetition operator: `**`")),
        ("a{2}{3}", Err("invalid nested repetition operator: `{2}{3}`")),
        ("a*??", Err("invalid nested repetition operator: `*??`")),
        ("a+?+", Err("invalid nested repetition operator: `+?+`")),
        ("(a)??{2}", Err("invalid nested repetition operator: `??{2}`")),
        // repeat: nothing to repeat at the start, after `(` or `|`.
        ("*", Err("missing argument to repetition operator: `*`")),
        ("a|+?", Err("missing argument to repetition operator: `+?`")),
        ("(?i)*", Err("missing argument to repetition operator: `*`")),
        ("(?:{2})", Err("missing argument to repetition operator: `{2}`")),
        (r"\Q\E*", Err("missing argument to repetition operator: `*`")),
        // parse's `{` case (counts past 1,000 or reversed) and repeatIsValid (products).
        ("a{1001}", Err("invalid repeat count: `{1001}`")),
        ("a{2,1}", Err("invalid repeat count: `{2,1}`")),
        ("a{1,9876543210}", Err("invalid repeat count: `{1,9876543210}`")),
        ("a*{1001}", Err("invalid repeat count: `{1001}`")),
        ("(a{2}){501}", Err("invalid repeat count: `{501}`")),
        ("(?:[a-z]{4}){0,251}?", Err("invalid repeat count: `{0,251}?`")),
        // parsePerlFlags: the text quoted ends at the character that is wrong.
        ("(?x)a", Err("invalid or unsupported Perl syntax: `(?x`")),
        ("(?i-)a", Err("invalid or unsupported Perl syntax: `(?i-)`")),
        ("(?-)a", Err("invalid or unsupported Perl syntax: `(?-)`")),
        ("(?--i)a", Err("invalid or unsupported Perl syntax: `(?--`")),
        ("(?i", Err("invalid or unsupported Perl syntax: `(?i`")),
        ("(?P=n)", Err("invalid or unsupported Perl syntax: `(?P`")),
        ("(?P<x y>a)", Err("invalid named capture: `(?P<x y>`")),
        ("(?<>a)", Err("invalid named capture: `(?<>`")),
        ("(?P<name", Err("invalid named capture: `(?P<name`")),
        // parseEscape.
        (r"\8", Err(r"invalid escape sequence: `\8`")),
        (r"\1", Err(r"invalid escape sequence: `\1`")),
        (r"\C", Err(r"invalid escape sequence: `\C`")),
        (r"\e", Err(r"invalid escape sequence: `\e`")),
        (r"\x{110000}", Err(r"invalid escape sequence: `\x{110000`")),
        (r"\x{}", Err(r"invalid escape sequence: `\x{}`")),
        (r"\xg1", Err(r"invalid escape sequence: `\xg1`")),
        (r"[\b]", Err(r"invalid escape sequence: `\b`")),
        (r"[\Q]\E]", Err(r"invalid escape sequence: `\Q`")),
        // parseClass and parseUnicodeClass: a reversed range, a name Go does not know.
        ("[z-a]", Err("invalid character class range: `z-a`")),
        ("[a--]", Err("invalid character class range: `a--`")),
        ("[[:foo:]]", Err("invalid character class range: `[:foo:]`")),
        (
            r"\p{Alphabetic}",
            Err(r"invalid character class range: `\p{Alphabetic}`"),
        ),
        (r"\p{sc=Greek}", Err(r"invalid character class range: `\p{sc=Greek}`")),
        (r"\pX", Err(r"invalid character class range: `\pX`")),
        (r"\p{Greek", Err(r"invalid character class range: `\p{Greek`")),
        // The words retryctl has always given for these (docs/categorizer.md).
        ("(a", Err("unclosed group")),
        ("a)", Err("unopened group")),
        ("[a", Err("unclosed character class")),
        ("a\\", Err("trailing backslash at end of expression")),
    ];
    for (p, go_says) in rows {
        match go_says {
            Ok(()) => {
                go(p);
                compile_pattern(p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            }
            Err(words) => {
                assert_eq!(to_rust(p).as_ref().map_err(String::as_str), Err(*words), "{p:?}");
                assert_eq!(
                    compile_pattern(p).unwrap_err(),
                    format!("invalid regular expression {}: {words}", crate::diag::quote(p))
                );
            }
        }
    }
}

/// What Go's `MatchString` answers on what it reads (the `Dump` column of `parse_test` where it
/// shows it, else the semantics of `parse.go` named).
#[test]
fn what_is_read_matches_as_go_matches() {
    let rows: &[(&str, &str, bool)] = &[
        // Leading zeros: the braces are text (parseInt).
        ("^a{01}$", "a{01}", true),
        ("^a{01}$", "a", false),
        ("^a{00}$", "a{00}", true),
        ("^a{00}$", "", false),
        ("^a{1,02}$", "a{1,02}", true),
        ("^a{0}$", "", true),
        // parse_test: `a{,2}` is `str{a{,2}}`; `a*{` is `cat{star{lit{a}}lit{{}}`.
        ("^a{,2}$", "a{,2}", true),
        ("^a*{$", "aa{", true),
        ("^x{2}{,3}$", "xx{,3}", true),
        // Flags: the last word on a flag wins (parsePerlFlags).
        ("(?ii)a", "A", true),
        ("(?i-i)a", "A", false),
        ("(?i-i)a", "a", true),
        ("(?)a", "a", true),
        // Flags last to the end of their group, across `|` (parse keeps them at `|`, restores
        // them at `)`).
        ("^(?:x(?i)y|z)$", "Z", true),
        ("^(a(?i)b)c$", "aBc", true),
        ("^(a(?i)b)c$", "aBC", false),
        ("^a(?i)+$", "aa", true),
        ("^a(?i)+$", "AA", false),
        // parse_test: `\p{^Braille}` is `\P{Braille}`, `\p{^Any}` the empty class.
        (r"^\p{^Greek}$", "a", true),
        (r"^\p{^Greek}$", "α", false),
        (r"^\P{^Greek}$", "α", true),
        (r"^[\p{^Greek}]$", "α", false),
        (r"\p{^Any}", "a", false),
        (r"^\p{Any}$", "\n", true),
        (r"^\pZ$", "\u{a0}", true),
        // parse_test: `(?i)\w` holds U+017F and U+212A, `(?i)\W` and `(?i)[^[:lower:]]` do not.
        (r"^(?i)\w$", "\u{17f}", true),
        (r"^(?i)\w$", "\u{212a}", true),
        (r"^(?i)\W$", "\u{17f}", false),
        (r"^(?i)[\W]$", "\u{212a}", false),
        (r"^(?i)[^[:lower:]]$", "\u{17f}", false),
        (r"^(?i)[[:^lower:]]$", "\u{17f}", false),
        (r"^[[:^alpha:]]$", "é", true),
        (r"^[[:word:]]+$", "a_1", true),
        // parse_test: `[^a]` with `regexp.Compile`'s ClassNL matches `\n`; `.` does not.
        ("^[^a]$", "\n", true),
        ("^.$", "\n", false),
        ("(?s)^.$", "\n", true),
        // parse_test: `\Q+\E+` is `plus{lit{+}}`, `\Qab\E+` is `cat{lit{a}plus{lit{b}}}`.
        (r"^\Q+\E+$", "+++", true),
        (r"^\Qab\E+$", "abb", true),
        (r"^\Qab\E+$", "abab", false),
        (r"^a\Q\E*$", "aaa", true),
        // Octal and hex (parse_test: `[\012-\234]\141`, `[\x{41}-\x7a]\x61`).
        (r"^[\012-\234]\141$", "\u{9c}a", true),
        (r"^[\x{41}-\x7a]\x61$", "Za", true),
        // A surrogate is a rune no text holds: it matches nothing, and a range around it the
        // characters on either side.
        (r"\x{D800}", "\u{fffd}", false),
        (r"^[\x{D7FF}-\x{E000}]$", "\u{e000}", true),
        (r"^[^\x{D800}]$", "\n", true),
        // `[`, `&&`, `--`, `~~` in a class are themselves; `-` last is a member.
        (r"^[a&&b]+$", "a&b", true),
        (r"^[[a]+$", "[a", true),
        (r"^[+--]+$", "+,-", true),
        (r"^[a-]+$", "-a", true),
        (r"^[]a]+$", "]a", true),
        // Anchors repeated (parse: `^` is an op like any other): `^*a` finds `a` anywhere.
        ("^*a", "ba", true),
        // Stacked simple repetitions read as one (`(a+)?` is `a*`).
        ("^(?:a+)?$", "", true),
        ("^(?:a+)?$", "aaa", true),
        ("^(?:(?:ab)+)+$", "abab", true),
        ("^(?:(?:ab)+)+$", "aba", false),
        // `\b` is ASCII.
        (r"é\b", "café bar", false),
        (r"f\b", "café", true),
        // `$` without `m` is the end of the text only.
        ("a$", "a\n", false),
        ("(?m)a$", "a\nb", true),
    ];
    for &(p, text, go_says) in rows {
        assert_eq!(
            go(p).is_match(text),
            go_says,
            "{p:?} on {text:?}: written {:?}",
            to_rust(p)
        );
    }
}

/// groups nested 300 deep are read (the `regex` crate's own nesting limit, 250, would
/// refuse them), and the most deeply nested patterns within the byte cap compile on a thread of
/// the default 2 MiB stack (the replay's workers, the server's): no recursion of the parser or
/// the crate's compiler overflows it. (The engines' own builds: `engine::matcher`'s test
/// `deep_patterns_build_every_engine_on_a_small_stack`.)
#[test]
fn deep_patterns_within_the_cap_compile_on_a_small_stack() {
    for (p, text) in deep_patterns() {
        assert!(p.len() <= MAX_PATTERN_BYTES, "{}", p.len());
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let re = compile_pattern(&p).unwrap_or_else(|e| panic!("{e}"));
                assert!(re.is_match(&text), "{p}");
            })
            .unwrap()
            .join()
            .unwrap();
    }
}

/// Patterns nested as deep as 1,024 bytes allow, each with a text it matches: 300 groups
/// a group, an alternation and a concatenation a level (`(a|b(a|b(…)))`, which
/// the writing keeps as nested as written); counted repetitions of groups.
pub(crate) fn deep_patterns() -> Vec<(String, String)> {
    let levels = (MAX_PATTERN_BYTES - 1) / 5;
    let counted = (MAX_PATTERN_BYTES - 1) / 8;
    vec![
        (format!("{}a{}", "(".repeat(300), ")".repeat(300)), "a".to_string()),
        (
            format!("{}c{}", "(a|b".repeat(levels), ")".repeat(levels)),
            "bba".to_string(),
        ),
        (
            format!("{}a{}", "(?:b".repeat(counted), "){1}".repeat(counted)),
            format!("{}a", "b".repeat(counted)),
        ),
    ]
}

#[test]
fn perl_classes_are_ascii() {
    assert!(!go(r"\d").is_match("٣"));
    assert!(go(r"\d").is_match("3"));
    assert!(!go(r"\w").is_match("é"));
    assert!(go(r"^\W$").is_match("é"));
    assert!(!go(r"\s").is_match("\u{a0}"));
    assert!(!go(r"\s").is_match("\u{0b}"), "Go's \\s has no \\v");
    assert!(go(r"^\S$").is_match("\u{a0}"));
    assert!(go(r"^[\d.]+$").is_match("1.2"));
    assert!(!go(r"^[\d.]+$").is_match("١.٢"));
    assert!(go(r"^[^\d]+$").is_match("١"));
    assert!(go(r"^[\D]$").is_match("١"));
    assert!(!go(r"^[\D]$").is_match("1"));
}

#[test]
fn word_boundaries_are_ascii() {
    // Go: `é` is no word character, so there is no boundary between it and a space…
    assert!(!go(r"é\b").is_match("café bar"));
    // …and there is one between `f` and `é`.
    assert!(go(r"f\b").is_match("café"));
    assert!(go(r"é\B ").is_match("café bar"));
}

#[test]
fn go_literals_stay_literals() {
    assert!(go(r"\[Errno \<n\>\]").is_match("[Errno <n>]"));
    assert!(go(r"[a&&b]").is_match("&"));
    assert!(go(r"[[a]").is_match("["));
    assert!(go(r"a{x}").is_match("a{x}"));
    assert!(go(r"a{,2}").is_match("a{,2}"));
    assert!(go(r"^a{2}$").is_match("aa"));
    assert!(go(r"\Q.*+\E").is_match("a.*+b"));
    assert!(!go(r"\Q.*+\E").is_match("ab"));
    assert!(go(r"^[[:alpha:]]+$").is_match("abc"));
    assert!(go(r"^\101\0$").is_match("A\0"));
}

/// A pattern without a metacharacter is its own writing, borrowed.
#[test]
fn plain_text_is_borrowed() {
    assert!(matches!(to_rust("CUDA error 7 on device-0"), Ok(Cow::Borrowed(_))));
    assert!(matches!(to_rust("CUDA.*"), Ok(Cow::Owned(_))));
}
