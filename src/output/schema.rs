//! `schema` and `explain`: the field tables of `model::fields` as JSON Schema (draft
//! 2020-12, for `yaml-language-server` and other editors) and as kubectl-style field docs.
//!
//! Must not: describe a field that is not in the table (the decoder accepts exactly those).

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use crate::model::fields::{type_name, Field, Ty};

/// A Go duration string (`10s`, `1h30m`, `1.5s`, `0`).
pub const DURATION_PATTERN: &str = "^\\+?(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$";

/// The JSON Schema of a document whose top-level fields are `fields`.
pub fn schema(id: &str, title: &str, fields: &[Field]) -> Value {
    let mut root = object(fields);
    let m = root.as_object_mut().expect("an object schema");
    let mut head = Map::new();
    head.insert("$schema".into(), json!("https://json-schema.org/draft/2020-12/schema"));
    head.insert("$id".into(), json!(id));
    head.insert("title".into(), json!(title));
    head.extend(std::mem::take(m));
    Value::Object(head)
}

fn object(fields: &[Field]) -> Value {
    let mut props = Map::new();
    for f in fields {
        let mut s = ty(&f.ty);
        s.as_object_mut()
            .expect("schemas are objects")
            .insert("description".into(), json!(f.doc));
        props.insert(f.name.into(), s);
    }
    let required: Vec<&str> = fields.iter().filter(|f| f.required).map(|f| f.name).collect();
    let mut o = json!({"type": "object", "properties": props, "additionalProperties": false});
    if !required.is_empty() {
        o["required"] = json!(required);
    }
    o
}

fn ty(t: &Ty) -> Value {
    match t {
        Ty::Str => json!({"type": "string"}),
        Ty::Pattern(p) => json!({"type": "string", "pattern": p}),
        Ty::Int { min, max } => json!({"type": "integer", "minimum": min, "maximum": max}),
        Ty::Num { min, max } => {
            let mut o = json!({"type": "number"});
            if let Some(m) = min {
                o["minimum"] = json!(m);
            }
            if let Some(m) = max {
                o["maximum"] = json!(m);
            }
            o
        }
        Ty::Bool => json!({"type": "boolean"}),
        // Go-style durations, as `GoDuration::parse` reads them (`0` alone needs no unit;
        // the validator, not the schema, bounds the value).
        Ty::Duration => json!({"anyOf": [{"type": "string", "pattern": DURATION_PATTERN}, {"const": 0}]}),
        Ty::Enum(values) => json!({"enum": values}),
        Ty::Array {
            items,
            max_items,
            unique,
        } => {
            let mut o = json!({"type": "array", "items": ty(items)});
            if let Some(m) = max_items {
                o["maxItems"] = json!(m);
            }
            if *unique {
                o["uniqueItems"] = json!(true);
            }
            o
        }
        Ty::StringMap => json!({"type": "object", "additionalProperties": {"type": "string", "minLength": 1}}),
        Ty::Object(fields) => object(fields),
    }
}

/// `explain`: the field at `path` (its type and documentation) and the fields under it.
pub fn write_explain(
    out: &mut dyn Write,
    kind: &str,
    path: &str,
    field: Option<&Field>,
    children: Option<&'static [Field]>,
    recursive: bool,
) -> io::Result<()> {
    writeln!(out, "KIND:     {kind}")?;
    if let Some(f) = field {
        writeln!(out, "FIELD:    {path} <{}>", type_name(&f.ty))?;
        writeln!(out)?;
        writeln!(out, "DESCRIPTION:")?;
        writeln!(out, "    {}", f.doc)?;
        if let Ty::Enum(values) = &f.ty {
            writeln!(out, "    One of: {}", values.join(", "))?;
        }
        if let Ty::Array {
            items: Ty::Enum(values),
            ..
        } = &f.ty
        {
            writeln!(out, "    Items, one of: {}", values.join(", "))?;
        }
    }
    if let Some(children) = children {
        writeln!(out)?;
        writeln!(out, "FIELDS:")?;
        write_fields(out, children, 1, recursive)?;
    }
    Ok(())
}

fn write_fields(out: &mut dyn Write, fields: &'static [Field], depth: usize, recursive: bool) -> io::Result<()> {
    let indent = "   ".repeat(depth);
    for f in fields {
        let required = if f.required { " -required-" } else { "" };
        if recursive {
            writeln!(out, "{indent}{}\t<{}>{required}", f.name, type_name(&f.ty))?;
            if let Some(children) = crate::model::fields::object_of(&f.ty) {
                write_fields(out, children, depth + 1, true)?;
            }
        } else {
            writeln!(out, "{indent}{}\t<{}>{required}", f.name, type_name(&f.ty))?;
            writeln!(out, "{indent}  {}", f.doc)?;
            writeln!(out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::GoDuration;

    /// The schema's duration pattern accepts what the decoder accepts (bounds aside).
    #[test]
    fn duration_pattern_agrees_with_the_parser() {
        let re = regex::Regex::new(DURATION_PATTERN).unwrap();
        for text in [
            "10s", "1h30m", "1.5s", "300ms", "0", "0s", "10", "5d", "s", "", "1m30s", "2us", "+5s", "1.s", ".5s",
        ] {
            assert_eq!(re.is_match(text), GoDuration::parse(text).is_ok(), "`{text}`");
        }
    }
}
