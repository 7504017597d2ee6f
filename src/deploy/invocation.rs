//! A command line as the user gave it: the subcommand and every flag the parse accepted, in
//! the user's order, each with its values and whether they are paths (`commands::emit` reads
//! it off the process's arguments).
//!
//! Owns: [`Invocation`] and [`Flag`]. Must not: read the process's arguments.

/// A command line as parsed: the subcommand and its flags in the order they were given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// `simulate`, `tune`, `suggest`.
    pub command: String,
    pub flags: Vec<Flag>,
}

/// One occurrence of a flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// Its long name without the dashes (`history`); empty for a positional argument.
    pub name: String,
    /// Its values (none for a switch; a delimited list as one value, `a,b`).
    pub values: Vec<String>,
    /// Whether its values are paths.
    pub path: bool,
}

impl Flag {
    /// The command-line words of this flag, `values` in place of its own.
    pub fn words(&self, values: &[String]) -> Vec<String> {
        if self.name.is_empty() {
            return values.to_vec();
        }
        match values {
            // A value that starts with `-` would read as a flag of its own.
            [one] if one.starts_with('-') => vec![format!("--{}={one}", self.name)],
            _ => std::iter::once(format!("--{}", self.name))
                .chain(values.iter().cloned())
                .collect(),
        }
    }
}

/// A `command` line of `flags` (name, values, whether they are paths), for the tests of what
/// is emitted from one.
#[cfg(test)]
pub(crate) fn test_invocation(command: &str, flags: &[(&str, &[&str], bool)]) -> Invocation {
    Invocation {
        command: command.into(),
        flags: flags
            .iter()
            .map(|(n, v, p)| Flag {
                name: n.to_string(),
                values: v.iter().map(|s| s.to_string()).collect(),
                path: *p,
            })
            .collect(),
    }
}
