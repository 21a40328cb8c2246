use serde_json::{Value, json};
use taskboard_core::model::{Label, Priority, Step, Task, TaskAction, TaskLink, TaskStatus};

use crate::support::spawn;

#[tokio::test]
async fn tasks_are_created_filtered_updated_and_deleted() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let t1: Task = app
        .post(
            &format!("/api/v1/tasks?project_id={}", p.id),
            app.owner(),
            json!({"title": "Fix login", "type": "bug", "priority": "high", "labels": ["backend"]}),
        )
        .await
        .expect(201);
    assert_eq!((t1.key.as_str(), t1.number, t1.status), ("WEB-1", 1, TaskStatus::Backlog));
    assert_eq!(t1.labels, ["backend"]);
    let t2 = app.create_task(app.owner(), p.id, "Write docs").await;
    assert_eq!(t2.key, "WEB-2");

    // Query and body validation.
    app.post("/api/v1/tasks", app.owner(), json!({"title": "x"})).await.error(
        422,
        "validation_error",
        "project_id",
    );
    app.post("/api/v1/tasks?project_id=zzz", app.owner(), json!({"title": "x"})).await.error(
        422,
        "validation_error",
        "project_id",
    );
    app.post(&format!("/api/v1/tasks?project_id={}", p.id), app.owner(), json!({"title": "   "}))
        .await
        .error(422, "validation_error", "title");
    app.post(
        &format!("/api/v1/tasks?project_id={}", p.id),
        app.owner(),
        json!({"title": "x", "priority": "whenever"}),
    )
    .await
    .error(422, "validation_error", "priority");
    app.post(&format!("/api/v1/tasks?project_id={}", p.id), app.owner(), json!({"title": 5})).await.error(
        422,
        "validation_error",
        "title",
    );
    let res = app
        .send(
            app.request(reqwest::Method::POST, &format!("/api/v1/tasks?project_id={}", p.id), app.owner())
                .header("content-type", "application/json")
                .body("{\"title\": "),
        )
        .await;
    res.error(422, "validation_error", "body");
    app.post(
        &format!("/api/v1/tasks?project_id={}", uuid::Uuid::now_v7()),
        app.owner(),
        json!({"title": "x"}),
    )
    .await
    .error(404, "not_found", "");

    let got: Task = app.get(&format!("/api/v1/tasks/{}", t1.id), app.owner()).await.expect(200);
    assert_eq!(got.id, t1.id);
    app.get(&format!("/api/v1/tasks/{}", uuid::Uuid::now_v7()), app.owner()).await.error(
        404,
        "not_found",
        "",
    );

    let updated: Task = app
        .patch(
            &format!("/api/v1/tasks/{}", t2.id),
            app.owner(),
            json!({"status": "todo", "priority": "urgent", "description": "all of it", "title": null}),
        )
        .await
        .expect(200);
    assert_eq!(
        (updated.status, updated.priority, updated.title.as_str()),
        (TaskStatus::Todo, Priority::Urgent, "Write docs")
    );

    let list = |q: &str| {
        let q = q.to_string();
        let app = &app;
        async move { app.get(&format!("/api/v1/tasks{q}"), app.owner()).await.expect::<Vec<Task>>(200) }
    };
    assert_eq!(list("").await.len(), 2);
    assert_eq!(list(&format!("?project_id={}&status=todo", p.id)).await[0].id, t2.id);
    assert_eq!(list("?label=backend").await[0].id, t1.id);
    assert_eq!(list("?q=web-1").await[0].id, t1.id);
    assert_eq!(list("?q=DOCS").await[0].id, t2.id);
    assert_eq!(list("?type=bug&priority=high").await.len(), 1);
    assert_eq!(list("?limit=1").await.len(), 1);
    app.get("/api/v1/tasks?status=doing", app.owner()).await.error(422, "validation_error", "status");
    app.get("/api/v1/tasks?limit=0", app.owner()).await.error(422, "validation_error", "limit");

    let actions: Vec<TaskAction> =
        app.get(&format!("/api/v1/tasks/{}/actions", t2.id), app.owner()).await.expect(200);
    assert!(!actions.is_empty());

    let ok: Value = app.delete(&format!("/api/v1/tasks/{}", t1.id), app.owner()).await.expect(200);
    assert_eq!(ok, json!({"ok": true}));
    app.get(&format!("/api/v1/tasks/{}", t1.id), app.owner()).await.error(404, "not_found", "");
}

#[tokio::test]
async fn take_reject_assign_and_watch() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "ops").await;
    let (bot, bot_token) = app.create_agent("bot", "member").await;
    let (_, other_token) = app.create_agent("other", "member").await;
    let t = app.create_task(app.owner(), p.id, "Deploy").await;

    let taken: Task =
        app.post_empty(&format!("/api/v1/tasks/{}/take", t.id), Some(&bot_token)).await.expect(200);
    assert_eq!(taken.status, TaskStatus::InProgress);
    assert_eq!(taken.assignee.unwrap().id, bot);
    assert!(taken.watcher_ids.contains(&bot));
    app.post_empty(&format!("/api/v1/tasks/{}/take", t.id), Some(&other_token))
        .await
        .error(409, "conflict", "");

    let rejected: Value = app
        .post(
            &format!("/api/v1/tasks/{}/reject", t.id),
            Some(&bot_token),
            json!({"reason": "blocked on infra"}),
        )
        .await
        .expect(200);
    assert_eq!(rejected, json!({"ok": true, "reason": "blocked on infra"}));
    app.post(&format!("/api/v1/tasks/{}/reject", t.id), Some(&bot_token), json!({"reason": ""})).await.error(
        422,
        "validation_error",
        "reason",
    );
    let back: Task = app.get(&format!("/api/v1/tasks/{}", t.id), app.owner()).await.expect(200);
    assert_eq!((back.status, back.assignee), (TaskStatus::Backlog, None));

    let assigned: Task = app
        .post(&format!("/api/v1/tasks/{}/assign", t.id), app.owner(), json!({"assignee_id": bot}))
        .await
        .expect(200);
    assert_eq!(assigned.assignee.unwrap().id, bot);
    app.post(
        &format!("/api/v1/tasks/{}/assign", t.id),
        app.owner(),
        json!({"assignee_id": uuid::Uuid::now_v7()}),
    )
    .await
    .error(404, "not_found", "");
    // Assigned and not in backlog/todo any more: take is 409.
    app.patch(&format!("/api/v1/tasks/{}", t.id), app.owner(), json!({"status": "review"}))
        .await
        .expect::<Task>(200);
    app.post_empty(&format!("/api/v1/tasks/{}/take", t.id), Some(&other_token))
        .await
        .error(409, "conflict", "");

    let watching: Value =
        app.post_empty(&format!("/api/v1/tasks/{}/watch", t.id), Some(&other_token)).await.expect(200);
    assert_eq!(watching["ok"], true);
    assert_eq!(watching["watcher_ids"].as_array().unwrap().len(), 3);
    let after: Value =
        app.delete(&format!("/api/v1/tasks/{}/watch", t.id), Some(&other_token)).await.expect(200);
    assert_eq!(after["watcher_ids"].as_array().unwrap().len(), 2);
    app.post_empty(&format!("/api/v1/tasks/{}/watch", uuid::Uuid::now_v7()), Some(&other_token)).await.error(
        404,
        "not_found",
        "",
    );
}

#[tokio::test]
async fn links_steps_and_labels() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "core").await;
    let a = app.create_task(app.owner(), p.id, "A").await;
    let b = app.create_task(app.owner(), p.id, "B").await;

    // Links.
    let links = format!("/api/v1/tasks/{}/links", a.id);
    let link: TaskLink = app
        .post(&links, app.owner(), json!({"target_id": b.id, "link_type": "depends_on"}))
        .await
        .expect(201);
    assert_eq!((link.source_key.as_str(), link.target_key.as_str()), ("CORE-1", "CORE-2"));
    app.post(&links, app.owner(), json!({"target_id": b.id, "link_type": "depends_on"}))
        .await
        .error(409, "conflict", "");
    app.post(&links, app.owner(), json!({"target_id": a.id, "link_type": "relates_to"})).await.error(
        400,
        "bad_request",
        "",
    );
    app.post(&links, app.owner(), json!({"target_id": b.id, "link_type": "likes"})).await.error(
        422,
        "validation_error",
        "link_type",
    );
    app.post(&links, app.owner(), json!({"target_id": uuid::Uuid::now_v7(), "link_type": "blocks"}))
        .await
        .error(404, "not_found", "");
    let listed: Vec<TaskLink> =
        app.get(&format!("/api/v1/tasks/{}/links", b.id), app.owner()).await.expect(200);
    assert_eq!(listed.len(), 1, "links are listed in both directions");
    let with_dep: Task = app.get(&format!("/api/v1/tasks/{}", a.id), app.owner()).await.expect(200);
    assert_eq!(with_dep.depends_on, [b.id]);
    app.delete(&format!("{links}/{}", link.id), app.owner()).await.expect::<Value>(200);
    assert!(app.get(&links, app.owner()).await.expect::<Vec<TaskLink>>(200).is_empty());

    // Steps.
    let steps = format!("/api/v1/tasks/{}/steps", a.id);
    let s1: Step = app.post(&steps, app.owner(), json!({"title": "first"})).await.expect(201);
    let s2: Step = app.post(&steps, app.owner(), json!({"title": "second"})).await.expect(201);
    app.post(&format!("/api/v1/tasks/{}/steps", uuid::Uuid::now_v7()), app.owner(), json!({"title": "x"}))
        .await
        .error(404, "not_found", "");
    app.post(&steps, app.owner(), json!({})).await.error(422, "validation_error", "title");
    let done: Step =
        app.patch(&format!("{steps}/{}", s1.id), app.owner(), json!({"done": true})).await.expect(200);
    assert!(done.done);
    app.delete(&format!("{steps}/{}", s2.id), app.owner()).await.expect::<Value>(200);
    let listed: Vec<Step> = app.get(&steps, app.owner()).await.expect(200);
    assert_eq!(listed.iter().map(|s| s.title.as_str()).collect::<Vec<_>>(), ["first"]);

    // Labels.
    let label: Label = app.post("/api/v1/labels", app.owner(), json!({"name": "urgent"})).await.expect(201);
    assert_eq!(label.color, "#6366f1");
    app.post("/api/v1/labels", app.owner(), json!({"name": "bad", "color": "red"})).await.error(
        422,
        "validation_error",
        "color",
    );
    let label: Label = app
        .patch(&format!("/api/v1/labels/{}", label.id), app.owner(), json!({"color": "#f00"}))
        .await
        .expect(200);
    assert_eq!(label.color, "#f00");
    let one: Label = app.get(&format!("/api/v1/labels/{}", label.id), app.owner()).await.expect(200);
    assert_eq!((one.id, one.name.as_str(), one.color.as_str()), (label.id, "urgent", "#f00"));
    let nobody = format!("/api/v1/labels/{}", uuid::Uuid::now_v7());
    app.get(&nobody, app.owner()).await.error(404, "not_found", "");
    let on = format!("/api/v1/tasks/{}/labels/{}", a.id, label.id);
    app.post_empty(&on, app.owner()).await.expect::<Value>(200);
    app.post_empty(&on, app.owner()).await.expect::<Value>(200);
    let labelled: Task = app.get(&format!("/api/v1/tasks/{}", a.id), app.owner()).await.expect(200);
    assert_eq!(labelled.labels, ["urgent"]);
    app.post_empty(&format!("/api/v1/tasks/{}/labels/{}", a.id, uuid::Uuid::now_v7()), app.owner())
        .await
        .error(404, "not_found", "");
    app.delete(&on, app.owner()).await.expect::<Value>(200);
    let labels: Vec<Label> = app.get("/api/v1/labels", app.owner()).await.expect(200);
    assert_eq!(labels.len(), 1);
    app.delete(&format!("/api/v1/labels/{}", label.id), app.owner()).await.expect::<Value>(200);
    assert!(app.get("/api/v1/labels", app.owner()).await.expect::<Vec<Label>>(200).is_empty());
    app.get(&format!("/api/v1/labels/{}", label.id), app.owner()).await.error(404, "not_found", "");
}
