//! The API reference of `docs/api.md`, rendered in Markdown from the
//! OpenAPI document, so the reference a reader of the repository sees is
//! the one the server publishes. The tests below fail when a document of
//! `docs/` no longer matches the code.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde_json::Value;

/// Set to rewrite `docs/api.md` instead of failing when it is stale:
/// `TASKBOARD_UPDATE_DOCS=1 cargo test -p taskboard-server reference`.
pub const UPDATE_DOCS_ENV: &str = "TASKBOARD_UPDATE_DOCS";

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// One operation of the document.
struct Operation<'a> {
    method: &'static str,
    path: &'a str,
    op: &'a Value,
}

impl Operation<'_> {
    fn tag(&self) -> &str {
        self.op["tags"][0].as_str().unwrap_or("other")
    }

    fn title(&self) -> &str {
        self.op["summary"].as_str().or(self.op["operationId"].as_str()).unwrap_or(self.path)
    }
}

/// The Markdown reference of every operation of `doc`, grouped by tag in
/// the order of the endpoint declarations, followed by the types.
pub fn api_reference(doc: &Value) -> String {
    let r = Reference { schemas: &doc["components"]["schemas"] };
    let ops = operations(doc);
    let mut tags: Vec<&str> = Vec::new();
    for op in &ops {
        if !tags.contains(&op.tag()) {
            tags.push(op.tag());
        }
    }

    let mut out = String::new();
    out.push_str(
        "# API reference\n\n\
         <!-- Generated from the OpenAPI document by taskboard-server/src/reference.rs; do not edit.\n     \
         Regenerate with: TASKBOARD_UPDATE_DOCS=1 cargo test -p taskboard-server reference -->\n\n\
         Every operation of the HTTP API, generated from the OpenAPI document that the server \
         publishes at `/openapi.json` when started with `--dev`. The rules behind the operations \
         are in [rules.md](rules.md), the events of the WebSocket stream in [events.md](events.md).\n\n",
    );
    if let Some(text) = doc["info"]["description"].as_str() {
        let _ = writeln!(out, "{text}\n");
    }
    for server in doc["servers"].as_array().into_iter().flatten() {
        let url = server["url"].as_str().unwrap_or_default();
        let note = server["description"].as_str().map(|d| format!(": {d}")).unwrap_or_default();
        let _ = writeln!(out, "Server `{url}`{note}.\n");
    }
    if let Some(Value::Object(schemes)) = doc["components"].get("securitySchemes") {
        for (name, scheme) in schemes {
            let text = scheme["description"].as_str().unwrap_or_default();
            let _ = writeln!(out, "Credentials (`{name}`): {text}.\n");
        }
    }

    if r.schemas.get("ErrorBody").is_some() {
        out.push_str("Every error is answered with an [`ErrorBody`](#errorbody).\n\n");
    }
    out.push_str("## Contents\n\n| method | path | operation |\n|---|---|---|\n");
    for tag in &tags {
        for op in ops.iter().filter(|o| o.tag() == *tag) {
            let title = op.title();
            let _ = writeln!(
                out,
                "| {} | `{}` | [{}](#{}) |",
                op.method.to_uppercase(),
                op.path,
                cell(title),
                anchor(title)
            );
        }
    }
    out.push_str("\nTypes: [objects](#types), [values](#values).\n\n");

    for tag in &tags {
        let _ = write!(out, "## {tag}\n\n");
        for op in ops.iter().filter(|o| o.tag() == *tag) {
            r.operation(&mut out, op, doc);
        }
    }

    out.push_str("## Types\n\nThe objects that requests and answers carry, by name.\n\n");
    let mut values = String::new();
    for (name, schema) in r.schemas.as_object().into_iter().flatten() {
        if is_object(schema) {
            let _ = write!(out, "### {name}\n\n");
            if let Some(d) = schema["description"].as_str() {
                let _ = writeln!(out, "{d}\n");
            }
            r.fields(&mut out, schema);
        } else {
            let desc = schema["description"].as_str().unwrap_or_default();
            let _ = writeln!(values, "| `{name}` | {} | {} |", cell(&r.type_text(schema)), cell(desc));
        }
    }
    if !values.is_empty() {
        out.push_str("## Values\n\nNamed value types, shown in place wherever they are used.\n\n");
        out.push_str("| name | type | description |\n|---|---|---|\n");
        out.push_str(&values);
    }
    out
}

/// The operations of `doc`, in the order of the endpoint declarations;
/// any the declarations do not know come last, by path.
fn operations(doc: &Value) -> Vec<Operation<'_>> {
    let order: Vec<&str> = taskboard_core::api::infos().iter().map(|i| i.name).collect();
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for method in METHODS {
            if let Some(op) = item.get(method) {
                ops.push(Operation { method, path, op });
            }
        }
    }
    let rank = |o: &Operation| {
        let id = o.op["operationId"].as_str().unwrap_or_default();
        order.iter().position(|n| *n == id).unwrap_or(order.len())
    };
    ops.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.path.cmp(b.path)));
    ops
}

struct Reference<'a> {
    schemas: &'a Value,
}

impl Reference<'_> {
    fn operation(&self, out: &mut String, o: &Operation, doc: &Value) {
        let op = o.op;
        let _ = write!(out, "### {}\n\n", o.title());
        let security = op.get("security").unwrap_or(&doc["security"]);
        let auth = match (security.as_array(), op["x-taskboard-scope"].as_str()) {
            (Some(s), Some(scope)) if !s.is_empty() => format!("credentials required (scope `{scope}`)"),
            (Some(s), None) if !s.is_empty() => "credentials required".to_string(),
            _ => "no credentials".to_string(),
        };
        let id = op["operationId"].as_str().unwrap_or_default();
        let _ = writeln!(out, "`{} {}` · {auth} · operation `{id}`\n", o.method.to_uppercase(), o.path);
        if let Some(d) = op["description"].as_str() {
            let _ = writeln!(out, "{d}\n");
        }

        let params = op["parameters"].as_array().map(Vec::as_slice).unwrap_or_default();
        if !params.is_empty() {
            out.push_str("| parameter | in | type | required | description |\n|---|---|---|---|---|\n");
            for p in params {
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} | {} |",
                    p["name"].as_str().unwrap_or_default(),
                    p["in"].as_str().unwrap_or_default(),
                    // A parameter left out is absent, never null.
                    cell(self.type_text(&p["schema"]).trim_end_matches(" or null")),
                    if p["required"] == Value::Bool(true) { "yes" } else { "no" },
                    cell(&self.described(&p["schema"], p["description"].as_str())),
                );
            }
            out.push('\n');
        }

        for (media, body) in op["requestBody"]["content"].as_object().into_iter().flatten() {
            let schema = &body["schema"];
            let named =
                if is_object(schema) { String::new() } else { format!(": {}", self.type_text(schema)) };
            let _ = writeln!(out, "Request body (`{media}`){named}\n");
            self.fields(out, self.resolve(schema));
        }

        let mut errors = Vec::new();
        for (status, response) in op["responses"].as_object().into_iter().flatten() {
            if !(status.starts_with('1') || status.starts_with('2') || status.starts_with('3')) {
                errors.push((status, response));
                continue;
            }
            let _ = write!(out, "Answer `{status}`");
            let content = response["content"].as_object();
            match content.and_then(|c| c.iter().next()) {
                Some((media, body)) => {
                    let schema = &body["schema"];
                    let _ = write!(out, " (`{media}`): {}", self.type_text(schema));
                    let fields = self.field_names(schema);
                    if !fields.is_empty() {
                        let _ = write!(out, ", with {fields}");
                    }
                    out.push_str(".\n\n");
                }
                None => {
                    let _ = writeln!(out, ": {}.\n", response["description"].as_str().unwrap_or_default());
                }
            }
        }
        if !errors.is_empty() {
            out.push_str("Errors:\n\n");
            for (status, response) in errors {
                let status =
                    if status == "default" { "other statuses".to_string() } else { format!("`{status}`") };
                let text = response["description"].as_str().unwrap_or_default();
                let _ = writeln!(out, "- {status}: {text}");
            }
            out.push('\n');
        }
    }

    /// The table of an object's fields; nothing for a schema without.
    fn fields(&self, out: &mut String, schema: &Value) {
        let Some(props) = schema["properties"].as_object() else { return };
        let required: BTreeSet<&str> =
            schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        out.push_str("| field | type | required | description |\n|---|---|---|---|\n");
        for (name, prop) in props {
            let _ = writeln!(
                out,
                "| `{name}` | {} | {} | {} |",
                cell(&self.type_text(prop)),
                if required.contains(name.as_str()) { "yes" } else { "no" },
                cell(&self.described(prop, None)),
            );
        }
        out.push('\n');
    }

    /// "`a`, `b`, `c`": the fields of the object a schema names, directly
    /// or as the items of an array.
    fn field_names(&self, schema: &Value) -> String {
        let target = if schema["type"] == "array" { &schema["items"] } else { schema };
        let target = self.resolve(target);
        let names: Vec<String> = target["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, _)| format!("`{name}`"))
            .collect();
        names.join(", ")
    }

    /// A field's description: its own, else that of the type it names,
    /// with its default.
    fn described(&self, schema: &Value, own: Option<&str>) -> String {
        let inner = schema["anyOf"].as_array().and_then(|a| a.iter().find(|s| s.get("$ref").is_some()));
        let named = self.resolve(inner.unwrap_or(schema));
        let mut text = own
            .or(schema["description"].as_str())
            .or(named["description"].as_str())
            .unwrap_or_default()
            .to_string();
        if let Some(default) = schema.get("default") {
            if !text.is_empty() && !text.ends_with('.') {
                text.push('.');
            }
            let sep = if text.is_empty() { "" } else { " " };
            let _ = write!(text, "{sep}Default `{}`.", plain(default));
        }
        text
    }

    /// The schema a `$ref` points to, or the schema itself.
    fn resolve<'s>(&'s self, schema: &'s Value) -> &'s Value {
        match schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()) {
            Some(name) => &self.schemas[name],
            None => schema,
        }
    }

    /// A schema in words: objects as links to their table, every other
    /// type in place with its limits.
    fn type_text(&self, schema: &Value) -> String {
        match schema {
            Value::Bool(true) => return "any value".into(),
            Value::Bool(false) => return "nothing".into(),
            _ => {}
        }
        if let Some(name) = schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()) {
            let target = &self.schemas[name];
            return if is_object(target) {
                format!("[`{name}`](#{})", anchor(name))
            } else {
                self.type_text(target)
            };
        }
        let mut nullable = false;
        let mut text = if let Some(alts) = schema["anyOf"].as_array().or(schema["oneOf"].as_array()) {
            let mut parts = Vec::new();
            for alt in alts {
                if alt["type"] == "null" {
                    nullable = true;
                } else {
                    parts.push(self.type_text(alt));
                }
            }
            parts.join(" or ")
        } else if let Some(values) = schema["enum"].as_array() {
            nullable = values.contains(&Value::Null);
            let values: Vec<String> =
                values.iter().filter(|v| !v.is_null()).map(|v| format!("`{}`", plain(v))).collect();
            format!("one of {}", values.join(", "))
        } else if let Some(value) = schema.get("const") {
            format!("`{}`", plain(value))
        } else {
            let types: Vec<&str> = match &schema["type"] {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            nullable = types.contains(&"null");
            let base = types.iter().find(|t| **t != "null").copied().unwrap_or("any value");
            let mut text = match base {
                "array" => format!("array of {}", self.type_text(&schema["items"])),
                "object" => match schema.get("additionalProperties") {
                    Some(v) if v.is_object() => format!("map of string to {}", self.type_text(v)),
                    _ => "object".into(),
                },
                "string" => match schema["format"].as_str() {
                    Some("uuid") => "uuid".into(),
                    Some("date-time") => "timestamp".into(),
                    _ if schema.get("contentMediaType").is_some() => "file".into(),
                    _ => "string".into(),
                },
                other => other.into(),
            };
            let limits = limits(schema);
            if !limits.is_empty() {
                let _ = write!(text, " ({limits})");
            }
            text
        };
        if nullable {
            text.push_str(" or null");
        }
        text
    }
}

/// Length, range and pattern limits of a schema, in words.
fn limits(schema: &Value) -> String {
    let range = |lo: &str, hi: &str, unit: &str| match (&schema[lo], &schema[hi]) {
        (Value::Number(a), Value::Number(b)) => Some(format!("{a}–{b}{unit}")),
        (Value::Number(a), _) => Some(format!("at least {a}{unit}")),
        (_, Value::Number(b)) => Some(format!("at most {b}{unit}")),
        _ => None,
    };
    let mut parts: Vec<String> = [
        range("minLength", "maxLength", " characters"),
        range("minimum", "maximum", ""),
        range("minItems", "maxItems", " items"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let Some(p) = schema["pattern"].as_str() {
        parts.push(format!("matching `{p}`"));
    }
    parts.join(", ")
}

/// A schema describes an object worth a table of its own.
fn is_object(schema: &Value) -> bool {
    schema.get("properties").is_some()
}

/// A JSON value as it is written in an enum: strings without quotes.
fn plain(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Text fit for one table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The anchor a Markdown renderer (GitHub's) gives a heading.
fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use taskboard_core::events::EventKind;

    fn repository() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    fn read(path: &str) -> String {
        std::fs::read_to_string(repository().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn docs_api_md_is_the_reference_of_the_openapi_document() {
        let fresh = api_reference(&crate::openapi_document());
        let path = repository().join("docs/api.md");
        if std::env::var_os(UPDATE_DOCS_ENV).is_some() {
            std::fs::write(&path, &fresh).unwrap();
            return;
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != fresh {
            let line = current.lines().zip(fresh.lines()).position(|(a, b)| a != b);
            let line = line.unwrap_or(current.lines().count().min(fresh.lines().count())) + 1;
            panic!(
                "docs/api.md differs from the OpenAPI document from line {line} on. Regenerate it with \
                 `{UPDATE_DOCS_ENV}=1 cargo test -p taskboard-server reference` and commit it."
            );
        }
    }

    #[test]
    fn the_reference_shows_types_limits_and_credentials() {
        let text = api_reference(&crate::openapi_document());
        assert!(text.contains(
            "### Create a task\n\n`POST /api/v1/tasks` · credentials required (scope `tasks:write`)"
        ));
        assert!(text.contains("`GET /health` · no credentials"));
        assert!(text.contains("| `title` | string (1–500 characters) | yes |"), "limits of a body field");
        assert!(
            text.contains("| `status` | query | one of `backlog`, `todo`, `in_progress`, `review`, `done`")
        );
        assert!(
            text.contains(
                "Answer `201` (`application/json`): [`Task`](#task), with `id`, `project`, `number`"
            )
        );
        assert!(text.contains("\n### Task\n"));
        let anchors: BTreeSet<String> =
            text.lines().filter_map(|l| l.strip_prefix("### ")).map(anchor).collect();
        for link in text.split("](#").skip(1) {
            let target = &link[..link.find(')').unwrap()];
            assert!(anchors.contains(target) || target == "types" || target == "values", "#{target}");
        }
    }

    fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, files);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }

    #[test]
    fn docs_events_md_describes_every_kind_of_event_and_the_core_emits_each() {
        let mut source = String::new();
        let mut files = Vec::new();
        rust_files(&repository().join("taskboard-core/src"), &mut files);
        for file in files.iter().filter(|f| !f.ends_with("events/kind.rs")) {
            source.push_str(&std::fs::read_to_string(file).unwrap());
        }
        let kinds: BTreeSet<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
        let unused: Vec<_> =
            EventKind::ALL.iter().filter(|k| !source.contains(&format!("EventKind::{k:?}"))).collect();
        assert!(unused.is_empty(), "the core never emits {unused:?}");
        let text = read("docs/events.md");
        let catalogue: BTreeSet<&str> =
            text.lines().filter_map(|l| l.strip_prefix("#### `")?.split('`').next()).collect();
        let missing: Vec<_> = kinds.difference(&catalogue).collect();
        assert!(missing.is_empty(), "docs/events.md does not describe {missing:?}");
        let stale: Vec<_> = catalogue.difference(&kinds).collect();
        assert!(stale.is_empty(), "docs/events.md describes {stale:?}, which is no kind of event");
    }

    #[test]
    fn nothing_points_outside_the_repository() {
        // Spelled in pieces so that this file does not match itself.
        let outside = [concat!("shared", "/spec"), concat!("DECI", "SIONS"), concat!("REST-", "INTERFACE")];
        let mut files = vec![repository().join("README.md")];
        for entry in std::fs::read_dir(repository().join("docs")).unwrap() {
            files.push(entry.unwrap().path());
        }
        for dir in std::fs::read_dir(repository()).unwrap().filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.starts_with("taskboard-").then(|| format!("{name}/src"))
        }) {
            rust_files(&repository().join(&dir), &mut files);
        }
        let mut found = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            for (n, line) in text.lines().enumerate() {
                if outside.iter().any(|o| line.contains(o)) {
                    let name = file.strip_prefix(repository()).unwrap_or(file);
                    found.push(format!("{}:{}: {}", name.display(), n + 1, line.trim()));
                }
            }
        }
        let document = crate::openapi_document().to_string();
        if outside.iter().any(|o| document.contains(o)) {
            found.push("the OpenAPI document".into());
        }
        assert!(
            found.is_empty(),
            "a clone of the repository has no such file; name the section of docs/rules.md \
             or docs/decisions.md instead:\n{}",
            found.join("\n")
        );
    }
}
