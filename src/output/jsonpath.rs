//! kubectl's JSONPath templates (`-o jsonpath=`, `--sort-by`, `-o custom-columns=`) over the
//! objects `-o json` prints.
//!
//! Owns: the template syntax around the expressions. Must not: evaluate JSONPath itself:
//! that is the `serde_json_path` crate (RFC 9535), so filters, wildcards, slices and
//! recursive descent behave as the standard says.
//!
//! How kubectl's dialect maps onto RFC 9535:
//! - a template is literal text with `{...}` blocks; text outside blocks is printed as is;
//! - `{.a.b}` / `{.items[*].name}` / `{..name}` is an expression relative to the current
//!   object: it becomes `$.a.b` (a leading `$`, or kubectl's `@` for the current object, is
//!   accepted too); several results print separated by one space, as kubectl prints them;
//! - `{range EXPR}...{end}` repeats the inner template for each result of EXPR, with that
//!   result as the current object;
//! - `{"text"}` prints a quoted literal, with `\n` and `\t` escapes (`{"\n"}` ends a line);
//! - filters are written as kubectl writes them, `[?(@.spec.retryLimit > 3)]`, which RFC 9535
//!   reads as a parenthesised filter expression.
//!
//! Values print as kubectl prints them: strings raw, numbers and booleans as JSON, objects
//! and arrays as compact JSON.

use serde_json::Value;
use serde_json_path::JsonPath;

/// One part of a parsed template.
#[derive(Debug)]
enum Part {
    Text(String),
    Expr(JsonPath),
    Range(JsonPath, Vec<Part>),
}

/// A parsed kubectl JSONPath template.
#[derive(Debug)]
pub struct Template {
    parts: Vec<Part>,
}

/// An expression in kubectl's form (`.a.b`, `{.a.b}`, `$.a`) as an RFC 9535 query.
pub fn compile(expr: &str) -> Result<JsonPath, String> {
    let e = expr.trim();
    let e = e
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .unwrap_or(e)
        .trim();
    // kubectl's `@` is the current object, RFC 9535's `$` here (each query runs on it).
    let e = match e.strip_prefix('@') {
        Some(rest) => rest,
        None => e,
    };
    let e = if e.is_empty() { "$" } else { e };
    let query = if e.starts_with('$') {
        e.to_string()
    } else if e.starts_with('.') || e.starts_with('[') {
        format!("${e}")
    } else {
        format!("$.{e}")
    };
    JsonPath::parse(&query).map_err(|err| format!("invalid JSONPath `{e}`: {err}"))
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut stack: Vec<(Option<JsonPath>, Vec<Part>)> = vec![(None, Vec::new())];
        let mut rest = text;
        while !rest.is_empty() {
            let Some(open) = rest.find('{') else {
                stack.last_mut().expect("root").1.push(Part::Text(rest.to_string()));
                break;
            };
            if open > 0 {
                stack
                    .last_mut()
                    .expect("root")
                    .1
                    .push(Part::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 1..];
            let close = block_end(after).ok_or_else(|| format!("unclosed `{{` in template `{text}`"))?;
            let block = after[..close].trim();
            rest = &after[close + 1..];
            if let Some(expr) = block.strip_prefix("range ") {
                stack.push((Some(compile(expr)?), Vec::new()));
            } else if block == "end" {
                if stack.len() == 1 {
                    return Err(format!("`{{end}}` without `{{range}}` in template `{text}`"));
                }
                let (path, parts) = stack.pop().expect("checked");
                stack
                    .last_mut()
                    .expect("root")
                    .1
                    .push(Part::Range(path.expect("a range"), parts));
            } else if let Some(lit) = block.strip_prefix('"').and_then(|b| b.strip_suffix('"')) {
                stack.last_mut().expect("root").1.push(Part::Text(unescape(lit)));
            } else {
                stack.last_mut().expect("root").1.push(Part::Expr(compile(block)?));
            }
        }
        if stack.len() != 1 {
            return Err(format!("`{{range}}` without `{{end}}` in template `{text}`"));
        }
        Ok(Template {
            parts: stack.pop().expect("root").1,
        })
    }

    pub fn render(&self, value: &Value) -> String {
        let mut out = String::new();
        render_parts(&self.parts, value, &mut out);
        out
    }
}

/// The index of the `}` closing a block, skipping braces inside quoted strings.
fn block_end(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(_), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(q), c) if c == q && !escaped => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '}') => return Some(i),
            _ => {}
        }
        escaped = false;
    }
    None
}

fn unescape(s: &str) -> String {
    s.replace("\\n", "\n").replace("\\t", "\t").replace("\\\"", "\"")
}

fn render_parts(parts: &[Part], value: &Value, out: &mut String) {
    for part in parts {
        match part {
            Part::Text(t) => out.push_str(t),
            Part::Expr(p) => {
                let found: Vec<String> = p.query(value).all().into_iter().map(scalar).collect();
                out.push_str(&found.join(" "));
            }
            Part::Range(p, inner) => {
                for item in p.query(value).all() {
                    render_parts(inner, item, out);
                }
            }
        }
    }
}

/// A value as kubectl prints it in templates and columns.
pub fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list() -> Value {
        json!({"apiVersion": "v1", "kind": "List", "items": [
            {"metadata": {"name": "infra"}, "spec": {"retryLimit": 3}},
            {"metadata": {"name": "ml"}, "spec": {"retryLimit": 5, "rules": [{"action": "Retry"}]}},
        ]})
    }

    fn render(t: &str) -> String {
        Template::parse(t).unwrap().render(&list())
    }

    #[test]
    fn kubectl_templates() {
        assert_eq!(render("{.items[*].metadata.name}"), "infra ml");
        assert_eq!(
            render(r#"{range .items[*]}{.metadata.name}{"\t"}{.spec.retryLimit}{"\n"}{end}"#),
            "infra\t3\nml\t5\n"
        );
        assert_eq!(render("{.items[?(@.spec.retryLimit > 3)].metadata.name}"), "ml");
        assert_eq!(render("names: {.items[0].metadata.name}!"), "names: infra!");
        assert_eq!(render("{.kind}"), "List");
        assert_eq!(render("{.items[1].spec.rules}"), r#"[{"action":"Retry"}]"#);
        assert_eq!(render("{..retryLimit}"), "3 5");
        assert_eq!(render("{range .items[*]}[{@.metadata.name}]{end}"), "[infra][ml]");
        assert_eq!(render("{.items[0].metadata}"), r#"{"name":"infra"}"#);
    }

    #[test]
    fn template_errors_say_what_is_wrong() {
        assert_eq!(
            Template::parse("{.items[*].name").unwrap_err(),
            "unclosed `{` in template `{.items[*].name`"
        );
        assert_eq!(
            Template::parse("{range .items[*]}{.x}").unwrap_err(),
            "`{range}` without `{end}` in template `{range .items[*]}{.x}`"
        );
        assert!(Template::parse("{.items[?(@.x ==]}")
            .unwrap_err()
            .starts_with("invalid JSONPath"));
    }
}
