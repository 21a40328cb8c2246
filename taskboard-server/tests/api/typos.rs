//! A typo never passes silently: unknown PATCH fields, unknown query
//! parameters and ignored body fields are named.

use serde_json::{Value, json};

use crate::support::*;

#[tokio::test]
async fn a_patch_of_only_unknown_fields_is_refused_with_the_nearest_name() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let t = app.create_task(app.owner(), p.id, "one").await;
    let res = app.patch(&format!("/api/v1/tasks/{}", t.id), app.owner(), json!({"stauts": "done"})).await;
    res.error(422, "validation_error", "stauts: unknown field; did you mean status?");
    let now: Value = app.get(&format!("/api/v1/tasks/{}", t.id), app.owner()).await.expect(200);
    assert_eq!(now["status"], "backlog", "nothing changed");
    // An empty PATCH is not a typo: it changes nothing and says so.
    app.patch(&format!("/api/v1/tasks/{}", t.id), app.owner(), json!({})).await.expect::<Value>(200);
}

#[tokio::test]
async fn fields_ignored_beside_known_ones_are_named_in_a_header() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let t = app.create_task(app.owner(), p.id, "one").await;
    let res = app
        .patch(&format!("/api/v1/tasks/{}", t.id), app.owner(), json!({"status": "todo", "colour": "red"}))
        .await;
    assert_eq!(res.expect::<Value>(200)["status"], "todo");
    assert_eq!(res.header("taskboard-ignored-fields"), Some("colour"));
    let res = app.post("/api/v1/labels", app.owner(), json!({"name": "bug", "colr": "#fff", "x": 1})).await;
    res.expect::<Value>(201);
    assert_eq!(res.header("taskboard-ignored-fields"), Some("colr, x"));
    let res = app.post("/api/v1/labels", app.owner(), json!({"name": "ui"})).await;
    assert_eq!(res.header("taskboard-ignored-fields"), None);
}

#[tokio::test]
async fn unknown_query_parameters_are_refused_and_token_is_known_everywhere() {
    let app = spawn().await;
    let res = app.get("/api/v1/tasks?statsu=done", app.owner()).await;
    res.error(422, "validation_error", "statsu: unknown query parameter; did you mean status?");
    let res = app.get("/api/v1/members/me?verbose=1", app.owner()).await;
    res.error(422, "validation_error", "verbose: unknown query parameter");
    let token = app.owner_token.clone();
    app.get(&format!("/api/v1/tasks?status=todo&token={token}"), None).await.expect::<Vec<Value>>(200);
    app.get(&format!("/api/v1/members/me?token={token}"), None).await.expect::<Value>(200);
}

#[tokio::test]
async fn an_agent_prompt_over_the_limit_is_refused_on_creation() {
    let app = spawn().await;
    let prompt = "x".repeat(100_001);
    let body = json!({"name": "Bot", "slug": "bot", "type": "agent", "agent_config": {"prompt": prompt}});
    let res = app.post("/api/v1/members", app.owner(), body).await;
    res.error(422, "validation_error", "agent_config.prompt");
    let list: Vec<Value> = app.get("/api/v1/members", app.owner()).await.expect(200);
    assert!(list.iter().all(|m| m["slug"] != "bot"), "nothing was created");
}
