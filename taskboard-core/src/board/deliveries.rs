//! Delivery of webhooks (docs/rules.md, webhooks), with its state kept in
//! the store so it survives restarts and is shared by every process of a
//! board.
//!
//! Each active webhook has a cursor in the event log (the last event it
//! is done with) and a small [`WebhookState`]. A sender claims a webhook
//! (the claim is stored: one sender at a time, each process its own
//! holder id), reads the events after the cursor straight from the log,
//! keeps those the webhook takes (its patterns, its project, its
//! creator's view of the stream), POSTs them in seq order and records its
//! progress in one write per batch: the cursor moves past what got
//! through, the first failure becomes the webhook's head, retried on its
//! schedule while the later events wait. The log keeps every event some
//! cursor has not passed (`events::log`), so nothing is copied per event
//! and per webhook; only a delivery that failed or needed retries is
//! logged with its frame.

use jiff::Timestamp;
use uuid::Uuid;

use super::{Board, SEQ_KEY};
use crate::error::{Error, Result};
use crate::events::{Event, Viewer, log};
use crate::records::{RecordWrites, Records};
use crate::storage::codec::{Key, decode, uuid_at};
use crate::storage::tables::*;
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, WriteTxn};
use crate::webhooks::{
    BatchRecord, Claim, DeliveryBatch, DeliveryItem, DeliveryPolicy, DeliveryRecord, DeliveryState, Head,
    Outcome, WebhookRecord, WebhookState, delivery_id, event_project,
};

/// Events read from the log for one batch at most, and the bytes of their
/// records after which no more are read (large messages).
const SCAN_EVENTS: usize = 2000;
const SCAN_BYTES: usize = 4 << 20;
/// Batch records kept per webhook (each lists the deliveries of one batch
/// that got through at their first attempt).
pub(crate) const BATCHES: u64 = 256;
/// Deliveries logged one by one (failed, retried, redelivered) kept per
/// webhook; the oldest finished ones go first.
pub(crate) const LOGGED: usize = 1000;

pub(super) fn state_of(r: &(impl Records + ?Sized), webhook: Uuid) -> Result<WebhookState> {
    Ok(r.record(WEBHOOK_STATE, webhook.as_bytes())?.unwrap_or_default())
}

pub(super) fn logged_key(webhook: Uuid, seq: u64) -> Vec<u8> {
    Key::new().uuid(webhook).u64(seq).build()
}

pub(super) fn batch_key(webhook: Uuid, n: u64) -> Vec<u8> {
    Key::new().uuid(webhook).u64(n).build()
}

/// The active webhooks and their cursors.
fn cursors(r: &(impl ReadTxn + ?Sized)) -> Result<Vec<(Uuid, u64)>> {
    let mut out = Vec::new();
    r.scan(WEBHOOK_CURSORS, KeyRange::all(), Direction::Forward, &mut |k, v| {
        out.push((uuid_at(k, 0)?, decode::<u64>(v)?));
        Ok(Scan::Continue)
    })?;
    Ok(out)
}

/// Drops the oldest finished deliveries of a webhook's log beyond
/// [`LOGGED`] (the pending ones are its redeliveries).
pub(super) fn trim_logged(
    w: &mut (impl WriteTxn + ?Sized),
    webhook: Uuid,
    state: &WebhookState,
) -> Result<()> {
    let mut finished = Vec::new();
    let mut count = 0usize;
    w.scan(DELIVERIES, KeyRange::prefix(webhook.as_bytes()), Direction::Forward, &mut |k, _| {
        count += 1;
        let seq = k.get(16..24).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes);
        if !state.redeliveries.iter().any(|(s, _)| Some(*s) == seq) {
            finished.push(k.to_vec());
        }
        Ok(Scan::Continue)
    })?;
    for k in finished.into_iter().take(count.saturating_sub(LOGGED)) {
        w.delete(DELIVERIES, &k)?;
    }
    Ok(())
}

/// When the work of a webhook is next due for `holder`: now when events
/// wait after its cursor, else its retry or its first redelivery; not
/// before another holder's claim ends. `None` when it has nothing to do.
fn due(state: &WebhookState, cursor: u64, latest: u64, holder: Uuid, now: Timestamp) -> Option<Timestamp> {
    let stream = match &state.head {
        Some(h) => Some(h.due),
        None => (cursor < latest).then_some(now),
    };
    let redelivery = state.redeliveries.iter().map(|(_, d)| *d).min();
    let due = match (stream, redelivery) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }?;
    match state.claim {
        Some(c) if c.holder != holder && c.until > now => Some(due.max(c.until)),
        _ => Some(due),
    }
}

/// Whether `h` takes `e`: its patterns, its project, its creator's view.
fn takes(r: &dyn ReadTxn, h: &WebhookRecord, viewer: &Viewer, e: &Event) -> Result<bool> {
    if !h.wants(e.kind.as_str()) || !e.visible_to(viewer) {
        return Ok(false);
    }
    match h.project_id {
        Some(p) => Ok(event_project(r, e)? == Some(p)),
        None => Ok(true),
    }
}

impl Board {
    /// Each active webhook with when `holder` next has work on it (`None`
    /// when it has none).
    pub async fn webhook_schedule(&self, holder: Uuid) -> Result<Vec<(Uuid, Option<Timestamp>)>> {
        let published = self.latest_seq();
        self.read(move |r| {
            let now = Timestamp::now();
            // The store's seq: other processes sharing it write events too.
            let latest = r.record::<u64>(META, SEQ_KEY)?.unwrap_or(0).max(published);
            let mut out = Vec::new();
            for (id, cursor) in cursors(r)? {
                let state = state_of(r, id)?;
                out.push((id, due(&state, cursor, latest.max(cursor), holder, now)));
            }
            Ok(out)
        })
        .await
    }

    /// Events after each active webhook's cursor: the most it has still
    /// to consider (its queue depth).
    pub async fn webhook_backlogs(&self) -> Result<Vec<(Uuid, u64)>> {
        let published = self.latest_seq();
        self.read(move |r| {
            let latest = r.record::<u64>(META, SEQ_KEY)?.unwrap_or(0).max(published);
            Ok(cursors(r)?.into_iter().map(|(id, c)| (id, latest.saturating_sub(c))).collect())
        })
        .await
    }

    /// Claims a webhook for `holder` and reads its due work: the
    /// redeliveries due, then the events after its cursor that it takes
    /// (from its head, when it has one and the retry is due), at most a
    /// batch. `None` when nothing is due or another holder has it.
    pub async fn claim_deliveries(&self, webhook: Uuid, holder: Uuid) -> Result<Option<DeliveryBatch>> {
        let policy = self.options().webhooks.policy.clone();
        let published = self.latest_seq();
        let now = Timestamp::now();
        let lease = jiff::SignedDuration::try_from(policy.lease()).map_err(Error::internal)?;
        // The claim is written only when it is not this holder's already
        // with at least half its time left, so a sender that keeps up
        // renews it with its progress and writes nothing here.
        let renew = self
            .read(move |r| {
                let Some(cursor) = r.record::<u64>(WEBHOOK_CURSORS, webhook.as_bytes())? else {
                    return Ok(None);
                };
                let latest = r.record::<u64>(META, SEQ_KEY)?.unwrap_or(0).max(published);
                let state = state_of(r, webhook)?;
                if due(&state, cursor, latest.max(cursor), holder, now).is_none_or(|d| d > now) {
                    return Ok(None);
                }
                let half = now.checked_add(lease / 2).map_err(Error::internal)?;
                Ok(Some(!state.claim.is_some_and(|c| c.holder == holder && c.until > half)))
            })
            .await?;
        match renew {
            None => return Ok(None),
            Some(false) => {}
            Some(true) => {
                let claimed = self
                    .write(move |tx| {
                        if tx.w.record::<u64>(WEBHOOK_CURSORS, webhook.as_bytes())?.is_none() {
                            return Ok(false);
                        }
                        let mut state = state_of(tx.w, webhook)?;
                        if state.claim.is_some_and(|c| c.holder != holder && c.until > tx.now) {
                            return Ok(false);
                        }
                        let until = tx.now.checked_add(lease).map_err(Error::internal)?;
                        state.claim = Some(Claim { holder, until });
                        tx.w.put_record(WEBHOOK_STATE, webhook.as_bytes(), &state)?;
                        Ok(true)
                    })
                    .await?;
                if !claimed {
                    return Ok(None);
                }
            }
        }
        self.read(move |r| read_batch(r, webhook, holder, &policy)).await
    }

    /// Records what became of a batch, in one write: the cursor moves past
    /// every event delivered or not taken, up to the first that was not
    /// delivered, which becomes the head (retried on its schedule) or,
    /// once its day of retries is over, is logged as failed and passed.
    /// The claim is renewed. Outcomes follow the batch's items; items
    /// without one were not attempted. Dropped when the holder lost its
    /// claim or the cursor moved meanwhile.
    pub async fn finish_deliveries(&self, batch: DeliveryBatch, outcomes: Vec<Outcome>) -> Result<()> {
        let policy = self.options().webhooks.policy.clone();
        self.write(move |tx| {
            let id = batch.webhook_id;
            let Some(cursor) = tx.w.record::<u64>(WEBHOOK_CURSORS, id.as_bytes())? else { return Ok(()) };
            let mut state = state_of(tx.w, id)?;
            if cursor != batch.from || state.claim.is_none_or(|c| c.holder != batch.holder) {
                return Ok(());
            }
            let now = tx.now;
            let mut to = batch.to;
            let mut delivered = Vec::new();
            let mut outcomes = outcomes.into_iter();
            let mut stream_stopped = false;
            let mut logged = false;
            for item in batch.items {
                let outcome = outcomes.next();
                if item.redelivery {
                    if let Some(outcome) = outcome {
                        finish_redelivery(tx.w, &mut state, id, &item, outcome, &policy, now)?;
                        logged = true;
                    }
                    continue;
                }
                if stream_stopped {
                    continue;
                }
                let Some(outcome) = outcome else {
                    to = item.seq - 1;
                    stream_stopped = true;
                    continue;
                };
                let attempts = item.attempts + 1;
                let failure = match outcome {
                    Outcome::Delivered { status } => {
                        state.head = None;
                        if attempts == 1 {
                            delivered.push((item.seq, item.kind, status));
                        } else {
                            let d = record(&item, DeliveryState::Delivered, attempts, Some(status), None);
                            tx.w.put_record(DELIVERIES, &logged_key(id, d.seq), &d)?;
                            logged = true;
                        }
                        continue;
                    }
                    Outcome::Refused { status } => (Some(status), Some(format!("answered {status}"))),
                    Outcome::Unreachable { error } => (None, Some(error)),
                };
                match policy.next_attempt(attempts, item.retry_from, now) {
                    Some(due) => {
                        state.head = Some(Head {
                            seq: item.seq,
                            kind: item.kind,
                            attempts,
                            last_status: failure.0,
                            last_error: failure.1,
                            due,
                            retry_from: item.retry_from,
                            created_at: item.created_at,
                        });
                        to = item.seq - 1;
                        stream_stopped = true;
                    }
                    None => {
                        // Passed as failed; the sender went on only if
                        // the item said its day was over.
                        state.head = None;
                        let d = record(&item, DeliveryState::Failed, attempts, failure.0, failure.1);
                        tx.w.put_record(DELIVERIES, &logged_key(id, d.seq), &d)?;
                        logged = true;
                    }
                }
            }
            if logged {
                trim_logged(tx.w, id, &state)?;
            }
            if !delivered.is_empty() {
                let n = state.batches;
                tx.w.put_record(DELIVERY_BATCHES, &batch_key(id, n), &BatchRecord::new(now, &delivered))?;
                if n >= BATCHES {
                    tx.w.delete(DELIVERY_BATCHES, &batch_key(id, n - BATCHES))?;
                }
                state.batches = n + 1;
            }
            let lease = jiff::SignedDuration::try_from(policy.lease()).map_err(Error::internal)?;
            state.claim =
                Some(Claim { holder: batch.holder, until: now.checked_add(lease).map_err(Error::internal)? });
            if to != cursor {
                tx.w.put_record(WEBHOOK_CURSORS, id.as_bytes(), &to)?;
            }
            tx.w.put_record(WEBHOOK_STATE, id.as_bytes(), &state)
        })
        .await
    }

    /// Ends the claims of `holder` (a sender stopping), so another
    /// process need not wait for them to run out.
    pub async fn release_webhook_claims(&self, holder: Uuid) -> Result<()> {
        self.write(move |tx| {
            let mut mine = Vec::new();
            tx.w.scan(WEBHOOK_STATE, KeyRange::all(), Direction::Forward, &mut |k, v| {
                let state: WebhookState = decode(v)?;
                if state.claim.is_some_and(|c| c.holder == holder) {
                    mine.push((k.to_vec(), state));
                }
                Ok(Scan::Continue)
            })?;
            for (k, mut state) in mine {
                state.claim = None;
                tx.w.put_record(WEBHOOK_STATE, &k, &state)?;
            }
            Ok(())
        })
        .await
    }
}

fn record(
    item: &DeliveryItem,
    state: DeliveryState,
    attempts: u32,
    last_status: Option<u16>,
    last_error: Option<String>,
) -> DeliveryRecord {
    DeliveryRecord {
        seq: item.seq,
        kind: item.kind.clone(),
        frame: item.body.clone(),
        state,
        attempts,
        last_status,
        last_error,
        due: None,
        retry_from: item.retry_from,
        created_at: item.created_at,
    }
}

fn finish_redelivery(
    w: &mut dyn WriteTxn,
    state: &mut WebhookState,
    webhook: Uuid,
    item: &DeliveryItem,
    outcome: Outcome,
    policy: &DeliveryPolicy,
    now: Timestamp,
) -> Result<()> {
    let key = logged_key(webhook, item.seq);
    let Some(mut d) = w.record::<DeliveryRecord>(DELIVERIES, &key)? else { return Ok(()) };
    if d.state != DeliveryState::Pending {
        return Ok(());
    }
    d.attempts += 1;
    let failure = match outcome {
        Outcome::Delivered { status } => {
            (d.state, d.last_status, d.last_error, d.due) =
                (DeliveryState::Delivered, Some(status), None, None);
            None
        }
        Outcome::Refused { status } => Some((Some(status), Some(format!("answered {status}")))),
        Outcome::Unreachable { error } => Some((None, Some(error))),
    };
    if let Some((status, error)) = failure {
        (d.last_status, d.last_error) = (status, error);
        d.due = policy.next_attempt(d.attempts, d.retry_from, now);
        if d.due.is_none() {
            d.state = DeliveryState::Failed;
        }
    }
    state.redeliveries.retain(|(seq, _)| *seq != item.seq);
    if let Some(due) = d.due {
        state.redeliveries.push((item.seq, due));
    }
    w.put_record(DELIVERIES, &key, &d)
}

/// Whether an attempt now is the last an event gets: its day of retries
/// is over (its failure does not stop the batch).
fn last_chance(policy: &DeliveryPolicy, retry_from: Timestamp, now: Timestamp) -> bool {
    policy.next_attempt(1, retry_from, now).is_none()
}

/// The due work of a webhook: its redeliveries due, then up to a batch of
/// the events after its cursor that it takes.
fn read_batch(
    r: &dyn ReadTxn,
    webhook: Uuid,
    holder: Uuid,
    policy: &DeliveryPolicy,
) -> Result<Option<DeliveryBatch>> {
    let now = Timestamp::now();
    let Some(h) = r.record::<WebhookRecord>(WEBHOOKS, webhook.as_bytes())? else { return Ok(None) };
    let Some(cursor) = r.record::<u64>(WEBHOOK_CURSORS, webhook.as_bytes())? else { return Ok(None) };
    let state = state_of(r, webhook)?;
    let Some(claim) = state.claim.filter(|c| c.holder == holder) else { return Ok(None) };
    let mut items = Vec::new();
    for (seq, due) in &state.redeliveries {
        if *due > now {
            continue;
        }
        if let Some(d) = r.record::<DeliveryRecord>(DELIVERIES, &logged_key(webhook, *seq))? {
            items.push(DeliveryItem {
                id: delivery_id(webhook, d.seq),
                seq: d.seq,
                body: d.frame,
                redelivery: true,
                last_chance: last_chance(policy, d.retry_from, now),
                kind: d.kind,
                attempts: d.attempts,
                retry_from: d.retry_from,
                created_at: d.created_at,
            });
        }
    }
    let latest = r.record::<u64>(META, SEQ_KEY)?.unwrap_or(0);
    let mut to = cursor;
    let stream_due = state.head.as_ref().is_none_or(|head| head.due <= now);
    if stream_due && cursor < latest {
        // A webhook whose creator is gone takes nothing more.
        let viewer = r.member(h.created_by)?.map(|m| Viewer::of(&m));
        let events = log::load(r, cursor + 1, latest, SCAN_EVENTS, SCAN_BYTES)?;
        to = events.last().map_or(latest, |e| e.seq);
        let mut taken = 0;
        for e in events {
            if taken >= policy.batch {
                break;
            }
            let head = state.head.as_ref().filter(|head| head.seq == e.seq);
            let take = match &viewer {
                Some(v) => head.is_some() || takes(r, &h, v, &e)?,
                None => false,
            };
            if take {
                taken += 1;
                items.push(DeliveryItem {
                    id: delivery_id(webhook, e.seq),
                    seq: e.seq,
                    kind: e.kind.to_string(),
                    attempts: head.map_or(0, |head| head.attempts),
                    retry_from: head.map_or(e.ts, |head| head.retry_from),
                    last_chance: last_chance(policy, head.map_or(e.ts, |head| head.retry_from), now),
                    created_at: e.ts,
                    body: e.frame(),
                    redelivery: false,
                });
                to = e.seq;
            } else {
                to = e.seq;
            }
        }
    }
    if items.is_empty() && to == cursor {
        return Ok(None);
    }
    Ok(Some(DeliveryBatch {
        webhook_id: webhook,
        url: h.url.clone(),
        secrets: h.secrets(now),
        until: claim.until,
        items,
        holder,
        from: cursor,
        to,
    }))
}
