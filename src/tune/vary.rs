//! One `--vary NAME:PATH=VALUES`: its syntax ([`parse_vary`]), and what its path and values
//! must be to fit a field of the field table ([`resolve`], [`typed`]).
//!
//! Decisions: VALUES is a comma-separated list whose items are each a scalar, `unset`, or a
//! range `lo..hi` / `lo..hi/step` of integers (so `unset,1..3` is `unset,1,2,3`); a value
//! cannot contain a comma (no quoting). A value listed twice is refused, as written here and
//! as its field reads it (`1` and `01`, in [`typed`]). One `--vary` expands to at most
//! [`MAX_VALUES`] values, so that `0..4000000000` is refused before it is expanded. A path is
//! keys joined by `.` and list indices `[n]`, with blanks around each part ignored: its
//! canonical form (`spec.rules[1].action`) is what tells two spellings of one field apart.

use std::collections::HashSet;
use std::fmt;

use crate::diag::{quote, suggest};
use crate::model::fields::{self, Field, Ty};
use crate::model::quantity::parse_quantity;
use crate::model::validate::MAX_DELAY;
use crate::model::{Action, GoDuration};
use crate::yaml::{Node, Value};

/// Most values one `--vary` may have once its ranges are expanded.
pub const MAX_VALUES: usize = 100_000;

/// What a `--vary` changes: a RetryPolicy of the template, by name, or the scheduler config
/// (NAME `scheduler`, which therefore never names a policy).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    Policy(String),
    Scheduler,
    /// The `--categorizer` file (NAME `categorizer`), its path from the `errorCategories`
    /// mapping whatever the file's shape.
    Categorizer,
}

impl fmt::Display for Target {
    /// `policy `ml`` or `the scheduler config`, as messages name it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Policy(name) => write!(f, "policy {}", quote(name)),
            Target::Scheduler => write!(f, "the scheduler config"),
            Target::Categorizer => write!(f, "the categorizer config"),
        }
    }
}

/// One value of a `--vary`: a scalar written into the document as is (unquoted), or the
/// field removed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Setting {
    Unset,
    To(String),
}

impl fmt::Display for Setting {
    /// What output shows: the text as typed (`3`, `Retry`, `30s`), or `unset`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Setting::Unset => f.write_str("unset"),
            Setting::To(text) => f.write_str(text),
        }
    }
}

/// One part of a field path: a mapping key or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Segment {
    Key(String),
    Index(usize),
}

/// A parsed `--vary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vary {
    /// `NAME:PATH` exactly as typed: the key of this vary in a candidate's `values`.
    pub text: String,
    pub target: Target,
    /// The canonical path: `spec.rules[1].action`, whatever blanks or leading zeros it was
    /// typed with.
    pub path: String,
    /// Every value in order, ranges expanded; never empty.
    pub values: Vec<Setting>,
    pub(super) segments: Vec<Segment>,
}

const FORM: &str = "expected `NAME:PATH=VALUES`, e.g. `ml:spec.retryLimit=0..5`";

/// Parses `NAME:PATH=VALUES` (syntax only: whether NAME, PATH and the values fit the
/// template is [`super::Template::check`]'s). Errors name the argument and say what was
/// expected.
pub fn parse_vary(text: &str) -> Result<Vary, String> {
    let fail = |why: String| format!("invalid `--vary` {}: {why}", quote(text));
    let Some((left, values)) = text.split_once('=') else {
        return Err(fail(format!("missing `=` ({FORM})")));
    };
    let Some((name, path)) = left.split_once(':') else {
        return Err(fail(format!("missing `:` ({FORM})")));
    };
    let name = name.trim();
    if name.is_empty() {
        return Err(fail(
            "the name before `:` is empty (expected a RetryPolicy's name or `scheduler`)".into(),
        ));
    }
    if path.trim().is_empty() {
        return Err(fail(
            "the path after `:` is empty (expected a field path such as `spec.retryLimit`)".into(),
        ));
    }
    let segments = parse_path(path).map_err(|why| {
        fail(format!(
            "the path {} is not a field path: {why} (expected one such as `spec.rules[0].action`)",
            quote(path.trim())
        ))
    })?;
    let values = parse_values(values).map_err(fail)?;
    Ok(Vary {
        text: left.to_string(),
        target: match name {
            "scheduler" => Target::Scheduler,
            "categorizer" => Target::Categorizer,
            _ => Target::Policy(name.to_string()),
        },
        path: render(&segments),
        values,
        segments,
    })
}

/// `spec.rules[1].action` → its segments; blanks around keys and inside brackets are ignored.
pub(super) fn parse_path(text: &str) -> Result<Vec<Segment>, String> {
    let mut out = Vec::new();
    for part in text.split('.') {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        let key = key.trim();
        if key.is_empty() {
            return Err(if rest.is_empty() {
                "it has an empty field name".into()
            } else {
                "it has an index with no field name before it".into()
            });
        }
        if key.contains(']') {
            return Err("it has a `]` with no `[` before it".into());
        }
        out.push(Segment::Key(key.to_string()));
        loop {
            rest = rest.trim_start();
            if rest.is_empty() {
                break;
            }
            let Some(inner) = rest.strip_prefix('[') else {
                return Err(format!("it has {} after an index", quote(rest)));
            };
            let Some((index, after)) = inner.split_once(']') else {
                return Err("it has a `[` with no `]` after it".into());
            };
            let index = index.trim();
            match index.parse::<usize>() {
                Ok(i) if index.bytes().all(|b| b.is_ascii_digit()) => out.push(Segment::Index(i)),
                _ => {
                    return Err(format!(
                        "{} is not a list index (a number such as `[0]`)",
                        quote(&format!("[{index}]"))
                    ))
                }
            }
            rest = after;
        }
    }
    Ok(out)
}

/// The canonical text of a path.
pub(super) fn render(segments: &[Segment]) -> String {
    let mut out = String::new();
    for s in segments {
        match s {
            Segment::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn parse_values(values: &str) -> Result<Vec<Setting>, String> {
    if values.trim().is_empty() {
        return Err("no values after `=` (expected `a,b,c`, `lo..hi`, `lo..hi/step` or `unset`)".into());
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for item in values.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!(
                "an empty value in {} (expected values separated by single commas)",
                quote(values)
            ));
        }
        let settings = if item == "unset" {
            vec![Setting::Unset]
        } else if item.contains("..") {
            range(item)?
        } else {
            vec![Setting::To(item.to_string())]
        };
        if out.len() + settings.len() > MAX_VALUES {
            return Err(format!(
                "{} has more than the {MAX_VALUES} values one `--vary` may have",
                quote(values)
            ));
        }
        for s in settings {
            if !seen.insert(s.clone()) {
                return Err(format!(
                    "{} is listed twice (list each value once)",
                    quote(&s.to_string())
                ));
            }
            out.push(s);
        }
    }
    Ok(out)
}

/// `lo..hi` or `lo..hi/step`, integers, inclusive; at most [`MAX_VALUES`] of them.
fn range(item: &str) -> Result<Vec<Setting>, String> {
    const RANGE: &str = "expected `lo..hi` or `lo..hi/step` with integers; list other values with `,`";
    let (bounds, step) = match item.split_once('/') {
        Some((b, s)) => (b, Some(s.trim())),
        None => (item, None),
    };
    let (lo, hi) = bounds.split_once("..").expect("a range has `..`");
    let bound = |text: &str, which: &str| -> Result<i64, String> {
        let text = text.trim();
        if text.is_empty() {
            let which = which.split_once(' ').map_or(which, |(_, w)| w);
            return Err(format!("the range {} has no {which} bound ({RANGE})", quote(item)));
        }
        text.strip_prefix('+').unwrap_or(text).parse::<i64>().map_err(|_| {
            format!(
                "the range {} has {which} bound {} that is not an integer ({RANGE})",
                quote(item),
                quote(text)
            )
        })
    };
    let (lo, hi) = (bound(lo, "a lower")?, bound(hi, "an upper")?);
    let step = match step {
        None => 1,
        Some(s) => match s.strip_prefix('+').unwrap_or(s).parse::<i64>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(format!(
                    "the step {} of the range {} is not a positive integer (expected `lo..hi/step` with a step of at least 1)",
                    quote(s),
                    quote(item)
                ))
            }
        },
    };
    if lo > hi {
        return Err(format!(
            "the range {} is empty (expected `lo..hi` with lo ≤ hi)",
            quote(item)
        ));
    }
    let n = (i128::from(hi) - i128::from(lo)) / i128::from(step) + 1;
    if n > MAX_VALUES as i128 {
        return Err(format!(
            "the range {} has {n} values, more than the {MAX_VALUES} one `--vary` may have",
            quote(item)
        ));
    }
    Ok((0..n)
        .map(|k| Setting::To((i128::from(lo) + k * i128::from(step)).to_string()))
        .collect())
}

// ---------------------------------------------------------------------------------------
// Paths and values against the field table

/// Where a path is resolved: a document's field table and how messages name it.
pub(super) struct Layout {
    pub root: &'static [Field],
    /// `policy `ml``, `the scheduler config`.
    pub owner: String,
    /// The document's top level in a message: `policy `ml` (`armadaproject.io/v1`)`.
    pub top: String,
    /// The other dialect of a policy (its table and apiVersion), to say where a field is.
    pub other: Option<(&'static [Field], &'static str)>,
    /// This dialect's apiVersion, when it has one.
    pub version: Option<&'static str>,
}

/// The scalar field a path names.
#[derive(Debug)]
pub(super) struct Scalar {
    pub ty: &'static Ty,
    pub required: bool,
    /// An item of a list of scalars (`onConditions[0]`): set, never removed.
    pub item: bool,
    /// The template's value there as written: `None` when the field is absent (or `null`),
    /// `Some(Err(kind))` when it holds no scalar (a mapping, a list).
    pub written: Option<Result<String, &'static str>>,
}

/// Resolves `segments` in `layout`'s table, following `node` (the template's document) so
/// that an index past the end of its list is caught. The path must end at a scalar field.
pub(super) fn resolve(layout: &Layout, segments: &[Segment], node: &Node) -> Result<Scalar, String> {
    let owner = &layout.owner;
    let mut ty: Option<&'static Ty> = None;
    let mut node = Some(node);
    let mut done = String::new();
    let mut required = false;
    let mut item = false;
    for seg in segments {
        match seg {
            Segment::Key(k) => {
                let fields_here = match ty {
                    None => layout.root,
                    Some(Ty::Object(f) | Ty::Checked(f, _)) => f,
                    Some(t) if list_items(t).is_some() => {
                        return Err(format!(
                            "`{done}` is a list: name one of its items, e.g. `{done}[0].{k}`"
                        ))
                    }
                    Some(t) => {
                        return Err(format!(
                            "`{done}` is {}, it has no field {}",
                            a(&fields::type_name(t)),
                            quote(k)
                        ))
                    }
                };
                let child = match node {
                    None => None,
                    Some(n) => match &n.value {
                        Value::Map(_) => n.get(k),
                        Value::Null => None,
                        _ => {
                            let at = if done.is_empty() {
                                layout.owner.clone()
                            } else {
                                format!("`{done}` of {owner}")
                            };
                            return Err(format!(
                                "{at} is {} in the template, not a mapping (fix the template first)",
                                a(n.kind_name())
                            ));
                        }
                    },
                };
                let Some(field) = fields_here.iter().find(|f| f.name == k) else {
                    return Err(unknown_field(layout, segments, &done, k, fields_here));
                };
                done = if done.is_empty() {
                    k.clone()
                } else {
                    format!("{done}.{k}")
                };
                ty = Some(&field.ty);
                required = field.required;
                item = false;
                node = child;
            }
            Segment::Index(i) => {
                let Some(items) = ty.and_then(list_items) else {
                    return Err(format!("`{done}` is not a list: remove `[{i}]`"));
                };
                let list = match node.map(|n| &n.value) {
                    None | Some(Value::Null) => &[][..],
                    Some(Value::Seq(list)) => list,
                    Some(_) => {
                        let n = node.expect("matched Some");
                        return Err(format!(
                            "`{done}` of {owner} is {} in the template, not a list (fix the template first)",
                            a(n.kind_name())
                        ));
                    }
                };
                if *i >= list.len() {
                    return Err(past_end(&done, *i, list.len(), owner));
                }
                node = Some(&list[*i]);
                done = format!("{done}[{i}]");
                ty = Some(items);
                required = false;
                item = true;
            }
        }
    }
    let ty = ty.expect("a path starts with a key");
    match ty {
        Ty::Object(f) | Ty::Checked(f, _) => Err(format!(
            "`{done}` is an object, not a scalar field; vary one of its fields: {}",
            f.iter()
                .map(|f| format!("`{done}.{}`", f.name))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Ty::StringMap => Err(format!("`{done}` is a map, not a scalar field")),
        t => match list_items(t) {
            Some(items) => Err(match fields::object_of(items) {
                Some(f) => format!(
                    "`{done}` is a list, not a scalar field; vary a field of one of its items, e.g. `{done}[0].{}`",
                    f[0].name
                ),
                None => format!("`{done}` is a list, not a scalar field; vary one of its items, e.g. `{done}[0]`"),
            }),
            None => {
                let written = node.and_then(|n| match &n.value {
                    Value::Null => None,
                    Value::Scalar { text, .. } => Some(Ok(text.clone())),
                    _ => Some(Err(n.kind_name())),
                });
                Ok(Scalar {
                    ty,
                    required,
                    item,
                    written,
                })
            }
        },
    }
}

fn list_items(ty: &'static Ty) -> Option<&'static Ty> {
    match ty {
        Ty::Array { items, .. } => Some(items),
        Ty::NonEmpty(inner) => list_items(inner),
        _ => None,
    }
}

/// `an object`, `a list`, `an integer`.
pub(super) fn a(noun: &str) -> String {
    let article = if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {noun}")
}

fn past_end(list: &str, i: usize, len: usize, owner: &str) -> String {
    let head = format!("`{list}[{i}]` does not exist: ");
    let range = match len {
        0 => String::new(),
        1 => format!("`{list}[0]`"),
        n => format!("`{list}[0]`..`{list}[{}]`", n - 1),
    };
    if list.ends_with("rules") {
        match len {
            0 => format!("{head}{owner} has no rules"),
            1 => format!("{head}{owner} has 1 rule, {range}"),
            n => format!("{head}{owner} has {n} rules, {range}"),
        }
    } else {
        match len {
            0 => format!("{head}`{list}` of {owner} has no items"),
            1 => format!("{head}`{list}` of {owner} has 1 item, {range}"),
            n => format!("{head}`{list}` of {owner} has {n} items, {range}"),
        }
    }
}

/// A key that is not in the table at `done`: the fields there, and the nearest name or the
/// full path the user probably meant (`retryLimit` → `spec.retryLimit`), as `explain` says it.
fn unknown_field(layout: &Layout, segments: &[Segment], done: &str, key: &str, here: &'static [Field]) -> String {
    let at = if done.is_empty() {
        layout.top.clone()
    } else {
        format!("`{done}` of {}", layout.owner)
    };
    let names = fields::names(here);
    let mut message = format!(
        "field {} does not exist in {at}; its fields are {}",
        quote(key),
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    );
    let plain: Vec<&str> = segments
        .iter()
        .filter_map(|s| match s {
            Segment::Key(k) => Some(k.as_str()),
            Segment::Index(_) => None,
        })
        .collect();
    let plain = plain.join(".");
    let typed = render(segments);
    // A leading part left out (`retryLimit` for `spec.retryLimit`), or one too many (a v1
    // path on a v1beta1 policy, `spec.retryLimit` for `retryLimit`).
    let moved = fields::find_path(layout.root, &plain)
        .and_then(|found| {
            found
                .strip_suffix(plain.as_str())
                .map(|prefix| format!("{prefix}{typed}"))
        })
        .or_else(|| {
            let (first, _) = plain.split_once('.')?;
            let rest_typed = typed.strip_prefix(first)?.strip_prefix('.')?;
            let rest_plain = plain.strip_prefix(first)?.strip_prefix('.')?;
            fields::field_at(layout.root, rest_plain).map(|_| rest_typed.to_string())
        });
    if let Some(path) = moved.filter(|_| done.is_empty()) {
        message.push_str(&format!("; did you mean `{path}`?"));
    } else if let Some(s) = suggest(key, &names) {
        message.push_str(&format!("; did you mean `{s}`?"));
    } else if let (Some((other, other_version)), Some(version)) = (layout.other, layout.version) {
        let there = fields::field_at(other, &plain).map(|_| typed.clone()).or_else(|| {
            let found = fields::find_path(other, &plain)?;
            found
                .strip_suffix(plain.as_str())
                .map(|prefix| format!("{prefix}{typed}"))
        });
        if let Some(there) = there {
            message.push_str(&format!(
                "; `{there}` is a field of the `{other_version}` layout, and {} is `{version}`",
                layout.owner
            ));
        }
    }
    message
}

/// A value as its field reads it, so that `1` and `01` (or `retry` and `Retry`) are known
/// to be one value.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) enum Typed {
    Int(i64),
    Num(u64),
    Bool(bool),
    Duration(GoDuration),
    Text(String),
}

/// Checks `text` against a scalar field's type and single-field bounds (the table's: what
/// no candidate could pass); `Err` says what was expected. Rules across fields, string
/// patterns and regexes are left to each candidate's validation.
pub(super) fn typed(ty: &Ty, text: &str) -> Result<Typed, String> {
    let q = quote(text);
    match ty {
        Ty::Int { min, max } => {
            let expected = format!("expected an integer {min}..={max}");
            let t = text.strip_prefix('+').unwrap_or(text);
            match t.parse::<i64>() {
                Ok(v) if (*min..=*max).contains(&v) => Ok(Typed::Int(v)),
                Ok(_) => Err(format!("{q} is out of range ({expected})")),
                Err(_) if !t.is_empty() && t.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()) => {
                    Err(format!("{q} is out of range ({expected})"))
                }
                Err(_) => Err(format!("{q} is not an integer ({expected})")),
            }
        }
        Ty::Num { min, max } => {
            let expected = match (min, max) {
                (Some(lo), Some(hi)) => format!("expected a number {lo}..={hi}"),
                (Some(lo), None) => format!("expected a number of at least {lo}"),
                (None, Some(hi)) => format!("expected a number of at most {hi}"),
                (None, None) => "expected a finite number".to_string(),
            };
            let v = number(text).ok_or_else(|| format!("{q} is not a number ({expected})"))?;
            if !v.is_finite() || min.is_some_and(|lo| v < lo) || max.is_some_and(|hi| v > hi) {
                return Err(format!("{q} is out of range ({expected})"));
            }
            Ok(Typed::Num(v.to_bits()))
        }
        Ty::Above(lo) => {
            let expected = format!("expected a number above {lo}");
            let v = number(text).ok_or_else(|| format!("{q} is not a number ({expected})"))?;
            if !v.is_finite() || v <= *lo {
                return Err(format!("{q} is out of range ({expected})"));
            }
            Ok(Typed::Num(v.to_bits()))
        }
        Ty::Bool => match text {
            "true" | "True" | "TRUE" => Ok(Typed::Bool(true)),
            "false" | "False" | "FALSE" => Ok(Typed::Bool(false)),
            _ => Err(format!("{q} is not a boolean (expected `true` or `false`)")),
        },
        Ty::Duration => {
            let out_of_range = || format!("{q} is out of range (expected a duration from `0s` to `{MAX_DELAY}`)");
            match GoDuration::parse(text) {
                Ok(d) if d <= MAX_DELAY => Ok(Typed::Duration(d)),
                Ok(_) => Err(out_of_range()),
                Err(
                    crate::model::duration::DurationError::Negative | crate::model::duration::DurationError::TooLarge,
                ) => Err(out_of_range()),
                Err(e) => Err(format!("{q} is not a duration: {e}")),
            }
        }
        Ty::Enum(names) => {
            if names.contains(&text) {
                return Ok(Typed::Text(text.to_string()));
            }
            Err(with_suggestion(
                format!("{q} is not a valid value (expected {})", either(names)),
                text,
                names,
            ))
        }
        Ty::Action => match text
            .parse::<i64>()
            .ok()
            .map_or_else(|| Action::parse(text), Action::from_number)
        {
            Some(action) => Ok(Typed::Text(action.as_str().to_string())),
            None => Err(with_suggestion(
                format!("{q} is not an action (expected {})", either(&Action::NAMES)),
                text,
                &Action::NAMES,
            )),
        },
        Ty::Quantity => match parse_quantity(text) {
            Ok(v) => Ok(Typed::Num(v.to_bits())),
            Err(_) => Err(format!(
                "{q} is not a quantity (expected a Kubernetes quantity such as `512Mi` or `1Gi`)"
            )),
        },
        // Strings: any text; a pattern or a regex is the validator's to check.
        _ => Ok(Typed::Text(text.to_string())),
    }
}

/// A number as the decoder reads one (`model::decode::Decoder::float`).
fn number(text: &str) -> Option<f64> {
    match text {
        ".inf" | ".Inf" | ".INF" | "+.inf" => Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => Some(f64::NAN),
        t if t.bytes().any(|b| b.is_ascii_digit()) && !t.contains(['_', 'x', 'o']) => t.parse().ok(),
        _ => None,
    }
}

/// `` `a` or `b` ``, `` one of `a`, `b`, `c` ``.
fn either(names: &[&str]) -> String {
    match names {
        [a, b] => format!("`{a}` or `{b}`"),
        _ => format!("one of {}", crate::diag::one_of(names)),
    }
}

fn with_suggestion(mut message: String, text: &str, names: &[&str]) -> String {
    if let Some(s) = suggest(text, names) {
        message.push_str(&format!("; did you mean `{s}`?"));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(values: &[&str]) -> Vec<Setting> {
        values.iter().map(|v| Setting::To(v.to_string())).collect()
    }

    #[test]
    fn the_examples_parse_and_expand() {
        let v = parse_vary("ml:spec.retryLimit=0..10").unwrap();
        assert_eq!(v.text, "ml:spec.retryLimit");
        assert_eq!(v.target, Target::Policy("ml".into()));
        assert_eq!(v.path, "spec.retryLimit");
        assert_eq!(v.values, to(&["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]));

        let v = parse_vary("ml:spec.rules[1].action=Retry,Fail").unwrap();
        assert_eq!(v.path, "spec.rules[1].action");
        assert_eq!(
            v.segments,
            [
                Segment::Key("spec".into()),
                Segment::Key("rules".into()),
                Segment::Index(1),
                Segment::Key("action".into())
            ]
        );
        assert_eq!(v.values, to(&["Retry", "Fail"]));

        let v = parse_vary("ml:spec.backoff.initialDelay=0s,30s,5m").unwrap();
        assert_eq!(v.values, to(&["0s", "30s", "5m"]));

        let v = parse_vary("ml:spec.rules[0].retryLimit=unset,1,3").unwrap();
        assert_eq!(v.values[0], Setting::Unset);
        assert_eq!(v.values[1..], to(&["1", "3"]));
        let shown: Vec<String> = v.values.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["unset", "1", "3"]);

        let v = parse_vary("infra:retryLimit=1..5/2").unwrap();
        assert_eq!(
            (v.target, v.path.as_str()),
            (Target::Policy("infra".into()), "retryLimit")
        );
        assert_eq!(v.values, to(&["1", "3", "5"]));

        let v = parse_vary("scheduler:scheduling.retryPolicy.globalMaxRetries=5,10,20").unwrap();
        assert_eq!(v.target, Target::Scheduler);
        assert_eq!(v.path, "scheduling.retryPolicy.globalMaxRetries");
        assert_eq!(v.values, to(&["5", "10", "20"]));
    }

    #[test]
    fn lists_ranges_and_spellings() {
        // Ranges and scalars mix; a step that overshoots stops before `hi`; blanks are trimmed.
        let v = parse_vary("ml:spec.retryLimit= unset, 1..3 ,10..20/7,-2..-1").unwrap();
        let shown: Vec<String> = v.values.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["unset", "1", "2", "3", "10", "17", "-2", "-1"]);
        assert_eq!(parse_vary("ml:spec.retryLimit=4..4").unwrap().values, to(&["4"]));
        // The text is kept as typed, the path made canonical.
        let v = parse_vary("ml: spec . rules[ 01 ].action=Retry").unwrap();
        assert_eq!(v.text, "ml: spec . rules[ 01 ].action");
        assert_eq!(v.path, "spec.rules[1].action");
        assert_eq!(v.target, Target::Policy("ml".into()));
        // Only NAME `scheduler` is the scheduler config.
        assert_eq!(
            parse_vary("schedulers:a=1").unwrap().target,
            Target::Policy("schedulers".into())
        );
        // A value may hold `:` and `=` after the first `=`.
        assert_eq!(
            parse_vary("ml:spec.rules[0].containerName=a=b:c").unwrap().values,
            to(&["a=b:c"])
        );
        assert_eq!(MAX_VALUES, 100_000);
        assert_eq!(
            parse_vary("ml:spec.retryLimit=0,1..100000").unwrap_err(),
            "invalid `--vary` `ml:spec.retryLimit=0,1..100000`: `0,1..100000` has more than the 100000 values \
             one `--vary` may have"
        );
        assert_eq!(
            parse_vary("ml:spec.retryLimit=1..100000").unwrap().values.len(),
            100_000
        );
    }

    #[test]
    fn syntax_errors_say_what_was_expected() {
        for (arg, message) in [
            (
                "ml.spec.retryLimit=3",
                "invalid `--vary` `ml.spec.retryLimit=3`: missing `:` (expected `NAME:PATH=VALUES`, e.g. \
                 `ml:spec.retryLimit=0..5`)",
            ),
            (
                "ml:spec.retryLimit",
                "invalid `--vary` `ml:spec.retryLimit`: missing `=` (expected `NAME:PATH=VALUES`, e.g. \
                 `ml:spec.retryLimit=0..5`)",
            ),
            (
                " :spec.retryLimit=1",
                "invalid `--vary` ` :spec.retryLimit=1`: the name before `:` is empty (expected a RetryPolicy's \
                 name or `scheduler`)",
            ),
            (
                "ml:=1",
                "invalid `--vary` `ml:=1`: the path after `:` is empty (expected a field path such as \
                 `spec.retryLimit`)",
            ),
            (
                "ml:spec.retryLimit=",
                "invalid `--vary` `ml:spec.retryLimit=`: no values after `=` (expected `a,b,c`, `lo..hi`, \
                 `lo..hi/step` or `unset`)",
            ),
            (
                "ml:spec.retryLimit=1,,2",
                "invalid `--vary` `ml:spec.retryLimit=1,,2`: an empty value in `1,,2` (expected values separated \
                 by single commas)",
            ),
            (
                "ml:spec.retryLimit=5..1",
                "invalid `--vary` `ml:spec.retryLimit=5..1`: the range `5..1` is empty (expected `lo..hi` with \
                 lo ≤ hi)",
            ),
            (
                "ml:spec.retryLimit=1..5/0",
                "invalid `--vary` `ml:spec.retryLimit=1..5/0`: the step `0` of the range `1..5/0` is not a \
                 positive integer (expected `lo..hi/step` with a step of at least 1)",
            ),
            (
                "ml:spec.retryLimit=1..5/x",
                "invalid `--vary` `ml:spec.retryLimit=1..5/x`: the step `x` of the range `1..5/x` is not a \
                 positive integer (expected `lo..hi/step` with a step of at least 1)",
            ),
            (
                "ml:spec.retryLimit=a..5",
                "invalid `--vary` `ml:spec.retryLimit=a..5`: the range `a..5` has a lower bound `a` that is not \
                 an integer (expected `lo..hi` or `lo..hi/step` with integers; list other values with `,`)",
            ),
            (
                "ml:spec.backoff.initialDelay=0s..30s",
                "invalid `--vary` `ml:spec.backoff.initialDelay=0s..30s`: the range `0s..30s` has a lower bound \
                 `0s` that is not an integer (expected `lo..hi` or `lo..hi/step` with integers; list other \
                 values with `,`)",
            ),
            (
                "ml:spec.retryLimit=1..2.5",
                "invalid `--vary` `ml:spec.retryLimit=1..2.5`: the range `1..2.5` has an upper bound `2.5` that \
                 is not an integer (expected `lo..hi` or `lo..hi/step` with integers; list other values with \
                 `,`)",
            ),
            (
                "ml:spec.retryLimit=..5",
                "invalid `--vary` `ml:spec.retryLimit=..5`: the range `..5` has no lower bound (expected \
                 `lo..hi` or `lo..hi/step` with integers; list other values with `,`)",
            ),
            (
                "ml:spec.retryLimit=0..100000",
                "invalid `--vary` `ml:spec.retryLimit=0..100000`: the range `0..100000` has 100001 values, more \
                 than the 100000 one `--vary` may have",
            ),
            (
                "ml:spec.retryLimit=7,0..-9223372036854775808",
                "invalid `--vary` `ml:spec.retryLimit=7,0..-9223372036854775808`: the range \
                 `0..-9223372036854775808` is empty (expected `lo..hi` with lo ≤ hi)",
            ),
            (
                "ml:spec.retryLimit=-9223372036854775808..9223372036854775807",
                "invalid `--vary` `ml:spec.retryLimit=-9223372036854775808..9223372036854775807`: the range \
                 `-9223372036854775808..9223372036854775807` has 18446744073709551616 values, more than the \
                 100000 one `--vary` may have",
            ),
            (
                "ml:spec.retryLimit=1,2,1",
                "invalid `--vary` `ml:spec.retryLimit=1,2,1`: `1` is listed twice (list each value once)",
            ),
            (
                "ml:spec.retryLimit=1..3,2",
                "invalid `--vary` `ml:spec.retryLimit=1..3,2`: `2` is listed twice (list each value once)",
            ),
            (
                "ml:spec.retryLimit=unset,unset",
                "invalid `--vary` `ml:spec.retryLimit=unset,unset`: `unset` is listed twice (list each value \
                 once)",
            ),
            (
                "ml:spec..retryLimit=1",
                "invalid `--vary` `ml:spec..retryLimit=1`: the path `spec..retryLimit` is not a field path: it \
                 has an empty field name (expected one such as `spec.rules[0].action`)",
            ),
            (
                "ml:spec.rules[x].action=Retry",
                "invalid `--vary` `ml:spec.rules[x].action=Retry`: the path `spec.rules[x].action` is not a \
                 field path: `[x]` is not a list index (a number such as `[0]`) (expected one such as \
                 `spec.rules[0].action`)",
            ),
            (
                "ml:spec.rules[-1].action=Retry",
                "invalid `--vary` `ml:spec.rules[-1].action=Retry`: the path `spec.rules[-1].action` is not a \
                 field path: `[-1]` is not a list index (a number such as `[0]`) (expected one such as \
                 `spec.rules[0].action`)",
            ),
            (
                "ml:spec.rules[0.action=Retry",
                "invalid `--vary` `ml:spec.rules[0.action=Retry`: the path `spec.rules[0.action` is not a field \
                 path: it has a `[` with no `]` after it (expected one such as `spec.rules[0].action`)",
            ),
            (
                "ml:spec.rules0].action=Retry",
                "invalid `--vary` `ml:spec.rules0].action=Retry`: the path `spec.rules0].action` is not a field \
                 path: it has a `]` with no `[` before it (expected one such as `spec.rules[0].action`)",
            ),
            (
                "ml:[0].action=Retry",
                "invalid `--vary` `ml:[0].action=Retry`: the path `[0].action` is not a field path: it has an \
                 index with no field name before it (expected one such as `spec.rules[0].action`)",
            ),
            (
                "ml:spec.rules[0]x=1",
                "invalid `--vary` `ml:spec.rules[0]x=1`: the path `spec.rules[0]x` is not a field path: it has \
                 `x` after an index (expected one such as `spec.rules[0].action`)",
            ),
        ] {
            assert_eq!(parse_vary(arg).unwrap_err(), message, "{arg}");
        }
    }

    proptest::proptest! {
        /// A range is every integer from lo to hi by step, in order, and nothing else.
        #[test]
        fn ranges_expand_to_their_integers(lo in -50i64..50, len in 0i64..60, step in 1i64..7) {
            let hi = lo + len;
            let v = parse_vary(&format!("p:retryLimit={lo}..{hi}/{step}")).unwrap();
            let expected: Vec<Setting> =
                (lo..=hi).step_by(step as usize).map(|n| Setting::To(n.to_string())).collect();
            proptest::prop_assert_eq!(v.values, expected);
        }

        /// A canonical path reads back as itself, whatever blanks it was typed with.
        #[test]
        fn canonical_paths_are_stable(
            keys in proptest::collection::vec(("[a-zA-Z]{1,8}", proptest::option::of(0usize..20)), 1..5),
            pad in " {0,2}",
        ) {
            let typed: Vec<String> = keys
                .iter()
                .map(|(k, i)| match i {
                    Some(i) => format!("{pad}{k}{pad}[{pad}{i}{pad}]{pad}"),
                    None => format!("{pad}{k}{pad}"),
                })
                .collect();
            let segments = parse_path(&typed.join(".")).unwrap();
            let canonical = render(&segments);
            proptest::prop_assert_eq!(parse_path(&canonical).unwrap(), segments);
            proptest::prop_assert!(!canonical.contains(' '));
        }
    }
}
