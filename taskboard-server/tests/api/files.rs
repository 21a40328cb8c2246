use serde_json::{Value, json};
use taskboard_core::model::ProjectFile;

use crate::support::spawn;

#[tokio::test]
async fn project_files_are_uploaded_replaced_listed_downloaded_and_deleted() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "docs").await;
    let files = format!("/api/v1/projects/{}/files", p.id);

    let spec: ProjectFile =
        app.upload(&files, app.owner(), "spec.md", b"# spec".to_vec(), Some("the spec")).await.expect(201);
    assert_eq!(
        (spec.description.as_deref(), spec.size, spec.mime_type.as_str()),
        (Some("the spec"), 6, "text/markdown")
    );
    // Same name: replaced in place, same id; the description is kept.
    let again: ProjectFile =
        app.upload(&files, app.owner(), "spec.md", b"# spec v2".to_vec(), None).await.expect(201);
    assert_eq!((again.id, again.size, again.description.as_deref()), (spec.id, 9, Some("the spec")));
    let other: ProjectFile =
        app.upload(&files, app.owner(), "Notes.txt", b"n".to_vec(), None).await.expect(201);

    app.upload(&files, app.owner(), "..", b"x".to_vec(), None).await.error(400, "bad_request", "");
    app.upload(
        &format!("/api/v1/projects/{}/files", uuid::Uuid::now_v7()),
        app.owner(),
        "a.txt",
        b"x".to_vec(),
        None,
    )
    .await
    .error(404, "not_found", "");

    let all: Vec<ProjectFile> = app.get(&files, app.owner()).await.expect(200);
    assert_eq!(all.iter().map(|f| f.filename.as_str()).collect::<Vec<_>>(), ["Notes.txt", "spec.md"]);
    let found: Vec<ProjectFile> = app.get(&format!("{files}?search=NOTE"), app.owner()).await.expect(200);
    assert_eq!(found.iter().map(|f| f.id).collect::<Vec<_>>(), [other.id]);

    let got: ProjectFile = app.get(&format!("{files}/{}", spec.id), app.owner()).await.expect(200);
    assert_eq!(got.size, 9);
    app.get(&format!("{files}/{}", uuid::Uuid::now_v7()), app.owner()).await.error(404, "not_found", "");

    let res = app.get(&format!("{files}/{}/download?token={}", spec.id, app.owner_token), None).await;
    assert_eq!(res.status, 200);
    assert_eq!(&res.bytes[..], b"# spec v2");
    assert_eq!(
        res.header("content-disposition"),
        Some("attachment; filename=\"spec.md\"; filename*=UTF-8''spec.md")
    );
    assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
    app.get(&format!("{files}/{}/download", uuid::Uuid::now_v7()), app.owner()).await.error(
        404,
        "not_found",
        "",
    );

    let patched: ProjectFile = app
        .patch(&format!("{files}/{}", spec.id), app.owner(), json!({"description": null}))
        .await
        .expect(200);
    assert_eq!(patched.description, None);
    let ok: Value = app.delete(&format!("{files}/{}", spec.id), app.owner()).await.expect(200);
    assert_eq!(ok, json!({"ok": true}));
    app.get(&format!("{files}/{}", spec.id), app.owner()).await.error(404, "not_found", "");
}

#[tokio::test]
async fn a_description_sent_after_the_file_is_applied() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "late").await;
    let part = reqwest::multipart::Part::bytes(b"x".to_vec()).file_name("a.txt");
    let form = reqwest::multipart::Form::new().part("file", part).text("description", "after");
    let res = app
        .send(
            app.request(reqwest::Method::POST, &format!("/api/v1/projects/{}/files", p.id), app.owner())
                .multipart(form),
        )
        .await;
    let f: ProjectFile = res.expect(201);
    assert_eq!(f.description.as_deref(), Some("after"));
}
