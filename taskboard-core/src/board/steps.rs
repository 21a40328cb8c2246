//! The checklist steps of a task.

use serde_json::{Value, json};
use uuid::Uuid;

use super::fencing::{Allowed, Fence, Touch};
use super::{Actor, Board, Tx};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::{AuditAction, Step};
use crate::records::{RecordWrites, Records, StepRecord};
use crate::storage::codec::Key;
use crate::storage::tables::STEPS;
use crate::validate::Title;
use crate::wire::StepPatch;

impl Board {
    /// `GET /tasks/{id}/steps`, by position.
    pub async fn list_steps(&self, task: Uuid) -> Result<Vec<Step>> {
        self.read(move |r| {
            r.task_required(task)?;
            Ok(r.steps(task)?.iter().map(StepRecord::to_wire).collect())
        })
        .await
    }

    /// `POST /tasks/{id}/steps`: appended after the last step.
    pub async fn create_step(&self, actor: &Actor, task: Uuid, title: Title) -> Result<Step> {
        let fence = actor.fence();
        self.write_as(actor.request(), move |tx| {
            Board::fence_steps(tx, fence, task)?;
            let position = tx.w.steps(task)?.last().map_or(1, |s| s.position + 1);
            let s = StepRecord {
                id: Uuid::now_v7(),
                task_id: task,
                title: title.to_string(),
                done: false,
                position,
            };
            tx.w.put_record(STEPS, &Key::new().uuid(task).uuid(s.id), &s)?;
            tx.emit_all(EventKind::StepCreated, step_event(&s))?;
            Ok(s.to_wire())
        })
        .await
    }

    /// `PATCH /tasks/{id}/steps/{step_id}`. A `position` moves the step
    /// to that place in the checklist (1 is the first; past the end is
    /// the last) and numbers the task's steps 1, 2, 3… again; every step
    /// whose position changed emits `step.updated`.
    pub async fn update_step(&self, actor: &Actor, task: Uuid, step: Uuid, patch: StepPatch) -> Result<Step> {
        let fence = actor.fence();
        let position = patch.position.value();
        if position.is_some_and(|p| p < 1) {
            return Err(Error::invalid("position", "must be 1 or more (1 is the first step)"));
        }
        self.write_as(actor.request(), move |tx| {
            Board::fence_steps(tx, fence, task)?;
            let mut s =
                tx.w.step(task, step)?
                    .ok_or_else(|| Error::not_found(format!("step {step} not found in task {task}")))?;
            let old = s.clone();
            if let Some(title) = patch.title.value() {
                s.title = title.to_string();
            }
            if let Some(done) = patch.done.value() {
                s.done = done;
            }
            let mut moved = Vec::new();
            if let Some(position) = position {
                let mut steps = tx.w.steps(task)?;
                steps.retain(|other| other.id != s.id);
                let at = usize::try_from(position - 1).unwrap_or(usize::MAX).min(steps.len());
                steps.insert(at, s.clone());
                for (i, mut other) in steps.into_iter().enumerate() {
                    let number = i as i64 + 1;
                    if other.id == s.id {
                        s.position = number;
                    } else if other.position != number {
                        other.position = number;
                        moved.push(other);
                    }
                }
            }
            if (s.title.as_str(), s.done, s.position) == (old.title.as_str(), old.done, old.position)
                && moved.is_empty()
            {
                return Ok(s.to_wire());
            }
            for other in &moved {
                tx.w.put_record(STEPS, &Key::new().uuid(task).uuid(other.id), other)?;
            }
            tx.w.put_record(STEPS, &Key::new().uuid(task).uuid(s.id), &s)?;
            tx.emit_all(EventKind::StepUpdated, step_event(&s))?;
            for other in &moved {
                tx.emit_all(EventKind::StepUpdated, step_event(other))?;
            }
            Ok(s.to_wire())
        })
        .await
    }

    /// `DELETE /tasks/{id}/steps/{step_id}`.
    pub async fn delete_step(&self, actor: &Actor, task: Uuid, step: Uuid) -> Result<()> {
        let fence = actor.fence();
        self.write_as(actor.request(), move |tx| {
            Board::fence_steps(tx, fence, task)?;
            if !tx.w.delete(STEPS, &Key::new().uuid(task).uuid(step))? {
                return Err(Error::not_found(format!("step {step} not found in task {task}")));
            }
            tx.emit_all(EventKind::StepDeleted, json!({"id": step, "task_id": task}))
        })
        .await
    }

    /// Fencing of a change of `task`'s steps: an admin's change ends
    /// another member's lease on it.
    fn fence_steps(tx: &mut Tx<'_>, fence: Fence, task: Uuid) -> Result<()> {
        let old = tx.w.task_required(task)?;
        if fence.check(tx.w, &old, Touch::Work)? == Allowed::EndingLease {
            let mut t = old.clone();
            t.lease = None;
            Board::save_task_change(tx, fence.member, &old, t, AuditAction::Updated)?;
        }
        Ok(())
    }
}

fn step_event(s: &StepRecord) -> Value {
    json!({"id": s.id, "task_id": s.task_id, "title": s.title, "done": s.done, "position": s.position})
}
