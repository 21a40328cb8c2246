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

/// Uploads `content` under `filename` written into the part's header as
/// raw UTF-8, as browsers send it (the multipart writer of the client
/// would percent-encode it).
async fn upload_raw(app: &crate::support::TestApp, path: &str, filename: &str) -> crate::support::Res {
    let mut body = Vec::new();
    body.extend_from_slice(b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"");
    body.extend_from_slice(filename.as_bytes());
    body.extend_from_slice(b"\"\r\nContent-Type: text/plain\r\n\r\ncontent\r\n--XyZ--\r\n");
    let req = app
        .request(reqwest::Method::POST, path, app.owner())
        .header("content-type", "multipart/form-data; boundary=XyZ")
        .body(body);
    app.send(req).await
}

#[tokio::test]
async fn blank_names_and_names_with_invisible_characters_are_refused() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "docs").await;
    let files = format!("/api/v1/projects/{}/files", p.id);
    let cases = [
        (" ", "blank"),
        ("   ", "blank"),
        ("\u{3000}", "blank"),
        ("invoice\u{202E}fdp.exe", "U+202E"),
        ("a\u{202A}b", "U+202A"),
        ("a\u{2066}b", "U+2066"),
        ("a\u{2069}b", "U+2069"),
        ("a\u{200E}b", "U+200E"),
        ("a\u{200F}b", "U+200F"),
        ("a\u{061C}b", "U+061C"),
        ("zero\u{200B}width", "U+200B"),
        ("a\u{200D}b", "U+200D"),
        ("a\u{2060}b", "U+2060"),
        ("\u{FEFF}bom.txt", "U+FEFF"),
    ];
    for (name, why) in cases {
        let res = upload_raw(&app, &files, name).await;
        res.error(400, "bad_request", why);
        assert!(res.body["detail"].as_str().unwrap().starts_with("invalid file name"), "{}", res.body);
        upload_raw(&app, "/api/v1/upload", name).await.error(422, "validation_error", "file: ");
    }
    let listed: Vec<ProjectFile> = app.get(&files, app.owner()).await.expect(200);
    assert!(listed.is_empty(), "{listed:?}");
    // Right-to-left text itself is a name like any other.
    let ok: ProjectFile = upload_raw(&app, &files, "שלום.txt").await.expect(201);
    assert_eq!(ok.filename, "שלום.txt");
}
