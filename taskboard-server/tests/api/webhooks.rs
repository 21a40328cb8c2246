//! Webhooks: real receivers on 127.0.0.1, signatures checked with the
//! `standardwebhooks` crate (an implementation of the scheme independent
//! of the server's), retries, order, filters, the recipient rule, refused
//! targets, rotation and restarts.

use std::time::Duration;

use serde_json::{Value, json};
use taskboard_core::webhooks::DeliveryPolicy;
use taskboard_server::Config;
use uuid::Uuid;

use crate::receiver::{Answer, Received, Receiver};
use crate::support::{TestApp, spawn_with};

/// Private targets allowed (receivers are on 127.0.0.1) and a retry
/// schedule of milliseconds, without jitter.
fn fast(c: &mut Config) {
    c.webhooks.allow_private = true;
    c.webhooks.policy = DeliveryPolicy {
        timeout: Duration::from_secs(5),
        delays: vec![Duration::from_millis(20), Duration::from_millis(40)],
        then_every: Duration::from_millis(50),
        jitter: 0.0,
        give_up_after: Duration::from_secs(3600),
        rotation_grace: Duration::from_secs(3600),
        batch: 8,
        max_pending: 1000,
    };
}

async fn app() -> TestApp {
    spawn_with(fast).await
}

/// Creates a webhook as the owner; returns its id and secret.
async fn hook(app: &TestApp, body: Value) -> (Uuid, String) {
    let created: Value = app.post("/api/v1/webhooks", app.owner(), body).await.expect(201);
    (created["id"].as_str().unwrap().parse().unwrap(), created["secret"].as_str().unwrap().to_string())
}

fn verifies(secret: &str, r: &Received) -> bool {
    standardwebhooks::Webhook::new(secret).unwrap().verify(&r.body, &r.headers).is_ok()
}

async fn deliveries(app: &TestApp, hook: Uuid) -> Vec<Value> {
    app.get(&format!("/api/v1/webhooks/{hook}/deliveries?limit=1000"), app.owner()).await.expect(200)
}

/// Polls the delivery log until `done` holds (the board announces no
/// attempt outcome); fails the test after a minute.
async fn wait_log(app: &TestApp, hook: Uuid, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let log = deliveries(app, hook).await;
        if done(&log) {
            return log;
        }
        assert!(tokio::time::Instant::now() < deadline, "the delivery log never got there: {log:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn webhooks_are_managed_by_admins_and_show_their_secret_once() {
    let app = app().await;
    let (_, agent) = app.create_agent("bot", "member").await;
    let body = json!({"url": "https://example.com/hook", "events": ["task.*"], "description": "ci"});
    app.post("/api/v1/webhooks", Some(&agent), &body).await.error(403, "forbidden", "admin");
    app.get("/api/v1/webhooks", Some(&agent)).await.error(403, "forbidden", "admin");

    let created: Value = app.post("/api/v1/webhooks", app.owner(), &body).await.expect(201);
    let secret = created["secret"].as_str().unwrap();
    use base64::Engine;
    let raw =
        base64::engine::general_purpose::STANDARD.decode(secret.strip_prefix("whsec_").unwrap()).unwrap();
    assert_eq!(raw.len(), 32);
    assert_eq!(created["events"], json!(["task.*"]));
    assert_eq!(created["active"], true);
    let id = created["id"].as_str().unwrap();

    let listed: Vec<Value> = app.get("/api/v1/webhooks", app.owner()).await.expect(200);
    assert_eq!(listed.len(), 1);
    let got: Value = app.get(&format!("/api/v1/webhooks/{id}"), app.owner()).await.expect(200);
    for shown in [&listed[0], &got] {
        assert!(shown.get("secret").is_none(), "{shown}");
        assert_eq!(shown["url"], "https://example.com/hook");
    }
    let patched: Value = app
        .patch(
            &format!("/api/v1/webhooks/{id}"),
            app.owner(),
            json!({"events": ["message.new"], "active": false}),
        )
        .await
        .expect(200);
    assert_eq!(
        (patched["events"].clone(), patched["active"].clone()),
        (json!(["message.new"]), json!(false))
    );
    assert!(patched.get("secret").is_none());
    let rotated: Value =
        app.post_empty(&format!("/api/v1/webhooks/{id}/rotate-secret"), app.owner()).await.expect(200);
    assert!(rotated["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_ne!(rotated["secret"], created["secret"]);

    for bad in [
        json!({"url": "https://example.com/", "events": []}),
        json!({"url": "https://example.com/", "events": ["task.*.x*"]}),
        json!({"url": "ftp://example.com/"}),
        json!({"url": "not a url"}),
    ] {
        let res = app.post("/api/v1/webhooks", app.owner(), &bad).await;
        assert_eq!(res.status, 422, "{bad}: {}", res.body);
    }
    app.patch(&format!("/api/v1/webhooks/{}", Uuid::now_v7()), app.owner(), json!({})).await.error(
        404,
        "not_found",
        "webhook",
    );

    // The changes were events for admins only.
    let events: Value = app.get("/api/v1/events?since=0&limit=1000", app.owner()).await.expect(200);
    let kinds: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|k| k.starts_with("webhook."))
        .collect();
    assert_eq!(kinds, ["webhook.created", "webhook.updated", "webhook.updated"]);
    let seen_by_agent: Value = app.get("/api/v1/events?since=0&limit=1000", Some(&agent)).await.expect(200);
    assert!(!seen_by_agent.to_string().contains("webhook."), "{seen_by_agent}");

    app.delete(&format!("/api/v1/webhooks/{id}"), app.owner()).await.expect::<Value>(200);
    app.get(&format!("/api/v1/webhooks/{id}"), app.owner()).await.error(404, "not_found", "webhook");
}

#[tokio::test]
async fn deliveries_are_signed_frames_in_seq_order() {
    let app = app().await;
    let receiver = Receiver::start().await;
    let (id, secret) = hook(&app, json!({"url": receiver.url, "events": ["task.*"]})).await;
    let p = app.create_project(app.owner(), "web").await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        tasks.push(app.create_task(app.owner(), p.id, &format!("task {i}")).await);
    }
    let got = receiver.wait_delivered(20).await;
    let seqs: Vec<u64> = got.iter().map(Received::seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "not in seq order: {seqs:?}");
    for (r, t) in got.iter().zip(&tasks) {
        assert!(verifies(&secret, r), "the signature does not verify");
        assert_eq!(r.headers["content-type"], "application/json");
        let frame = r.frame();
        assert_eq!(frame["type"], "task.created");
        assert_eq!(frame["data"]["id"], t.id.to_string());
        assert!(frame["ts"].is_string());
    }
    // Nothing but task events, though project.created came first.
    assert!(receiver.received().iter().all(|r| r.kind().starts_with("task.")));
    let log =
        wait_log(&app, id, |log| log.len() == 20 && log.iter().all(|d| d["state"] == "delivered")).await;
    let newest_first: Vec<u64> = log.iter().map(|d| d["seq"].as_u64().unwrap()).collect();
    assert!(newest_first.windows(2).all(|w| w[0] > w[1]));
    assert_eq!((log[0]["attempts"].clone(), log[0]["last_status"].clone()), (json!(1), json!(200)));
    assert_eq!(log[19]["id"], got[0].id());
    let page: Vec<Value> =
        app.get(&format!("/api/v1/webhooks/{id}/deliveries?limit=5&offset=5"), app.owner()).await.expect(200);
    assert_eq!(page, log[5..10]);
}

#[tokio::test]
async fn failed_attempts_are_retried_with_the_same_id_and_body() {
    let app = app().await;
    let receiver = Receiver::start().await;
    receiver.script(&[Answer::Status(500), Answer::Status(502), Answer::Status(302)]);
    let (id, secret) = hook(&app, json!({"url": receiver.url, "events": ["task.created"]})).await;
    let p = app.create_project(app.owner(), "web").await;
    app.create_task(app.owner(), p.id, "retry me").await;
    let got = receiver.wait_until("a fourth attempt", |r| r.len() >= 4).await;
    assert_eq!(
        got.iter().map(|r| r.answer).collect::<Vec<_>>()[..3],
        [Answer::Status(500), Answer::Status(502), Answer::Status(302)]
    );
    assert!(got.iter().all(|r| r.id() == got[0].id() && r.body == got[0].body && verifies(&secret, r)));
    let log = wait_log(&app, id, |log| log.first().is_some_and(|d| d["state"] == "delivered")).await;
    assert_eq!(log[0]["attempts"], 4);
    assert_eq!(log[0]["last_status"], 200);
    assert!(log[0]["next_attempt_at"].is_null());
}

#[tokio::test]
async fn an_attempt_without_an_answer_times_out_and_is_retried() {
    let app = spawn_with(|c| {
        fast(c);
        c.webhooks.policy.timeout = Duration::from_millis(300);
    })
    .await;
    let receiver = Receiver::start().await;
    receiver.script(&[Answer::Hang]);
    let (id, _) = hook(&app, json!({"url": receiver.url, "events": ["project.created"]})).await;
    app.create_project(app.owner(), "web").await;
    let got = receiver.wait_delivered(1).await;
    assert_eq!(receiver.received().len(), 2);
    assert_eq!(receiver.received()[0].id(), got[0].id());
    let log = wait_log(&app, id, |log| log.first().is_some_and(|d| d["state"] == "delivered")).await;
    assert_eq!(log[0]["attempts"], 2);
}

/// The backlog the webhook's `GET` shows.
async fn backlog(app: &TestApp, hook: Uuid) -> u64 {
    let h: Value = app.get(&format!("/api/v1/webhooks/{hook}"), app.owner()).await.expect(200);
    h["backlog"].as_u64().unwrap()
}

/// Polls the webhook's backlog until it is `n`; fails the test after a
/// minute.
async fn wait_backlog(app: &TestApp, hook: Uuid, n: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now = backlog(app, hook).await;
        if now == n {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "the backlog stayed at {now}, not {n}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `webhook-id`s in the order of their first attempts.
fn first_attempts(received: &[Received]) -> Vec<Received> {
    let mut seen = std::collections::HashSet::new();
    received.iter().filter(|r| seen.insert(r.id().to_string())).cloned().collect()
}

#[tokio::test]
async fn a_delivery_being_retried_holds_back_no_later_event() {
    let app = app().await;
    let receiver = Receiver::start().await;
    // The first event's delivery fails until the receiver recovers; every
    // other request gets a 200.
    receiver.fail_first(500);
    let (id, _) = hook(&app, json!({"url": receiver.url, "events": ["task.created"]})).await;
    let p = app.create_project(app.owner(), "web").await;
    for i in 0..5 {
        app.create_task(app.owner(), p.id, &format!("task {i}")).await;
    }
    // The four later events arrive while the first keeps failing.
    let later = receiver.wait_delivered(4).await;
    let first = receiver.received()[0].clone();
    assert_eq!(first.answer, Answer::Status(500));
    assert!(later.iter().all(|r| r.seq() > first.seq() && r.id() != first.id()));
    let seqs: Vec<u64> = later.iter().map(Received::seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "first attempts in seq order: {seqs:?}");
    for r in &later {
        let attempts = receiver.received().iter().filter(|x| x.id() == r.id()).count();
        assert_eq!(attempts, 1, "{} got through at its first attempt", r.seq());
    }
    assert_eq!(receiver.delivered().len(), 4, "the first is not delivered yet");

    receiver.recover();
    let all = receiver.wait_delivered(5).await;
    let retried = all.last().unwrap();
    assert_eq!((retried.id(), retried.seq()), (first.id(), first.seq()), "the same webhook-id");
    assert_eq!(retried.body, first.body);
    let log = wait_log(&app, id, |log| log.len() == 5 && log.iter().all(|d| d["state"] == "delivered")).await;
    for d in &log {
        let retried_one = d["seq"].as_u64() == Some(first.seq());
        assert_eq!(d["attempts"].as_u64().unwrap() > 1, retried_one, "{d}");
    }
    wait_backlog(&app, id, 0).await;
}

#[tokio::test]
async fn receivers_down_refusing_or_never_answering_delay_no_other_webhook() {
    let app = spawn_with(|c| {
        fast(c);
        c.webhooks.policy.timeout = Duration::from_secs(1);
    })
    .await;
    let (down, silent, up) = (Receiver::start().await, Receiver::start().await, Receiver::start().await);
    down.answer(Answer::Status(503));
    silent.answer(Answer::Hang);
    // A port nothing listens on: connections are refused.
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (down_id, _) = hook(&app, json!({"url": down.url, "events": ["task.created"]})).await;
    hook(&app, json!({"url": silent.url, "events": ["task.created"]})).await;
    hook(&app, json!({"url": format!("http://127.0.0.1:{refused}/hook"), "events": ["task.created"]})).await;
    hook(&app, json!({"url": up.url, "events": ["task.created"]})).await;
    let p = app.create_project(app.owner(), "web").await;
    for i in 0..10 {
        app.create_task(app.owner(), p.id, &format!("task {i}")).await;
    }
    // The live receiver gets everything while the others fail.
    let expected: Vec<u64> = up.wait_delivered(10).await.iter().map(Received::seq).collect();
    // The receiver answering 503 got a first attempt of every event, in
    // seq order, while their retries went on beside them.
    let tried = down.wait_until("ten first attempts", |r| first_attempts(r).len() >= 10).await;
    let firsts: Vec<u64> = first_attempts(&tried).iter().map(Received::seq).collect();
    assert_eq!(firsts, expected);
    assert!(down.delivered().is_empty());
    assert!(backlog(&app, down_id).await >= 10, "its retries are its backlog");
    down.answer(Answer::Status(200));
    let got: Vec<u64> = down.wait_delivered(10).await.iter().map(Received::seq).collect();
    // Retries follow their own schedules: the receiver orders by seq.
    let mut sorted = got.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, expected);
    assert_eq!(down.received().iter().filter(|r| r.delivered()).count(), 10, "each delivered once");
    wait_backlog(&app, down_id, 0).await;
}

#[tokio::test]
async fn a_webhook_with_its_retries_full_waits_then_gets_everything() {
    let app = spawn_with(|c| {
        fast(c);
        c.webhooks.policy.max_pending = 3;
    })
    .await;
    let receiver = Receiver::start().await;
    receiver.answer(Answer::Status(503));
    let (id, _) = hook(&app, json!({"url": receiver.url, "events": ["task.created"]})).await;
    let p = app.create_project(app.owner(), "web").await;
    for i in 0..8 {
        app.create_task(app.owner(), p.id, &format!("task {i}")).await;
    }
    // Three deliveries wait for retries; retried again and again, they
    // are all that is sent: the cursor stays before the other five.
    let tried = receiver.wait_until("five attempts at each of three", |r| r.len() >= 15).await;
    let firsts: Vec<u64> = first_attempts(&tried).iter().map(Received::seq).collect();
    assert_eq!(firsts.len(), 3, "{firsts:?}");
    assert!(backlog(&app, id).await >= 8, "the waiting events are in the backlog");
    receiver.answer(Answer::Status(200));
    let got = receiver.wait_delivered(8).await;
    let mut seqs: Vec<u64> = got.iter().map(Received::seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), 8, "nothing dropped");
    assert!(firsts.iter().all(|s| seqs.contains(s)));
    wait_backlog(&app, id, 0).await;
}

#[tokio::test]
async fn events_failing_for_good_are_logged_failed_and_the_rest_arrive_in_seq_order() {
    let app = spawn_with(|c| {
        fast(c);
        c.webhooks.policy.give_up_after = Duration::ZERO;
    })
    .await;
    let receiver = Receiver::start().await;
    // The second and third events fail (and, with no day of retries, are
    // failed at once); the receiver then recovers.
    receiver.script(&[Answer::Status(200), Answer::Status(500), Answer::Status(502)]);
    let (id, _) = hook(&app, json!({"url": receiver.url, "events": ["task.created"]})).await;
    let p = app.create_project(app.owner(), "web").await;
    for i in 0..8 {
        app.create_task(app.owner(), p.id, &format!("task {i}")).await;
    }
    let got = receiver.wait_delivered(6).await;
    let all: Vec<u64> = receiver.received().iter().map(Received::seq).collect();
    assert!(all.windows(2).all(|w| w[0] < w[1]), "seqs not strictly increasing: {all:?}");
    assert_eq!(all.len(), 8);
    let failed = [all[1], all[2]];
    let delivered: Vec<u64> = got.iter().map(Received::seq).collect();
    assert_eq!(delivered, all.iter().copied().filter(|s| !failed.contains(s)).collect::<Vec<_>>());
    let log = wait_log(&app, id, |log| log.len() == 8).await;
    for d in &log {
        let seq = d["seq"].as_u64().unwrap();
        let state = if failed.contains(&seq) { "failed" } else { "delivered" };
        assert_eq!(d["state"], state, "{d}");
    }
    let seqs: Vec<u64> = log.iter().map(|d| d["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] > w[1]), "the log is newest first: {seqs:?}");
}

#[tokio::test]
async fn webhooks_filter_by_event_type_and_project() {
    let app = app().await;
    let receiver = Receiver::start().await;
    let (a, b) =
        (app.create_project(app.owner(), "alpha").await, app.create_project(app.owner(), "beta").await);
    hook(&app, json!({"url": receiver.url, "events": ["task.created", "message.*"], "project_id": a.id}))
        .await;
    let in_a = app.create_task(app.owner(), a.id, "in a").await;
    app.create_task(app.owner(), b.id, "in b").await;
    app.patch(&format!("/api/v1/tasks/{}", in_a.id), app.owner(), json!({"title": "renamed"}))
        .await
        .expect::<Value>(200);
    app.post("/api/v1/messages", app.owner(), json!({"chat_id": b.chat_id, "content": "chat in b"}))
        .await
        .expect::<Value>(201);
    app.post("/api/v1/messages", app.owner(), json!({"task_id": in_a.id, "content": "comment in a"}))
        .await
        .expect::<Value>(201);
    app.post("/api/v1/messages", app.owner(), json!({"chat_id": a.chat_id, "content": "chat in a"}))
        .await
        .expect::<Value>(201);
    let last = app.create_task(app.owner(), a.id, "last").await;
    // First attempts go in seq order, so once the last is in, all are.
    let got = receiver
        .wait_until("the last task", |r| r.iter().any(|r| r.frame()["data"]["id"] == last.id.to_string()))
        .await;
    let what: Vec<(String, Value)> = got
        .iter()
        .filter(|r| r.frame()["data"]["author_type"] != "system")
        .map(|r| {
            (r.kind(), r.frame()["data"].get("title").or(r.frame()["data"].get("content")).cloned().unwrap())
        })
        .collect();
    assert_eq!(
        what,
        [
            ("task.created".to_string(), json!("in a")),
            ("message.new".to_string(), json!("comment in a")),
            ("message.new".to_string(), json!("chat in a")),
            ("task.created".to_string(), json!("last")),
        ]
    );
}

#[tokio::test]
async fn a_webhook_receives_only_what_its_creator_may_see() {
    let app = app().await;
    let receiver = Receiver::start().await;
    let (_, admin) = app.create_agent("lead", "admin").await;
    // A project the owner is not a member of.
    let theirs = app.create_project(Some(&admin), "theirs").await;
    let ours = app.create_project(app.owner(), "ours").await;
    hook(&app, json!({"url": receiver.url, "events": ["message.new"]})).await;
    app.post("/api/v1/messages", Some(&admin), json!({"chat_id": theirs.chat_id, "content": "private"}))
        .await
        .expect::<Value>(201);
    app.post("/api/v1/messages", app.owner(), json!({"chat_id": ours.chat_id, "content": "public"}))
        .await
        .expect::<Value>(201);
    let got = receiver.wait_delivered(1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].frame()["data"]["content"], "public");
    assert_eq!(receiver.received().len(), 1);
}

#[tokio::test]
async fn private_targets_are_refused_unless_allowed() {
    let app = crate::support::spawn().await;
    let receiver = Receiver::start().await;
    for url in [
        receiver.url.clone(),
        format!("http://localhost:{}/hook", receiver.port),
        "http://10.0.0.1/".to_string(),
        "http://192.168.1.20:8080/x".to_string(),
        "http://169.254.169.254/latest/meta-data".to_string(),
        "http://[::1]/".to_string(),
        "http://0.0.0.0/".to_string(),
    ] {
        let res = app.post("/api/v1/webhooks", app.owner(), json!({"url": url})).await;
        res.error(422, "validation_error", "url");
        assert!(res.body["detail"].as_str().unwrap().contains("refused"), "{url}: {}", res.body);
    }
    let (id, _) = hook(&app, json!({"url": "https://93.184.216.34/hook"})).await;
    app.patch(&format!("/api/v1/webhooks/{id}"), app.owner(), json!({"url": receiver.url})).await.error(
        422,
        "validation_error",
        "refused",
    );
}

#[tokio::test]
async fn a_target_refused_when_attempted_is_never_contacted() {
    let app = app().await;
    let receiver = Receiver::start().await;
    let (by_ip, _) = hook(&app, json!({"url": receiver.url, "events": ["task.created"]})).await;
    let by_name = format!("http://localhost:{}/hook", receiver.port);
    let (by_name, _) = hook(&app, json!({"url": by_name, "events": ["task.created"]})).await;
    // The same board, served without --webhook-allow-private: the names
    // and addresses are checked again at every attempt.
    let app = app.restart_with(|c| c.webhooks.allow_private = false).await;
    let p = app.create_project(app.owner(), "web").await;
    app.create_task(app.owner(), p.id, "t").await;
    for id in [by_ip, by_name] {
        let log =
            wait_log(&app, id, |log| log.first().is_some_and(|d| d["attempts"].as_u64() >= Some(1))).await;
        assert_eq!(log[0]["state"], "pending");
        let error = log[0]["last_error"].as_str().unwrap();
        // `localhost` is 127.0.0.1 or ::1, whichever the machine's
        // resolver gives first.
        let loopback = error.contains("127.0.0.1") || error.contains("::1");
        assert!(error.contains("refused") && loopback, "{error}");
    }
    assert!(receiver.received().is_empty());
}

#[tokio::test]
async fn a_rotated_secret_signs_beside_the_previous_one_during_the_grace_period() {
    let app = app().await;
    let receiver = Receiver::start().await;
    let (id, old) = hook(&app, json!({"url": receiver.url, "events": ["project.created"]})).await;
    app.create_project(app.owner(), "one").await;
    let first = receiver.wait_delivered(1).await;
    assert!(verifies(&old, &first[0]));
    assert_eq!(first[0].headers["webhook-signature"].to_str().unwrap().split(' ').count(), 1);
    let rotated: Value =
        app.post_empty(&format!("/api/v1/webhooks/{id}/rotate-secret"), app.owner()).await.expect(200);
    let new = rotated["secret"].as_str().unwrap();
    assert_ne!(new, old);
    app.create_project(app.owner(), "two").await;
    let second = &receiver.wait_delivered(2).await[1];
    // A receiver still on the old secret and one on the new both accept.
    assert!(verifies(new, second));
    assert!(verifies(&old, second));
    assert_eq!(second.headers["webhook-signature"].to_str().unwrap().split(' ').count(), 2);
}

#[tokio::test]
async fn after_the_grace_period_only_the_new_secret_signs() {
    let app = spawn_with(|c| {
        fast(c);
        c.webhooks.policy.rotation_grace = Duration::ZERO;
    })
    .await;
    let receiver = Receiver::start().await;
    let (id, old) = hook(&app, json!({"url": receiver.url, "events": ["project.created"]})).await;
    let rotated: Value =
        app.post_empty(&format!("/api/v1/webhooks/{id}/rotate-secret"), app.owner()).await.expect(200);
    let new = rotated["secret"].as_str().unwrap();
    app.create_project(app.owner(), "two").await;
    let got = &receiver.wait_delivered(1).await[0];
    assert!(verifies(new, got));
    assert!(!verifies(&old, got));
}

#[tokio::test]
async fn an_inactive_webhook_misses_what_happens_meanwhile() {
    let app = app().await;
    let receiver = Receiver::start().await;
    let (id, _) = hook(&app, json!({"url": receiver.url, "events": ["project.created"]})).await;
    app.patch(&format!("/api/v1/webhooks/{id}"), app.owner(), json!({"active": false}))
        .await
        .expect::<Value>(200);
    app.create_project(app.owner(), "missed").await;
    app.patch(&format!("/api/v1/webhooks/{id}"), app.owner(), json!({"active": true}))
        .await
        .expect::<Value>(200);
    app.create_project(app.owner(), "seen").await;
    let got = receiver.wait_delivered(1).await;
    assert_eq!(got[0].frame()["data"]["slug"], "seen");
    assert_eq!(receiver.received().len(), 1);
}

#[tokio::test]
async fn a_failed_delivery_can_be_queued_again() {
    let app = spawn_with(|c| {
        fast(c);
        c.webhooks.policy.give_up_after = Duration::ZERO;
    })
    .await;
    let receiver = Receiver::start().await;
    receiver.answer(Answer::Status(500));
    let (id, _) = hook(&app, json!({"url": receiver.url, "events": ["project.created"]})).await;
    app.create_project(app.owner(), "web").await;
    let log = wait_log(&app, id, |log| log.first().is_some_and(|d| d["state"] == "failed")).await;
    assert_eq!((log[0]["attempts"].clone(), log[0]["last_status"].clone()), (json!(1), json!(500)));
    receiver.answer(Answer::Status(204));
    let delivery = log[0]["id"].as_str().unwrap();
    let queued: Value = app
        .post_empty(&format!("/api/v1/webhooks/{id}/deliveries/{delivery}/redeliver"), app.owner())
        .await
        .expect(200);
    assert_eq!(queued["state"], "pending");
    let got = receiver.wait_delivered(1).await;
    assert_eq!(got[0].id(), delivery);
    wait_log(&app, id, |log| log[0]["state"] == "delivered" && log[0]["attempts"] == 2).await;
    app.post_empty(&format!("/api/v1/webhooks/{id}/deliveries/{}/redeliver", Uuid::now_v7()), app.owner())
        .await
        .error(404, "not_found", "delivery");
}

#[tokio::test]
async fn pending_deliveries_survive_a_restart() {
    let app = app().await;
    let receiver = Receiver::start().await;
    receiver.answer(Answer::Status(503));
    let (id, secret) = hook(&app, json!({"url": receiver.url, "events": ["task.created"]})).await;
    let p = app.create_project(app.owner(), "web").await;
    for i in 0..5 {
        app.create_task(app.owner(), p.id, &format!("task {i}")).await;
    }
    receiver.wait_until("two failed attempts", |r| r.len() >= 2).await;
    let mut app = app;
    app.stop().await;
    let before = receiver.received().len();
    receiver.answer(Answer::Status(200));
    let app = app.restart().await;
    let got = receiver.wait_delivered(5).await;
    assert!(receiver.received().len() > before);
    let mut seqs: Vec<u64> = got.iter().map(Received::seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), 5, "{seqs:?}");
    assert!(got.iter().all(|r| verifies(&secret, r)));
    let log = wait_log(&app, id, |log| log.iter().all(|d| d["state"] == "delivered")).await;
    assert_eq!(log.len(), 5);
}

/// A webhook's health in its `GET`: failing, with the failures in a row
/// and the last status, then delivering once one gets through
/// (docs/decisions.md 22.j).
#[tokio::test]
async fn a_webhooks_health_shows_its_failures_in_a_row_and_the_last_answer() {
    let app = spawn_with(|c| {
        fast(c);
        c.webhooks.policy.delays = vec![Duration::from_millis(400)];
        c.webhooks.policy.then_every = Duration::from_millis(400);
    })
    .await;
    let receiver = Receiver::start().await;
    receiver.script(&[Answer::Status(500), Answer::Status(503)]);
    let (id, _) = hook(&app, json!({"url": receiver.url, "events": ["project.created"]})).await;
    let fresh: Value = app.get(&format!("/api/v1/webhooks/{id}"), app.owner()).await.expect(200);
    assert_eq!(fresh["health"]["consecutive_failures"], 0, "{fresh}");
    assert!(fresh["health"]["last_state"].is_null(), "nothing sent yet: {fresh}");
    app.create_project(app.owner(), "web").await;
    let health = |want: fn(&Value) -> bool| {
        let app = &app;
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                let h: Value = app.get(&format!("/api/v1/webhooks/{id}"), app.owner()).await.expect(200);
                if want(&h["health"]) {
                    return h["health"].clone();
                }
                assert!(tokio::time::Instant::now() < deadline, "health never as wanted: {h}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let failing = health(|h| h["consecutive_failures"] == 1).await;
    assert_eq!(failing["last_state"], "pending", "{failing}");
    assert!(matches!(failing["last_status"].as_u64(), Some(500 | 503)), "{failing}");
    let listed: Value = app.get("/api/v1/webhooks", app.owner()).await.expect(200);
    assert_eq!(listed[0]["health"]["consecutive_failures"], 1, "the list shows it too: {listed}");
    let ok = health(|h| h["last_state"] == "delivered").await;
    assert_eq!(ok["consecutive_failures"], 0, "{ok}");
    assert_eq!(ok["last_status"], 200, "{ok}");
}
