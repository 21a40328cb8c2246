//! Landing (docs/rules.md, review and land): a person asks for a task's
//! branch to be merged, and a runner with the repository performs it as a
//! `land` run of the task's agent; a failed landing is handed back to the
//! agent. Discarding deletes the branch (a `discard` run) and gives the
//! task back.

use uuid::Uuid;

use super::reviews::{create_task_run, open_work_run, start_reviews};
use super::run_records::live_run_of;
use super::{Actor, Board, Tx};
use crate::error::{Error, Result};
use crate::model::{AuditAction, AuthorType, TaskStatus};
use crate::records::{MessageRecord, Records, Render, TaskRecord};
use crate::review::{Changes, MergeRequest, OnConflict, RunPurpose, TaskWork};
use crate::runs::{Run, RunRecord, RunState, RunWork};
use crate::storage::tables::TASK_CHANGES;

/// A run of `purpose` of the task's agent, which its runner performs with
/// the repository; it holds the task (one run at a time) but moves
/// nothing of it until it ends.
fn open_repository_run(tx: &mut Tx<'_>, by: Uuid, task: &TaskRecord, work: RunWork) -> Result<Run> {
    let key = tx.w.task_key_of(task)?;
    let agent = task
        .work
        .agent_id
        .ok_or_else(|| Error::conflict(format!("{key} has no agent's work to {}", work.purpose.as_str())))?;
    match tx.w.member(agent)? {
        Some(m) if m.is_active && m.is_agent() => {}
        _ => {
            return Err(Error::conflict(format!(
                "the agent that worked on {key} is no longer active; its runner performs the {}",
                work.purpose.as_str()
            )));
        }
    }
    create_task_run(tx, task, key, agent, by, work)
}

/// The member who asks for a landing or a discard may change the task:
/// a member of its project, or an admin or owner.
fn check_lander(tx: &Tx<'_>, actor: &Actor, task: &TaskRecord, key: &str, what: &str) -> Result<()> {
    let acting = super::rights::load_actor_member(tx, actor)?;
    if !acting.role.is_admin() && tx.w.project_role(task.project_id, acting.id)?.is_none() {
        let slug = tx.w.project_required(task.project_id)?.slug;
        return Err(Error::forbidden(format!(
            "only members of project {slug} (or an admin) may {what} {key}; ask an admin to add you"
        )));
    }
    Ok(())
}

fn system_comment(tx: &mut Tx<'_>, task: Uuid, mentions: Vec<Uuid>, content: String) -> Result<()> {
    let mut m = MessageRecord {
        task_id: Some(task),
        mention_ids: mentions,
        ..MessageRecord::plain(tx.now, AuthorType::System, content)
    };
    Board::write_message(tx, &mut m, None).map(drop)
}

impl Board {
    /// `POST /tasks/{id}/merge`: queues a landing of the task's branch,
    /// which the runner of the task's agent performs. 409 while a run of
    /// the task is open, without changes, when done, or when the project's
    /// `required_approvals` are missing.
    pub async fn merge_task(&self, actor: &Actor, task_id: Uuid, request: MergeRequest) -> Result<Run> {
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            let task = tx.w.task_required(task_id)?;
            let key = tx.w.task_key_of(&task)?;
            check_lander(tx, &actor, &task, &key, "merge")?;
            if task.status == TaskStatus::Done {
                return Err(Error::conflict(format!("{key} is done")));
            }
            if let Some(live) = live_run_of(tx.w, task_id)? {
                return Err(Error::conflict(format!("{key} has run {live} open; merge once it ends")));
            }
            let Some(changes) = tx.w.record::<Changes>(TASK_CHANGES, task_id.as_bytes())? else {
                return Err(Error::conflict(format!("{key} has no changes to merge")));
            };
            let project = tx.w.project_required(task.project_id)?;
            if project.repo_urls.is_empty() {
                return Err(Error::conflict(format!(
                    "project {} has no repository to merge into",
                    project.slug
                )));
            }
            let needed = project.landing.required_approvals;
            if task.work.review.approvals < needed {
                return Err(Error::conflict(format!(
                    "{key} has {} of the {needed} approvals project {} requires for a merge",
                    task.work.review.approvals, project.slug
                )));
            }
            let work = RunWork {
                purpose: RunPurpose::Land,
                round: task.work.review.round,
                merge_method: Some(request.method),
                changes: Some(changes.summary()),
                ..RunWork::default()
            };
            open_repository_run(tx, actor.id(), &task, work)
        })
        .await
    }

    /// `POST /tasks/{id}/discard`: gives the task back (`todo`, nobody's,
    /// its changes and review forgotten) and queues a `discard` run that
    /// deletes its branch from the repository.
    pub async fn discard_task(&self, actor: &Actor, task_id: Uuid) -> Result<Run> {
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            let task = tx.w.task_required(task_id)?;
            let key = tx.w.task_key_of(&task)?;
            check_lander(tx, &actor, &task, &key, "discard")?;
            if task.status == TaskStatus::Done {
                return Err(Error::conflict(format!("{key} is done; its work has landed")));
            }
            if let Some(live) = live_run_of(tx.w, task_id)? {
                return Err(Error::conflict(format!("{key} has run {live} open; cancel it first")));
            }
            let Some(changes) = tx.w.record::<Changes>(TASK_CHANGES, task_id.as_bytes())? else {
                return Err(Error::conflict(format!("{key} has no changes to discard")));
            };
            let work = RunWork {
                purpose: RunPurpose::Discard,
                round: task.work.review.round,
                changes: Some(changes.summary()),
                ..RunWork::default()
            };
            let run = open_repository_run(tx, actor.id(), &task, work)?;
            tx.w.delete(TASK_CHANGES, task_id.as_bytes())?;
            let mut t = task.clone();
            t.status = TaskStatus::Todo;
            t.assignee_id = None;
            t.lease = None;
            t.work = TaskWork::default();
            Board::save_task_change(tx, actor.id(), &task, t, AuditAction::Updated)?;
            Ok(run)
        })
        .await
    }
}

/// What the end of a run does to its task, by what the run was for: a
/// work run that succeeded is reviewed; a landing that succeeded makes the
/// task done, one that failed is handed back. Called in the transaction
/// that ends the run.
pub(super) fn run_ended(tx: &mut Tx<'_>, rec: &RunRecord, state: RunState) -> Result<()> {
    let Some(task_id) = rec.task_id else { return Ok(()) };
    let Some(task) = tx.w.task(task_id)? else { return Ok(()) };
    match rec.work.purpose {
        RunPurpose::Work if state == RunState::Succeeded && task.status == TaskStatus::Review => {
            start_reviews(tx, &task, rec.agent_id)
        }
        RunPurpose::Land if state == RunState::Succeeded => landed(tx, rec, task),
        RunPurpose::Land if state == RunState::Failed => landing_failed(tx, rec, task),
        _ => Ok(()),
    }
}

fn landed(tx: &mut Tx<'_>, rec: &RunRecord, task: TaskRecord) -> Result<()> {
    let mut t = task.clone();
    t.status = TaskStatus::Done;
    t.lease = None;
    t.work.merge_commit = rec.work.merge_commit.clone();
    Board::save_task_change(tx, rec.agent_id, &task, t, AuditAction::Updated).map(drop)
}

fn landing_failed(tx: &mut Tx<'_>, rec: &RunRecord, task: TaskRecord) -> Result<()> {
    let key = tx.w.task_key_of(&task)?;
    let what = if rec.work.conflicts.is_empty() {
        let tail = super::run_output::output_tail(tx.w, rec.id)?;
        let reason = rec.stop_reason.clone().unwrap_or_else(|| "the landing failed".into());
        if tail.is_empty() { reason } else { format!("{reason}. The end of its output:\n\n```\n{tail}\n```") }
    } else {
        format!("it conflicts with the base in {}", rec.work.conflicts.join(", "))
    };
    let project = tx.w.project_required(task.project_id)?;
    match project.landing.on_conflict {
        OnConflict::Agent => {
            system_comment(
                tx,
                task.id,
                Vec::new(),
                format!(
                    "Landing run {} of {key} failed: {what}. Its agent brings the branch up to date.",
                    rec.id
                ),
            )?;
            let work =
                RunWork { round: task.work.review.round, repairs_run_id: Some(rec.id), ..RunWork::default() };
            open_work_run(tx, rec.requested_by, task, rec.agent_id, work).map(drop)
        }
        OnConflict::Person => system_comment(
            tx,
            task.id,
            vec![rec.requested_by],
            format!(
                "Landing run {} of {key} failed: {what}. Bring the branch up to date, then merge again.",
                rec.id
            ),
        ),
    }
}

/// A `land` run reports its result: the merge commit of a success, the
/// conflicting files of a failure. Other runs report neither.
pub(super) fn check_landing_report(
    rec: &RunRecord,
    merge_commit: &Option<String>,
    conflicts: &Option<Vec<String>>,
) -> Result<()> {
    if rec.work.purpose != RunPurpose::Land && (merge_commit.is_some() || conflicts.is_some()) {
        return Err(Error::invalid(
            "merge_commit",
            format!(
                "run {} is a {} run; only land runs report merge_commit or conflicts",
                rec.id,
                rec.work.purpose.as_str()
            ),
        ));
    }
    if let Some(c) = merge_commit
        && (c.is_empty() || c.len() > 100)
    {
        return Err(Error::invalid("merge_commit", "must be 1 to 100 characters"));
    }
    if let Some(files) = conflicts
        && (files.len() > 10_000 || files.iter().any(|f| f.is_empty() || f.len() > 4096))
    {
        return Err(Error::invalid("conflicts", "at most 10,000 paths of 1 to 4,096 bytes"));
    }
    Ok(())
}
