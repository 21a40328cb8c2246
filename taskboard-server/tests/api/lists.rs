//! Paged and streamed lists over HTTP: the `Link` header of a full page,
//! and a whole list sent as it is read to a client that reads slowly.

use taskboard_core::api::NewTask;
use taskboard_core::board::{ONE_GO, STREAM_CHUNK, STREAM_DEPTH};
use taskboard_core::model::Task;
use taskboard_core::validate::Title;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use serde_json::{Value, json};

use crate::support::{TestApp, spawn};

async fn seed(app: &TestApp, project: uuid::Uuid, n: usize) {
    let owner = app.board().local_actor(None).await.unwrap();
    let tasks = (0..n).map(|i| NewTask::titled(Title::new(format!("Task number {i}")).unwrap())).collect();
    app.board().create_tasks(&owner, project, tasks).await.unwrap();
}

/// The target of a `Link: <…>; rel="next"` header.
fn next_link(value: &str) -> Option<String> {
    let (target, rel) = value.split_once(';')?;
    (rel.trim() == "rel=\"next\"")
        .then(|| target.trim().trim_start_matches('<').trim_end_matches('>').to_string())
}

#[tokio::test]
async fn full_pages_link_to_the_next_one() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    seed(&app, p.id, 12).await;
    let mut url = format!("/api/v1/tasks?project_id={}&limit=5&offset=1", p.id);
    let mut keys = Vec::new();
    loop {
        let res = app.get(&url, app.owner()).await;
        let page: Vec<Task> = res.expect(200);
        keys.extend(page.into_iter().map(|t| t.key));
        match res.header("link") {
            Some(link) => url = next_link(link).expect("a rel=next link"),
            None => break,
        }
        assert!(
            url.starts_with("/api/v1/tasks?") && url.contains("cursor=") && !url.contains("offset="),
            "{url}"
        );
    }
    let expected: Vec<String> = (2..=12).map(|n| format!("WEB-{n}")).collect();
    assert_eq!(keys, expected);
    app.get("/api/v1/tasks?limit=5&cursor=garbage", app.owner()).await.error(
        422,
        "validation_error",
        "cursor",
    );
}

#[tokio::test]
async fn chat_pages_link_to_older_messages() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let chat = p.chat_id.unwrap();
    for i in 0..9 {
        app.post(
            "/api/v1/messages",
            app.owner(),
            serde_json::json!({"chat_id": chat, "content": format!("m{i}")}),
        )
        .await
        .expect::<serde_json::Value>(201);
    }
    let mut url = format!("/api/v1/messages?chat_id={chat}&limit=4");
    let mut pages = Vec::new();
    loop {
        let res = app.get(&url, app.owner()).await;
        let page: Vec<taskboard_core::model::Message> = res.expect(200);
        pages.push(page.into_iter().map(|m| m.content).collect::<Vec<_>>());
        match res.header("link") {
            Some(link) => url = next_link(link).expect("a rel=next link"),
            None => break,
        }
        assert!(url.starts_with("/api/v1/messages?") && url.contains("cursor="), "{url}");
    }
    assert_eq!(pages, [vec!["m5", "m6", "m7", "m8"], vec!["m1", "m2", "m3", "m4"], vec!["m0"]]);
}

#[tokio::test]
async fn every_whole_list_equals_its_pages() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    app.create_project(app.owner(), "api").await;
    let t = app.create_task(app.owner(), p.id, "Main").await;
    let root: Value = app
        .post("/api/v1/messages", app.owner(), json!({"chat_id": p.chat_id, "content": "root"}))
        .await
        .expect(201);
    for i in 0..5 {
        let (agent, _) = app.create_agent(&format!("agent-{i}"), "member").await;
        app.post(&format!("/api/v1/projects/{}/members", p.id), app.owner(), json!({"member_id": agent}))
            .await
            .expect::<Value>(200);
        app.post("/api/v1/labels", app.owner(), json!({"name": format!("label-{i}")}))
            .await
            .expect::<Value>(201);
        app.patch(&format!("/api/v1/tasks/{}", t.id), app.owner(), json!({"title": format!("Main {i}")}))
            .await
            .expect::<Value>(200);
        app.post(
            "/api/v1/messages",
            app.owner(),
            json!({"chat_id": p.chat_id, "parent_id": root["id"], "content": format!("r{i}")}),
        )
        .await
        .expect::<Value>(201);
        let files = format!("/api/v1/projects/{}/files", p.id);
        app.upload(&files, app.owner(), &format!("file-{i}.txt"), b"x".to_vec(), None)
            .await
            .expect::<Value>(201);
    }
    for list in [
        "/api/v1/members".to_string(),
        "/api/v1/projects".to_string(),
        "/api/v1/labels".to_string(),
        format!("/api/v1/projects/{}/members", p.id),
        format!("/api/v1/projects/{}/files", p.id),
        format!("/api/v1/tasks/{}/actions", t.id),
        format!("/api/v1/messages/{}/replies", root["id"].as_str().unwrap()),
    ] {
        let whole = app.get(&list, app.owner()).await;
        let items: Vec<Value> = whole.expect(200);
        assert!(items.len() >= 2, "{list}: {items:?}");
        // A whole list this short is sent in one go; long ones stream
        // (a_whole_list_is_streamed_to_a_slow_reader).
        assert!(whole.header("content-length").is_some(), "{list} is sent whole");
        assert!(whole.header("transfer-encoding").is_none(), "{list}");
        let (mut url, mut walked) = (format!("{list}?limit=2"), Vec::new());
        loop {
            let res = app.get(&url, app.owner()).await;
            assert!(res.header("content-length").is_some(), "a page is sent whole: {url}");
            walked.extend(res.expect::<Vec<Value>>(200));
            match res.header("link") {
                Some(link) => url = next_link(link).unwrap(),
                None => break,
            }
        }
        assert_eq!(walked, items, "{list}: the pages give the whole list");
    }
    app.get("/api/v1/tasks/00000000-0000-0000-0000-000000000000/actions", app.owner()).await.error(
        404,
        "not_found",
        "task",
    );
}

/// Decodes an HTTP/1.1 response with a chunked body: the body.
fn dechunk(raw: &[u8]) -> Vec<u8> {
    let head = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head") + 4;
    let headers = String::from_utf8_lossy(&raw[..head]).to_lowercase();
    assert!(headers.starts_with("http/1.1 200"), "{headers}");
    assert!(headers.contains("transfer-encoding: chunked"), "{headers}");
    let (mut rest, mut body) = (&raw[head..], Vec::new());
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n").expect("a chunk size");
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line]).unwrap().trim(), 16).unwrap();
        rest = &rest[line + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

#[tokio::test]
async fn a_whole_list_is_streamed_to_a_slow_reader() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    seed(&app, p.id, 3000).await;
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut socket = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "GET /api/v1/tasks HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        app.owner().unwrap()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    // Small reads, giving way between them: the server gets ahead of
    // this reader whenever it can.
    let mut raw = Vec::new();
    let mut buf = [0u8; 2048];
    loop {
        let n = socket.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        tokio::task::yield_now().await;
    }
    let body = dechunk(&raw);
    let tasks: Vec<Task> = serde_json::from_slice(&body).unwrap();
    assert_eq!(tasks.len(), 3000);
    // What a list held back to be sent in one go, until it turns out
    // longer, and the chunks waiting.
    let bound = ONE_GO + (STREAM_DEPTH + 1) * (STREAM_CHUNK + 8192);
    assert!(body.len() > 4 * bound, "the list ({} bytes) is long enough to tell", body.len());
    let buffered = app.board().stream_gauge().high_water();
    assert!(buffered <= bound, "{buffered} bytes of the list waited in the server at once");
}
