//! One event stream across three processes: a client on any process sees
//! the events made on every one, in seq order with no gap, resumes on
//! another process without missing one, and a revoked token is refused
//! by every process within a second.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::Method;

use crate::support::*;

/// Creates `n` tasks at once, spread over processes 1 and 2 (and 0 when
/// `everywhere`); their ids.
async fn spread(c: &Cluster, project: &str, n: usize, everywhere: bool) -> HashSet<String> {
    let on = |i: usize| if everywhere { i % 3 } else { 1 + i % 2 };
    let creations = (0..n).map(|i| c.task(on(i), project, format!("spread {i}")));
    futures_util::future::join_all(creations)
        .await
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_websocket_client_on_one_process_sees_the_events_of_the_others_in_seq_order() {
    let c = Cluster::start().await;
    let p = c.project("web").await;
    let (mut ws, hello) = connect(&c.procs[0].ws_url(&c.owner, None)).await;
    let from = hello["seq"].as_u64().unwrap();
    // Made on B and C only, then on all three at once.
    let mut ids = spread(&c, &p, 20, false).await;
    ids.extend(spread(&c, &p, 21, true).await);
    let frames = frames_until(&mut ws, |f| ids.is_subset(&created(f))).await;
    let seqs = seqs(&frames);
    assert_eq!(seqs[0], from + 1, "the stream starts after hello");
    assert!(consecutive(&seqs), "every seq once and in order: {seqs:?}");
}

#[tokio::test]
async fn a_client_resuming_on_another_process_misses_nothing() {
    let c = Cluster::start().await;
    let p = c.project("web").await;
    let (mut on_a, _) = connect(&c.procs[0].ws_url(&c.owner, None)).await;
    let first = spread(&c, &p, 10, true).await;
    let before = frames_until(&mut on_a, |f| first.is_subset(&created(f))).await;
    let resume_at = *seqs(&before).last().unwrap();
    drop(on_a);
    // Gone from A; more happens, some of it on A itself.
    let second = spread(&c, &p, 12, true).await;
    let (mut on_c, hello) = connect(&c.procs[2].ws_url(&c.owner, Some(resume_at))).await;
    assert_eq!(hello["type"], "hello");
    let after = frames_until(&mut on_c, |f| second.is_subset(&created(f))).await;
    assert_ne!(after[0]["type"], "resync_required", "{:?}", after[0]);
    let seqs = seqs(&after);
    assert_eq!(seqs[0], resume_at + 1, "resumed right after the last seq seen on A");
    assert!(consecutive(&seqs), "every seq once and in order: {seqs:?}");

    // Resuming at once on a process that may not have read the newest
    // events yet is no resync either.
    let third = spread(&c, &p, 3, false).await;
    let newest = *seqs.last().unwrap();
    let (mut on_b, _) = connect(&c.procs[1].ws_url(&c.owner, Some(newest))).await;
    let later = frames_until(&mut on_b, |f| third.is_subset(&created(f))).await;
    assert_eq!(later[0]["seq"], newest + 1, "{:?}", later[0]);
    assert!(consecutive(&crate::support::seqs(&later)));
}

#[tokio::test]
async fn a_token_revoked_on_one_process_is_refused_by_the_others_within_a_second() {
    let c = Cluster::start().await;
    let p = c.project("web").await;
    let (id, token) = c.agent("bot", &p).await;
    for i in 0..3 {
        // Accepted, and so cached, by every process.
        let (status, me) = c.call(i, Method::GET, "/api/v1/members/me", &token, None).await;
        assert_eq!(status, 200, "{me}");
    }
    c.ok(0, Method::POST, &format!("/api/v1/members/{id}/revoke-token"), None).await;
    let revoked = tokio::time::Instant::now();
    // Refused at once where it was revoked; elsewhere within the second a
    // process takes at most to read the events of another (with slack
    // for a busy test machine).
    assert_eq!(c.call(0, Method::GET, "/api/v1/members/me", &token, None).await.0, 401);
    let deadline = revoked + Duration::from_secs(2);
    for i in 1..3 {
        loop {
            let (status, _) = c.call(i, Method::GET, "/api/v1/members/me", &token, None).await;
            if status == 401 {
                break;
            }
            assert_eq!(status, 200);
            assert!(tokio::time::Instant::now() < deadline, "process {i} still accepts the revoked token");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Long-polling `GET /events`, each request to the next process in turn,
/// follows one stream: every seq once and in order.
#[tokio::test]
async fn long_polls_spread_over_three_processes_follow_one_stream() {
    let c = Cluster::start().await;
    let p = c.project("web").await;
    let (_, hello) = connect(&c.procs[0].ws_url(&c.owner, None)).await;
    let mut since = hello["seq"].as_u64().unwrap();
    let ids = spread(&c, &p, 15, true).await;
    let mut frames: Vec<serde_json::Value> = Vec::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    for i in 0.. {
        if ids.is_subset(&created(&frames)) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the events never came");
        let path = format!("/api/v1/events?since={since}&limit=7&wait=5");
        let page = c.ok(i, Method::GET, &path, None).await;
        assert_eq!(page.get("resync_required"), None, "{page}");
        frames.extend(page["events"].as_array().unwrap().iter().cloned());
        since = page["next"].as_u64().unwrap();
    }
    let seqs = seqs(&frames);
    assert_eq!(seqs[0], hello["seq"].as_u64().unwrap() + 1);
    assert!(consecutive(&seqs), "every seq once and in order: {seqs:?}");
}

/// Member `id` as process 2 shows it, once `done` holds for it (failing
/// after the patience).
async fn member_once(c: &Cluster, id: &str, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let m = c.ok(2, Method::GET, &format!("/api/v1/members/{id}"), None).await;
        if done(&m) {
            return m;
        }
        assert!(tokio::time::Instant::now() < deadline, "member {id} stays {m}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An agent with a stream open on two processes stays online when one
/// closes, and goes offline when the last closes; each change is told
/// once, to every process's clients.
#[tokio::test]
async fn a_member_is_online_while_a_stream_of_it_is_open_on_any_process() {
    let c = Cluster::start().await;
    let p = c.project("web").await;
    let (id, token) = c.agent("bot", &p).await;
    // `last_seen_at` tells when a process has recorded an open or a close.
    // A process also refreshes it on the member's first request there, in
    // the background: those are made, and waited for, first.
    let mut seen = member_once(&c, &id, |_| true).await["last_seen_at"].clone();
    for i in 0..2 {
        assert_eq!(c.call(i, Method::GET, "/api/v1/members/me", &token, None).await.0, 200);
        seen = member_once(&c, &id, |m| m["last_seen_at"] != seen).await["last_seen_at"].clone();
    }
    let (mut watcher, _) = connect(&c.procs[2].ws_url(&c.owner, None)).await;
    // Each open is recorded before the stream's hello.
    let (on_a, _) = connect(&c.procs[0].ws_url(&token, None)).await;
    let (on_b, _) = connect(&c.procs[1].ws_url(&token, None)).await;
    let opened = member_once(&c, &id, |_| true).await;
    assert_eq!(opened["status"], "online");
    drop(on_a);
    let closed_on_a = member_once(&c, &id, |m| m["last_seen_at"] != opened["last_seen_at"]).await;
    assert_eq!(closed_on_a["status"], "online", "the stream on B is still open");
    drop(on_b);
    member_once(&c, &id, |m| m["status"] == "offline").await;
    let last = c.task(1, &p, "last".into()).await["id"].as_str().unwrap().to_string();
    let frames = frames_until(&mut watcher, |f| created(f).contains(&last)).await;
    let statuses: Vec<&str> = frames
        .iter()
        .filter(|f| f["type"] == "agent.status" && f["data"]["member_id"] == id.as_str())
        .map(|f| f["data"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["online", "offline"]);
}
