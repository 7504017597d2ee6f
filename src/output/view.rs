//! What `get` prints: tables, `-o name`, one object or one `kind: List`, JSONPath templates
//! and custom columns, all over the same objects `-o json` prints.
//!
//! Owns: the choice of object vs List, sorting (`--sort-by`), `--no-headers`. Must not: call
//! the client or decide exit codes.
//!
//! Decisions: a `get` of exactly one name prints that object; every other `get` (all of a
//! type, several names, `TYPE/NAME` arguments of several types) prints one `kind: List` with
//! `items`, empty included, in YAML and JSON alike, which `apply -f -` reads back (kubectl's
//! shape, `apiVersion: v1`). `-o jsonpath=` runs over exactly that value. Custom columns and
//! `--sort-by` run over each item; their cells are escaped as the tables' are (`resources`),
//! while `-o jsonpath` prints values as they are, data like `-o json`. Mixed types print as
//! one table per type, a blank line between, as kubectl does.

use std::cmp::Ordering;
use std::io::{self, Write};

use serde_json::{json, Value};
use serde_json_path::JsonPath;
use tabled::builder::Builder;

use crate::model::document::{ApiVersion, LIST_API_VERSION, LIST_KIND};
use crate::model::{encode, Queue, RetryPolicy};
use crate::output::jsonpath::{self, Template};
use crate::output::resources;
use crate::output::text::shown;

/// One resource found by `get`.
#[derive(Debug, Clone)]
pub enum Shown {
    Policy(RetryPolicy),
    Queue(Queue),
}

impl Shown {
    pub fn label(&self) -> String {
        match self {
            Shown::Policy(p) => format!("retrypolicy/{}", p.name),
            Shown::Queue(q) => format!("queue/{}", q.name),
        }
    }
}

/// A row of the cluster's database that `get --lookout-db` could not show:
/// `error: table `retry_policy` row `p`: column `definition`: why`.
pub fn bad_row_line(style: crate::output::style::Style, row: &crate::lookout::cluster::BadRow) -> String {
    format!("{}: {row}", style.error("error"))
}

/// One column of `-o custom-columns=HEADER:.path,...`.
#[derive(Debug)]
pub struct Column {
    pub header: String,
    pub path: JsonPath,
}

/// Parses kubectl's custom-columns spec.
pub fn parse_columns(spec: &str) -> Result<Vec<Column>, String> {
    spec.split(',')
        .map(|c| {
            let (header, path) = c
                .split_once(':')
                .filter(|(h, p)| !h.is_empty() && !p.is_empty())
                .ok_or_else(|| format!("invalid custom column `{c}`: expected `HEADER:.json.path`"))?;
            Ok(Column {
                header: header.to_string(),
                path: jsonpath::compile(path)?,
            })
        })
        .collect()
}

#[derive(Debug)]
pub enum Format {
    Table,
    Wide,
    Yaml,
    Json,
    Name,
    JsonPath(Template),
    CustomColumns(Vec<Column>),
}

pub struct Options<'a> {
    pub version: ApiVersion,
    /// One `kind: List` rather than one object.
    pub plural: bool,
    pub no_headers: bool,
    pub sort_by: Option<&'a JsonPath>,
}

/// The object `-o json` prints for one resource. `Err` names the fields a policy uses that do
/// not fit `version`.
pub fn object(item: &Shown, version: ApiVersion) -> Result<Value, (String, Vec<String>)> {
    match item {
        Shown::Policy(p) => encode::policy_document(p, version).map_err(|f| (p.name.clone(), f)),
        Shown::Queue(q) => Ok(encode::queue_document(q)),
    }
}

/// The `kind: List` envelope.
pub fn list(items: Vec<Value>) -> Value {
    json!({"apiVersion": LIST_API_VERSION, "kind": LIST_KIND, "items": items})
}

pub fn write(
    out: &mut dyn Write,
    items: &[Shown],
    format: &Format,
    options: &Options,
) -> io::Result<Result<(), (String, Vec<String>)>> {
    // Tables show v1 regardless of `--api-version`; every other format the chosen dialect.
    let version = match format {
        Format::Table | Format::Wide | Format::Name => ApiVersion::V1,
        _ => options.version,
    };
    let mut pairs = Vec::with_capacity(items.len());
    for item in items {
        match object(item, version) {
            Ok(o) => pairs.push((item, o)),
            Err(misfit) => return Ok(Err(misfit)),
        }
    }
    if let Some(path) = options.sort_by {
        pairs.sort_by(|a, b| compare(path.query(&a.1).first(), path.query(&b.1).first()));
    }
    match format {
        Format::Table | Format::Wide => {
            let wide = matches!(format, Format::Wide);
            let policies: Vec<RetryPolicy> = pairs
                .iter()
                .filter_map(|(i, _)| match i {
                    Shown::Policy(p) => Some(p.clone()),
                    _ => None,
                })
                .collect();
            let queues: Vec<Queue> = pairs
                .iter()
                .filter_map(|(i, _)| match i {
                    Shown::Queue(q) => Some(q.clone()),
                    _ => None,
                })
                .collect();
            if !policies.is_empty() {
                resources::write_table(out, &policies, &[], wide, options.no_headers)?;
            }
            if !queues.is_empty() {
                if !policies.is_empty() {
                    writeln!(out)?;
                }
                resources::write_table(out, &[], &queues, wide, options.no_headers)?;
            }
        }
        Format::Name => {
            for (i, _) in &pairs {
                writeln!(out, "{}", i.label())?;
            }
        }
        Format::Yaml | Format::Json | Format::JsonPath(_) => {
            let value = if options.plural || pairs.len() != 1 {
                list(pairs.into_iter().map(|(_, o)| o).collect())
            } else {
                pairs.pop().map(|(_, o)| o).unwrap_or(Value::Null)
            };
            match format {
                Format::Json => {
                    let text = serde_json::to_string_pretty(&value).map_err(io::Error::other)?;
                    writeln!(out, "{text}")?;
                }
                Format::Yaml => out.write_all(encode::to_yaml(&value).as_bytes())?,
                // No newline added, as kubectl: the template says where lines end.
                Format::JsonPath(t) => out.write_all(t.render(&value).as_bytes())?,
                _ => unreachable!("matched above"),
            }
        }
        Format::CustomColumns(columns) => {
            let mut b = Builder::default();
            if !options.no_headers {
                b.push_record(columns.iter().map(|c| shown(&c.header).into_owned()));
            }
            for (_, o) in &pairs {
                b.push_record(columns.iter().map(|c| {
                    let found: Vec<String> = c.path.query(o).all().into_iter().map(jsonpath::scalar).collect();
                    if found.is_empty() {
                        "<none>".to_string()
                    } else {
                        shown(&found.join(",")).into_owned()
                    }
                }));
            }
            resources::write_cells(out, b)?;
        }
    }
    Ok(Ok(()))
}

/// `--sort-by` order: missing values first, numbers by value, strings by text, other values
/// by their JSON text.
fn compare(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            x.as_f64().partial_cmp(&y.as_f64()).unwrap_or(Ordering::Equal)
        }
        (Some(Value::String(x)), Some(Value::String(y))) => x.cmp(y),
        (Some(x), Some(y)) => x.to_string().cmp(&y.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policies() -> Vec<Shown> {
        [("zeta", Some(3)), ("alpha", Some(10)), ("mid", None)]
            .into_iter()
            .map(|(n, l)| {
                Shown::Policy(RetryPolicy {
                    name: n.into(),
                    retry_limit: l,
                    ..RetryPolicy::default()
                })
            })
            .collect()
    }

    fn render(items: &[Shown], format: Format, plural: bool, no_headers: bool, sort: Option<&str>) -> String {
        let sort = sort.map(|s| jsonpath::compile(s).unwrap());
        let mut out = Vec::new();
        let options = Options {
            version: ApiVersion::V1,
            plural,
            no_headers,
            sort_by: sort.as_ref(),
        };
        write(&mut out, items, &format, &options).unwrap().unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plural_json_is_one_list_even_when_empty() {
        assert_eq!(
            render(&[], Format::Json, true, false, None),
            "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": []\n}\n"
        );
        let one = render(&policies()[..1], Format::Json, true, false, None);
        assert!(one.contains("\"kind\": \"List\""), "{one}");
        let single = render(&policies()[..1], Format::Json, false, false, None);
        assert!(single.contains("\"kind\": \"RetryPolicy\""), "{single}");
    }

    #[test]
    fn custom_columns_sort_by_and_no_headers() {
        let cols = parse_columns("NAME:.metadata.name,LIMIT:.spec.retryLimit").unwrap();
        assert_eq!(
            render(
                &policies(),
                Format::CustomColumns(cols),
                true,
                false,
                Some(".spec.retryLimit")
            ),
            "NAME    LIMIT\nmid     <none>\nzeta    3\nalpha   10\n"
        );
        assert_eq!(
            render(&policies(), Format::Name, true, false, Some("{.metadata.name}")),
            "retrypolicy/alpha\nretrypolicy/mid\nretrypolicy/zeta\n"
        );
        let table = render(&policies()[..1], Format::Table, true, true, None);
        assert_eq!(table, "zeta   3   Fail   0\n");
        assert_eq!(
            parse_columns("NAME").unwrap_err(),
            "invalid custom column `NAME`: expected `HEADER:.json.path`"
        );
    }
}
