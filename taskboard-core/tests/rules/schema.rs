//! A board written by an older build opens on this one: schema 1 had no
//! ordered task indexes, title trigrams or ready queue, which the first
//! open writes for every task before it serves.

use taskboard_core::api::{Page, ReadyQuery, TaskFilter};
use taskboard_core::model::*;
use taskboard_core::storage::codec::{decode, encode};
use taskboard_core::storage::redb::RedbStore;
use taskboard_core::storage::tables::*;
use taskboard_core::storage::{Direction, KeyRange, Scan, Storage, Table, WriteOp};

use crate::support::*;

/// The tables schema 2 added.
const ADDED: [Table; 8] = [
    TASK_ORDER,
    STATUS_ORDER,
    ASSIGNEE_ORDER,
    PROJECT_ASSIGNEE_ORDER,
    PROJECT_LABEL_ORDER,
    TITLE_TRIGRAMS,
    READY_TASKS,
    PROJECT_READY_TASKS,
];

/// Runs `run` as one write transaction of the store and waits for it.
fn write(store: &RedbStore, run: impl FnOnce(&mut dyn taskboard_core::storage::WriteTxn) + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    store.submit(WriteOp {
        run: Box::new(move |w| {
            run(w);
            Ok(Box::new(()))
        }),
        done: Box::new(move |r| tx.send(r.map(|_| ())).unwrap()),
    });
    rx.recv().unwrap().unwrap();
}

fn count(store: &RedbStore, table: Table) -> usize {
    let r = store.read().unwrap();
    let mut n = 0;
    r.scan(table, KeyRange::all(), Direction::Forward, &mut |_, _| {
        n += 1;
        Ok(Scan::Continue)
    })
    .unwrap();
    n
}

/// What the lists that read the added indexes answer.
async fn answers(fx: &Fx, project: uuid::Uuid, assignee: uuid::Uuid) -> Vec<Vec<String>> {
    let filters = [
        TaskFilter::default(),
        TaskFilter { project_id: Some(project), label: Some("hot".into()), ..Default::default() },
        TaskFilter { status: Some(TaskStatus::Review), ..Default::default() },
        TaskFilter { project_id: Some(project), assignee_id: Some(assignee), ..Default::default() },
        TaskFilter { q: Some("number 1".into()), ..Default::default() },
        TaskFilter { page: Page { limit: Some(5), ..Page::default() }, ..Default::default() },
    ];
    let mut out = Vec::new();
    for f in filters {
        let tasks = fx.board.list_tasks(f).await.unwrap();
        out.push(tasks.into_iter().map(|t| t.key).collect());
    }
    let ready = fx.board.ready_tasks(&fx.owner, ReadyQuery::default()).await.unwrap();
    out.push(ready.into_iter().map(|t| t.key).collect());
    out
}

#[tokio::test]
async fn a_schema_1_board_gets_its_indexes_on_first_open() {
    let fx = board_on_disk().await;
    let agent = fx.agent("worker").await;
    let p = fx.project("web").await;
    let first = fx.task(&p, "Task number 0").await;
    for i in 1..30 {
        let mut t = new_task(&format!("Task number {i}"));
        t.status = if i % 3 == 0 { TaskStatus::Review } else { TaskStatus::Todo };
        if i % 4 == 0 {
            t.labels = labels(&["hot"]);
        }
        if i % 5 == 0 {
            t.depends_on = vec![first.id];
        }
        if i % 7 == 0 {
            t.assignee_id = Some(agent.id());
        }
        fx.board.create_tasks(&fx.owner, p.id, vec![t]).await.unwrap();
    }
    let before = answers(&fx, p.id, agent.id()).await;
    assert!(before.iter().all(|a| !a.is_empty()), "{before:?}");

    // Make it a board of schema 1: without the added tables' entries.
    let Fx { board, owner, dir, .. } = fx;
    let options = board.options().clone();
    drop(board);
    let path = dir.as_ref().unwrap().path().join("board.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        write(&store, |w| {
            for table in ADDED {
                let mut keys = Vec::new();
                w.scan(table, KeyRange::all(), Direction::Forward, &mut |k, _| {
                    keys.push(k.to_vec());
                    Ok(Scan::Continue)
                })
                .unwrap();
                for k in keys {
                    w.delete(table, &k).unwrap();
                }
            }
            w.put(META, b"schema", &encode(&1u32)).unwrap();
        });
        assert!(ADDED.iter().all(|t| count(&store, *t) == 0));
    }

    let board = taskboard_core::Board::open(dir.as_ref().unwrap().path(), options).await.unwrap();
    let owner = board.actor(owner.id()).await.unwrap();
    let fx = Fx { board, owner, dir, _blobs: None };
    assert_eq!(answers(&fx, p.id, agent.id()).await, before, "the lists answer as before the downgrade");
    drop(fx.board);
    let store = RedbStore::open(&path).unwrap();
    let schema: u32 = decode(&store.read().unwrap().get(META, b"schema").unwrap().unwrap()).unwrap();
    assert_eq!(schema, 2);
    let empty: Vec<_> = ADDED.iter().filter(|t| count(&store, **t) == 0).collect();
    assert!(empty.is_empty(), "every added index is written again, not {empty:?}");
}

/// Recent titles as the build that folded them whole wrote them (the
/// title alone, and their count in META) are searched and folded by this
/// one.
#[tokio::test]
async fn recent_titles_of_an_older_build_are_found_and_folded() {
    let fx = board_on_disk().await;
    let p = fx.project("web").await;
    let tasks = fx
        .board
        .create_tasks(&fx.owner, p.id, (0..40).map(|i| new_task(&format!("Polish quartz {i}"))).collect())
        .await
        .unwrap();
    let search = |fx: &Fx, q: &str| {
        let f = TaskFilter { q: Some(q.into()), project_id: Some(p.id), ..Default::default() };
        let (board, _owner) = (fx.board.clone(), fx.owner.clone());
        async move {
            let mut keys: Vec<String> =
                board.list_tasks(f).await.unwrap().into_iter().map(|t| t.key).collect();
            keys.sort();
            keys
        }
    };
    let before = search(&fx, "quartz 3").await;
    assert_eq!(before.len(), 11, "{before:?}");

    let Fx { board, owner, dir, .. } = fx;
    let options = board.options().clone();
    drop(board);
    let path = dir.as_ref().unwrap().path().join("board.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        write(&store, move |w| {
            for t in &tasks {
                w.put(TITLE_RECENT, t.id.as_bytes(), t.title.to_lowercase().as_bytes()).unwrap();
            }
            w.delete(META, b"title_fold").unwrap();
            w.put(META, b"title_recent", &encode(&40u64)).unwrap();
        });
    }
    let board = taskboard_core::Board::open(dir.as_ref().unwrap().path(), options).await.unwrap();
    let owner = board.actor(owner.id()).await.unwrap();
    let fx = Fx { board, owner, dir, _blobs: None };
    assert_eq!(search(&fx, "quartz 3").await, before, "the older entries are searched");

    // A whole round of folds later they are in the index, not recent.
    let more = taskboard_core::board::TITLE_RECENT_MAX as usize;
    let others = (0..more).map(|i| new_task(&format!("Cut zircon {i}"))).collect();
    fx.board.create_tasks(&fx.owner, p.id, others).await.unwrap();
    assert_eq!(search(&fx, "quartz 3").await, before, "and found in the index");
    drop(fx.board);
    let store = RedbStore::open(&path).unwrap();
    let r = store.read().unwrap();
    let mut legacy = 0;
    r.scan(TITLE_RECENT, KeyRange::all(), Direction::Forward, &mut |_, v| {
        legacy += usize::from(v.first() != Some(&0xFF));
        Ok(Scan::Continue)
    })
    .unwrap();
    assert_eq!(legacy, 0, "no title in the older form is left");
    assert!(r.get(META, b"title_recent").unwrap().is_none());
}
