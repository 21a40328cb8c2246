//! Idempotency keys: replay, mismatch, in-flight, storage with the
//! change, sweeping.

use std::time::Duration;

use taskboard_core::api::{self, Call, Caller, CreateTask, ProjectIdQuery};
use taskboard_core::board::{Clock, IdempotencyKey, Idempotent};
use taskboard_core::{BoardOptions, ErrorKind};

use taskboard_core::Perform;

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
    let p = fx.performer().find_project("web").await?;
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
    let tasks =
        fx.board.list_tasks(taskboard_core::api::TaskFilter { project_id: Some(p.id), ..Default::default() });
    assert_eq!(tasks.await.unwrap().len(), 1);
    assert_eq!(kind(create(&fx, &caller, "k", "other").await.map(|_| ())), ErrorKind::Validation);
    assert_eq!(kind(IdempotencyKey::new("", "POST", "/", b"")), ErrorKind::Validation);
    assert_eq!(kind(IdempotencyKey::new("with space", "POST", "/", b"")), ErrorKind::Validation);
}

#[tokio::test]
async fn a_repeat_while_the_first_runs_is_a_conflict() {
    let fx = board().await;
    let begin = || fx.board.begin(fx.owner.clone(), None, Some(key("k", b"")), 201);
    let Idempotent::Fresh(first) = begin().await.unwrap() else { panic!("nothing stored yet") };
    assert_eq!(kind(begin().await.map(|_| ())), ErrorKind::Conflict);
    // The first ends having written nothing and answered nothing.
    first.finish(None).await.unwrap();
    // Once the first is over, the key is free again (it stored nothing).
    assert!(matches!(begin().await.unwrap(), Idempotent::Fresh(_)));
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
/// stored afterwards (`finish` is given no answer), a repeat still
/// replays it, in the form the written value's type gives it.
#[tokio::test]
async fn the_answer_is_stored_by_the_write_that_makes_the_change() {
    let fx = board().await;
    let p = fx.project("web").await;
    let begin = || fx.board.begin(fx.owner.clone(), None, Some(key("k", b"x")), 201);
    let Idempotent::Fresh(session) = begin().await.unwrap() else { panic!("performed now") };
    let task = fx.board.create_task(session.actor(), p.id, new_task("once")).await.unwrap();
    session.finish(None).await.unwrap();
    match begin().await.unwrap() {
        Idempotent::Replayed { status, body } => {
            assert_eq!(status, 201);
            assert_eq!(body, serde_json::to_vec(&task).unwrap());
        }
        Idempotent::Fresh(_) => panic!("the answer was not stored with the change"),
    }
}

const CRASH_DIR: &str = "TASKBOARD_TEST_IDEMPOTENCY_CRASH_DIR";
const CRASH_OWNER: &str = "TASKBOARD_TEST_IDEMPOTENCY_CRASH_OWNER";
const ACKS_BEFORE_ABORT: usize = 200;

/// A child process (this test binary, re-executed) makes idempotent
/// creations from 8 writers, prints each key before sending it and its
/// answer once acknowledged, and aborts mid-stream. Reopened, the board
/// replays every acknowledged answer byte for byte, and a retry of every
/// key sent (acknowledged or not) leaves exactly one task per key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_crash_every_acknowledged_key_replays_and_no_write_happens_twice() {
    if let Ok(dir) = std::env::var(CRASH_DIR) {
        return crash_child(dir).await;
    }
    let fx = board_on_disk().await;
    fx.project("web").await;
    let Fx { board, owner, dir, .. } = fx;
    drop(board);
    let dir = dir.unwrap();
    let name = format!(
        "{}::after_a_crash_every_acknowledged_key_replays_and_no_write_happens_twice",
        module_path!().split_once("::").unwrap().1
    );
    let (exe, path) = (std::env::current_exe().unwrap(), dir.path().to_path_buf());
    let owner_id = owner.id().to_string();
    let child = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .args(["--exact", &name, "--nocapture", "--test-threads=1"])
            .env(CRASH_DIR, path)
            .env(CRASH_OWNER, owner_id)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(!child.status.success(), "the child must die by abort");
    let mut sent = Vec::new();
    let mut acked = Vec::new();
    for line in stdout.lines() {
        if let Some(at) = line.find("SEND ") {
            sent.push(line[at + 5..].trim().to_string());
        } else if let Some(at) = line.find("ACK ") {
            let (key, body) = line[at + 4..].split_once(' ').unwrap();
            acked.push((key.to_string(), body.to_string()));
        }
    }
    assert!(acked.len() >= ACKS_BEFORE_ABORT, "only {} acks", acked.len());

    let board = taskboard_core::Board::open(dir.path(), BoardOptions::default()).await.unwrap();
    let owner = board.actor(owner.id()).await.unwrap();
    let fx = Fx { board, owner, dir: Some(dir), _blobs: None };
    let caller = Caller::member(fx.owner.clone());
    for (key, body) in &acked {
        match create(&fx, &caller, key, key).await.unwrap() {
            Idempotent::Replayed { body: stored, .. } => assert_eq!(stored, body.as_bytes(), "{key}"),
            Idempotent::Fresh(_) => panic!("acknowledged key {key} lost its answer"),
        }
    }
    for key in &sent {
        create(&fx, &caller, key, key).await.unwrap();
    }
    let p = fx.performer().find_project("web").await.unwrap();
    let filter = taskboard_core::api::TaskFilter { project_id: Some(p.id), ..Default::default() };
    let tasks = fx.board.list_tasks(filter).await.unwrap();
    let mut titles: Vec<String> = tasks.into_iter().map(|t| t.title).collect();
    titles.sort();
    let mut expected = sent.clone();
    expected.sort();
    assert_eq!(titles, expected, "one task per key sent, none twice");
}

async fn crash_child(dir: String) {
    use std::io::Write;
    let board = taskboard_core::Board::open(&dir, BoardOptions::default()).await.unwrap();
    let owner: uuid::Uuid = std::env::var(CRASH_OWNER).unwrap().parse().unwrap();
    let fx = Fx { owner: board.actor(owner).await.unwrap(), board, dir: None, _blobs: None };
    let fx = std::sync::Arc::new(fx);
    let acks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..8 {
        let (fx, acks) = (fx.clone(), acks.clone());
        writers.spawn(async move {
            let caller = Caller::member(fx.owner.clone());
            for i in 0.. {
                let key = format!("w{w}-{i}");
                let line = |text: String| {
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "{text}").unwrap();
                    out.flush().unwrap();
                };
                line(format!("SEND {key}"));
                let (_, body) = json(create(&fx, &caller, &key, &key).await.unwrap());
                line(format!("ACK {key} {}", std::str::from_utf8(&body).unwrap()));
                if acks.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 >= ACKS_BEFORE_ABORT {
                    std::process::abort();
                }
            }
        });
    }
    writers.join_all().await;
    unreachable!("the child aborts");
}
