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
//! With several boards, each follows the event stream while the creations
//! run, and the lag of an event is how long after the first board
//! published it (the one that committed it, at its commit) another did:
//! the wake-up by notification, the read of the events table below the
//! mark, the publish.
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
use tokio::sync::{Semaphore, watch};
use uuid::Uuid;

struct Figures {
    creations_per_s: f64,
    /// Every board reads every task once: reads from the store.
    first_reads_per_s: f64,
    /// Then random reads: the path of a busy board (its caches).
    reads_per_s: f64,
    /// Median of title searches, one at a time.
    search_ms: f64,
    /// With several boards, while the creations run: how long after the
    /// first board published an event the others did, median and p99.
    lag_ms: Option<(f64, f64)>,
    /// What the writers did during the creations, summed over the boards.
    writer: Writer,
}

/// Sums of the writers' metrics over boards, at one moment.
#[derive(Default, Clone, Copy)]
struct Writer {
    batches: f64,
    operations: f64,
    batch_s: f64,
    lock_s: f64,
    commit_s: f64,
    reads: f64,
    read_s: f64,
    write_s: f64,
}

impl Writer {
    fn of(boards: &[Board]) -> Writer {
        let mut w = Writer::default();
        for m in boards.iter().filter_map(Board::writer_metrics) {
            w.batches += m.batch_operations.count() as f64;
            w.operations += m.batch_operations.sum();
            w.batch_s += m.batch_seconds.sum();
            w.lock_s += m.lock_seconds.sum();
            w.commit_s += m.commit_seconds.sum();
            w.reads += m.read_round_trips.load(std::sync::atomic::Ordering::Relaxed) as f64;
            w.read_s += m.read_seconds.sum();
            w.write_s += m.write_seconds.sum();
        }
        w
    }

    fn since(self, before: Writer) -> Writer {
        Writer {
            batches: self.batches - before.batches,
            operations: self.operations - before.operations,
            batch_s: self.batch_s - before.batch_s,
            lock_s: self.lock_s - before.lock_s,
            commit_s: self.commit_s - before.commit_s,
            reads: self.reads - before.reads,
            read_s: self.read_s - before.read_s,
            write_s: self.write_s - before.write_s,
        }
    }
}

/// Follows the stream of `board` from now on, noting when each seq
/// arrives, until `stop` is told; resumes with `since` if it falls behind.
fn follow(board: Board, mut stop: watch::Receiver<bool>) -> tokio::task::JoinHandle<Vec<(u64, Instant)>> {
    let mut sub = board.subscribe(None);
    tokio::spawn(async move {
        let mut seen = Vec::new();
        loop {
            tokio::select! {
                next = sub.next() => match next {
                    Ok(event) => seen.push((event.seq, Instant::now())),
                    Err(_) => sub = board.subscribe(Some(sub.position())),
                },
                _ = stop.wait_for(|stopped| *stopped) => return seen,
            }
        }
    })
}

/// The lag of each event on the boards that did not publish it first,
/// in milliseconds: median and p99.
fn lag(arrivals: &[Vec<(u64, Instant)>]) -> (f64, f64) {
    let mut first: std::collections::HashMap<u64, Instant> = Default::default();
    for (seq, at) in arrivals.iter().flatten() {
        first.entry(*seq).and_modify(|f| *f = (*f).min(*at)).or_insert(*at);
    }
    let mut lags: Vec<f64> = arrivals
        .iter()
        .flatten()
        .map(|(seq, at)| at.duration_since(first[seq]).as_secs_f64() * 1000.0)
        .filter(|ms| *ms > 0.0)
        .collect();
    lags.sort_by(f64::total_cmp);
    let at = |q: f64| lags.get(((lags.len() as f64 * q) as usize).min(lags.len().saturating_sub(1))).copied();
    (at(0.5).unwrap_or(0.0), at(0.99).unwrap_or(0.0))
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
    let (stop, stopped) = watch::channel(false);
    let followers: Vec<_> = if boards.len() > 1 {
        boards.iter().map(|b| follow(b.clone(), stopped.clone())).collect()
    } else {
        vec![]
    };
    let before = Writer::of(&boards);
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
    let writer = Writer::of(&boards).since(before);
    let lag_ms = if followers.is_empty() {
        None
    } else {
        // Every board publishes the last creation's event.
        let newest = boards.iter().map(Board::latest_seq).max().unwrap();
        for b in &boards {
            let mut sub = b.subscribe(Some(newest - 1));
            tokio::time::timeout(Duration::from_secs(10), sub.next()).await.unwrap().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.send_replace(true);
        let mut arrivals = Vec::new();
        for f in followers {
            arrivals.push(f.await.unwrap());
        }
        Some(lag(&arrivals))
    };
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
    Figures {
        creations_per_s,
        first_reads_per_s,
        reads_per_s,
        search_ms: searches[SEARCHES / 2],
        lag_ms,
        writer,
    }
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
        "{:<22} {:>12} {:>6} {:>13} {:>6} {:>12} {:>6} {:>14} {:>6} {:>18}",
        "store",
        "creations/s",
        "ratio",
        "first reads/s",
        "ratio",
        "reads/s",
        "ratio",
        "search ms",
        "ratio",
        "event lag p50/p99"
    );
    for (name, f) in &rows {
        println!(
            "{:<22} {:>12.0} {:>6.2} {:>13.0} {:>6.2} {:>12.0} {:>6.2} {:>14.2} {:>6.2} {:>18}",
            name,
            f.creations_per_s,
            f.creations_per_s / base.creations_per_s,
            f.first_reads_per_s,
            f.first_reads_per_s / base.first_reads_per_s,
            f.reads_per_s,
            f.reads_per_s / base.reads_per_s,
            f.search_ms,
            f.search_ms / base.search_ms,
            f.lag_ms.map_or("-".to_string(), |(p50, p99)| format!("{p50:.1}/{p99:.1} ms"))
        );
    }
    println!();
    println!("the writers during the creations (PostgreSQL: summed over the boards; means per batch)");
    println!(
        "{:<22} {:>8} {:>10} {:>9} {:>14} {:>6} {:>9} {:>9} {:>10}",
        "store",
        "batches",
        "ops/batch",
        "batch ms",
        "lock wait ms",
        "reads",
        "read ms",
        "write ms",
        "commit ms"
    );
    for (name, f) in rows.iter().skip(1) {
        let w = f.writer;
        let per = |x: f64| x / w.batches.max(1.0);
        println!(
            "{:<22} {:>8.0} {:>10.1} {:>9.2} {:>14.2} {:>6.1} {:>9.2} {:>9.2} {:>10.2}",
            name,
            w.batches,
            per(w.operations),
            per(w.batch_s) * 1000.0,
            per(w.lock_s) * 1000.0,
            per(w.reads),
            per(w.read_s) * 1000.0,
            per(w.write_s) * 1000.0,
            per(w.commit_s) * 1000.0
        );
    }
}
