//! A command line of a guide's `console,ignore` block, split as a POSIX shell splits it, for
//! the tests that run such a block for real (tune.rs, route.rs): blanks between words,
//! `'…'` and `"…"` quoted, the variables the test names expanded inside double quotes, and
//! `> FILE` at the end of the line. Anything else a shell would read differently (an
//! unquoted variable or glob character, a pipe, another variable) fails the test: the
//! guide's line must run as typed.

/// A command line: its words, and the file its stdout goes to (`> FILE`).
#[derive(Debug, PartialEq)]
pub struct CommandLine {
    pub words: Vec<String>,
    pub stdout_to: Option<String>,
}

/// `line` split into words, `$NAME` in double quotes replaced by its value in `vars`.
pub fn command_line(line: &str, vars: &[(&str, &str)]) -> CommandLine {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut redirect = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' => words.extend(word.take()),
            '\'' | '"' => {
                let quoted: String = chars.by_ref().take_while(|&q| q != c).collect();
                let quoted = if c == '"' {
                    let expanded = vars
                        .iter()
                        .fold(quoted, |q, (name, value)| q.replace(&format!("${name}"), value));
                    assert!(!expanded.contains('$'), "a variable the test does not set in `{line}`");
                    expanded
                } else {
                    quoted
                };
                word.get_or_insert_with(String::new).push_str(&quoted);
            }
            '>' if word.is_none() && !redirect => {
                redirect = true;
                words.push(">".to_string());
            }
            '$' | '*' | '?' | '[' | '`' | '\\' | '|' | '>' | '<' | '&' | ';' => {
                panic!("`{c}` unquoted in `{line}`: a shell would not pass it as typed")
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    let stdout_to = redirect.then(|| {
        let at = words.iter().position(|w| w == ">").unwrap();
        let target = words.split_off(at);
        assert_eq!(target.len(), 2, "`> FILE` ends the line in `{line}`");
        target[1].clone()
    });
    CommandLine { words, stdout_to }
}

#[test]
fn command_lines_split_as_a_shell_splits_them() {
    let split = |l: &str| command_line(l, &[("DB", "postgresql://u:p@h/db")]);
    assert_eq!(
        split(r#"retryctl history --lookout-db "$DB" --vary 'a:b[1]=1..5' > week.jsonl"#),
        CommandLine {
            words: [
                "retryctl",
                "history",
                "--lookout-db",
                "postgresql://u:p@h/db",
                "--vary",
                "a:b[1]=1..5"
            ]
            .map(String::from)
            .to_vec(),
            stdout_to: Some("week.jsonl".to_string()),
        }
    );
    assert_eq!(split("retryctl  apply -f x").words, ["retryctl", "apply", "-f", "x"]);
    assert_eq!(split("retryctl  apply -f x").stdout_to, None);
    assert_eq!(split("a 'x>y' \"p q\"").words, ["a", "x>y", "p q"]);
    for refused in ["a $DB", "a \"$OTHER\"", "a b>c", "a > b c", "a | b", "a > b > c", "a >"] {
        assert!(
            std::panic::catch_unwind(|| split(refused)).is_err(),
            "`{refused}` is not read as typed"
        );
    }
}
