//! An agent's changes (docs/rules.md, review and land): its runner records
//! the task's branch against the base and the run's own change when a run
//! ends; the board serves both without the repository.

use uuid::Uuid;

use super::run_records::{put_run, render, run_audience, run_required};
use super::runs::check_open;
use super::{Actor, Board};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::AuditAction;
use crate::records::Render;
use crate::records::{RecordWrites, Records};
use crate::review::{Changes, ChangesReport, ReviewState, RunPurpose};
use crate::runs::Run;
use crate::storage::tables::{RUN_CHANGES, TASK_CHANGES};

impl Board {
    /// `POST /runs/{id}/changes`: the run's agent (its runner) records the
    /// task's change against the base and, when given, the run's own. The
    /// task shows the branch, head and counts; a new head is a new review
    /// (`pending`, its approvals counted again).
    pub async fn record_changes(&self, actor: &Actor, id: Uuid, report: ChangesReport) -> Result<Run> {
        let task_changes = report.task.checked("task")?;
        let run_changes = report.run.map(|r| r.checked("run")).transpose()?;
        let me = actor.id();
        self.write_as(actor.request(), move |tx| {
            let old = run_required(tx.w, id)?;
            if old.agent_id != me {
                return Err(Error::forbidden("only the run's agent records its changes"));
            }
            check_open(&old)?;
            if !matches!(old.work.purpose, RunPurpose::Work) {
                return Err(Error::conflict(format!(
                    "run {id} is a {} run; only work runs record changes",
                    old.work.purpose.as_str()
                )));
            }
            let Some(task_id) = old.task_id else {
                return Err(Error::conflict(format!("run {id} answers a message; it has no task to change")));
            };
            let task = tx.w.task_required(task_id)?;
            let changes = task_changes.recorded(id, tx.now);
            let mut rec = old.clone();
            if let Some(r) = run_changes {
                let r = r.recorded(id, tx.now);
                rec.work.changes = Some(r.summary());
                tx.w.put_record(RUN_CHANGES, id.as_bytes(), &r)?;
            } else {
                rec.work.changes = Some(changes.summary());
                tx.w.put_record(RUN_CHANGES, id.as_bytes(), &changes)?;
            }
            rec.branch = Some(changes.branch.clone());
            rec.commit = Some(changes.head_commit.clone());
            let mut t = task.clone();
            let moved = t.work.changes.as_ref().is_none_or(|c| c.head_commit != changes.head_commit);
            t.work.changes = Some(changes.summary());
            t.work.agent_id = Some(old.agent_id);
            t.work.review.round = t.work.review.round.max(1);
            if moved {
                t.work.review.state = ReviewState::Pending;
                t.work.review.approvals = 0;
                t.work.merge_commit = None;
            }
            tx.w.put_record(TASK_CHANGES, task_id.as_bytes(), &changes)?;
            put_run(tx, Some(&old), &rec)?;
            if t.work != task.work {
                Board::save_task_change(tx, me, &task, t, AuditAction::Updated)?;
            }
            let run = render(tx.w, &rec)?;
            let audience = run_audience(tx.w, &rec)?;
            tx.emit(EventKind::RunUpdated, &run, audience)?;
            Ok(run)
        })
        .await
    }

    /// `GET /tasks/{id}/changes`: the task's branch against its base, as
    /// the last run that recorded it saw it.
    pub async fn task_changes(&self, id: Uuid) -> Result<Changes> {
        self.read(move |r| {
            let task = r.task_required(id)?;
            r.record::<Changes>(TASK_CHANGES, id.as_bytes())?.ok_or_else(|| {
                let key = r.task_key_of(&task).unwrap_or_else(|_| id.to_string());
                Error::not_found(format!("{key} has no changes yet: no run of it has recorded any"))
            })
        })
        .await
    }

    /// `GET /runs/{id}/changes`: one run's own change (its round's).
    pub async fn run_changes(&self, id: Uuid) -> Result<Changes> {
        self.read(move |r| {
            run_required(r, id)?;
            r.record::<Changes>(RUN_CHANGES, id.as_bytes())?
                .ok_or_else(|| Error::not_found(format!("run {id} has recorded no changes")))
        })
        .await
    }
}
