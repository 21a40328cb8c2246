//! The OpenAPI 3.1 document (DECISIONS 8.2), generated from the endpoint
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
            "file": {"type": "string", "contentMediaType": "application/octet-stream"},
            "description": {"type": "string"}
        }
    });
    let binary = json!({"type": "string", "contentMediaType": "application/octet-stream"});
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
        E::websocket => {
            with_query(query_params::<WsQuery>(), json!({"description": "WebSocket event frames"}))
        }
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
    for (name, e) in ENDPOINTS {
        let io = io(*name, &mut g);
        let mut parameters = path_params(e.path);
        parameters.extend(io.query);
        let success = match e.body {
            _ if matches!(name, EndpointName::download_file | EndpointName::download_attachment) => {
                json!({"description": "The file content", "content": {"application/octet-stream": {"schema": io.response}}})
            }
            _ if e.status == 101 => json!({"description": "Switching to the WebSocket protocol"}),
            _ => json!({"description": "Success", "content": {"application/json": {"schema": io.response}}}),
        };
        let mut responses = Map::new();
        responses.insert(e.status.to_string(), success);
        responses.insert(
            "default".into(),
            json!({"description": "An error (DECISIONS 1.1)", "content": {"application/json": {"schema": error}}}),
        );
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
