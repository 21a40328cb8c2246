//! Fencing of leases (docs/rules.md, fencing): a holder whose lease
//! expired and was taken by another cannot write over the new holder's
//! work, and nobody but the holder or an admin moves a leased task.

use std::time::Duration;

use taskboard_core::api::{ClaimRequest, NewMessage, Patch, StepPatch, TaskPatch};
use taskboard_core::board::Clock;
use taskboard_core::model::*;
use taskboard_core::validate::{LongText, Reason};
use taskboard_core::{Actor, BoardOptions, ErrorKind};
use uuid::Uuid;

use crate::support::*;

fn status(s: TaskStatus) -> TaskPatch {
    TaskPatch { status: Patch::Value(s), ..Default::default() }
}

fn comment(task: Uuid, text: &str) -> NewMessage {
    NewMessage { task_id: Some(task), content: text.to_string(), ..Default::default() }
}

/// A expires, B claims: the fixture of most tests here.
async fn taken_over() -> (Fx, Clock, Task, Actor, Actor, Lease) {
    let clock = Clock::manual();
    let fx = board_with(BoardOptions { clock: clock.clone(), ..Default::default() }).await;
    let p = fx.project("web").await;
    let a = fx.agent("alpha").await;
    let b = fx.agent("beta").await;
    let t = fx.task(&p, "work").await;
    let first = fx.board.take_leased(&a, t.id, Some(10)).await.unwrap().lease.expect("a lease");
    clock.advance(Duration::from_secs(11));
    assert_eq!(fx.board.expire_leases().await.unwrap(), 1);
    let taken = fx.board.take_leased(&b, t.id, Some(60)).await.unwrap();
    let second = taken.lease.clone().expect("a lease");
    assert_ne!(first.id, second.id, "every take is a new lease");
    (fx, clock, taken, a.presenting(Some(first.id)), b, second)
}

#[tokio::test]
async fn a_holder_whose_lease_was_taken_over_changes_nothing() {
    let (fx, _clock, t, stale, b, lease) = taken_over().await;
    // With its old lease id and without one, A's changes are 409.
    let a_plain = stale.clone().presenting(None);
    for a in [&stale, &a_plain] {
        assert_eq!(kind(fx.board.update_task(a, t.id, status(TaskStatus::Done)).await), ErrorKind::Conflict);
        let desc = TaskPatch { title: Patch::Value(title("mine")), ..Default::default() };
        assert_eq!(kind(fx.board.update_task(a, t.id, desc).await), ErrorKind::Conflict);
        assert_eq!(kind(fx.board.create_step(a, t.id, title("step")).await), ErrorKind::Conflict);
        assert_eq!(kind(fx.board.assign(a, t.id, a.id()).await), ErrorKind::Conflict);
        assert_eq!(kind(fx.board.release(a, t.id, None).await), ErrorKind::Conflict);
        assert_eq!(kind(fx.board.reject(a, t.id, Reason::new("no").unwrap()).await), ErrorKind::Conflict);
        assert_eq!(kind(fx.board.delete_task(a, t.id).await), ErrorKind::Conflict);
    }
    // The stale lease id is refused even for a comment and a heartbeat;
    // without it, A may comment.
    assert_eq!(kind(fx.board.post_message(&stale, comment(t.id, "done!")).await), ErrorKind::Conflict);
    assert_eq!(kind(fx.board.heartbeat(&stale, t.id, None).await), ErrorKind::Conflict);
    fx.board.post_message(&a_plain, comment(t.id, "I lost my lease")).await.unwrap();
    // B's lease is intact, and B works on under it.
    let now = fx.get(t.id).await;
    assert_eq!((now.status, now.lease.clone().map(|l| l.id)), (TaskStatus::InProgress, Some(lease.id)));
    assert_eq!(now.assignee.unwrap().id, b.id());
    let b = b.presenting(Some(lease.id));
    let step = fx.board.create_step(&b, t.id, title("b's step")).await.unwrap();
    let done = StepPatch { done: Patch::Value(true), ..Default::default() };
    fx.board.update_step(&b, t.id, step.id, done).await.unwrap();
    let beat = fx.board.heartbeat(&b, t.id, None).await.unwrap();
    assert_eq!(beat.lease.unwrap().id, lease.id, "a heartbeat keeps the lease id");
    let review = fx.board.update_task(&b, t.id, status(TaskStatus::Review)).await.unwrap();
    assert_eq!(review.lease, None, "moving on ends the holder's own lease");
}

#[tokio::test]
async fn people_edit_a_leased_task_but_do_not_move_it() {
    let (fx, _clock, t, _a, b, lease) = taken_over().await;
    let person = fx.human("pat", Role::Member).await;
    let desc =
        TaskPatch { description: Patch::Value(LongText::new("context").unwrap()), ..Default::default() };
    fx.board.update_task(&person, t.id, desc).await.unwrap();
    for patch in [
        status(TaskStatus::Todo),
        TaskPatch { assignee_id: Patch::Null, ..Default::default() },
        TaskPatch { assignee_id: Patch::Value(person.id()), ..Default::default() },
    ] {
        let e = fx.board.update_task(&person, t.id, patch).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert!(e.detail().contains("held under a lease by beta"), "{}", e.detail());
    }
    assert_eq!(kind(fx.board.assign(&person, t.id, person.id()).await), ErrorKind::Conflict);
    assert_eq!(kind(fx.board.create_step(&person, t.id, title("x")).await), ErrorKind::Conflict);
    assert_eq!(fx.get(t.id).await.lease.map(|l| l.id), Some(lease.id));
    // An agent that is not the holder may not even edit the text.
    let other = fx.agent("gamma").await;
    let desc = TaskPatch { description: Patch::Value(LongText::new("mine").unwrap()), ..Default::default() };
    assert_eq!(kind(fx.board.update_task(&other, t.id, desc).await), ErrorKind::Conflict);
    let _ = b;
}

#[tokio::test]
async fn an_admins_change_ends_the_lease_and_says_so() {
    let (fx, _clock, t, _a, _b, lease) = taken_over().await;
    let admin = fx.human("ada", Role::Admin).await;
    let moved = fx.board.update_task(&admin, t.id, status(TaskStatus::Todo)).await.unwrap();
    assert_eq!(moved.lease, None);
    let actions = fx.board.task_actions(t.id, taskboard_core::api::Page::default()).await.unwrap();
    let last = actions.last().unwrap();
    assert_eq!(last.actor.id, admin.id());
    let ended = last.changes.get("lease").expect("the audit entry records the ended lease");
    assert_eq!(ended.from["id"], serde_json::json!(lease.id));
    assert_eq!(ended.to, serde_json::Value::Null);
    // An owner's step change on another leased task ends that lease too.
    let p = fx.project("ops").await;
    let bot = fx.agent("delta").await;
    let u = fx.task(&p, "other").await;
    fx.board.take_leased(&bot, u.id, Some(60)).await.unwrap();
    fx.board.create_step(&fx.owner, u.id, title("owner's step")).await.unwrap();
    let u = fx.get(u.id).await;
    assert_eq!(u.lease, None);
    assert_eq!(u.assignee.map(|m| m.id), Some(bot.id()), "the assignee stays; only the lease ends");
}

#[tokio::test]
async fn a_lease_id_that_is_not_current_is_refused_whoever_sends_it() {
    let (fx, _clock, t, stale, _b, _lease) = taken_over().await;
    let stale_id = stale.lease;
    let owner = fx.owner.clone().presenting(stale_id);
    let e = fx.board.update_task(&owner, t.id, status(TaskStatus::Todo)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert!(e.detail().contains("is not the current lease"), "{}", e.detail());
    // On a task without a lease, any lease id is stale.
    let p = fx.project("free").await;
    let free = fx.task(&p, "free").await;
    let owner = fx.owner.clone().presenting(Some(Uuid::new_v4()));
    assert_eq!(
        kind(fx.board.update_task(&owner, free.id, status(TaskStatus::Todo)).await),
        ErrorKind::Conflict
    );
}

#[tokio::test]
async fn ready_and_claim_in_a_project_the_caller_is_not_in_are_forbidden() {
    let fx = board().await;
    let p = fx.project("secret").await;
    fx.task(&p, "hidden").await;
    let bot = fx.agent("bot").await;
    let q = taskboard_core::api::ReadyQuery { project_id: Some(p.id), ..Default::default() };
    assert_eq!(kind(fx.board.ready_tasks(&bot, q).await), ErrorKind::Forbidden);
    let claim = ClaimRequest { project_id: Some(p.id), ..Default::default() };
    assert_eq!(kind(fx.board.claim(&bot, claim).await), ErrorKind::Forbidden);
    fx.board.add_project_member(&fx.owner, p.id, bot.id()).await.unwrap();
    let claim = ClaimRequest { project_id: Some(p.id), ..Default::default() };
    assert!(fx.board.claim(&bot, claim).await.unwrap().is_some());
}
