//! Request-format parsing: JSON bodies held to their schema, media types,
//! query strings, head sizes and multipart bodies. Every refusal is a 4xx
//! with a detail naming the problem.

use reqwest::Method;
use serde_json::{Value, json};
use taskboard_core::model::{Member, ProjectFile};

use crate::support::{Res, TestApp, spawn};

/// Sends `body` as it is with the given `Content-Type` (none when `None`).
async fn raw(app: &TestApp, method: Method, path: &str, content_type: Option<&str>, body: Vec<u8>) -> Res {
    let mut req = app.request(method, path, app.owner()).body(body);
    if let Some(t) = content_type {
        req = req.header("content-type", t);
    }
    app.send(req).await
}

#[tokio::test]
async fn a_body_that_is_not_an_object_is_422_at_any_depth() {
    let app = spawn().await;
    let login = app
        .send(
            app.client
                .post(app.url("/api/v1/auth/login"))
                .header("content-type", "application/json")
                .body(r#"["owner","owner-password-1"]"#),
        )
        .await;
    login.error(422, "validation_error", "body: expected an object, got an array");
    for body in ["null", "\"owner\"", "42", "true"] {
        let res = raw(&app, Method::POST, "/api/v1/labels", Some("application/json"), body.into()).await;
        res.error(422, "validation_error", "body: expected an object");
    }
    // A nested struct given as an array, an enum value given as an object.
    let res = app
        .post(
            "/api/v1/members",
            app.owner(),
            json!({"name": "a", "slug": "a", "type": "agent", "agent_config": ["x"]}),
        )
        .await;
    res.error(422, "validation_error", "agent_config: expected an object or null, got an array");
    let p = app.create_project(app.owner(), "shape").await;
    let res = app
        .post(
            &format!("/api/v1/tasks?project_id={}", p.id),
            app.owner(),
            json!({"title": "t", "status": {"todo": null}}),
        )
        .await;
    res.error(422, "validation_error", "status: expected a string, got an object");
    let res = app
        .post(
            "/api/v1/messages",
            app.owner(),
            json!({"chat_id": p.chat_id, "content": "x", "mentions": [[]]}),
        )
        .await;
    res.error(422, "validation_error", "mentions[0]: expected a string, got an array");
    // A body that may be left out is checked when it is there.
    let claim = app.post("/api/v1/tasks/claim", app.owner(), json!([null, null])).await;
    claim.error(422, "validation_error", "body: expected an object, got an array");
    let empty = app.send(app.request(reqwest::Method::POST, "/api/v1/tasks/claim", app.owner())).await;
    assert_eq!(empty.status, 204, "no body is no filter: {:?}", empty.body);
    // Unknown fields may hold anything.
    app.post("/api/v1/labels", app.owner(), json!({"name": "ok", "extra": [1, {"a": []}]}))
        .await
        .expect::<Value>(201);
}

#[tokio::test]
async fn invalid_utf8_anywhere_in_a_json_body_is_422() {
    let app = spawn().await;
    let mut unknown = br#"{"name": "fine", "extra": ""#.to_vec();
    unknown.extend_from_slice(&[0xff, 0xfe]);
    unknown.extend_from_slice(br#""}"#);
    let res = raw(&app, Method::POST, "/api/v1/labels", Some("application/json"), unknown).await;
    res.error(422, "validation_error", "body: not valid UTF-8");
    let mut known = br#"{"name": ""#.to_vec();
    known.push(0xc3);
    known.extend_from_slice(br#""}"#);
    let res = raw(&app, Method::POST, "/api/v1/labels", None, known).await;
    res.error(422, "validation_error", "body: not valid UTF-8");
    let labels: Vec<Value> = app.get("/api/v1/labels", app.owner()).await.expect(200);
    assert!(labels.is_empty(), "nothing was written: {labels:?}");
}

#[tokio::test]
async fn json_endpoints_refuse_other_media_types_with_415() {
    let app = spawn().await;
    let body = br#"{"name": "typed"}"#.to_vec();
    for t in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin1",
        "application/jsonx",
    ] {
        let res = raw(&app, Method::POST, "/api/v1/labels", Some(t), body.clone()).await;
        res.error(415, "unsupported_media_type", "content-type");
    }
    // Before the body is even looked at.
    raw(&app, Method::POST, "/api/v1/labels", Some("text/plain"), b"[".to_vec()).await.error(
        415,
        "unsupported_media_type",
        "application/json",
    );
    for (i, t) in [
        Some("application/json"),
        Some("Application/JSON; charset=\"UTF-8\""),
        Some("application/vnd.taskboard+json"),
        Some("application/merge-patch+json"),
        None,
    ]
    .into_iter()
    .enumerate()
    {
        let body = format!(r#"{{"name": "label-{i}"}}"#).into_bytes();
        raw(&app, Method::POST, "/api/v1/labels", t, body).await.expect::<Value>(201);
    }
    // Endpoints without a body do not look at the media type.
    let p = app.create_project(app.owner(), "plain").await;
    let t = app.create_task(app.owner(), p.id, "take me").await;
    raw(&app, Method::POST, &format!("/api/v1/tasks/{}/watch", t.id), Some("text/plain"), Vec::new())
        .await
        .expect::<Value>(200);
}

#[tokio::test]
async fn a_repeated_query_parameter_is_422_naming_it() {
    let app = spawn().await;
    let res = app.get("/api/v1/tasks?status=todo&status=done", app.owner()).await;
    res.error(422, "validation_error", "status: given more than once");
    let res = app.get("/api/v1/members?limit=5&limit=5", app.owner()).await;
    res.error(422, "validation_error", "limit: given more than once");
    let res = app.get(&format!("/api/v1/tasks?token={0}&token={0}", app.owner_token), None).await;
    res.error(422, "validation_error", "token: given more than once");
    let res = app.get("/api/v1/tasks?q=%FF", app.owner()).await;
    res.error(422, "validation_error", "q: not valid UTF-8");
    app.get("/api/v1/tasks?status=todo&q=a+b", app.owner()).await.expect::<Vec<Value>>(200);
}

#[tokio::test]
async fn boolean_query_values_take_true_false_1_0_yes_no_in_any_case() {
    let app = spawn().await;
    let gone = app.create_member("gone", "agent", "member").await;
    app.delete(&format!("/api/v1/members/{}", gone.id), app.owner()).await.expect::<Value>(200);
    let count = |v: Vec<Member>| v.iter().filter(|m| m.id == gone.id).count();
    for yes in ["true", "True", "TRUE", "1", "yes", "Yes"] {
        let all: Vec<Member> =
            app.get(&format!("/api/v1/members?include_inactive={yes}"), app.owner()).await.expect(200);
        assert_eq!(count(all), 1, "{yes}");
    }
    for no in ["false", "False", "0", "no", "NO"] {
        let active: Vec<Member> =
            app.get(&format!("/api/v1/members?include_inactive={no}"), app.owner()).await.expect(200);
        assert_eq!(count(active), 0, "{no}");
    }
    for bad in ["maybe", "", "2", "y"] {
        let res = app.get(&format!("/api/v1/members?include_inactive={bad}"), app.owner()).await;
        res.error(422, "validation_error", "include_inactive:");
    }
}

mod heads {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use crate::support::spawn;

    /// Sends a request head of exactly `size` bytes and returns the status
    /// line of the answer (empty when the server closed without one).
    async fn send_head(base: &str, size: usize) -> String {
        let start = "GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: ";
        let end = "\r\nConnection: close\r\n\r\n";
        let head = format!("{start}{}{end}", "a".repeat(size - start.len() - end.len()));
        assert_eq!(head.len(), size);
        let mut stream = TcpStream::connect(base.trim_start_matches("http://")).await.unwrap();
        // The server may stop reading before all of it is written.
        let _ = stream.write_all(head.as_bytes()).await;
        let mut out = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut out)).await;
        assert!(read.is_ok(), "the server did not close the connection");
        String::from_utf8_lossy(&out).lines().next().unwrap_or("").to_string()
    }

    #[tokio::test]
    async fn request_heads_of_64_kib_pass_and_one_byte_more_is_431() {
        let app = spawn().await;
        assert_eq!(send_head(&app.base, 64 * 1024).await, "HTTP/1.1 200 OK");
        assert!(send_head(&app.base, 64 * 1024 + 1).await.starts_with("HTTP/1.1 431"));
        assert!(send_head(&app.base, 70_000).await.starts_with("HTTP/1.1 431"));
    }
}

mod multipart {
    use super::*;

    /// A multipart body from `(name, filename, content)` parts.
    fn body(boundary: &str, parts: &[(&str, Option<&str>, &str)], close: bool) -> Vec<u8> {
        let mut out = String::new();
        for (name, filename, content) in parts {
            out.push_str(&format!("--{boundary}\r\n"));
            match filename {
                Some(f) => out.push_str(&format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\n\
                     Content-Type: text/plain\r\n\r\n"
                )),
                None => out.push_str(&format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n")),
            }
            out.push_str(content);
            out.push_str("\r\n");
        }
        if close {
            out.push_str(&format!("--{boundary}--\r\n"));
        }
        out.into_bytes()
    }

    const FILE: (&str, Option<&str>, &str) = ("file", Some("a.txt"), "hello");

    #[tokio::test]
    async fn every_defect_of_a_multipart_body_is_422_and_keeps_nothing() {
        let app = spawn().await;
        let p = app.create_project(app.owner(), "parts").await;
        let files = format!("/api/v1/projects/{}/files", p.id);
        let post = |t: &'static str, body: Vec<u8>| raw(&app, Method::POST, &files, Some(t), body);
        let form = "multipart/form-data; boundary=XyZ";

        let ok = body("XyZ", &[FILE], true);
        post("multipart/form-data", ok.clone()).await.error(
            422,
            "validation_error",
            "content-type: the multipart boundary is missing",
        );
        post("multipart/form-data; boundary=", ok.clone()).await.error(
            422,
            "validation_error",
            "not a valid multipart boundary",
        );
        post("multipart/form-data; boundary=Other", ok.clone()).await.error(422, "validation_error", "body:");
        post(form, body("XyZ", &[FILE], false)).await.error(422, "validation_error", "closing boundary");
        let mut cut = ok.clone();
        cut.truncate(cut.len() - 12);
        post(form, cut).await.error(422, "validation_error", "body:");
        post(form, b"".to_vec()).await.error(422, "validation_error", "body:");
        post(form, body("XyZ", &[("description", None, "only text")], true)).await.error(
            422,
            "validation_error",
            "file: the multipart body has no file part",
        );
        post(form, body("XyZ", &[FILE, ("file", Some("b.txt"), "again")], true)).await.error(
            422,
            "validation_error",
            "file: only one file may be sent",
        );
        post(form, body("XyZ", &[("description", None, "a"), ("description", None, "b"), FILE], true))
            .await
            .error(422, "validation_error", "description: the part is given more than once");
        post(form, body("XyZ", &[FILE, ("description", None, "a"), ("description", None, "b")], true))
            .await
            .error(422, "validation_error", "description: the part is given more than once");
        post("text/plain", ok.clone()).await.error(415, "unsupported_media_type", "multipart/form-data");
        post("application/json", ok.clone()).await.error(
            415,
            "unsupported_media_type",
            "multipart/form-data",
        );

        let kept: Vec<ProjectFile> = app.get(&files, app.owner()).await.expect(200);
        assert!(kept.is_empty(), "a refused upload keeps no file: {kept:?}");

        // The same body, well formed, is taken; unknown parts are ignored.
        let good = body("XyZ", &[("other", None, "x"), FILE, ("description", None, "after")], true);
        let f: ProjectFile = post(form, good).await.expect(201);
        assert_eq!((f.filename.as_str(), f.description.as_deref()), ("a.txt", Some("after")));
    }

    #[tokio::test]
    async fn attachment_uploads_refuse_the_same_defects() {
        let app = spawn().await;
        let form = "multipart/form-data; boundary=XyZ";
        let post = |t: &'static str, body: Vec<u8>| raw(&app, Method::POST, "/api/v1/upload", Some(t), body);
        post(form, body("XyZ", &[FILE, ("file", Some("b.txt"), "x")], true)).await.error(
            422,
            "validation_error",
            "only one file",
        );
        post(form, body("XyZ", &[FILE], false)).await.error(422, "validation_error", "closing boundary");
        post("multipart/mixed; boundary=XyZ", body("XyZ", &[FILE], true)).await.error(
            415,
            "unsupported_media_type",
            "",
        );
        let uploaded: Value = post(form, body("XyZ", &[FILE], true)).await.expect(200);
        assert_eq!(uploaded["size"], 5);
    }
}
