use serde_json::{Value, json};
use taskboard_core::model::{CreatedMember, Member, MemberStatus, MemberType};

use crate::support::spawn;

#[tokio::test]
async fn members_are_created_listed_read_and_updated() {
    let app = spawn().await;
    let human: CreatedMember = app
        .post("/api/v1/members", app.owner(), json!({"name": "Bob", "slug": "bob", "type": "human"}))
        .await
        .expect(201);
    assert_eq!(human.kind, MemberType::Human);
    assert!(human.token.is_none(), "humans get no token");
    let agent: CreatedMember = app
        .post(
            "/api/v1/members",
            app.owner(),
            json!({"name": "Bot", "slug": "bot", "agent_config": {"labels": ["backend"], "chat_listen": "mentions"}}),
        )
        .await
        .expect(201);
    assert_eq!(agent.kind, MemberType::Agent, "agent is the default type");
    assert!(agent.token.as_deref().unwrap().starts_with("tbk-"));
    assert_eq!(agent.agent_config.as_ref().unwrap().labels, vec!["backend".to_string()]);

    app.post("/api/v1/members", app.owner(), json!({"name": "Bob 2", "slug": "bob"}))
        .await
        .error(409, "conflict", "");
    app.post("/api/v1/members", app.owner(), json!({"name": "X", "slug": "Not A Slug"})).await.error(
        422,
        "validation_error",
        "slug",
    );
    app.post("/api/v1/members", app.owner(), json!({"name": "X", "slug": "x", "type": "robot"})).await.error(
        422,
        "validation_error",
        "type",
    );

    let all: Vec<Member> = app.get("/api/v1/members", app.owner()).await.expect(200);
    assert_eq!(all.iter().map(|m| m.slug.as_str()).collect::<Vec<_>>(), ["owner", "bob", "bot"]);
    let page: Vec<Member> = app.get("/api/v1/members?limit=1&offset=1", app.owner()).await.expect(200);
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].slug, "bob");
    app.get("/api/v1/members?limit=abc", app.owner()).await.error(422, "validation_error", "limit");

    let bob: Member = app.get(&format!("/api/v1/members/{}", human.id), app.owner()).await.expect(200);
    assert_eq!(bob.name, "Bob");
    app.get(&format!("/api/v1/members/{}", uuid::Uuid::now_v7()), app.owner()).await.error(
        404,
        "not_found",
        "",
    );
    app.get("/api/v1/members/not-a-uuid", app.owner()).await.error(422, "validation_error", "member_id");

    let bob: Member = app
        .patch(
            &format!("/api/v1/members/{}", human.id),
            app.owner(),
            json!({"name": "Robert", "avatar_url": null}),
        )
        .await
        .expect(200);
    assert_eq!(bob.name, "Robert");
    app.patch(&format!("/api/v1/members/{}", human.id), app.owner(), json!({"slug": "bot"}))
        .await
        .error(409, "conflict", "");
    app.patch(&format!("/api/v1/members/{}", human.id), app.owner(), json!({"status": "sleeping"}))
        .await
        .error(422, "validation_error", "status");

    // Deleting deactivates; inactive members are listed only on request.
    app.delete(&format!("/api/v1/members/{}", human.id), app.owner()).await.expect::<Value>(200);
    let active: Vec<Member> = app.get("/api/v1/members", app.owner()).await.expect(200);
    assert!(active.iter().all(|m| m.id != human.id));
    let all: Vec<Member> = app.get("/api/v1/members?include_inactive=true", app.owner()).await.expect(200);
    assert!(all.iter().any(|m| m.id == human.id && !m.is_active));
}

#[tokio::test]
async fn the_slug_filter_finds_one_member_by_its_slug() {
    let app = spawn().await;
    let bob = app.create_member("bob", "human", "member").await;
    app.create_member("bobby", "human", "member").await;
    let slugs = |list: Vec<Member>| list.into_iter().map(|m| m.slug).collect::<Vec<_>>();

    let found: Vec<Member> = app.get("/api/v1/members?slug=bob", app.owner()).await.expect(200);
    assert_eq!(found.first().map(|m| m.id), Some(bob.id));
    assert_eq!(slugs(found), ["bob"]);
    let none: Vec<Member> = app.get("/api/v1/members?slug=bo", app.owner()).await.expect(200);
    assert!(none.is_empty(), "a slug is matched whole: {none:?}");
    let paged: Vec<Member> = app.get("/api/v1/members?slug=bobby&limit=1", app.owner()).await.expect(200);
    assert_eq!(slugs(paged), ["bobby"]);
    app.get("/api/v1/members?slug=Bob%20B", app.owner()).await.error(422, "validation_error", "slug");

    // A deleted member is found only with include_inactive, as in the list.
    app.delete(&format!("/api/v1/members/{}", bob.id), app.owner()).await.expect::<Value>(200);
    let gone: Vec<Member> = app.get("/api/v1/members?slug=bob", app.owner()).await.expect(200);
    assert!(gone.is_empty(), "{gone:?}");
    let inactive: Vec<Member> =
        app.get("/api/v1/members?slug=bob&include_inactive=true", app.owner()).await.expect(200);
    assert_eq!(inactive.iter().map(|m| (m.id, m.is_active)).collect::<Vec<_>>(), [(bob.id, false)]);
}

#[tokio::test]
async fn roles_are_enforced_with_403() {
    let app = spawn().await;
    let (member_id, member) = app.create_agent("plain", "member").await;
    let (_, admin) = app.create_agent("boss", "admin").await;
    let other = app.create_member("other", "human", "member").await;

    app.post("/api/v1/members", Some(&member), json!({"name": "Y", "slug": "y"})).await.error(
        403,
        "forbidden",
        "",
    );
    app.post("/api/v1/members", Some(&admin), json!({"name": "Y", "slug": "y"}))
        .await
        .expect::<CreatedMember>(201);
    app.patch(&format!("/api/v1/members/{}", other.id), Some(&member), json!({"name": "Z"})).await.error(
        403,
        "forbidden",
        "",
    );
    // Self-service is allowed.
    app.patch(&format!("/api/v1/members/{member_id}"), Some(&member), json!({"name": "Plain bot"}))
        .await
        .expect::<Member>(200);
    // Only owners delete members.
    app.delete(&format!("/api/v1/members/{}", other.id), Some(&admin)).await.error(403, "forbidden", "");
    app.delete(&format!("/api/v1/members/{}", other.id), Some(&member)).await.error(403, "forbidden", "");
    app.delete(&format!("/api/v1/members/{}", other.id), app.owner()).await.expect::<Value>(200);
    app.post_empty(&format!("/api/v1/members/{}/regenerate-token", app.owner_id), Some(&member)).await.error(
        403,
        "forbidden",
        "",
    );
}

#[tokio::test]
async fn token_operations_on_humans_are_400_and_passwords_are_set() {
    let app = spawn().await;
    let human = app.create_member("hank", "human", "member").await;
    app.post_empty(&format!("/api/v1/members/{}/regenerate-token", human.id), app.owner()).await.error(
        400,
        "bad_request",
        "",
    );
    app.post_empty(&format!("/api/v1/members/{}/revoke-token", human.id), app.owner()).await.error(
        400,
        "bad_request",
        "",
    );

    app.put(&format!("/api/v1/members/{}/password", human.id), app.owner(), json!({"password": "short"}))
        .await
        .error(422, "validation_error", "password");
    let ok: Value = app
        .put(
            &format!("/api/v1/members/{}/password", human.id),
            app.owner(),
            json!({"password": "hank-password"}),
        )
        .await
        .expect(200);
    assert_eq!(ok, json!({"ok": true}));
    app.post("/api/v1/auth/login", None, json!({"login": "hank", "password": "hank-password"}))
        .await
        .expect::<Value>(200);

    let (agent, _) = app.create_agent("pw-bot", "member").await;
    app.put(&format!("/api/v1/members/{agent}/password"), app.owner(), json!({"password": "agent-password"}))
        .await
        .error(400, "bad_request", "");
}

#[tokio::test]
async fn the_caller_sets_its_status_and_reads_itself() {
    let app = spawn().await;
    let (id, token) = app.create_agent("statusbot", "member").await;
    let res: Value = app
        .call(reqwest::Method::PATCH, "/api/v1/members/me/status?status=busy", Some(&token), None)
        .await
        .expect(200);
    assert_eq!(res, json!({"status": "busy"}));
    let me: Member = app.get("/api/v1/members/me", Some(&token)).await.expect(200);
    assert_eq!((me.id, me.status), (id, MemberStatus::Busy));
    app.call(reqwest::Method::PATCH, "/api/v1/members/me/status?status=asleep", Some(&token), None)
        .await
        .error(422, "validation_error", "status");
    app.call(reqwest::Method::PATCH, "/api/v1/members/me/status", Some(&token), None).await.error(
        422,
        "validation_error",
        "status",
    );
}
