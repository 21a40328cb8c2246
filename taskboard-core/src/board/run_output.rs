//! A run's transcript: entries appended up to a cap, and their
//! `run.output` events. Entries reach followers at most one frame per run
//! every [`OUTPUT_INTERVAL_MS`]: entries appended sooner wait, counted in
//! memory as a range of the stored transcript, for the next append or
//! [`Board::flush_run_output`].

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::json;
use uuid::Uuid;

use super::run_records::{run_audience, run_key};
use super::{Board, Tx};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::records::{RecordWrites, Records};
use crate::runs::{
    EntryKind, FAILURE_TAIL_CHARS, MAX_ENTRIES_PER_APPEND, MAX_ENTRY_TEXT, RunRecord, TranscriptEntry,
};
use crate::storage::codec::{Key, decode};
use crate::storage::tables::{RUN_TRANSCRIPT, RUNS};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan};
use crate::wire::NewEntry;

/// The least time between two `run.output` frames of one run.
pub const OUTPUT_INTERVAL_MS: i64 = 100;
/// Most entries, and about the most bytes of text, in one `run.output`
/// frame; the rest follows in the next.
const FRAME_ENTRIES: usize = 500;
const FRAME_BYTES: u64 = 256 * 1024;

fn entry_key(run: Uuid, n: u64) -> Vec<u8> {
    Key::new().uuid(run).u64(n).build()
}

/// Appends to one run's transcript: a burst of this many, then
/// [`APPENDS_PER_SECOND`]. A runner batches its agent's output into a
/// few appends a second; more is a runaway or hostile agent
/// (docs/decisions.md, 20.e).
pub const APPEND_BURST: f64 = 100.0;
pub const APPENDS_PER_SECOND: f64 = 20.0;

/// Where each run's `run.output` frames stand, and each run's budget of
/// appends (this process's memory).
#[derive(Default)]
pub(crate) struct OutputPaces {
    paces: Mutex<HashMap<Uuid, Pace>>,
    appends: Mutex<HashMap<Uuid, Budget>>,
}

/// A token bucket of appends.
#[derive(Debug, Clone, Copy)]
struct Budget {
    left: f64,
    at: std::time::Instant,
}

#[derive(Debug, Clone, Copy)]
struct Pace {
    /// When the last frame was made (board clock, ms).
    last_ms: i64,
    /// The last entry sent in a frame.
    sent: u64,
    /// The last entry appended.
    appended: u64,
}

impl OutputPaces {
    fn has_pending(&self) -> bool {
        self.paces.lock().unwrap().values().any(|p| p.appended > p.sent)
    }

    /// Takes one append from `run`'s budget: 429 with the time until the
    /// next one when it is spent.
    pub(super) fn take_append(&self, run: Uuid) -> Result<()> {
        let now = std::time::Instant::now();
        let mut budgets = self.appends.lock().unwrap();
        if budgets.len() > 10_000 {
            // Runs idle long enough to have a full budget again are
            // forgotten: they start where they would be anyway.
            budgets.retain(|_, b| {
                b.left + now.duration_since(b.at).as_secs_f64() * APPENDS_PER_SECOND < APPEND_BURST
            });
        }
        let b = budgets.entry(run).or_insert(Budget { left: APPEND_BURST, at: now });
        b.left = (b.left + now.duration_since(b.at).as_secs_f64() * APPENDS_PER_SECOND).min(APPEND_BURST);
        b.at = now;
        if b.left < 1.0 {
            let wait = std::time::Duration::from_secs_f64((1.0 - b.left) / APPENDS_PER_SECOND);
            return Err(Error::too_many_requests(
                format!(
                    "run {run} appends to its transcript faster than {APPENDS_PER_SECOND} times a second; \
                     batch entries (up to {MAX_ENTRIES_PER_APPEND} an append)"
                ),
                wait,
            ));
        }
        b.left -= 1.0;
        Ok(())
    }
}

pub(super) fn check_entry(i: usize, e: &NewEntry) -> Result<()> {
    if e.text.len() > MAX_ENTRY_TEXT {
        return Err(Error::invalid(
            &format!("entries[{i}].text"),
            format!("must be at most {MAX_ENTRY_TEXT} bytes, got {}", e.text.len()),
        ));
    }
    if let Some(d) = &e.data
        && d.to_string().len() > MAX_ENTRY_TEXT
    {
        return Err(Error::invalid(
            &format!("entries[{i}].data"),
            format!("must be at most {MAX_ENTRY_TEXT} bytes"),
        ));
    }
    Ok(())
}

/// Whose entry: the board's own (a state change, a question asked, an
/// answer given: one per operation, always kept), or one the agent
/// appended (dropped past the cap, whatever its kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Writer {
    Board,
    Agent,
}

/// Appends an entry to a run's transcript, or counts it as dropped once
/// the transcript holds `cap` bytes: the first dropped entry adds one
/// entry saying so, later ones update it. Every entry counts toward the
/// cap; the board's own entries are kept past it (docs/decisions.md, 20.e).
pub(super) fn push_entry(
    tx: &mut Tx<'_>,
    rec: &mut RunRecord,
    cap: u64,
    writer: Writer,
    kind: EntryKind,
    text: String,
    data: Option<serde_json::Value>,
) -> Result<()> {
    let e = TranscriptEntry { n: rec.transcript_count + 1, at: tx.now, kind, text, data };
    let size = e.size();
    if writer == Writer::Agent && rec.transcript_bytes + size > cap {
        rec.dropped_bytes += size;
        let note = TranscriptEntry {
            n: rec.dropped_entry.unwrap_or(rec.transcript_count + 1),
            at: tx.now,
            kind: EntryKind::Output,
            text: format!(
                "[the transcript reached its cap of {cap} bytes: {} bytes of later output were dropped]",
                rec.dropped_bytes
            ),
            data: Some(json!({"dropped_bytes": rec.dropped_bytes, "cap": cap})),
        };
        if rec.dropped_entry.is_none() {
            rec.dropped_entry = Some(note.n);
            rec.transcript_count = note.n;
        }
        return tx.w.put_record(RUN_TRANSCRIPT, &entry_key(rec.id, note.n), &note);
    }
    rec.transcript_bytes += size;
    rec.transcript_count = e.n;
    tx.w.put_record(RUN_TRANSCRIPT, &entry_key(rec.id, e.n), &e)
}

/// The last output of a run, up to [`FAILURE_TAIL_CHARS`] characters.
pub(super) fn output_tail(r: &(impl ReadTxn + ?Sized), run: Uuid) -> Result<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut chars = 0;
    r.scan(RUN_TRANSCRIPT, KeyRange::prefix(run.as_bytes()), Direction::Reverse, &mut |_, v| {
        let e: TranscriptEntry = decode(v)?;
        if e.kind == EntryKind::Output {
            chars += e.text.chars().count() + 1;
            parts.push(e.text);
        }
        Ok(if chars >= FAILURE_TAIL_CHARS { Scan::Stop } else { Scan::Continue })
    })?;
    parts.reverse();
    let all = parts.join("\n");
    let skip = all.chars().count().saturating_sub(FAILURE_TAIL_CHARS);
    Ok(all.chars().skip(skip).collect())
}

impl Board {
    /// Sends the `run.output` frames held back by the pace of their runs
    /// once their interval has passed. The maintenance task calls it ten
    /// times a second while any are held back. Returns how many frames.
    pub async fn flush_run_output(&self) -> Result<usize> {
        let paces = self.output_paces();
        if !paces.has_pending() {
            return Ok(0);
        }
        self.write(move |tx| {
            let now = tx.now.as_millisecond();
            let due: Vec<Uuid> = {
                let map = paces.paces.lock().unwrap();
                map.iter()
                    .filter(|(_, p)| p.appended > p.sent && now - p.last_ms >= OUTPUT_INTERVAL_MS)
                    .map(|(id, _)| *id)
                    .collect()
            };
            let mut frames = 0;
            for id in due {
                let Some(rec) = tx.w.record::<RunRecord>(RUNS, &run_key(id))? else {
                    paces.paces.lock().unwrap().remove(&id);
                    continue;
                };
                frames += usize::from(pace_output(tx, &paces, rec.transcript_count, &rec, true)?);
            }
            Ok(frames)
        })
        .await
    }
}

/// Entries of `run` after `after`, at most `limit` and about `bytes`.
pub(super) fn entries_after(
    r: &(impl ReadTxn + ?Sized),
    run: Uuid,
    after: u64,
    limit: usize,
    bytes: u64,
) -> Result<Vec<TranscriptEntry>> {
    let range = KeyRange {
        start: std::ops::Bound::Included(entry_key(run, after.saturating_add(1))),
        end: std::ops::Bound::Excluded(Key::new().uuid(run).u64(u64::MAX).build()),
    };
    let mut out = Vec::new();
    let mut size = 0;
    r.scan(RUN_TRANSCRIPT, range, Direction::Forward, &mut |_, v| {
        let e: TranscriptEntry = decode(v)?;
        size += e.size();
        out.push(e);
        Ok(if out.len() >= limit || size >= bytes { Scan::Stop } else { Scan::Continue })
    })?;
    Ok(out)
}

/// Makes the `run.output` frame of the entries of `rec` not yet sent,
/// when its interval has passed or `now` says so (a run ending, an
/// answer); otherwise they wait. `before` is the transcript's count
/// before this operation. True when a frame was made.
pub(super) fn pace_output(
    tx: &mut Tx<'_>,
    paces: &OutputPaces,
    before: u64,
    rec: &RunRecord,
    now: bool,
) -> Result<bool> {
    let at = tx.now.as_millisecond();
    let (sent, due) = {
        let mut map = paces.paces.lock().unwrap();
        // A run this process meets for the first time: what earlier
        // operations stored was sent by them (or by another process).
        let p = map.entry(rec.id).or_insert(Pace { last_ms: i64::MIN, sent: before, appended: before });
        p.appended = rec.transcript_count;
        let due = p.appended > p.sent && (now || at.saturating_sub(p.last_ms) >= OUTPUT_INTERVAL_MS);
        (p.sent, due)
    };
    if !due {
        if rec.state.is_final() {
            paces.paces.lock().unwrap().remove(&rec.id);
        }
        return Ok(false);
    }
    let entries = entries_after(tx.w, rec.id, sent, FRAME_ENTRIES, FRAME_BYTES)?;
    let last = entries.last().map_or(sent, |e| e.n);
    {
        let mut map = paces.paces.lock().unwrap();
        if rec.state.is_final() && last >= rec.transcript_count {
            map.remove(&rec.id);
        } else if let Some(p) = map.get_mut(&rec.id) {
            p.sent = last;
            p.last_ms = at;
        }
    }
    if entries.is_empty() {
        return Ok(false);
    }
    let data = json!({
        "run_id": rec.id,
        "task_id": rec.task_id,
        "project_id": rec.project_id,
        "entries": entries,
        "transcript_count": rec.transcript_count,
    });
    let audience = run_audience(tx.w, rec)?;
    tx.emit(EventKind::RunOutput, data, audience)?;
    Ok(true)
}
