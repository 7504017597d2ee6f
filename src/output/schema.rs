//! `schema` and `explain`: the field tables of `model::fields` as JSON Schema (draft
//! 2020-12, for `yaml-language-server` and other editors) and as kubectl-style field docs.
//!
//! Must not: describe a field that is not in the table (the decoder accepts exactly those).

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use crate::model::fields::{type_name, Constraint, Field, Ty};
use crate::model::Action;

/// A Go duration string (`10s`, `1h30m`, `1.5s`, `0`).
pub const DURATION_PATTERN: &str = "^\\+?(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$";

/// What `Action::parse` accepts besides the canonical names, as upstream's decoder reads a
/// string: `RETRY_ACTION_RETRY` / `RETRY_ACTION_FAIL` exactly, or `retry` / `fail` in any case
/// (the Unicode runes Go upper-cases to those letters aside), nothing around them.
pub const ACTION_PATTERN: &str = "^(RETRY_ACTION_RETRY|RETRY_ACTION_FAIL|[Rr][Ee][Tt][Rr][Yy]|[Ff][Aa][Ii][Ll])$";

/// A positive quantity as `parse_quantity` reads it (it trims whitespace): no sign but `+`,
/// a non-zero digit, one of its suffixes.
pub const QUANTITY_PATTERN: &str =
    "^\\s*\\+?([0-9]*[1-9][0-9]*(\\.[0-9]*)?|[0-9]*\\.[0-9]*[1-9][0-9]*)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?\\s*$";

/// `field` is set: present and not null (the decoder reads null as not set).
fn set(field: &str) -> Value {
    json!({"required": [field], "properties": {field: {"not": {"type": "null"}}}})
}

/// A cross-field rule as JSON Schema.
fn constraint(c: &Constraint) -> Value {
    match c {
        Constraint::AnyOf(fields) => json!({"anyOf": fields.iter().map(|f| set(f)).collect::<Vec<_>>()}),
        Constraint::ExactlyOne(fields) => json!({"oneOf": fields.iter().map(|f| set(f)).collect::<Vec<_>>()}),
        Constraint::Requires { field, needs } => json!({
            "if": set(field),
            "then": {"anyOf": needs.iter().map(|f| set(f)).collect::<Vec<_>>()},
        }),
    }
}

/// The JSON types a YAML scalar read as text can have.
const SCALAR: [&str; 3] = ["string", "number", "boolean"];

/// The JSON Schema of a document whose top-level fields are `fields`.
pub fn schema(id: &str, title: &str, fields: &[Field]) -> Value {
    with_head(id, title, object(fields))
}

/// The JSON Schema of a kind with several layouts (a RetryPolicy's two dialects): exactly
/// one of `layouts` (title, top-level fields) must hold. Each pins its own `apiVersion`, so
/// an editor reports the errors of the layout the document names.
pub fn schema_one_of(id: &str, title: &str, layouts: &[(&str, &[Field])]) -> Value {
    let variants: Vec<Value> = layouts
        .iter()
        .map(|(title, fields)| {
            let mut o = object(fields);
            o["title"] = json!(title);
            o
        })
        .collect();
    with_head(id, title, json!({ "oneOf": variants }))
}

/// The JSON Schema of the executor's categorizer config, `fields` being the `errorCategories`
/// mapping: either at the document's top or under `application` (an executor config as
/// deployed); every other key of the document is the executor's and allowed. The decoder reads
/// keys in any case and only warns of a key upstream does not know, so no object here is
/// closed, and none requires a key or states a rule between keys (`Name:` is the required
/// `name`; a JSON Schema cannot match keys in any case): the schema names the canonical
/// spellings (an editor completes them) and checks their values, and accepts what `validate`
/// accepts.
pub fn schema_categorizer(id: &str, title: &str, fields: &[Field]) -> Value {
    fn open(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for key in ["additionalProperties", "required", "allOf"] {
                    m.remove(key);
                }
                m.values_mut().for_each(open);
            }
            Value::Array(a) => a.iter_mut().for_each(open),
            _ => {}
        }
    }
    let mut body = nullable(object(fields));
    open(&mut body);
    body["description"] = json!("The executor's error categorizer.");
    // The two keys that say where the config is may be written in any case too: a key
    // matching `any_case(key)` must be there (`not` all names fail it), and whatever its case
    // its value is checked.
    let any_case = |key: &str| -> String {
        let letters: String = key
            .chars()
            .map(|c| format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase()))
            .collect();
        format!("^{letters}$")
    };
    let holding = |title: &str, key: &str, value: Value| {
        json!({
            "title": title,
            "type": "object",
            "properties": {key: value.clone()},
            "patternProperties": {any_case(key): value},
            "not": {"propertyNames": {"not": {"pattern": any_case(key)}}},
        })
    };
    let bare = holding(
        "a document whose top level is errorCategories",
        "errorCategories",
        body.clone(),
    );
    let executor = holding(
        "an executor config (application.errorCategories)",
        "application",
        holding("application", "errorCategories", body),
    );
    with_head(id, title, json!({"anyOf": [bare, executor]}))
}

fn with_head(id: &str, title: &str, mut body: Value) -> Value {
    let m = body.as_object_mut().expect("an object schema");
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
        // The decoder reads a null optional field (`retryLimit:` with nothing after it) as
        // not set, as Kubernetes does; a required one given null is missing.
        let mut s = if f.required { ty(&f.ty) } else { nullable(ty(&f.ty)) };
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

/// `schema`, also accepting null, kept flat (`properties` and `items` stay where an editor
/// and a reader look for them): null joins the `type`, the `enum` or the `anyOf`.
fn nullable(mut schema: Value) -> Value {
    let o = schema.as_object_mut().expect("schemas are objects");
    if let Some(t) = o.get_mut("type") {
        let mut types = match t.take() {
            Value::Array(a) => a,
            one => vec![one],
        };
        types.push(json!("null"));
        *t = Value::Array(types);
    } else if let Some(Value::Array(values)) = o.get_mut("enum") {
        values.push(Value::Null);
    } else if let Some(Value::Array(any)) = o.get_mut("anyOf") {
        any.push(json!({"type": "null"}));
    } else {
        return json!({"anyOf": [schema, {"type": "null"}]});
    }
    schema
}

fn ty(t: &Ty) -> Value {
    match t {
        // The decoder reads any scalar as text (`name: 123` is the name `123`), so a YAML
        // number or boolean is a string to it; a pattern constrains strings only.
        Ty::Str => json!({"type": SCALAR}),
        Ty::Pattern(p) => json!({"type": SCALAR, "pattern": p}),
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
        // `Action::parse`: the canonical names (offered by editors), any case, upstream's
        // `RETRY_ACTION_*` names; `Action::from_number`: its enum numbers (1 = Fail, 2 =
        // Retry), as numbers only (upstream refuses the text `"1"`).
        Ty::Action => json!({"anyOf": [
            {"enum": Action::NAMES},
            {"type": "string", "pattern": ACTION_PATTERN},
            {"enum": [1, 2]},
        ]}),
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
        Ty::StringMap => json!({"type": "object", "additionalProperties": {"type": SCALAR, "minLength": 1}}),
        Ty::Object(fields) => object(fields),
        Ty::NonEmpty(items) => {
            let mut o = ty(items);
            o["minItems"] = json!(1);
            o
        }
        Ty::Above(min) => json!({"type": "number", "exclusiveMinimum": min}),
        // `parse_quantity`'s grammar with its suffixes, positive (no sign, a non-zero
        // digit); a YAML number is read as its text.
        Ty::Quantity => json!({"anyOf": [
            {"type": "string", "pattern": QUANTITY_PATTERN},
            {"type": "number", "exclusiveMinimum": 0},
        ]}),
        // Characters, not bytes: never stricter than the validator's 1024 bytes.
        Ty::Regex => json!({"type": SCALAR, "maxLength": 1024}),
        Ty::Checked(fields, constraints) => {
            let mut o = object(fields);
            let rules: Vec<Value> = constraints.iter().map(constraint).collect();
            o["allOf"] = json!(rules);
            o
        }
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
        if let Ty::Action = &f.ty {
            writeln!(out, "    One of: {}", Action::NAMES.join(", "))?;
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

    /// The schema's quantity pattern accepts what `parse_quantity` accepts as positive
    /// (bounds aside: `1e400` overflows).
    #[test]
    fn quantity_pattern_agrees_with_the_parser() {
        let re = regex::Regex::new(QUANTITY_PATTERN).unwrap();
        for text in [
            "512Mi", "1Gi", "1.5G", "100m", "1e3", "1E-3", "0", "0.0", "-1Gi", "+1Gi", "1Gb", "abc", "", "1.", ".5",
            ".", "1..2", "2500k", "0.001m", "00", "1e", "1Ki ", " 2", "1KiB", "1i",
        ] {
            let parsed = crate::model::quantity::parse_quantity(text).is_ok_and(|b| b > 0.0);
            assert_eq!(re.is_match(text), parsed, "`{text}`");
        }
    }

    /// The schema's action pattern accepts what `Action::parse` accepts.
    #[test]
    fn action_pattern_agrees_with_the_parser() {
        let re = regex::Regex::new(ACTION_PATTERN).unwrap();
        for text in [
            "Retry",
            "retry",
            "FAIL",
            "fAiL",
            "1",
            "2",
            "3",
            "0",
            "RETRY_ACTION_RETRY",
            "retry_action_fail",
            "Retry_Action_Retry",
            "RETRY_ACTION_2",
            "RETRY_ACTION_",
            "Retri",
            " Retry ",
            " Fail",
            "",
            "RETRY_ACTION_UNSPECIFIED",
            "RetryFail",
        ] {
            assert_eq!(re.is_match(text), Action::parse(text).is_some(), "`{text}`");
        }
    }

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
