//! Benchmarks of the board (issue 2, "Tests and proof").
//!
//! `cargo bench -p taskboard-core --bench board` (or `bench/core.sh`).
//!
//! - durable task creation on a file-backed board with 1 and with 64
//!   concurrent writers (throughput: group commit should make 64 writers
//!   several times faster than one, which pays one fsync per write);
//! - get a task by id;
//! - list a project's tasks filtered by status, and the last 50 messages of
//!   a chat, on a board of 100,000 tasks and a chat of 100,000 messages, and
//!   on one ten times smaller. Both answers have the same size, so the two
//!   figures should be close: reads are served by indexes and cost what the
//!   answer costs, not what the database holds.
//!
//! The boards are seeded once per run, in a temporary directory on the
//! same disk as the target directory, by many concurrent writers so that
//! group commit batches the seeding.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use taskboard_core::api::{MessageFilter, NewMessage, NewProject, NewTask, TaskFilter};
use taskboard_core::model::{Project, TaskStatus};
use taskboard_core::validate::{Name, Password, Slug, Title};
use taskboard_core::{Actor, Board, BoardOptions};
use tokio::runtime::Runtime;
use uuid::Uuid;

/// Tasks of a project listed by the status filter, on both boards.
const LISTED: usize = 50;
/// Projects sharing the board's tasks.
const PROJECTS: usize = 10;
/// Concurrent writers used for seeding.
const SEEDERS: usize = 64;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

/// A scratch directory on the disk that holds the target directory, so
/// that fsync costs what it costs on a real data directory (a tmpfs
/// /tmp would make "durable" free).
fn scratch() -> tempfile::TempDir {
    let base = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    std::fs::create_dir_all(&base).unwrap();
    tempfile::Builder::new().prefix("taskboard-bench-").tempdir_in(base).unwrap()
}

struct Fixture {
    board: Board,
    owner: Actor,
    /// The project whose todo tasks are listed.
    project: Project,
    /// The project whose chat holds the messages.
    chat: Uuid,
    task: Uuid,
    _dir: tempfile::TempDir,
}

async fn open_board() -> (Board, Actor, tempfile::TempDir) {
    let dir = scratch();
    let board = Board::open(dir.path(), BoardOptions::default()).await.unwrap();
    let boot = board
        .bootstrap_owner(Slug::new("owner").unwrap(), Some(Password::new("bench-password").unwrap()))
        .await
        .unwrap()
        .unwrap();
    let owner = board.actor(boot.owner.id).await.unwrap();
    (board, owner, dir)
}

async fn project(board: &Board, owner: &Actor, slug: &str) -> Project {
    let new = NewProject {
        name: Name::new(slug).unwrap(),
        slug: Slug::new(slug).unwrap(),
        description: None,
        repo_urls: Vec::new(),
        auto_assign: false,
    };
    board.create_project(owner, new).await.unwrap()
}

/// Runs `total` jobs over `writers` concurrent tasks.
async fn concurrently<F, Fut>(total: usize, writers: usize, job: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let job = Arc::new(job);
    let mut set = tokio::task::JoinSet::new();
    for w in 0..writers {
        let job = job.clone();
        set.spawn(async move {
            let mut i = w;
            while i < total {
                job(i).await;
                i += writers;
            }
        });
    }
    set.join_all().await;
}

/// A board of `tasks` tasks over [`PROJECTS`] projects, each with exactly
/// [`LISTED`] todo tasks, and a chat of `messages` messages.
async fn seed(tasks: usize, messages: usize) -> Fixture {
    let started = Instant::now();
    let (board, owner, dir) = open_board().await;
    let mut projects = Vec::new();
    for p in 0..PROJECTS {
        projects.push(project(&board, &owner, &format!("p{p}")).await);
    }
    let talk = project(&board, &owner, "talk").await;
    let per_project = tasks / PROJECTS;
    let every = per_project / LISTED;
    {
        let (board, owner, ids) =
            (board.clone(), owner.clone(), projects.iter().map(|p| p.id).collect::<Vec<_>>());
        concurrently(tasks, SEEDERS, move |i| {
            let (board, owner) = (board.clone(), owner.clone());
            let project = ids[i % PROJECTS];
            let n = i / PROJECTS;
            async move {
                let status = if n.is_multiple_of(every) { TaskStatus::Todo } else { TaskStatus::Backlog };
                let new = NewTask { status, ..NewTask::titled(Title::new(format!("task {i}")).unwrap()) };
                board.create_task(&owner, project, new).await.unwrap();
            }
        })
        .await;
    }
    {
        let (board, owner, chat) = (board.clone(), owner.clone(), talk.chat_id);
        concurrently(messages, SEEDERS, move |i| {
            let (board, owner) = (board.clone(), owner.clone());
            async move {
                let m = NewMessage { chat_id: chat, content: format!("message {i}"), ..Default::default() };
                board.post_message(&owner, m).await.unwrap();
            }
        })
        .await;
    }
    let project = projects.swap_remove(0);
    let filter =
        TaskFilter { project_id: Some(project.id), status: Some(TaskStatus::Todo), ..Default::default() };
    let listed = board.list_tasks(filter).await.unwrap();
    assert_eq!(listed.len(), LISTED);
    let task = listed[0].id;
    eprintln!("seeded {tasks} tasks and {messages} messages in {:.1?}", started.elapsed());
    Fixture { board, owner, project, chat: talk.chat_id.unwrap(), task, _dir: dir }
}

fn durable_creation(c: &mut Criterion) {
    let rt = runtime();
    let (board, owner, _dir) = rt.block_on(open_board());
    let project_id = rt.block_on(project(&board, &owner, "writes")).id;
    let mut group = c.benchmark_group("create_task_durable");
    group.throughput(Throughput::Elements(1)).sample_size(10).measurement_time(Duration::from_secs(6));
    for writers in [1usize, 64] {
        group.bench_function(BenchmarkId::new("writers", writers), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let (board, owner) = (board.clone(), owner.clone());
                async move {
                    let start = Instant::now();
                    concurrently(iters as usize, writers, move |i| {
                        let (board, owner) = (board.clone(), owner.clone());
                        async move {
                            let new = NewTask::titled(Title::new(format!("t{i}")).unwrap());
                            board.create_task(&owner, project_id, new).await.unwrap();
                        }
                    })
                    .await;
                    start.elapsed()
                }
            })
        });
    }
    group.finish();
}

fn reads(c: &mut Criterion) {
    let rt = runtime();
    let small = rt.block_on(seed(10_000, 10_000));
    let large = rt.block_on(seed(100_000, 100_000));

    let mut group = c.benchmark_group("get_task");
    group.sample_size(20).measurement_time(Duration::from_secs(3));
    group.bench_function("by_id", |b| {
        b.to_async(&rt).iter(|| async { large.board.get_task(&large.owner, large.task).await.unwrap() })
    });
    group.finish();

    let mut group = c.benchmark_group("list_tasks_by_status");
    group.sample_size(20).measurement_time(Duration::from_secs(4));
    for (size, fx) in [("10k", &small), ("100k", &large)] {
        let filter = TaskFilter {
            project_id: Some(fx.project.id),
            status: Some(TaskStatus::Todo),
            ..Default::default()
        };
        group.bench_function(BenchmarkId::new("board", size), |b| {
            b.to_async(&rt).iter(|| async {
                let tasks = fx.board.list_tasks(filter.clone()).await.unwrap();
                assert_eq!(tasks.len(), LISTED);
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("last_50_messages");
    group.sample_size(20).measurement_time(Duration::from_secs(4));
    for (size, fx) in [("10k", &small), ("100k", &large)] {
        let filter = MessageFilter { chat_id: Some(fx.chat), limit: Some(50), ..Default::default() };
        group.bench_function(BenchmarkId::new("chat", size), |b| {
            b.to_async(&rt).iter(|| async {
                let messages = fx.board.list_messages(filter.clone()).await.unwrap();
                assert_eq!(messages.len(), 50);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, durable_creation, reads);
criterion_main!(benches);
