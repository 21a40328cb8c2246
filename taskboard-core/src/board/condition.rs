//! Conditional writes (`If-Match`): the condition travels with the
//! request's task (a task-local) and is checked by the board's write
//! path at the start of the first write of the request, inside its
//! transaction, so no other write can come between the check and the
//! change. A call that writes nothing has the condition checked against
//! a snapshot once it is done.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Board;
use crate::error::Result;
use crate::storage::ReadTxn;

/// Checks the condition against the store as a transaction sees it.
pub type Condition = Box<dyn Fn(&dyn ReadTxn) -> Result<()> + Send + Sync>;

pub(crate) struct Pending {
    check: Condition,
    checked: AtomicBool,
}

tokio::task_local! {
    static PENDING: Arc<Pending>;
}

/// The pending condition of the running request, if any.
pub(crate) fn pending() -> Option<Arc<Pending>> {
    PENDING.try_with(|p| p.clone()).ok()
}

impl Pending {
    /// Checks the condition in the first write of the request; later
    /// writes of the same request go ahead.
    pub(crate) fn check_first(&self, r: &dyn ReadTxn) -> Result<()> {
        if self.checked.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        (self.check)(r)
    }
}

impl Board {
    /// Runs `call` on `condition`: the first write `call` makes checks it
    /// in its own transaction and fails (changing nothing) when it does
    /// not hold.
    pub async fn on_condition<T>(
        &self,
        condition: Condition,
        call: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let pending = Arc::new(Pending { check: condition, checked: AtomicBool::new(false) });
        let value = PENDING.scope(pending.clone(), call).await?;
        if !pending.checked.load(Ordering::Acquire) {
            self.read(move |r| pending.check_first(r)).await?;
        }
        Ok(value)
    }
}
