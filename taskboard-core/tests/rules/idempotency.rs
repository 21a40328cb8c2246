//! Idempotency keys: replay, mismatch, in-flight, storage with the
//! change, sweeping.

use std::time::Duration;

use taskboard_core::api::{self, Call, Caller, CreateTask, ProjectIdQuery};
use taskboard_core::board::{Clock, IdempotencyKey, Idempotent};
use taskboard_core::{BoardOptions, ErrorKind};

use crate::support::*;

fn key(k: &str, body: &[u8]) -> IdempotencyKey {
    IdempotencyKey::new(k, "POST", "/api/v1/tasks", body).unwrap()
}

async fn create(
    fx: &Fx,
    caller: &Caller,
    k: &str,
    title: &str,
) -> taskboard_core::Result<Idempotent<api::Encoded>> {
    let p = fx.board.find_project(&fx.owner, "web").await?;
    let call = Call::<CreateTask>::new((), ProjectIdQuery { project_id: p.id }, new_task(title));
    api::call_idempotent::<CreateTask>(&fx.board, caller, key(k, title.as_bytes()), call).await
}

fn json(answer: Idempotent<api::Encoded>) -> (bool, bytes::Bytes) {
    match answer {
        Idempotent::Fresh(api::Encoded::Json(b)) => (false, b),
        Idempotent::Replayed { status, body } => {
            assert_eq!(status, 201);
            (true, body)
        }
        _ => panic!("a JSON answer"),
    }
}

#[tokio::test]
async fn a_repeat_replays_the_stored_answer_and_changes_nothing() {
    let fx = board().await;
    let p = fx.project("web").await;
    let caller = Caller::member(fx.owner.clone());
    let (replayed, first) = json(create(&fx, &caller, "k", "once").await.unwrap());
    assert!(!replayed);
    let (replayed, again) = json(create(&fx, &caller, "k", "once").await.unwrap());
    assert!(replayed);
    assert_eq!(first, again);
    let tasks = fx.board.list_tasks(
        &fx.owner,
        taskboard_core::api::TaskFilter { project_id: Some(p.id), ..Default::default() },
    );
    assert_eq!(tasks.await.unwrap().len(), 1);
    assert_eq!(kind(create(&fx, &caller, "k", "other").await.map(|_| ())), ErrorKind::Validation);
    assert_eq!(kind(IdempotencyKey::new("", "POST", "/", b"")), ErrorKind::Validation);
    assert_eq!(kind(IdempotencyKey::new("with space", "POST", "/", b"")), ErrorKind::Validation);
}

#[tokio::test]
async fn a_repeat_while_the_first_runs_is_a_conflict() {
    let fx = board().await;
    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
    let (finish, finish_rx) = tokio::sync::oneshot::channel::<()>();
    let board = fx.board.clone();
    let member = fx.owner.id();
    let none = || -> taskboard_core::board::AnswerOf { Box::new(|_| None) };
    let first_answer = none();
    let first = tokio::spawn(async move {
        let run = async move {
            started_tx.send(()).unwrap();
            finish_rx.await.ok();
            Ok(())
        };
        board.idempotent(member, key("k", b""), first_answer, |_: &()| None, run).await.map(|_| ())
    });
    started.await.unwrap();
    let second = fx.board.idempotent(member, key("k", b""), none(), |_: &()| None, async { Ok(()) }).await;
    assert_eq!(kind(second.map(|_| ())), ErrorKind::Conflict);
    finish.send(()).unwrap();
    first.await.unwrap().unwrap();
    // Once the first is over, the key is free again (it stored nothing).
    let third = fx.board.idempotent(member, key("k", b""), none(), |_: &()| None, async { Ok(()) }).await;
    assert!(third.is_ok());
}

#[tokio::test]
async fn stored_answers_survive_a_restart_and_are_swept_after_a_day() {
    let clock = Clock::manual();
    let fx = board_on_disk_with(BoardOptions { clock: clock.clone(), ..Default::default() }).await;
    fx.project("web").await;
    let caller = Caller::member(fx.owner.clone());
    let (_, first) = json(create(&fx, &caller, "k", "once").await.unwrap());
    let fx = fx.reopen().await;
    let caller = Caller::member(fx.owner.clone());
    let (replayed, again) = json(create(&fx, &caller, "k", "once").await.unwrap());
    assert!(replayed, "stored in the board, not in memory");
    assert_eq!(first, again);
    clock.advance(Duration::from_secs(23 * 3600));
    assert_eq!(fx.board.sweep_idempotency().await.unwrap(), 0);
    clock.advance(Duration::from_secs(2 * 3600));
    assert_eq!(fx.board.sweep_idempotency().await.unwrap(), 1);
    let (replayed, _) = json(create(&fx, &caller, "k", "once").await.unwrap());
    assert!(!replayed, "after the sweep the key is new");
}

/// The answer is written by the change's own transaction: with nothing
/// stored afterwards (`finish` gives nothing), a repeat still replays it.
#[tokio::test]
async fn the_answer_is_stored_by_the_write_that_makes_the_change() {
    let fx = board().await;
    let p = fx.project("web").await;
    let member = fx.owner.id();
    let answer_of = || -> taskboard_core::board::AnswerOf {
        Box::new(|v| {
            v.downcast_ref::<taskboard_core::model::Task>()
                .map(|t| (201, serde_json::to_vec(t).unwrap().into()))
        })
    };
    let run = fx.board.create_task(&fx.owner, p.id, new_task("once"));
    let first = fx.board.idempotent(member, key("k", b"x"), answer_of(), |_| None, run).await.unwrap();
    let Idempotent::Fresh(task) = first else { panic!("performed now") };
    let run = fx.board.create_task(&fx.owner, p.id, new_task("once"));
    match fx.board.idempotent(member, key("k", b"x"), answer_of(), |_| None, run).await.unwrap() {
        Idempotent::Replayed { status, body } => {
            assert_eq!(status, 201);
            assert_eq!(body, serde_json::to_vec(&task).unwrap());
        }
        Idempotent::Fresh(_) => panic!("the answer was not stored with the change"),
    }
}
