//! The agent work protocol: ready work, claims, leases and the wake-up of
//! tasks whose last dependency is done (docs/rules.md, the agent work
//! protocol).

use std::collections::HashMap;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use uuid::Uuid;

use super::fencing::{Touch, check_lease};
use super::tasks::{audit, ended_lease, member_slug};
use super::{Actor, Board, Tx};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::{AuditAction, Change, Task, TaskStatus};
use crate::records::ready::{all_dependencies_done, dependents};
use crate::records::{LeaseRecord, RecordWrites, Records, Render, TaskRecord};
use crate::storage::codec::{Key, uuid_suffix};
use crate::storage::tables::{LEASES, META, PROJECT_READY_TASKS, READY_TASKS, TASKS};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan};
use crate::wire::{ClaimRequest, ReadyQuery};

pub(super) fn lease(id: Uuid, holder: Uuid, now: Timestamp, seconds: u32) -> LeaseRecord {
    let expires_at = now.checked_add(SignedDuration::from_secs(seconds.into())).unwrap_or(Timestamp::MAX);
    LeaseRecord { id, holder, expires_at, seconds }
}

/// Which ready tasks a caller is after.
struct Wanted {
    project: Option<Uuid>,
    /// Label ids of which a task must carry one; `None` for any.
    labels: Option<Vec<Uuid>>,
    member: Uuid,
}

impl Wanted {
    fn new(
        r: &(impl Records + ?Sized),
        member: Uuid,
        project: Option<Uuid>,
        labels: Option<&[String]>,
    ) -> Result<Wanted> {
        if let Some(p) = project {
            let found = r.project_required(p)?;
            if r.project_role(p, member)?.is_none() {
                return Err(Error::forbidden(format!(
                    "only members of project {} may take its ready work",
                    found.slug
                )));
            }
        }
        let labels = match labels {
            Some(names) => {
                let mut ids = Vec::new();
                for n in names {
                    if let Some(l) = r.label_by_name(n)? {
                        ids.push(l.id);
                    }
                }
                Some(ids)
            }
            None => None,
        };
        Ok(Wanted { project, labels, member })
    }

    /// The ready tasks matching, in ready order, until `visit` says stop.
    /// Without a project, only the projects the member belongs to count.
    fn scan(&self, r: &dyn ReadTxn, visit: &mut dyn FnMut(TaskRecord) -> Result<Scan>) -> Result<()> {
        if self.labels.as_ref().is_some_and(|l| l.is_empty()) {
            return Ok(());
        }
        let mut member_of: HashMap<Uuid, bool> = HashMap::new();
        let (table, range) = match self.project {
            Some(p) => (PROJECT_READY_TASKS, KeyRange::prefix(p.as_bytes())),
            None => (READY_TASKS, KeyRange::all()),
        };
        r.scan(table, range, Direction::Forward, &mut |k, v| {
            if self.project.is_none() {
                let project = uuid_suffix(v)?;
                let member = match member_of.get(&project) {
                    Some(&m) => m,
                    None => {
                        let m = r.project_role(project, self.member)?.is_some();
                        member_of.insert(project, m);
                        m
                    }
                };
                if !member {
                    return Ok(Scan::Continue);
                }
            }
            let Some(t) = r.task(uuid_suffix(k)?)? else { return Ok(Scan::Continue) };
            if let Some(labels) = &self.labels
                && !t.label_ids.iter().any(|l| labels.contains(l))
            {
                return Ok(Scan::Continue);
            }
            visit(t)
        })
    }
}

impl Board {
    /// `GET /tasks/ready`: ready tasks in ready order, read from the ready
    /// index, so the cost follows the page rather than the board.
    pub async fn ready_tasks(&self, actor: &Actor, query: ReadyQuery) -> Result<Vec<Task>> {
        let limit = query.limit.unwrap_or(50);
        if !(1..=1000).contains(&limit) {
            return Err(Error::invalid("limit", format!("must be 1-1000, got {limit}")));
        }
        let me = actor.id();
        self.read(move |r| {
            let labels = query.label.map(|l| vec![l]);
            let wanted = Wanted::new(r, me, query.project_id, labels.as_deref())?;
            let mut out = Vec::new();
            wanted.scan(r, &mut |t| {
                out.push(r.render_task(&t)?);
                Ok(if out.len() >= limit as usize { Scan::Stop } else { Scan::Continue })
            })?;
            Ok(out)
        })
        .await
    }

    /// `POST /tasks/claim`: takes the first ready task matching that the
    /// caller did not fail at lately (`retries`), in one write, so
    /// concurrent claims never get the same task. `None` when
    /// nothing is ready.
    pub async fn claim(&self, actor: &Actor, request: ClaimRequest) -> Result<Option<Task>> {
        let seconds = check_lease(request.lease_seconds)?;
        let me = actor.id();
        let labels = match request.labels {
            Some(l) => Some(l.into_iter().map(|l| l.to_string()).collect::<Vec<_>>()),
            None if !actor.member.agent_config.labels.is_empty() => {
                Some(actor.member.agent_config.labels.clone())
            }
            None => None,
        };
        self.write_as(actor.request(), move |tx| {
            let wanted = Wanted::new(tx.w, me, request.project_id, labels.as_deref())?;
            let mut first = None;
            let (r, now): (&dyn ReadTxn, _) = (tx.w, tx.now);
            wanted.scan(r, &mut |t| {
                if super::retries::passed_over(r, me, &t, now)? {
                    return Ok(Scan::Continue);
                }
                first = Some(t);
                Ok(Scan::Stop)
            })?;
            match first {
                Some(old) => Board::take_in(tx, me, old, seconds).map(Some),
                None => Ok(None),
            }
        })
        .await
    }

    /// Takes `old` for `me`, under a lease of `seconds` when given.
    pub(super) fn take_in(tx: &mut Tx<'_>, me: Uuid, old: TaskRecord, seconds: Option<u32>) -> Result<Task> {
        let key = tx.w.task_key_of(&old)?;
        if !matches!(old.status, TaskStatus::Backlog | TaskStatus::Todo) {
            return Err(Error::conflict(format!(
                "{key} is {}; only backlog or todo tasks can be taken",
                old.status
            )));
        }
        if let Some(a) = old.assignee_id {
            return Err(Error::conflict(format!(
                "{key} is already assigned to {}",
                member_slug(tx.w, Some(a))?
            )));
        }
        let mut t = old.clone();
        t.status = TaskStatus::InProgress;
        t.assignee_id = Some(me);
        t.add_watcher(me);
        t.lease = seconds.map(|s| lease(Uuid::new_v4(), me, tx.now, s));
        Board::save_task_change(tx, me, &old, t, AuditAction::Take)
    }

    /// `POST /tasks/{id}/heartbeat`: the holder extends its lease by
    /// `seconds`, or by the lease's last duration.
    pub async fn heartbeat(&self, actor: &Actor, id: Uuid, seconds: Option<u32>) -> Result<Task> {
        let seconds = check_lease(seconds)?;
        let fence = actor.fence();
        let me = actor.id();
        self.write_as(actor.request(), move |tx| {
            let old = tx.w.task_required(id)?;
            fence.check(tx.w, &old, Touch::Comment)?;
            let key = tx.w.task_key_of(&old)?;
            let Some(l) = old.lease else {
                return Err(Error::conflict(format!("{key} is not held under a lease")));
            };
            if l.holder != me {
                return Err(Error::forbidden(format!("only the holder of the lease on {key} may renew it")));
            }
            let mut t = old.clone();
            t.lease = Some(lease(l.id, me, tx.now, seconds.unwrap_or(l.seconds)));
            t.updated_at = tx.now;
            tx.w.put_task(Some(&old), &t)?;
            let task = tx.w.render_task(&t)?;
            // A light event, not the whole task (docs/decisions.md, runs).
            let renewed = json!({"id": task.id, "key": task.key, "project_id": t.project_id,
                "lease": task.lease, "updated_at": task.updated_at});
            tx.emit_all(EventKind::TaskLeaseRenewed, renewed)?;
            Ok(task)
        })
        .await
    }

    /// `POST /tasks/{id}/release`: the assignee (or an admin) gives the
    /// task back.
    pub async fn release(
        &self,
        actor: &Actor,
        id: Uuid,
        reason: Option<crate::validate::Reason>,
    ) -> Result<Task> {
        let fence = actor.fence();
        let me = actor.id();
        let admin = actor.role().is_admin();
        self.write_as(actor.request(), move |tx| {
            let old = tx.w.task_required(id)?;
            fence.check(tx.w, &old, Touch::Work)?;
            let key = tx.w.task_key_of(&old)?;
            let Some(assignee) = old.assignee_id else {
                return Err(Error::conflict(format!("{key} has no assignee to release it")));
            };
            if assignee != me && !admin {
                return Err(Error::forbidden(format!(
                    "only the assignee of {key} or an admin may release it"
                )));
            }
            let reason = reason.as_ref().map(|r| r.as_str().to_string());
            Board::release_in(tx, me, old, reason, AuditAction::Release)
        })
        .await
    }

    pub(super) fn release_in(
        tx: &mut Tx<'_>,
        actor: Uuid,
        old: TaskRecord,
        reason: Option<String>,
        action: AuditAction,
    ) -> Result<Task> {
        // The task's run, if one is live, ends with the lease.
        let run_state = match action {
            AuditAction::LeaseExpired => crate::runs::RunState::Lost,
            _ => crate::runs::RunState::Cancelled,
        };
        Board::end_live_run(tx, old.id, run_state, reason.as_deref().unwrap_or("the task was released"))?;
        let mut t = old.clone();
        t.assignee_id = None;
        t.status = TaskStatus::Todo;
        t.lease = None;
        t.updated_at = tx.now;
        let mut changes = std::collections::BTreeMap::new();
        for (field, from, to) in [
            ("status", json!(old.status), json!(t.status)),
            ("assignee_id", json!(old.assignee_id), Value::Null),
        ] {
            if from != to {
                changes.insert(field.to_string(), Change { from, to });
            }
        }
        if let Some(r) = &reason {
            changes.insert("reason".into(), Change { from: Value::Null, to: json!(r) });
        }
        let ended = ended_lease(tx, actor, &old, &t, &mut changes)?;
        tx.w.put_task(Some(&old), &t)?;
        audit(tx, t.id, actor, action, changes)?;
        let task = tx.w.render_task(&t)?;
        tx.emit_all(EventKind::TaskUpdated, &task)?;
        let who = member_slug(tx.w, Some(actor))?;
        let text = match reason {
            Some(r) => format!("{who} released {}: {r}", task.key),
            None => format!("{who} released {}", task.key),
        };
        Board::system_comment(tx, &t, actor, text)?;
        if let Some(note) = ended {
            Board::system_comment(tx, &t, actor, note)?;
        }
        Ok(task)
    }

    /// Releases every lease that expired by the board's clock, each as its
    /// holder with the reason `lease expired`. Returns how many. The
    /// maintenance task calls it every second, and opening a board calls
    /// it for leases that expired while it was closed.
    pub async fn expire_leases(&self) -> Result<usize> {
        let mut total = 0;
        loop {
            let n = self
                .write(|tx| {
                    let now_ms = tx.now.as_millisecond().max(0) as u64;
                    let end = Key::new().u64(now_ms + 1).build();
                    let range =
                        KeyRange { start: std::ops::Bound::Unbounded, end: std::ops::Bound::Excluded(end) };
                    let mut due = Vec::new();
                    tx.w.scan(LEASES, range, Direction::Forward, &mut |k, _| {
                        due.push(uuid_suffix(k)?);
                        Ok(if due.len() >= 256 { Scan::Stop } else { Scan::Continue })
                    })?;
                    let mut released = 0;
                    for id in &due {
                        let Some(old) = tx.w.task(*id)? else { continue };
                        let Some(l) = old.lease.filter(|l| l.expires_at <= tx.now) else { continue };
                        Board::release_in(
                            tx,
                            l.holder,
                            old,
                            Some("lease expired".into()),
                            AuditAction::LeaseExpired,
                        )?;
                        released += 1;
                    }
                    Ok((released, due.len()))
                })
                .await?;
            total += n.0;
            if n.1 < 256 {
                return Ok(total);
            }
        }
    }

    /// After `done` became done: `task.ready` for each task whose last
    /// open dependency it was.
    pub(super) fn wake_dependents(tx: &mut Tx<'_>, done: Uuid) -> Result<()> {
        for d in dependents(tx.w, done)? {
            let Some(t) = tx.w.task(d)? else { continue };
            if t.status != TaskStatus::Done && all_dependencies_done(tx.w, d)? {
                let task = tx.w.render_task(&t)?;
                tx.emit_all(EventKind::TaskReady, &task)?;
            }
        }
        Ok(())
    }

    /// Work done once when a board opens: the ready index built for a
    /// board written before it existed, and leases that expired while the
    /// board was closed released.
    pub(super) async fn start_up(&self) -> Result<()> {
        self.write(|tx| {
            if tx.w.get(META, READY_INDEX_KEY)?.is_some() {
                return Ok(());
            }
            let mut ids = Vec::new();
            tx.w.scan(TASKS, KeyRange::all(), Direction::Forward, &mut |k, _| {
                ids.push(uuid_suffix(k)?);
                Ok(Scan::Continue)
            })?;
            for id in ids {
                crate::records::ready::refresh(tx.w, id)?;
            }
            tx.w.put_record(META, READY_INDEX_KEY, &1u32)
        })
        .await?;
        let expired = self.expire_leases().await?;
        if expired > 0 {
            tracing::info!(expired, "released leases that expired while the board was closed");
        }
        Ok(())
    }
}

/// Set in `META` once the ready index covers every task.
const READY_INDEX_KEY: &[u8] = b"ready_index";
