//! Two servers on one PostgreSQL board, each with its own process state
//! (store, caches, event hub), as two processes behind a load balancer:
//! a take or claim has one winner, task numbers have no gap and no
//! duplicate, and a session started on one is good on the other.

use std::collections::HashSet;

use serde_json::{Value, json};
use taskboard_core::model::Task;
use taskboard_pg_scratch::Scratch;

use crate::support::*;

/// Two servers on the same fresh board, with the session secret left to
/// the database.
async fn two_servers() -> (TestApp, TestApp) {
    let url = Scratch::shared().fresh_url();
    let configure = |c: &mut taskboard_server::Config| {
        c.database = Some(url.clone());
        c.jwt_secret = None;
    };
    let a = spawn_with(configure).await;
    let b = spawn_with(configure).await;
    (a, b)
}

#[tokio::test]
async fn a_session_started_on_one_server_is_good_on_the_other() {
    let (a, b) = two_servers().await;
    assert_eq!(a.owner_id, b.owner_id, "one board, one bootstrap owner");
    let me: Value = b.get("/api/v1/members/me", a.owner()).await.expect(200);
    assert_eq!(me["id"], a.owner_id.to_string());
    let p = a.create_project(a.owner(), "web").await;
    let seen: Value = b.get(&format!("/api/v1/projects/{}", p.id), b.owner()).await.expect(200);
    assert_eq!(seen["slug"], "web");
}

#[tokio::test]
async fn concurrent_claims_through_two_servers_claim_each_task_once() {
    let (a, b) = two_servers().await;
    let p = a.create_project(a.owner(), "web").await;
    const TASKS: usize = 40;
    for i in 0..TASKS {
        a.create_task(a.owner(), p.id, &format!("task {i}")).await;
    }
    let mut claimers = Vec::new();
    for i in 0..8 {
        let (id, token) = a.create_agent(&format!("bot{i}"), "member").await;
        a.post(&format!("/api/v1/projects/{}/members", p.id), a.owner(), json!({"member_id": id}))
            .await
            .expect::<Value>(200);
        let server = if i % 2 == 0 { &a } else { &b };
        claimers.push((server.client.clone(), server.url("/api/v1/tasks/claim"), token));
    }
    let handles: Vec<_> = claimers
        .into_iter()
        .map(|(client, url, token)| {
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
    assert_eq!(all.len(), TASKS, "every task claimed");
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), TASKS, "no task claimed twice");
}

#[tokio::test]
async fn tasks_created_at_once_through_two_servers_are_numbered_without_gap_or_duplicate() {
    let (a, b) = two_servers().await;
    let p = a.create_project(a.owner(), "web").await;
    const TASKS: u64 = 30;
    let creations: Vec<_> = (0..TASKS)
        .map(|i| {
            let server = if i % 2 == 0 { &a } else { &b };
            let (client, url, token) = (
                server.client.clone(),
                server.url(&format!("/api/v1/tasks?project_id={}", p.id)),
                server.owner_token.clone(),
            );
            tokio::spawn(async move {
                let res = client
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&json!({"title": format!("t{i}")}))
                    .send()
                    .await;
                let res = res.unwrap();
                assert_eq!(res.status().as_u16(), 201);
                res.json::<Task>().await.unwrap().number
            })
        })
        .collect();
    let mut numbers = Vec::new();
    for c in creations {
        numbers.push(c.await.unwrap());
    }
    numbers.sort();
    assert_eq!(numbers, (1..=TASKS).collect::<Vec<_>>());
}

#[tokio::test]
async fn two_servers_deliver_each_event_once_per_webhook_in_order() {
    let url = Scratch::shared().fresh_url();
    let configure = |c: &mut taskboard_server::Config| {
        c.database = Some(url.clone());
        c.jwt_secret = None;
        c.webhooks.allow_private = true;
        c.webhooks.policy.timeout = std::time::Duration::from_secs(1);
    };
    let a = spawn_with(configure).await;
    let b = spawn_with(configure).await;
    let receiver = crate::receiver::Receiver::start().await;
    let hook: Value = a
        .post("/api/v1/webhooks", a.owner(), json!({"url": receiver.url, "events": ["task.created"]}))
        .await
        .expect(201);
    assert!(hook["id"].is_string());
    let p = a.create_project(a.owner(), "web").await;
    // Events written through both servers wake both senders.
    for i in 0..10 {
        let server = if i % 2 == 0 { &a } else { &b };
        server.create_task(server.owner(), p.id, &format!("task {i}")).await;
    }
    receiver.wait_delivered(10).await;
    let all = receiver.received();
    assert_eq!(all.len(), 10, "no event sent twice: {:?}", all.iter().map(|r| r.seq()).collect::<Vec<_>>());
    let ids: HashSet<String> = all.iter().map(|r| r.id().to_string()).collect();
    assert_eq!(ids.len(), 10);
    let seqs: Vec<u64> = all.iter().map(|r| r.seq()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

#[tokio::test]
async fn a_single_sign_on_started_on_one_server_finishes_on_the_other() {
    use crate::oidc::harness::{Browser, CLIENT_ID, CLIENT_SECRET, Provider};
    use taskboard_core::wire::LoginResponse;
    let provider = Provider::start().await;
    let url = Scratch::shared().fresh_url();
    let configure = |c: &mut taskboard_server::Config| {
        c.database = Some(url.clone());
        c.jwt_secret = None;
        c.oidc = Some(taskboard_server::oidc::OidcConfig {
            issuer: provider.issuer.clone(),
            client_id: CLIENT_ID.into(),
            client_secret: Some(CLIENT_SECRET.into()),
            create_members: true,
            ..Default::default()
        });
    };
    let a = spawn_with(configure).await;
    let b = spawn_with(configure).await;
    let browser = Browser::new();
    // Started on a; the provider comes back to b, which exchanges the
    // code with what a stored; the login code is good on a again.
    let back = browser.sign_in(&a.url(&crate::oidc::start_path("/")), "ana").await;
    let on_b = format!("{}{}?{}", b.base, back.path(), back.query().unwrap());
    let step = browser.send(on_b.parse().unwrap(), None).await;
    assert_eq!(step.status, 302, "{}", step.body);
    let login: LoginResponse = a
        .post("/api/v1/auth/oidc/exchange", None, json!({"login_code": step.login_code()}))
        .await
        .expect(200);
    assert_eq!(login.slug, "ana");
    // And the callback, used on b, is used on a too.
    let again = browser.send(back, None).await;
    assert_eq!(again.status, 400, "{}", again.body);
}
