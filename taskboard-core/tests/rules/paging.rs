//! Lists read what their page needs (docs/rules.md, lists): pages by
//! cursor and by offset, the indexes a filter starts from, the title
//! search, and streamed whole lists. The storage probe counts what the
//! planner reads through the storage trait.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use taskboard_core::api::{CursorKind, NewTask, Page, TaskFilter, encode_cursor};
use taskboard_core::board::{STREAM_CHUNK, STREAM_DEPTH};
use taskboard_core::model::*;
use taskboard_core::storage::redb::RedbStore;
use taskboard_core::storage::{Direction, KeyRange, ReadTxn, Storage, Table, Visitor, WriteOp};
use taskboard_core::{Board, BoardOptions, Error, ErrorKind};

use crate::support::*;

/// The real redb store, counting every record and index entry read
/// through the storage trait (writes pass through uncounted).
struct Counting {
    inner: RedbStore,
    reads: Arc<AtomicUsize>,
}

struct CountingRead<'a> {
    inner: Box<dyn ReadTxn + 'a>,
    reads: Arc<AtomicUsize>,
}

impl ReadTxn for CountingRead<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.get(table, key)
    }
    fn scan(
        &self,
        table: Table,
        range: KeyRange,
        direction: Direction,
        visit: &mut Visitor<'_>,
    ) -> Result<(), Error> {
        let reads = &self.reads;
        self.inner.scan(table, range, direction, &mut |k, v| {
            reads.fetch_add(1, Ordering::Relaxed);
            visit(k, v)
        })
    }
}

impl Storage for Counting {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, Error> {
        Ok(Box::new(CountingRead { inner: self.inner.read()?, reads: self.reads.clone() }))
    }
    fn submit(&self, op: WriteOp) {
        self.inner.submit(op)
    }
    fn backup_to(&self, path: &std::path::Path) -> Result<(), Error> {
        self.inner.backup_to(path)
    }
}

struct Probe {
    fx: Fx,
    reads: Arc<AtomicUsize>,
    _blobs: tempfile::TempDir,
}

impl Probe {
    async fn new() -> Probe {
        let reads = Arc::new(AtomicUsize::new(0));
        let store = Counting { inner: RedbStore::in_memory().unwrap(), reads: reads.clone() };
        let blobs = tempfile::tempdir().unwrap();
        let board = Board::with_storage(Arc::new(store), blobs.path().to_path_buf(), BoardOptions::default())
            .await
            .unwrap();
        let boot = board.bootstrap_owner(slug("owner"), None).await.unwrap().unwrap();
        let owner = board.actor(boot.owner.id).await.unwrap();
        Probe { fx: Fx { board, owner, dir: None, _blobs: None }, reads, _blobs: blobs }
    }

    /// Reads made by one list call, and its answer.
    async fn count(&self, filter: TaskFilter) -> (usize, taskboard_core::api::Paged<Task>) {
        self.reads.store(0, Ordering::Relaxed);
        let page = self.fx.board.list_tasks(&self.fx.owner, filter).await.unwrap();
        (self.reads.load(Ordering::Relaxed), page)
    }
}

/// Creates `n` tasks in batches; every third is in review, every fifth
/// carries the label `hot`, every seventh is assigned to `assignee`.
async fn seed(fx: &Fx, project: &Project, n: usize, assignee: uuid::Uuid) {
    let mut i = 0;
    while i < n {
        let batch: Vec<NewTask> = (i..n.min(i + 2000))
            .map(|i| {
                let mut t = new_task(&format!("Task number {i}"));
                if i % 3 == 0 {
                    t.status = TaskStatus::Review;
                }
                if i % 5 == 0 {
                    t.labels = labels(&["hot"]);
                }
                if i % 7 == 0 {
                    t.assignee_id = Some(assignee);
                }
                t
            })
            .collect();
        i += batch.len();
        fx.board.create_tasks(&fx.owner, project.id, batch).await.unwrap();
    }
}

fn page(limit: u32) -> Page {
    Page { limit: Some(limit), ..Page::default() }
}

#[tokio::test]
async fn a_page_of_a_large_project_reads_what_the_page_needs() {
    const TASKS: usize = 20_000;
    const PAGE: u32 = 50;
    let probe = Probe::new().await;
    let fx = &probe.fx;
    let agent = fx.agent("worker").await;
    let big = fx.project("big").await;
    let small = fx.project("small").await;
    fx.task(&small, "elsewhere").await;
    seed(fx, &big, TASKS, agent.id()).await;
    let hot = fx.board.list_labels(&fx.owner, Page::default()).await.unwrap()[0].name.clone();

    // What rendering one task reads (its project, members, labels, links
    // and subtasks) times the page, plus the index entries of the page: a
    // bound set by the page. The project is 400 pages long.
    let bound = PAGE as usize * 20;
    let by_project = TaskFilter { project_id: Some(big.id), page: page(PAGE), ..Default::default() };
    let filters = [
        by_project.clone(),
        TaskFilter { status: Some(TaskStatus::Review), ..by_project.clone() },
        TaskFilter { label: Some(hot.to_string()), ..by_project.clone() },
        TaskFilter { assignee_id: Some(agent.id()), ..by_project.clone() },
        TaskFilter { assignee_id: Some(agent.id()), status: Some(TaskStatus::Review), ..by_project.clone() },
        TaskFilter { page: page(PAGE), ..Default::default() },
    ];
    for filter in filters {
        let (reads, first) = probe.count(filter.clone()).await;
        assert_eq!(first.len(), PAGE as usize, "{filter:?}");
        assert!(reads <= bound, "{reads} reads for the first page of {filter:?}");
        // The next page by its cursor costs the same, wherever it is.
        let next = TaskFilter { page: Page { cursor: first.next.clone(), ..page(PAGE) }, ..filter.clone() };
        let (reads, second) = probe.count(next).await;
        assert!(reads <= bound, "{reads} reads for the second page of {filter:?}");
        assert!(first.last().unwrap().number < second[0].number || filter.project_id.is_none());
    }

    // Deep in the project by cursor: the cursor of the task at depth
    // 15,000 starts the scan there.
    let (_, deep) = probe
        .count(TaskFilter { page: Page { offset: Some(15_000), ..page(1) }, ..by_project.clone() })
        .await;
    let deep_cursor = deep.next.clone().unwrap();
    let (reads, after) = probe
        .count(TaskFilter { page: Page { cursor: Some(deep_cursor), ..page(PAGE) }, ..by_project.clone() })
        .await;
    assert!(reads <= bound, "{reads} reads for a page at depth 15,000");
    assert_eq!(after[0].number, deep[0].number + 1);

    // A task key is one lookup, not a scan.
    let (reads, found) = probe.count(TaskFilter { q: Some("big-17777".into()), ..Default::default() }).await;
    assert_eq!(found.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(), ["BIG-17777"]);
    assert!(reads <= 100, "{reads} reads for a key");

    // A rare part of the title is found through the trigram index.
    let (reads, found) =
        probe.count(TaskFilter { q: Some("NUMBER 12345".into()), ..Default::default() }).await;
    assert_eq!(found.iter().map(|t| t.title.as_str()).collect::<Vec<_>>(), ["Task number 12345"]);
    assert!(reads <= TASKS / 4, "{reads} reads for a rare title part");
}

/// Walking a list by cursor gives the whole list in its order, once each,
/// for every index a filter can start from.
#[tokio::test]
async fn pages_by_cursor_walk_the_whole_list_in_order() {
    let fx = board().await;
    let agent = fx.agent("worker").await;
    let p = fx.project("web").await;
    let q = fx.project("api").await;
    seed(&fx, &p, 120, agent.id()).await;
    seed(&fx, &q, 40, agent.id()).await;
    let filters = [
        TaskFilter::default(),
        TaskFilter { project_id: Some(p.id), ..Default::default() },
        TaskFilter { project_id: Some(p.id), status: Some(TaskStatus::Review), ..Default::default() },
        TaskFilter { project_id: Some(p.id), label: Some("hot".into()), ..Default::default() },
        TaskFilter { assignee_id: Some(agent.id()), ..Default::default() },
        TaskFilter { status: Some(TaskStatus::Backlog), ..Default::default() },
        TaskFilter { label: Some("hot".into()), ..Default::default() },
        TaskFilter { q: Some("number 1".into()), ..Default::default() },
        TaskFilter { q: Some("ask".into()), priority: Some(Priority::Medium), ..Default::default() },
    ];
    for filter in filters {
        let whole: Vec<String> = fx
            .board
            .list_tasks(&fx.owner, filter.clone())
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.key)
            .collect();
        assert!(!whole.is_empty(), "{filter:?}");
        let mut walked = Vec::new();
        let mut cursor = None;
        loop {
            let f = TaskFilter { page: Page { cursor: cursor.clone(), ..page(7) }, ..filter.clone() };
            let got = fx.board.list_tasks(&fx.owner, f).await.unwrap();
            walked.extend(got.iter().map(|t| t.key.clone()));
            match got.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(walked, whole, "{filter:?}");
        // Offset still counts from the start (or from the cursor).
        let f = TaskFilter { page: Page { offset: Some(3), ..page(4) }, ..filter.clone() };
        let got: Vec<String> =
            fx.board.list_tasks(&fx.owner, f).await.unwrap().into_iter().map(|t| t.key).collect();
        assert_eq!(got, whole.iter().skip(3).take(4).cloned().collect::<Vec<_>>(), "{filter:?}");
    }
}

#[tokio::test]
async fn a_cursor_that_is_not_one_is_refused() {
    let fx = board().await;
    for cursor in ["", "%%%", "bm90IGEgY3Vyc29y", &encode_cursor(CursorKind::Messages, &[0; 32])] {
        let f =
            TaskFilter { page: Page { cursor: Some(cursor.to_string()), ..page(5) }, ..Default::default() };
        let err = fx.board.list_tasks(&fx.owner, f).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Validation, "{cursor}");
        assert!(err.detail().contains("cursor"), "{}", err.detail());
    }
}

/// The index follows a task's changes: a title, a status or a label
/// changed in one transaction moves the task in every list at once.
#[tokio::test]
async fn the_indexes_follow_a_task_s_changes() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "Render the invoice").await;
    let patch = taskboard_core::api::TaskPatch {
        title: taskboard_core::api::Patch::Value(title("Print the receipt")),
        status: taskboard_core::api::Patch::Value(TaskStatus::Done),
        ..Default::default()
    };
    fx.board.update_task(&fx.owner, t.id, patch).await.unwrap();
    let find = |q: &str, status: Option<TaskStatus>| {
        let f = TaskFilter { q: Some(q.into()), status, project_id: Some(p.id), ..Default::default() };
        let board = fx.board.clone();
        let owner = fx.owner.clone();
        async move { board.list_tasks(&owner, f).await.unwrap().len() }
    };
    assert_eq!(find("invoice", None).await, 0);
    assert_eq!(find("receipt", None).await, 1);
    assert_eq!(find("receipt", Some(TaskStatus::Done)).await, 1);
    assert_eq!(find("receipt", Some(TaskStatus::Backlog)).await, 0);
    fx.board.delete_task(&fx.owner, t.id).await.unwrap();
    assert_eq!(find("receipt", None).await, 0);
}

/// A whole list is streamed: what waits for the reader is the channel's
/// few chunks, however long the list.
#[tokio::test]
async fn a_whole_list_is_streamed_in_bounded_chunks() {
    let fx = board().await;
    let p = fx.project("web").await;
    seed(&fx, &p, 3000, fx.owner.id()).await;
    let gauge = fx.board.stream_gauge();
    let mut stream = fx.board.stream_tasks(&fx.owner, TaskFilter::default()).unwrap();
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.unwrap());
        tokio::task::yield_now().await;
    }
    let tasks: Vec<Task> = serde_json::from_slice(&body).unwrap();
    assert_eq!(tasks.len(), 3000);
    let bound = (STREAM_DEPTH + 1) * (STREAM_CHUNK + 8192);
    assert!(body.len() > 4 * bound, "the list ({} bytes) is long enough to tell", body.len());
    assert!(gauge.high_water() <= bound, "{} bytes waited at once", gauge.high_water());
}
