//! Conditional writes (`If-Match`) checked inside the transaction of the
//! change, answers wrapping a write's result stored with that write, and
//! the order of steps.

use taskboard_core::api::Patch;
use taskboard_core::api::{
    self, Call, Caller, Encoded, Handle, RegenerateToken, SetMyStatus, StepPatch, TaskPatch, UpdateStep,
    UpdateTask,
};
use taskboard_core::board::{IdempotencyKey, Idempotent, IfMatch};
use taskboard_core::model::{MemberStatus, Step};
use taskboard_core::{Actor, Board, ErrorKind};

use crate::support::*;

/// Performs `call` (a PATCH or DELETE of `E`) for `actor` on the
/// condition that the resource's current entity tag is listed in `list`,
/// begun and finished on the board as `api::perform` does: `call` is
/// given the actor carrying the condition.
async fn if_match<E: Handle, T, F>(
    board: &Board,
    actor: Actor,
    path: E::Path,
    list: &str,
    call: impl FnOnce(Actor) -> F,
) -> taskboard_core::Result<T>
where
    F: Future<Output = taskboard_core::Result<T>>,
{
    let resource = E::resource(path).expect("a conditional endpoint");
    let if_match = IfMatch { list: list.to_string(), resource };
    let Idempotent::Fresh(session) = board.begin(actor, Some(if_match), None, E::INFO.status).await? else {
        panic!("no key, nothing to replay")
    };
    let value = call(session.actor().clone()).await?;
    session.finish(None).await?;
    Ok(value)
}

fn retitle(t: &str) -> TaskPatch {
    TaskPatch { title: Patch::Value(title(t)), ..Default::default() }
}

async fn task_tag(fx: &Fx, id: uuid::Uuid) -> String {
    let (json, tag) = fx.board.get_task_json(&fx.owner, id).await.unwrap();
    // The tag kept beside the rendered task is the tag of its JSON.
    assert_eq!(*tag, api::etag(json.as_bytes()));
    tag.to_string()
}

/// A change made by someone else after the request began, but before its
/// write, fails the condition: it is read by the write itself.
#[tokio::test]
async fn if_match_is_checked_by_the_write_not_before_it() {
    let fx = board().await;
    let b = &fx.board;
    let p = fx.project("web").await;
    let t = fx.task(&p, "first").await;
    let tag = task_tag(&fx, t.id).await;
    let (board, owner) = (fx.board.clone(), fx.owner.clone());
    let call = |actor: Actor| async move {
        // Another request, outside this one's condition, lands first.
        let other = tokio::spawn(async move { board.update_task(&owner, t.id, retitle("theirs")).await });
        other.await.unwrap()?;
        b.update_task(&actor, t.id, retitle("mine")).await
    };
    let refused = if_match::<UpdateTask, _, _>(&fx.board, fx.owner.clone(), t.id, &tag, call).await;
    assert_eq!(kind(refused), ErrorKind::PreconditionFailed);
    assert_eq!(fx.get(t.id).await.title, "theirs", "the conditional write changed nothing");

    let tag = task_tag(&fx, t.id).await;
    let done = if_match::<UpdateTask, _, _>(&fx.board, fx.owner.clone(), t.id, &tag, |a| async move {
        b.update_task(&a, t.id, retitle("mine")).await
    })
    .await
    .unwrap();
    assert_eq!(done.title, "mine");
    // Listing several tags, or `*`, is as HTTP has it.
    let tag = task_tag(&fx, t.id).await;
    let list = format!("\"other\", {tag}");
    let again = |a: Actor| async move { b.update_task(&a, t.id, retitle("again")).await };
    if_match::<UpdateTask, _, _>(&fx.board, fx.owner.clone(), t.id, &list, again).await.unwrap();
    let any = |a: Actor| async move { b.update_task(&a, t.id, retitle("any")).await };
    if_match::<UpdateTask, _, _>(&fx.board, fx.owner.clone(), t.id, "*", any).await.unwrap();
}

#[tokio::test]
async fn a_call_that_writes_nothing_still_answers_to_its_condition() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "same").await;
    let nothing = |_: Actor| async { Ok(()) };
    let refused = if_match::<UpdateTask, _, _>(&fx.board, fx.owner.clone(), t.id, "\"stale\"", nothing).await;
    assert_eq!(kind(refused), ErrorKind::PreconditionFailed);
    let tag = task_tag(&fx, t.id).await;
    if_match::<UpdateTask, _, _>(&fx.board, fx.owner.clone(), t.id, &tag, nothing).await.unwrap();
}

#[tokio::test]
async fn steps_are_conditional_on_their_own_tag() {
    let fx = board().await;
    let b = &fx.board;
    let p = fx.project("web").await;
    let t = fx.task(&p, "with a step").await;
    let s = fx.board.create_step(&fx.owner, t.id, title("one")).await.unwrap();
    let tag = api::etag(&serde_json::to_vec(&s).unwrap());
    let tick = StepPatch { done: Patch::Value(true), ..Default::default() };
    let ticked = fx.board.update_step(&fx.owner, t.id, s.id, tick.clone()).await.unwrap();
    let call = |a: Actor| async move { b.update_step(&a, t.id, s.id, StepPatch::default()).await };
    let refused = if_match::<UpdateStep, _, _>(&fx.board, fx.owner.clone(), (t.id, s.id), &tag, call).await;
    assert_eq!(kind(refused), ErrorKind::PreconditionFailed, "the step changed since that tag");
    let tag = api::etag(&serde_json::to_vec(&ticked).unwrap());
    let call = |a: Actor| async move {
        b.update_step(&a, t.id, s.id, StepPatch { title: Patch::Value(title("1")), ..tick }).await
    };
    let done = if_match::<UpdateStep, _, _>(&fx.board, fx.owner.clone(), (t.id, s.id), &tag, call).await;
    assert_eq!(done.unwrap().title, "1");
}

fn key(k: &str, method: &str, path: &str) -> IdempotencyKey {
    IdempotencyKey::new(k, method, path, b"").unwrap()
}

async fn idempotent<E: Handle>(
    fx: &Fx,
    caller: &Caller,
    k: &IdempotencyKey,
    call: Call<E>,
) -> (bool, bytes::Bytes) {
    match api::call_idempotent::<E>(&fx.board, caller, k.clone(), call).await.unwrap() {
        Idempotent::Fresh(Encoded::Json(b)) => (false, b),
        Idempotent::Replayed { body, .. } => (true, body),
        _ => panic!("a JSON answer"),
    }
}

/// `{"token": …}` and `{"status": …}` wrap what the write returns; they
/// are stored by that write (a debug build refuses an answer stored by a
/// write of its own after a change), and replayed without a second change.
#[tokio::test]
async fn wrapped_answers_are_stored_with_their_change() {
    let fx = board().await;
    let (bot, _) = fx.agent_with("bot", Default::default()).await;
    let owner = Caller::member(fx.owner.clone());
    let k = key("tok", "POST", "/api/v1/members/x/regenerate-token");
    let (replayed, first) = idempotent::<RegenerateToken>(&fx, &owner, &k, Call::new(bot.id(), (), ())).await;
    assert!(!replayed);
    let (replayed, again) = idempotent::<RegenerateToken>(&fx, &owner, &k, Call::new(bot.id(), (), ())).await;
    assert!(replayed);
    assert_eq!(first, again);
    let token: serde_json::Value = serde_json::from_slice(&first).unwrap();
    let actor = fx.board.authenticate(token["token"].as_str().unwrap()).await.unwrap();
    assert_eq!(actor.id(), bot.id(), "the token of the first answer is the one in force");

    let as_bot = Caller::member(bot.clone());
    let k = key("st", "PATCH", "/api/v1/members/me/status?status=busy");
    let query = || serde_json::from_value(serde_json::json!({"status": "busy"})).unwrap();
    let (_, first) = idempotent::<SetMyStatus>(&fx, &as_bot, &k, Call::new((), query(), ())).await;
    let (replayed, again) = idempotent::<SetMyStatus>(&fx, &as_bot, &k, Call::new((), query(), ())).await;
    assert!(replayed);
    assert_eq!(first, again);
    assert_eq!(fx.board.get_member(bot.id()).await.unwrap().status, MemberStatus::Busy);
}

#[tokio::test]
async fn a_step_moved_to_a_position_renumbers_the_checklist() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "steps").await;
    let mut ids = Vec::new();
    for s in ["a", "b", "c"] {
        ids.push(fx.board.create_step(&fx.owner, t.id, title(s)).await.unwrap().id);
    }
    let mut sub = fx.board.subscribe(None);
    drain(&mut sub);
    let to = |n: i64| StepPatch { position: Patch::Value(n), ..Default::default() };
    let moved = fx.board.update_step(&fx.owner, t.id, ids[2], to(1)).await.unwrap();
    assert_eq!(moved.position, 1);
    let order = |steps: Vec<Step>| -> Vec<(String, i64)> {
        steps.into_iter().map(|s| (s.title, s.position)).collect()
    };
    let listed = fx.board.list_steps(t.id).await.unwrap();
    assert_eq!(order(listed), [("c".into(), 1), ("a".into(), 2), ("b".into(), 3)]);
    assert_eq!(kinds(&drain(&mut sub)), ["step.updated"; 3], "every step whose place changed");
    // Where it already is: nothing changes, nothing is emitted.
    fx.board.update_step(&fx.owner, t.id, ids[2], to(1)).await.unwrap();
    assert!(drain(&mut sub).is_empty());
    fx.board.update_step(&fx.owner, t.id, ids[2], to(40)).await.unwrap();
    let listed = fx.board.list_steps(t.id).await.unwrap();
    assert_eq!(order(listed), [("a".into(), 1), ("b".into(), 2), ("c".into(), 3)]);
    assert_eq!(kind(fx.board.update_step(&fx.owner, t.id, ids[0], to(0)).await), ErrorKind::Validation);
    assert_eq!(fx.get(t.id).await.steps.iter().map(|s| s.title.as_str()).collect::<String>(), "abc");
}
