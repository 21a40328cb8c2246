use serde_json::{Value, json};
use taskboard_core::model::{Project, ProjectMember, ProjectRole, ProjectStatus};

use crate::support::spawn;

#[tokio::test]
async fn projects_are_created_listed_updated_and_archived() {
    let app = spawn().await;
    let web: Project = app
        .post(
            "/api/v1/projects",
            app.owner(),
            json!({"name": "Web", "slug": "web", "description": "site", "repo_urls": ["https://x/y"]}),
        )
        .await
        .expect(201);
    assert!(web.chat_id.is_some(), "a project comes with its main chat");
    assert_eq!(web.status, ProjectStatus::Active);
    app.post("/api/v1/projects", app.owner(), json!({"name": "Web 2", "slug": "web"}))
        .await
        .error(409, "conflict", "");
    app.post("/api/v1/projects", app.owner(), json!({"name": "", "slug": "empty"})).await.error(
        422,
        "validation_error",
        "name",
    );
    app.post("/api/v1/projects", app.owner(), json!({"slug": "noname"})).await.error(
        422,
        "validation_error",
        "name",
    );
    let api = app.create_project(app.owner(), "api").await;

    let got: Project = app.get(&format!("/api/v1/projects/{}", web.id), app.owner()).await.expect(200);
    assert_eq!(got, web);
    app.get(&format!("/api/v1/projects/{}", uuid::Uuid::now_v7()), app.owner()).await.error(
        404,
        "not_found",
        "",
    );

    let web: Project = app
        .patch(
            &format!("/api/v1/projects/{}", web.id),
            app.owner(),
            json!({"description": null, "auto_assign": true, "status": "archived"}),
        )
        .await
        .expect(200);
    assert_eq!((web.description, web.auto_assign, web.status), (None, true, ProjectStatus::Archived));
    app.patch(&format!("/api/v1/projects/{}", web.id), app.owner(), json!({"slug": "api"}))
        .await
        .error(409, "conflict", "");

    let active: Vec<Project> = app.get("/api/v1/projects", app.owner()).await.expect(200);
    assert_eq!(active.iter().map(|p| p.slug.as_str()).collect::<Vec<_>>(), ["api"]);
    let all: Vec<Project> = app.get("/api/v1/projects?include_archived=true", app.owner()).await.expect(200);
    assert_eq!(all.len(), 2);
    let _ = api;
}

#[tokio::test]
async fn the_slug_filter_finds_one_project_by_its_slug() {
    let app = spawn().await;
    let web = app.create_project(app.owner(), "web").await;
    app.create_project(app.owner(), "web-app").await;

    let found: Vec<Project> = app.get("/api/v1/projects?slug=web", app.owner()).await.expect(200);
    assert_eq!(found.iter().map(|p| (p.id, p.slug.as_str())).collect::<Vec<_>>(), [(web.id, "web")]);
    let none: Vec<Project> = app.get("/api/v1/projects?slug=we", app.owner()).await.expect(200);
    assert!(none.is_empty(), "a slug is matched whole: {none:?}");
    app.get("/api/v1/projects?slug=WEB", app.owner()).await.error(422, "validation_error", "slug");

    // An archived project is found only with include_archived, as in the list.
    app.patch(&format!("/api/v1/projects/{}", web.id), app.owner(), json!({"status": "archived"}))
        .await
        .expect::<Project>(200);
    let archived: Vec<Project> = app.get("/api/v1/projects?slug=web", app.owner()).await.expect(200);
    assert!(archived.is_empty(), "{archived:?}");
    let all: Vec<Project> =
        app.get("/api/v1/projects?slug=web&include_archived=true", app.owner()).await.expect(200);
    assert_eq!(all.iter().map(|p| (p.id, p.status)).collect::<Vec<_>>(), [(web.id, ProjectStatus::Archived)]);
}

#[tokio::test]
async fn only_owners_delete_projects() {
    let app = spawn().await;
    let (_, admin) = app.create_agent("admin", "admin").await;
    let p = app.create_project(Some(&admin), "doomed").await;
    app.delete(&format!("/api/v1/projects/{}", p.id), Some(&admin)).await.error(403, "forbidden", "");
    let ok: Value = app.delete(&format!("/api/v1/projects/{}", p.id), app.owner()).await.expect(200);
    assert_eq!(ok, json!({"ok": true}));
    app.get(&format!("/api/v1/projects/{}", p.id), app.owner()).await.error(404, "not_found", "");
}

#[tokio::test]
async fn project_members_are_added_listed_and_removed() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "team").await;
    let (bot, bot_token) = app.create_agent("bot", "member").await;
    let url = format!("/api/v1/projects/{}/members", p.id);

    let ok: Value = app.post(&url, app.owner(), json!({"member_id": bot})).await.expect(200);
    assert_eq!(ok, json!({"ok": true}));
    app.post(&url, app.owner(), json!({"member_id": bot})).await.error(409, "conflict", "");
    app.post(&url, app.owner(), json!({"member_id": uuid::Uuid::now_v7()})).await.error(404, "not_found", "");
    app.post(&url, app.owner(), json!({"member_id": "nope"})).await.error(
        422,
        "validation_error",
        "member_id",
    );
    app.post(&url, Some(&bot_token), json!({"member_id": app.owner_id})).await.error(403, "forbidden", "");

    let members: Vec<ProjectMember> = app.get(&url, app.owner()).await.expect(200);
    let roles: Vec<_> = members.iter().map(|m| (m.slug.as_str(), m.role)).collect();
    assert_eq!(roles, [("owner", ProjectRole::Owner), ("bot", ProjectRole::Member)]);

    // The project's owner cannot be removed; a non-member is 404.
    app.delete(&format!("{url}/{}", app.owner_id), app.owner()).await.error(400, "bad_request", "");
    app.delete(&format!("{url}/{bot}"), app.owner()).await.expect::<Value>(200);
    app.delete(&format!("{url}/{bot}"), app.owner()).await.error(404, "not_found", "");
}
