//! Runs (docs/rules.md, runs): an agent's attempt at a task, holding the
//! task's lease. A person or the agent's runner starts one; only the
//! agent (its runner) writes its state and transcript; a final state
//! never changes. Whatever ends the task's lease otherwise ends the run:
//! an expiry ends it `lost`, a move, reassignment, release, rejection or
//! deletion ends it `cancelled` (`end_live_run`). The transcript and its
//! events are `run_output`'s.

use std::sync::Arc;

use serde_json::json;
use uuid::Uuid;

use super::rights::load_actor_member;
use super::run_output::{
    OutputPaces, Writer, check_entry, entries_after, output_tail, pace_output, push_entry,
};
use super::run_records::{
    active_agent, check_len, check_starter, live_run_of, put_run, render, run_audience, run_key, run_required,
};
use super::tasks::member_slug;
use super::{Actor, Board, Tx};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::{AuditAction, AuthorType, TaskStatus};
use crate::records::{MemberRecord, MessageRecord, Records, Render, TaskRecord};
use crate::runs::{
    DEFAULT_RUN_LEASE_SECONDS, EntryKind, MAX_ENTRIES_PER_APPEND, Question, Run, RunRecord, RunState,
    RunTask, RunWork, TranscriptEntry,
};
use crate::storage::codec::uuid_suffix;
use crate::storage::tables::{AGENT_RUNS, MESSAGE_RUNS, RUNS, TASK_RUNS};
use crate::storage::{Direction, KeyRange, Scan};
use crate::wire::{
    CursorKind, NewEntry, NewRun, Paged, RunAnswer, RunListQuery, RunPatch, TranscriptQuery, decode_cursor,
    encode_cursor,
};

fn check_question(q: &Question) -> Result<()> {
    check_len("question.id", &q.id, 1, 100)?;
    check_len("question.text", &q.text, 1, 10_000)?;
    if q.options.len() > 20 {
        return Err(Error::invalid("question.options", "at most 20 options"));
    }
    for (i, o) in q.options.iter().enumerate() {
        check_len(&format!("question.options[{i}].id"), &o.id, 1, 100)?;
        check_len(&format!("question.options[{i}].label"), &o.label, 1, 500)?;
        if q.options[..i].iter().any(|p| p.id == o.id) {
            return Err(Error::invalid(&format!("question.options[{i}].id"), format!("{:?} twice", o.id)));
        }
    }
    Ok(())
}

impl Board {
    pub(super) fn output_paces(&self) -> Arc<OutputPaces> {
        self.inner.run_output.clone()
    }

    fn transcript_cap(&self) -> u64 {
        self.inner.options.transcript_cap
    }

    /// `GET /runs`: newest first, from the index of the task or agent
    /// asked for, or of the whole board.
    pub async fn list_runs(&self, q: RunListQuery) -> Result<Paged<Run>> {
        let limit = q.limit.unwrap_or(50);
        if !(1..=1000).contains(&limit) {
            return Err(Error::invalid("limit", format!("must be 1-1000, got {limit}")));
        }
        let after = q.cursor.as_deref().map(|c| decode_cursor(CursorKind::Runs, c)).transpose()?;
        self.read(move |r| {
            let (table, prefix) = match (q.message_id, q.task_id, q.agent_id) {
                (Some(m), _, _) => (MESSAGE_RUNS, m.as_bytes().to_vec()),
                (None, Some(t), _) => (TASK_RUNS, t.as_bytes().to_vec()),
                (None, None, Some(a)) => (AGENT_RUNS, a.as_bytes().to_vec()),
                (None, None, None) => (RUNS, Vec::new()),
            };
            let mut range = KeyRange::prefix(&prefix);
            if let Some(after) = &after {
                range.end = std::ops::Bound::Excluded([prefix.as_slice(), after].concat());
            }
            let mut items = Vec::new();
            let mut last = Vec::new();
            r.scan(table, range, Direction::Reverse, &mut |k, _| {
                let id = uuid_suffix(k)?;
                let Some(rec) = r.record::<RunRecord>(RUNS, &run_key(id))? else { return Ok(Scan::Continue) };
                if q.state.is_some_and(|s| s != rec.state)
                    || q.agent_id.is_some_and(|a| a != rec.agent_id)
                    || q.task_id.is_some_and(|t| rec.task_id != Some(t))
                {
                    return Ok(Scan::Continue);
                }
                items.push(render(r, &rec)?);
                if items.len() >= limit as usize {
                    last = id.as_bytes().to_vec();
                    return Ok(Scan::Stop);
                }
                Ok(Scan::Continue)
            })?;
            let next = (items.len() == limit as usize).then(|| encode_cursor(CursorKind::Runs, &last));
            Ok(Paged { items, next })
        })
        .await
    }

    /// `GET /runs/{id}`.
    pub async fn get_run(&self, id: Uuid) -> Result<Run> {
        self.read(move |r| render(r, &run_required(r, id)?)).await
    }

    /// `GET /runs/{id}/transcript`: entries after `after`, in order.
    pub async fn transcript(&self, id: Uuid, q: TranscriptQuery) -> Result<Vec<TranscriptEntry>> {
        let limit = q.limit.unwrap_or(200);
        if !(1..=1000).contains(&limit) {
            return Err(Error::invalid("limit", format!("must be 1-1000, got {limit}")));
        }
        self.read(move |r| {
            run_required(r, id)?;
            entries_after(r, id, q.after.unwrap_or(0), limit as usize, u64::MAX)
        })
        .await
    }

    /// `POST /tasks/{id}/runs`: the task goes to the agent under a lease
    /// and the run starts `starting`.
    pub async fn start_run(&self, actor: &Actor, task_id: Uuid, new: NewRun) -> Result<Run> {
        let seconds = super::fencing::check_lease(new.lease_seconds)?.unwrap_or(DEFAULT_RUN_LEASE_SECONDS);
        let me = actor.id();
        let person = !actor.member.is_agent();
        check_starter(actor, new.agent_id, new.runner.as_deref())?;
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            let agent = active_agent(tx, new.agent_id)?;
            let old = tx.w.task_required(task_id)?;
            let key = tx.w.task_key_of(&old)?;
            if person {
                check_run_starter(tx, &actor, &agent, &old, &key)?;
            }
            if let Some(live) = live_run_of(tx.w, task_id)? {
                return Err(Error::conflict(format!("{key} already has run {live}, which has not ended")));
            }
            if old.status == TaskStatus::Done {
                return Err(Error::conflict(format!("{key} is done")));
            }
            match old.lease {
                // Work the agent claimed: the run takes over the lease as it is.
                Some(l) if l.holder == agent.id => {}
                Some(l) => {
                    return Err(Error::conflict(format!(
                        "{key} is held under a lease by {}",
                        member_slug(tx.w, Some(l.holder))?
                    )));
                }
                None if old.assignee_id.is_none()
                    && matches!(old.status, TaskStatus::Backlog | TaskStatus::Todo) =>
                {
                    Board::take_in(tx, agent.id, old, Some(seconds))?;
                }
                None if !person && old.assignee_id != Some(me) => {
                    return Err(Error::conflict(format!(
                        "{key} is assigned to {}",
                        member_slug(tx.w, old.assignee_id)?
                    )));
                }
                None => {
                    let mut t = old.clone();
                    t.assignee_id = Some(agent.id);
                    t.status = TaskStatus::InProgress;
                    t.add_watcher(agent.id);
                    t.lease = Some(super::work::lease(Uuid::new_v4(), agent.id, tx.now, seconds));
                    Board::save_task_change(tx, me, &old, t, AuditAction::Assign)?;
                }
            }
            let task = tx.w.task_required(task_id)?;
            let rec = RunRecord {
                task_id: Some(task_id),
                task: Some(RunTask { id: task_id, key: key.clone(), title: task.title.clone() }),
                project_id: Some(task.project_id),
                message_id: None,
                work: RunWork { round: task.work.review.round.max(1), ..RunWork::default() },
                ..RunRecord::starting(agent.id, me, new.runner.clone(), tx.now)
            };
            put_run(tx, None, &rec)?;
            let run = render(tx.w, &rec)?;
            tx.emit_all(EventKind::RunCreated, &run)?;
            Ok(run)
        })
        .await
    }

    /// `PATCH /runs/{id}`: the run's agent reports.
    pub async fn update_run(&self, actor: &Actor, id: Uuid, patch: RunPatch) -> Result<Run> {
        if let Some(s) = &patch.runner {
            check_len("runner", s, 1, 200)?;
        }
        if let Some(s) = &patch.stop_reason {
            check_len("stop_reason", s, 0, 2000)?;
        }
        if let Some(s) = &patch.branch {
            check_len("branch", s, 1, 250)?;
        }
        if let Some(s) = &patch.commit {
            check_len("commit", s, 1, 100)?;
        }
        if let crate::wire::Patch::Value(q) = &patch.question {
            check_question(q)?;
        }
        match patch.state {
            Some(RunState::Starting) => {
                return Err(Error::invalid("state", "a run cannot go back to starting"));
            }
            Some(RunState::Lost) => {
                return Err(Error::invalid("state", "a run ends lost only when its lease expires"));
            }
            _ => {}
        }
        let me = actor.id();
        let cap = self.transcript_cap();
        let paces = self.output_paces();
        self.write_as(actor.request(), move |tx| {
            let old = own_open_run(tx, id, me, "it")?;
            super::landing::check_landing_report(&old, &patch.merge_commit, &patch.conflicts)?;
            let mut rec = old.clone();
            if let Some(c) = patch.merge_commit {
                rec.work.merge_commit = Some(c);
            }
            if let Some(files) = patch.conflicts {
                rec.work.conflicts = files;
            }
            if let Some(v) = patch.runner {
                if let Some(held) = old.runner.as_ref().filter(|r| **r != v) {
                    return Err(Error::conflict(format!("run {id} is started by runner {held}")));
                }
                rec.runner = Some(v);
            }
            if let Some(v) = patch.exit_code {
                rec.exit_code = Some(v);
            }
            if let Some(v) = patch.stop_reason {
                rec.stop_reason = Some(v);
            }
            if let Some(v) = patch.branch {
                rec.branch = Some(v);
            }
            if let Some(v) = patch.commit {
                rec.commit = Some(v);
            }
            if let Some(v) = patch.usage {
                rec.usage = Some(v);
            }
            let mut state = patch.state;
            match patch.question {
                crate::wire::Patch::Value(q) => {
                    let data = serde_json::to_value(&q).map_err(Error::internal)?;
                    push_entry(
                        tx,
                        &mut rec,
                        cap,
                        Writer::Board,
                        EntryKind::Question,
                        q.text.clone(),
                        Some(data),
                    )?;
                    rec.question = Some(q);
                    state.get_or_insert(RunState::AwaitingInput);
                }
                crate::wire::Patch::Null => {
                    rec.question = None;
                    if rec.state == RunState::AwaitingInput {
                        state.get_or_insert(RunState::Running);
                    }
                }
                crate::wire::Patch::Absent => {}
            }
            match state {
                Some(RunState::AwaitingInput) if rec.question.is_none() => {
                    return Err(Error::invalid("state", "awaiting_input needs a question"));
                }
                Some(RunState::Running) => rec.question = None,
                _ => {}
            }
            if let Some(s) = state
                && s.is_final()
            {
                return Board::finish_run(tx, &paces, cap, old, rec, s, me);
            }
            if let Some(s) = state
                && s != rec.state
            {
                rec.state = s;
                if s == RunState::Running && rec.started_at.is_none() {
                    rec.started_at = Some(tx.now);
                }
                push_entry(tx, &mut rec, cap, Writer::Board, EntryKind::State, s.to_string(), None)?;
            }
            put_run(tx, Some(&old), &rec)?;
            pace_output(tx, &paces, old.transcript_count, &rec, false)?;
            let run = render(tx.w, &rec)?;
            let audience = run_audience(tx.w, &rec)?;
            tx.emit(EventKind::RunUpdated, &run, audience)?;
            Ok(run)
        })
        .await
    }

    /// Ends a run in the final `state`, and then its task: `succeeded`
    /// moves it to review; any other end gives it back with a comment
    /// quoting the tail of the output, when the agent still holds it.
    fn finish_run(
        tx: &mut Tx<'_>,
        paces: &OutputPaces,
        cap: u64,
        old: RunRecord,
        mut rec: RunRecord,
        state: RunState,
        actor: Uuid,
    ) -> Result<Run> {
        rec.state = state;
        rec.ended_at = Some(tx.now);
        rec.question = None;
        let text = match (rec.exit_code, &rec.stop_reason) {
            (Some(c), Some(r)) => format!("{state} (exit code {c}): {r}"),
            (Some(c), None) => format!("{state} (exit code {c})"),
            (None, Some(r)) => format!("{state}: {r}"),
            (None, None) => state.to_string(),
        };
        push_entry(tx, &mut rec, cap, Writer::Board, EntryKind::State, text.clone(), None)?;
        put_run(tx, Some(&old), &rec)?;
        pace_output(tx, paces, old.transcript_count, &rec, true)?;
        let run = render(tx.w, &rec)?;
        let audience = run_audience(tx.w, &rec)?;
        tx.emit(EventKind::RunUpdated, &run, audience)?;
        if rec.work.purpose.is_work() {
            Board::work_run_ended(tx, &rec, state, text, actor)?;
        }
        super::landing::run_ended(tx, &rec, state)?;
        Ok(run)
    }

    /// What the end of a work run does to its task, when its agent still
    /// holds it: `succeeded` moves it to review; any other end gives it
    /// back with a comment quoting the tail of the output.
    fn work_run_ended(
        tx: &mut Tx<'_>,
        rec: &RunRecord,
        state: RunState,
        text: String,
        actor: Uuid,
    ) -> Result<()> {
        let Some(task_id) = rec.task_id else { return Ok(()) };
        let Some(task) = tx.w.task(task_id)? else { return Ok(()) };
        if task.assignee_id != Some(rec.agent_id) || task.status != TaskStatus::InProgress {
            return Ok(());
        }
        if state == RunState::Succeeded {
            let mut t = task.clone();
            t.status = TaskStatus::Review;
            Board::save_task_change(tx, rec.agent_id, &task, t, AuditAction::Updated)?;
        } else {
            let tail = output_tail(tx.w, rec.id)?;
            Board::release_in(tx, actor, task, Some(format!("run {text}")), AuditAction::Release)?;
            let content = if tail.is_empty() {
                format!("Run {} ended {text}, without output.", rec.id)
            } else {
                format!("Run {} ended {text}. The end of its output:\n\n```\n{tail}\n```", rec.id)
            };
            agent_comment(tx, rec.agent_id, task_id, content)?;
        }
        Ok(())
    }

    /// `POST /runs/{id}/transcript`: the run's agent appends.
    pub async fn append_transcript(&self, actor: &Actor, id: Uuid, entries: Vec<NewEntry>) -> Result<Run> {
        if entries.is_empty() || entries.len() > MAX_ENTRIES_PER_APPEND {
            return Err(Error::invalid(
                "entries",
                format!("must hold 1-{MAX_ENTRIES_PER_APPEND} entries, got {}", entries.len()),
            ));
        }
        for (i, e) in entries.iter().enumerate() {
            check_entry(i, e)?;
        }
        let me = actor.id();
        let cap = self.transcript_cap();
        let paces = self.output_paces();
        paces.take_append(id)?;
        self.write_as(actor.request(), move |tx| {
            let old = own_open_run(tx, id, me, "its transcript")?;
            let mut rec = old.clone();
            for e in entries {
                push_entry(tx, &mut rec, cap, Writer::Agent, e.kind, e.text, e.data)?;
            }
            put_run(tx, Some(&old), &rec)?;
            pace_output(tx, &paces, old.transcript_count, &rec, false)?;
            render(tx.w, &rec)
        })
        .await
    }

    /// `POST /runs/{id}/cancel`.
    pub async fn cancel_run(&self, actor: &Actor, id: Uuid) -> Result<Run> {
        let me = actor.id();
        let agent = actor.member.is_agent();
        let cap = self.transcript_cap();
        let paces = self.output_paces();
        self.write_as(actor.request(), move |tx| {
            let old = run_required(tx.w, id)?;
            if agent && old.agent_id != me {
                return Err(Error::forbidden("an agent may cancel only its own runs"));
            }
            check_open(&old)?;
            let mut rec = old.clone();
            rec.stop_reason = Some(format!("cancelled by {}", member_slug(tx.w, Some(me))?));
            Board::finish_run(tx, &paces, cap, old, rec, RunState::Cancelled, me)
        })
        .await
    }

    /// `POST /runs/{id}/answer`: a person answers the open question.
    pub async fn answer_run(&self, actor: &Actor, id: Uuid, answer: RunAnswer) -> Result<Run> {
        if actor.member.is_agent() {
            return Err(Error::forbidden("a person answers a run's question, not an agent"));
        }
        match (&answer.option_id, &answer.text) {
            (Some(_), Some(_)) => return Err(Error::invalid("text", "give option_id or text, not both")),
            (None, None) => return Err(Error::bad_request("an answer needs option_id or text")),
            (None, Some(t)) => check_len("text", t, 1, 10_000)?,
            (Some(_), None) => {}
        }
        let cap = self.transcript_cap();
        let paces = self.output_paces();
        let me = actor.id();
        self.write_as(actor.request(), move |tx| {
            let old = run_required(tx.w, id)?;
            check_open(&old)?;
            let Some(q) = old.question.clone().filter(|_| old.state == RunState::AwaitingInput) else {
                return Err(Error::conflict(format!("run {id} has no open question")));
            };
            let text = match (&answer.option_id, answer.text) {
                (Some(o), _) => match q.options.iter().find(|p| &p.id == o) {
                    Some(p) => p.label.clone(),
                    None => {
                        let ids: Vec<_> = q.options.iter().map(|p| p.id.as_str()).collect();
                        return Err(Error::invalid(
                            "option_id",
                            format!("{o:?} is not an option of the question; options: {}", ids.join(", ")),
                        ));
                    }
                },
                (None, Some(t)) => t,
                (None, None) => unreachable!("checked above"),
            };
            let mut rec = old.clone();
            let data = json!({"question_id": q.id, "option_id": answer.option_id, "by": me});
            push_entry(tx, &mut rec, cap, Writer::Board, EntryKind::Answer, text, Some(data))?;
            rec.question = None;
            rec.state = RunState::Running;
            put_run(tx, Some(&old), &rec)?;
            pace_output(tx, &paces, old.transcript_count, &rec, true)?;
            let run = render(tx.w, &rec)?;
            let audience = run_audience(tx.w, &rec)?;
            tx.emit(EventKind::RunUpdated, &run, audience)?;
            Ok(run)
        })
        .await
    }

    /// The lease of `task` ended other than by its run's own end: the
    /// run, if one is live, ends `state` (`lost` for an expired lease,
    /// `cancelled` otherwise). The task is left to the caller.
    pub(super) fn end_live_run(tx: &mut Tx<'_>, task: Uuid, state: RunState, reason: &str) -> Result<()> {
        let Some(id) = live_run_of(tx.w, task)? else { return Ok(()) };
        let old = run_required(tx.w, id)?;
        let mut rec = old.clone();
        rec.state = state;
        rec.ended_at = Some(tx.now);
        rec.question = None;
        rec.stop_reason = Some(reason.to_string());
        // The cap does not apply to state entries.
        push_entry(
            tx,
            &mut rec,
            u64::MAX,
            Writer::Board,
            EntryKind::State,
            format!("{state}: {reason}"),
            None,
        )?;
        put_run(tx, Some(&old), &rec)?;
        let run = render(tx.w, &rec)?;
        let audience = run_audience(tx.w, &rec)?;
        tx.emit(EventKind::RunUpdated, &run, audience)
    }
}

/// The run `id`, written by its own agent (`me`) while it is open; `what`
/// names what is written, for the refusal.
fn own_open_run(tx: &mut Tx<'_>, id: Uuid, me: Uuid, what: &str) -> Result<RunRecord> {
    let old = run_required(tx.w, id)?;
    if old.agent_id != me {
        return Err(Error::forbidden(format!("only the run's agent may write {what}")));
    }
    check_open(&old)?;
    Ok(old)
}

pub(super) fn check_open(rec: &RunRecord) -> Result<()> {
    if rec.state.is_final() {
        return Err(Error::conflict(format!("run {} is {}; a final state never changes", rec.id, rec.state)));
    }
    Ok(())
}

/// A comment on a task written in the agent's name.
fn agent_comment(tx: &mut Tx<'_>, agent: Uuid, task: Uuid, content: String) -> Result<()> {
    let mut m = MessageRecord {
        task_id: Some(task),
        author_id: Some(agent),
        ..MessageRecord::plain(tx.now, AuthorType::Agent, content)
    };
    Board::write_message(tx, &mut m, None).map(drop)
}

/// A person starts a run, which runs a program on a runner's machine, only
/// on a task of a project they belong to (or as an admin or owner), and
/// only of an agent that belongs to that project (docs/decisions.md, 20.g).
fn check_run_starter(
    tx: &Tx<'_>,
    actor: &Actor,
    agent: &MemberRecord,
    task: &TaskRecord,
    key: &str,
) -> Result<()> {
    let acting = load_actor_member(tx, actor)?;
    let project = task.project_id;
    let slug = || -> Result<String> { Ok(tx.w.project_required(project)?.slug) };
    if !acting.role.is_admin() && tx.w.project_role(project, acting.id)?.is_none() {
        return Err(Error::forbidden(format!(
            "only members of project {} (or an admin) may start runs on {key}; ask an admin to add you",
            slug()?
        )));
    }
    if tx.w.project_role(project, agent.id)?.is_none() {
        return Err(Error::forbidden(format!(
            "agent {} is not a member of project {}; add it to the project before starting its runs there",
            agent.slug,
            slug()?
        )));
    }
    Ok(())
}
