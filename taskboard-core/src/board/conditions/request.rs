//! What a request asks of the writes made for it, besides their inputs:
//! the `If-Match` condition its first write checks, and the answer that
//! write stores under its `Idempotency-Key`.
//!
//! `If-Match` names the resource a PATCH or DELETE changes; its current
//! entity tag is read inside the transaction of the change and the
//! request's list checked against it. Each tag is the tag of the JSON the
//! resource's answers carry, so it equals the `ETag` a client last saw
//! exactly when nothing it shows changed. The acting
//! [`Actor`](crate::board::Actor) carries it from where a request begins
//! ([`Board::begin`](crate::board::Board::begin)) to the operations,
//! which hand it to the board's write path; everything here is data and
//! plain functions of a transaction, so that path calls nothing above
//! itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use jiff::Timestamp;
use uuid::Uuid;

use super::idempotency::{Answer, IdempotencyKey, store};
use crate::error::{Error, ErrorKind, Result};
use crate::records::{Records, Render};
use crate::storage::{ReadTxn, WriteTxn};
use crate::wire::{etag_listed, etag_of_wire};

/// The condition and answer of one request's writes.
#[derive(Clone, Default)]
pub struct Request {
    pub(super) condition: Option<Arc<Condition>>,
    pub(super) answer: Option<Arc<PendingAnswer>>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("if_match", &self.condition.is_some())
            .field("idempotency_key", &self.answer.is_some())
            .finish()
    }
}

impl Request {
    /// Called by the write path at the start of each write made for the
    /// request, inside its transaction: the first one checks `If-Match`
    /// (and fails, changing nothing, when the resource changed), so no
    /// other write can come between the check and the change.
    pub(crate) fn check_first(&self, r: &dyn ReadTxn) -> Result<()> {
        match &self.condition {
            Some(c) => c.check_first(r),
            None => Ok(()),
        }
    }

    /// Called by the write path with the value a write made for the
    /// request returns, inside its transaction: the first such value is
    /// the request's answer, stored under its key with the change.
    pub(crate) fn store_answer<T: Answer>(
        &self,
        w: &mut dyn WriteTxn,
        now: Timestamp,
        value: &T,
    ) -> Result<()> {
        match &self.answer {
            Some(a) => a.store_if_first(w, now, value),
            None => Ok(()),
        }
    }
}

/// An `If-Match` condition, and whether a write checked it yet.
pub(super) struct Condition {
    pub(super) if_match: IfMatch,
    pub(super) checked: AtomicBool,
}

impl Condition {
    /// Checks the condition in the first write of the request; later
    /// writes of the same request go ahead.
    pub(super) fn check_first(&self, r: &dyn ReadTxn) -> Result<()> {
        if self.checked.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.if_match.check(r)
    }
}

/// What the write path needs to store a request's answer.
pub(super) struct PendingAnswer {
    pub(super) member: Uuid,
    pub(super) key: IdempotencyKey,
    /// The endpoint's status of success.
    pub(super) status: u16,
    pub(super) stored: AtomicBool,
    /// A write ran under this key.
    pub(super) wrote: AtomicBool,
}

impl PendingAnswer {
    fn store_if_first<T: Answer>(&self, w: &mut dyn WriteTxn, now: Timestamp, value: &T) -> Result<()> {
        self.wrote.store(true, Ordering::Release);
        if self.stored.load(Ordering::Acquire) {
            return Ok(());
        }
        let Some((status, body)) = value.stored_form(self.status) else { return Ok(()) };
        store(w, self.member, &self.key, now, status, &body)?;
        self.stored.store(true, Ordering::Release);
        Ok(())
    }
}

/// The one resource a conditional endpoint changes, named by the ids of
/// its path: what its `If-Match` list is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Task(Uuid),
    /// A step, by its task and its id.
    Step(Uuid, Uuid),
    Member(Uuid),
    Project(Uuid),
    /// A project's file, by its project and its id.
    ProjectFile(Uuid, Uuid),
    Label(Uuid),
}

impl Resource {
    /// The resource's current entity tag, as `r` sees it; 404 when it
    /// does not exist.
    pub fn etag(self, r: &dyn ReadTxn) -> Result<Option<String>> {
        match self {
            Resource::Task(id) => etag_of_wire(&r.render_task(&r.task_required(id)?)?),
            Resource::Member(id) => etag_of_wire(&r.member_required(id)?.to_wire()),
            Resource::Project(id) => etag_of_wire(&r.project_required(id)?.to_wire()),
            Resource::ProjectFile(project, id) => {
                etag_of_wire(&r.render_project_file(&r.project_file_in(project, id)?)?)
            }
            Resource::Label(id) => {
                let l = r.label(id)?.ok_or_else(|| Error::not_found(format!("label {id} not found")))?;
                etag_of_wire(&l.to_wire())
            }
            Resource::Step(task, step) => {
                r.task_required(task)?;
                let s = r
                    .step(task, step)?
                    .ok_or_else(|| Error::not_found(format!("step {step} not found in task {task}")))?;
                etag_of_wire(&s.to_wire())
            }
        }
    }
}

/// A request's `If-Match` list and the resource it is about.
#[derive(Debug, Clone)]
pub struct IfMatch {
    /// The header's entity tags, as sent (`"a", W/"b"` or `*`).
    pub list: String,
    pub resource: Resource,
}

impl IfMatch {
    /// Checks the list against the resource's current tag as `r` sees
    /// it: 412 `precondition_failed` when the resource changed since.
    pub fn check(&self, r: &dyn ReadTxn) -> Result<()> {
        match self.resource.etag(r)? {
            Some(current) if !etag_listed(&self.list, &current) => Err(Error::new(
                ErrorKind::PreconditionFailed,
                format!("If-Match {} is not the current ETag {current}: the resource changed", self.list),
            )),
            _ => Ok(()),
        }
    }
}
