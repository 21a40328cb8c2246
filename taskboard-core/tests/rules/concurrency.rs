//! Concurrency and durability (DECISIONS 5.2, 5.5; issue 2 "Durable and
//! fast writes"): atomic take, gap-free numbering, and a real crash that
//! keeps every acknowledged write.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use taskboard_core::api::{Page, TaskFilter};
use taskboard_core::{Board, BoardOptions, ErrorKind};
use tokio::sync::Barrier;
use uuid::Uuid;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_eight_concurrent_takes_exactly_one_succeeds() {
    let fx = board_on_disk().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "contested").await;
    let mut agents = Vec::new();
    for i in 0..8 {
        agents.push(fx.agent(&format!("agent-{i}")).await);
    }
    let start = Arc::new(Barrier::new(8));
    let mut takes = tokio::task::JoinSet::new();
    for agent in agents {
        let (board, start) = (fx.board.clone(), start.clone());
        takes.spawn(async move {
            start.wait().await;
            board.take(&agent, t.id).await.map(|task| (agent.id(), task))
        });
    }
    let results = takes.join_all().await;
    let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "exactly one take succeeds");
    let losers: Vec<ErrorKind> = results.iter().filter_map(|r| r.as_ref().err()).map(|e| e.kind()).collect();
    assert_eq!(losers, [ErrorKind::Conflict; 7]);
    let (winner, _) = winners[0];
    let t = fx.get(t.id).await;
    assert_eq!(t.assignee.unwrap().id, *winner);
    assert_eq!(fx.board.task_actions(t.id, Page::default()).await.unwrap().len(), 2, "created, one take");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_creations_are_numbered_1_to_50_without_gap_or_duplicate() {
    let fx = board_on_disk().await;
    let p = fx.project("web").await;
    let start = Arc::new(Barrier::new(50));
    let mut creations = tokio::task::JoinSet::new();
    for i in 0..50 {
        let (board, owner, start) = (fx.board.clone(), fx.owner.clone(), start.clone());
        creations.spawn(async move {
            start.wait().await;
            board.create_task(&owner, p.id, new_task(&format!("task {i}"))).await.unwrap().number
        });
    }
    let mut numbers = creations.join_all().await;
    numbers.sort();
    assert_eq!(numbers, (1..=50).collect::<Vec<u64>>());
    assert_eq!(fx.board.get_project(p.id).await.unwrap().task_counter, 50);
    let listed = fx.board.list_tasks(TaskFilter { project_id: Some(p.id), ..Default::default() }).await;
    assert_eq!(listed.unwrap().len(), 50);
    let keys: BTreeSet<String> =
        fx.board.list_tasks(TaskFilter::default()).await.unwrap().into_iter().map(|t| t.key).collect();
    assert_eq!(keys.len(), 50);
}

/// Environment of the child process of the crash test.
const CRASH_DIR: &str = "TASKBOARD_TEST_CRASH_DIR";
const CRASH_OWNER: &str = "TASKBOARD_TEST_CRASH_OWNER";
const CRASH_PROJECT: &str = "TASKBOARD_TEST_CRASH_PROJECT";
/// Acknowledged writes after which the child aborts, with more in flight.
const ACKS_BEFORE_ABORT: usize = 300;

/// A real crash: this test runs itself again as a child process, which
/// creates tasks from many concurrent writers, prints the id of every
/// creation acknowledged to it, and aborts in the middle of the stream.
/// The parent then reopens the data directory: every acknowledged task
/// is there, numbering has no gap, and events continue the seq.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_keeps_every_acknowledged_write() {
    if let Ok(dir) = std::env::var(CRASH_DIR) {
        return crash_child(dir).await;
    }
    let fx = board_on_disk().await;
    let p = fx.project("web").await;
    let seq_before = fx.board.latest_seq();
    let Fx { board, owner, dir, .. } = fx;
    drop(board);
    let dir = dir.unwrap();

    let name =
        format!("{}::a_crash_keeps_every_acknowledged_write", module_path!().split_once("::").unwrap().1);
    let (exe, path) = (std::env::current_exe().unwrap(), dir.path().to_path_buf());
    let (owner_id, project_id) = (owner.id().to_string(), p.id.to_string());
    let child = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .args(["--exact", &name, "--nocapture", "--test-threads=1"])
            .env(CRASH_DIR, path)
            .env(CRASH_OWNER, owner_id)
            .env(CRASH_PROJECT, project_id)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(!child.status.success(), "the child must die by abort: {stdout}");
    let acked: Vec<(Uuid, u64)> = stdout
        .lines()
        // The first line also holds the harness's "test … … " prefix.
        .filter_map(|l| l.find("ACK ").map(|at| &l[at + 4..]))
        .map(|l| {
            let (id, number) = l.split_once(' ').unwrap();
            (id.parse().unwrap(), number.parse().unwrap())
        })
        .collect();
    assert!(acked.len() >= ACKS_BEFORE_ABORT, "only {} acks: {stdout}", acked.len());

    let board = Board::open(dir.path(), BoardOptions::default()).await.unwrap();
    let owner = board.actor(owner.id()).await.unwrap();
    for (id, number) in &acked {
        let t =
            board.get_task(&owner, *id).await.unwrap_or_else(|e| panic!("acknowledged task {id} lost: {e}"));
        assert_eq!(t.number, *number);
    }
    // Whatever reached the disk is numbered without gap or duplicate, and
    // the counter agrees.
    let all = board.list_tasks(TaskFilter { project_id: Some(p.id), ..Default::default() }).await.unwrap();
    let mut numbers: Vec<u64> = all.iter().map(|t| t.number).collect();
    numbers.sort();
    assert_eq!(numbers, (1..=all.len() as u64).collect::<Vec<_>>());
    let project = board.get_project(p.id).await.unwrap();
    assert_eq!(project.task_counter, all.len() as u64);
    // Events: every stored one is contiguous, and new ones continue.
    let latest = board.latest_seq();
    assert!(latest >= seq_before + acked.len() as u64 * 3, "three events per creation");
    let mut sub = board.subscribe(Some(seq_before));
    assert!(!sub.resync_required);
    let task = board.create_task(&owner, p.id, new_task("after the crash")).await.unwrap();
    assert_eq!(task.number, all.len() as u64 + 1);
    let events = drain(&mut sub);
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (seq_before + 1..=board.latest_seq()).collect::<Vec<_>>()
    );
    assert!(board.latest_seq() > latest);
}

async fn crash_child(dir: String) {
    let board = Board::open(&dir, BoardOptions::default()).await.unwrap();
    let owner: Uuid = std::env::var(CRASH_OWNER).unwrap().parse().unwrap();
    let project: Uuid = std::env::var(CRASH_PROJECT).unwrap().parse().unwrap();
    let owner = board.actor(owner).await.unwrap();
    let acks = Arc::new(AtomicUsize::new(0));
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..16 {
        let (board, owner, acks) = (board.clone(), owner.clone(), acks.clone());
        writers.spawn(async move {
            for i in 0.. {
                let t = board.create_task(&owner, project, new_task(&format!("w{w} #{i}"))).await.unwrap();
                // One write(2) per line, so the parent sees every line
                // printed before the abort.
                let mut out = std::io::stdout().lock();
                writeln!(out, "ACK {} {}", t.id, t.number).unwrap();
                out.flush().unwrap();
                drop(out);
                if acks.fetch_add(1, Ordering::SeqCst) + 1 >= ACKS_BEFORE_ABORT {
                    std::process::abort();
                }
            }
        });
    }
    writers.join_all().await;
    unreachable!("the child aborts");
}
