//! Lists read what their page needs (docs/rules.md, lists): pages by
//! cursor and by offset, the indexes a filter starts from, the title
//! search, and streamed whole lists. What a page reads through the
//! storage trait is counted in `reads.rs`.

use taskboard_core::ErrorKind;
use taskboard_core::api::{CursorKind, Encoded, NewTask, Page, TaskFilter, encode_cursor};
use taskboard_core::board::{ONE_GO, STREAM_CHUNK, STREAM_DEPTH};
use taskboard_core::model::*;

use crate::support::*;

/// Creates `n` tasks in batches; every third is in review, every fifth
/// carries the label `hot`, every seventh is assigned to `assignee`.
pub(crate) async fn seed(fx: &Fx, project: &Project, n: usize, assignee: uuid::Uuid) {
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

pub(crate) fn page(limit: u32) -> Page {
    Page { limit: Some(limit), ..Page::default() }
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
        let whole: Vec<String> =
            fx.board.list_tasks(filter.clone()).await.unwrap().into_iter().map(|t| t.key).collect();
        assert!(!whole.is_empty(), "{filter:?}");
        let mut walked = Vec::new();
        let mut cursor = None;
        loop {
            let f = TaskFilter { page: Page { cursor: cursor.clone(), ..page(7) }, ..filter.clone() };
            let got = fx.board.list_tasks(f).await.unwrap();
            walked.extend(got.iter().map(|t| t.key.clone()));
            match got.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(walked, whole, "{filter:?}");
        // Offset still counts from the start (or from the cursor).
        let f = TaskFilter { page: Page { offset: Some(3), ..page(4) }, ..filter.clone() };
        let got: Vec<String> = fx.board.list_tasks(f).await.unwrap().into_iter().map(|t| t.key).collect();
        assert_eq!(got, whole.iter().skip(3).take(4).cloned().collect::<Vec<_>>(), "{filter:?}");
    }
}

#[tokio::test]
async fn a_cursor_that_is_not_one_is_refused() {
    let fx = board().await;
    for cursor in ["", "%%%", "bm90IGEgY3Vyc29y", &encode_cursor(CursorKind::Messages, &[0; 32])] {
        let f =
            TaskFilter { page: Page { cursor: Some(cursor.to_string()), ..page(5) }, ..Default::default() };
        let err = fx.board.list_tasks(f).await.unwrap_err();
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
        let _owner = fx.owner.clone();
        async move { board.list_tasks(f).await.unwrap().len() }
    };
    assert_eq!(find("invoice", None).await, 0);
    assert_eq!(find("receipt", None).await, 1);
    assert_eq!(find("receipt", Some(TaskStatus::Done)).await, 1);
    assert_eq!(find("receipt", Some(TaskStatus::Backlog)).await, 0);
    fx.board.delete_task(&fx.owner, t.id).await.unwrap();
    assert_eq!(find("receipt", None).await, 0);
}

/// A whole list that turns out small is rendered in one go, as a page
/// with no next one, the same list as the typed answer; so is a page.
#[tokio::test]
async fn a_small_whole_list_and_a_page_are_answered_in_one_go() {
    let fx = board().await;
    let p = fx.project("web").await;
    seed(&fx, &p, 60, fx.owner.id()).await;
    let ids = |tasks: &[Task]| tasks.iter().map(|t| t.id).collect::<Vec<_>>();
    let whole = TaskFilter { project_id: Some(p.id), ..Default::default() };
    let typed = fx.board.list_tasks(whole.clone()).await.unwrap();
    assert_eq!(typed.len(), 60);
    let Encoded::Page { json, next: None } = fx.board.list_tasks(whole).encode().await.unwrap() else {
        panic!("a small whole list is one page with no next one");
    };
    assert!(json.len() < ONE_GO);
    assert_eq!(ids(&serde_json::from_slice::<Vec<Task>>(&json).unwrap()), ids(&typed));

    let page = TaskFilter {
        project_id: Some(p.id),
        page: Page { limit: Some(25), ..Page::default() },
        ..Default::default()
    };
    let typed = fx.board.list_tasks(page.clone()).await.unwrap();
    let Encoded::Page { json, next: Some(next) } = fx.board.list_tasks(page).encode().await.unwrap() else {
        panic!("a full page is one page with the cursor of the next");
    };
    assert_eq!(Some(next), typed.next);
    assert_eq!(ids(&serde_json::from_slice::<Vec<Task>>(&json).unwrap()), ids(&typed[..25]));
}

/// A long whole list is streamed: what waits for the reader is what was
/// held back to be sent in one go and the channel's few chunks, however
/// long the list.
#[tokio::test]
async fn a_whole_list_is_streamed_in_bounded_chunks() {
    let fx = board().await;
    let p = fx.project("web").await;
    seed(&fx, &p, 3000, fx.owner.id()).await;
    let gauge = fx.board.stream_gauge();
    let encoded = fx.board.list_tasks(TaskFilter::default()).encode().await.unwrap();
    let Encoded::Stream(mut stream) = encoded else { panic!("a long whole list is streamed") };
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.unwrap());
        tokio::task::yield_now().await;
    }
    let tasks: Vec<Task> = serde_json::from_slice(&body).unwrap();
    assert_eq!(tasks.len(), 3000);
    // What a list held back to be sent in one go, until it turns out
    // longer, and the chunks waiting.
    let bound = ONE_GO + (STREAM_DEPTH + 1) * (STREAM_CHUNK + 8192);
    assert!(body.len() > 4 * bound, "the list ({} bytes) is long enough to tell", body.len());
    assert!(gauge.high_water() <= bound, "{} bytes waited at once", gauge.high_water());
}

/// Title search answers the same while the recent titles wait, while
/// some slices of their trigrams are folded into the index and after all
/// are, for tasks created, renamed and deleted at each of those stages.
#[tokio::test]
async fn title_search_holds_across_the_fold_of_recent_titles() {
    let fx = board().await;
    let p = fx.project("web").await;
    let expect = |fx: &Fx, queries: &'static [&'static str]| {
        let (board, _owner, project) = (fx.board.clone(), fx.owner.clone(), p.id);
        async move {
            let all = board
                .list_tasks(TaskFilter { project_id: Some(project), ..Default::default() })
                .await
                .unwrap();
            for q in queries {
                let f =
                    TaskFilter { q: Some(q.to_string()), project_id: Some(project), ..Default::default() };
                let mut found: Vec<String> =
                    board.list_tasks(f).await.unwrap().into_iter().map(|t| t.title).collect();
                let mut want: Vec<String> = all
                    .iter()
                    .filter(|t| t.title.to_lowercase().contains(&q.to_lowercase()))
                    .map(|t| t.title.clone())
                    .collect();
                found.sort();
                want.sort();
                assert_eq!(found, want, "{q}");
            }
        }
    };
    // "z 1" has no trigram inside a word: it is answered by a scan.
    const QUERIES: &[&str] = &["quartz 7", "QUARTZ 12", "opal", "renamed", "zircon 3", "z 1"];
    let step = taskboard_core::board::TITLE_FOLD_STEP as usize;
    let whole = taskboard_core::board::TITLE_RECENT_MAX as usize;
    let batch = |from: usize, to: usize| -> Vec<NewTask> {
        (from..to)
            .map(|i| new_task(&format!("Polish quartz {i}{}", if i % 9 == 0 { " opal" } else { "" })))
            .collect()
    };
    let rename = |to: &str| taskboard_core::api::TaskPatch {
        title: taskboard_core::api::Patch::Value(title(to)),
        ..Default::default()
    };
    let early = fx.board.create_tasks(&fx.owner, p.id, batch(0, step - 3)).await.unwrap();
    expect(&fx, QUERIES).await;
    // Renamed and deleted while no slice of their titles is folded.
    fx.board.update_task(&fx.owner, early[7].id, rename("Cut zircon 3 renamed")).await.unwrap();
    fx.board.delete_task(&fx.owner, early[12].id).await.unwrap();
    expect(&fx, QUERIES).await;
    // These cross the first fold: one slice of every title is indexed.
    let late = fx.board.create_tasks(&fx.owner, p.id, batch(step, step + 20)).await.unwrap();
    expect(&fx, QUERIES).await;
    // Renamed and deleted with some of their trigrams in the index.
    fx.board.update_task(&fx.owner, early[70].id, rename("Set opal renamed")).await.unwrap();
    fx.board.delete_task(&fx.owner, early[72].id).await.unwrap();
    fx.board.update_task(&fx.owner, late[1].id, rename("Cut zircon 3 again")).await.unwrap();
    fx.board.create_tasks(&fx.owner, p.id, batch(2 * step, 4 * step)).await.unwrap();
    expect(&fx, QUERIES).await;
    // Past a whole round of folds: the first titles are wholly indexed and
    // no longer recent.
    fx.board.create_tasks(&fx.owner, p.id, batch(4 * step, whole + 2 * step)).await.unwrap();
    expect(&fx, QUERIES).await;
    // Renamed and deleted from the index itself.
    fx.board.update_task(&fx.owner, early[80].id, rename("Set opal renamed twice")).await.unwrap();
    fx.board.delete_task(&fx.owner, early[82].id).await.unwrap();
    fx.board.update_task(&fx.owner, early[7].id, rename("Cut zircon 4")).await.unwrap();
    expect(&fx, QUERIES).await;
}
