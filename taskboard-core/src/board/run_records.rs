//! Runs as a transaction sees them: their keys and indexes, who may start
//! one, who hears of one, and how one is shown. What starts, changes and
//! ends runs is in `runs`, `message_runs` and `run_output`.

use uuid::Uuid;

use super::{Actor, Tx};
use crate::error::{Error, Result};
use crate::events::Audience;
use crate::records::{MemberRecord, RecordWrites, Records, Render};
use crate::runs::{Run, RunRecord, RunTask};
use crate::storage::ReadTxn;
use crate::storage::codec::{Key, uuid_value};
use crate::storage::tables::{AGENT_RUNS, LIVE_RUNS, MESSAGE_RUNS, RUNS, TASK_RUNS};

pub(super) fn run_key(id: Uuid) -> Vec<u8> {
    id.as_bytes().to_vec()
}

pub(super) fn run_required(r: &(impl Records + ?Sized), id: Uuid) -> Result<RunRecord> {
    r.record(RUNS, &run_key(id))?.ok_or_else(|| Error::not_found(format!("run {id} not found")))
}

pub(super) fn render(r: &(impl Records + ?Sized), rec: &RunRecord) -> Result<Run> {
    // A comment's run names its task for context only (`task_id` unset).
    let task = match rec.task_id.or(rec.task.as_ref().map(|t| t.id)) {
        Some(id) => match r.task(id)? {
            Some(t) => Some(RunTask { id, key: r.task_key_of(&t)?, title: t.title }),
            None => rec.task.clone(),
        },
        None => None,
    };
    Ok(Run {
        id: rec.id,
        task,
        project_id: rec.project_id,
        message_id: rec.message_id,
        agent: r.member_ref(rec.agent_id)?,
        runner: rec.runner.clone(),
        state: rec.state,
        created_at: rec.created_at,
        started_at: rec.started_at,
        ended_at: rec.ended_at,
        exit_code: rec.exit_code,
        stop_reason: rec.stop_reason.clone(),
        branch: rec.branch.clone(),
        commit: rec.commit.clone(),
        usage: rec.usage,
        question: rec.question.clone(),
        transcript_count: rec.transcript_count,
        work: rec.work.clone(),
    })
}

/// Who may start a run of `agent`: a person any agent, an agent only
/// itself; only the agent's own runner names itself.
pub(super) fn check_starter(actor: &Actor, agent: Uuid, runner: Option<&str>) -> Result<()> {
    let person = !actor.member.is_agent();
    if !person && agent != actor.id() {
        return Err(Error::forbidden("an agent may start runs of itself only"));
    }
    if let Some(r) = runner {
        if person {
            return Err(Error::invalid("runner", "only the agent's own runner names itself"));
        }
        check_len("runner", r, 1, 200)?;
    }
    Ok(())
}

/// The member a run is started for, if it is an active agent.
pub(super) fn active_agent(tx: &Tx<'_>, id: Uuid) -> Result<MemberRecord> {
    match tx.w.member(id)? {
        Some(m) if m.is_active && m.is_agent() => Ok(m),
        _ => Err(Error::invalid("agent_id", format!("{id} is not an active agent"))),
    }
}

/// Writes a run with its indexes: every run under its task and agent, a
/// run not yet final as its task's live run.
pub(super) fn put_run(tx: &mut Tx<'_>, old: Option<&RunRecord>, rec: &RunRecord) -> Result<()> {
    tx.w.put_record(RUNS, &run_key(rec.id), rec)?;
    if old.is_none() {
        tx.w.put(AGENT_RUNS, &Key::new().uuid(rec.agent_id).uuid(rec.id).build(), &[])?;
        if let Some(m) = rec.message_id {
            tx.w.put(MESSAGE_RUNS, &Key::new().uuid(m).uuid(rec.id).build(), &[])?;
        }
        if let Some(t) = rec.task_id {
            tx.w.put(TASK_RUNS, &Key::new().uuid(t).uuid(rec.id).build(), &[])?;
        }
    }
    // A reviewer's run reads the task beside others; every other run of a
    // task holds it, one at a time.
    if let Some(t) = rec.task_id.filter(|_| rec.work.purpose != crate::review::RunPurpose::Review) {
        if rec.state.is_final() {
            if live_run_of(tx.w, t)? == Some(rec.id) {
                tx.w.delete(LIVE_RUNS, t.as_bytes())?;
            }
        } else {
            tx.w.put(LIVE_RUNS, t.as_bytes(), rec.id.as_bytes())?;
        }
    }
    Ok(())
}

pub(super) fn live_run_of(r: &(impl ReadTxn + ?Sized), task: Uuid) -> Result<Option<Uuid>> {
    r.get(LIVE_RUNS, task.as_bytes())?.map(|v| uuid_value(&v)).transpose()
}

/// Checks a text field's length in characters.
pub(super) fn check_len(field: &str, value: &str, min: usize, max: usize) -> Result<()> {
    let n = value.chars().count();
    if n < min || n > max {
        return Err(Error::invalid(field, format!("must be {min}-{max} characters, got {n}")));
    }
    Ok(())
}

/// Who hears of a run: a run answering a chat message goes to the chat's
/// audience (its project's members; its agent even when it listens for
/// mentions only); any other run to everyone, as `task.updated` does.
pub(super) fn run_audience(r: &(impl Records + ?Sized), rec: &RunRecord) -> Result<Audience> {
    if rec.task_id.is_some() {
        return Ok(Audience::All);
    }
    let Some(chat) = rec.message_id.map(|m| r.message(m)).transpose()?.flatten().and_then(|m| m.chat_id)
    else {
        return Ok(Audience::All);
    };
    match r.chat(chat)? {
        Some(c) => Ok(Audience::Chat {
            project_members: r.project_member_ids(c.project_id)?,
            mentions: vec![rec.agent_id],
        }),
        None => Ok(Audience::All),
    }
}
