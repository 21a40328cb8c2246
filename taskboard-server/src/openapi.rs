//! The OpenAPI 3.1 document (served in development mode), generated from the endpoint
//! table and the JSON Schemas of the very types dispatch parses and
//! renders, and the offline `/docs` page that reads it.

use std::sync::OnceLock;

use bytes::Bytes;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};
use taskboard_core::api::*;
use taskboard_core::archive::{ArchiveSummary, BackupRequest};
use taskboard_core::error::ErrorBody;
use taskboard_core::model::*;

use crate::dispatch::WsQuery;

/// The interactive reference page: one self-contained file, no CDN.
pub(crate) const DOCS_PAGE: &str = include_str!("docs.html");

/// What an endpoint takes and gives, as schemas.
struct Io {
    body: Option<Value>,
    query: Vec<Value>,
    response: Value,
}

fn io(name: EndpointName, g: &mut SchemaGenerator) -> Io {
    fn s<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
        g.subschema_for::<T>().to_value()
    }
    let none = |response| Io { body: None, query: Vec::new(), response };
    let with_body = |body, response| Io { body: Some(body), query: Vec::new(), response };
    let with_query = |query, response| Io { body: None, query, response };
    let multipart = json!({
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {"description": "The file's bytes, with its name as the part's filename"},
            "description": {"type": "string"}
        }
    });
    let binary = json!({});
    use EndpointName as E;
    match name {
        E::health => none(s::<Health>(g)),
        E::login => with_body(s::<LoginRequest>(g), s::<LoginResponse>(g)),
        E::list_members => with_query(query_params::<MemberListQuery>(), s::<Vec<Member>>(g)),
        E::create_member => with_body(s::<NewMember>(g), s::<CreatedMember>(g)),
        E::get_me | E::get_member => none(s::<Member>(g)),
        E::set_my_status => with_query(query_params::<StatusQuery>(), s::<StatusResponse>(g)),
        E::update_member => with_body(s::<MemberPatch>(g), s::<Member>(g)),
        E::delete_member | E::revoke_token => none(s::<Ok>(g)),
        E::regenerate_token => none(s::<TokenResponse>(g)),
        E::set_password => with_body(s::<SetPassword>(g), s::<Ok>(g)),
        E::list_projects => with_query(query_params::<ProjectListQuery>(), s::<Vec<Project>>(g)),
        E::create_project => with_body(s::<NewProject>(g), s::<Project>(g)),
        E::get_project => none(s::<Project>(g)),
        E::update_project => with_body(s::<ProjectPatch>(g), s::<Project>(g)),
        E::delete_project | E::remove_project_member => none(s::<Ok>(g)),
        E::list_project_members => with_query(query_params::<Page>(), s::<Vec<ProjectMember>>(g)),
        E::add_project_member => with_body(s::<AddProjectMember>(g), s::<Ok>(g)),
        E::list_files => with_query(query_params::<FileListQuery>(), s::<Vec<ProjectFile>>(g)),
        E::upload_file => Io { body: Some(multipart), query: Vec::new(), response: s::<ProjectFile>(g) },
        E::get_file => none(s::<ProjectFile>(g)),
        E::update_file => with_body(s::<FilePatch>(g), s::<ProjectFile>(g)),
        E::delete_file => none(s::<Ok>(g)),
        E::download_file | E::download_attachment => none(binary),
        E::list_tasks => with_query(query_params::<TaskFilter>(), s::<Vec<Task>>(g)),
        E::create_task => Io {
            body: Some(s::<NewTask>(g)),
            query: query_params::<ProjectIdQuery>(),
            response: s::<Task>(g),
        },
        E::get_task | E::take_task => none(s::<Task>(g)),
        E::update_task => with_body(s::<TaskPatch>(g), s::<Task>(g)),
        E::delete_task => none(s::<Ok>(g)),
        E::reject_task => with_body(s::<RejectRequest>(g), s::<Rejected>(g)),
        E::assign_task => with_body(s::<AssignRequest>(g), s::<Task>(g)),
        E::watch_task | E::unwatch_task => none(s::<Watchers>(g)),
        E::list_links => with_query(query_params::<Page>(), s::<Vec<TaskLink>>(g)),
        E::create_link => with_body(s::<NewLink>(g), s::<TaskLink>(g)),
        E::delete_link | E::add_task_label | E::remove_task_label => none(s::<Ok>(g)),
        E::list_actions => with_query(query_params::<Page>(), s::<Vec<TaskAction>>(g)),
        E::list_steps => with_query(query_params::<Page>(), s::<Vec<Step>>(g)),
        E::create_step => with_body(s::<NewStep>(g), s::<Step>(g)),
        E::update_step => with_body(s::<StepPatch>(g), s::<Step>(g)),
        E::delete_step => none(s::<Ok>(g)),
        E::list_messages => with_query(query_params::<MessageFilter>(), s::<Vec<Message>>(g)),
        E::post_message => with_body(s::<NewMessage>(g), s::<Message>(g)),
        E::list_replies => with_query(query_params::<Page>(), s::<Vec<Message>>(g)),
        E::upload => {
            let mut body = multipart;
            body["properties"].as_object_mut().expect("an object").remove("description");
            Io { body: Some(body), query: Vec::new(), response: s::<UploadedFile>(g) }
        }
        E::list_labels => with_query(query_params::<Page>(), s::<Vec<Label>>(g)),
        E::create_label => with_body(s::<NewLabel>(g), s::<Label>(g)),
        E::update_label => with_body(s::<LabelPatch>(g), s::<Label>(g)),
        E::delete_label => none(s::<Ok>(g)),
        E::backup => with_body(s::<BackupRequest>(g), s::<ArchiveSummary>(g)),
        E::websocket => with_query(query_params::<WsQuery>(), json!({})),
    }
}

/// The fields of a query type as OpenAPI query parameters.
fn query_params<T: JsonSchema>() -> Vec<Value> {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let schema: Schema = settings.into_generator().into_root_schema_for::<T>();
    let root = schema.to_value();
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

/// The error statuses an endpoint can answer, each with what it means
/// there. Derived from what the endpoint takes (credentials, path ids, a
/// query, a body) and, for the statuses only some rules give, from the
/// board's rules per endpoint.
fn error_statuses(name: EndpointName, e: &Endpoint, has_query: bool) -> Vec<(u16, &'static str)> {
    use EndpointName as E;
    let mut out = Vec::new();
    let bad_request = match name {
        E::regenerate_token | E::revoke_token => Some("the member is not an agent"),
        E::remove_project_member => Some("the member is the project's owner"),
        E::create_link => Some("a task cannot be linked to itself"),
        E::post_message => Some("neither chat_id nor task_id is given"),
        E::upload_file => Some("the file name is not valid"),
        E::update_member | E::delete_member => Some("the last active owner would be lost"),
        E::set_password => Some("the member is not human"),
        E::websocket => Some("not a WebSocket upgrade request"),
        _ => None,
    };
    out.extend(bad_request.map(|why| (400, why)));
    if e.auth {
        out.push((401, "credentials are missing or not valid"));
    } else if name == E::login {
        out.push((401, "wrong login or password"));
    }
    let forbidden = matches!(
        name,
        E::create_member
            | E::update_member
            | E::delete_member
            | E::regenerate_token
            | E::revoke_token
            | E::set_password
            | E::delete_project
            | E::add_project_member
            | E::remove_project_member
            | E::backup
    );
    if forbidden {
        out.push((403, "the caller's role does not allow it"));
    }
    let refers = e.path.contains('{')
        || matches!(
            name,
            E::create_task | E::list_tasks | E::list_messages | E::post_message | E::add_project_member
        );
    if refers {
        out.push((404, "a resource it names does not exist"));
    }
    let conflicts = matches!(
        name,
        E::create_member
            | E::update_member
            | E::create_project
            | E::update_project
            | E::add_project_member
            | E::take_task
            | E::create_link
            | E::create_label
            | E::update_label
            | E::backup
    );
    if conflicts {
        out.push((409, "it conflicts with the board's state"));
    }
    if e.body != Body::None {
        out.push((413, "the body is too large"));
        out.push((415, "the body is not of the media type the endpoint reads"));
    }
    if e.auth || e.body != Body::None || has_query || e.path.contains('{') {
        out.push((422, "the request does not fit the schema"));
    }
    if name == E::login {
        out.push((429, "too many failed logins; see Retry-After"));
    }
    out
}

/// `?token=`: credentials in the query, for links and WebSockets that
/// cannot send a header.
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
    for (name, e) in ENDPOINTS {
        let io = io(*name, &mut g);
        let has_query = !io.query.is_empty();
        let mut parameters = path_params(e.path);
        parameters.extend(io.query);
        let download = matches!(name, EndpointName::download_file | EndpointName::download_attachment);
        if download || *name == EndpointName::websocket {
            parameters.push(token_param());
        }
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
        } else if e.status == 101 {
            json!({"description": "Switching to the WebSocket protocol; event frames follow"})
        } else {
            json!({"description": "Success", "content": {"application/json": {"schema": io.response}}})
        };
        let mut responses = Map::new();
        responses.insert(e.status.to_string(), success);
        for (status, why) in error_statuses(*name, e, has_query) {
            let mut res = json!({"description": why, "content": {"application/json": {"schema": error}}});
            if status == 429 {
                res["headers"] = json!({"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer", "minimum": 0}}});
            }
            responses.insert(status.to_string(), res);
        }
        let mut op = json!({
            "operationId": e.name,
            "summary": e.summary,
            "tags": [tag(e.path)],
            "parameters": parameters,
            "responses": responses,
        });
        if let Some(body) = io.body {
            let media = if e.body == Body::Multipart { "multipart/form-data" } else { "application/json" };
            op["requestBody"] = json!({"required": true, "content": {media: {"schema": body}}});
        }
        if !e.auth {
            op["security"] = json!([]);
        }
        let item = paths.entry(e.path.to_string()).or_insert_with(|| json!({}));
        item[e.method.as_str().to_lowercase()] = op;
    }
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
    for (_, e) in ENDPOINTS {
        if e.method != taskboard_core::api::Method::Post || e.path.ends_with('}') || e.status >= 300 {
            continue;
        }
        let mut targets = Map::new();
        for (_, q) in ENDPOINTS {
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
    #[test]
    fn every_endpoint_has_a_response_schema_and_bodies_have_request_schemas() {
        let doc = super::openapi_document();
        for (_, e) in taskboard_core::api::ENDPOINTS {
            let op = &doc["paths"][e.path][e.method.as_str().to_lowercase()];
            assert_eq!(op["operationId"], e.name, "{}", e.path);
            assert!(op["responses"][e.status.to_string()].is_object(), "{}", e.name);
            if e.body != taskboard_core::api::Body::None {
                assert!(op["requestBody"].is_object(), "{}", e.name);
            }
        }
        assert!(doc["components"]["schemas"]["Task"].is_object());
    }
}
