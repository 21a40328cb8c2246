//! Reviews (docs/rules.md, review and land): a verdict and line comments
//! on a task's changes, by a person or an agent. Asking for changes starts
//! the next round, a run of the task's agent on the same branch; reviewer
//! agents send work back at most `max_rounds` times, then the task goes
//! to the person who created it.

use uuid::Uuid;

use super::run_records::{live_run_of, put_run, render};
use super::{Actor, Board, Tx};
use crate::error::{Error, Result};
use crate::events::{Audience, EventKind};
use crate::model::{AuditAction, AuthorType, TaskStatus};
use crate::records::{MessageRecord, RecordWrites, Records, Render, TaskRecord};
use crate::review::{
    Changes, DiffLines, MAX_REVIEW_COMMENTS, MAX_REVIEW_TEXT, NewReview, Review, ReviewComment,
    ReviewCommentRecord, ReviewRecord, ReviewState, RunPurpose, Side, Verdict,
};
use crate::runs::{DEFAULT_RUN_LEASE_SECONDS, Run, RunRecord, RunTask, RunWork};
use crate::storage::codec::{Key, decode};
use crate::storage::tables::{REVIEWS, TASK_CHANGES};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan};

fn check_text(field: &str, text: &str) -> Result<()> {
    if text.len() > MAX_REVIEW_TEXT {
        return Err(Error::invalid(field, format!("must be at most {MAX_REVIEW_TEXT} bytes")));
    }
    Ok(())
}

/// Checks a review before anything is read: sizes, and that asking for
/// changes says what.
fn check_review(new: &NewReview) -> Result<()> {
    check_text("body", &new.body)?;
    if new.comments.len() > MAX_REVIEW_COMMENTS {
        return Err(Error::invalid("comments", format!("at most {MAX_REVIEW_COMMENTS} comments")));
    }
    for (i, c) in new.comments.iter().enumerate() {
        check_text(&format!("comments[{i}].body"), &c.body)?;
        if c.body.trim().is_empty() {
            return Err(Error::invalid(&format!("comments[{i}].body"), "must not be empty"));
        }
        if c.line == 0 {
            return Err(Error::invalid(&format!("comments[{i}].line"), "lines count from 1"));
        }
    }
    if new.verdict == Verdict::RequestChanges && new.body.trim().is_empty() && new.comments.is_empty() {
        return Err(Error::invalid("body", "asking for changes needs a body or comments saying which"));
    }
    if new.verdict == Verdict::Comment && new.body.trim().is_empty() && new.comments.is_empty() {
        return Err(Error::invalid("body", "a comment review needs a body or comments"));
    }
    Ok(())
}

fn review_key(task: Uuid, review: Uuid) -> Vec<u8> {
    Key::new().uuid(task).uuid(review).build()
}

pub(super) fn reviews_of(r: &(impl ReadTxn + ?Sized), task: Uuid) -> Result<Vec<ReviewRecord>> {
    let mut out = Vec::new();
    r.scan(REVIEWS, KeyRange::prefix(task.as_bytes()), Direction::Forward, &mut |_, v| {
        out.push(decode(v)?);
        Ok(Scan::Continue)
    })?;
    Ok(out)
}

/// A review as shown: each comment outdated once the task's head moved
/// and the line it was made on reads otherwise, or left the diff.
fn render_review(r: &(impl Records + ?Sized), rec: &ReviewRecord, now: Option<&Changes>) -> Result<Review> {
    let lines = now.map(|c| DiffLines::parse(&c.diff));
    let comments = rec
        .comments
        .iter()
        .map(|c| {
            let outdated = match (now, &lines) {
                (Some(changes), Some(lines)) if changes.head_commit != rec.head_commit => {
                    lines.line(&c.path, c.side, c.line) != Some(c.text.as_str())
                }
                _ => false,
            };
            ReviewComment {
                path: c.path.clone(),
                line: c.line,
                side: c.side,
                body: c.body.clone(),
                text: c.text.clone(),
                outdated,
            }
        })
        .collect();
    Ok(Review {
        id: rec.id,
        task_id: rec.task_id,
        author: r.member_ref(rec.author_id)?,
        verdict: rec.verdict,
        body: rec.body.clone(),
        comments,
        head_commit: rec.head_commit.clone(),
        round: rec.round,
        created_at: rec.created_at,
    })
}

/// Approvals of `head`: one per member whose last review of it approves.
fn approvals(reviews: &[ReviewRecord], head: &str) -> u32 {
    let mut last: Vec<(Uuid, Verdict)> = Vec::new();
    for r in reviews.iter().filter(|r| r.head_commit == head && r.verdict != Verdict::Comment) {
        match last.iter_mut().find(|(m, _)| *m == r.author_id) {
            Some(entry) => entry.1 = r.verdict,
            None => last.push((r.author_id, r.verdict)),
        }
    }
    last.iter().filter(|(_, v)| *v == Verdict::Approve).count() as u32
}

impl Board {
    /// `POST /tasks/{id}/reviews`: any member who may change the task,
    /// person or agent, but not the agent whose work it is. Line comments
    /// anchor to lines of the task's diff; `request_changes` starts the
    /// next round.
    pub async fn create_review(&self, actor: &Actor, task_id: Uuid, new: NewReview) -> Result<Review> {
        check_review(&new)?;
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            let acting = super::rights::load_actor_member(tx, &actor)?;
            let task = tx.w.task_required(task_id)?;
            let key = tx.w.task_key_of(&task)?;
            let changes = tx.w.record::<Changes>(TASK_CHANGES, task_id.as_bytes())?.ok_or_else(|| {
                Error::conflict(format!("{key} has no changes to review: no run of it has recorded any"))
            })?;
            if task.status == TaskStatus::Done {
                return Err(Error::conflict(format!("{key} is done; its work has landed")));
            }
            if task.work.agent_id == Some(acting.id) {
                return Err(Error::forbidden(format!(
                    "{} did the work of {key}; another member reviews it",
                    acting.slug
                )));
            }
            let lines = DiffLines::parse(&changes.diff);
            let mut comments = Vec::with_capacity(new.comments.len());
            for (i, c) in new.comments.into_iter().enumerate() {
                let side = match c.side {
                    Side::New => "new",
                    Side::Old => "old",
                };
                let text = lines.line(&c.path, c.side, c.line).ok_or_else(|| {
                    Error::invalid(
                        &format!("comments[{i}]"),
                        format!("line {} ({side} side) of {} is not in the diff of {key}", c.line, c.path),
                    )
                })?;
                comments.push(ReviewCommentRecord {
                    path: c.path,
                    line: c.line,
                    side: c.side,
                    body: c.body,
                    text: text.to_string(),
                });
            }
            let rec = ReviewRecord {
                id: Uuid::now_v7(),
                task_id,
                author_id: acting.id,
                verdict: new.verdict,
                body: new.body,
                comments,
                head_commit: changes.head_commit.clone(),
                round: task.work.review.round.max(1),
                created_at: tx.now,
            };
            tx.w.put_record(REVIEWS, &review_key(task_id, rec.id), &rec)?;
            let review = render_review(tx.w, &rec, Some(&changes))?;
            tx.emit(EventKind::ReviewCreated, &review, Audience::All)?;

            let project = tx.w.project_required(task.project_id)?;
            let mut t = task.clone();
            let all = reviews_of(tx.w, task_id)?;
            t.work.review.approvals = approvals(&all, &changes.head_commit);
            match rec.verdict {
                Verdict::Comment => {}
                Verdict::Approve => {
                    let needed = project.landing.required_approvals.max(1);
                    if t.work.review.approvals >= needed {
                        t.work.review.state = ReviewState::Approved;
                    }
                }
                Verdict::RequestChanges => {
                    t.work.review.state = ReviewState::ChangesRequested;
                    let by_agent = acting.is_agent();
                    if by_agent {
                        t.work.agent_rounds += 1;
                    }
                    if by_agent && t.work.review.round >= project.landing.max_rounds {
                        return hand_to_creator(tx, &acting.slug, task, t, &key, project.landing.max_rounds)
                            .map(|_| review);
                    }
                    Board::save_task_change(tx, acting.id, &task, t.clone(), AuditAction::Updated)?;
                    let task = tx.w.task_required(task_id)?;
                    send_back(tx, acting.id, task, rec.id)?;
                    return Ok(review);
                }
            }
            if t.work != task.work {
                Board::save_task_change(tx, acting.id, &task, t, AuditAction::Updated)?;
            }
            Ok(review)
        })
        .await
    }

    /// `GET /tasks/{id}/reviews`: in the order they were made.
    pub async fn list_reviews(&self, task_id: Uuid) -> Result<Vec<Review>> {
        self.read(move |r| {
            r.task_required(task_id)?;
            let now = r.record::<Changes>(TASK_CHANGES, task_id.as_bytes())?;
            reviews_of(r, task_id)?.iter().map(|rec| render_review(r, rec, now.as_ref())).collect()
        })
        .await
    }
}

/// The next round: a run of the task's agent on the same branch, holding
/// the task under a lease, answering review `review`.
fn send_back(tx: &mut Tx<'_>, by: Uuid, task: TaskRecord, review: Uuid) -> Result<Run> {
    let key = tx.w.task_key_of(&task)?;
    let Some(agent) = task.work.agent_id else {
        return Err(Error::conflict(format!("{key} has no agent to send its changes back to")));
    };
    match tx.w.member(agent)? {
        Some(m) if m.is_active && m.is_agent() => {}
        _ => return Err(Error::conflict(format!("the agent that worked on {key} is no longer active"))),
    }
    if let Some(live) = live_run_of(tx.w, task.id)? {
        return Err(Error::conflict(format!(
            "{key} has run {live} open; changes are asked for once it ends"
        )));
    }
    let round = task.work.review.round + 1;
    let work = RunWork { round, review_id: Some(review), ..RunWork::default() };
    open_work_run(tx, by, task, agent, work)
}

/// Starts a `work` run of `agent` on `task` (a round sent back, or a
/// landing to repair): the task in progress, assigned to the agent under
/// a lease, the run `starting` for the agent's runner to take.
pub(super) fn open_work_run(
    tx: &mut Tx<'_>,
    by: Uuid,
    task: TaskRecord,
    agent: Uuid,
    work: RunWork,
) -> Result<Run> {
    let key = tx.w.task_key_of(&task)?;
    let mut t = task.clone();
    t.status = TaskStatus::InProgress;
    t.assignee_id = Some(agent);
    t.add_watcher(agent);
    t.work.review.round = t.work.review.round.max(work.round);
    t.lease = Some(super::work::lease(Uuid::new_v4(), agent, tx.now, DEFAULT_RUN_LEASE_SECONDS));
    Board::save_task_change(tx, by, &task, t.clone(), AuditAction::Assign)?;
    create_task_run(tx, &task, key, agent, by, work)
}

/// Writes a new run of `agent` at `task`, `starting` for its runner, and
/// tells everyone (`run.created`).
pub(super) fn create_task_run(
    tx: &mut Tx<'_>,
    task: &TaskRecord,
    key: String,
    agent: Uuid,
    by: Uuid,
    work: RunWork,
) -> Result<Run> {
    let rec = RunRecord {
        task_id: Some(task.id),
        task: Some(RunTask { id: task.id, key, title: task.title.clone() }),
        project_id: Some(task.project_id),
        message_id: None,
        work,
        ..RunRecord::starting(agent, by, None, tx.now)
    };
    put_run(tx, None, &rec)?;
    let run = render(tx.w, &rec)?;
    tx.emit_all(EventKind::RunCreated, &run)?;
    Ok(run)
}

/// Reviewer agents sent the work back `max_rounds` times: the task goes
/// to the person who created it, with a comment saying why. Agents never
/// loop.
fn hand_to_creator(
    tx: &mut Tx<'_>,
    reviewer: &str,
    old: TaskRecord,
    mut t: TaskRecord,
    key: &str,
    max_rounds: u32,
) -> Result<()> {
    let creator = old.created_by;
    t.assignee_id = Some(creator);
    t.status = TaskStatus::Review;
    t.lease = None;
    t.add_watcher(creator);
    Board::save_task_change(tx, creator, &old, t, AuditAction::Assign)?;
    let content = format!(
        "{key} went through {max_rounds} rounds and reviewer {reviewer} still asks for changes. Reviewer \
         agents send work back at most {max_rounds} times (the project's max_rounds), so it is yours to \
         decide now: read the reviews, then send it back, merge or discard it."
    );
    let mut m = MessageRecord {
        task_id: Some(old.id),
        mention_ids: vec![creator],
        ..MessageRecord::plain(tx.now, AuthorType::System, content)
    };
    Board::write_message(tx, &mut m, None).map(drop)
}

/// Reviewer runs for a work run that succeeded: one per reviewer agent of
/// the project, other than the agent whose work it is.
pub(super) fn start_reviews(tx: &mut Tx<'_>, task: &TaskRecord, by: Uuid) -> Result<()> {
    let project = tx.w.project_required(task.project_id)?;
    if task.work.changes.is_none() {
        return Ok(());
    }
    let key = tx.w.task_key_of(task)?;
    for reviewer in project.landing.reviewers.iter().copied() {
        if Some(reviewer) == task.work.agent_id {
            continue;
        }
        match tx.w.member(reviewer)? {
            Some(m) if m.is_active && m.is_agent() => {}
            _ => continue,
        }
        let work = RunWork {
            purpose: RunPurpose::Review,
            round: task.work.review.round.max(1),
            ..RunWork::default()
        };
        create_task_run(tx, task, key.clone(), reviewer, by, work)?;
    }
    Ok(())
}
