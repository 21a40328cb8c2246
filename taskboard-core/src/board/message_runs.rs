//! Runs answering a message (docs/rules.md, runs): an agent asked, by a
//! person or by its own runner, to answer a chat message or a task
//! comment. Such a run holds no lease: a comment's run names its task
//! for context only and never moves it. At most one run of an agent
//! answers a message at a time, which is what keeps two runners of the
//! agent from answering it twice.

use uuid::Uuid;

use super::run_records::{active_agent, check_starter, put_run, render, run_audience, run_required};
use super::{Actor, Board};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::records::{Records, Render};
use crate::runs::{Run, RunRecord, RunTask};
use crate::storage::codec::uuid_suffix;
use crate::storage::tables::MESSAGE_RUNS;
use crate::storage::{Direction, KeyRange, Scan};
use crate::wire::NewMessageRun;

/// The run of `agent` answering `message` that has not ended (any run of
/// it when `any`), if there is one.
fn run_of(r: &(impl Records + ?Sized), message: Uuid, agent: Uuid, any: bool) -> Result<Option<RunRecord>> {
    let mut found = None;
    r.scan(MESSAGE_RUNS, KeyRange::prefix(message.as_bytes()), Direction::Forward, &mut |k, _| {
        let id = uuid_suffix(k)?;
        let rec = run_required(r, id)?;
        if rec.agent_id == agent && (any || !rec.state.is_final()) {
            found = Some(rec);
            return Ok(Scan::Stop);
        }
        Ok(Scan::Continue)
    })?;
    Ok(found)
}

impl Board {
    /// `POST /messages/{id}/runs`: the agent is asked to answer the
    /// message; the run starts `starting`.
    pub async fn start_message_run(
        &self,
        actor: &Actor,
        message_id: Uuid,
        new: NewMessageRun,
    ) -> Result<Run> {
        let me = actor.id();
        let person = !actor.member.is_agent();
        check_starter(actor, new.agent_id, new.runner.as_deref())?;
        self.write_as(actor.request(), move |tx| {
            let agent = active_agent(tx, new.agent_id)?;
            let m =
                tx.w.message(message_id)?
                    .ok_or_else(|| Error::not_found(format!("message {message_id} not found")))?;
            if m.author_id == Some(agent.id) {
                return Err(Error::conflict(format!(
                    "message {message_id} is {}'s own; an agent does not answer itself",
                    agent.slug
                )));
            }
            let (project_id, task) = match (m.chat_id, m.task_id) {
                (Some(c), _) => {
                    let chat =
                        tx.w.chat(c)?.ok_or_else(|| Error::not_found(format!("chat {c} not found")))?;
                    (chat.project_id, None)
                }
                (None, Some(t)) => {
                    let task = tx.w.task_required(t)?;
                    (task.project_id, Some(task))
                }
                (None, None) => return Err(Error::internal("message without chat or task")),
            };
            let member = tx.w.project_member_ids(project_id)?.contains(&agent.id);
            let sees = member
                || task.as_ref().is_some_and(|t| {
                    m.mention_ids.contains(&agent.id)
                        || t.watcher_ids.contains(&agent.id)
                        || t.assignee_id == Some(agent.id)
                        || t.reviewer_id == Some(agent.id)
                });
            if !sees {
                return Err(Error::forbidden(format!(
                    "{} does not see message {message_id}: it is not a member of the message's project",
                    agent.slug
                )));
            }
            // A runner asks once: one that sees the message late finds it answered.
            if let Some(run) = run_of(tx.w, message_id, agent.id, !person)? {
                return Err(Error::conflict(format!(
                    "{} already has run {} answering message {message_id} ({})",
                    agent.slug, run.id, run.state
                )));
            }
            let task = match task {
                Some(t) => Some(RunTask { id: t.id, key: tx.w.task_key_of(&t)?, title: t.title }),
                None => None,
            };
            let rec = RunRecord {
                task_id: None,
                task,
                project_id: Some(project_id),
                message_id: Some(message_id),
                ..RunRecord::starting(agent.id, me, new.runner.clone(), tx.now)
            };
            put_run(tx, None, &rec)?;
            let run = render(tx.w, &rec)?;
            let audience = run_audience(tx.w, &rec)?;
            tx.emit(EventKind::RunCreated, &run, audience)?;
            Ok(run)
        })
        .await
    }
}
