//! The OpenAPI 3.1 document (docs/rules.md, configuration), generated from the endpoint
//! table and the JSON Schemas of the very types dispatch parses and
//! renders, and the offline `/docs` page that reads it.

use std::sync::OnceLock;

use bytes::Bytes;
use schemars::Schema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};
use taskboard_core::api::{
    self, BodyKind, Endpoint, Method, QueryParams, Reply, ReplyKind, RequestBody, Visitor,
};
use taskboard_core::error::ErrorBody;

/// The interactive reference page: one self-contained file, no CDN.
pub(crate) const DOCS_PAGE: &str = include_str!("docs.html");

/// What an endpoint takes and gives, as schemas.
struct Io {
    body: Option<(&'static str, Value)>,
    query: Vec<Value>,
    response: Option<Value>,
}

fn io<E: Endpoint>(g: &mut SchemaGenerator) -> Io {
    let body = match E::Body::KIND {
        BodyKind::None => None,
        BodyKind::Json => E::Body::schema(g).map(|s| ("application/json", s.to_value())),
        BodyKind::Multipart => {
            let mut form = json!({
                "type": "object",
                "required": ["file"],
                "properties": {"file": {"type": "string", "contentMediaType": "application/octet-stream"}}
            });
            if E::INFO.description.contains("description") && E::INFO.method == Method::Post {
                form["properties"]["description"] = json!({"type": "string"});
            }
            Some(("multipart/form-data", form))
        }
    };
    let query = E::Query::schema(g).map(|s| query_params(&s)).unwrap_or_default();
    let response = match E::Response::KIND {
        ReplyKind::Json => E::Response::schema(g).map(|s| s.to_value()),
        ReplyKind::Download => {
            Some(json!({"type": "string", "contentMediaType": "application/octet-stream"}))
        }
        ReplyKind::Upgrade => None,
    };
    Io { body, query, response }
}

/// The fields of a query type as OpenAPI query parameters.
fn query_params(schema: &Schema) -> Vec<Value> {
    let root = schema.as_value();
    let required: Vec<&str> = root
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params = Vec::new();
    if let Some(Value::Object(props)) = root.get("properties") {
        for (name, prop) in props {
            let mut prop = prop.clone();
            let description = prop.as_object_mut().and_then(|p| p.remove("description"));
            let mut param = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": prop,
            });
            if let Some(d) = description {
                param["description"] = d;
            }
            params.push(param);
        }
    }
    params
}

fn path_params(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| {
            json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}})
        })
        .collect()
}

/// The whole document.
pub fn openapi_document() -> Value {
    let mut g = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator();
    let error = g.subschema_for::<ErrorBody>().to_value();
    let mut paths = Map::new();
    struct Operations<'a> {
        g: &'a mut SchemaGenerator,
        error: Value,
        paths: &'a mut Map<String, Value>,
    }
    impl Visitor for Operations<'_> {
        fn visit<E: Endpoint>(&mut self) {
            let e = &E::INFO;
            let io = io::<E>(self.g);
            let mut parameters = path_params(e.path);
            parameters.extend(io.query);
            let success = match (E::Response::KIND, io.response) {
                (ReplyKind::Download, Some(schema)) => {
                    json!({"description": "The file content", "content": {"application/octet-stream": {"schema": schema}}})
                }
                (ReplyKind::Json, Some(schema)) => {
                    json!({"description": "Success", "content": {"application/json": {"schema": schema}}})
                }
                _ => json!({"description": "Switching to the WebSocket protocol"}),
            };
            let mut responses = Map::new();
            responses.insert(e.status.to_string(), success);
            if E::Response::MAY_BE_EMPTY {
                responses.insert("204".into(), json!({"description": "Nothing to answer: no body"}));
            }
            responses.insert(
                "default".into(),
                json!({"description": "An error: `detail` says what went wrong, `code` its kind", "content": {"application/json": {"schema": self.error}}}),
            );
            let mut op = json!({
                "operationId": e.name,
                "summary": e.summary,
                "description": e.description,
                "tags": [tag(e.path)],
                "parameters": parameters,
                "responses": responses,
            });
            if let Some((media, body)) = io.body {
                op["requestBody"] = json!({"required": true, "content": {media: {"schema": body}}});
            }
            if !e.auth {
                op["security"] = json!([]);
            }
            let item = self.paths.entry(e.path.to_string()).or_insert_with(|| json!({}));
            item[e.method.as_str().to_lowercase()] = op;
        }
    }
    api::visit_all(&mut Operations { g: &mut g, error, paths: &mut paths });
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Taskboard",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Task board for humans and agents. Credentials: `Authorization: Bearer <token>` or `?token=`."
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": g.take_definitions(true),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "A login JWT or an agent token (tbk-…)"}
            }
        }
    })
}

fn tag(path: &str) -> &str {
    let rest = path.strip_prefix("/api/v1/").unwrap_or("utility");
    rest.split('/').next().unwrap_or("utility")
}

/// The document rendered once.
pub(crate) fn document_bytes() -> Bytes {
    static DOC: OnceLock<Bytes> = OnceLock::new();
    DOC.get_or_init(|| Bytes::from(serde_json::to_vec_pretty(&openapi_document()).unwrap_or_default()))
        .clone()
}

#[cfg(test)]
mod tests {
    use taskboard_core::api::BodyKind;

    #[test]
    fn every_endpoint_has_a_response_schema_and_bodies_have_request_schemas() {
        struct Check(serde_json::Value);
        impl super::Visitor for Check {
            fn visit<E: super::Endpoint>(&mut self) {
                let e = &E::INFO;
                let op = &self.0["paths"][e.path][e.method.as_str().to_lowercase()];
                assert_eq!(op["operationId"], e.name, "{}", e.path);
                assert!(op["responses"][e.status.to_string()].is_object(), "{}", e.name);
                let has_body = <E::Body as super::RequestBody>::KIND != BodyKind::None;
                assert_eq!(op["requestBody"].is_object(), has_body, "{}", e.name);
            }
        }
        let doc = super::openapi_document();
        assert!(doc["components"]["schemas"]["Task"].is_object());
        taskboard_core::api::visit_all(&mut Check(doc));
    }
}
