//! The HTTP layer itself: routing errors, limits, CORS, dev pages,
//! panics, backups and persistence.

use reqwest::Method;
use serde_json::{Value, json};
use taskboard_core::model::{Project, Task};

use crate::support::{spawn, spawn_with};

#[tokio::test]
async fn unknown_paths_are_404_and_wrong_methods_405_with_allow() {
    let app = spawn().await;
    app.get("/api/v1/nothing", app.owner()).await.error(404, "not_found", "");
    // `/` is the web board; any other path outside the API is 404.
    app.get("/nothing", None).await.error(404, "not_found", "");
    let res = app.call(Method::PUT, "/api/v1/tasks", app.owner(), None).await;
    res.error(405, "method_not_allowed", "");
    assert_eq!(res.header("allow"), Some("GET, POST"));
    let res =
        app.call(Method::POST, &format!("/api/v1/tasks/{}", uuid::Uuid::now_v7()), app.owner(), None).await;
    assert_eq!(res.header("allow"), Some("GET, PATCH, DELETE"));
    res.error(405, "method_not_allowed", "");
}

#[tokio::test]
async fn json_bodies_over_one_mib_are_413() {
    let app = spawn().await;
    let big = "x".repeat(1024 * 1024 + 10);
    app.post("/api/v1/labels", app.owner(), json!({"name": big})).await.error(413, "payload_too_large", "");
    // Without a declared length (chunked), the limit holds as well.
    let stream = futures_util::stream::iter(
        (0..20).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 64 * 1024]))),
    );
    let res = app
        .send(
            app.request(Method::POST, "/api/v1/labels", app.owner())
                .header("content-type", "application/json")
                .body(reqwest::Body::wrap_stream(stream)),
        )
        .await;
    res.error(413, "payload_too_large", "");
    // Unknown fields are ignored.
    app.post("/api/v1/labels", app.owner(), json!({"name": "ok", "extra": 1})).await.expect::<Value>(201);
}

#[tokio::test]
async fn cors_allows_the_configured_origins_only() {
    let app = spawn_with(|c| {
        c.web_origin = Some("https://board.example".into());
        c.dev_web_origin = Some("http://localhost:5173".into());
    })
    .await;
    for origin in ["https://board.example", "http://localhost:5173"] {
        let res = app
            .send(
                app.client
                    .request(Method::OPTIONS, app.url("/api/v1/tasks"))
                    .header("origin", origin)
                    .header("access-control-request-method", "POST")
                    .header("access-control-request-headers", "authorization, content-type"),
            )
            .await;
        assert_eq!(res.status, 204);
        assert_eq!(res.header("access-control-allow-origin"), Some(origin));
        assert_eq!(res.header("access-control-allow-credentials"), Some("true"));
        assert!(res.header("access-control-allow-methods").unwrap().contains("PATCH"));
        assert!(res.header("access-control-allow-headers").unwrap().contains("authorization"));

        let res =
            app.send(app.request(Method::GET, "/api/v1/tasks", app.owner()).header("origin", origin)).await;
        assert_eq!(res.status, 200);
        assert_eq!(res.header("access-control-allow-origin"), Some(origin));
        assert_eq!(res.header("access-control-allow-credentials"), Some("true"));
    }
    let res = app
        .send(
            app.client
                .request(Method::OPTIONS, app.url("/api/v1/tasks"))
                .header("origin", "https://evil.example")
                .header("access-control-request-method", "POST"),
        )
        .await;
    assert_eq!(res.status, 204);
    assert!(res.headers.keys().all(|k| !k.as_str().starts_with("access-control-")), "{:?}", res.headers);
    let res = app
        .send(app.request(Method::GET, "/api/v1/tasks", app.owner()).header("origin", "https://evil.example"))
        .await;
    assert_eq!(res.status, 200);
    assert!(res.headers.keys().all(|k| !k.as_str().starts_with("access-control-")));
}

#[tokio::test]
async fn the_local_development_origin_is_allowed_only_in_development_mode() {
    let preflight = |app: &crate::support::TestApp| {
        app.client
            .request(Method::OPTIONS, app.url("/api/v1/tasks"))
            .header("origin", "http://localhost:3100")
            .header("access-control-request-method", "POST")
    };
    let app = spawn().await;
    let res = app.send(preflight(&app)).await;
    assert_eq!(res.header("access-control-allow-origin"), None);
    let app = spawn_with(|c| c.dev = true).await;
    let res = app.send(preflight(&app)).await;
    assert_eq!(res.header("access-control-allow-origin"), Some("http://localhost:3100"));
}

#[tokio::test]
async fn dev_mode_serves_docs_and_the_openapi_document() {
    let app = spawn_with(|c| c.dev = true).await;
    let doc: Value = app.get("/openapi.json", None).await.expect(200);
    assert_eq!(doc["openapi"], "3.1.0");
    for e in taskboard_core::api::infos() {
        let op = &doc["paths"][e.path][e.method.as_str().to_lowercase()];
        assert_eq!(op["operationId"], e.name);
    }
    let docs = app.get("/docs", None).await;
    assert_eq!(docs.status, 200);
    assert!(docs.header("content-type").unwrap().starts_with("text/html"));
    let page = String::from_utf8_lossy(&docs.bytes);
    assert!(page.contains("/openapi.json"));
    assert!(!page.contains("https://"), "the page loads nothing from the internet");
}

#[tokio::test]
async fn a_panicking_handler_is_a_500_and_the_server_keeps_serving() {
    let app = spawn_with(|c| c.panic_route = true).await;
    let res = app.get("/__panic", None).await;
    res.error(500, "internal", "internal error");
    assert!(!res.body["detail"].as_str().unwrap().contains("panics"), "no internals leak");
    app.get("/health", None).await.expect::<Value>(200);
}

#[tokio::test]
async fn the_board_survives_a_restart_on_the_same_data_directory() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "keep").await;
    let t = app.create_task(app.owner(), p.id, "Remember me").await;
    let (_, agent) = app.create_agent("survivor", "member").await;
    let app = app.restart().await;
    let got: Task = app.get(&format!("/api/v1/tasks/{}", t.id), app.owner()).await.expect(200);
    assert_eq!(got.title, "Remember me");
    let projects: Vec<Project> = app.get("/api/v1/projects", Some(&agent)).await.expect(200);
    assert_eq!(projects[0].id, p.id);
    let next = app.create_task(app.owner(), p.id, "After").await;
    assert_eq!(next.number, 2, "the counter carried over");
}

#[tokio::test]
async fn owners_back_up_the_board_into_a_directory() {
    let app = spawn().await;
    app.create_project(app.owner(), "saved").await;
    let (_, admin) = app.create_agent("admin", "admin").await;
    let target = app.data_dir().parent().unwrap().join("backup");
    let body = json!({"path": target.to_string_lossy()});
    app.post("/api/v1/admin/backup", Some(&admin), &body).await.error(403, "forbidden", "");
    app.post("/api/v1/admin/backup", app.owner(), json!({"path": "relative/dir"})).await.error(
        422,
        "validation_error",
        "path",
    );
    app.post("/api/v1/admin/backup", app.owner(), json!({})).await.error(422, "validation_error", "path");
    let summary: Value = app.post("/api/v1/admin/backup", app.owner(), &body).await.expect(200);
    assert!(summary["records"].as_u64().unwrap() > 0);
    assert!(target.join("board.jsonl").exists());
}

mod slow_clients {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use crate::support::spawn_with;

    /// Reads until the server closes the connection; what it sent.
    async fn read_to_close(stream: &mut TcpStream) -> String {
        let mut out = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut out)).await;
        assert!(read.is_ok(), "the server did not close the connection");
        String::from_utf8_lossy(&out).into_owned()
    }

    fn addr(base: &str) -> String {
        base.trim_start_matches("http://").to_string()
    }

    #[tokio::test]
    async fn a_client_that_stalls_its_head_or_body_is_disconnected() {
        let app = spawn_with(|c| {
            c.limits.header_read_timeout = Duration::from_millis(300);
            c.limits.body_read_timeout = Duration::from_millis(300);
        })
        .await;

        let mut head = TcpStream::connect(addr(&app.base)).await.unwrap();
        head.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        read_to_close(&mut head).await;

        let mut body = TcpStream::connect(addr(&app.base)).await.unwrap();
        let request = format!(
            "POST /api/v1/labels HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\":",
            app.owner_token
        );
        body.write_all(request.as_bytes()).await.unwrap();
        let answer = read_to_close(&mut body).await;
        assert!(answer.is_empty(), "no answer is owed to a client that never sent its body: {answer}");

        // The server is unharmed.
        app.get("/health", None).await.expect::<serde_json::Value>(200);
    }

    #[tokio::test]
    async fn oversized_request_heads_are_refused() {
        let app = spawn_with(|c| c.limits.max_header_bytes = 16 * 1024).await;
        let mut stream = TcpStream::connect(addr(&app.base)).await.unwrap();
        let request = format!("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "a".repeat(64 * 1024));
        // The server may stop reading before all of it is written.
        let _ = stream.write_all(request.as_bytes()).await;
        let answer = read_to_close(&mut stream).await;
        assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 431"), "{answer}");
        app.get("/health", None).await.expect::<serde_json::Value>(200);
    }

    #[tokio::test]
    async fn shutdown_finishes_the_request_in_flight() {
        let mut app = spawn_with(|_| {}).await;
        let mut stream = TcpStream::connect(addr(&app.base)).await.unwrap();
        let body = br#"{"name": "late label"}"#;
        let head = format!(
            "POST /api/v1/labels HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            app.owner_token,
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&body[..5]).await.unwrap();
        let client = async {
            // Not start-up synchronisation: gives the shutdown below time
            // to begin while this request is still half sent.
            tokio::time::sleep(Duration::from_millis(200)).await;
            stream.write_all(&body[5..]).await.unwrap();
            read_to_close(&mut stream).await
        };
        let (answer, ()) = tokio::join!(client, async {
            // Let the server read the head first.
            tokio::time::sleep(Duration::from_millis(50)).await;
            app.stop().await;
        });
        assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    }
}
