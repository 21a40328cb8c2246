//! A page reads what it returns, not the project (docs/rules.md, lists):
//! a probe over the real redb store counts every record and index entry
//! read through the storage trait. On redb only: the count is the
//! planner's, whatever the store.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use taskboard_core::api::{Page, Patch, TaskFilter, TaskPatch};
use taskboard_core::model::*;
use taskboard_core::storage::redb::RedbStore;
use taskboard_core::storage::{Direction, KeyRange, ReadTxn, Storage, Table, Visitor, WriteOp};
use taskboard_core::{Board, BoardOptions, Error};

use crate::paging::{page, seed};
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
        let page = self.fx.board.list_tasks(filter).await.unwrap();
        (self.reads.load(Ordering::Relaxed), page)
    }
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
    let hot = fx.board.list_labels(Page::default()).await.unwrap()[0].name.clone();

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

    // A task key is one lookup, not a scan: what else the query reads is
    // the title search's (the rare trigrams of "big-17777", and the
    // recent titles not yet folded into the index, at most
    // TITLE_RECENT_MAX), bounded whatever the project's size.
    let (reads, found) = probe.count(TaskFilter { q: Some("big-17777".into()), ..Default::default() }).await;
    assert_eq!(found.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(), ["BIG-17777"]);
    let recent = taskboard_core::board::TITLE_RECENT_MAX as usize;
    assert!(reads <= 100 + recent, "{reads} reads for a key");

    // A rare part of the title is found through the trigram index.
    let (reads, found) =
        probe.count(TaskFilter { q: Some("NUMBER 12345".into()), ..Default::default() }).await;
    assert_eq!(found.iter().map(|t| t.title.as_str()).collect::<Vec<_>>(), ["Task number 12345"]);
    assert!(reads <= TASKS / 4, "{reads} reads for a rare title part");
}

/// A list the index answers whole (here project and status) takes the
/// tasks it has rendered before from the cache, without reading their
/// records: a second reading costs the index entries of the page and
/// little else. A change to a task shows in the next list all the same.
#[tokio::test]
async fn a_list_the_index_answers_reads_no_record_of_a_task_it_rendered_before() {
    const PAGE: u32 = 100;
    let probe = Probe::new().await;
    let fx = &probe.fx;
    let agent = fx.agent("worker").await;
    let p = fx.project("web").await;
    seed(fx, &p, 600, agent.id()).await;
    let filter = TaskFilter {
        project_id: Some(p.id),
        status: Some(TaskStatus::Review),
        page: page(PAGE),
        ..Default::default()
    };

    let (cold, first) = probe.count(filter.clone()).await;
    assert_eq!(first.len(), PAGE as usize);
    // Rendering reads each task's record and more.
    assert!(cold > 2 * PAGE as usize, "{cold} reads for a page rendered afresh");
    let (warm, again) = probe.count(filter.clone()).await;
    assert_eq!(again.items, first.items);
    assert_eq!(again.next, first.next);
    // The project (the list's check), the page's index entries, one more.
    assert!(warm <= PAGE as usize + 10, "{warm} reads for a page of tasks rendered before");

    // The next page by the cursor taken from the index, then the same
    // page whole again after one of its tasks changed.
    let next = TaskFilter { page: Page { cursor: first.next.clone(), ..page(PAGE) }, ..filter.clone() };
    let (_, second) = probe.count(next).await;
    assert_eq!(second.len(), PAGE as usize);
    assert!(second[0].number > first.last().unwrap().number);
    let changed = &first.items[7];
    fx.board
        .update_task(
            &fx.owner,
            changed.id,
            TaskPatch { title: Patch::Value(title("Renamed while cached")), ..Default::default() },
        )
        .await
        .unwrap();
    let (_, after) = probe.count(filter).await;
    assert_eq!(after[7].id, changed.id);
    assert_eq!(after[7].title, "Renamed while cached");
}
