//! The agent work protocol: ready work, claims, leases and wake-ups.

use std::collections::HashSet;
use std::time::Duration;

use taskboard_core::Perform;
use taskboard_core::api::{ClaimRequest, NewLink, Page, ProjectPatch, ReadyQuery, TaskPatch};
use taskboard_core::board::Clock;
use taskboard_core::events::EventKind;
use taskboard_core::model::*;
use taskboard_core::validate::Reason;
use taskboard_core::{BoardOptions, ErrorKind};
use uuid::Uuid;

use crate::support::*;

fn in_project(p: &Project) -> ReadyQuery {
    ReadyQuery { project_id: Some(p.id), ..Default::default() }
}

async fn ready_keys(fx: &Fx, actor: &taskboard_core::Actor, q: ReadyQuery) -> Vec<String> {
    fx.board.ready_tasks(actor, q).await.unwrap().into_iter().map(|t| t.key).collect()
}

fn task(t: &str, priority: Priority, status: TaskStatus) -> taskboard_core::api::NewTask {
    let mut n = new_task(t);
    n.priority = priority;
    n.status = status;
    n
}

async fn set_status(fx: &Fx, id: Uuid, status: TaskStatus) -> Task {
    let patch = TaskPatch { status: taskboard_core::api::Patch::Value(status), ..Default::default() };
    fx.board.update_task(&fx.owner, id, patch).await.unwrap()
}

#[tokio::test]
async fn ready_work_is_listed_in_ready_order() {
    let fx = board().await;
    let p = fx.project("web").await;
    fx.task_with(&p, task("low todo", Priority::Low, TaskStatus::Todo)).await;
    fx.task_with(&p, task("urgent backlog", Priority::Urgent, TaskStatus::Backlog)).await;
    fx.task_with(&p, task("urgent todo", Priority::Urgent, TaskStatus::Todo)).await;
    fx.task_with(&p, task("medium todo", Priority::Medium, TaskStatus::Todo)).await;
    fx.task_with(&p, task("medium todo later", Priority::Medium, TaskStatus::Todo)).await;
    let mut epic = task("an epic", Priority::Urgent, TaskStatus::Todo);
    epic.kind = TaskType::Epic;
    fx.task_with(&p, epic).await;
    fx.task_with(&p, task("in progress", Priority::Urgent, TaskStatus::InProgress)).await;
    let mut held = task("held", Priority::Urgent, TaskStatus::Todo);
    held.assignee_id = Some(fx.owner.id());
    fx.task_with(&p, held).await;
    assert_eq!(
        ready_keys(&fx, &fx.owner, in_project(&p)).await,
        ["WEB-3", "WEB-2", "WEB-4", "WEB-5", "WEB-1"],
        "priority, then todo before backlog, then position"
    );
    // Moving a task moves it in the ready order.
    let patch = TaskPatch { position: taskboard_core::api::Patch::Value(0.5), ..Default::default() };
    let later = fx.performer().find_task("WEB-5").await.unwrap();
    fx.board.update_task(&fx.owner, later.id, patch).await.unwrap();
    assert_eq!(
        ready_keys(&fx, &fx.owner, in_project(&p)).await,
        ["WEB-3", "WEB-2", "WEB-5", "WEB-4", "WEB-1"]
    );
    let two = ReadyQuery { limit: Some(2), ..in_project(&p) };
    assert_eq!(ready_keys(&fx, &fx.owner, two).await, ["WEB-3", "WEB-2"]);
    let bad = ReadyQuery { limit: Some(0), ..Default::default() };
    assert_eq!(kind(fx.board.ready_tasks(&fx.owner, bad).await), ErrorKind::Validation);
}

#[tokio::test]
async fn ready_work_follows_membership_labels_and_archiving() {
    let fx = board().await;
    let web = fx.project("web").await;
    let api = fx.project("api").await;
    let bot = fx.agent("bot").await;
    fx.board.add_project_member(&fx.owner, web.id, bot.id()).await.unwrap();
    let mut labelled = new_task("labelled");
    labelled.labels = labels(&["rust"]);
    fx.task_with(&web, labelled).await;
    fx.task(&web, "plain").await;
    fx.task(&api, "elsewhere").await;
    assert_eq!(
        ready_keys(&fx, &bot, ReadyQuery::default()).await,
        ["WEB-1", "WEB-2"],
        "member projects only"
    );
    assert_eq!(ready_keys(&fx, &bot, in_project(&web)).await, ["WEB-1", "WEB-2"], "a named project");
    assert_eq!(
        kind(fx.board.ready_tasks(&bot, in_project(&api)).await),
        ErrorKind::Forbidden,
        "a project the caller is not a member of"
    );
    let rust = ReadyQuery { label: Some("rust".into()), ..Default::default() };
    assert_eq!(ready_keys(&fx, &bot, rust).await, ["WEB-1"]);
    let archive = ProjectPatch {
        status: taskboard_core::api::Patch::Value(ProjectStatus::Archived),
        ..Default::default()
    };
    fx.board.update_project(&fx.owner, web.id, archive).await.unwrap();
    assert!(
        ready_keys(&fx, &bot, ReadyQuery::default()).await.is_empty(),
        "archived projects have no ready work"
    );
    let active = ProjectPatch {
        status: taskboard_core::api::Patch::Value(ProjectStatus::Active),
        ..Default::default()
    };
    fx.board.update_project(&fx.owner, web.id, active).await.unwrap();
    assert_eq!(ready_keys(&fx, &bot, ReadyQuery::default()).await, ["WEB-1", "WEB-2"]);
    let missing = ReadyQuery { project_id: Some(Uuid::now_v7()), ..Default::default() };
    assert_eq!(kind(fx.board.ready_tasks(&bot, missing).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn a_task_is_ready_once_its_last_dependency_is_done_and_wakes_its_watchers() {
    let fx = board().await;
    let p = fx.project("web").await;
    let a = fx.task(&p, "first").await;
    let b = fx.task(&p, "second").await;
    let mut n = new_task("after both");
    n.depends_on = vec![a.id];
    let c = fx.task_with(&p, n).await;
    // `b blocks c` makes c depend on b as well.
    let link = NewLink { target_id: c.id, link_type: LinkType::Blocks };
    fx.board.create_link(&fx.owner, b.id, link).await.unwrap();
    assert_eq!(ready_keys(&fx, &fx.owner, in_project(&p)).await, ["WEB-1", "WEB-2"]);
    let mut sub = fx.board.subscribe(Some(fx.board.latest_seq()));
    set_status(&fx, a.id, TaskStatus::Done).await;
    assert!(!kinds(&drain(&mut sub)).contains(&"task.ready"), "one dependency is still open");
    set_status(&fx, b.id, TaskStatus::Done).await;
    let events = drain(&mut sub);
    let ready: Vec<_> = events.iter().filter(|e| e.kind == EventKind::TaskReady).collect();
    assert_eq!(ready.len(), 1, "{:?}", kinds(&events));
    let woken: Task = serde_json::from_value(ready[0].data()).unwrap();
    assert_eq!(woken.id, c.id);
    assert_eq!(ready_keys(&fx, &fx.owner, in_project(&p)).await, ["WEB-3"]);
    // Reopening a dependency blocks it again.
    set_status(&fx, a.id, TaskStatus::Todo).await;
    assert_eq!(ready_keys(&fx, &fx.owner, in_project(&p)).await, ["WEB-1"]);
    // Deleting the task it waited on frees it.
    fx.board.delete_task(&fx.owner, a.id).await.unwrap();
    assert_eq!(ready_keys(&fx, &fx.owner, in_project(&p)).await, ["WEB-3"]);
}

#[tokio::test]
async fn claim_takes_the_first_ready_task_and_then_answers_nothing() {
    let fx = board().await;
    let p = fx.project("web").await;
    let (bot, _) =
        fx.agent_with("bot", AgentConfig { labels: vec!["rust".into()], ..Default::default() }).await;
    fx.board.add_project_member(&fx.owner, p.id, bot.id()).await.unwrap();
    fx.task(&p, "no label").await;
    let mut n = new_task("rust work");
    n.labels = labels(&["rust"]);
    fx.task_with(&p, n).await;
    let mut sub = fx.board.subscribe(Some(fx.board.latest_seq()));
    let claimed = fx.board.claim(&bot, ClaimRequest::default()).await.unwrap().expect("a ready task");
    assert_eq!(claimed.key, "WEB-2", "the agent's labels by default");
    assert_eq!(claimed.status, TaskStatus::InProgress);
    assert_eq!(claimed.assignee.as_ref().map(|a| a.id), Some(bot.id()));
    assert!(claimed.watcher_ids.contains(&bot.id()));
    assert_eq!(claimed.lease, None);
    assert!(kinds(&drain(&mut sub)).contains(&"task.updated"));
    assert!(
        fx.board.claim(&bot, ClaimRequest::default()).await.unwrap().is_none(),
        "nothing with its labels"
    );
    let any = ClaimRequest { labels: Some(Vec::new()), ..Default::default() };
    assert!(fx.board.claim(&bot, any).await.unwrap().is_none(), "an empty label list matches nothing");
    let human = fx.human("ana", Role::Member).await;
    fx.board.add_project_member(&fx.owner, p.id, human.id()).await.unwrap();
    let leased = ClaimRequest { lease_seconds: Some(60), ..Default::default() };
    let t = fx.board.claim(&human, leased).await.unwrap().expect("the unlabelled task");
    assert_eq!(t.key, "WEB-1");
    assert_eq!(t.lease.map(|l| l.holder.id), Some(human.id()));
    assert!(fx.board.claim(&human, ClaimRequest::default()).await.unwrap().is_none());
    let bad = ClaimRequest { lease_seconds: Some(5), ..Default::default() };
    assert_eq!(kind(fx.board.claim(&human, bad).await), ErrorKind::Validation);
}

#[tokio::test]
async fn concurrent_claims_never_return_the_same_task() {
    for _ in 0..20 {
        let fx = board().await;
        let p = fx.project("web").await;
        for i in 0..40 {
            fx.task(&p, &format!("task {i}")).await;
        }
        let mut claimers = Vec::new();
        for i in 0..8 {
            let a = fx.agent(&format!("bot{i}")).await;
            fx.board.add_project_member(&fx.owner, p.id, a.id()).await.unwrap();
            claimers.push(a);
        }
        let handles: Vec<_> = claimers
            .into_iter()
            .map(|a| {
                let board = fx.board.clone();
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    while let Some(t) = board.claim(&a, ClaimRequest::default()).await.unwrap() {
                        got.push(t.id);
                    }
                    got
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.await.unwrap());
        }
        let distinct: HashSet<_> = all.iter().collect();
        assert_eq!(all.len(), 40, "every task claimed once");
        assert_eq!(distinct.len(), 40, "no task twice");
    }
}

fn manual() -> (BoardOptions, Clock) {
    let clock = Clock::manual();
    (BoardOptions { clock: clock.clone(), ..Default::default() }, clock)
}

#[tokio::test]
async fn a_lease_without_heartbeats_is_released_when_it_expires() {
    let (options, clock) = manual();
    let fx = board_with(options).await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    let taken = fx.board.take_leased(&bot, t.id, Some(10)).await.unwrap();
    let lease = taken.lease.expect("a lease");
    assert_eq!(lease.holder.id, bot.id());
    assert_eq!(lease.expires_at, taken.updated_at + jiff::SignedDuration::from_secs(10));
    clock.advance(Duration::from_secs(9));
    assert_eq!(fx.board.expire_leases().await.unwrap(), 0);
    clock.advance(Duration::from_secs(2));
    assert_eq!(fx.board.expire_leases().await.unwrap(), 1);
    assert_eq!(fx.board.expire_leases().await.unwrap(), 0, "released once");
    let t = fx.get(t.id).await;
    assert_eq!((t.status, t.assignee.clone(), t.lease.clone()), (TaskStatus::Todo, None, None));
    let actions = fx.board.task_actions(t.id, Page::default()).await.unwrap();
    let last = actions.last().unwrap();
    assert_eq!(last.action, AuditAction::LeaseExpired);
    assert_eq!(last.actor.id, bot.id(), "the holder is the actor");
    assert_eq!(last.changes["reason"].to, serde_json::json!("lease expired"));
    assert_eq!(ready_keys(&fx, &fx.owner, in_project(&p)).await, ["WEB-1"], "ready again");
}

#[tokio::test]
async fn heartbeats_keep_a_lease_for_as_long_as_they_come() {
    let (options, clock) = manual();
    let fx = board_with(options).await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    fx.board.take_leased(&bot, t.id, Some(10)).await.unwrap();
    for _ in 0..20 {
        clock.advance(Duration::from_secs(3));
        assert_eq!(fx.board.expire_leases().await.unwrap(), 0);
        let beat = fx.board.heartbeat(&bot, t.id, None).await.unwrap();
        assert_eq!(beat.lease.unwrap().expires_at, beat.updated_at + jiff::SignedDuration::from_secs(10));
    }
    let t = fx.get(t.id).await;
    assert_eq!(t.assignee.map(|a| a.id), Some(bot.id()), "a minute later it is still held");
    let longer = fx.board.heartbeat(&bot, t.id, Some(600)).await.unwrap();
    assert_eq!(longer.lease.unwrap().expires_at, longer.updated_at + jiff::SignedDuration::from_secs(600));
    let other = fx.agent("other").await;
    assert_eq!(kind(fx.board.heartbeat(&other, t.id, None).await), ErrorKind::Forbidden);
    assert_eq!(kind(fx.board.heartbeat(&bot, t.id, Some(86_401)).await), ErrorKind::Validation);
    let plain = fx.task(&p, "no lease").await;
    fx.board.take(&bot, plain.id).await.unwrap();
    assert_eq!(kind(fx.board.heartbeat(&bot, plain.id, None).await), ErrorKind::Conflict);
}

#[tokio::test]
async fn release_gives_a_task_back_and_moving_a_task_ends_its_lease() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let other = fx.agent("other").await;
    let t = fx.task(&p, "work").await;
    fx.board.take_leased(&bot, t.id, Some(60)).await.unwrap();
    // Fenced: only the holder (or an admin) ends a lease.
    assert_eq!(kind(fx.board.release(&other, t.id, None).await), ErrorKind::Conflict);
    let reason = Reason::new("blocked on review").unwrap();
    let back = fx.board.release(&bot, t.id, Some(reason)).await.unwrap();
    assert_eq!((back.status, back.assignee, back.lease), (TaskStatus::Todo, None, None));
    assert_eq!(kind(fx.board.release(&bot, t.id, None).await), ErrorKind::Conflict, "nobody holds it");
    // An admin may release anyone's task.
    fx.board.take_leased(&bot, t.id, Some(60)).await.unwrap();
    fx.board.release(&fx.owner, t.id, None).await.unwrap();
    // A status away from in_progress ends the lease, as does another assignee.
    fx.board.take_leased(&bot, t.id, Some(60)).await.unwrap();
    assert_eq!(set_status(&fx, t.id, TaskStatus::Review).await.lease, None);
    let u = fx.task(&p, "other work").await;
    fx.board.take_leased(&bot, u.id, Some(60)).await.unwrap();
    assert_eq!(fx.board.assign(&fx.owner, u.id, other.id()).await.unwrap().lease, None);
}

#[tokio::test]
async fn leases_that_expired_while_the_board_was_closed_are_released_on_opening() {
    let (options, clock) = manual();
    let fx = board_on_disk_with(options).await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    fx.board.take_leased(&bot, t.id, Some(10)).await.unwrap();
    clock.advance(Duration::from_secs(30));
    let fx = fx.reopen().await;
    let t = fx.get(t.id).await;
    assert_eq!((t.status, t.lease), (TaskStatus::Todo, None));
    let actions = fx.board.task_actions(t.id, Page::default()).await.unwrap();
    assert_eq!(actions.iter().filter(|a| a.action == AuditAction::LeaseExpired).count(), 1);
}

/// The one test on the real clock: the maintenance task releases an
/// expired lease by itself. It waits on the event stream, not on time.
#[tokio::test]
async fn the_maintenance_task_releases_expired_leases() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    fx.board.take_leased(&bot, t.id, Some(10)).await.unwrap();
    let mut sub = fx.board.subscribe(Some(fx.board.latest_seq()));
    let maintenance = fx.board.spawn_maintenance();
    let released = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let e = sub.next().await.unwrap();
            if e.kind == EventKind::TaskUpdated {
                let task: Task = serde_json::from_value(e.data()).unwrap();
                if task.lease.is_none() {
                    return task;
                }
            }
        }
    })
    .await
    .expect("released in time");
    maintenance.abort();
    assert_eq!((released.status, released.assignee), (TaskStatus::Todo, None));
}
