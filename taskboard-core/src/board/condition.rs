//! Conditional writes (`If-Match`): the condition travels with the
//! request (in its [`Request`], carried by the acting [`Actor`]) and is
//! checked by the board's write path at the start of the first write the
//! request makes, inside its transaction, so no other write can come
//! between the check and the change. A call that writes nothing has the
//! condition checked against a snapshot once it is done.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::request::{Request, WriteCheck};
use super::{Actor, Board};
use crate::error::Result;
use crate::storage::ReadTxn;

/// Checks the condition against the store as a transaction sees it.
pub type Condition = Box<dyn Fn(&dyn ReadTxn) -> Result<()> + Send + Sync>;

pub(crate) struct Pending {
    check: Condition,
    checked: AtomicBool,
}

impl WriteCheck for Pending {
    /// Checks the condition in the first write of the request; later
    /// writes of the same request go ahead.
    fn check_first(&self, r: &dyn ReadTxn) -> Result<()> {
        if self.checked.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        (self.check)(r)
    }
}

impl Board {
    /// Runs `call` for `actor` on `condition`: `call` is given the actor
    /// carrying the condition, and the first write it makes as that actor
    /// checks the condition in its own transaction and fails (changing
    /// nothing) when it does not hold.
    pub async fn on_condition<T, F>(
        &self,
        actor: Actor,
        condition: Condition,
        call: impl FnOnce(Actor) -> F,
    ) -> Result<T>
    where
        F: Future<Output = Result<T>>,
    {
        let pending = Arc::new(Pending { check: condition, checked: AtomicBool::new(false) });
        let request = Request {
            condition: Some(pending.clone()),
            ..actor.request().as_deref().cloned().unwrap_or_default()
        };
        let value = call(actor.within(request)).await?;
        if !pending.checked.load(Ordering::Acquire) {
            self.read(move |r| pending.check_first(r)).await?;
        }
        Ok(value)
    }
}
