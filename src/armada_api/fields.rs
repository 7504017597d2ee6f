//! Which fields of an encoded message the contract does not define: a walk over the protobuf
//! wire format guided by a table build.rs writes from the same descriptors the code is
//! generated from (field numbers, and which fields hold messages).
//!
//! Must not: decode values or judge them (prost does, after); malformed bytes end the walk
//! quietly and are left for prost to report.

/// One message of package `api`.
pub(crate) struct Message {
    /// Full name without the leading dot: `api.Queue.Permissions`.
    pub name: &'static str,
    pub fields: &'static [Field],
}

pub(crate) struct Field {
    pub number: u32,
    /// The JSON name (lowerCamelCase), as field paths say it everywhere else.
    pub name: &'static str,
    /// The index in `MESSAGES` of its message type, for a message-typed field.
    pub message: Option<usize>,
}

include!("generated/fields.rs");

/// Deeper than any message of the contract nests (Queue → limits → pool limits → map entry).
const MAX_DEPTH: usize = 32;

/// A field the contract does not define, found in an encoded message; shown as ``unknown
/// field number `7` of api.RetryRule at rules[0]``.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownField {
    pub number: u32,
    /// The message that holds it (`api.RetryRule`).
    pub message: &'static str,
    /// Where that message is in the one walked (`rules[0]`, `limits[0].value[1]`); empty for
    /// the walked message itself.
    pub path: String,
}

impl UnknownField {
    /// The walked message's own field it lies inside (`rules` for `rules[0]`), by its JSON
    /// name; `None` for a field of the walked message itself.
    pub fn inside(&self) -> Option<&str> {
        self.path.split(['[', '.']).next().filter(|f| !f.is_empty())
    }
}

impl std::fmt::Display for UnknownField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown field number `{}` of {}", self.number, self.message)?;
        if !self.path.is_empty() {
            write!(f, " at {}", self.path)?;
        }
        Ok(())
    }
}

/// The fields, as one text: ``unknown field number `2` of api.RetryRule at rules[0]; …``.
pub fn listed(unknown: &[UnknownField]) -> String {
    let shown: Vec<String> = unknown.iter().map(ToString::to_string).collect();
    shown.join("; ")
}

/// The fields of `bytes`, an encoded `full_name` (`api.RetryPolicy`), that the contract does
/// not define, each as ``unknown field number `N` of api.RetryRule at rules[0]``. Empty for a
/// message the table does not know (a well-known type such as `google.protobuf.Empty` has
/// no fields: any field in it is reported). The tests' entry, shown as text;
/// `armada_api::unknown_fields` calls `unknown_fields_of` with prost's names.
#[cfg(test)]
pub(crate) fn unknown_fields(full_name: &str, bytes: &[u8]) -> Vec<String> {
    let found = MESSAGES.iter().position(|m| m.name == full_name);
    let unknown = check(found, full_name == EMPTY, bytes);
    unknown.iter().map(ToString::to_string).collect()
}

/// The fields of `bytes`, an encoded `package`.`name` (prost's `Name::PACKAGE` and
/// `Name::NAME`), that the contract does not define, without building the full name.
pub(crate) fn unknown_fields_of(package: &str, name: &str, bytes: &[u8]) -> Vec<UnknownField> {
    if bytes.is_empty() {
        return Vec::new();
    }
    let found = MESSAGES.iter().position(|m| {
        m.name
            .strip_prefix(package)
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|rest| rest == name)
    });
    check(found, package == "google.protobuf" && name == "Empty", bytes)
}

/// `google.protobuf.Empty` (prost's `()`): it defines no field at all.
const EMPTY: &str = "google.protobuf.Empty";

fn check(found: Option<usize>, empty: bool, bytes: &[u8]) -> Vec<UnknownField> {
    let mut out = Vec::new();
    match found {
        Some(i) => walk(i, bytes, "", 0, &mut out),
        None if empty => walk_empty(bytes, &mut out),
        None => {}
    }
    out
}

fn walk_empty(bytes: &[u8], out: &mut Vec<UnknownField>) {
    let mut rest = bytes;
    while let Some((number, _, payload_end)) = next_field(rest) {
        out.push(UnknownField {
            number,
            message: EMPTY,
            path: String::new(),
        });
        rest = &rest[payload_end..];
    }
}

fn walk(message: usize, bytes: &[u8], path: &str, depth: usize, out: &mut Vec<UnknownField>) {
    let m = &MESSAGES[message];
    // How many times each repeated message field was seen so far, for `rules[3]`.
    let mut seen: Vec<(u32, usize)> = Vec::new();
    let mut rest = bytes;
    while let Some((number, payload, end)) = next_field(rest) {
        rest = &rest[end..];
        let Some(field) = m.fields.iter().find(|f| f.number == number) else {
            out.push(UnknownField {
                number,
                message: m.name,
                path: path.to_string(),
            });
            continue;
        };
        let (Some(nested), Some(payload)) = (field.message, payload) else {
            continue;
        };
        if depth >= MAX_DEPTH {
            return;
        }
        let n = match seen.iter_mut().find(|(f, _)| *f == number) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                seen.push((number, 0));
                0
            }
        };
        // A singular message field seen twice is merged by protobuf: the index still tells
        // the occurrences apart.
        let child = format!("{}{}[{n}]", if path.is_empty() { "" } else { "." }, field.name);
        walk(nested, payload, &format!("{path}{child}"), depth + 1, out);
    }
}

/// The next field of `bytes`: its number, its payload when length-delimited, and where it
/// ends. `None` at the end, or where the bytes are not well-formed (prost reports those).
fn next_field(bytes: &[u8]) -> Option<(u32, Option<&[u8]>, usize)> {
    let (key, mut at) = varint(bytes)?;
    let number = u32::try_from(key >> 3).ok().filter(|n| *n > 0)?;
    let payload = match key & 7 {
        0 => {
            at += varint(&bytes[at..])?.1;
            None
        }
        1 => {
            at = at.checked_add(8).filter(|e| *e <= bytes.len())?;
            None
        }
        2 => {
            let (len, n) = varint(&bytes[at..])?;
            let start = at + n;
            let end = start
                .checked_add(usize::try_from(len).ok()?)
                .filter(|e| *e <= bytes.len())?;
            at = end;
            Some(&bytes[start..end])
        }
        5 => {
            at = at.checked_add(4).filter(|e| *e <= bytes.len())?;
            None
        }
        // Groups (3, 4) are not proto3; 6 and 7 do not exist.
        _ => return None,
    };
    Some((number, payload, at))
}

/// A base-128 varint and its length in bytes.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, b) in bytes.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::armada_api::api;
    use prost::Message as _;

    /// Appends field `number` as a varint (wire type 0) to `buf`.
    fn extra_varint(buf: &mut Vec<u8>, number: u32, value: u64) {
        prost::encoding::encode_key(number, prost::encoding::WireType::Varint, buf);
        prost::encoding::encode_varint(value, buf);
    }

    #[test]
    fn an_unknown_field_says_which_field_of_the_walked_message_holds_it() {
        let at = |path: &str| UnknownField {
            number: 7,
            message: "api.X",
            path: path.into(),
        };
        assert_eq!(at("").inside(), None);
        assert_eq!(at("rules[0]").inside(), Some("rules"));
        assert_eq!(
            at("resourceLimitsByPriorityClassName[0].value[0]").inside(),
            Some("resourceLimitsByPriorityClassName")
        );
        assert_eq!(
            at("rules[0]").to_string(),
            "unknown field number `7` of api.X at rules[0]"
        );
        assert_eq!(at("").to_string(), "unknown field number `7` of api.X");
        assert_eq!(
            listed(&[at(""), at("rules[1]")]),
            "unknown field number `7` of api.X; unknown field number `7` of api.X at rules[1]"
        );
    }

    #[test]
    fn a_message_of_the_contract_has_no_unknown_fields() {
        let p = api::RetryPolicy {
            name: "p".into(),
            retry_limit: 3,
            default_action: 1,
            rules: vec![api::RetryRule {
                action: 2,
                on_category: "oom".into(),
                on_subcategory: "x".into(),
                mutate: Some(api::RetryMutation {
                    affinity: Some(api::RetryAffinityMutation { avoid_same_node: true }),
                    resources: Some(api::RetryResourceMutation {
                        memory: Some(api::RetryResourceBump {
                            r#static: "1Gi".into(),
                            factor: 1.5,
                        }),
                    }),
                }),
            }],
        };
        assert_eq!(
            unknown_fields("api.RetryPolicy", &p.encode_to_vec()),
            Vec::<String>::new()
        );
        let q = api::Queue {
            name: "q".into(),
            labels: [("a".to_string(), "b".to_string())].into(),
            permissions: vec![api::queue::Permissions {
                subjects: vec![api::queue::permissions::Subject {
                    kind: "User".into(),
                    name: "u".into(),
                }],
                verbs: vec!["submit".into()],
            }],
            ..Default::default()
        };
        assert!(unknown_fields("api.Queue", &q.encode_to_vec()).is_empty());
    }

    #[test]
    fn unknown_fields_are_named_with_their_path_at_any_depth() {
        // A rule with upstream's reserved field 2 (`on_conditions`), in the second rule.
        let rule = |extra: bool| {
            let mut b = api::RetryRule {
                action: 2,
                on_category: "c".into(),
                ..Default::default()
            }
            .encode_to_vec();
            if extra {
                extra_varint(&mut b, 2, 1);
            }
            b
        };
        let mut policy = api::RetryPolicy {
            name: "p".into(),
            ..Default::default()
        }
        .encode_to_vec();
        for r in [rule(false), rule(true)] {
            prost::encoding::bytes::encode(4, &r, &mut policy);
        }
        extra_varint(&mut policy, 99, 7);
        assert_eq!(
            unknown_fields("api.RetryPolicy", &policy),
            vec![
                "unknown field number `2` of api.RetryRule at rules[1]",
                "unknown field number `99` of api.RetryPolicy",
            ]
        );
        let mut empty = Vec::new();
        extra_varint(&mut empty, 1, 1);
        assert_eq!(
            unknown_fields("google.protobuf.Empty", &empty),
            vec!["unknown field number `1` of google.protobuf.Empty"]
        );
        // Nested, the map entry of a queue's limits included.
        let mut limits = api::PriorityClassResourceLimits::default().encode_to_vec();
        extra_varint(&mut limits, 7, 1);
        let mut entry = Vec::new();
        prost::encoding::string::encode(1, &"pc".to_string(), &mut entry);
        prost::encoding::bytes::encode(2, &limits, &mut entry);
        let mut queue = Vec::new();
        prost::encoding::bytes::encode(7, &entry, &mut queue);
        assert_eq!(
            unknown_fields("api.Queue", &queue),
            vec![
                "unknown field number `7` of api.PriorityClassResourceLimits at resourceLimitsByPriorityClassName[0].value[0]"
            ]
        );
    }

    #[test]
    fn malformed_bytes_end_the_walk_without_a_panic() {
        for bytes in [
            &[0x0a, 0xff][..],
            &[0xff; 12][..],
            &[0x0a, 0x05, 0x01][..],
            &[0x09, 0x01][..],
            &[0x0b][..],
            &[0x00][..],
        ] {
            let _ = unknown_fields("api.RetryPolicy", bytes);
            let _ = unknown_fields("api.Queue", bytes);
        }
        assert!(unknown_fields("nope", &[0x08, 1]).is_empty());
    }
}
