use reqwest::Method;
use serde_json::json;
use taskboard_core::model::{Member, Role};
use taskboard_core::wire::LoginResponse;

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

// ---- account takeover and password changes ------------------------------------

async fn login(app: &crate::support::TestApp, login: &str, password: &str) -> crate::support::Res {
    app.post("/api/v1/auth/login", None, json!({"login": login, "password": password})).await
}

async fn human_token(
    app: &crate::support::TestApp,
    slug: &str,
    role: &str,
    password: &str,
) -> (uuid::Uuid, String) {
    let m = app.create_member(slug, "human", role).await;
    app.put(&format!("/api/v1/members/{}/password", m.id), app.owner(), json!({"password": password}))
        .await
        .expect::<serde_json::Value>(200);
    let res: LoginResponse = login(app, slug, password).await.expect(200);
    (m.id, res.token)
}

#[tokio::test]
async fn an_admin_cannot_take_over_an_owner_or_another_admin() {
    let app = spawn().await;
    let (_, admin) = human_token(&app, "admin", "admin", "admin-password").await;
    let (other_admin, _) = human_token(&app, "admin2", "admin", "admin2-password").await;
    let (plain, _) = human_token(&app, "plain", "member", "plain-password").await;

    let res = app
        .put(
            &format!("/api/v1/members/{}/password", app.owner_id),
            Some(&admin),
            json!({"password": "taken-over"}),
        )
        .await;
    res.error(403, "forbidden", "only an owner may set the password of an admin or owner; owner is an owner");
    login(&app, "owner", "taken-over").await.error(401, "unauthorized", "");
    app.put(
        &format!("/api/v1/members/{other_admin}/password"),
        Some(&admin),
        json!({"password": "taken-over"}),
    )
    .await
    .error(403, "forbidden", "admin2 is an admin");
    // Nor by demoting the other admin first, or renaming the owner.
    app.patch(&format!("/api/v1/members/{other_admin}"), Some(&admin), json!({"role": "member"}))
        .await
        .error(403, "forbidden", "admin2");
    app.patch(&format!("/api/v1/members/{}", app.owner_id), Some(&admin), json!({"slug": "mallory"}))
        .await
        .error(403, "forbidden", "owner");
    let (owner_bot, _) = app.create_agent("owner-bot", "owner").await;
    app.post_empty(&format!("/api/v1/members/{owner_bot}/regenerate-token"), Some(&admin)).await.error(
        403,
        "forbidden",
        "owner-bot",
    );
    app.post_empty(&format!("/api/v1/members/{owner_bot}/revoke-token"), Some(&admin)).await.error(
        403,
        "forbidden",
        "owner-bot",
    );

    // What an admin may still do: a member's password; an owner anyone's.
    app.put(
        &format!("/api/v1/members/{plain}/password"),
        Some(&admin),
        json!({"password": "reset-by-admin"}),
    )
    .await
    .expect::<serde_json::Value>(200);
    login(&app, "plain", "reset-by-admin").await.expect::<LoginResponse>(200);
    app.put(
        &format!("/api/v1/members/{other_admin}/password"),
        app.owner(),
        json!({"password": "by-the-owner"}),
    )
    .await
    .expect::<serde_json::Value>(200);
    login(&app, "admin2", "by-the-owner").await.expect::<LoginResponse>(200);
    app.put(
        &format!("/api/v1/members/{owner_bot}/password"),
        app.owner(),
        json!({"password": "agent-password"}),
    )
    .await
    .error(400, "bad_request", "agent");
}

#[tokio::test]
async fn a_password_change_ends_older_jwts_and_a_fresh_login_works() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;

    let app = spawn().await;
    let (ana, old) = human_token(&app, "ana", "member", "ana-password").await;
    let (_, other) = human_token(&app, "bob", "member", "bob-password").await;
    app.get("/api/v1/members/me", Some(&old)).await.expect::<Member>(200);
    let ws_url = format!("{}/api/v1/ws?token={old}", app.base.replacen("http://", "ws://", 1));
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url.as_str()).await.expect("the upgrade");

    app.put(&format!("/api/v1/members/{ana}/password"), Some(&old), json!({"password": "new-password"}))
        .await
        .expect::<serde_json::Value>(200);
    app.get("/api/v1/members/me", Some(&old)).await.error(401, "unauthorized", "password changed");
    app.get(&format!("/api/v1/members/me?token={old}"), None).await.error(401, "unauthorized", "");
    // A login right after the change, within the same second or not, works.
    let fresh: LoginResponse = login(&app, "ana", "new-password").await.expect(200);
    let me: Member = app.get("/api/v1/members/me", Some(&fresh.token)).await.expect(200);
    assert_eq!(me.id, ana);
    login(&app, "ana", "ana-password").await.error(401, "unauthorized", "");
    app.get("/api/v1/members/me", Some(&other)).await.expect::<Member>(200);

    // The WebSocket opened with the old token is closed with 4001.
    let code = loop {
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), ws.next()).await;
        match next.expect("a frame in time") {
            Some(Ok(Message::Close(Some(frame)))) => break u16::from(frame.code),
            Some(Ok(_)) => continue,
            other => panic!("the connection ended without a close frame: {other:?}"),
        }
    };
    assert_eq!(code, taskboard_server::ws::CLOSE_REVOKED);
    match tokio_tungstenite::connect_async(ws_url.as_str()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => assert_eq!(res.status(), 401),
        other => panic!("the old token must fail: {other:?}"),
    }
}

// ---- login throttling -----------------------------------------------------------

#[track_caller]
fn throttled(res: &crate::support::Res) -> u64 {
    res.error(429, "too_many_requests", "too many failed logins");
    let secs: u64 = res.header("retry-after").expect("a Retry-After header").parse().expect("seconds");
    assert!((1..=15 * 60).contains(&secs), "{secs}");
    secs
}

#[tokio::test]
async fn the_eleventh_failed_login_is_429_with_retry_after_while_others_log_in() {
    let app = spawn().await;
    human_token(&app, "ana", "member", "ana-password").await;
    for i in 1..=10 {
        let res = login(&app, "ana", &format!("wrong-{i}")).await;
        assert_eq!(res.status, 401, "failure {i}");
        assert!(res.header("retry-after").is_none());
    }
    throttled(&login(&app, "ana", "wrong-11").await);
    // The right password does not help now, by slug or by name (the
    // name is the slug here; a login by name is matched without case).
    throttled(&login(&app, "ana", "ana-password").await);
    throttled(&login(&app, "ANA", "ana-password").await);
    // Another account logs in from the same address.
    login(&app, "owner", OWNER_PASSWORD).await.expect::<LoginResponse>(200);
}

#[tokio::test]
async fn a_successful_login_resets_the_count() {
    let app = spawn().await;
    human_token(&app, "ana", "member", "ana-password").await;
    for _ in 0..9 {
        assert_eq!(login(&app, "ana", "wrong-password").await.status, 401);
    }
    login(&app, "ana", "ana-password").await.expect::<LoginResponse>(200);
    for i in 1..=10 {
        assert_eq!(login(&app, "ana", "wrong-password").await.status, 401, "failure {i} after the reset");
    }
    throttled(&login(&app, "ana", "ana-password").await);
}

#[tokio::test]
async fn the_hundred_and_first_failed_login_from_one_address_is_429() {
    let app = spawn().await;
    for i in 0..100 {
        // Ten names, ten failures each: no name reaches its own limit.
        let res = login(&app, &format!("guess-{}", i % 10), "wrong-password").await;
        assert_eq!(res.status, 401, "failure {}", i + 1);
    }
    let res = login(&app, "owner", OWNER_PASSWORD).await;
    throttled(&res);
    res.error(429, "too_many_requests", "from this address");
    // Requests other than logins go on.
    app.get("/api/v1/members/me", app.owner()).await.expect::<Member>(200);
}
