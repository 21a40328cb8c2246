//! Webhook delivery state in the board (docs/rules.md, webhooks): what a
//! sender claims, how its progress moves the cursor, the head that holds
//! back later events, claims shared by several holders, redelivery and the
//! backlog. The sender's HTTP side is tested in the server's API tests;
//! here outcomes are handed to the board as a sender would.

use std::time::Duration;

use taskboard_core::api::{DeliveryQuery, NewWebhook};
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
    let fx = board_with(options(Duration::from_secs(3600))).await;
    let id = hook(&fx, &["task.created"]).await;
    let p = fx.project("web").await;
    for i in 0..3 {
        fx.task(&p, &format!("task {i}")).await;
    }
    let holder = Uuid::new_v4();
    let batch = claim(&fx.board, id, holder).await.expect("work is due");
    let seqs: Vec<u64> = batch.items.iter().map(|i| i.seq).collect();
    assert_eq!(seqs.len(), 3);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    assert!(batch.items.iter().all(|i| i.id == delivery_id(id, i.seq) && !i.redelivery));
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
async fn a_failing_event_holds_back_the_later_ones_until_it_gets_through() {
    let fx = board_with(options(Duration::from_secs(3600))).await;
    let id = hook(&fx, &["task.created"]).await;
    let p = fx.project("web").await;
    for i in 0..3 {
        fx.task(&p, &format!("task {i}")).await;
    }
    let holder = Uuid::new_v4();
    let batch = claim(&fx.board, id, holder).await.unwrap();
    let seqs: Vec<u64> = batch.items.iter().map(|i| i.seq).collect();
    // The first fails; the sender stops there.
    fx.board.finish_deliveries(batch, vec![Outcome::Refused { status: 500 }]).await.unwrap();
    let logged = log(&fx, id).await;
    assert_eq!(logged, vec![(seqs[0], "\"pending\"".to_string(), 1)]);
    // Retried from the same event, with the later ones behind it.
    let batch = claim(&fx.board, id, holder).await.unwrap();
    assert_eq!(batch.items.iter().map(|i| i.seq).collect::<Vec<_>>(), seqs);
    assert_eq!(batch.items[0].id, delivery_id(id, seqs[0]));
    fx.board.finish_deliveries(batch, ok(3)).await.unwrap();
    let logged = log(&fx, id).await;
    let attempts: Vec<(u64, u32)> = logged.iter().map(|(s, _, a)| (*s, *a)).collect();
    assert_eq!(attempts, vec![(seqs[2], 1), (seqs[1], 1), (seqs[0], 2)]);
    assert!(logged.iter().all(|(_, state, _)| state == "\"delivered\""));
}

#[tokio::test]
async fn an_event_failing_for_good_is_passed_and_can_be_redelivered() {
    let fx = board_with(options(Duration::ZERO)).await;
    let id = hook(&fx, &["task.created"]).await;
    let p = fx.project("web").await;
    for i in 0..2 {
        fx.task(&p, &format!("task {i}")).await;
    }
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
    assert!(batch.items[0].redelivery && batch.items[0].seq == failed);
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
async fn events_past_their_day_of_retries_fail_in_one_batch_without_holding_back() {
    let fx = board_with(options(Duration::ZERO)).await;
    let id = hook(&fx, &["task.created"]).await;
    let p = fx.project("web").await;
    for i in 0..3 {
        fx.task(&p, &format!("task {i}")).await;
    }
    let batch = claim(&fx.board, id, Uuid::new_v4()).await.unwrap();
    assert!(batch.items.iter().all(|i| i.last_chance), "the sender goes on past their failures");
    let failed = vec![Outcome::Refused { status: 503 }; batch.items.len()];
    fx.board.finish_deliveries(batch, failed).await.unwrap();
    assert_eq!(backlog(&fx.board, id).await, 0);
    let logged = log(&fx, id).await;
    assert_eq!(logged.len(), 3);
    assert!(logged.iter().all(|(_, state, attempts)| state == "\"failed\"" && *attempts == 1));
}
