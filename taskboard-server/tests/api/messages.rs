use serde_json::{Value, json};
use taskboard_core::model::{AuthorType, Message, UploadedFile};

use crate::support::{TestApp, spawn, spawn_with};

#[tokio::test]
async fn messages_are_posted_listed_and_threaded() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "chat").await;
    let chat = p.chat_id.unwrap();
    let (bot, bot_token) = app.create_agent("bot", "member").await;
    let t = app.create_task(app.owner(), p.id, "Talk").await;

    let hello: Message = app
        .post(
            "/api/v1/messages",
            Some(&bot_token),
            json!({"chat_id": chat, "content": "hello @owner", "thinking": "be nice"}),
        )
        .await
        .expect(201);
    assert_eq!((hello.author_id, hello.author_type), (Some(bot), AuthorType::Agent));
    assert_eq!(hello.mentions[0].id, app.owner_id);
    let reply: Message = app
        .post(
            "/api/v1/messages",
            app.owner(),
            json!({"chat_id": chat, "parent_id": hello.id, "content": "hi"}),
        )
        .await
        .expect(201);
    let comment: Message = app
        .post("/api/v1/messages", app.owner(), json!({"task_id": t.id, "content": "on it"}))
        .await
        .expect(201);

    app.post("/api/v1/messages", app.owner(), json!({"content": "nowhere"})).await.error(
        400,
        "bad_request",
        "",
    );
    app.post("/api/v1/messages", None, json!({"chat_id": chat, "content": "anon"})).await.error(
        401,
        "unauthorized",
        "",
    );
    app.post("/api/v1/messages", app.owner(), json!({"chat_id": uuid::Uuid::now_v7(), "content": "x"}))
        .await
        .error(404, "not_found", "");
    app.post("/api/v1/messages", app.owner(), json!({"chat_id": chat, "content": "x", "mentions": ["nope"]}))
        .await
        .error(422, "validation_error", "mentions[0]");

    let in_chat: Vec<Message> =
        app.get(&format!("/api/v1/messages?chat_id={chat}"), app.owner()).await.expect(200);
    let ids: Vec<_> = in_chat.iter().map(|m| m.id).collect();
    assert!(ids.ends_with(&[hello.id, reply.id]), "chronological order");
    let on_task: Vec<Message> =
        app.get(&format!("/api/v1/messages?task_id={}", t.id), app.owner()).await.expect(200);
    assert_eq!(on_task.last().unwrap().id, comment.id);
    let last: Vec<Message> =
        app.get(&format!("/api/v1/messages?chat_id={chat}&limit=1"), app.owner()).await.expect(200);
    assert_eq!(last[0].id, reply.id);
    app.get("/api/v1/messages?limit=500", app.owner()).await.error(422, "validation_error", "limit");

    let replies: Vec<Message> =
        app.get(&format!("/api/v1/messages/{}/replies", hello.id), app.owner()).await.expect(200);
    assert_eq!(replies.iter().map(|m| m.id).collect::<Vec<_>>(), [reply.id]);
    app.get(&format!("/api/v1/messages/{}/replies", uuid::Uuid::now_v7()), app.owner()).await.error(
        404,
        "not_found",
        "",
    );
}

#[tokio::test]
async fn attachments_are_uploaded_bound_and_downloaded_with_query_token() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "files").await;
    let png = b"\x89PNG\r\n\x1a\nnot really an image".to_vec();
    let up: UploadedFile =
        app.upload("/api/v1/upload", app.owner(), "shot.png", png.clone(), None).await.expect(200);
    assert_eq!(
        (up.filename.as_str(), up.mime_type.as_str(), up.size),
        ("shot.png", "image/png", png.len() as u64)
    );

    let m: Message = app
        .post(
            "/api/v1/messages",
            app.owner(),
            json!({"chat_id": p.chat_id, "content": "", "attachments": [up]}),
        )
        .await
        .expect(201);
    assert_eq!(m.attachments[0].id, up.file_id);
    app.post(
        "/api/v1/messages",
        app.owner(),
        json!({"chat_id": p.chat_id, "content": "again", "attachments": [up]}),
    )
    .await
    .error(422, "validation_error", "attachments[0]");

    // An image link carries the credentials in the query.
    let url = format!("/api/v1/attachments/{}/download", up.file_id);
    let res = app.get(&format!("{url}?token={}", app.owner_token), None).await;
    assert_eq!(res.status, 200);
    assert_eq!(&res.bytes[..], &png[..]);
    assert_eq!(res.header("content-type"), Some("image/png"));
    assert_eq!(res.header("content-length"), Some(png.len().to_string().as_str()));
    assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        res.header("content-disposition"),
        Some("inline; filename=\"shot.png\"; filename*=UTF-8''shot.png")
    );
    app.get(&url, None).await.error(401, "unauthorized", "");
    app.get(&format!("/api/v1/attachments/{}/download", uuid::Uuid::now_v7()), app.owner()).await.error(
        404,
        "not_found",
        "",
    );

    // Other files are attachments, with their exact name.
    let up: UploadedFile =
        app.upload("/api/v1/upload", app.owner(), "notes été.txt", b"hello".to_vec(), None).await.expect(200);
    let res = app.get(&format!("/api/v1/attachments/{}/download", up.file_id), app.owner()).await;
    assert_eq!(
        res.header("content-disposition"),
        Some("attachment; filename=\"notes _t_.txt\"; filename*=UTF-8''notes%20%C3%A9t%C3%A9.txt")
    );
    assert_eq!(&res.bytes[..], b"hello");
}

/// Files in the blob store other than its scratch directory.
fn stored_blobs(app: &TestApp) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(app.blob_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "tmp")
        .collect();
    let tmp = app.blob_dir().join("tmp");
    if tmp.exists() {
        names.extend(
            std::fs::read_dir(tmp)
                .unwrap()
                .map(|e| format!("tmp/{}", e.unwrap().file_name().to_string_lossy())),
        );
    }
    names
}

#[tokio::test]
async fn uploads_over_the_limit_are_413_and_leave_nothing() {
    let app = spawn_with(|c| c.max_upload_bytes = 10_000).await;
    let p = app.create_project(app.owner(), "big").await;
    app.upload("/api/v1/upload", app.owner(), "big.bin", vec![7u8; 10_001], None).await.error(
        413,
        "payload_too_large",
        "",
    );
    app.upload(
        &format!("/api/v1/projects/{}/files", p.id),
        app.owner(),
        "big.bin",
        vec![7u8; 300_000],
        Some("d"),
    )
    .await
    .error(413, "payload_too_large", "");
    assert!(stored_blobs(&app).is_empty(), "left behind: {:?}", stored_blobs(&app));
    // The connection stays usable and the limit itself is accepted.
    let up: UploadedFile =
        app.upload("/api/v1/upload", app.owner(), "ok.bin", vec![7u8; 10_000], None).await.expect(200);
    assert_eq!(up.size, 10_000);
    assert_eq!(stored_blobs(&app).len(), 1);
}

#[tokio::test]
async fn uploads_of_another_media_type_are_415_and_without_a_file_422() {
    let app = spawn().await;
    let res = app
        .send(
            app.request(reqwest::Method::POST, "/api/v1/upload", app.owner())
                .header("content-type", "text/plain")
                .body("x"),
        )
        .await;
    res.error(415, "unsupported_media_type", "multipart");
    let form = reqwest::multipart::Form::new().text("other", "x");
    let res =
        app.send(app.request(reqwest::Method::POST, "/api/v1/upload", app.owner()).multipart(form)).await;
    res.error(422, "validation_error", "file");
    let _: Value = Value::Null;
}
