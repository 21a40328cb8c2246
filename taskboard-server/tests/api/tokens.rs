//! Access tokens and logging out everywhere, over a real server.

use std::time::Duration;

use serde_json::{Value, json};
use taskboard_core::board::Clock;
use uuid::Uuid;

use crate::support::{OWNER_PASSWORD, TestApp, on_postgres, spawn, spawn_with};

async fn create_token(app: &TestApp, member: Uuid, body: Value) -> (Uuid, String) {
    let res = app.post(&format!("/api/v1/members/{member}/tokens"), app.owner(), body).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let token = res.body["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("tba-"), "{token}");
    (res.body["id"].as_str().unwrap().parse().unwrap(), token)
}

#[tokio::test]
async fn a_token_acts_within_its_scopes_and_projects() {
    let app = spawn().await;
    let web = app.create_project(app.owner(), "web").await;
    let ops = app.create_project(app.owner(), "ops").await;
    let task = app.create_task(app.owner(), web.id, "Fix login").await;
    let other = app.create_task(app.owner(), ops.id, "Rotate keys").await;

    let (_, read) = create_token(&app, app.owner_id, json!({"name": "dashboard", "scopes": ["read"]})).await;
    let read = Some(read.as_str());
    assert_eq!(app.get(&format!("/api/v1/tasks/{}", task.id), read).await.status, 200);
    app.patch(&format!("/api/v1/tasks/{}", task.id), read, json!({"title": "Changed"})).await.error(
        403,
        "forbidden",
        "tasks:write",
    );
    app.post(&format!("/api/v1/tasks?project_id={}", web.id), read, json!({"title": "New"})).await.error(
        403,
        "forbidden",
        "tasks:write",
    );

    let (_, web_only) = create_token(
        &app,
        app.owner_id,
        json!({"name": "web bot", "scopes": ["read", "tasks:write"], "project_ids": [web.id]}),
    )
    .await;
    let web_only = Some(web_only.as_str());
    assert_eq!(app.get(&format!("/api/v1/tasks/{}", task.id), web_only).await.status, 200);
    let changed = app.patch(&format!("/api/v1/tasks/{}", task.id), web_only, json!({"title": "Mine"})).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    app.get(&format!("/api/v1/tasks/{}", other.id), web_only).await.error(403, "forbidden", "ops");
    app.get(&format!("/api/v1/tasks?project_id={}", ops.id), web_only).await.error(403, "forbidden", "ops");
    let listed = app.get(&format!("/api/v1/tasks?project_id={}", web.id), web_only).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    app.get("/api/v1/tasks", web_only).await.error(403, "forbidden", "names none");
    // Board-wide reads stay open: members, and the projects to find one's own.
    assert_eq!(app.get("/api/v1/members/me", web_only).await.status, 200);
    assert_eq!(app.get("/api/v1/projects", web_only).await.status, 200);
    // A token made with this one stays within it.
    let me = app.owner_id;
    app.post(&format!("/api/v1/members/{me}/tokens"), web_only, json!({"name": "x", "scopes": ["read"]}))
        .await
        .error(403, "forbidden", "admin");
}

#[tokio::test]
async fn tokens_are_listed_used_revoked_and_never_stored_in_clear() {
    let app = spawn().await;
    let me = app.owner_id;
    let (id, token) = create_token(&app, me, json!({"name": "ci", "scopes": ["read", "admin"]})).await;
    let listed = app.get(&format!("/api/v1/members/{me}/tokens"), app.owner()).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let entry = &listed.body.as_array().unwrap()[0];
    assert_eq!(entry["name"], "ci");
    assert_eq!(entry["scopes"], json!(["read", "admin"]));
    assert_eq!(entry["project_ids"], Value::Null);
    assert_eq!(entry["last_used_at"], Value::Null);
    assert!(entry.get("token").is_none(), "a listed token has no secret: {entry}");

    assert_eq!(app.get("/api/v1/members/me", Some(&token)).await.status, 200);
    app.board().flush().await.unwrap();
    // The use is written after the answer; wait for it through the API.
    let mut used = Value::Null;
    for _ in 0..200 {
        let listed = app.get(&format!("/api/v1/members/{me}/tokens"), app.owner()).await;
        used = listed.body[0]["last_used_at"].clone();
        if !used.is_null() {
            break;
        }
        app.board().flush().await.unwrap();
    }
    assert!(used.is_string(), "last_used_at is set after a use");

    if !on_postgres() {
        for entry in walk(app.data_dir()) {
            let bytes = std::fs::read(&entry).unwrap();
            assert!(
                !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                "the token is readable in {}",
                entry.display()
            );
        }
    }

    let revoked = app.delete(&format!("/api/v1/members/{me}/tokens/{id}"), app.owner()).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    app.get("/api/v1/members/me", Some(&token)).await.error(401, "unauthorized", "access token");
    app.delete(&format!("/api/v1/members/{me}/tokens/{id}"), app.owner()).await.error(404, "not_found", "");
    let listed = app.get(&format!("/api/v1/members/{me}/tokens"), app.owner()).await;
    assert_eq!(listed.body, json!([]));
}

#[tokio::test]
async fn bad_token_requests_are_refused_with_a_detail() {
    let app = spawn().await;
    let me = app.owner_id;
    let path = format!("/api/v1/members/{me}/tokens");
    app.post(&path, app.owner(), json!({"name": "", "scopes": ["read"]})).await.error(
        422,
        "validation_error",
        "name",
    );
    app.post(&path, app.owner(), json!({"name": "x", "scopes": []})).await.error(
        422,
        "validation_error",
        "scopes",
    );
    app.post(&path, app.owner(), json!({"name": "x", "scopes": ["write"]})).await.error(
        422,
        "validation_error",
        "scopes",
    );
    app.post(
        &path,
        app.owner(),
        json!({"name": "x", "scopes": ["read"], "expires_at": "2001-01-01T00:00:00Z"}),
    )
    .await
    .error(422, "validation_error", "expires_at");
    let nowhere = Uuid::now_v7();
    app.post(&path, app.owner(), json!({"name": "x", "scopes": ["read"], "project_ids": [nowhere]}))
        .await
        .error(422, "validation_error", "project_ids");
    // A member manages its own tokens only; an admin those of members.
    let bob = app.create_member("bob", "agent", "member").await;
    let bob_token = bob.token.clone();
    app.get(&path, bob_token.as_deref()).await.error(403, "forbidden", "");
    let own = app
        .post(
            &format!("/api/v1/members/{}/tokens", bob.id),
            bob_token.as_deref(),
            json!({"name": "mine", "scopes": ["read"]}),
        )
        .await;
    assert_eq!(own.status, 201, "an agent's own token keeps every scope: {}", own.body);
}

#[tokio::test]
async fn an_expired_token_is_401() {
    let clock = Clock::manual();
    let app = spawn_with(|c| c.clock = clock.clone()).await;
    let soon = clock.timestamp() + jiff::SignedDuration::from_secs(3600);
    let (_, token) = create_token(
        &app,
        app.owner_id,
        json!({"name": "short", "scopes": ["read"], "expires_at": soon.to_string()}),
    )
    .await;
    assert_eq!(app.get("/api/v1/members/me", Some(&token)).await.status, 200);
    clock.advance(Duration::from_secs(3601));
    app.get("/api/v1/members/me", Some(&token)).await.error(401, "unauthorized", "expired");
}

#[tokio::test]
async fn logging_out_everywhere_ends_logins_but_not_access_tokens() {
    let app = spawn().await;
    let me = app.owner_id;
    let (_, token) = create_token(&app, me, json!({"name": "script", "scopes": ["read"]})).await;
    let login =
        app.post("/api/v1/auth/login", None, json!({"login": "owner", "password": OWNER_PASSWORD})).await;
    let jwt = login.body["token"].as_str().unwrap().to_string();
    assert_eq!(app.get("/api/v1/members/me", Some(&jwt)).await.status, 200);
    let bob = app.create_member("bob", "agent", "member").await;
    app.post_empty(&format!("/api/v1/members/{me}/logout-everywhere"), bob.token.as_deref()).await.error(
        403,
        "forbidden",
        "owner",
    );
    let done = app.post_empty(&format!("/api/v1/members/{me}/logout-everywhere"), Some(&jwt)).await;
    assert_eq!(done.status, 200, "{}", done.body);
    app.get("/api/v1/members/me", Some(&jwt)).await.error(401, "unauthorized", "");
    app.get("/api/v1/members/me", app.owner()).await.error(401, "unauthorized", "");
    assert_eq!(app.get("/api/v1/members/me", Some(&token)).await.status, 200, "access tokens stay");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn revoking_an_access_token_ends_the_event_streams_opened_with_it() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let app = spawn().await;
    let me = app.owner_id;
    let (id, token) = create_token(&app, me, json!({"name": "watcher", "scopes": ["read"]})).await;
    let (_, kept) = create_token(&app, me, json!({"name": "kept", "scopes": ["read"]})).await;
    let ws_url = |t: &str| format!("{}/api/v1/ws?token={t}", app.base.replacen("http://", "ws://", 1));
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url(&token)).await.expect("the upgrade");
    let (mut other, _) = tokio_tungstenite::connect_async(ws_url(&kept)).await.expect("the upgrade");
    let sse = app
        .request(reqwest::Method::GET, "/api/v1/events", Some(&token))
        .header("Accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);

    let revoked = app.delete(&format!("/api/v1/members/{me}/tokens/{id}"), app.owner()).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);

    // The Server-Sent Events stream ends after saying why.
    let body =
        tokio::time::timeout(Duration::from_secs(30), sse.text()).await.expect("the stream ends").unwrap();
    assert!(body.contains("event: token.revoked"), "{body}");
    // The WebSocket closes with 4001 after the same event.
    let mut seen = Vec::new();
    let code = loop {
        match tokio::time::timeout(Duration::from_secs(30), ws.next()).await.expect("a message in time") {
            Some(Ok(Message::Text(t))) => {
                seen.push(serde_json::from_str::<Value>(&t).unwrap()["type"].clone())
            }
            Some(Ok(Message::Close(Some(frame)))) => break u16::from(frame.code),
            Some(Ok(_)) => continue,
            end => panic!("the connection ended without a close frame: {end:?}"),
        }
    };
    assert_eq!(code, taskboard_server::ws::CLOSE_REVOKED);
    assert_eq!(seen.last().unwrap(), "token.revoked", "{seen:?}");
    // A stream of another token of the same member goes on.
    let task = app.post("/api/v1/projects", app.owner(), json!({"name": "After", "slug": "after"})).await;
    assert_eq!(task.status, 201);
    loop {
        match tokio::time::timeout(Duration::from_secs(30), other.next()).await.expect("a message in time") {
            Some(Ok(Message::Text(t))) if t.contains("project.created") => break,
            Some(Ok(Message::Text(_) | Message::Ping(_) | Message::Pong(_))) => continue,
            end => panic!("the other token's stream ended: {end:?}"),
        }
    }
}
