//! The agent work protocol over HTTP: ready work, claims, leases.

use std::collections::HashSet;

use serde_json::{Value, json};
use taskboard_core::model::{Task, TaskStatus};
use uuid::Uuid;

use crate::support::*;

async fn member_of(app: &TestApp, project: Uuid, member: Uuid) {
    app.post(&format!("/api/v1/projects/{project}/members"), app.owner(), json!({"member_id": member}))
        .await
        .expect::<Value>(200);
}

#[tokio::test]
async fn ready_claim_heartbeat_and_release_over_http() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let (bot, token) = app.create_agent("bot", "member").await;
    member_of(&app, p.id, bot).await;
    let first = app.create_task(app.owner(), p.id, "first").await;
    app.post(
        &format!("/api/v1/tasks?project_id={}", p.id),
        app.owner(),
        json!({"title": "urgent", "priority": "urgent"}),
    )
    .await
    .expect::<Task>(201);
    let ready: Vec<Task> = app.get("/api/v1/tasks/ready", Some(&token)).await.expect(200);
    assert_eq!(ready.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(), ["WEB-2", "WEB-1"]);
    assert!(ready.iter().all(|t| t.lease.is_none()));
    app.get("/api/v1/tasks/ready?limit=0", Some(&token)).await.error(422, "validation_error", "limit");

    // A claim without a body, then one with a lease.
    let claimed: Task = app.post_empty("/api/v1/tasks/claim", Some(&token)).await.expect(200);
    assert_eq!((claimed.key.as_str(), claimed.status), ("WEB-2", TaskStatus::InProgress));
    let leased: Task =
        app.post("/api/v1/tasks/claim", Some(&token), json!({"lease_seconds": 60})).await.expect(200);
    assert_eq!(leased.id, first.id);
    let lease = leased.lease.clone().expect("a lease");
    assert_eq!(lease.holder.id, bot);
    let none = app.post_empty("/api/v1/tasks/claim", Some(&token)).await;
    assert_eq!(none.status, 204);
    assert!(none.bytes.is_empty(), "204 has no body");
    app.post("/api/v1/tasks/claim", Some(&token), json!({"lease_seconds": 5})).await.error(
        422,
        "validation_error",
        "lease_seconds",
    );

    // Heartbeats: the holder only, and only on a leased task.
    let beat: Task = app
        .post(&format!("/api/v1/tasks/{}/heartbeat", first.id), Some(&token), json!({"lease_seconds": 120}))
        .await
        .expect(200);
    assert!(beat.lease.unwrap().expires_at > lease.expires_at);
    app.post_empty(&format!("/api/v1/tasks/{}/heartbeat", first.id), app.owner()).await.error(
        403,
        "forbidden",
        "holder",
    );
    app.post_empty(&format!("/api/v1/tasks/{}/heartbeat", claimed.id), Some(&token))
        .await
        .error(409, "conflict", "lease");

    // Release gives it back, with the reason in the comments.
    let back: Task = app
        .post(&format!("/api/v1/tasks/{}/release", first.id), Some(&token), json!({"reason": "out of time"}))
        .await
        .expect(200);
    assert_eq!((back.status, back.assignee, back.lease), (TaskStatus::Todo, None, None));
    let shown: Value = app.get(&format!("/api/v1/tasks/{}", first.id), Some(&token)).await.expect(200);
    assert_eq!(shown["lease"], Value::Null, "every task shows its lease, null without one");
    let comments: Value =
        app.get(&format!("/api/v1/messages?task_id={}", first.id), Some(&token)).await.expect(200);
    assert!(comments.to_string().contains("out of time"), "{comments}");

    // Take with a lease, in the query or in a body.
    let by_query: Task = app
        .post_empty(&format!("/api/v1/tasks/{}/take?lease_seconds=30", first.id), Some(&token))
        .await
        .expect(200);
    assert!(by_query.lease.is_some());
    app.post_empty(&format!("/api/v1/tasks/{}/release", first.id), Some(&token)).await.expect::<Task>(200);
    let by_body: Task = app
        .post(&format!("/api/v1/tasks/{}/take", first.id), Some(&token), json!({"lease_seconds": 30}))
        .await
        .expect(200);
    assert!(by_body.lease.is_some());
}

#[tokio::test]
async fn concurrent_claimers_over_http_each_get_a_different_task_then_204() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    for i in 0..100 {
        app.create_task(app.owner(), p.id, &format!("task {i}")).await;
    }
    let mut tokens = Vec::new();
    for i in 0..16 {
        let (id, token) = app.create_agent(&format!("bot{i}"), "member").await;
        member_of(&app, p.id, id).await;
        tokens.push(token);
    }
    let url = app.url("/api/v1/tasks/claim");
    let handles: Vec<_> = tokens
        .into_iter()
        .map(|token| {
            let client = app.client.clone();
            let url = url.clone();
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
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    assert_eq!(all.len(), 100);
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), 100, "no task claimed twice");
}

/// Reads Server-Sent Events blocks from a streaming response until `n`
/// events (not comments) have come: (id, event, data) each.
async fn sse_events(res: &mut reqwest::Response, n: usize) -> Vec<(u64, String, Value)> {
    let mut buf = String::new();
    let mut out = Vec::new();
    while out.len() < n {
        let chunk = res.chunk().await.unwrap().expect("the stream stays open");
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let (mut id, mut event, mut data) = (None, None, None);
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().ok();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    event = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(v).ok();
                }
            }
            if let (Some(id), Some(event), Some(data)) = (id, event, data) {
                out.push((id, event, data));
            }
        }
    }
    out
}

#[tokio::test]
async fn long_poll_answers_what_came_after_since_and_waits_for_the_next() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let start: Value = app.get("/api/v1/events", app.owner()).await.expect(200);
    assert_eq!(start["events"], json!([]), "without since: from now");
    let since = start["next"].as_u64().unwrap();
    app.create_task(app.owner(), p.id, "one").await;
    let page: Value = app.get(&format!("/api/v1/events?since={since}"), app.owner()).await.expect(200);
    let events = page["events"].as_array().unwrap();
    assert_eq!(events[0]["type"], "task.created");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    let next = page["next"].as_u64().unwrap();
    assert_eq!(next, *seqs.last().unwrap());
    let limited: Value =
        app.get(&format!("/api/v1/events?since={since}&limit=1"), app.owner()).await.expect(200);
    assert_eq!(limited["events"].as_array().unwrap().len(), 1);
    assert_eq!(limited["next"].as_u64(), Some(seqs[0]));

    // A waiting request is answered by the next write.
    let waiting = {
        let req =
            app.request(reqwest::Method::GET, &format!("/api/v1/events?since={next}&wait=60"), app.owner());
        tokio::spawn(req.send())
    };
    app.create_task(app.owner(), p.id, "two").await;
    let woken: Value = waiting.await.unwrap().unwrap().json().await.unwrap();
    assert_eq!(woken["events"][0]["type"], "task.created");
    assert_eq!(woken["events"][0]["data"]["title"], "two");

    let old: Value = app.get("/api/v1/events?since=999999", app.owner()).await.expect(200);
    assert_eq!(old["resync_required"], true);
    assert_eq!(old["events"], json!([]));
    app.get("/api/v1/events?wait=61", app.owner()).await.error(422, "validation_error", "wait");
}

#[tokio::test]
async fn server_sent_events_resume_across_a_restart_with_every_event_once() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let first: Value = app.get("/api/v1/events", app.owner()).await.expect(200);
    let since = first["next"].as_u64().unwrap();
    let stream = |app: &TestApp, last: u64| {
        app.request(reqwest::Method::GET, "/api/v1/events", app.owner())
            .header("accept", "text/event-stream")
            .header("last-event-id", last.to_string())
            .send()
    };
    let mut res = stream(&app, since).await.unwrap();
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    for i in 0..3 {
        app.create_task(app.owner(), p.id, &format!("before {i}")).await;
    }
    let mut seen = Vec::new();
    loop {
        let got = sse_events(&mut res, 1).await;
        seen.extend(got);
        if seen.iter().filter(|(_, kind, _)| kind == "task.created").count() == 3 {
            break;
        }
    }
    drop(res);
    let last = seen.last().unwrap().0;
    let mut app = app.restart().await;
    // Written after the restart, before the client comes back.
    for i in 0..2 {
        app.create_task(app.owner(), p.id, &format!("after {i}")).await;
    }
    let mut res = stream(&app, last).await.unwrap();
    let mut titles = Vec::new();
    while titles.len() < 2 {
        for (id, kind, data) in sse_events(&mut res, 1).await {
            assert_eq!(data["seq"].as_u64(), Some(id));
            seen.push((id, kind.clone(), data.clone()));
            if kind == "task.created" {
                titles.push(data["data"]["title"].as_str().unwrap().to_string());
            }
        }
    }
    assert_eq!(titles, ["after 0", "after 1"]);
    let ids: Vec<u64> = seen.iter().map(|s| s.0).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order, none twice: {ids:?}");
    drop(res);
    app.stop().await;
}

#[tokio::test]
async fn an_idempotency_key_replays_the_first_answer_byte_for_byte() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let path = format!("/api/v1/tasks?project_id={}", p.id);
    let create = |key: &str, title: &str| {
        app.request(reqwest::Method::POST, &path, app.owner())
            .header("idempotency-key", key)
            .json(&json!({"title": title}))
    };
    let first = app.send(create("k-1", "once")).await;
    assert_eq!(first.status, 201);
    assert_eq!(first.header("idempotent-replayed"), None);
    let again = app.send(create("k-1", "once")).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.bytes, first.bytes, "byte for byte");
    let tasks: Vec<Task> =
        app.get(&format!("/api/v1/tasks?project_id={}", p.id), app.owner()).await.expect(200);
    assert_eq!(tasks.len(), 1, "the repeat changed nothing");
    app.send(create("k-1", "another body")).await.error(422, "validation_error", "Idempotency-Key");
    app.send(create(&"x".repeat(256), "long")).await.error(422, "validation_error", "Idempotency-Key");

    // No-content and {"ok": true} answers replay too.
    let (bot, token) = app.create_agent("bot", "member").await;
    member_of(&app, p.id, bot).await;
    let claim = || {
        app.request(reqwest::Method::POST, "/api/v1/tasks/claim", Some(&token))
            .header("idempotency-key", "claim-1")
    };
    let claimed = app.send(claim()).await;
    assert_eq!(claimed.status, 200);
    let replay = app.send(claim()).await;
    assert_eq!((replay.status, replay.header("idempotent-replayed")), (200, Some("true")));
    assert_eq!(replay.bytes, claimed.bytes, "the same task, not a second claim");
    let task_id = claimed.body["id"].as_str().unwrap().to_string();
    let delete = || {
        app.request(reqwest::Method::DELETE, &format!("/api/v1/tasks/{task_id}"), app.owner())
            .header("idempotency-key", "del-1")
    };
    let deleted = app.send(delete()).await;
    assert_eq!((deleted.status, deleted.body.clone()), (200, json!({"ok": true})));
    let again = app.send(delete()).await;
    assert_eq!((again.status, again.header("idempotent-replayed")), (200, Some("true")), "not a 404");
    // Keys belong to their member: the same key from another is its own.
    let other = app
        .send(
            app.request(reqwest::Method::POST, &path, Some(&token))
                .header("idempotency-key", "k-1")
                .json(&json!({"title": "by the bot"})),
        )
        .await;
    assert_eq!((other.status, other.header("idempotent-replayed")), (201, None));
}

#[tokio::test]
async fn etags_make_reads_conditional_and_changes_optimistic() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let t = app.create_task(app.owner(), p.id, "first").await;
    let path = format!("/api/v1/tasks/{}", t.id);
    let got = app.get(&path, app.owner()).await;
    let tag = got.header("etag").expect("a single task carries an ETag").to_string();
    assert!(tag.starts_with('"') && tag.ends_with('"'), "a strong tag: {tag}");
    let again =
        app.send(app.request(reqwest::Method::GET, &path, app.owner()).header("if-none-match", &tag)).await;
    assert_eq!(again.status, 304);
    assert!(again.bytes.is_empty());
    // A stale If-Match changes nothing.
    let stale = "\"0000\"";
    let res = app
        .send(
            app.request(reqwest::Method::PATCH, &path, app.owner())
                .header("if-match", stale)
                .json(&json!({"title": "x"})),
        )
        .await;
    res.error(412, "precondition_failed", "If-Match");
    let unchanged: Task = app.get(&path, app.owner()).await.expect(200);
    assert_eq!(unchanged.title, "first");
    // The current one lets the change through, and the tag moves with it.
    let res = app
        .send(
            app.request(reqwest::Method::PATCH, &path, app.owner())
                .header("if-match", &tag)
                .json(&json!({"title": "second"})),
        )
        .await;
    assert_eq!(res.status, 200);
    let new_tag = res.header("etag").unwrap().to_string();
    assert_ne!(new_tag, tag);
    assert_eq!(
        app.get(&path, app.owner()).await.header("etag"),
        Some(new_tag.as_str()),
        "PATCH and GET agree"
    );
    let stale_get =
        app.send(app.request(reqwest::Method::GET, &path, app.owner()).header("if-none-match", &tag)).await;
    assert_eq!(stale_get.status, 200);
    app.send(app.request(reqwest::Method::DELETE, &path, app.owner()).header("if-match", &tag)).await.error(
        412,
        "precondition_failed",
        "changed",
    );
    let deleted =
        app.send(app.request(reqwest::Method::DELETE, &path, app.owner()).header("if-match", &new_tag)).await;
    assert_eq!(deleted.status, 200);
    // Projects carry them too.
    assert!(app.get(&format!("/api/v1/projects/{}", p.id), app.owner()).await.header("etag").is_some());
}
