//! The rules decided in a write, across three processes: one winner per
//! claim, task numbers without gap or duplicate, a lease expiring once,
//! one delivery per event and webhook.

use std::collections::{HashMap, HashSet};

use reqwest::Method;
use serde_json::json;

use crate::receiver::Receiver;
use crate::support::*;

#[tokio::test]
async fn sixty_four_claimers_spread_over_three_processes_claim_each_task_once() {
    let c = Cluster::start().await;
    let p = c.project("web").await;
    const TASKS: usize = 128;
    const CLAIMERS: usize = 64;
    let creations = (0..TASKS).map(|i| c.task(i, &p, format!("task {i}")));
    futures_util::future::join_all(creations).await;
    let mut claimers = Vec::new();
    for i in 0..CLAIMERS {
        let (_, token) = c.agent(&format!("bot{i}"), &p).await;
        claimers.push((c.http.clone(), c.base(i).to_string(), token));
    }
    let handles: Vec<_> = claimers
        .into_iter()
        .map(|(http, base, token)| {
            tokio::spawn(async move {
                let mut got = Vec::new();
                loop {
                    match call(&http, &base, Method::POST, "/api/v1/tasks/claim", &token, None).await {
                        (200, task) => got.push(task["id"].as_str().unwrap().to_string()),
                        (204, _) => return got,
                        (status, body) => panic!("claim: {status} {body}"),
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
async fn fifty_creations_spread_over_three_processes_are_numbered_1_to_50() {
    let c = Cluster::start().await;
    let p = c.project("web").await;
    let creations = (0..50).map(|i| c.task(i, &p, format!("t{i}")));
    let mut numbers: Vec<u64> = futures_util::future::join_all(creations)
        .await
        .iter()
        .map(|t| t["number"].as_u64().unwrap())
        .collect();
    numbers.sort();
    assert_eq!(numbers, (1..=50).collect::<Vec<_>>());
}

/// The lease of a task taken through one process ends once, though all
/// three look for expired leases every second; every process then shows
/// it released.
#[tokio::test]
async fn a_lease_taken_on_one_process_expires_once() {
    let c = Cluster::start().await;
    let p = c.project("web").await;
    let (bot, token) = c.agent("bot", &p).await;
    let t = c.task(0, &p, "leased".into()).await;
    let id = t["id"].as_str().unwrap().to_string();
    let (mut ws, _) = connect(&c.procs[2].ws_url(&c.owner, None)).await;
    let (status, taken) = c
        .call(
            0,
            Method::POST,
            &format!("/api/v1/tasks/{id}/take"),
            &token,
            Some(json!({"lease_seconds": 10})),
        )
        .await;
    assert_eq!(status, 200, "{taken}");
    assert_eq!(taken["lease"]["holder"]["id"], json!(bot));
    // The lease ends ten seconds on: the release shows on every process.
    let deadline = tokio::time::Instant::now() + PATIENCE + std::time::Duration::from_secs(10);
    for i in 0..3 {
        loop {
            let seen = c.ok(i, Method::GET, &format!("/api/v1/tasks/{id}"), None).await;
            if seen["lease"].is_null() {
                assert_eq!(seen["status"], "todo");
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "the lease was not released");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    // A marker made after each process saw the release: the stream up to
    // it holds the release once.
    let marker = c.task(1, &p, "marker".into()).await["id"].as_str().unwrap().to_string();
    let frames = frames_until(&mut ws, |f| created(f).contains(&marker)).await;
    let releases = frames
        .iter()
        .filter(|f| {
            f["type"] == "task.updated" && f["data"]["id"] == json!(id) && f["data"]["lease"].is_null()
        })
        .count();
    assert_eq!(releases, 1, "one release of the lease in the stream");
    let actions = c.ok(2, Method::GET, &format!("/api/v1/tasks/{id}/actions"), None).await;
    let expired = actions.as_array().unwrap().iter().filter(|a| a["action"] == "lease_expired").count();
    assert_eq!(expired, 1, "one lease_expired in the audit");
}

/// A webhook receives each event once, whichever process made it, though
/// every process delivers.
#[tokio::test]
async fn a_webhook_receives_each_event_of_three_processes_once() {
    let c = Cluster::start().await;
    let receiver = Receiver::start().await;
    let p = c.project("web").await;
    let body = json!({"url": receiver.url, "events": ["task.created"]});
    c.ok(0, Method::POST, "/api/v1/webhooks", Some(body)).await;
    const TASKS: usize = 30;
    let creations = (0..TASKS).map(|i| c.task(i, &p, format!("t{i}")));
    let ids: HashSet<String> = futures_util::future::join_all(creations)
        .await
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    receiver
        .wait_until("every task.created delivered", |r| {
            let got: HashSet<String> = r
                .iter()
                .filter(|r| r.delivered())
                .map(|r| r.frame()["data"]["id"].as_str().unwrap().to_string())
                .collect();
            ids.is_subset(&got)
        })
        .await;
    // One more event, delivered after the others: a second delivery of
    // an earlier one would have had its chance.
    let last = c.task(2, &p, "last".into()).await["id"].as_str().unwrap().to_string();
    let received = receiver
        .wait_until("the last event delivered", |r| r.iter().any(|r| r.frame()["data"]["id"] == json!(last)))
        .await;
    let mut per_event: HashMap<u64, usize> = HashMap::new();
    for r in &received {
        assert!(r.delivered(), "the receiver answers 200");
        *per_event.entry(r.seq()).or_default() += 1;
    }
    assert_eq!(per_event.len(), TASKS + 1);
    let twice: Vec<_> = per_event.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    let ids_seen: HashSet<&str> = received.iter().map(|r| r.id()).collect();
    assert_eq!(ids_seen.len(), TASKS + 1, "one webhook-id per event");
}
