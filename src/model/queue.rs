//! The Queue resource model, with the fields upstream Armada's `Queue` message carries.
//!
//! Owns: the type. Must not: parse, validate, or do I/O.

use std::collections::BTreeMap;

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Queue {
    pub name: String,
    pub priority_factor: f64,
    pub user_owners: Vec<String>,
    pub group_owners: Vec<String>,
    pub labels: BTreeMap<String, String>,
    pub cordoned: bool,
    /// Attached retry policies, in precedence order.
    pub retry_policies: Vec<String>,
    /// Upstream's permission entries, kept so that a queue read from a server round-trips.
    pub permissions: Vec<Permission>,
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            name: String::new(),
            priority_factor: 1.0,
            user_owners: Vec::new(),
            group_owners: Vec::new(),
            labels: BTreeMap::new(),
            cordoned: false,
            retry_policies: Vec::new(),
            permissions: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Permission {
    pub subjects: Vec<Subject>,
    pub verbs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Subject {
    /// `User` or `Group`.
    pub kind: String,
    pub name: String,
}
