//! Webhook delivery state in the board (docs/rules.md, webhooks): what a
//! sender claims, how its progress moves the cursor, retries on their own
//! schedule that hold back no later event, the bound on pending retries
//! that stops the cursor, claims shared by several holders, redelivery
//! and the backlog. The sender's HTTP side is tested in the server's API
//! tests; here outcomes are handed to the board as a sender would, and
//! time is a manual clock.

use std::time::Duration;

use taskboard_core::api::{DeliveryQuery, NewWebhook};
use taskboard_core::board::Clock;
use taskboard_core::model::Project;
use taskboard_core::webhooks::{DeliveryBatch, DeliveryPolicy, Outcome, WebhookOptions, delivery_id};
use taskboard_core::{Board, BoardOptions};
use uuid::Uuid;

use crate::support::*;

/// Retries due at once, so a test needs no waiting; `give_up` is the day
/// of retries.
fn options(give_up: Duration) -> BoardOptions {
    let policy = DeliveryPolicy {
        delays: vec![Duration::ZERO],
        then_every: Duration::ZERO,
        jitter: 0.0,
        give_up_after: give_up,
        batch: 4,
        ..DeliveryPolicy::default()
    };
    BoardOptions { webhooks: WebhookOptions { allow_private: true, policy }, ..BoardOptions::default() }
}

/// The default retry schedule without jitter (5 s, 30 s, …), at most
/// `max_pending` retries per webhook, and a manual clock.
fn scheduled(max_pending: usize) -> (BoardOptions, Clock) {
    let clock = Clock::manual();
    let policy = DeliveryPolicy { jitter: 0.0, batch: 4, max_pending, ..DeliveryPolicy::default() };
    let options = BoardOptions {
        webhooks: WebhookOptions { allow_private: true, policy },
        clock: clock.clone(),
        ..BoardOptions::default()
    };
    (options, clock)
}

/// A board with `options`, a webhook for `task.created` and `tasks`
/// tasks created in project `web`.
async fn hooked(options: BoardOptions, tasks: usize) -> (Fx, Uuid, Project) {
    let fx = board_with(options).await;
    let id = hook(&fx, &["task.created"]).await;
    let p = fx.project("web").await;
    for i in 0..tasks {
        fx.task(&p, &format!("task {i}")).await;
    }
    (fx, id, p)
}

fn seqs(batch: &DeliveryBatch) -> Vec<(u64, bool)> {
    batch.items.iter().map(|i| (i.seq, i.retry)).collect()
}

fn refused(n: usize) -> Vec<Outcome> {
    vec![Outcome::Refused { status: 500 }; n]
}

async fn hook(fx: &Fx, events: &[&str]) -> Uuid {
    let new = NewWebhook {
        url: "http://127.0.0.1:9/hook".into(),
        events: Some(events.iter().map(|e| e.to_string()).collect()),
        project_id: None,
        description: None,
    };
    fx.board.create_webhook(&fx.owner, new).await.unwrap().webhook.id
}

async fn claim(board: &Board, hook: Uuid, holder: Uuid) -> Option<DeliveryBatch> {
    board.claim_deliveries(hook, holder).await.unwrap()
}

async fn backlog(board: &Board, hook: Uuid) -> u64 {
    board.webhook_backlogs().await.unwrap().into_iter().find(|(id, _)| *id == hook).unwrap().1
}

fn ok(n: usize) -> Vec<Outcome> {
    vec![Outcome::Delivered { status: 200 }; n]
}

async fn log(fx: &Fx, hook: Uuid) -> Vec<(u64, String, u32)> {
    let q = DeliveryQuery { limit: Some(1000), offset: None };
    let log = fx.board.list_deliveries(&fx.owner, hook, q).await.unwrap();
    log.into_iter().map(|d| (d.seq, serde_json::to_value(d.state).unwrap().to_string(), d.attempts)).collect()
}

#[tokio::test]
async fn a_batch_takes_matching_events_in_order_and_one_write_records_it() {
    let (fx, id, _) = hooked(options(Duration::from_secs(3600)), 3).await;
    let holder = Uuid::new_v4();
    let batch = claim(&fx.board, id, holder).await.expect("work is due");
    let seqs: Vec<u64> = batch.items.iter().map(|i| i.seq).collect();
    assert_eq!(seqs.len(), 3);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    assert!(batch.items.iter().all(|i| i.id == delivery_id(id, i.seq) && !i.retry));
    assert!(batch.items.iter().all(|i| i.body.contains("\"task.created\"")));
    assert!(backlog(&fx.board, id).await >= 3);
    fx.board.finish_deliveries(batch, ok(3)).await.unwrap();
    assert_eq!(backlog(&fx.board, id).await, 0);
    assert!(claim(&fx.board, id, holder).await.is_none(), "nothing left");
    let logged = log(&fx, id).await;
    let expected: Vec<(u64, String, u32)> =
        seqs.iter().rev().map(|s| (*s, "\"delivered\"".to_string(), 1)).collect();
    assert_eq!(logged, expected);
}

#[tokio::test]
async fn a_failed_first_attempt_is_retried_on_its_schedule_without_holding_back_later_events() {
    let (options, clock) = scheduled(1000);
    let (fx, id, p) = hooked(options, 3).await;
    let holder = Uuid::new_v4();
    let batch = claim(&fx.board, id, holder).await.unwrap();
    let first: Vec<u64> = batch.items.iter().map(|i| i.seq).collect();
    assert_eq!(seqs(&batch), first.iter().map(|s| (*s, false)).collect::<Vec<_>>());
    // The first event fails; the two after it get through all the same.
    let outcomes = vec![Outcome::Refused { status: 500 }, ok(1)[0].clone(), ok(1)[0].clone()];
    fx.board.finish_deliveries(batch, outcomes).await.unwrap();
    let pending = (first[0], "\"pending\"".to_string(), 1);
    assert_eq!(log(&fx, id).await[2], pending);
    assert_eq!(backlog(&fx.board, id).await, 1, "the retry is the backlog");

    // Later events go out at their first attempt while the retry waits.
    for i in 3..5 {
        fx.task(&p, &format!("task {i}")).await;
    }
    let batch = claim(&fx.board, id, holder).await.unwrap();
    let later: Vec<u64> = batch.items.iter().map(|i| i.seq).collect();
    assert_eq!(seqs(&batch), later.iter().map(|s| (*s, false)).collect::<Vec<_>>());
    assert!(later.iter().all(|s| *s > first[2]));
    fx.board.finish_deliveries(batch, ok(2)).await.unwrap();
    assert!(claim(&fx.board, id, holder).await.is_none(), "the retry is not due yet");

    // Due about 5 s after the failure, then 30 s after the next one.
    clock.advance(Duration::from_millis(4_900));
    assert!(claim(&fx.board, id, holder).await.is_none());
    clock.advance(Duration::from_millis(100));
    let batch = claim(&fx.board, id, holder).await.expect("the retry is due");
    assert_eq!(seqs(&batch), vec![(first[0], true)]);
    assert_eq!(batch.items[0].id, delivery_id(id, first[0]), "the same webhook-id");
    assert!(batch.items[0].body.contains(&format!("\"seq\":{}", first[0])));
    fx.board.finish_deliveries(batch, refused(1)).await.unwrap();
    clock.advance(Duration::from_millis(29_900));
    assert!(claim(&fx.board, id, holder).await.is_none());
    clock.advance(Duration::from_millis(100));
    let batch = claim(&fx.board, id, holder).await.expect("the second retry is due");
    assert_eq!(seqs(&batch), vec![(first[0], true)]);
    fx.board.finish_deliveries(batch, ok(1)).await.unwrap();

    let logged = log(&fx, id).await;
    let mut expected: Vec<(u64, String, u32)> =
        first.iter().chain(&later).map(|s| (*s, "\"delivered\"".to_string(), 1)).collect();
    expected[0].2 = 3;
    expected.reverse();
    assert_eq!(logged, expected, "every event delivered, the first after two retries");
    assert_eq!(backlog(&fx.board, id).await, 0);
}

#[tokio::test]
async fn a_webhook_with_its_retries_full_keeps_its_cursor_until_some_finish() {
    let (options, clock) = scheduled(2);
    let (fx, id, _) = hooked(options, 5).await;
    let holder = Uuid::new_v4();
    // Room for two retries: a batch takes two first attempts, not four.
    let batch = claim(&fx.board, id, holder).await.unwrap();
    assert_eq!(batch.items.len(), 2);
    let t: Vec<u64> = batch.items.iter().map(|i| i.seq).collect();
    fx.board.finish_deliveries(batch, refused(2)).await.unwrap();
    let before = backlog(&fx.board, id).await;
    assert!(before >= 5, "three events wait behind the cursor, two retries: {before}");
    assert!(claim(&fx.board, id, holder).await.is_none(), "the cursor stays while the retries are full");
    let schedule = fx.board.webhook_schedule(holder).await.unwrap();
    let due = schedule.into_iter().find(|(h, _)| *h == id).unwrap().1.unwrap();
    assert!(due > clock.timestamp(), "next due when a retry is");
    clock.advance(Duration::from_secs(5));
    let batch = claim(&fx.board, id, holder).await.unwrap();
    assert_eq!(seqs(&batch), vec![(t[0], true), (t[1], true)], "the retries only");
    fx.board
        .finish_deliveries(batch, vec![ok(1)[0].clone(), Outcome::Refused { status: 503 }])
        .await
        .unwrap();
    // One retry finished: the cursor moves one first attempt at a time.
    let mut rest = Vec::new();
    while let Some(batch) = claim(&fx.board, id, holder).await {
        assert_eq!(batch.items.len(), 1);
        assert!(!batch.items[0].retry);
        rest.push(batch.items[0].seq);
        fx.board.finish_deliveries(batch, ok(1)).await.unwrap();
    }
    assert_eq!(rest.len(), 3);
    assert!(rest.windows(2).all(|w| w[0] < w[1]) && rest[0] > t[1]);
    assert_eq!(backlog(&fx.board, id).await, 1, "the one retry left");
    // A redelivery counts among the retries: beyond the bound it is
    // refused, not dropped.
    fx.board.redeliver(&fx.owner, id, delivery_id(id, rest[0])).await.unwrap();
    let full = fx.board.redeliver(&fx.owner, id, delivery_id(id, rest[1])).await;
    assert_eq!(kind(full), taskboard_core::ErrorKind::Conflict);
    let batch = claim(&fx.board, id, holder).await.unwrap();
    assert_eq!(seqs(&batch), vec![(rest[0], true)]);
    fx.board.finish_deliveries(batch, ok(1)).await.unwrap();
    clock.advance(Duration::from_secs(30));
    let batch = claim(&fx.board, id, holder).await.unwrap();
    assert_eq!(seqs(&batch), vec![(t[1], true)]);
    fx.board.finish_deliveries(batch, ok(1)).await.unwrap();
    let logged = log(&fx, id).await;
    assert_eq!(logged.len(), 5);
    assert!(logged.iter().all(|(_, state, _)| state == "\"delivered\""), "{logged:?}");
    assert_eq!(backlog(&fx.board, id).await, 0);
}

#[tokio::test]
async fn turning_a_webhook_off_ends_its_pending_retries() {
    let (options, clock) = scheduled(1000);
    let fx = board_with(options).await;
    let id = hook(&fx, &["task.created"]).await;
    let p = fx.project("web").await;
    fx.task(&p, "one").await;
    let holder = Uuid::new_v4();
    let batch = claim(&fx.board, id, holder).await.unwrap();
    fx.board.finish_deliveries(batch, refused(1)).await.unwrap();
    let off = |on: bool| taskboard_core::api::WebhookPatch {
        active: taskboard_core::api::Patch::Value(on),
        ..Default::default()
    };
    fx.board.update_webhook(&fx.owner, id, off(false)).await.unwrap();
    fx.board.update_webhook(&fx.owner, id, off(true)).await.unwrap();
    clock.advance(Duration::from_secs(60));
    // Only its own `webhook.updated`, which it does not take, is after
    // its cursor: nothing of before is sent.
    if let Some(batch) = claim(&fx.board, id, holder).await {
        assert!(batch.items.is_empty(), "nothing of before is sent");
        fx.board.finish_deliveries(batch, Vec::new()).await.unwrap();
    }
    assert_eq!(log(&fx, id).await[0].1, "\"failed\"");
    assert_eq!(backlog(&fx.board, id).await, 0);
}

#[tokio::test]
async fn an_event_failing_for_good_is_passed_and_can_be_redelivered() {
    let (fx, id, _) = hooked(options(Duration::ZERO), 2).await;
    let holder = Uuid::new_v4();
    let batch = claim(&fx.board, id, holder).await.unwrap();
    let failed = batch.items[0].seq;
    let error = Outcome::Unreachable { error: "connection refused".into() };
    fx.board.finish_deliveries(batch, vec![error]).await.unwrap();
    let batch = claim(&fx.board, id, holder).await.unwrap();
    assert!(batch.items.iter().all(|i| i.seq > failed), "the failed event is passed");
    fx.board.finish_deliveries(batch, ok(1)).await.unwrap();
    assert_eq!(log(&fx, id).await[1], (failed, "\"failed\"".to_string(), 1));

    let again = fx.board.redeliver(&fx.owner, id, delivery_id(id, failed)).await.unwrap();
    assert_eq!(serde_json::to_value(again.state).unwrap(), "pending");
    let batch = claim(&fx.board, id, holder).await.unwrap();
    assert_eq!(batch.items.len(), 1);
    assert!(batch.items[0].retry && batch.items[0].seq == failed);
    fx.board.finish_deliveries(batch, ok(1)).await.unwrap();
    assert_eq!(log(&fx, id).await[1], (failed, "\"delivered\"".to_string(), 2));
    let unknown = fx.board.redeliver(&fx.owner, id, Uuid::now_v7()).await;
    assert_eq!(kind(unknown), taskboard_core::ErrorKind::NotFound);
}

#[tokio::test]
async fn one_holder_at_a_time_and_the_progress_of_a_lost_claim_is_dropped() {
    let fx = board_with(options(Duration::from_secs(3600))).await;
    let id = hook(&fx, &["task.created"]).await;
    let p = fx.project("web").await;
    fx.task(&p, "one").await;
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let first = claim(&fx.board, id, a).await.unwrap();
    assert!(claim(&fx.board, id, b).await.is_none(), "a holds the webhook");
    let due = fx.board.webhook_schedule(b).await.unwrap();
    assert!(due.iter().any(|(h, at)| *h == id && at.is_some_and(|t| t > jiff::Timestamp::now())));
    fx.board.release_webhook_claims(a).await.unwrap();
    let second = claim(&fx.board, id, b).await.expect("released, b takes it");
    assert_eq!(second.items.len(), first.items.len());
    fx.board.finish_deliveries(first, ok(1)).await.unwrap();
    assert!(backlog(&fx.board, id).await > 0, "a's progress came after it lost the claim");
    fx.board.finish_deliveries(second, ok(1)).await.unwrap();
    assert_eq!(backlog(&fx.board, id).await, 0);
}

#[tokio::test]
async fn an_inactive_webhook_has_no_work_and_no_backlog() {
    let fx = board_with(options(Duration::from_secs(3600))).await;
    let id = hook(&fx, &["*"]).await;
    let patch = taskboard_core::api::WebhookPatch {
        active: taskboard_core::api::Patch::Value(false),
        ..Default::default()
    };
    fx.board.update_webhook(&fx.owner, id, patch).await.unwrap();
    fx.project("web").await;
    assert!(claim(&fx.board, id, Uuid::new_v4()).await.is_none());
    assert!(fx.board.webhook_backlogs().await.unwrap().is_empty());
    assert_eq!(fx.board.get_webhook(&fx.owner, id).await.unwrap().backlog, Some(0));
}

#[tokio::test]
async fn events_past_their_day_of_retries_fail_at_their_first_attempt_in_one_batch() {
    let (fx, id, _) = hooked(options(Duration::ZERO), 3).await;
    let batch = claim(&fx.board, id, Uuid::new_v4()).await.unwrap();
    let failed = vec![Outcome::Refused { status: 503 }; batch.items.len()];
    fx.board.finish_deliveries(batch, failed).await.unwrap();
    assert_eq!(backlog(&fx.board, id).await, 0);
    let logged = log(&fx, id).await;
    assert_eq!(logged.len(), 3);
    assert!(logged.iter().all(|(_, state, attempts)| state == "\"failed\"" && *attempts == 1));
}

/// A webhook for every event created by `admin`.
async fn hook_of(fx: &Fx, admin: &taskboard_core::Actor) -> Uuid {
    let new = NewWebhook {
        url: "http://127.0.0.1:9/hook".into(),
        events: Some(vec!["*".to_string()]),
        project_id: None,
        description: None,
    };
    fx.board.create_webhook(admin, new).await.unwrap().webhook.id
}

#[tokio::test]
async fn a_deactivated_creators_webhook_delivers_nothing_more_not_even_its_retries() {
    let fx = board_with(options(Duration::from_secs(3600))).await;
    let admin = fx.human("ada", taskboard_core::model::Role::Admin).await;
    let id = hook_of(&fx, &admin).await;
    let p = fx.project("web").await;
    let holder = Uuid::new_v4();
    let batch = claim(&fx.board, id, holder).await.expect("the project's event is due");
    let n = batch.items.len();
    assert!(n >= 1);
    // The first attempts fail: they become retries.
    fx.board.finish_deliveries(batch, refused(n)).await.unwrap();
    fx.board.delete_member(&fx.owner, admin.id()).await.unwrap();
    fx.task(&p, "after").await;
    let left = claim(&fx.board, id, holder).await;
    let items = left.map(|b| b.items).unwrap_or_default();
    let bodies: Vec<&str> = items.iter().map(|i| i.body.as_str()).collect();
    assert!(items.is_empty(), "a deactivated creator's webhook sent {bodies:?}");
}

#[tokio::test]
async fn a_demoted_creators_webhook_takes_no_more_admin_events() {
    let fx = board_with(options(Duration::from_secs(3600))).await;
    let admin = fx.human("ada", taskboard_core::model::Role::Admin).await;
    let id = hook_of(&fx, &admin).await;
    let holder = Uuid::new_v4();
    let batch = claim(&fx.board, id, holder).await.expect("its own creation is due");
    let n = batch.items.len();
    fx.board.finish_deliveries(batch, ok(n)).await.unwrap();
    let demote = taskboard_core::api::MemberPatch {
        role: taskboard_core::api::Patch::Value(taskboard_core::model::Role::Member),
        ..Default::default()
    };
    fx.board.update_member(&fx.owner, admin.id(), demote).await.unwrap();
    hook(&fx, &["*"]).await;
    fx.project("web").await;
    let batch = claim(&fx.board, id, holder).await.expect("events are due");
    let kinds: Vec<String> = batch
        .items
        .iter()
        .map(|i| {
            serde_json::from_str::<serde_json::Value>(&i.body).unwrap()["type"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(kinds.iter().any(|k| k == "project.created"), "{kinds:?}");
    assert!(
        !kinds.iter().any(|k| k == "webhook.created"),
        "an admin event reached a demoted admin's webhook: {kinds:?}"
    );
}
