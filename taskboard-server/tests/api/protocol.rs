//! The agent work protocol over real sockets, part two: idempotent
//! uploads, conditional writes on every resource with an ETag, answers
//! that wrap a write's result, many claimers at once, and step order.

use std::collections::HashSet;

use reqwest::Method;
use serde_json::{Value, json};
use taskboard_core::model::{ProjectFile, Step, Task};
use uuid::Uuid;

use crate::support::*;

/// A multipart body with its `file` part and, after it, `description`
/// (reqwest picks a new boundary for every form).
fn form(filename: &str, content: &[u8], description: Option<&str>) -> reqwest::multipart::Form {
    let part = reqwest::multipart::Part::bytes(content.to_vec()).file_name(filename.to_string());
    let form = reqwest::multipart::Form::new().part("file", part);
    match description {
        Some(d) => form.text("description", d.to_string()),
        None => form,
    }
}

/// Files in the blob store, scratch files included.
fn blobs(app: &TestApp) -> usize {
    let files = |dir: std::path::PathBuf| {
        std::fs::read_dir(dir)
            .map_or(0, |d| d.filter(|e| e.as_ref().unwrap().file_type().unwrap().is_file()).count())
    };
    files(app.blob_dir()) + files(app.blob_dir().join("tmp"))
}

#[tokio::test]
async fn an_upload_with_an_idempotency_key_is_kept_once_and_replayed() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let path = format!("/api/v1/projects/{}/files", p.id);
    let upload = |key: &str, content: &[u8], description: Option<&str>| {
        app.request(Method::POST, &path, app.owner()).header("idempotency-key", key).multipart(form(
            "notes.txt",
            content,
            description,
        ))
    };
    // The description comes after the file: it is part of the one change
    // and of the stored answer.
    let first = app.send(upload("up-1", b"first content", Some("v1"))).await;
    let file: ProjectFile = first.expect(201);
    assert_eq!(file.description.as_deref(), Some("v1"));
    assert_eq!(first.header("idempotent-replayed"), None);
    // The same parts framed with another boundary are the same request.
    let again = app.send(upload("up-1", b"first content", Some("v1"))).await;
    assert_eq!((again.status, again.header("idempotent-replayed")), (201, Some("true")));
    assert_eq!(again.bytes, first.bytes, "byte for byte");
    // Nothing was written again: the stored content is still the first
    // blob (a second upload of the name would have replaced it).
    let listed: Vec<ProjectFile> = app.get(&path, app.owner()).await.expect(200);
    assert_eq!(listed, std::slice::from_ref(&file));
    assert_eq!(blobs(&app), 1, "one blob kept");
    // Another content, another description or another name under the
    // same key is another request.
    app.send(upload("up-1", b"other content", Some("v1"))).await.error(
        422,
        "validation_error",
        "Idempotency-Key",
    );
    app.send(upload("up-1", b"first content", Some("v2"))).await.error(
        422,
        "validation_error",
        "Idempotency-Key",
    );
    let renamed = app
        .request(Method::POST, &path, app.owner())
        .header("idempotency-key", "up-1")
        .multipart(form("other.txt", b"first content", Some("v1")));
    app.send(renamed).await.error(422, "validation_error", "Idempotency-Key");
    let got: ProjectFile = app.get(&format!("{path}/{}", file.id), app.owner()).await.expect(200);
    assert_eq!(got, file, "the refused repeats changed nothing");

    // Attachments (`POST /upload`) too.
    let attach = || {
        app.request(Method::POST, "/api/v1/upload", app.owner())
            .header("idempotency-key", "att-1")
            .multipart(form("shot.png", b"\x89PNG not really", None))
    };
    let first = app.send(attach()).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let again = app.send(attach()).await;
    assert_eq!((again.status, again.header("idempotent-replayed")), (200, Some("true")));
    assert_eq!(again.body["file_id"], first.body["file_id"], "one attachment, not two");
    assert_eq!(blobs(&app), 2);
}

#[tokio::test]
async fn labels_and_steps_honour_if_match() {
    let app = spawn().await;
    let created = app.post("/api/v1/labels", app.owner(), json!({"name": "bug", "color": "#ff0000"})).await;
    assert_eq!(created.status, 201);
    let tag = created.header("etag").expect("a label carries an ETag").to_string();
    let label = format!("/api/v1/labels/{}", created.body["id"].as_str().unwrap());
    let patch = |tag: &str, body: Value| {
        app.request(Method::PATCH, &label, app.owner()).header("if-match", tag.to_string()).json(&body)
    };
    app.send(patch("\"stale\"", json!({"name": "defect"}))).await.error(
        412,
        "precondition_failed",
        "If-Match",
    );
    let renamed = app.send(patch(&tag, json!({"name": "defect"}))).await;
    assert_eq!((renamed.status, renamed.body["name"].clone()), (200, json!("defect")));
    let new_tag = renamed.header("etag").unwrap().to_string();
    assert_ne!(new_tag, tag);
    // A PATCH that would change nothing still answers to its condition.
    app.send(patch(&tag, json!({"name": "defect"}))).await.error(412, "precondition_failed", "If-Match");
    let delete =
        |tag: &str| app.request(Method::DELETE, &label, app.owner()).header("if-match", tag.to_string());
    app.send(delete(&tag)).await.error(412, "precondition_failed", "changed");
    assert_eq!(app.send(delete(&new_tag)).await.status, 200);

    let p = app.create_project(app.owner(), "web").await;
    let t = app.create_task(app.owner(), p.id, "with steps").await;
    let created =
        app.post(&format!("/api/v1/tasks/{}/steps", t.id), app.owner(), json!({"title": "one"})).await;
    let tag = created.header("etag").expect("a step carries an ETag").to_string();
    let step: Step = created.expect(201);
    let path = format!("/api/v1/tasks/{}/steps/{}", t.id, step.id);
    let tick = |tag: &str| {
        app.request(Method::PATCH, &path, app.owner())
            .header("if-match", tag.to_string())
            .json(&json!({"done": true}))
    };
    app.send(tick("\"stale\"")).await.error(412, "precondition_failed", "If-Match");
    let steps: Vec<Step> = app.get(&format!("/api/v1/tasks/{}/steps", t.id), app.owner()).await.expect(200);
    assert!(!steps[0].done, "the refused PATCH changed nothing");
    let ticked = app.send(tick(&tag)).await;
    assert_eq!((ticked.status, ticked.body["done"].clone()), (200, json!(true)));
    let delete =
        |tag: &str| app.request(Method::DELETE, &path, app.owner()).header("if-match", tag.to_string());
    app.send(delete(&tag)).await.error(412, "precondition_failed", "changed");
    let current = ticked.header("etag").unwrap().to_string();
    assert_eq!(app.send(delete(&current)).await.status, 200);
}

#[tokio::test]
async fn status_and_token_answers_replay_under_their_key() {
    let app = spawn().await;
    let (bot, token) = app.create_agent("bot", "member").await;
    let status = |key: &str, s: &str| {
        app.request(Method::PATCH, &format!("/api/v1/members/me/status?status={s}"), Some(&token))
            .header("idempotency-key", key.to_string())
    };
    let first = app.send(status("st-1", "busy")).await;
    assert_eq!((first.status, first.body.clone()), (200, json!({"status": "busy"})));
    let again = app.send(status("st-1", "busy")).await;
    assert_eq!(
        (again.header("idempotent-replayed"), again.bytes.clone()),
        (Some("true"), first.bytes.clone())
    );

    let path = format!("/api/v1/members/{bot}/regenerate-token");
    let regenerate = || app.request(Method::POST, &path, app.owner()).header("idempotency-key", "tok-1");
    let first = app.send(regenerate()).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let fresh = first.body["token"].as_str().unwrap().to_string();
    let again = app.send(regenerate()).await;
    assert_eq!(
        (again.header("idempotent-replayed"), again.bytes.clone()),
        (Some("true"), first.bytes.clone())
    );
    // The replay regenerated nothing: the token it shows still works.
    let me = app.get("/api/v1/members/me", Some(&fresh)).await;
    assert_eq!((me.status, me.body["id"].clone()), (200, json!(bot)));
    assert_eq!(app.get("/api/v1/members/me", Some(&token)).await.status, 401, "the old one ended");
}

#[tokio::test]
async fn sixty_four_claimers_over_http_take_a_thousand_tasks_once_each_then_204() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let owner = app.board().actor(app.owner_id).await.unwrap();
    let new = (0..1000).map(|i| serde_json::from_value(json!({"title": format!("task {i}")})).unwrap());
    app.board().create_tasks(&owner, p.id, new.collect()).await.unwrap();
    let mut tokens = Vec::new();
    for i in 0..64 {
        let (id, token) = app.create_agent(&format!("bot{i}"), "member").await;
        let added = app
            .post(&format!("/api/v1/projects/{}/members", p.id), app.owner(), json!({"member_id": id}))
            .await;
        assert_eq!(added.status, 200, "{}", added.body);
        tokens.push(token);
    }
    let url = app.url("/api/v1/tasks/claim");
    let claimers: Vec<_> = tokens
        .into_iter()
        .map(|token| {
            let (client, url) = (app.client.clone(), url.clone());
            tokio::spawn(async move {
                let mut got = Vec::new();
                loop {
                    let res = client.post(&url).bearer_auth(&token).send().await.unwrap();
                    match res.status().as_u16() {
                        200 => got.push(res.json::<Task>().await.unwrap().id),
                        204 => return got,
                        other => panic!("unexpected status {other}: {}", res.text().await.unwrap()),
                    }
                }
            })
        })
        .collect();
    let mut all: Vec<Uuid> = Vec::new();
    for c in claimers {
        all.extend(c.await.unwrap());
    }
    assert_eq!(all.len(), 1000, "every ready task claimed");
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), 1000, "no task claimed twice");
    let ready: Vec<Task> = app.get("/api/v1/tasks/ready", app.owner()).await.expect(200);
    assert!(ready.is_empty());
    let res = app.send(app.request(Method::POST, "/api/v1/tasks/claim", app.owner())).await;
    assert_eq!(res.status, 204);
}

#[tokio::test]
async fn a_step_patch_with_a_position_moves_it_and_numbers_the_steps_again() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let t = app.create_task(app.owner(), p.id, "with steps").await;
    let steps_path = format!("/api/v1/tasks/{}/steps", t.id);
    let mut ids = Vec::new();
    for title in ["a", "b", "c", "d"] {
        let s: Step = app.post(&steps_path, app.owner(), json!({"title": title})).await.expect(201);
        ids.push(s.id);
    }
    let titles = || async {
        let steps: Vec<Step> = app.get(&steps_path, app.owner()).await.expect(200);
        let positions: Vec<i64> = steps.iter().map(|s| s.position).collect();
        assert_eq!(positions, [1, 2, 3, 4], "numbered again from 1");
        steps.into_iter().map(|s| s.title).collect::<Vec<_>>().join("")
    };
    let moved: Step =
        app.patch(&format!("{steps_path}/{}", ids[3]), app.owner(), json!({"position": 1})).await.expect(200);
    assert_eq!(moved.position, 1);
    assert_eq!(titles().await, "dabc");
    app.patch(&format!("{steps_path}/{}", ids[3]), app.owner(), json!({"position": 99}))
        .await
        .expect::<Step>(200);
    assert_eq!(titles().await, "abcd", "past the end is the last");
    app.patch(&format!("{steps_path}/{}", ids[0]), app.owner(), json!({"position": 3, "done": true}))
        .await
        .expect::<Step>(200);
    assert_eq!(titles().await, "bcad");
    app.patch(&format!("{steps_path}/{}", ids[0]), app.owner(), json!({"position": 0})).await.error(
        422,
        "validation_error",
        "position",
    );
    let task: Task = app.get(&format!("/api/v1/tasks/{}", t.id), app.owner()).await.expect(200);
    let order: String = task.steps.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(order, "bcad", "the task shows the new order");
}
