//! Property tests of the request parsing layer, over a real socket:
//! arbitrary query strings, JSON bodies (raw bytes and mangled objects),
//! media types and multipart bodies never get a 5xx or a dropped
//! connection, every refusal is a 4xx whose body is `{detail, code}` with
//! a detail and the code of its status, and a refused upload keeps
//! nothing. Bounded: `PROPTEST_CASES` cases per property (default 1,000).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use reqwest::Method;
use serde_json::{Map, Value, json};
use taskboard_core::ErrorKind;
use uuid::Uuid;

use crate::support::{Res, TestApp, spawn};

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(1000);
    // No regression files: a failure prints its input, and the test names
    // the property.
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// A board with one project and task to aim requests at.
struct Target {
    app: TestApp,
    rt: tokio::runtime::Runtime,
    project: Uuid,
    task: Uuid,
}

fn target() -> Target {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (app, project, task) = rt.block_on(async {
        let app = spawn().await;
        let p = app.create_project(app.owner(), "fuzz").await;
        let t = app.create_task(app.owner(), p.id, "target").await;
        (app, p.id, t.id)
    });
    Target { app, rt, project, task }
}

impl Target {
    fn send(&self, method: Method, path: &str, content_type: Option<&str>, body: Vec<u8>) -> Res {
        self.rt.block_on(async {
            let mut req = self.app.request(method, path, self.app.owner()).body(body);
            if let Some(t) = content_type {
                req = req.header("content-type", t);
            }
            self.app.send(req).await
        })
    }

    fn file_count(&self) -> usize {
        let path = format!("/api/v1/projects/{}/files", self.project);
        self.rt.block_on(self.app.get(&path, self.app.owner())).expect::<Vec<Value>>(200).len()
    }
}

/// The answer is a success or a well-formed refusal.
fn well_formed(res: &Res) -> Result<(), TestCaseError> {
    prop_assert!(res.status < 500, "a server error: {} {}", res.status, res.body);
    if res.status >= 400 {
        let detail = res.body["detail"].as_str().unwrap_or("");
        prop_assert!(!detail.is_empty(), "a refusal without a detail: {} {:?}", res.status, res.bytes);
        let code = res.body["code"].as_str().unwrap_or("");
        let kind = ErrorKind::from_code(code);
        prop_assert_eq!(kind.map(ErrorKind::status), Some(res.status), "code {} for {}", code, res.status);
    }
    Ok(())
}

/// Text that stresses the parsers: separators, escapes, quotes, control
/// characters and non-ASCII.
fn tricky_text(max: usize) -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("&".to_string()),
        Just("=".to_string()),
        Just("%".to_string()),
        Just("%FF".to_string()),
        Just("%00".to_string()),
        Just("+".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("\r\n".to_string()),
        Just("limit".to_string()),
        Just("status".to_string()),
        Just("token".to_string()),
        Just("include_inactive".to_string()),
        Just("true".to_string()),
        Just("-1".to_string()),
        Just("99999999999999999999".to_string()),
        any::<char>().prop_map(String::from),
        "[a-z0-9]{1,8}".prop_map(String::from),
    ];
    prop::collection::vec(pieces, 0..max).prop_map(|p| p.concat())
}

#[test]
fn arbitrary_query_strings_get_an_answer_or_a_named_refusal() {
    let t = target();
    let paths = [
        "/api/v1/tasks".to_string(),
        "/api/v1/members".to_string(),
        "/api/v1/projects".to_string(),
        "/api/v1/labels".to_string(),
        "/api/v1/messages".to_string(),
        format!("/api/v1/projects/{}/files", t.project),
        format!("/api/v1/tasks/{}/steps", t.task),
    ];
    let strategy = (0..paths.len(), tricky_text(12));
    TestRunner::new(config())
        .run(&strategy, |(i, query)| {
            // Characters a URL cannot carry are sent escaped, as a client would.
            let query: String =
                query
                    .chars()
                    .map(|c| {
                        if c.is_ascii_graphic() { c.to_string() } else { format!("%{:02X}", c as u32 & 0xff) }
                    })
                    .collect();
            let res = t.send(Method::GET, &format!("{}?{query}", paths[i]), None, Vec::new());
            well_formed(&res)
        })
        .unwrap();
}

/// A JSON value of any shape, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        tricky_text(6).prop_map(Value::String),
        Just(json!("todo")),
        Just(json!("agent")),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((field_name(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Field names of the request types, and others.
fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "name",
            "slug",
            "title",
            "type",
            "status",
            "login",
            "password",
            "chat_id",
            "task_id",
            "content",
            "labels",
            "agent_config",
            "mentions",
            "attachments",
            "color",
            "description",
            "parent_id",
            "position",
            "path",
            "role",
        ])
        .prop_map(String::from),
        tricky_text(3),
    ]
}

#[test]
fn arbitrary_json_bodies_get_an_answer_or_a_named_refusal() {
    let t = target();
    let endpoints = [
        (Method::POST, "/api/v1/auth/login".to_string()),
        (Method::POST, "/api/v1/labels".to_string()),
        (Method::POST, "/api/v1/members".to_string()),
        (Method::POST, "/api/v1/messages".to_string()),
        (Method::POST, format!("/api/v1/tasks?project_id={}", t.project)),
        (Method::PATCH, format!("/api/v1/tasks/{}", t.task)),
        (Method::POST, format!("/api/v1/tasks/{}/steps", t.task)),
    ];
    let content_types = [
        None,
        Some("application/json"),
        Some("application/problem+json"),
        Some("application/json; charset=latin1"),
        Some("text/plain"),
        Some(""),
        Some("application/json; charset"),
        Some(";;=;"),
    ];
    let body = prop_oneof![
            // Objects with known and unknown fields of any shape.
            prop::collection::vec((field_name(), any_json()), 0..6)
                .prop_map(
                    |kv| serde_json::to_vec(&Value::Object(kv.into_iter().collect::<Map<_, _>>())).unwrap()
                ),
            any_json().prop_map(|v| serde_json::to_vec(&v).unwrap()),
            // Bytes: truncated JSON, invalid UTF-8, nothing.
            prop::collection::vec(any::<u8>(), 0..64),
            (any_json(), any::<prop::sample::Index>()).prop_map(|(v, cut)| {
                let mut bytes = serde_json::to_vec(&v).unwrap();
                let at = cut.index(bytes.len() + 1);
                bytes.truncate(at);
                bytes
            }),
        ];
    let strategy = (0..endpoints.len(), 0..content_types.len(), body);
    TestRunner::new(config())
        .run(&strategy, |(e, c, body)| {
            let (method, path) = &endpoints[e];
            let res = t.send(method.clone(), path, content_types[c], body);
            well_formed(&res)
        })
        .unwrap();
}

/// A multipart body from parts, possibly broken on purpose.
#[derive(Debug, Clone)]
struct Form {
    boundary_in_header: Option<String>,
    boundary: String,
    parts: Vec<(String, Option<String>, Vec<u8>)>,
    close: bool,
    cut: Option<prop::sample::Index>,
}

fn form() -> impl Strategy<Value = Form> {
    let boundary =
        prop_oneof![Just("XyZ".to_string()), "[A-Za-z0-9'()+_,./:=?-]{1,20}".prop_map(String::from)];
    let name = prop_oneof![Just("file".to_string()), Just("description".to_string()), tricky_text(3)];
    let filename = prop::option::of(prop_oneof![Just("a.txt".to_string()), tricky_text(4)]);
    let part = (name, filename, prop::collection::vec(any::<u8>(), 0..48));
    let header = prop_oneof![
        8 => Just(None),
        1 => boundary.clone().prop_map(|b| Some(Some(b))),
        1 => Just(Some(None)),
    ];
    (
        header,
        boundary,
        prop::collection::vec(part, 0..4),
        prop::bool::weighted(0.8),
        prop::option::weighted(0.2, any::<prop::sample::Index>()),
    )
        .prop_map(|(header, boundary, parts, close, cut)| Form {
            // Mostly the body's own boundary; else another one, or none.
            boundary_in_header: match header {
                None => Some(boundary.clone()),
                Some(other) => other,
            },
            boundary,
            parts,
            close,
            cut,
        })
}

impl Form {
    fn content_type(&self) -> String {
        match &self.boundary_in_header {
            Some(b) => format!("multipart/form-data; boundary=\"{b}\""),
            None => "multipart/form-data".to_string(),
        }
    }

    fn body(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, filename, content) in &self.parts {
            out.extend_from_slice(format!("--{}\r\n", self.boundary).as_bytes());
            let disposition = match filename {
                Some(f) => {
                    format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\n\r\n")
                }
                None => format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n"),
            };
            out.extend_from_slice(disposition.as_bytes());
            out.extend_from_slice(content);
            out.extend_from_slice(b"\r\n");
        }
        if self.close {
            out.extend_from_slice(format!("--{}--\r\n", self.boundary).as_bytes());
        }
        if let Some(cut) = self.cut {
            out.truncate(cut.index(out.len() + 1));
        }
        out
    }
}

#[test]
fn arbitrary_multipart_bodies_get_an_answer_or_a_named_refusal_and_refusals_keep_nothing() {
    let t = target();
    let files = format!("/api/v1/projects/{}/files", t.project);
    let strategy = (any::<bool>(), form());
    TestRunner::new(config())
        .run(&strategy, |(project_file, form)| {
            let path = if project_file { files.as_str() } else { "/api/v1/upload" };
            let before = t.file_count();
            let res = t.send(Method::POST, path, Some(&form.content_type()), form.body());
            well_formed(&res)?;
            if project_file && res.status != 201 {
                prop_assert_eq!(t.file_count(), before, "a refused upload kept a file: {}", res.body);
            }
            Ok(())
        })
        .unwrap();
}
