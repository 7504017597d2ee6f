//! A queue's flags (`create queue`, `update queue`: `--retry-policy`, `--priority-factor`,
//! `--owner`, `--group-owner`, `--label`, `--cordon`) set on a [`Queue`].
//!
//! Owns: what each flag sets. Must not: validate the queue or talk to the server.

use crate::cli::QueueFlags;
use crate::error::CliError;
use crate::model::Queue;

/// Sets the fields whose flags were given; the others keep their values.
pub fn apply_flags(queue: &mut Queue, flags: &QueueFlags) -> Result<(), CliError> {
    if let Some(p) = &flags.retry_policies {
        queue.retry_policies = p
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
    }
    if let Some(f) = flags.priority_factor {
        queue.priority_factor = f;
    }
    if let Some(o) = &flags.owners {
        queue.user_owners = o.clone();
    }
    if let Some(g) = &flags.group_owners {
        queue.group_owners = g.clone();
    }
    if let Some(labels) = &flags.labels {
        queue.labels.clear();
        for l in labels {
            match l.split_once('=') {
                Some((k, v)) if !v.contains('=') => {
                    queue.labels.insert(k.to_string(), v.to_string());
                }
                _ => return Err(CliError::usage(format!("invalid label `{l}`: expected KEY=VALUE"))),
            }
        }
    }
    if let Some(c) = flags.cordon {
        queue.cordoned = c;
    }
    Ok(())
}
