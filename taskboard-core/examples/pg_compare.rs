//! Durable task creation and single-task reads through the core, on the
//! embedded store and on PostgreSQL (a throwaway cluster with fsync on,
//! on this machine's disk), in one run, with ratios to the embedded store.
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

use taskboard_core::api::{NewProject, NewTask};
use taskboard_core::storage::postgres::scratch::Scratch;
use taskboard_core::validate::{Name, Password, Slug, Title};
use taskboard_core::{Actor, Board, BoardOptions};
use tokio::sync::Semaphore;
use uuid::Uuid;

struct Figures {
    creations_per_s: f64,
    reads_per_s: f64,
}

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
    let took = run(reads, concurrency, |i| {
        let (board, owner) = on(i);
        let id = ids[(i * 7919) % ids.len()];
        async move {
            board.get_task(&owner, id).await.unwrap();
        }
    })
    .await;
    Figures { creations_per_s, reads_per_s: reads as f64 / took.as_secs_f64() }
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

    let base = (rows[0].1.creations_per_s, rows[0].1.reads_per_s);
    println!("{creations} durable creations and {reads} get_task, {concurrency} at once");
    println!("{:<22} {:>12} {:>7} {:>12} {:>7}", "store", "creations/s", "ratio", "reads/s", "ratio");
    for (name, f) in &rows {
        println!(
            "{:<22} {:>12.0} {:>7.2} {:>12.0} {:>7.2}",
            name,
            f.creations_per_s,
            f.creations_per_s / base.0,
            f.reads_per_s,
            f.reads_per_s / base.1
        );
    }
}
