//! The delivery log of a webhook and redelivery (docs/rules.md,
//! webhooks).
//!
//! The log is put together when it is read, newest seq first: the
//! deliveries logged one by one (those waiting for a retry, and the last
//! 1,000 finished ones that failed, were delivered after retries or were
//! redelivered), and the deliveries that got through at their first
//! attempt, from the last 256 batch records. Events a webhook did not
//! take are not in it.

use uuid::Uuid;

use super::deliveries::{logged_key, newest, state_of, trim_logged};
use super::webhooks::webhook_required;
use super::{Actor, Board};
use crate::error::{Error, Result};
use crate::records::event_log as log;
use crate::records::{RecordWrites, Records};
use crate::storage::tables::{DELIVERIES, WEBHOOK_CURSORS, WEBHOOK_STATE};
use crate::webhooks::{Delivery, DeliveryRecord, DeliveryState, Retry, delivery_seq, event_project};
use crate::wire::DeliveryQuery;

/// Most deliveries one page of the delivery log shows by default.
const DEFAULT_LIMIT: u32 = 50;

impl Board {
    /// `GET /webhooks/{id}/deliveries`, newest first.
    pub async fn list_deliveries(
        &self,
        actor: &Actor,
        webhook: Uuid,
        q: DeliveryQuery,
    ) -> Result<Vec<Delivery>> {
        actor.require_admin("manage webhooks")?;
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=crate::wire::Page::MAX_LIMIT).contains(&limit) {
            return Err(Error::invalid(
                "limit",
                format!("must be 1-{}, got {limit}", crate::wire::Page::MAX_LIMIT),
            ));
        }
        let want = q.offset.unwrap_or(0) as usize + limit as usize;
        self.read(move |r| {
            webhook_required(r, webhook)?;
            Ok(newest(r, webhook, want)?.into_iter().skip(want - limit as usize).collect())
        })
        .await
    }

    /// `POST /webhooks/{id}/deliveries/{delivery_id}/redeliver`: the
    /// delivery is attempted again at once, with a new day of retries,
    /// like any retry (out of the stream's order; a failure holds nothing
    /// back). One waiting for a retry is made due now. It counts among
    /// the webhook's pending retries, so it is refused when those are
    /// full.
    pub async fn redeliver(&self, actor: &Actor, webhook: Uuid, delivery: Uuid) -> Result<Delivery> {
        actor.require_admin("manage webhooks")?;
        let not_found = move || Error::not_found(format!("delivery {delivery} not found"));
        let seq = delivery_seq(webhook, delivery).ok_or_else(not_found)?;
        let max_pending = self.options().webhooks.policy.max_pending;
        let done = self
            .write(move |tx| {
                let h = webhook_required(tx.w, webhook)?;
                let mut state = state_of(tx.w, webhook)?;
                let now = tx.now;
                let key = logged_key(webhook, seq);
                let mut d = match tx.w.record::<DeliveryRecord>(DELIVERIES, &key)? {
                    Some(d) => d,
                    None => {
                        // Delivered at its first attempt: it must still be
                        // in the event log, passed by the cursor, and one
                        // the webhook takes.
                        let cursor = tx.w.record::<u64>(WEBHOOK_CURSORS, webhook.as_bytes())?;
                        let event =
                            log::load(&*tx.w, seq, seq, 1, usize::MAX)?.pop().ok_or_else(not_found)?;
                        let viewer =
                            tx.w.member(h.created_by)?
                                .filter(|m| m.is_active)
                                .map(|m| crate::events::viewer_of(&m))
                                .ok_or_else(not_found)?;
                        let project_ok = match h.project_id {
                            Some(p) => event_project(&*tx.w, &event)? == Some(p),
                            None => true,
                        };
                        let taken = h.wants(event.kind.as_str()) && event.visible_to(&viewer) && project_ok;
                        if !taken || cursor.is_none_or(|c| c < seq) {
                            return Err(not_found());
                        }
                        DeliveryRecord {
                            seq,
                            kind: event.kind.to_string(),
                            frame: event.frame(),
                            state: DeliveryState::Delivered,
                            attempts: 1,
                            last_status: None,
                            last_error: None,
                            due: None,
                            retry_from: event.ts,
                            created_at: event.ts,
                        }
                    }
                };
                state.retries.retain(|r| r.seq() != seq);
                if state.retries.len() >= max_pending {
                    return Err(Error::conflict(format!(
                        "webhook {webhook} has {max_pending} deliveries waiting for a retry; wait for them"
                    )));
                }
                state.retries.push(Retry(seq, now));
                (d.state, d.due, d.retry_from) = (DeliveryState::Pending, Some(now), now);
                tx.w.put_record(DELIVERIES, &key, &d)?;
                trim_logged(tx.w, webhook, &state)?;
                tx.w.put_record(WEBHOOK_STATE, webhook.as_bytes(), &state)?;
                Ok(d.to_wire(webhook))
            })
            .await?;
        self.wake_webhooks();
        Ok(done)
    }
}
