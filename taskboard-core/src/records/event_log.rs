//! The stored form of events: the retained window, in the `seq_event`
//! table, written in the transaction of the operation that made them.
//!
//! A `message.new` names its message instead of holding a copy: messages
//! never change, so the event is rendered from the message when it is
//! read, and a chat of large messages is stored once, not twice. The
//! message's record keeps the event's seq, and before a message is
//! deleted, the retained event that names it takes a copy
//! (`detach_message`), so a replay still shows what was said. Events
//! older than [`RETAINED_EVENTS`] are pruned as new ones are stored, in steps
//! of [`PRUNE_STEP`].

use std::io::Write;
use std::ops::Bound;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use super::{MessageRecord, Records, Render};
use crate::error::{Error, Result};
use crate::storage::codec::{FORMAT_VERSION, Key, decode, encode};
use crate::storage::tables::{EVENTS, MESSAGE_EVENTS, META, WEBHOOK_CURSORS};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, WriteTxn};
use crate::wire::event::{Audience, Event};
use crate::wire::event_kind::EventKind;

/// How many events the store keeps (docs/rules.md, events,
/// promises at least 10,000).
pub const RETAINED_EVENTS: usize = 10_240;

/// An event as stored: its `data`, or for a `message.new` the id of the
/// message it is rendered from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventRecord {
    pub seq: u64,
    pub ts: Timestamp,
    #[serde(rename = "type")]
    pub kind: EventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Uuid>,
    pub audience: Audience,
}

fn seq_key(seq: u64) -> Vec<u8> {
    Key::new().u64(seq).build()
}

fn message_key(message: Uuid, seq: u64) -> Vec<u8> {
    Key::new().uuid(message).u64(seq).build()
}

/// The record of `event`, written by hand so the data, already JSON, is
/// copied rather than parsed again.
fn encode_event(event: &Event, message: Option<Uuid>) -> Vec<u8> {
    let data = if message.is_some() { None } else { Some(event.raw_data()) };
    let mut out = Vec::with_capacity(160 + data.map_or(0, str::len));
    out.push(FORMAT_VERSION);
    let _ = write!(out, "{{\"seq\":{},\"ts\":\"{}\",\"type\":", event.seq, event.ts);
    serde_json::to_writer(&mut out, &event.kind).expect("a string serialises");
    if let Some(data) = data {
        out.extend_from_slice(b",\"data\":");
        out.extend_from_slice(data.as_bytes());
    }
    if let Some(id) = message {
        let _ = write!(out, ",\"message_id\":\"{id}\"");
    }
    out.extend_from_slice(b",\"audience\":");
    serde_json::to_writer(&mut out, &event.audience).expect("an audience serialises");
    out.push(b'}');
    out
}

/// Stores a new event (naming `message` instead of holding its data when
/// given; the message's record keeps the seq) and prunes the events that
/// fell out of the retention.
pub(crate) fn append<W: WriteTxn + ?Sized>(w: &mut W, event: &Event, message: Option<Uuid>) -> Result<()> {
    w.put(EVENTS, &seq_key(event.seq), &encode_event(event, message))?;
    prune(w, event.seq)
}

/// Where pruning has got to: every event below this seq is gone, so the
/// next prune starts here instead of at the start of the log (inside one
/// large operation, the log's start holds the operation's own deletions).
const PRUNED_BELOW: &[u8] = b"events_pruned_below";

/// Stores a record as it comes from an archive.
pub(crate) fn import<W: WriteTxn + ?Sized>(w: &mut W, record: &EventRecord) -> Result<()> {
    w.delete(META, PRUNED_BELOW)?;
    w.put(EVENTS, &seq_key(record.seq), &encode(record))?;
    if let Some(id) = record.message_id {
        w.put(MESSAGE_EVENTS, &message_key(id, record.seq), &[])?;
    }
    Ok(())
}

/// Events are pruned once every this many: the log holds between
/// [`RETAINED_EVENTS`] and `RETAINED_EVENTS + PRUNE_STEP - 1` events.
/// Pruning on every event read the webhooks' cursors, read and wrote
/// where pruning had got to and deleted one event, for each event of
/// every write: a tenth of what the writer did for a task's creation
/// (docs/storage.md, S.36).
pub(crate) const PRUNE_STEP: u64 = 64;

/// Every [`PRUNE_STEP`] events, deletes every stored event older than the
/// last [`RETAINED_EVENTS`] up to `newest`: a range rather than the keys
/// pushed out since the last prune, so nothing older is ever left behind.
/// Each seq is appended once, so each multiple of the step is met once.
/// Events an active webhook has not yet considered are kept, however
/// old: its deliveries are queued from the log (`board::deliveries`).
fn prune<W: WriteTxn + ?Sized>(w: &mut W, newest: u64) -> Result<()> {
    if !newest.is_multiple_of(PRUNE_STEP) {
        return Ok(());
    }
    let mut cutoff = (newest + 1).saturating_sub(RETAINED_EVENTS as u64);
    if cutoff <= 1 {
        return Ok(());
    }
    w.scan(WEBHOOK_CURSORS, KeyRange::all(), Direction::Forward, &mut |_, v| {
        cutoff = cutoff.min(decode::<u64>(v)? + 1);
        Ok(Scan::Continue)
    })?;
    if cutoff <= 1 {
        return Ok(());
    }
    let pruned_below = w.record::<u64>(META, PRUNED_BELOW)?;
    if pruned_below.is_some_and(|p| p >= cutoff) {
        return Ok(());
    }
    let start = pruned_below.map_or(Bound::Unbounded, |p| Bound::Included(seq_key(p)));
    w.put(META, PRUNED_BELOW, &encode(&cutoff))?;
    // Only the keys: the entries of `MESSAGE_EVENTS` that builds before
    // the message records kept the seq wrote are left to their message's
    // deletion (`detach_message`), which skips the events gone.
    let mut old = Vec::new();
    let range = KeyRange { start, end: Bound::Excluded(seq_key(cutoff)) };
    w.scan(EVENTS, range, Direction::Forward, &mut |k, _| {
        old.push(k.to_vec());
        Ok(Scan::Continue)
    })?;
    for key in old {
        w.remove(EVENTS, &key)?;
    }
    Ok(())
}

/// Called before `m` is deleted: the retained events that name it take a
/// copy of it, as it is rendered now. The event is the one whose seq the
/// record keeps; builds before it (and archives' imported events) listed
/// it in `MESSAGE_EVENTS`, whose entries of `m` go too.
pub(crate) fn detach_message<W: WriteTxn + ?Sized>(w: &mut W, m: &MessageRecord) -> Result<()> {
    let mut seqs: Vec<u64> = m.event_seq.into_iter().collect();
    let mut listed = Vec::new();
    w.scan(MESSAGE_EVENTS, KeyRange::prefix(m.id.as_bytes()), Direction::Forward, &mut |k, _| {
        let seq =
            k.get(16..24).and_then(|b| b.try_into().ok()).ok_or_else(|| Error::internal("malformed key"))?;
        listed.push(u64::from_be_bytes(seq));
        Ok(Scan::Continue)
    })?;
    seqs.extend(&listed);
    if seqs.is_empty() {
        return Ok(());
    }
    let data = serde_json::to_string(&w.render_message(m)?).map_err(Error::internal)?;
    for seq in seqs {
        if let Some(mut record) = w.record::<EventRecord>(EVENTS, &seq_key(seq))?
            && record.message_id == Some(m.id)
        {
            record.message_id = None;
            record.data = Some(RawValue::from_string(data.clone()).map_err(Error::internal)?);
            w.put(EVENTS, &seq_key(seq), &encode(&record))?;
        }
    }
    for seq in listed {
        w.remove(MESSAGE_EVENTS, &message_key(m.id, seq))?;
    }
    Ok(())
}

/// The seq of the oldest stored event.
pub(crate) fn oldest(r: &dyn ReadTxn) -> Result<Option<u64>> {
    let mut oldest = None;
    r.scan(EVENTS, KeyRange::all(), Direction::Forward, &mut |k, _| {
        oldest = k.try_into().ok().map(u64::from_be_bytes);
        Ok(Scan::Stop)
    })?;
    Ok(oldest)
}

/// The seq of the newest stored event.
pub(crate) fn newest(r: &dyn ReadTxn) -> Result<Option<u64>> {
    let mut newest = None;
    r.scan(EVENTS, KeyRange::all(), Direction::Reverse, &mut |k, _| {
        newest = k.try_into().ok().map(u64::from_be_bytes);
        Ok(Scan::Stop)
    })?;
    Ok(newest)
}

/// Stored events from `from` to `to` (both included), in order: at most
/// `max_events`, and no more once `max_bytes` of records were read.
pub(crate) fn load(
    r: &dyn ReadTxn,
    from: u64,
    to: u64,
    max_events: usize,
    max_bytes: usize,
) -> Result<Vec<Event>> {
    let mut records = Vec::new();
    let mut bytes = 0;
    let range = KeyRange { start: Bound::Included(seq_key(from)), end: Bound::Included(seq_key(to)) };
    r.scan(EVENTS, range, Direction::Forward, &mut |_, v| {
        records.push(decode::<EventRecord>(v)?);
        bytes += v.len();
        Ok(if records.len() >= max_events || bytes >= max_bytes { Scan::Stop } else { Scan::Continue })
    })?;
    records.into_iter().map(|record| render(r, record)).collect()
}

fn render(r: &dyn ReadTxn, record: EventRecord) -> Result<Event> {
    let EventRecord { seq, ts, kind, data, message_id, audience } = record;
    if let Some(data) = data {
        return Ok(Event::with_raw_data(seq, ts, kind, data.get(), audience));
    }
    let id = message_id.ok_or_else(|| Error::internal(format!("stored event {seq} has no data")))?;
    let event = match r.message(id)? {
        Some(m) => Event::serialized(seq, ts, kind, &r.render_message(&m)?, audience),
        // Deletions copy the message into its events first; this only
        // guards against a store written otherwise.
        None => Event::serialized(seq, ts, kind, &serde_json::json!({ "id": id }), audience),
    };
    event.map_err(Error::internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_event_reads_back_as_it_was() {
        let e = Event::new(
            7,
            Timestamp::now(),
            EventKind::TaskUpdated,
            serde_json::json!({"a": [1, "x\"y"]}),
            Audience::All,
        );
        let record: EventRecord = decode(&encode_event(&e, None)).unwrap();
        assert_eq!(record.data.as_ref().unwrap().get(), e.raw_data());
        let id = Uuid::now_v7();
        let named: EventRecord = decode(&encode_event(&e, Some(id))).unwrap();
        assert!(named.data.is_none());
        assert_eq!(named.message_id, Some(id));
        assert_eq!((named.seq, named.kind, &named.audience), (7, EventKind::TaskUpdated, &Audience::All));
    }

    /// A deleted message's content goes into the event its record names,
    /// and into those an older build listed in `MESSAGE_EVENTS`, whose
    /// entries go; a listed event already pruned is not made again.
    #[test]
    fn a_deleted_message_is_copied_into_the_events_that_name_it() {
        use crate::model::AuthorType;
        use crate::records::RecordWrites;
        use crate::storage::Storage;
        use crate::storage::overlay::Overlay;

        let store = crate::storage::redb::RedbStore::in_memory().unwrap();
        let snapshot = store.read().unwrap();
        let mut w = Overlay::new(&*snapshot);
        let now = Timestamp::now();
        let event = |seq| Event::new(seq, now, EventKind::MessageNew, serde_json::json!({}), Audience::All);
        let new = MessageRecord {
            event_seq: Some(1),
            ..MessageRecord::plain(now, AuthorType::System, "new".into())
        };
        let old = MessageRecord::plain(now, AuthorType::System, "old".into());
        w.put_message(&new).unwrap();
        w.put_message(&old).unwrap();
        append(&mut w, &event(1), Some(new.id)).unwrap();
        append(&mut w, &event(2), Some(old.id)).unwrap();
        w.put(MESSAGE_EVENTS, &message_key(old.id, 2), &[]).unwrap();
        w.put(MESSAGE_EVENTS, &message_key(old.id, 3), &[]).unwrap();

        detach_message(&mut w, &new).unwrap();
        detach_message(&mut w, &old).unwrap();
        for (seq, content) in [(1, "new"), (2, "old")] {
            let record = w.record::<EventRecord>(EVENTS, &seq_key(seq)).unwrap().unwrap();
            assert_eq!(record.message_id, None, "event {seq}");
            let data: serde_json::Value = serde_json::from_str(record.data.unwrap().get()).unwrap();
            assert_eq!(data["content"], content, "event {seq}");
        }
        assert_eq!(w.record::<EventRecord>(EVENTS, &seq_key(3)).unwrap().map(|r| r.seq), None);
        let mut listed = 0;
        w.scan(MESSAGE_EVENTS, KeyRange::prefix(old.id.as_bytes()), Direction::Forward, &mut |_, _| {
            listed += 1;
            Ok(Scan::Continue)
        })
        .unwrap();
        assert_eq!(listed, 0);
    }
}
