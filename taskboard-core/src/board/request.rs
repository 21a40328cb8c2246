//! What a request asks of the writes it makes, besides its inputs: the
//! `If-Match` condition to check in its first write, and the answer to
//! store under its `Idempotency-Key` with its change. The acting
//! [`super::Actor`] carries it from where it is set
//! ([`super::Board::on_condition`], [`super::Board::idempotent`]) to the
//! operations, which hand it to `Board::write_as`.

use std::any::Any;
use std::sync::Arc;

use jiff::Timestamp;

use crate::error::Result;
use crate::storage::{ReadTxn, WriteTxn};

/// A condition checked at the start of the request's first write.
pub(crate) trait WriteCheck: Send + Sync {
    fn check_first(&self, r: &dyn ReadTxn) -> Result<()>;
}

/// The answer of the request, stored by the write that makes it.
pub(crate) trait AnswerStore: Send + Sync {
    fn store_if_answer(&self, w: &mut dyn WriteTxn, now: Timestamp, value: &dyn Any) -> Result<()>;
}

/// The condition and answer of one request's writes.
#[derive(Clone, Default)]
pub struct Request {
    pub(super) condition: Option<Arc<dyn WriteCheck>>,
    pub(super) answer: Option<Arc<dyn AnswerStore>>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("if_match", &self.condition.is_some())
            .field("idempotency_key", &self.answer.is_some())
            .finish()
    }
}
