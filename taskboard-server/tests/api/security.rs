//! The second security pass over HTTP (docs/rules.md, fencing, streams,
//! idempotency, conditional requests, webhooks): each test reproduces a
//! finding of an attacker's probe and checks it is closed.

use reqwest::Method;
use serde_json::{Value, json};
use taskboard_core::model::{Task, TaskStatus};
use uuid::Uuid;

use crate::support::*;

async fn member_of(app: &TestApp, project: Uuid, member: Uuid) {
    app.post(&format!("/api/v1/projects/{project}/members"), app.owner(), json!({"member_id": member}))
        .await
        .expect::<Value>(200);
}

fn with_lease(req: reqwest::RequestBuilder, lease: Uuid) -> reqwest::RequestBuilder {
    req.header("taskboard-lease", lease.to_string())
}

#[tokio::test]
async fn a_lease_taken_over_fences_out_its_old_holder() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let (a, a_token) = app.create_agent("alpha", "member").await;
    let (b, b_token) = app.create_agent("beta", "member").await;
    member_of(&app, p.id, a).await;
    member_of(&app, p.id, b).await;
    let t = app.create_task(app.owner(), p.id, "work").await;
    let first: Task =
        app.post("/api/v1/tasks/claim", Some(&a_token), json!({"lease_seconds": 60})).await.expect(200);
    let old = first.lease.expect("a lease").id;
    // The owner takes the task back (as the lease's expiry would) and B
    // claims it.
    app.post_empty(&format!("/api/v1/tasks/{}/release", t.id), app.owner()).await.expect::<Task>(200);
    let second: Task =
        app.post("/api/v1/tasks/claim", Some(&b_token), json!({"lease_seconds": 60})).await.expect(200);
    let current = second.lease.clone().expect("a lease").id;
    assert_ne!(old, current);

    let path = format!("/api/v1/tasks/{}", t.id);
    for lease in [Some(old), None] {
        let send = |method: Method, path: &str, body: Option<Value>| {
            let mut req = app.request(method, path, Some(&a_token));
            if let Some(lease) = lease {
                req = with_lease(req, lease);
            }
            if let Some(body) = body {
                req = req.json(&body);
            }
            app.send(req)
        };
        send(Method::PATCH, &path, Some(json!({"status": "done"}))).await.error(409, "conflict", "lease");
        send(Method::POST, &format!("{path}/steps"), Some(json!({"title": "mine"})))
            .await
            .error(409, "conflict", "lease");
        send(Method::POST, &format!("{path}/assign"), Some(json!({"assignee_id": a})))
            .await
            .error(409, "conflict", "lease");
        send(Method::POST, &format!("{path}/release"), None).await.error(409, "conflict", "lease");
    }
    // B's lease is intact and B works on under it.
    let now: Task = app.get(&path, Some(&b_token)).await.expect(200);
    assert_eq!((now.status, now.lease.map(|l| l.id)), (TaskStatus::InProgress, Some(current)));
    let done = app
        .send(
            with_lease(app.request(Method::PATCH, &path, Some(&b_token)), current)
                .json(&json!({"status": "review"})),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.body);
    // A malformed lease header is 400.
    let res = app
        .send(
            app.request(Method::PATCH, &path, Some(&b_token))
                .header("taskboard-lease", "nope")
                .json(&json!({})),
        )
        .await;
    res.error(400, "bad_request", "Taskboard-Lease");
}

#[tokio::test]
async fn an_admins_change_ends_the_lease_and_the_audit_log_says_so() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let (b, b_token) = app.create_agent("beta", "member").await;
    member_of(&app, p.id, b).await;
    let t = app.create_task(app.owner(), p.id, "work").await;
    app.post("/api/v1/tasks/claim", Some(&b_token), json!({"lease_seconds": 60})).await.expect::<Task>(200);
    let path = format!("/api/v1/tasks/{}", t.id);
    let moved: Task = app.patch(&path, app.owner(), json!({"assignee_id": null})).await.expect(200);
    assert!(moved.lease.is_none());
    let actions: Vec<Value> = app.get(&format!("{path}/actions"), app.owner()).await.expect(200);
    let last = actions.last().unwrap();
    assert_eq!(last["changes"]["lease"]["to"], Value::Null, "{last}");
}

#[tokio::test]
async fn a_malformed_if_match_is_refused_not_ignored() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let t = app.create_task(app.owner(), p.id, "work").await;
    let path = format!("/api/v1/tasks/{}", t.id);
    let bad = reqwest::header::HeaderValue::from_bytes(b"\xc3\xa9").unwrap();
    let res = app
        .send(
            app.request(Method::PATCH, &path, app.owner())
                .header("if-match", bad)
                .json(&json!({"title": "x"})),
        )
        .await;
    res.error(400, "bad_request", "If-Match");
    let unchanged: Task = app.get(&path, app.owner()).await.expect(200);
    assert_eq!(unchanged.title, "work", "nothing was written");
    let res = app.send(app.request(Method::GET, &path, app.owner()).header("if-none-match", "abc")).await;
    res.error(400, "bad_request", "If-None-Match");
}

#[tokio::test]
async fn idempotent_answers_keep_no_secret_readable_and_replay_with_an_etag() {
    let app = spawn().await;
    let key = "create-agent-once";
    let create = || {
        app.request(Method::POST, "/api/v1/members", app.owner())
            .header("idempotency-key", key)
            .json(&json!({"name": "Bot", "slug": "bot", "type": "agent", "role": "member"}))
    };
    let first = app.send(create()).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let token = first.body["token"].as_str().unwrap().to_string();
    let again = app.send(create()).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body["token"], token.as_str(), "the replay gives the same answer");
    assert!(again.header("etag").is_some(), "a replayed answer carries its ETag");
    assert_eq!(again.header("etag"), first.header("etag"));
    if !on_postgres() {
        let mut found = Vec::new();
        for entry in walk(app.data_dir()) {
            let bytes = std::fs::read(&entry).unwrap();
            if bytes.windows(token.len()).any(|w| w == token.as_bytes())
                || bytes.windows(key.len()).any(|w| w == key.as_bytes())
            {
                found.push(entry);
            }
        }
        assert!(found.is_empty(), "the token or the key is readable in {found:?}");
    }
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
async fn one_member_holds_a_bounded_number_of_event_streams() {
    let app = spawn_with(|c| c.streams_per_member = 2).await;
    let sse =
        || app.request(Method::GET, "/api/v1/events", app.owner()).header("accept", "text/event-stream");
    let one = sse().send().await.unwrap();
    let two = sse().send().await.unwrap();
    assert_eq!((one.status().as_u16(), two.status().as_u16()), (200, 200));
    let ws_url = format!("{}/api/v1/ws?token={}", app.base.replacen("http://", "ws://", 1), app.owner_token);
    let refused = tokio_tungstenite::connect_async(ws_url.as_str()).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => assert_eq!(res.status(), 429),
        other => panic!("a third stream was not refused: {other:?}"),
    }
    let third = app.send(sse()).await;
    third.error(429, "too_many_requests", "open event streams");
    assert!(third.header("retry-after").is_some());
    // Another member is not affected; a closed stream gives its place back.
    let (_, bot) = app.create_agent("bot", "member").await;
    let theirs = app.request(Method::GET, "/api/v1/events", Some(&bot)).header("accept", "text/event-stream");
    assert_eq!(theirs.send().await.unwrap().status(), 200);
    drop(one);
    let mut again = None;
    for _ in 0..100 {
        let res = sse().send().await.unwrap();
        if res.status() == 200 {
            again = Some(res);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(again.is_some(), "a closed stream gave its place back");
    drop(two);
}

#[tokio::test]
async fn webhook_descriptions_refuse_control_and_reordering_characters() {
    let app = spawn_with(|c| c.webhooks.allow_private = true).await;
    for bad in ["nul\u{0}byte", "right\u{202E}left", "two\nlines"] {
        app.post("/api/v1/webhooks", app.owner(), json!({"url": "http://127.0.0.1:9/h", "description": bad}))
            .await
            .error(422, "validation_error", "description");
    }
    let hooks: Vec<Value> = app.get("/api/v1/webhooks", app.owner()).await.expect(200);
    assert!(hooks.is_empty(), "nothing was created");
}

#[tokio::test]
async fn webhook_targets_are_globally_reachable_unicast_only() {
    let app = spawn().await;
    for url in [
        "http://[::127.0.0.1]/",
        "http://[64:ff9b::7f00:1]/",
        "http://[2002:7f00:1::]/",
        "http://[::ffff:0:7f00:1]/",
        "http://[fec0::1]/",
        "http://[100::1]/",
        "http://192.0.0.1/",
        "http://240.0.0.1/",
    ] {
        app.post("/api/v1/webhooks", app.owner(), json!({"url": url})).await.error(
            422,
            "validation_error",
            "url",
        );
    }
}

#[tokio::test]
async fn labels_and_new_steps_are_conditional_on_if_match() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let t = app.create_task(app.owner(), p.id, "work").await;
    let label: Value = app.post("/api/v1/labels", app.owner(), json!({"name": "urgent"})).await.expect(201);
    let task_path = format!("/api/v1/tasks/{}", t.id);
    let read = app.send(app.request(Method::GET, &task_path, app.owner())).await;
    let seen = read.header("etag").expect("a task has an ETag").to_string();
    let label_path = format!("{task_path}/labels/{}", label["id"].as_str().unwrap());

    // The tag seen before the label went on is stale afterwards.
    let res = app.send(app.request(Method::POST, &label_path, app.owner()).header("if-match", &seen)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let res = app.send(app.request(Method::DELETE, &label_path, app.owner()).header("if-match", &seen)).await;
    res.error(412, "precondition_failed", "If-Match");
    let res = app
        .send(
            app.request(Method::POST, &format!("{task_path}/steps"), app.owner())
                .header("if-match", &seen)
                .json(&json!({"title": "one"})),
        )
        .await;
    res.error(412, "precondition_failed", "If-Match");
    let now: Task = app.get(&task_path, app.owner()).await.expect(200);
    assert_eq!(now.labels.len(), 1, "the label stayed on");
    assert!(now.steps.is_empty(), "no step was added");

    let current = app.send(app.request(Method::GET, &task_path, app.owner())).await;
    let current = current.header("etag").unwrap().to_string();
    let res =
        app.send(app.request(Method::DELETE, &label_path, app.owner()).header("if-match", &current)).await;
    assert_eq!(res.status, 200, "{}", res.body);
}
