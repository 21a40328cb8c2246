//! Durable task creation and single-task reads through the core, on the
//! embedded store and on PostgreSQL (a throwaway cluster with fsync on,
//! on this machine's disk), in one run, with ratios to the embedded store.
//!
//! Reads are measured twice: first every board reads every task once (the
//! store's read path, as after a restart), then random reads (the path of
//! a busy board, mostly its caches). Last, title searches one at a time
//! (their median): a search reads the recent titles not yet folded into
//! the index (after 4,000 creations, about as many as it ever holds) as
//! well as the index.
//!
//! `cargo run --release -p taskboard-core --example pg_compare -- [CREATIONS] [READS] [CONCURRENCY]`
//! (defaults: 4,000 creations, 20,000 reads, 64 at once). `bench/postgres.sh`
//! runs it.
//!
//! "postgres, 3 boards" is three boards on one database in this process,
//! each with its own store, connections, writer, listener and caches, as
//! three server processes have; the work is spread over the three. (The
//! server processes themselves are tested in
//! taskboard-server/tests/processes; here the HTTP layer would measure the
//! shared 2-core machine rather than the store.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use taskboard_core::api::{NewProject, NewTask, TaskFilter};
use taskboard_core::validate::{Name, Password, Slug, Title};
use taskboard_core::{Actor, Board, BoardOptions};
use taskboard_pg_scratch::Scratch;
use tokio::sync::Semaphore;
use uuid::Uuid;

struct Figures {
    creations_per_s: f64,
    /// Every board reads every task once: reads from the store.
    first_reads_per_s: f64,
    /// Then random reads: the path of a busy board (its caches).
    reads_per_s: f64,
    /// Median of title searches, one at a time.
    search_ms: f64,
}

/// Title searches per board.
const SEARCHES: usize = 200;

/// Runs `n` jobs, at most `concurrency` at once, round-robin over the
/// boards; returns the elapsed time.
async fn run<F, Fut>(n: usize, concurrency: usize, job: F) -> Duration
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let gate = Arc::new(Semaphore::new(concurrency));
    let started = Instant::now();
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        let permit = gate.clone().acquire_owned().await.unwrap();
        let fut = job(i);
        handles.push(tokio::spawn(async move {
            fut.await;
            drop(permit);
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    started.elapsed()
}

async fn measure(boards: Vec<Board>, creations: usize, reads: usize, concurrency: usize) -> Figures {
    let first = &boards[0];
    first
        .bootstrap_owner(Slug::new("owner").unwrap(), Some(Password::new("bench-password").unwrap()))
        .await
        .unwrap();
    let mut owners: Vec<Actor> = Vec::new();
    for b in &boards {
        owners.push(b.local_actor(Some("owner")).await.unwrap());
    }
    let project = first
        .create_project(
            &owners[0],
            NewProject {
                name: Name::new("Bench").unwrap(),
                slug: Slug::new("bench").unwrap(),
                description: None,
                repo_urls: vec![],
                auto_assign: false,
            },
        )
        .await
        .unwrap();
    let ids = Arc::new(std::sync::Mutex::new(Vec::<Uuid>::new()));
    let on = |i: usize| (boards[i % boards.len()].clone(), owners[i % boards.len()].clone());
    let took = run(creations, concurrency, |i| {
        let (board, owner) = on(i);
        let ids = ids.clone();
        async move {
            let new = NewTask::titled(Title::new(format!("task {i}")).unwrap());
            let t = board.create_task(&owner, project.id, new).await.unwrap();
            ids.lock().unwrap().push(t.id);
        }
    })
    .await;
    let creations_per_s = creations as f64 / took.as_secs_f64();
    let ids = Arc::new(ids.lock().unwrap().clone());
    let once = ids.len() * boards.len();
    let took = run(once, concurrency, |i| {
        let (board, owner) = (boards[i / ids.len()].clone(), owners[i / ids.len()].clone());
        let id = ids[i % ids.len()];
        async move {
            board.get_task(&owner, id).await.unwrap();
        }
    })
    .await;
    let first_reads_per_s = once as f64 / took.as_secs_f64();
    let took = run(reads, concurrency, |i| {
        let (board, owner) = on(i);
        let id = ids[(i * 7919) % ids.len()];
        async move {
            board.get_task(&owner, id).await.unwrap();
        }
    })
    .await;
    let reads_per_s = reads as f64 / took.as_secs_f64();
    let mut searches = Vec::with_capacity(SEARCHES);
    for n in 0..SEARCHES {
        let (board, _owner) = on(n);
        let q = format!("task {}", (n * 7919) % creations);
        let filter = TaskFilter { q: Some(q.clone()), project_id: Some(project.id), ..Default::default() };
        let started = Instant::now();
        let found = board.list_tasks(filter).await.unwrap();
        searches.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(found.iter().any(|t| t.title == q), "{q} is found");
    }
    searches.sort_by(f64::total_cmp);
    Figures { creations_per_s, first_reads_per_s, reads_per_s, search_ms: searches[SEARCHES / 2] }
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let creations: usize = args.next().map_or(4_000, |a| a.parse().expect("CREATIONS"));
    let reads: usize = args.next().map_or(20_000, |a| a.parse().expect("READS"));
    let concurrency: usize = args.next().map_or(64, |a| a.parse().expect("CONCURRENCY"));
    let cluster = Scratch::start_with(true).expect("a throwaway PostgreSQL");
    let mut rows = Vec::new();

    let dir = tempfile::tempdir().unwrap();
    let board = Board::open(dir.path(), BoardOptions::default()).await.unwrap();
    rows.push(("embedded (redb file)", measure(vec![board], creations, reads, concurrency).await));

    let blobs = tempfile::tempdir().unwrap();
    let board =
        Board::open_postgres(&cluster.url("one"), blobs.path(), BoardOptions::default()).await.unwrap();
    rows.push(("postgres, 1 board", measure(vec![board], creations, reads, concurrency).await));

    let url = cluster.url("three");
    let mut boards = Vec::new();
    for _ in 0..3 {
        boards.push(Board::open_postgres(&url, blobs.path(), BoardOptions::default()).await.unwrap());
    }
    rows.push(("postgres, 3 boards", measure(boards, creations, reads, concurrency).await));

    let base = &rows[0].1;
    println!(
        "through the core: {creations} durable creations, every task read once per board, then {reads} get_task; {concurrency} at once; then {SEARCHES} title searches one at a time"
    );
    println!(
        "{:<22} {:>12} {:>6} {:>13} {:>6} {:>12} {:>6} {:>14} {:>6}",
        "store", "creations/s", "ratio", "first reads/s", "ratio", "reads/s", "ratio", "search ms", "ratio"
    );
    for (name, f) in &rows {
        println!(
            "{:<22} {:>12.0} {:>6.2} {:>13.0} {:>6.2} {:>12.0} {:>6.2} {:>14.2} {:>6.2}",
            name,
            f.creations_per_s,
            f.creations_per_s / base.creations_per_s,
            f.first_reads_per_s,
            f.first_reads_per_s / base.first_reads_per_s,
            f.reads_per_s,
            f.reads_per_s / base.reads_per_s,
            f.search_ms,
            f.search_ms / base.search_ms
        );
    }
}
