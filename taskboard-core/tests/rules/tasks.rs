//! Tasks, their take/reject/assign, watchers, links, labels, steps, system
//! messages, audit log, auto-assignment and deletion (REST-INTERFACE Tasks,
//! Steps and Labels; DECISIONS 2.1, 2.4, 5; docs/decisions.md 5.a–5.f).

use taskboard_core::api::{
    LabelPatch, MessageFilter, NewLabel, NewLink, NewMessage, NewTask, Page, Patch, ProjectPatch, StepPatch,
    TaskFilter, TaskPatch,
};
use taskboard_core::events::EventKind;
use taskboard_core::model::*;
use taskboard_core::validate::{Color, LabelName, Reason};
use taskboard_core::{Actor, ErrorKind};
use uuid::Uuid;

use taskboard_core::Perform;

use crate::support::*;

async fn comments(fx: &Fx, task: Uuid) -> Vec<Message> {
    let filter = MessageFilter { task_id: Some(task), limit: Some(200), ..Default::default() };
    fx.board.list_messages(filter).await.unwrap().into_items()
}

async fn chat(fx: &Fx, project: &Project) -> Vec<Message> {
    let filter = MessageFilter { chat_id: project.chat_id, limit: Some(200), ..Default::default() };
    fx.board.list_messages(filter).await.unwrap().into_items()
}

async fn list(fx: &Fx, filter: TaskFilter) -> Vec<String> {
    fx.board.list_tasks(filter).await.unwrap().into_iter().map(|t| t.key).collect()
}

fn patch_status(s: TaskStatus) -> TaskPatch {
    TaskPatch { status: Patch::Value(s), ..Default::default() }
}

fn reason(s: &str) -> Reason {
    Reason::new(s).unwrap()
}

fn link(target: Uuid, link_type: LinkType) -> NewLink {
    NewLink { target_id: target, link_type }
}

// ---- numbers, keys, defaults, positions (5.1–5.3, 5.d) ----------------------

#[tokio::test]
async fn task_numbers_come_from_the_project_counter() {
    let fx = board().await;
    let web = fx.project("web").await;
    let api = fx.project("api").await;
    let numbers: Vec<u64> = [
        fx.task(&web, "a").await,
        fx.task(&web, "b").await,
        fx.task(&api, "c").await,
        fx.task(&web, "d").await,
    ]
    .iter()
    .map(|t| t.number)
    .collect();
    assert_eq!(numbers, [1, 2, 1, 3]);
    assert_eq!(fx.board.get_project(web.id).await.unwrap().task_counter, 3);
    assert_eq!(fx.board.get_project(api.id).await.unwrap().task_counter, 1);
}

#[tokio::test]
async fn numbers_are_not_reused_after_a_deletion() {
    let fx = board().await;
    let web = fx.project("web").await;
    fx.task(&web, "a").await;
    let b = fx.task(&web, "b").await;
    fx.board.delete_task(&fx.owner, b.id).await.unwrap();
    assert_eq!(fx.task(&web, "c").await.number, 3);
}

#[tokio::test]
async fn task_key_uses_current_project_slug() {
    let fx = board().await;
    let p = fx.project("web-app").await;
    let parent = fx.task(&p, "parent").await;
    assert_eq!(parent.key, "WEB-APP-1");
    let child = fx.task_with(&p, NewTask { parent_id: Some(parent.id), ..new_task("child") }).await;
    assert_eq!(child.key, "WEB-APP-2");
    let patch = ProjectPatch { slug: Patch::Value(slug("site")), ..Default::default() };
    fx.board.update_project(&fx.owner, p.id, patch).await.unwrap();
    let parent = fx.get(parent.id).await;
    assert_eq!(parent.key, "SITE-1");
    assert_eq!(parent.project.slug, "site");
    assert_eq!(parent.subtasks[0].key, "SITE-2");
    assert_eq!(fx.get(child.id).await.parent.unwrap().key, "SITE-1");
    assert_eq!(fx.performer().find_task("site-2").await.unwrap().id, child.id);
    assert_eq!(kind(fx.performer().find_task("WEB-APP-2").await), ErrorKind::NotFound);
}

#[tokio::test]
async fn a_new_task_has_the_specified_defaults() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t: NewTask = serde_json::from_value(serde_json::json!({"title": "  Fix it  "})).unwrap();
    let t = fx.task_with(&p, t).await;
    assert_eq!(t.title, "Fix it", "titles are trimmed");
    assert_eq!(t.kind, TaskType::Task);
    assert_eq!(t.status, TaskStatus::Backlog);
    assert_eq!(t.priority, Priority::Medium);
    assert_eq!(t.description, None);
    assert!(t.labels.is_empty() && t.steps.is_empty() && t.subtasks.is_empty() && t.depends_on.is_empty());
    assert_eq!(t.assignee, None);
    assert_eq!(t.reviewer, None);
    assert_eq!(t.parent, None);
    assert_eq!(t.watcher_ids, [fx.owner.id()], "the creator watches");
    assert_eq!(t.project, ProjectRef { id: p.id, slug: "web".into(), name: p.name.clone() });
    assert_eq!(t.position, 1.0, "the first task of a project has position 1");
    assert_eq!(t.created_at, t.updated_at);
}

#[tokio::test]
async fn a_new_task_goes_after_the_largest_position() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task(&p, "a").await;
    assert_eq!(fx.task(&p, "b").await.position, 2.0);
    let patch = TaskPatch { position: Patch::Value(7.5), ..Default::default() };
    fx.board.update_task(&fx.owner, a.id, patch).await.unwrap();
    assert_eq!(fx.task(&p, "c").await.position, 8.0, "the largest position rounded down, plus 1");
    let other = fx.project("other").await;
    assert_eq!(fx.task(&other, "x").await.position, 1.0, "positions are per project");
}

#[tokio::test]
async fn creation_checks_its_references() {
    let fx = board().await;
    let p = fx.project("web").await;
    let nobody = Uuid::now_v7();
    let gone = fx.human("gone", Role::Member).await;
    fx.board.delete_member(&fx.owner, gone.id()).await.unwrap();
    let b = &fx.board;
    let o = &fx.owner;
    assert_eq!(kind(b.create_task(o, nobody, new_task("x")).await), ErrorKind::NotFound);
    for new in [
        NewTask { assignee_id: Some(nobody), ..new_task("x") },
        NewTask { assignee_id: Some(gone.id()), ..new_task("x") },
        NewTask { reviewer_id: Some(nobody), ..new_task("x") },
        NewTask { parent_id: Some(nobody), ..new_task("x") },
        NewTask { depends_on: vec![nobody], ..new_task("x") },
    ] {
        assert_eq!(kind(b.create_task(o, p.id, new).await), ErrorKind::NotFound);
    }
    // Refused creations take no number.
    assert_eq!(fx.task(&p, "ok").await.number, 1);
}

// ---- take, reject, assign, watchers (state table; 5.5, 5.6) ---------------

#[tokio::test]
async fn take_moves_the_task_to_in_progress_and_assigns_the_caller() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "a").await;
    let taken = fx.board.take(&bot, t.id).await.unwrap();
    assert_eq!(taken.status, TaskStatus::InProgress);
    assert_eq!(taken.assignee.unwrap().id, bot.id());
    assert_eq!(taken.watcher_ids, [fx.owner.id(), bot.id()]);
    let todo = fx.task_with(&p, NewTask { status: TaskStatus::Todo, ..new_task("b") }).await;
    assert_eq!(fx.board.take(&bot, todo.id).await.unwrap().status, TaskStatus::InProgress);
}

#[tokio::test]
async fn take_of_an_assigned_task_is_conflict() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let ana = fx.human("ana", Role::Member).await;
    let t = fx.task_with(&p, NewTask { assignee_id: Some(ana.id()), ..new_task("a") }).await;
    assert_eq!(kind(fx.board.take(&bot, t.id).await), ErrorKind::Conflict);
    let t = fx.get(t.id).await;
    assert_eq!(t.status, TaskStatus::Backlog, "unchanged");
    assert_eq!(t.assignee.unwrap().id, ana.id());
}

#[tokio::test]
async fn take_of_a_task_not_in_backlog_or_todo_is_conflict() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    for status in [TaskStatus::InProgress, TaskStatus::Review, TaskStatus::Done] {
        let t = fx.task_with(&p, NewTask { status, ..new_task("a") }).await;
        assert_eq!(kind(fx.board.take(&bot, t.id).await), ErrorKind::Conflict, "{status}");
        assert_eq!(fx.get(t.id).await.assignee, None);
    }
    assert_eq!(kind(fx.board.take(&bot, Uuid::now_v7()).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn reject_returns_the_task_to_backlog_unassigned_with_a_system_message() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "a").await;
    fx.board.take(&bot, t.id).await.unwrap();
    let r = fx.board.reject(&bot, t.id, reason("not my area")).await.unwrap();
    assert_eq!(r, Rejected { ok: true, reason: "not my area".into() });
    let t = fx.get(t.id).await;
    assert_eq!(t.status, TaskStatus::Backlog);
    assert_eq!(t.assignee, None);
    let last = comments(&fx, t.id).await.pop().unwrap();
    assert_eq!(last.author_type, AuthorType::System);
    assert!(last.content.contains("not my area"), "{}", last.content);
    assert_eq!(last.actor.unwrap().id, bot.id());
    let actions = fx.board.task_actions(t.id, Page::default()).await.unwrap();
    let reject = actions.last().unwrap();
    assert_eq!(reject.action, AuditAction::Reject);
    assert_eq!(reject.changes["reason"].to, serde_json::json!("not my area"));
    assert_eq!(reject.changes["status"].from, serde_json::json!("in_progress"));
    // Reject works from any state.
    let done = fx.task_with(&p, NewTask { status: TaskStatus::Done, ..new_task("b") }).await;
    fx.board.reject(&fx.owner, done.id, reason("reopen")).await.unwrap();
    assert_eq!(fx.get(done.id).await.status, TaskStatus::Backlog);
    assert!(Reason::new("   ").is_err(), "a reason is 1-10,000 characters");
}

#[tokio::test]
async fn assign_needs_an_active_member_and_leaves_the_status() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    let gone = fx.human("gone", Role::Member).await;
    fx.board.delete_member(&fx.owner, gone.id()).await.unwrap();
    let t = fx.task_with(&p, NewTask { status: TaskStatus::Review, ..new_task("a") }).await;
    assert_eq!(kind(fx.board.assign(&fx.owner, t.id, Uuid::now_v7()).await), ErrorKind::NotFound);
    assert_eq!(kind(fx.board.assign(&fx.owner, t.id, gone.id()).await), ErrorKind::NotFound);
    let t = fx.board.assign(&fx.owner, t.id, ana.id()).await.unwrap();
    assert_eq!(t.status, TaskStatus::Review);
    assert_eq!(t.assignee.as_ref().unwrap().id, ana.id());
    assert_eq!(t.assignee.unwrap().slug, "ana");
    assert_eq!(t.watcher_ids, [fx.owner.id(), ana.id()], "every assignee watches");
}

#[tokio::test]
async fn patch_assignee_needs_an_active_member_and_null_clears_it() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    let t = fx.task(&p, "a").await;
    let bad = TaskPatch { assignee_id: Patch::Value(Uuid::now_v7()), ..Default::default() };
    assert_eq!(kind(fx.board.update_task(&fx.owner, t.id, bad).await), ErrorKind::NotFound);
    let bad = TaskPatch { reviewer_id: Patch::Value(Uuid::now_v7()), ..Default::default() };
    assert_eq!(kind(fx.board.update_task(&fx.owner, t.id, bad).await), ErrorKind::NotFound);
    let set = TaskPatch { assignee_id: Patch::Value(ana.id()), ..Default::default() };
    let t = fx.board.update_task(&fx.owner, t.id, set).await.unwrap();
    assert!(t.watcher_ids.contains(&ana.id()));
    assert_eq!(t.status, TaskStatus::Backlog, "the status is left as it is");
    let clear: TaskPatch = serde_json::from_value(serde_json::json!({"assignee_id": null})).unwrap();
    let t = fx.board.update_task(&fx.owner, t.id, clear).await.unwrap();
    assert_eq!(t.assignee, None);
}

#[tokio::test]
async fn the_creator_and_an_assignee_given_at_creation_watch() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    let bot = fx.agent("bot").await;
    let t = fx
        .board
        .create_task(&ana, p.id, NewTask { assignee_id: Some(bot.id()), ..new_task("a") })
        .await
        .unwrap();
    assert_eq!(t.watcher_ids, [ana.id(), bot.id()]);
}

#[tokio::test]
async fn watch_and_unwatch() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    let t = fx.task(&p, "a").await;
    let w = fx.board.watch(&ana, t.id).await.unwrap();
    assert_eq!(w, Watchers { ok: true, watcher_ids: vec![fx.owner.id(), ana.id()] });
    assert_eq!(fx.board.watch(&ana, t.id).await.unwrap().watcher_ids.len(), 2, "watching twice is once");
    let w = fx.board.unwatch(&fx.owner, t.id).await.unwrap();
    assert_eq!(w.watcher_ids, [ana.id()]);
    assert_eq!(fx.get(t.id).await.watcher_ids, [ana.id()]);
    assert_eq!(kind(fx.board.watch(&ana, Uuid::now_v7()).await), ErrorKind::NotFound);
}

// ---- lists and filters (2.1, 2.2, 2.4) -------------------------------------

#[tokio::test]
async fn tasks_are_listed_by_position_then_number() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task(&p, "a").await;
    let b = fx.task(&p, "b").await;
    fx.task(&p, "c").await;
    let to = |pos: f64| TaskPatch { position: Patch::Value(pos), ..Default::default() };
    fx.board.update_task(&fx.owner, a.id, to(3.0)).await.unwrap();
    fx.board.update_task(&fx.owner, b.id, to(0.5)).await.unwrap();
    let all = TaskFilter { project_id: Some(p.id), ..Default::default() };
    assert_eq!(list(&fx, all.clone()).await, ["WEB-2", "WEB-1", "WEB-3"]);
    let page = TaskFilter { page: Page { limit: Some(2), offset: Some(1), ..Page::default() }, ..all };
    assert_eq!(list(&fx, page).await, ["WEB-1", "WEB-3"]);
}

#[tokio::test]
async fn task_filters_combine_with_and() {
    let fx = board().await;
    let web = fx.project("web").await;
    let api = fx.project("api").await;
    let ana = fx.human("ana", Role::Member).await;
    let bob = fx.human("bob", Role::Member).await;
    let parent = fx.task(&web, "Parent epic").await; // WEB-1
    let mk = |title: &str, status, assignee: Option<&Actor>, labels_: &[&str]| NewTask {
        status,
        assignee_id: assignee.map(Actor::id),
        labels: labels(labels_),
        ..new_task(title)
    };
    fx.task_with(&web, mk("Fix login", TaskStatus::Todo, Some(&ana), &["bug"])).await; // WEB-2
    fx.task_with(&web, mk("Login page copy", TaskStatus::Todo, Some(&bob), &["docs"])).await; // WEB-3
    fx.task_with(
        &web,
        NewTask {
            kind: TaskType::Bug,
            priority: Priority::Urgent,
            reviewer_id: Some(bob.id()),
            parent_id: Some(parent.id),
            ..mk("Crash on save", TaskStatus::Review, Some(&ana), &["bug"])
        },
    )
    .await; // WEB-4
    fx.task_with(&api, mk("Fix login API", TaskStatus::Todo, Some(&ana), &["bug"])).await; // API-1

    let f = || TaskFilter::default();
    assert_eq!(list(&fx, TaskFilter { project_id: Some(web.id), ..f() }).await.len(), 4);
    assert_eq!(
        list(&fx, TaskFilter { project_id: Some(web.id), status: Some(TaskStatus::Todo), ..f() }).await,
        ["WEB-2", "WEB-3"]
    );
    assert_eq!(
        list(&fx, TaskFilter { status: Some(TaskStatus::Todo), assignee_id: Some(ana.id()), ..f() }).await,
        ["API-1", "WEB-2"],
        "position, then number, across projects"
    );
    assert_eq!(
        list(&fx, TaskFilter { label: Some("bug".into()), project_id: Some(web.id), ..f() }).await,
        ["WEB-2", "WEB-4"]
    );
    assert_eq!(
        list(&fx, TaskFilter { label: Some("BUG".into()), ..f() }).await.len(),
        3,
        "label names ignore case"
    );
    assert!(list(&fx, TaskFilter { label: Some("nope".into()), ..f() }).await.is_empty());
    assert_eq!(list(&fx, TaskFilter { reviewer_id: Some(bob.id()), ..f() }).await, ["WEB-4"]);
    assert_eq!(list(&fx, TaskFilter { kind: Some(TaskType::Bug), ..f() }).await, ["WEB-4"]);
    assert_eq!(list(&fx, TaskFilter { priority: Some(Priority::Urgent), ..f() }).await, ["WEB-4"]);
    assert_eq!(list(&fx, TaskFilter { parent_id: Some(parent.id), ..f() }).await, ["WEB-4"]);
    assert!(
        list(&fx, TaskFilter { assignee_id: Some(bob.id()), label: Some("bug".into()), ..f() })
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn q_matches_a_key_case_insensitively_or_a_title_substring() {
    let fx = board().await;
    let web = fx.project("web").await;
    for title in ["Fix login", "Login page copy", "Crash on save", "Web-7 tribute"] {
        fx.task(&web, title).await;
    }
    for _ in 0..3 {
        fx.task(&web, "filler").await;
    }
    let q = |s: &str| TaskFilter { q: Some(s.into()), ..Default::default() };
    assert_eq!(list(&fx, q("web-3")).await, ["WEB-3"], "a key, any case");
    assert_eq!(list(&fx, q("WEB-3")).await, ["WEB-3"]);
    assert_eq!(list(&fx, q("LOGIN")).await, ["WEB-1", "WEB-2"], "a title substring, any case");
    assert_eq!(list(&fx, q("web-7")).await, ["WEB-4", "WEB-7"], "the key and the title that mentions it");
    assert!(list(&fx, q("web-99")).await.is_empty());
    assert_eq!(
        list(
            &fx,
            TaskFilter { q: Some("login".into()), status: Some(TaskStatus::Done), ..Default::default() }
        )
        .await
        .len(),
        0
    );
}

// ---- labels (5.4, 5.e) ------------------------------------------------------

#[tokio::test]
async fn labels_by_name_are_created_with_the_default_colour() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task_with(&p, NewTask { labels: labels(&["bug", "ui", "bug"]), ..new_task("a") }).await;
    assert_eq!(t.labels, ["bug", "ui"]);
    let all = fx.board.list_labels(Page::default()).await.unwrap();
    assert_eq!(
        all.iter().map(|l| (l.name.as_str(), l.color.as_str())).collect::<Vec<_>>(),
        [("bug", "#6366f1"), ("ui", "#6366f1")]
    );
    // An existing label is reused whatever the case of the name.
    let t2 = fx.task_with(&p, NewTask { labels: labels(&["BUG"]), ..new_task("b") }).await;
    assert_eq!(t2.labels, ["bug"]);
    assert_eq!(fx.board.list_labels(Page::default()).await.unwrap().len(), 2);
    let patch = TaskPatch { labels: Patch::Value(labels(&["ops"])), ..Default::default() };
    assert_eq!(fx.board.update_task(&fx.owner, t.id, patch).await.unwrap().labels, ["ops"]);
}

#[tokio::test]
async fn label_names_are_unique_regardless_of_case() {
    let fx = board().await;
    let new = |n: &str| NewLabel { name: LabelName::new(n).unwrap(), color: Color::default() };
    let bug = fx.board.create_label(&fx.owner, new("Bug")).await.unwrap();
    assert_eq!(bug.color, "#6366f1");
    assert_eq!(kind(fx.board.create_label(&fx.owner, new("bug")).await), ErrorKind::Conflict);
    let ui = fx.board.create_label(&fx.owner, new("ui")).await.unwrap();
    let rename = LabelPatch { name: Patch::Value(LabelName::new("BUG").unwrap()), ..Default::default() };
    assert_eq!(kind(fx.board.update_label(&fx.owner, ui.id, rename.clone()).await), ErrorKind::Conflict);
    // A change of case of its own name is fine.
    assert_eq!(fx.board.update_label(&fx.owner, bug.id, rename).await.unwrap().name, "BUG");
    assert!(Color::new("#12345").is_err());
    let recolour = LabelPatch { color: Patch::Value(Color::new("#0a0").unwrap()), ..Default::default() };
    assert_eq!(fx.board.update_label(&fx.owner, ui.id, recolour).await.unwrap().color, "#0a0");
}

#[tokio::test]
async fn labels_are_listed_by_name() {
    let fx = board().await;
    for n in ["zeta", "Alpha", "mid"] {
        fx.board
            .create_label(&fx.owner, NewLabel { name: LabelName::new(n).unwrap(), color: Color::default() })
            .await
            .unwrap();
    }
    let names: Vec<String> =
        fx.board.list_labels(Page::default()).await.unwrap().into_iter().map(|l| l.name).collect();
    assert_eq!(names, ["Alpha", "mid", "zeta"]);
}

#[tokio::test]
async fn renaming_a_label_renames_it_on_every_task() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task_with(&p, NewTask { labels: labels(&["bug"]), ..new_task("a") }).await;
    let b = fx.task_with(&p, NewTask { labels: labels(&["ui", "bug"]), ..new_task("b") }).await;
    let bug = fx.board.list_labels(Page::default()).await.unwrap().remove(0);
    let rename = LabelPatch { name: Patch::Value(LabelName::new("defect").unwrap()), ..Default::default() };
    fx.board.update_label(&fx.owner, bug.id, rename).await.unwrap();
    assert_eq!(fx.get(a.id).await.labels, ["defect"]);
    assert_eq!(fx.get(b.id).await.labels, ["ui", "defect"]);
    let by_new = TaskFilter { label: Some("defect".into()), ..Default::default() };
    assert_eq!(list(&fx, by_new).await, ["WEB-1", "WEB-2"]);
    assert!(list(&fx, TaskFilter { label: Some("bug".into()), ..Default::default() }).await.is_empty());
}

#[tokio::test]
async fn deleting_a_label_removes_it_from_every_task() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task_with(&p, NewTask { labels: labels(&["bug"]), ..new_task("a") }).await;
    let b = fx.task_with(&p, NewTask { labels: labels(&["ui", "bug"]), ..new_task("b") }).await;
    let bug = fx.board.list_labels(Page::default()).await.unwrap().remove(0);
    fx.board.delete_label(&fx.owner, bug.id).await.unwrap();
    assert!(fx.get(a.id).await.labels.is_empty());
    assert_eq!(fx.get(b.id).await.labels, ["ui"]);
    assert!(list(&fx, TaskFilter { label: Some("bug".into()), ..Default::default() }).await.is_empty());
    assert_eq!(kind(fx.board.delete_label(&fx.owner, bug.id).await), ErrorKind::NotFound);
    // The name is free again.
    let t = fx.task_with(&p, NewTask { labels: labels(&["bug"]), ..new_task("c") }).await;
    assert_eq!(t.labels, ["bug"]);
}

#[tokio::test]
async fn adding_a_label_to_a_task_is_idempotent() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "a").await;
    let ui = fx
        .board
        .create_label(&fx.owner, NewLabel { name: LabelName::new("ui").unwrap(), color: Color::default() })
        .await
        .unwrap();
    fx.board.add_task_label(&fx.owner, t.id, ui.id).await.unwrap();
    fx.board.add_task_label(&fx.owner, t.id, ui.id).await.unwrap();
    assert_eq!(fx.get(t.id).await.labels, ["ui"]);
    let actions = fx.board.task_actions(t.id, Page::default()).await.unwrap();
    assert_eq!(actions.len(), 2, "created, then one label change: the second add changed nothing");
    fx.board.remove_task_label(&fx.owner, t.id, ui.id).await.unwrap();
    assert!(fx.get(t.id).await.labels.is_empty());
    assert_eq!(kind(fx.board.add_task_label(&fx.owner, t.id, Uuid::now_v7()).await), ErrorKind::NotFound);
    assert_eq!(kind(fx.board.add_task_label(&fx.owner, Uuid::now_v7(), ui.id).await), ErrorKind::NotFound);
}

// ---- PATCH semantics (1.3, 5.c) ---------------------------------------------

#[tokio::test]
async fn null_leaves_non_nullable_task_fields_unchanged_and_clears_nullable_ones() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    let t = fx
        .task_with(
            &p,
            NewTask {
                description: Some(taskboard_core::validate::LongText::new("text").unwrap()),
                labels: labels(&["bug"]),
                reviewer_id: Some(ana.id()),
                ..new_task("a")
            },
        )
        .await;
    let patch: TaskPatch = serde_json::from_value(serde_json::json!({
        "title": null, "type": null, "status": null, "priority": null, "labels": null, "position": null,
        "description": null, "reviewer_id": null
    }))
    .unwrap();
    let u = fx.board.update_task(&fx.owner, t.id, patch).await.unwrap();
    assert_eq!(u.title, t.title);
    assert_eq!(u.kind, t.kind);
    assert_eq!(u.status, t.status);
    assert_eq!(u.priority, t.priority);
    assert_eq!(u.labels, ["bug"], "labels is not nullable: null leaves it");
    assert_eq!(u.position, t.position);
    assert_eq!(u.description, None);
    assert_eq!(u.reviewer, None);
}

#[tokio::test]
async fn a_patch_that_changes_nothing_writes_no_audit_entry_and_emits_nothing() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "a").await;
    let mut sub = fx.board.subscribe(None);
    let same = TaskPatch {
        title: Patch::Value(title("a")),
        status: Patch::Value(TaskStatus::Backlog),
        ..Default::default()
    };
    let u = fx.board.update_task(&fx.owner, t.id, same).await.unwrap();
    assert_eq!(u.updated_at, t.updated_at);
    assert!(drain(&mut sub).is_empty());
    assert_eq!(fx.board.task_actions(t.id, Page::default()).await.unwrap().len(), 1);
    assert_eq!(
        kind(fx.board.update_task(&fx.owner, Uuid::now_v7(), TaskPatch::default()).await),
        ErrorKind::NotFound
    );
}

// ---- system messages and audit log (5.9, 5.10) ------------------------------

#[tokio::test]
async fn creation_writes_a_system_message_to_the_task_and_to_the_project_chat() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    let t = fx.board.create_task(&ana, p.id, new_task("Fix login")).await.unwrap();
    for m in [comments(&fx, t.id).await, chat(&fx, &p).await] {
        assert_eq!(m.len(), 1);
        let m = &m[0];
        assert_eq!(m.author_type, AuthorType::System);
        assert_eq!(m.author_id, None);
        assert_eq!(m.author, None);
        assert_eq!(m.actor, Some(MemberRef { id: ana.id(), slug: "ana".into(), name: "ana name".into() }));
        assert!(m.content.contains("WEB-1"), "{}", m.content);
    }
}

#[tokio::test]
async fn significant_changes_write_system_messages() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "a").await;
    let count = |fx: &Fx| {
        let (board, _owner, id) = (fx.board.clone(), fx.owner.clone(), t.id);
        async move {
            let f = MessageFilter { task_id: Some(id), limit: Some(200), ..Default::default() };
            board.list_messages(f).await.unwrap().len()
        }
    };
    assert_eq!(count(&fx).await, 1);
    fx.board.update_task(&fx.owner, t.id, patch_status(TaskStatus::Todo)).await.unwrap();
    assert_eq!(count(&fx).await, 2, "status");
    let title_only = TaskPatch {
        title: Patch::Value(title("b")),
        priority: Patch::Value(Priority::High),
        ..Default::default()
    };
    fx.board.update_task(&fx.owner, t.id, title_only).await.unwrap();
    assert_eq!(count(&fx).await, 2, "title and priority are not significant");
    fx.board.take(&bot, t.id).await.unwrap();
    assert_eq!(count(&fx).await, 3, "take");
    fx.board.reject(&bot, t.id, reason("no")).await.unwrap();
    assert_eq!(count(&fx).await, 4, "reject");
    fx.board.assign(&fx.owner, t.id, ana.id()).await.unwrap();
    assert_eq!(count(&fx).await, 5, "assign");
    let reviewer = TaskPatch { reviewer_id: Patch::Value(bot.id()), ..Default::default() };
    fx.board.update_task(&fx.owner, t.id, reviewer).await.unwrap();
    assert_eq!(count(&fx).await, 6, "reviewer");
    let unassign: TaskPatch = serde_json::from_value(serde_json::json!({"assignee_id": null})).unwrap();
    fx.board.update_task(&fx.owner, t.id, unassign).await.unwrap();
    assert_eq!(count(&fx).await, 7, "assignee");
    for m in comments(&fx, t.id).await {
        assert_eq!(m.author_type, AuthorType::System);
        assert!(m.author.is_none() && m.author_id.is_none() && m.actor.is_some());
    }
}

#[tokio::test]
async fn the_audit_log_records_every_change_oldest_first_with_from_and_to() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "a").await;
    fx.board.update_task(&fx.owner, t.id, patch_status(TaskStatus::Todo)).await.unwrap();
    fx.board.take(&bot, t.id).await.unwrap();
    let relabel = TaskPatch {
        labels: Patch::Value(labels(&["ui"])),
        title: Patch::Value(title("b")),
        ..Default::default()
    };
    fx.board.update_task(&fx.owner, t.id, relabel).await.unwrap();
    let log = fx.board.task_actions(t.id, Page::default()).await.unwrap();
    assert_eq!(
        log.iter().map(|a| a.action.as_str()).collect::<Vec<_>>(),
        ["created", "updated", "take", "updated"]
    );
    assert!(log.windows(2).all(|w| w[0].created_at <= w[1].created_at && w[0].id < w[1].id));
    assert!(log.iter().all(|a| a.task_id == t.id));
    assert_eq!(log[1].changes["status"], Change { from: "backlog".into(), to: "todo".into() });
    assert_eq!(log[1].actor.id, fx.owner.id());
    assert_eq!(log[2].actor, MemberRef { id: bot.id(), slug: "bot".into(), name: "bot name".into() });
    assert_eq!(log[2].changes["status"].to, serde_json::json!("in_progress"));
    assert_eq!(
        log[2].changes["assignee_id"],
        Change { from: serde_json::Value::Null, to: serde_json::json!(bot.id()) }
    );
    assert_eq!(
        log[3].changes["labels"],
        Change { from: serde_json::json!([]), to: serde_json::json!(["ui"]) }
    );
    assert_eq!(log[3].changes["title"], Change { from: "a".into(), to: "b".into() });
    // The wire form is {id, task_id, actor, action, changes, created_at}.
    let wire = serde_json::to_value(&log[1]).unwrap();
    let mut fields: Vec<&str> = wire.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort();
    assert_eq!(fields, ["action", "actor", "changes", "created_at", "id", "task_id"]);
    assert_eq!(kind(fx.board.task_actions(Uuid::now_v7(), Page::default()).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn step_changes_are_not_in_the_audit_log() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "a").await;
    let s = fx.board.create_step(&fx.owner, t.id, title("s")).await.unwrap();
    fx.board
        .update_step(&fx.owner, t.id, s.id, StepPatch { done: Patch::Value(true), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(fx.board.task_actions(t.id, Page::default()).await.unwrap().len(), 1);
}

// ---- steps (REST Steps; 2.1, 5.f) -------------------------------------------

#[tokio::test]
async fn steps_are_appended_changed_and_deleted() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "a").await;
    let mut sub = fx.board.subscribe(None);
    let s1 = fx.board.create_step(&fx.owner, t.id, title("first")).await.unwrap();
    let s2 = fx.board.create_step(&fx.owner, t.id, title("second")).await.unwrap();
    assert_eq!((s1.position, s2.position), (1, 2));
    assert!(!s1.done);
    let s1 = fx
        .board
        .update_step(
            &fx.owner,
            t.id,
            s1.id,
            StepPatch { done: Patch::Value(true), title: Patch::Null, ..Default::default() },
        )
        .await
        .unwrap();
    assert!(s1.done);
    assert_eq!(s1.title, "first");
    let steps = fx.board.list_steps(t.id).await.unwrap();
    assert_eq!(steps, [s1.clone(), s2.clone()]);
    assert_eq!(fx.get(t.id).await.steps, steps);
    fx.board.delete_step(&fx.owner, t.id, s1.id).await.unwrap();
    assert_eq!(fx.board.list_steps(t.id).await.unwrap(), std::slice::from_ref(&s2));
    let s3 = fx.board.create_step(&fx.owner, t.id, title("third")).await.unwrap();
    assert_eq!(s3.position, 3);
    let events = drain(&mut sub);
    assert_eq!(
        kinds(&events),
        ["step.created", "step.created", "step.updated", "step.deleted", "step.created"]
    );
    assert!(events.iter().all(|e| e.data()["task_id"] == serde_json::json!(t.id)));
}

#[tokio::test]
async fn step_operations_on_a_missing_task_or_step_are_not_found() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "a").await;
    let other = fx.task(&p, "b").await;
    let s = fx.board.create_step(&fx.owner, t.id, title("s")).await.unwrap();
    let nobody = Uuid::now_v7();
    assert_eq!(kind(fx.board.create_step(&fx.owner, nobody, title("s")).await), ErrorKind::NotFound);
    assert_eq!(kind(fx.board.list_steps(nobody).await), ErrorKind::NotFound);
    assert_eq!(
        kind(fx.board.update_step(&fx.owner, other.id, s.id, StepPatch::default()).await),
        ErrorKind::NotFound
    );
    assert_eq!(kind(fx.board.delete_step(&fx.owner, other.id, s.id).await), ErrorKind::NotFound);
    assert_eq!(kind(fx.board.delete_step(&fx.owner, t.id, nobody).await), ErrorKind::NotFound);
}

// ---- links and depends_on (5.8) -----------------------------------------------

#[tokio::test]
async fn creating_with_depends_on_creates_depends_on_links() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task(&p, "a").await;
    let b = fx.task(&p, "b").await;
    let c = fx.task_with(&p, NewTask { depends_on: vec![a.id, b.id, a.id], ..new_task("c") }).await;
    assert_eq!(c.depends_on, [a.id, b.id]);
    let links = fx.board.list_links(c.id).await.unwrap();
    assert_eq!(links.len(), 2);
    assert!(links.iter().all(|l| l.link_type == LinkType::DependsOn && l.source_id == c.id));
}

#[tokio::test]
async fn a_blocks_link_makes_its_target_depend_on_its_source() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task(&p, "a").await;
    let b = fx.task(&p, "b").await;
    let l = fx.board.create_link(&fx.owner, a.id, link(b.id, LinkType::Blocks)).await.unwrap();
    assert_eq!(
        l,
        TaskLink {
            id: l.id,
            source_id: a.id,
            target_id: b.id,
            link_type: LinkType::Blocks,
            target_key: "WEB-2".into(),
            source_key: "WEB-1".into(),
            target_title: "b".into(),
            source_title: "a".into(),
        }
    );
    assert_eq!(fx.get(b.id).await.depends_on, [a.id], "A blocks B ⇒ B depends on A");
    assert!(fx.get(a.id).await.depends_on.is_empty());
    let relates = fx.board.create_link(&fx.owner, a.id, link(b.id, LinkType::RelatesTo)).await.unwrap();
    assert_eq!(fx.get(b.id).await.depends_on, [a.id], "relates_to is no dependency");
    // Both directions are listed; a link can be deleted from either end.
    assert_eq!(fx.board.list_links(b.id).await.unwrap().len(), 2);
    fx.board.delete_link(&fx.owner, b.id, l.id).await.unwrap();
    assert!(fx.get(b.id).await.depends_on.is_empty());
    assert_eq!(kind(fx.board.delete_link(&fx.owner, b.id, l.id).await), ErrorKind::NotFound);
    let c = fx.task(&p, "c").await;
    assert_eq!(
        kind(fx.board.delete_link(&fx.owner, c.id, relates.id).await),
        ErrorKind::NotFound,
        "not its link"
    );
}

#[tokio::test]
async fn the_same_link_twice_is_conflict() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task(&p, "a").await;
    let b = fx.task(&p, "b").await;
    fx.board.create_link(&fx.owner, a.id, link(b.id, LinkType::RelatesTo)).await.unwrap();
    assert_eq!(
        kind(fx.board.create_link(&fx.owner, a.id, link(b.id, LinkType::RelatesTo)).await),
        ErrorKind::Conflict
    );
    // Another type, or the other direction, is another link.
    fx.board.create_link(&fx.owner, a.id, link(b.id, LinkType::DependsOn)).await.unwrap();
    fx.board.create_link(&fx.owner, b.id, link(a.id, LinkType::RelatesTo)).await.unwrap();
}

#[tokio::test]
async fn a_link_to_the_task_itself_is_bad_request() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task(&p, "a").await;
    for t in [LinkType::Blocks, LinkType::DependsOn, LinkType::RelatesTo] {
        assert_eq!(kind(fx.board.create_link(&fx.owner, a.id, link(a.id, t)).await), ErrorKind::BadRequest);
    }
}

#[tokio::test]
async fn a_link_to_an_unknown_task_is_not_found() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task(&p, "a").await;
    let nobody = Uuid::now_v7();
    assert_eq!(
        kind(fx.board.create_link(&fx.owner, a.id, link(nobody, LinkType::Blocks)).await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(fx.board.create_link(&fx.owner, nobody, link(a.id, LinkType::Blocks)).await),
        ErrorKind::NotFound
    );
    assert_eq!(kind(fx.board.list_links(nobody).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn a_dependency_cycle_is_refused_with_422() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task(&p, "a").await;
    let b = fx.task_with(&p, NewTask { depends_on: vec![a.id], ..new_task("b") }).await;
    let c = fx.task(&p, "c").await;
    fx.board.create_link(&fx.owner, c.id, link(b.id, LinkType::DependsOn)).await.unwrap(); // c → b → a
    let b_ = &fx.board;
    let o = &fx.owner;
    assert_eq!(kind(b_.create_link(o, a.id, link(c.id, LinkType::DependsOn)).await), ErrorKind::Validation);
    assert_eq!(
        kind(b_.create_link(o, c.id, link(a.id, LinkType::Blocks)).await),
        ErrorKind::Validation,
        "c blocks a ⇒ a depends on c"
    );
    assert_eq!(kind(b_.create_link(o, a.id, link(b.id, LinkType::DependsOn)).await), ErrorKind::Validation);
    // Through blocks links alone: x blocks y, then y blocks x.
    let x = fx.task(&p, "x").await;
    let y = fx.task(&p, "y").await;
    b_.create_link(o, x.id, link(y.id, LinkType::Blocks)).await.unwrap();
    assert_eq!(kind(b_.create_link(o, y.id, link(x.id, LinkType::Blocks)).await), ErrorKind::Validation);
    assert_eq!(kind(b_.create_link(o, x.id, link(y.id, LinkType::DependsOn)).await), ErrorKind::Validation);
    // relates_to never closes a cycle; a non-cyclic extra edge is fine.
    b_.create_link(o, a.id, link(c.id, LinkType::RelatesTo)).await.unwrap();
    b_.create_link(o, c.id, link(a.id, LinkType::DependsOn)).await.unwrap();
}

// ---- parent and subtasks (5.7, 5.a, 5.b) ---------------------------------------

#[tokio::test]
async fn parent_and_subtasks_are_references() {
    let fx = board().await;
    let p = fx.project("web").await;
    let parent = fx.task(&p, "parent").await;
    let c1 = fx.task_with(&p, NewTask { parent_id: Some(parent.id), ..new_task("one") }).await;
    let c2 = fx
        .task_with(&p, NewTask { parent_id: Some(parent.id), status: TaskStatus::Done, ..new_task("two") })
        .await;
    assert_eq!(c1.parent, Some(ParentRef { id: parent.id, key: "WEB-1".into(), title: "parent".into() }));
    let parent = fx.get(parent.id).await;
    assert_eq!(
        parent.subtasks,
        [
            SubtaskRef { id: c1.id, key: "WEB-2".into(), title: "one".into(), status: TaskStatus::Backlog },
            SubtaskRef { id: c2.id, key: "WEB-3".into(), title: "two".into(), status: TaskStatus::Done },
        ]
    );
    // Moving a subtask to the top level with null (5.b).
    let top: TaskPatch = serde_json::from_value(serde_json::json!({"parent_id": null})).unwrap();
    assert_eq!(fx.board.update_task(&fx.owner, c2.id, top).await.unwrap().parent, None);
    assert_eq!(fx.get(parent.id).await.subtasks.len(), 1);
}

#[tokio::test]
async fn a_parent_must_exist_and_be_in_the_same_project() {
    let fx = board().await;
    let p = fx.project("web").await;
    let other = fx.project("other").await;
    let elsewhere = fx.task(&other, "elsewhere").await;
    let new = NewTask { parent_id: Some(Uuid::now_v7()), ..new_task("x") };
    assert_eq!(kind(fx.board.create_task(&fx.owner, p.id, new).await), ErrorKind::NotFound);
    let new = NewTask { parent_id: Some(elsewhere.id), ..new_task("x") };
    assert_eq!(kind(fx.board.create_task(&fx.owner, p.id, new).await), ErrorKind::Validation);
}

#[tokio::test]
async fn a_parent_that_would_create_a_cycle_is_422() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task(&p, "a").await;
    let b = fx.task_with(&p, NewTask { parent_id: Some(a.id), ..new_task("b") }).await;
    let c = fx.task_with(&p, NewTask { parent_id: Some(b.id), ..new_task("c") }).await;
    let under = |t: Uuid| TaskPatch { parent_id: Patch::Value(t), ..Default::default() };
    assert_eq!(kind(fx.board.update_task(&fx.owner, a.id, under(c.id)).await), ErrorKind::Validation);
    assert_eq!(kind(fx.board.update_task(&fx.owner, a.id, under(a.id)).await), ErrorKind::Validation);
    assert_eq!(kind(fx.board.update_task(&fx.owner, a.id, under(Uuid::now_v7())).await), ErrorKind::NotFound);
    // Re-parenting without a cycle works.
    fx.board.update_task(&fx.owner, c.id, under(a.id)).await.unwrap();
    assert_eq!(fx.get(a.id).await.subtasks.len(), 2);
}

// ---- auto-assignment (5.12) ----------------------------------------------------

async fn auto_project(fx: &Fx) -> Project {
    let p = fx.project("web").await;
    let patch = ProjectPatch { auto_assign: Patch::Value(true), ..Default::default() };
    fx.board.update_project(&fx.owner, p.id, patch).await.unwrap()
}

async fn labelled_agent(fx: &Fx, p: &Project, s: &str, labels_: &[&str]) -> Actor {
    let config =
        AgentConfig { labels: labels_.iter().map(|l| l.to_string()).collect(), ..Default::default() };
    let (a, _) = fx.agent_with(s, config).await;
    fx.board.add_project_member(&fx.owner, p.id, a.id()).await.unwrap();
    a
}

fn labelled(names: &[&str]) -> NewTask {
    NewTask { labels: labels(names), ..new_task("auto") }
}

fn assignee(t: &Task) -> Option<String> {
    t.assignee.as_ref().map(|a| a.slug.clone())
}

#[tokio::test]
async fn auto_assignment_picks_a_project_agent_sharing_a_label() {
    let fx = board().await;
    let p = auto_project(&fx).await;
    labelled_agent(&fx, &p, "front", &["ui"]).await;
    labelled_agent(&fx, &p, "back", &["API", "db"]).await;
    fx.agent_with("outsider", AgentConfig { labels: vec!["ops".into()], ..Default::default() }).await;
    let t = fx.task_with(&p, labelled(&["api"])).await;
    assert_eq!(assignee(&t).as_deref(), Some("back"), "labels compare without case");
    assert!(t.watcher_ids.contains(&t.assignee.as_ref().unwrap().id));
    let last = comments(&fx, t.id).await.pop().unwrap();
    assert!(last.content.contains("automatically"), "{}", last.content);
    assert_eq!(last.author_type, AuthorType::System);
    // No agent shares the label, or the task has none: no assignee.
    assert_eq!(assignee(&fx.task_with(&p, labelled(&["docs"])).await), None);
    assert_eq!(assignee(&fx.task_with(&p, labelled(&[])).await), None);
    // Agents outside the project are not considered.
    assert_eq!(assignee(&fx.task_with(&p, labelled(&["ops"])).await), None);
}

#[tokio::test]
async fn auto_assignment_prefers_fewest_open_tasks_then_online_then_oldest() {
    let fx = board().await;
    let p = auto_project(&fx).await;
    let old = labelled_agent(&fx, &p, "old", &["x"]).await;
    let young = labelled_agent(&fx, &p, "young", &["x"]).await;
    // Equal load, both offline: the oldest.
    let t1 = fx.task_with(&p, labelled(&["x"])).await;
    assert_eq!(assignee(&t1).as_deref(), Some("old"));
    // Now old has one open task (backlog is not open, so make it todo).
    fx.board.update_task(&fx.owner, t1.id, patch_status(TaskStatus::Todo)).await.unwrap();
    let t2 = fx.task_with(&p, labelled(&["x"])).await;
    assert_eq!(assignee(&t2).as_deref(), Some("young"), "fewest open tasks");
    fx.board.update_task(&fx.owner, t2.id, patch_status(TaskStatus::Review)).await.unwrap();
    // Equal load again (one each): online before offline.
    fx.board.set_status(&young, MemberStatus::Online).await.unwrap();
    let t3 = fx.task_with(&p, labelled(&["x"])).await;
    assert_eq!(assignee(&t3).as_deref(), Some("young"), "online first");
    // Done tasks are not open: finishing frees the agent.
    fx.board.update_task(&fx.owner, t3.id, patch_status(TaskStatus::InProgress)).await.unwrap();
    fx.board.update_task(&fx.owner, t1.id, patch_status(TaskStatus::Done)).await.unwrap();
    let t4 = fx.task_with(&p, labelled(&["x"])).await;
    assert_eq!(assignee(&t4).as_deref(), Some("old"));
    let _ = old;
}

#[tokio::test]
async fn auto_assignment_skips_inactive_agents_humans_and_explicit_assignees() {
    let fx = board().await;
    let p = auto_project(&fx).await;
    let gone = labelled_agent(&fx, &p, "gone", &["x"]).await;
    fx.board.delete_member(&fx.owner, gone.id()).await.unwrap();
    assert_eq!(assignee(&fx.task_with(&p, labelled(&["x"])).await), None);
    let bot = labelled_agent(&fx, &p, "bot", &["x"]).await;
    let ana = fx.human("ana", Role::Member).await;
    let explicit = fx.task_with(&p, NewTask { assignee_id: Some(ana.id()), ..labelled(&["x"]) }).await;
    assert_eq!(assignee(&explicit).as_deref(), Some("ana"));
    // auto_assign off: nobody.
    let off = ProjectPatch { auto_assign: Patch::Value(false), ..Default::default() };
    fx.board.update_project(&fx.owner, p.id, off).await.unwrap();
    assert_eq!(assignee(&fx.task_with(&p, labelled(&["x"])).await), None);
    let _ = bot;
}

// ---- deletion (5.11) ----------------------------------------------------------

#[tokio::test]
async fn deleting_a_task_deletes_its_steps_links_and_comments() {
    let fx = board().await;
    let p = fx.project("web").await;
    let parent = fx.task(&p, "parent").await;
    let doomed = fx.task_with(&p, NewTask { parent_id: Some(parent.id), ..new_task("doomed") }).await;
    let child = fx.task_with(&p, NewTask { parent_id: Some(doomed.id), ..new_task("child") }).await;
    let dependant = fx.task_with(&p, NewTask { depends_on: vec![doomed.id], ..new_task("dependant") }).await;
    let blocked = fx.task(&p, "blocked").await;
    fx.board.create_link(&fx.owner, doomed.id, link(blocked.id, LinkType::Blocks)).await.unwrap();
    fx.board.create_step(&fx.owner, doomed.id, title("s")).await.unwrap();
    let comment = fx
        .board
        .post_message(
            &fx.owner,
            NewMessage { task_id: Some(doomed.id), content: "c".into(), ..Default::default() },
        )
        .await
        .unwrap();
    let mut sub = fx.board.subscribe(None);
    fx.board.delete_task(&fx.owner, doomed.id).await.unwrap();

    let events = drain(&mut sub);
    let deleted = events.iter().find(|e| e.kind == EventKind::TaskDeleted).unwrap();
    assert_eq!(deleted.data(), serde_json::json!({"id": doomed.id, "key": "WEB-2", "project_id": p.id}));
    assert_eq!(kind(fx.board.get_task(&fx.owner, doomed.id).await), ErrorKind::NotFound);
    assert_eq!(kind(fx.board.replies(comment.id, Page::default()).await), ErrorKind::NotFound);
    assert!(comments(&fx, doomed.id).await.is_empty());
    assert_eq!(fx.get(child.id).await.parent, None, "subtasks lose their parent");
    assert!(fx.get(dependant.id).await.depends_on.is_empty());
    assert!(fx.get(blocked.id).await.depends_on.is_empty());
    assert!(fx.board.list_links(blocked.id).await.unwrap().is_empty());
    assert!(fx.get(parent.id).await.subtasks.is_empty());
    assert_eq!(
        list(&fx, TaskFilter { project_id: Some(p.id), ..Default::default() }).await,
        ["WEB-1", "WEB-3", "WEB-4", "WEB-5"]
    );
    assert_eq!(kind(fx.board.delete_task(&fx.owner, doomed.id).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn any_active_member_may_work_on_tasks() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.board.create_task(&bot, p.id, new_task("by an agent")).await.unwrap();
    fx.board.update_task(&bot, t.id, patch_status(TaskStatus::Todo)).await.unwrap();
    fx.board.create_step(&bot, t.id, title("s")).await.unwrap();
    fx.board.delete_task(&bot, t.id).await.unwrap();
}

/// Reads are served from a cache of rendered tasks; every change that
/// shows in a task must show in the next read, in `get_task` and in
/// `list_tasks` alike.
#[tokio::test]
async fn a_read_task_shows_every_later_change_that_shows_in_it() {
    let fx = board().await;
    let p = fx.project("web").await;
    let mut new = new_task("parent");
    new.labels = labels(&["bug"]);
    let parent = fx.task_with(&p, new).await;
    let mut child = new_task("child");
    child.parent_id = Some(parent.id);
    let child = fx.task_with(&p, child).await;
    let bot = fx.agent("bot").await;
    let all = TaskFilter { project_id: Some(p.id), ..Default::default() };
    // Fill the cache.
    assert_eq!(fx.get(parent.id).await.subtasks[0].title, "child");
    fx.board.list_tasks(all.clone()).await.unwrap();

    // A subtask's change shows in its parent.
    let rename = TaskPatch { title: Patch::Value(title("renamed child")), ..Default::default() };
    fx.board.update_task(&fx.owner, child.id, rename).await.unwrap();
    assert_eq!(fx.get(parent.id).await.subtasks[0].title, "renamed child");
    // A label rename shows on every task carrying it.
    let label = fx.board.list_labels(Page::default()).await.unwrap()[0].clone();
    let patch = LabelPatch { name: Patch::Value(LabelName::new("defect").unwrap()), ..Default::default() };
    fx.board.update_label(&fx.owner, label.id, patch).await.unwrap();
    assert_eq!(fx.get(parent.id).await.labels, vec!["defect"]);
    // Steps and links show.
    fx.board.create_step(&fx.owner, parent.id, title("write it")).await.unwrap();
    assert_eq!(fx.get(parent.id).await.steps.len(), 1);
    fx.board.create_link(&fx.owner, parent.id, link(child.id, LinkType::DependsOn)).await.unwrap();
    assert_eq!(fx.get(parent.id).await.depends_on, vec![child.id]);
    // A member's new name shows where the member is referenced.
    fx.board.assign(&fx.owner, parent.id, bot.id()).await.unwrap();
    let patch =
        taskboard_core::api::MemberPatch { name: Patch::Value(name("Build bot")), ..Default::default() };
    fx.board.update_member(&fx.owner, bot.id(), patch).await.unwrap();
    assert_eq!(fx.get(parent.id).await.assignee.unwrap().name, "Build bot");
    // A project's new slug shows in the keys.
    let patch = ProjectPatch { slug: Patch::Value(slug("app")), ..Default::default() };
    fx.board.update_project(&fx.owner, p.id, patch).await.unwrap();
    assert_eq!(fx.get(parent.id).await.key, "APP-1");
    let listed = fx.board.list_tasks(all).await.unwrap();
    assert_eq!(listed.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(), ["APP-1", "APP-2"]);
    assert_eq!(listed[1].title, "renamed child");
    // Comments do not change a task, and the read still answers.
    let comment = NewMessage { task_id: Some(parent.id), content: "hello".into(), ..Default::default() };
    fx.board.post_message(&fx.owner, comment).await.unwrap();
    assert_eq!(fx.get(parent.id).await.title, "parent");
}
