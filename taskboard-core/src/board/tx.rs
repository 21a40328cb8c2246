//! The context of a write operation: its transaction, its time and the
//! events it makes, numbered in the transaction.

use jiff::Timestamp;
use serde::Serialize;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::events::{Audience, Event, EventKind};
use crate::model::Message;
use crate::records::event_log as log;
use crate::records::{RecordWrites, Records};
use crate::storage::WriteTxn;
use crate::storage::tables::META;

/// The context of a write operation: the transaction, the time of the
/// operation and the events it makes.
pub(crate) struct Tx<'a> {
    pub w: &'a mut dyn WriteTxn,
    pub now: Timestamp,
    pub(super) events: Vec<Event>,
    /// Blobs to delete once the transaction is durable.
    pub dead_blobs: Vec<String>,
}

impl Tx<'_> {
    /// Records an event of this operation; it is numbered now and
    /// published after commit.
    pub fn emit(&mut self, kind: EventKind, data: impl Serialize, audience: Audience) -> Result<()> {
        Tx::emit_naming(self, kind, &data, audience, None).map(drop)
    }

    /// An event whose data is the message `message` as rendered now; the
    /// store keeps only the message's id (`records::event_log`). Its seq.
    pub fn emit_message(&mut self, data: &Message, audience: Audience, message: Uuid) -> Result<u64> {
        self.emit_naming(EventKind::MessageNew, data, audience, Some(message))
    }

    fn emit_naming(
        &mut self,
        kind: EventKind,
        data: &impl Serialize,
        audience: Audience,
        message: Option<Uuid>,
    ) -> Result<u64> {
        let seq = next_seq(self.w)?;
        let event = Event::serialized(seq, self.now, kind, data, audience).map_err(Error::internal)?;
        log::append(self.w, &event, message)?;
        self.events.push(event);
        Ok(seq)
    }

    /// An event for every connection.
    pub fn emit_all(&mut self, kind: EventKind, data: impl Serialize) -> Result<()> {
        self.emit(kind, data, Audience::All)
    }
}

pub(super) const SEQ_KEY: &[u8] = b"event_seq";

fn next_seq(w: &mut dyn WriteTxn) -> Result<u64> {
    let seq = w.record::<u64>(META, SEQ_KEY)?.unwrap_or(0) + 1;
    w.put_record(META, SEQ_KEY, &seq)?;
    Ok(seq)
}
