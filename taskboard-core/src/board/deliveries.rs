//! The delivery queue of webhooks (docs/rules.md, webhooks), kept in the
//! store so it survives restarts and is shared by every process of a
//! board.
//!
//! Each active webhook has a cursor in the event log. Queuing reads the
//! events after the cursors, makes a delivery for each event a webhook
//! takes (its patterns, its project, and its creator's view of the
//! stream) and moves the cursors, in one transaction; the log keeps every
//! event some cursor has not passed. A sender claims the due deliveries
//! of one webhook (the claim moves their queue entries to when it ends,
//! so no other sender takes them meanwhile), attempts them in seq order
//! and records the outcomes under its claim; a claim that ended first
//! (the sender stalled or died) lets the deliveries be claimed again.

use std::collections::HashMap;
use std::ops::Bound;

use jiff::Timestamp;
use uuid::Uuid;

use super::webhooks::webhook_required;
use super::{Actor, Board, SEQ_KEY};
use crate::api::DeliveryQuery;
use crate::error::{Error, Result};
use crate::events::{Viewer, log};
use crate::records::{RecordWrites, Records};
use crate::storage::codec::{Key, decode, uuid_at};
use crate::storage::tables::*;
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, WriteTxn};
use crate::webhooks::{
    ClaimedDelivery, Delivery, DeliveryRecord, DeliveryState, Outcome, WebhookRecord, event_project,
};

/// Events considered in one queuing transaction, and the bytes of their
/// records after which no more are read (large messages).
const QUEUE_BATCH: usize = 1000;
const QUEUE_BYTES: usize = 8 << 20;
/// Most deliveries one page of the delivery log shows.
const DEFAULT_LIMIT: u32 = 50;

fn ms(t: Timestamp) -> u64 {
    t.as_millisecond().max(0) as u64
}

fn queue_key(webhook: Uuid, due: Timestamp, seq: u64, id: Uuid) -> Vec<u8> {
    Key::new().uuid(webhook).u64(ms(due)).u64(seq).uuid(id).build()
}

fn delivery_key(webhook: Uuid, id: Uuid) -> Vec<u8> {
    Key::new().uuid(webhook).uuid(id).build()
}

fn u64_at(key: &[u8], offset: usize) -> Result<u64> {
    key.get(offset..offset + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
        .ok_or_else(|| Error::internal("malformed queue key"))
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

fn put_queued(w: &mut (impl WriteTxn + ?Sized), d: &mut DeliveryRecord, due: Timestamp) -> Result<()> {
    if let Some(old) = d.due {
        w.delete(DELIVERY_QUEUE, &queue_key(d.webhook_id, old, d.seq, d.id))?;
    }
    w.put(DELIVERY_QUEUE, &queue_key(d.webhook_id, due, d.seq, d.id), &[])?;
    d.due = Some(due);
    Ok(())
}

fn unqueue(w: &mut (impl WriteTxn + ?Sized), d: &mut DeliveryRecord) -> Result<()> {
    if let Some(old) = d.due.take() {
        w.delete(DELIVERY_QUEUE, &queue_key(d.webhook_id, old, d.seq, d.id))?;
    }
    Ok(())
}

impl Board {
    /// Queues the deliveries of the events the active webhooks have not
    /// yet considered, up to a batch of events per call. True when more
    /// events wait.
    pub async fn queue_webhook_deliveries(&self) -> Result<bool> {
        let latest = self.latest_seq();
        let behind = self.read(move |r| Ok(cursors(r)?.iter().any(|(_, c)| *c < latest))).await?;
        if !behind {
            return Ok(false);
        }
        self.write(|tx| {
            let latest = tx.w.record::<u64>(META, SEQ_KEY)?.unwrap_or(0);
            let cursors = cursors(tx.w)?;
            let Some(from) = cursors.iter().map(|(_, c)| *c).min() else { return Ok(false) };
            if from >= latest {
                return Ok(false);
            }
            let events = log::load(&*tx.w, from + 1, latest, QUEUE_BATCH, QUEUE_BYTES)?;
            let last = events.last().map_or(latest, |e| e.seq);
            let mut projects: HashMap<u64, Option<Uuid>> = HashMap::new();
            for (id, cursor) in cursors {
                if cursor >= last {
                    continue;
                }
                let h: WebhookRecord = webhook_required(tx.w, id)?;
                // A webhook whose creator is gone receives nothing more.
                let viewer = tx.w.member(h.created_by)?.map(|m| Viewer::of(&m));
                for e in events.iter().filter(|e| e.seq > cursor) {
                    let Some(viewer) = &viewer else { break };
                    if !h.wants(e.kind.as_str()) || !e.visible_to(viewer) {
                        continue;
                    }
                    if let Some(p) = h.project_id {
                        let of = match projects.get(&e.seq) {
                            Some(of) => *of,
                            None => {
                                let of = event_project(tx.w, e)?;
                                projects.insert(e.seq, of);
                                of
                            }
                        };
                        if of != Some(p) {
                            continue;
                        }
                    }
                    let mut d = DeliveryRecord {
                        id: Uuid::now_v7(),
                        webhook_id: id,
                        seq: e.seq,
                        kind: e.kind.to_string(),
                        frame: e.frame(),
                        state: DeliveryState::Pending,
                        attempts: 0,
                        last_status: None,
                        last_error: None,
                        due: None,
                        claim: None,
                        retry_from: tx.now,
                        created_at: tx.now,
                    };
                    put_queued(tx.w, &mut d, tx.now)?;
                    tx.w.put_record(DELIVERIES, &delivery_key(id, d.id), &d)?;
                }
                tx.w.put_record(WEBHOOK_CURSORS, id.as_bytes(), &last)?;
            }
            Ok(last < latest)
        })
        .await
    }

    /// The backlog of each active webhook, for monitoring: the events
    /// after its cursor (not yet considered; some may not match its
    /// filters) plus the deliveries waiting in its queue (first attempts
    /// and retries).
    pub async fn webhook_backlogs(&self) -> Result<Vec<(Uuid, u64)>> {
        let latest = self.latest_seq();
        self.read(move |r| {
            let mut out = Vec::new();
            for (id, cursor) in cursors(r)? {
                let mut queued = 0u64;
                r.scan(DELIVERY_QUEUE, KeyRange::prefix(id.as_bytes()), Direction::Forward, &mut |_, _| {
                    queued += 1;
                    Ok(Scan::Continue)
                })?;
                out.push((id, latest.saturating_sub(cursor) + queued));
            }
            Ok(out)
        })
        .await
    }

    /// Each active webhook with the time its next queue entry is due
    /// (`None` when it has none).
    pub async fn webhook_schedule(&self) -> Result<Vec<(Uuid, Option<Timestamp>)>> {
        self.read(|r| {
            let mut out = Vec::new();
            for (id, _) in cursors(r)? {
                let mut due = None;
                r.scan(DELIVERY_QUEUE, KeyRange::prefix(id.as_bytes()), Direction::Forward, &mut |k, _| {
                    due = Timestamp::from_millisecond(u64_at(k, 16)? as i64).ok();
                    Ok(Scan::Stop)
                })?;
                out.push((id, due));
            }
            Ok(out)
        })
        .await
    }

    /// Claims the due deliveries of a webhook, at most a batch, in seq
    /// order, for the time the policy gives their attempts.
    pub async fn claim_deliveries(&self, webhook: Uuid) -> Result<Vec<ClaimedDelivery>> {
        let policy = self.options().webhooks.policy.clone();
        self.write(move |tx| {
            let Some(h) = tx.w.record::<WebhookRecord>(WEBHOOKS, webhook.as_bytes())? else {
                return Ok(Vec::new());
            };
            if !h.active {
                return Ok(Vec::new());
            }
            let now = ms(tx.now);
            let mut due = Vec::new();
            let range = KeyRange {
                start: Bound::Included(webhook.as_bytes().to_vec()),
                end: Bound::Included(Key::new().uuid(webhook).u64(now).u64(u64::MAX).build()),
            };
            tx.w.scan(DELIVERY_QUEUE, range, Direction::Forward, &mut |k, _| {
                due.push((u64_at(k, 24)?, uuid_at(k, 32)?));
                Ok(if due.len() >= policy.batch { Scan::Stop } else { Scan::Continue })
            })?;
            due.sort_unstable();
            let claim = Uuid::new_v4();
            let lease = policy.lease(due.len());
            let until = tx.now.checked_add(lease).map_err(Error::internal)?;
            let mut out = Vec::with_capacity(due.len());
            for (_, id) in due {
                let key = delivery_key(webhook, id);
                let mut d: DeliveryRecord =
                    tx.w.record(DELIVERIES, &key)?
                        .ok_or_else(|| Error::internal("a queued delivery is missing"))?;
                put_queued(tx.w, &mut d, until)?;
                d.claim = Some(claim);
                tx.w.put_record(DELIVERIES, &key, &d)?;
                out.push(ClaimedDelivery {
                    id,
                    webhook_id: webhook,
                    seq: d.seq,
                    url: h.url.clone(),
                    secret: h.secret.clone(),
                    body: d.frame,
                    claim,
                });
            }
            Ok(out)
        })
        .await
    }

    /// Records the outcomes of claimed attempts: delivered, retried later,
    /// or failed for good once the policy gives up. An outcome whose claim
    /// is no longer the delivery's (it ended and another sender took the
    /// delivery, or it was queued again) is dropped. A retry that got
    /// through shows the receiver is back: the webhook's other waiting
    /// deliveries become due at once, in seq order, rather than each at
    /// the end of its own delay.
    pub async fn finish_deliveries(&self, outcomes: Vec<(ClaimedDelivery, Outcome)>) -> Result<()> {
        if outcomes.is_empty() {
            return Ok(());
        }
        let policy = self.options().webhooks.policy.clone();
        self.write(move |tx| {
            let mut back = Vec::new();
            for (c, outcome) in outcomes {
                let key = delivery_key(c.webhook_id, c.id);
                let Some(mut d) = tx.w.record::<DeliveryRecord>(DELIVERIES, &key)? else { continue };
                if d.claim != Some(c.claim) || d.state != DeliveryState::Pending {
                    continue;
                }
                d.claim = None;
                d.attempts += 1;
                match outcome {
                    Outcome::Delivered { status } => {
                        if d.attempts > 1 && !back.contains(&d.webhook_id) {
                            back.push(d.webhook_id);
                        }
                        unqueue(tx.w, &mut d)?;
                        d.state = DeliveryState::Delivered;
                        d.last_status = Some(status);
                        d.last_error = None;
                    }
                    failed => {
                        (d.last_status, d.last_error) = match failed {
                            Outcome::Refused { status } => (Some(status), Some(format!("answered {status}"))),
                            Outcome::Unreachable { error } => (None, Some(error)),
                            Outcome::Delivered { .. } => unreachable!("matched above"),
                        };
                        match policy.next_attempt(d.attempts, d.retry_from, tx.now) {
                            Some(next) => put_queued(tx.w, &mut d, next)?,
                            None => {
                                unqueue(tx.w, &mut d)?;
                                d.state = DeliveryState::Failed;
                            }
                        }
                    }
                }
                tx.w.put_record(DELIVERIES, &key, &d)?;
            }
            for webhook in back {
                let mut waiting = Vec::new();
                tx.w.scan(
                    DELIVERY_QUEUE,
                    KeyRange::prefix(webhook.as_bytes()),
                    Direction::Forward,
                    &mut |k, _| {
                        waiting.push(uuid_at(k, 32)?);
                        Ok(Scan::Continue)
                    },
                )?;
                for id in waiting {
                    let key = delivery_key(webhook, id);
                    if let Some(mut d) = tx.w.record::<DeliveryRecord>(DELIVERIES, &key)?
                        && d.claim.is_none()
                    {
                        put_queued(tx.w, &mut d, tx.now)?;
                        tx.w.put_record(DELIVERIES, &key, &d)?;
                    }
                }
            }
            Ok(())
        })
        .await
    }

    /// Hands claimed deliveries back unattempted (a sender stopping): due
    /// at once, for any sender.
    pub async fn release_deliveries(&self, claims: Vec<ClaimedDelivery>) -> Result<()> {
        if claims.is_empty() {
            return Ok(());
        }
        self.write(move |tx| {
            for c in claims {
                let key = delivery_key(c.webhook_id, c.id);
                let Some(mut d) = tx.w.record::<DeliveryRecord>(DELIVERIES, &key)? else { continue };
                if d.claim == Some(c.claim) && d.state == DeliveryState::Pending {
                    d.claim = None;
                    put_queued(tx.w, &mut d, tx.now)?;
                    tx.w.put_record(DELIVERIES, &key, &d)?;
                }
            }
            Ok(())
        })
        .await
    }

    /// `GET /webhooks/{id}/deliveries`, newest first.
    pub async fn list_deliveries(
        &self,
        actor: &Actor,
        webhook: Uuid,
        q: DeliveryQuery,
    ) -> Result<Vec<Delivery>> {
        actor.require_admin("manage webhooks")?;
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=crate::api::Page::MAX_LIMIT).contains(&limit) {
            return Err(Error::invalid(
                "limit",
                format!("must be 1-{}, got {limit}", crate::api::Page::MAX_LIMIT),
            ));
        }
        let mut skip = q.offset.unwrap_or(0);
        self.read(move |r| {
            webhook_required(r, webhook)?;
            let mut out = Vec::new();
            r.scan(DELIVERIES, KeyRange::prefix(webhook.as_bytes()), Direction::Reverse, &mut |_, v| {
                if skip > 0 {
                    skip -= 1;
                    return Ok(Scan::Continue);
                }
                out.push(decode::<DeliveryRecord>(v)?.to_wire());
                Ok(if out.len() >= limit as usize { Scan::Stop } else { Scan::Continue })
            })?;
            Ok(out)
        })
        .await
    }

    /// `POST /webhooks/{id}/deliveries/{delivery_id}/redeliver`: due now,
    /// with a new day of retries; a claim in progress no longer counts.
    pub async fn redeliver(&self, actor: &Actor, webhook: Uuid, delivery: Uuid) -> Result<Delivery> {
        actor.require_admin("manage webhooks")?;
        self.write(move |tx| {
            webhook_required(tx.w, webhook)?;
            let key = delivery_key(webhook, delivery);
            let mut d: DeliveryRecord =
                tx.w.record(DELIVERIES, &key)?
                    .ok_or_else(|| Error::not_found(format!("delivery {delivery} not found")))?;
            d.state = DeliveryState::Pending;
            d.claim = None;
            d.retry_from = tx.now;
            put_queued(tx.w, &mut d, tx.now)?;
            tx.w.put_record(DELIVERIES, &key, &d)?;
            Ok(d.to_wire())
        })
        .await
    }
}
