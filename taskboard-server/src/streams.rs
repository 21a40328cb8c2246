//! How many event streams (Server-Sent Events and WebSockets together)
//! one member may hold open at once. Each holds a subscription and a
//! buffer, so a member with a leaked loop or a hostile client could
//! otherwise hold thousands; beyond the bound a new stream is 429 and
//! the open ones keep going.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use taskboard_core::Error;
use uuid::Uuid;

/// The default bound per member: many browser tabs and agents' streams
/// of one member fit well under it.
pub const DEFAULT_STREAMS_PER_MEMBER: usize = 64;

#[derive(Debug)]
pub(crate) struct StreamSlots {
    per_member: usize,
    open: Mutex<HashMap<Uuid, usize>>,
}

/// One open stream of a member, given back when dropped.
#[derive(Debug)]
pub(crate) struct StreamSlot {
    slots: Arc<StreamSlots>,
    member: Uuid,
}

impl StreamSlots {
    pub fn new(per_member: usize) -> Arc<StreamSlots> {
        Arc::new(StreamSlots { per_member, open: Mutex::new(HashMap::new()) })
    }

    /// A slot for one more stream of `member`, or 429 when it holds the
    /// most it may.
    pub fn take(self: &Arc<Self>, member: Uuid) -> Result<StreamSlot, Error> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(member).or_insert(0);
        if *n >= self.per_member {
            return Err(Error::too_many_requests(
                format!(
                    "this member already holds {} open event streams (WebSocket and Server-Sent Events), the most it may; close one first",
                    self.per_member
                ),
                std::time::Duration::from_secs(5),
            ));
        }
        *n += 1;
        Ok(StreamSlot { slots: self.clone(), member })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.member) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.member);
            }
        }
    }
}
