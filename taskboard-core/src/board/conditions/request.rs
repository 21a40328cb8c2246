//! What a request asks of the writes made for it, besides their inputs:
//! the `If-Match` condition its first write checks, and the answer that
//! write stores under its `Idempotency-Key`. The acting
//! [`Actor`](crate::board::Actor) carries it from where a request begins
//! ([`Board::begin`](crate::board::Board::begin)) to the operations,
//! which hand it to the board's write path; everything here is data and
//! plain functions of a transaction, so that path calls nothing above
//! itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use jiff::Timestamp;
use uuid::Uuid;

use super::answers::{Answer, store};
use super::if_match::IfMatch;
use super::key::IdempotencyKey;
use crate::error::Result;
use crate::storage::{ReadTxn, WriteTxn};

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
