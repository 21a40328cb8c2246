//! Tool schemas built from the endpoints' own types, and the decoding of
//! tool arguments into those types (so the core's validation, and its
//! details, apply to a tool call exactly as to a request).

use rmcp::model::JsonObject;
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use taskboard_wire::{BodyKind, Endpoint, QueryParams, RawBody, Reply, RequestBody};
use taskboard_wire::{Error, Result};

/// Subschemas inlined: a tool's schema is a document of its own, and a
/// model reads it more easily without references.
fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
}

fn properties(schema: Option<Value>) -> (Map<String, Value>, Vec<String>) {
    let Some(Value::Object(mut schema)) = schema else { return (Map::new(), Vec::new()) };
    let props = match schema.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let required = match schema.remove("required") {
        Some(Value::Array(r)) => r.into_iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    };
    (props, required)
}

/// The names of the query fields of `E`.
fn query_fields<E: Endpoint>() -> Vec<String> {
    properties(E::Query::schema(&mut generator()).map(|s| s.to_value())).0.keys().cloned().collect()
}

/// Paging by cursor needs the `Link` header, which a tool result has not.
const NOT_ARGUMENTS: &[&str] = &["cursor"];

/// A tool's input schema: the properties of the endpoint's query and body
/// (less `skip`, the fields an argument by key or slug fills), after the
/// arguments given with [`Input::arg`].
pub(crate) struct Input {
    props: Map<String, Value>,
    required: Vec<String>,
}

impl Input {
    pub fn new() -> Input {
        Input { props: Map::new(), required: Vec::new() }
    }

    /// An argument of the tool's own (a reference by key or slug, or a
    /// choice the tool makes before calling the endpoint).
    pub fn arg(mut self, name: &str, schema: Value, required: bool) -> Input {
        self.props.insert(name.to_string(), schema);
        if required {
            self.required.push(name.to_string());
        }
        self
    }

    /// The query and body fields of `E`, less `skip`.
    pub fn endpoint<E: Endpoint>(mut self, skip: &[&str]) -> Input {
        let mut g = generator();
        let query = E::Query::schema(&mut g).map(|s| s.to_value());
        let body = E::Body::schema(&mut g).map(|s| s.to_value());
        for (props, required) in [properties(query), properties(body)] {
            for (name, schema) in props {
                if skip.contains(&name.as_str()) || NOT_ARGUMENTS.contains(&name.as_str()) {
                    continue;
                }
                self.props.entry(name).or_insert(schema);
            }
            for name in required {
                if !skip.contains(&name.as_str()) && !self.required.contains(&name) {
                    self.required.push(name);
                }
            }
        }
        self
    }

    pub fn build(self) -> JsonObject {
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Value::Object(self.props));
        if !self.required.is_empty() {
            schema.insert("required".into(), json!(self.required));
        }
        schema
    }
}

/// The JSON Schema of the answer of `E`, described to `depth` levels of
/// objects: deeper objects are only named as objects. Output schemas say
/// what a tool returns; the words are in the tool's description and its
/// input schema, and each level less keeps the tool list small in a
/// model's context (a Task is in the answer of nine tools).
pub(crate) fn response<E: Endpoint>(depth: usize) -> Value {
    let schema = E::Response::schema(&mut generator()).map(|s| s.to_value()).unwrap_or(json!({}));
    trim(schema, depth)
}

fn trim(schema: Value, depth: usize) -> Value {
    let Value::Object(mut map) = schema else { return schema };
    for word in ["description", "examples", "format", "minimum", "maximum", "title", "default"] {
        map.remove(word);
    }
    if let Some(Value::Object(props)) = map.remove("properties") {
        if depth == 0 {
            map.remove("required");
        } else {
            let props = props.into_iter().map(|(k, v)| (k, trim(v, depth - 1))).collect();
            map.insert("properties".into(), Value::Object(props));
        }
    }
    if let Some(items) = map.remove("items") {
        map.insert("items".into(), trim(items, depth));
    }
    for combinator in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = map.remove(combinator) {
            let options = options.into_iter().map(|o| trim(o, depth)).collect();
            map.insert(combinator.into(), Value::Array(options));
        }
    }
    Value::Object(map)
}

/// An output schema: an object with the answers under their names.
pub(crate) fn output(fields: &[(&str, Value)], required: &[&str]) -> JsonObject {
    let props: Map<String, Value> = fields.iter().map(|(n, s)| (n.to_string(), s.clone())).collect();
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    schema.insert("required".into(), json!(required));
    schema
}

/// The schema of a list of items of `item`'s schema.
pub(crate) fn list_of(item: Value) -> Value {
    json!({"type": "array", "items": item})
}

/// Decodes tool arguments (references already replaced by ids) into the
/// query and body of `E`: the query's fields go to the query, the rest to
/// the body, each decoded by the core as a request would be.
pub(crate) fn decode<E: Endpoint>(args: Map<String, Value>) -> Result<(E::Query, E::Body)> {
    let query_names = query_fields::<E>();
    let (query, body): (Map<String, Value>, Map<String, Value>) = args
        .into_iter()
        .filter(|(_, v)| !v.is_null() || E::Body::KIND == BodyKind::Json)
        .partition(|(k, _)| query_names.contains(k));
    let query = E::Query::from_json(Value::Object(query))?;
    let raw = match E::Body::KIND {
        BodyKind::None => RawBody::None,
        _ if body.is_empty() && E::Body::OPTIONAL => RawBody::None,
        _ => RawBody::Json(serde_json::to_vec(&body).map_err(Error::internal)?.into()),
    };
    let body = E::Body::decode(raw)?;
    Ok((query, body))
}

/// Refuses arguments the tool does not know, naming the nearest known
/// one (as a typo in a request is reported), or those it takes.
pub(crate) fn check_arguments(schema: &JsonObject, args: &Map<String, Value>) -> Result<()> {
    let Some(Value::Object(props)) = schema.get("properties") else { return Ok(()) };
    let unknown: Vec<String> = args.keys().filter(|k| !props.contains_key(*k)).cloned().collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let known: Vec<String> = props.keys().cloned().collect();
    Err(taskboard_wire::fields::unknown("argument", &unknown, &known))
}
