//! The OpenAPI 3.1 document (served in development mode), generated from the endpoint
//! declarations and the JSON Schemas of the very types dispatch parses and
//! renders, and the offline `/docs` page that reads it.

use std::sync::OnceLock;

use bytes::Bytes;
use schemars::Schema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};
use taskboard_core::api::{BodyKind, Endpoint, Method, QueryParams, Reply, ReplyKind, RequestBody};
use taskboard_core::error::ErrorBody;
use taskboard_core::wire::endpoint::{Visitor, visit_all};

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
        ReplyKind::Upgrade | ReplyKind::Redirect => None,
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
            let mut prop = not_null(prop.clone());
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

/// A query parameter is absent rather than null: the schema of an
/// optional field without its `null`.
fn not_null(mut schema: Value) -> Value {
    if let Some(alts) = schema.get("anyOf").and_then(Value::as_array) {
        let rest: Vec<&Value> = alts.iter().filter(|a| a.get("type") != Some(&json!("null"))).collect();
        if let [only] = rest.as_slice() {
            let mut merged = (*only).clone();
            if let (Some(m), Some(outer)) = (merged.as_object_mut(), schema.as_object()) {
                for (k, v) in outer {
                    if k != "anyOf" {
                        m.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
            schema = merged;
        }
    }
    if let Some(Value::Array(types)) = schema.get("type") {
        let types: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        schema["type"] = if types.len() == 1 { types[0].clone() } else { Value::Array(types) };
    }
    if schema.get("default") == Some(&Value::Null)
        && let Some(m) = schema.as_object_mut()
    {
        m.remove("default");
    }
    schema
}

fn path_params(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| {
            json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}})
        })
        .collect()
}

/// The error statuses an endpoint can answer, each with what it means:
/// those that follow from what it takes (credentials, a body, path ids or
/// a query) and those its declaration lists for its rules.
fn error_statuses<E: Endpoint>(has_query: bool) -> Vec<(u16, &'static str)> {
    let e = &E::INFO;
    let has_body = E::Body::KIND != BodyKind::None;
    let mut out: Vec<(u16, &'static str)> = Vec::new();
    let change = e.auth && matches!(e.method, Method::Post | Method::Patch | Method::Delete);
    let leased = change && e.path.starts_with("/api/v1/tasks/{task_id}");
    if e.errors.contains(&400) {
        out.push((
            400,
            "a rule of the board refuses it, or a header it reads is malformed; the detail says which",
        ));
    } else if change {
        out.push((400, "a header it reads (If-Match, Idempotency-Key, Taskboard-Lease) is malformed"));
    }
    if e.auth {
        out.push((401, "credentials are missing or not valid"));
    } else if e.errors.contains(&401) {
        out.push((
            401,
            "the credentials given are refused (a wrong login or password, an unknown login code, an ID token \
             that does not verify); the detail says which",
        ));
    }
    if e.errors.contains(&403) {
        out.push((403, "the caller's role, or an access token's scopes or projects, do not allow it"));
    } else if e.auth {
        out.push((403, "an access token's scopes or projects do not allow it"));
    }
    if e.errors.contains(&404) {
        out.push((404, "a resource it names does not exist"));
    }
    if e.errors.contains(&409) || leased {
        out.push((
            409,
            "it conflicts with the board's state (a Taskboard-Lease that is not current among others)",
        ));
    }
    if E::CONDITIONAL {
        out.push((412, "If-Match does not list the resource's current ETag; nothing changed"));
    }
    if has_body {
        out.push((413, "the body is too large"));
        out.push((415, "the body is not of the media type the endpoint reads"));
    }
    if e.auth || has_body || has_query || e.path.contains('{') || e.errors.contains(&422) {
        out.push((422, "the request does not fit the schema, or a value breaks a rule"));
    }
    if e.errors.contains(&429) {
        out.push((429, "too many requests; see Retry-After"));
    }
    if e.errors.contains(&503) {
        out.push((503, "the service cannot serve now; the detail says why"));
    }
    out
}

/// `?token=`: credentials in the query, for links and WebSockets that
/// cannot send a header.
/// The request headers an endpoint reads beyond credentials: an
/// `Idempotency-Key` on every change a member makes, a `Taskboard-Lease`
/// on the changes of a task, and `If-Match` where the change is
/// conditional.
fn header_params<E: Endpoint>() -> Vec<Value> {
    let e = &E::INFO;
    let mut params = Vec::new();
    if let Some(name) = E::COOKIE {
        params.push(json!({
            "name": name,
            "in": "cookie",
            "required": false,
            "description": "The cookie the start of this sign-in set in the browser; a callback without it, or with another value, is 400.",
            "schema": {"type": "string"}
        }));
    }
    if !e.auth || !matches!(e.method, Method::Post | Method::Patch | Method::Delete) {
        return params;
    }
    params.push(json!({
        "name": "Idempotency-Key",
        "in": "header",
        "required": false,
        "description": "Makes a retry of this change safe: the first answer is stored for 24 hours and sent again for the same key, method, path and body (docs/rules.md, safe retries).",
        "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"}
    }));
    if e.path.starts_with("/api/v1/tasks/{task_id}") {
        params.push(json!({
            "name": "Taskboard-Lease",
            "in": "header",
            "required": false,
            "description": "The id of the lease the caller holds on the task (its `lease.id`); a lease that is no longer the task's current one is 409 (docs/rules.md, fencing).",
            "schema": {"type": "string", "format": "uuid"}
        }));
    }
    if E::CONDITIONAL {
        params.push(json!({
            "name": "If-Match",
            "in": "header",
            "required": false,
            "description": "Entity tags (from an answer's ETag), or `*`: the change is made only if the resource's current tag is listed (412 otherwise); a value that is not an entity-tag list is 400.",
            "schema": {"type": "string", "pattern": "^(\\*|(W/)?\"[!#-~]*\"( *, *(W/)?\"[!#-~]*\")*)$"}
        }));
    }
    params
}

fn token_param() -> Value {
    json!({
        "name": "token",
        "in": "query",
        "required": false,
        "description": "Credentials (a login JWT or an agent token) for clients that cannot send an Authorization header, such as image links and browser WebSockets.",
        "schema": {"type": "string"}
    })
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
            let has_query = !io.query.is_empty();
            let mut parameters = path_params(e.path);
            parameters.extend(io.query);
            let download = E::Response::KIND == ReplyKind::Download;
            let upgrade = E::Response::KIND == ReplyKind::Upgrade;
            if download || upgrade {
                parameters.push(token_param());
            }
            parameters.extend(header_params::<E>());
            let success = if download {
                json!({
                    "description": "The file's content, in the media type it was stored with",
                    "headers": {
                        "Content-Disposition": {"description": "`inline` for images, else `attachment`, with the file name", "schema": {"type": "string"}},
                        "Content-Length": {"schema": {"type": "integer", "minimum": 0}},
                        "X-Content-Type-Options": {"schema": {"type": "string", "enum": ["nosniff"]}}
                    },
                    "content": {"*/*": {"schema": {"description": "The file's bytes"}}}
                })
            } else if upgrade {
                json!({"description": "Switching to the WebSocket protocol; event frames follow"})
            } else if E::Response::KIND == ReplyKind::Redirect {
                json!({
                    "description": "Found: the browser goes on to `Location`",
                    "headers": {
                        "Location": {"description": "Where to go next", "schema": {"type": "string"}},
                        "Set-Cookie": {"description": "The cookie binding a single sign-on to the browser: set by its start, cleared by its callback", "schema": {"type": "string"}}
                    }
                })
            } else {
                json!({"description": "Success", "content": {"application/json": {"schema": io.response}}})
            };
            let mut responses = Map::new();
            responses.insert(e.status.to_string(), success);
            if E::Response::MAY_BE_EMPTY {
                responses.insert("204".into(), json!({"description": "Nothing to answer: no body"}));
            }
            for (status, why) in error_statuses::<E>(has_query) {
                let mut res =
                    json!({"description": why, "content": {"application/json": {"schema": self.error}}});
                if status == 429 {
                    res["headers"] = json!({"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer", "minimum": 0}}});
                }
                responses.insert(status.to_string(), res);
            }
            let mut op = json!({
                "operationId": e.name,
                "summary": e.summary,
                "description": e.description,
                "tags": [tag(e.path)],
                "parameters": parameters,
                "responses": responses,
            });
            if let Some((media, body)) = io.body {
                op["requestBody"] =
                    json!({"required": !E::Body::OPTIONAL, "content": {media: {"schema": body}}});
            }
            if e.auth {
                op["x-taskboard-scope"] = json!(E::SCOPE.as_str());
            } else {
                op["security"] = json!([]);
            }
            let item = self.paths.entry(e.path.to_string()).or_insert_with(|| json!({}));
            item[e.method.as_str().to_lowercase()] = op;
        }
    }
    visit_all(&mut Operations { g: &mut g, error, paths: &mut paths });
    add_links(&mut paths);
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Taskboard",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Task board for humans and agents. Credentials: `Authorization: Bearer <token>` or `?token=`. Every error answers `{\"detail\", \"code\"}`."
        },
        "servers": [{"url": "/", "description": "This server"}],
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "security": [{"bearer": []}, {"token": []}],
        "paths": paths,
        "components": {
            "schemas": g.take_definitions(true),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "A login JWT or an agent token (tbk-…)"},
                "token": {"type": "apiKey", "in": "query", "name": "token", "description": "The same credentials as a query parameter"}
            }
        }
    });
    no_boolean_schemas(&mut doc);
    doc
}

/// The path parameters of a path, in order.
fn path_names(path: &str) -> Vec<&str> {
    path.split('/').filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}')).collect()
}

/// OpenAPI links from each operation that creates a resource to the
/// operations on it: what a created resource's `id` is for, so a client
/// (or a stateful test) can follow the board from one call to the next.
/// A `POST` on a collection `P` links to every operation under `P/{x}`
/// with `x` taken from the response's `id`, and the parameters of `P`
/// from the request.
fn add_links(paths: &mut Map<String, Value>) {
    let mut links: Vec<(String, String, Value)> = Vec::new();
    let infos = taskboard_core::api::infos();
    for e in &infos {
        if e.method != taskboard_core::api::Method::Post || e.path.ends_with('}') || e.status >= 300 {
            continue;
        }
        let mut targets = Map::new();
        for q in &infos {
            let Some(rest) = q.path.strip_prefix(e.path).and_then(|r| r.strip_prefix("/{")) else { continue };
            let Some((created, _)) = rest.split_once('}') else { continue };
            let mut parameters = Map::new();
            for name in path_names(e.path) {
                parameters.insert(format!("path.{name}"), json!(format!("$request.path.{name}")));
            }
            parameters.insert(format!("path.{created}"), json!("$response.body#/id"));
            targets.insert(q.name.to_string(), json!({"operationId": q.name, "parameters": parameters}));
        }
        let extra: &[(&str, &str, &str)] = match e.name {
            "create_project" => &[
                ("create_task", "query.project_id", "$response.body#/id"),
                ("list_tasks", "query.project_id", "$response.body#/id"),
                ("list_messages", "query.chat_id", "$response.body#/chat_id"),
            ],
            "create_task" => &[("list_messages", "query.task_id", "$response.body#/id")],
            "upload" => &[("download_attachment", "path.attachment_id", "$response.body#/file_id")],
            "post_message" => &[("list_replies", "path.message_id", "$response.body#/id")],
            _ => &[],
        };
        for (target, param, value) in extra {
            targets
                .insert((*target).to_string(), json!({"operationId": target, "parameters": {*param: value}}));
        }
        if !targets.is_empty() {
            links.push((e.path.to_string(), e.status.to_string(), Value::Object(targets)));
        }
    }
    for (path, status, targets) in links {
        if let Some(res) =
            paths.get_mut(&path).and_then(|item| item.get_mut("post")).map(|op| &mut op["responses"][&status])
        {
            res["links"] = targets;
        }
    }
}

/// Replaces the schema `true` (anything) by `{}`, which means the same
/// and which every OpenAPI tool reads.
fn no_boolean_schemas(v: &mut Value) {
    const SCHEMA: [&str; 7] = [
        "schema",
        "items",
        "additionalProperties",
        "not",
        "contains",
        "propertyNames",
        "unevaluatedProperties",
    ];
    const SCHEMA_MAPS: [&str; 4] = ["properties", "$defs", "schemas", "patternProperties"];
    const SCHEMA_LISTS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];
    fn fix(s: &mut Value) {
        if *s == Value::Bool(true) {
            *s = json!({});
        }
    }
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if SCHEMA.contains(&key.as_str()) {
                    fix(child);
                } else if SCHEMA_MAPS.contains(&key.as_str()) {
                    child.as_object_mut().into_iter().flat_map(|m| m.values_mut()).for_each(fix);
                } else if SCHEMA_LISTS.contains(&key.as_str()) {
                    child.as_array_mut().into_iter().flatten().for_each(fix);
                }
                no_boolean_schemas(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(no_boolean_schemas),
        _ => {}
    }
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
        taskboard_core::wire::endpoint::visit_all(&mut Check(doc));
    }
}
