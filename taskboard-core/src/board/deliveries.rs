//! Delivery of webhooks (docs/rules.md, webhooks), with its state kept in
//! the store so it survives restarts and is shared by every process of a
//! board.
//!
//! Each active webhook has a cursor in the event log (the last event
//! whose first attempt is done, or that it does not take) and a small
//! [`WebhookState`]. A sender claims a webhook (the claim is stored: one
//! sender at a time, each process its own holder id), reads the events
//! after the cursor straight from the log, keeps those the webhook takes
//! (its patterns, its project, its creator's view of the stream), POSTs
//! them in seq order together with the retries that are due, and records
//! its progress in one write per batch: the cursor moves past every first
//! attempt made, and a first attempt that did not get through becomes a
//! retry, logged with a copy of its frame and attempted on its own
//! schedule, so it holds back no later event. A webhook has at most
//! `DeliveryPolicy::max_pending` retries waiting; while it has that many
//! its cursor stays where it is (the events wait in the log, which keeps
//! every event some cursor has not passed: `records::event_log`).

use std::sync::Arc;

use jiff::Timestamp;
use uuid::Uuid;

use super::Board;
use super::tx::SEQ_KEY;
use crate::error::{Error, Result};
use crate::events::hub::Hub;
use crate::events::{Event, Viewer};
use crate::records::event_log as log;
use crate::records::{RecordWrites, Records};
use crate::storage::codec::{Key, decode, uuid_at};
use crate::storage::tables::{DELIVERIES, DELIVERY_BATCHES, META, WEBHOOK_CURSORS, WEBHOOK_STATE, WEBHOOKS};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, WriteTxn};
use crate::webhooks::{
    BatchRecord, Claim, Delivery, DeliveryBatch, DeliveryItem, DeliveryPolicy, DeliveryRecord, DeliveryState,
    Outcome, Retry, WebhookHealth, WebhookRecord, WebhookState, delivery_id, event_project,
};

/// Events read from the log for one batch at most, and the bytes of their
/// records after which no more are read (large messages).
const SCAN_EVENTS: usize = 2000;
const SCAN_BYTES: usize = 4 << 20;
/// Batch records kept per webhook (each lists the deliveries of one batch
/// that got through at their first attempt).
pub(crate) const BATCHES: u64 = 256;
/// Finished deliveries logged one by one (failed, delivered after
/// retries, redelivered) kept per webhook, beside the pending ones; the
/// oldest go first.
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
/// [`LOGGED`] (the pending ones are its retries).
pub(super) fn trim_logged(
    w: &mut (impl WriteTxn + ?Sized),
    webhook: Uuid,
    state: &WebhookState,
) -> Result<()> {
    let pending: std::collections::HashSet<u64> = state.retries.iter().map(Retry::seq).collect();
    let mut finished = Vec::new();
    w.scan(DELIVERIES, KeyRange::prefix(webhook.as_bytes()), Direction::Forward, &mut |k, _| {
        let seq = k.get(16..24).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes);
        if !seq.is_some_and(|s| pending.contains(&s)) {
            finished.push(k.to_vec());
        }
        Ok(Scan::Continue)
    })?;
    for k in finished.iter().take(finished.len().saturating_sub(LOGGED)) {
        w.delete(DELIVERIES, k)?;
    }
    Ok(())
}

/// Ends the pending deliveries of a webhook being turned off: each is
/// logged `failed`, as what happens while it is off is not delivered
/// later either.
pub(super) fn drop_retries(w: &mut (impl WriteTxn + ?Sized), webhook: Uuid) -> Result<()> {
    let mut state = state_of(w, webhook)?;
    for retry in std::mem::take(&mut state.retries) {
        let key = logged_key(webhook, retry.seq());
        if let Some(mut d) = w.record::<DeliveryRecord>(DELIVERIES, &key)? {
            (d.state, d.due) = (DeliveryState::Failed, None);
            d.last_error = Some("the webhook was turned off".to_string());
            w.put_record(DELIVERIES, &key, &d)?;
        }
    }
    state.claim = None;
    w.put_record(WEBHOOK_STATE, webhook.as_bytes(), &state)
}

/// What a webhook has still to send: the events after its cursor (some
/// may not be ones it takes) and its deliveries waiting for a retry.
/// The newest `want` deliveries of `webhook`, newest first: those logged
/// one by one and those of the batch records (docs/rules.md, webhooks).
pub(super) fn newest(r: &(impl Records + ?Sized), webhook: Uuid, want: usize) -> Result<Vec<Delivery>> {
    let mut by_seq = std::collections::BTreeMap::new();
    r.scan(DELIVERIES, KeyRange::prefix(webhook.as_bytes()), Direction::Reverse, &mut |_, v| {
        let d = decode::<DeliveryRecord>(v)?;
        by_seq.insert(d.seq, d.to_wire(webhook));
        Ok(Scan::Continue)
    })?;
    // Batches are in seq order: the newest `want` of theirs, less those
    // logged one by one, hold every one that can be shown.
    let mut from_batches = 0;
    let enough = want + by_seq.len();
    r.scan(DELIVERY_BATCHES, KeyRange::prefix(webhook.as_bytes()), Direction::Reverse, &mut |_, v| {
        for d in decode::<BatchRecord>(v)?.to_wire(webhook).into_iter().rev() {
            from_batches += 1;
            by_seq.entry(d.seq).or_insert(d);
        }
        Ok(if from_batches >= enough { Scan::Stop } else { Scan::Continue })
    })?;
    Ok(by_seq.into_values().rev().take(want).collect())
}

/// Deliveries read to tell a webhook's health: failures in a row beyond
/// this are shown as this many or more.
const HEALTH_WINDOW: usize = 100;

/// How the deliveries of `webhook` fare: the newest attempted one, and
/// how many attempted ones in a row, newest first, did not get through.
pub(super) fn health(r: &(impl Records + ?Sized), webhook: Uuid) -> Result<WebhookHealth> {
    let tried: Vec<Delivery> =
        newest(r, webhook, HEALTH_WINDOW)?.into_iter().filter(|d| d.attempts > 0).collect();
    let consecutive_failures =
        tried.iter().take_while(|d| d.state != DeliveryState::Delivered).count() as u32;
    Ok(match tried.into_iter().next() {
        Some(d) => WebhookHealth {
            last_state: Some(d.state),
            last_status: d.last_status,
            last_error: d.last_error,
            last_at: Some(d.created_at),
            consecutive_failures,
        },
        None => WebhookHealth::default(),
    })
}

pub(super) fn backlog(state: &WebhookState, cursor: u64, latest: u64) -> u64 {
    latest.saturating_sub(cursor) + state.retries.len() as u64
}

/// When the work of a webhook is next due for `holder`: now when events
/// wait after its cursor and it has room for more retries, else its first
/// retry; not before another holder's claim ends. `None` when it has
/// nothing to do.
fn due(
    state: &WebhookState,
    cursor: u64,
    latest: u64,
    policy: &DeliveryPolicy,
    holder: Uuid,
    now: Timestamp,
) -> Option<Timestamp> {
    let stream = (cursor < latest && state.retries.len() < policy.max_pending).then_some(now);
    let retry = state.retries.iter().map(Retry::due).min();
    let due = match (stream, retry) {
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
    /// The board's time (a manual clock in tests).
    fn delivery_now(&self) -> Timestamp {
        self.options().clock.timestamp()
    }

    /// Each active webhook with when `holder` next has work on it (`None`
    /// when it has none).
    pub async fn webhook_schedule(&self, holder: Uuid) -> Result<Vec<(Uuid, Option<Timestamp>)>> {
        let published = self.latest_seq();
        let policy = self.options().webhooks.policy.clone();
        let now = self.delivery_now();
        self.read(move |r| {
            // The store's seq: other processes sharing it write events too.
            let latest = r.record::<u64>(META, SEQ_KEY)?.unwrap_or(0).max(published);
            let mut out = Vec::new();
            for (id, cursor) in cursors(r)? {
                let state = state_of(r, id)?;
                out.push((id, due(&state, cursor, latest.max(cursor), &policy, holder, now)));
            }
            Ok(out)
        })
        .await
    }

    /// The backlog of each active webhook, for monitoring: the events
    /// after its cursor (the most it has still to consider) plus its
    /// deliveries waiting for a retry.
    pub async fn webhook_backlogs(&self) -> Result<Vec<(Uuid, u64)>> {
        let published = self.latest_seq();
        self.read(move |r| {
            let latest = r.record::<u64>(META, SEQ_KEY)?.unwrap_or(0).max(published);
            let mut out = Vec::new();
            for (id, cursor) in cursors(r)? {
                out.push((id, backlog(&state_of(r, id)?, cursor, latest)));
            }
            Ok(out)
        })
        .await
    }

    /// Claims a webhook for `holder` and reads its due work: the retries
    /// due, then the events after its cursor that it takes, at most a
    /// batch and no more than it has room to retry. `None` when nothing
    /// is due or another holder has it.
    pub async fn claim_deliveries(&self, webhook: Uuid, holder: Uuid) -> Result<Option<DeliveryBatch>> {
        let policy = self.options().webhooks.policy.clone();
        let published = self.latest_seq();
        let now = self.delivery_now();
        let lease = jiff::SignedDuration::try_from(policy.lease()).map_err(Error::internal)?;
        // The claim is written only when it is not this holder's already
        // with at least half its time left, so a sender that keeps up
        // renews it with its progress and writes nothing here.
        let check = policy.clone();
        let renew = self
            .read(move |r| {
                let Some(cursor) = r.record::<u64>(WEBHOOK_CURSORS, webhook.as_bytes())? else {
                    return Ok(None);
                };
                let latest = r.record::<u64>(META, SEQ_KEY)?.unwrap_or(0).max(published);
                let state = state_of(r, webhook)?;
                if due(&state, cursor, latest.max(cursor), &check, holder, now).is_none_or(|d| d > now) {
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
        let inner = self.inner.clone();
        self.read(move |r| read_batch(r, &inner.hub, webhook, holder, &policy, now)).await
    }

    /// Records what became of a batch, in one write. The cursor moves
    /// past every first attempt made (and the events between them the
    /// webhook does not take); a first attempt that did not get through
    /// is logged with its frame and waits for its retry, or, when its day
    /// of retries is already over, is logged `failed`. Retries are
    /// recorded in their own log records. The claim is renewed. Outcomes
    /// follow the batch's items; items without one were not attempted
    /// (the cursor stays before the first such first attempt). Dropped
    /// when the holder lost its claim or the cursor moved meanwhile.
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
            let mut logged = false;
            let mut outcomes = outcomes.into_iter();
            let mut items = batch.items.into_iter();
            while let Some(item) = items.next() {
                let Some(outcome) = outcomes.next() else {
                    // Not attempted, nor anything after it: the first
                    // attempts among them wait after the cursor.
                    if let Some(first) = std::iter::once(item).chain(items).find(|i| !i.retry) {
                        to = first.seq - 1;
                    }
                    break;
                };
                if item.retry {
                    finish_retry(tx.w, &mut state, id, &item, outcome, &policy, now)?;
                    logged = true;
                    continue;
                }
                let (status, error) = match outcome {
                    Outcome::Delivered { status } => {
                        delivered.push((item.seq, item.kind, status));
                        continue;
                    }
                    failure => failure_of(failure),
                };
                let due = policy.next_attempt(1, item.retry_from, now);
                let state_now = if due.is_some() { DeliveryState::Pending } else { DeliveryState::Failed };
                let mut d = record(&item, state_now, 1, status, error);
                d.due = due;
                tx.w.put_record(DELIVERIES, &logged_key(id, d.seq), &d)?;
                if let Some(due) = due {
                    state.retries.push(Retry(item.seq, due));
                }
                logged = true;
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

/// The status and error a failed attempt is logged with.
fn failure_of(outcome: Outcome) -> (Option<u16>, Option<String>) {
    match outcome {
        Outcome::Delivered { status } => (Some(status), None),
        Outcome::Refused { status } => (Some(status), Some(format!("answered {status}"))),
        Outcome::Unreachable { error } => (None, Some(error)),
    }
}

/// Records the outcome of a retry (or a redelivery) in its log record and
/// in the webhook's pending retries: delivered, due again on its
/// schedule, or `failed` once its day of retries is over.
fn finish_retry(
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
    if let Outcome::Delivered { status } = outcome {
        (d.state, d.last_status, d.last_error, d.due) = (DeliveryState::Delivered, Some(status), None, None);
    } else {
        (d.last_status, d.last_error) = failure_of(outcome);
        d.due = policy.next_attempt(d.attempts, d.retry_from, now);
        if d.due.is_none() {
            d.state = DeliveryState::Failed;
        }
    }
    state.retries.retain(|r| r.seq() != item.seq);
    if let Some(due) = d.due {
        state.retries.push(Retry(item.seq, due));
    }
    w.put_record(DELIVERIES, &key, &d)
}

/// The due work of a webhook: up to a batch of its retries due, then up
/// to a batch of the events after its cursor that it takes, no more than
/// it has room to retry should they all fail.
fn read_batch(
    r: &dyn ReadTxn,
    hub: &Hub,
    webhook: Uuid,
    holder: Uuid,
    policy: &DeliveryPolicy,
    now: Timestamp,
) -> Result<Option<DeliveryBatch>> {
    let Some(h) = r.record::<WebhookRecord>(WEBHOOKS, webhook.as_bytes())? else { return Ok(None) };
    let Some(cursor) = r.record::<u64>(WEBHOOK_CURSORS, webhook.as_bytes())? else { return Ok(None) };
    let state = state_of(r, webhook)?;
    let Some(claim) = state.claim.filter(|c| c.holder == holder) else { return Ok(None) };
    // A webhook sees what its creator sees now: one whose creator is gone
    // or deactivated sends nothing more, not even its retries, and a
    // demoted creator's webhook no longer takes admin events.
    let viewer = r.member(h.created_by)?.filter(|m| m.is_active).map(|m| crate::events::viewer_of(&m));
    let mut items = Vec::new();
    let retries = if viewer.is_some() { &state.retries[..] } else { &[] };
    for retry in retries.iter().filter(|x| x.due() <= now).take(policy.batch) {
        if let Some(d) = r.record::<DeliveryRecord>(DELIVERIES, &logged_key(webhook, retry.seq()))? {
            items.push(DeliveryItem {
                id: delivery_id(webhook, d.seq),
                seq: d.seq,
                body: d.frame,
                retry: true,
                kind: d.kind,
                retry_from: d.retry_from,
                created_at: d.created_at,
            });
        }
    }
    // Events up to the counter have committed as this snapshot sees it.
    // With PostgreSQL the snapshot reads the events table only below the
    // mark (docs/storage.md S.49), so the log is read only up to the
    // newest event it shows: a cursor moved to the counter past events
    // still hidden would never deliver them.
    let counted = r.record::<u64>(META, SEQ_KEY)?.unwrap_or(0);
    let mut to = cursor;
    let room = policy.max_pending.saturating_sub(state.retries.len()).min(policy.batch);
    if room > 0 && cursor < counted {
        // The events from the hub's memory when it still holds them
        // (already rendered, shared by every webhook; published, so every
        // lower seq has committed), else from the log.
        let held: Vec<Arc<Event>> = hub
            .held(cursor + 1, SCAN_EVENTS)
            .unwrap_or_default()
            .into_iter()
            .take_while(|e| e.seq <= counted)
            .collect();
        let events: Vec<Arc<Event>> = if held.is_empty() {
            let readable = log::newest(r)?.unwrap_or(0);
            let loaded = log::load(r, cursor + 1, readable, SCAN_EVENTS, SCAN_BYTES)?;
            if loaded.is_empty() {
                // None readable after the cursor: it moves to the newest
                // readable event, never past the mark.
                to = readable.max(cursor);
            }
            loaded.into_iter().map(Arc::new).collect()
        } else {
            held
        };
        let mut taken = 0;
        for e in events {
            let take = match &viewer {
                Some(v) => takes(r, &h, v, &e)?,
                None => false,
            };
            if take {
                if taken == room {
                    break;
                }
                taken += 1;
                items.push(DeliveryItem {
                    id: delivery_id(webhook, e.seq),
                    seq: e.seq,
                    kind: e.kind.to_string(),
                    retry_from: e.ts,
                    created_at: e.ts,
                    body: e.frame(),
                    retry: false,
                });
            }
            to = e.seq;
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
