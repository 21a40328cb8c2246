use reqwest::Method;
use serde_json::json;
use taskboard_core::model::{LoginResponse, Member, Role};

use crate::support::{OWNER_PASSWORD, spawn};

#[tokio::test]
async fn login_by_slug_or_name_and_wrong_credentials_are_401() {
    let app = spawn().await;
    let ok: LoginResponse = app
        .post("/api/v1/auth/login", None, json!({"login": "owner", "password": OWNER_PASSWORD}))
        .await
        .expect(200);
    assert_eq!(ok.role, Role::Owner);
    assert_eq!(ok.slug, "owner");
    app.post("/api/v1/auth/login", None, json!({"login": "owner", "password": "nope-nope"})).await.error(
        401,
        "unauthorized",
        "",
    );
    app.post("/api/v1/auth/login", None, json!({"login": "nobody", "password": OWNER_PASSWORD})).await.error(
        401,
        "unauthorized",
        "",
    );
    // By name: the owner's name is its slug until renamed.
    app.patch(&format!("/api/v1/members/{}", app.owner_id), app.owner(), json!({"name": "Ada Lovelace"}))
        .await
        .expect::<Member>(200);
    app.post("/api/v1/auth/login", None, json!({"login": "ada lovelace", "password": OWNER_PASSWORD}))
        .await
        .expect::<LoginResponse>(200);
    app.post("/api/v1/auth/login", None, json!({"login": "owner"})).await.error(
        422,
        "validation_error",
        "password",
    );
}

#[tokio::test]
async fn credentials_missing_invalid_or_revoked_are_401() {
    let app = spawn().await;
    app.get("/api/v1/members", None).await.error(401, "unauthorized", "");
    app.get("/api/v1/members", Some("garbage")).await.error(401, "unauthorized", "");
    app.get("/api/v1/members", Some("tbk-not-a-real-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaa")).await.error(
        401,
        "unauthorized",
        "",
    );
    let res = app.send(app.client.get(app.url("/api/v1/members")).header("authorization", "Basic abc")).await;
    res.error(401, "unauthorized", "");

    let (agent, token) = app.create_agent("bot", "member").await;
    app.get("/api/v1/members/me", Some(&token)).await.expect::<Member>(200);
    app.post_empty(&format!("/api/v1/members/{agent}/revoke-token"), app.owner())
        .await
        .expect::<serde_json::Value>(200);
    app.get("/api/v1/members/me", Some(&token)).await.error(401, "unauthorized", "");

    // Regenerating replaces the token at once.
    let (agent, old) = app.create_agent("bot2", "member").await;
    let new: serde_json::Value =
        app.post_empty(&format!("/api/v1/members/{agent}/regenerate-token"), app.owner()).await.expect(200);
    let new = new["token"].as_str().unwrap();
    assert!(new.starts_with("tbk-"));
    app.get("/api/v1/members/me", Some(&old)).await.error(401, "unauthorized", "");
    app.get("/api/v1/members/me", Some(new)).await.expect::<Member>(200);

    // A deleted member's credentials stop working.
    let (gone, gone_token) = app.create_agent("gone", "member").await;
    app.delete(&format!("/api/v1/members/{gone}"), app.owner()).await.expect::<serde_json::Value>(200);
    app.get("/api/v1/members/me", Some(&gone_token)).await.error(401, "unauthorized", "");
}

#[tokio::test]
async fn token_in_the_query_works_for_any_endpoint() {
    let app = spawn().await;
    let me: Member =
        app.get(&format!("/api/v1/members/me?token={}", app.owner_token), None).await.expect(200);
    assert_eq!(me.id, app.owner_id);
    let (_, agent) = app.create_agent("qbot", "member").await;
    let me: Member = app.get(&format!("/api/v1/members/me?token={agent}"), None).await.expect(200);
    assert_eq!(me.slug, "qbot");
    app.get("/api/v1/members/me?token=wrong", None).await.error(401, "unauthorized", "");
}

#[tokio::test]
async fn utility_endpoints_need_no_credentials() {
    let app = spawn().await;
    let health: serde_json::Value = app.get("/health", None).await.expect(200);
    assert_eq!(health, json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}));
    // Without --dev there is neither /docs nor /openapi.json.
    app.get("/docs", None).await.error(404, "not_found", "");
    app.get("/openapi.json", None).await.error(404, "not_found", "");
    let res = app.call(Method::POST, "/health", None, None).await;
    res.error(405, "method_not_allowed", "");
    assert_eq!(res.header("allow"), Some("GET"));
}
