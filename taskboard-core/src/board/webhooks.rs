//! Webhooks: created, changed, rotated and deleted by admins and owners
//! (docs/rules.md, webhooks).

use uuid::Uuid;

use super::deliveries::{backlog, drop_retries, health, state_of};
use super::tx::SEQ_KEY;
use super::{Actor, Board};
use crate::error::{Error, Result};
use crate::events::{Audience, EventKind};
use crate::records::{RecordWrites, Records};
use crate::storage::tables::{DELIVERIES, DELIVERY_BATCHES, META, WEBHOOK_CURSORS, WEBHOOK_STATE, WEBHOOKS};
use crate::storage::{Direction, KeyRange, Scan};
use crate::webhooks::{AddressRule, CreatedWebhook, Webhook, WebhookRecord, new_secret};
use crate::wire::{NewWebhook, WebhookPatch};

/// Most event type patterns a webhook may have.
pub const MAX_PATTERNS: usize = 100;
const MAX_URL: usize = 2048;
const MAX_DESCRIPTION: usize = 2000;

fn check_patterns(events: &[String]) -> Result<()> {
    if events.is_empty() {
        return Err(Error::invalid("events", "must name at least one event type or pattern"));
    }
    if events.len() > MAX_PATTERNS {
        return Err(Error::invalid("events", format!("at most {MAX_PATTERNS} patterns")));
    }
    for p in events {
        let body = p.strip_suffix('*').unwrap_or(p);
        let ok = !p.is_empty()
            && p.len() <= 100
            && body.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '_');
        if !ok {
            return Err(Error::invalid(
                "events",
                format!("{p:?} is not an event type or a prefix ending in `*` (`task.*`, `*`)"),
            ));
        }
    }
    Ok(())
}

fn check_description(d: &Option<String>) -> Result<()> {
    match d {
        Some(d) if d.chars().count() > MAX_DESCRIPTION => {
            Err(Error::invalid("description", format!("at most {MAX_DESCRIPTION} characters")))
        }
        // A description is one line shown in lists: no control characters
        // (NUL, line breaks) and none that hide or reorder text.
        Some(d) => match d.chars().find(|&c| c.is_control() || crate::validate::is_invisible(c)) {
            Some(c) => Err(Error::invalid(
                "description",
                format!("must not hold control or invisible characters, found U+{:04X}", u32::from(c)),
            )),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

/// A webhook as `GET` shows it: with its backlog (the events after its
/// cursor and its deliveries waiting for a retry).
fn with_backlog(r: &(impl Records + ?Sized), h: &WebhookRecord, latest: u64) -> Result<Webhook> {
    let cursor = r.record::<u64>(WEBHOOK_CURSORS, h.id.as_bytes())?;
    let latest = r.record::<u64>(META, SEQ_KEY)?.unwrap_or(0).max(latest);
    let mut wire = h.to_wire();
    wire.backlog = match cursor {
        Some(c) => Some(backlog(&state_of(r, h.id)?, c, latest)),
        None => Some(0),
    };
    wire.health = Some(health(r, h.id)?);
    Ok(wire)
}

pub(super) fn webhook_required(r: &(impl Records + ?Sized), id: Uuid) -> Result<WebhookRecord> {
    r.record(WEBHOOKS, id.as_bytes())?.ok_or_else(|| Error::not_found(format!("webhook {id} not found")))
}

impl Board {
    fn address_rule(&self) -> AddressRule {
        AddressRule { allow_private: self.options().webhooks.allow_private }
    }

    async fn checked_url(&self, url: &str) -> Result<String> {
        if url.len() > MAX_URL {
            return Err(Error::invalid("url", format!("at most {MAX_URL} bytes")));
        }
        Ok(self.address_rule().check_url(url).await?.to_string())
    }

    /// `POST /webhooks`: the answer is the only one, with rotation, that
    /// shows the secret. The webhook receives the events after this one
    /// was made.
    pub async fn create_webhook(&self, actor: &Actor, new: NewWebhook) -> Result<CreatedWebhook> {
        actor.require_admin("manage webhooks")?;
        let events = new.events.unwrap_or_else(|| vec!["*".to_string()]);
        check_patterns(&events)?;
        check_description(&new.description)?;
        let url = self.checked_url(&new.url).await?;
        let secret = new_secret()?;
        let me = actor.id();
        self.write_as(actor.request(), move |tx| {
            if let Some(p) = new.project_id {
                tx.w.project(p)?.ok_or_else(|| Error::not_found(format!("project {p} not found")))?;
            }
            let h = WebhookRecord {
                id: Uuid::now_v7(),
                url,
                events,
                project_id: new.project_id,
                description: new.description,
                active: true,
                secret,
                previous_secret: None,
                previous_until: None,
                created_by: me,
                created_at: tx.now,
                updated_at: tx.now,
            };
            tx.w.put_record(WEBHOOKS, h.id.as_bytes(), &h)?;
            let seq = tx.w.record::<u64>(META, SEQ_KEY)?.unwrap_or(0);
            tx.w.put_record(WEBHOOK_CURSORS, h.id.as_bytes(), &seq)?;
            tx.emit(EventKind::WebhookCreated, h.to_wire(), Audience::Admins)?;
            Ok(CreatedWebhook { webhook: h.to_wire(), secret: h.secret })
        })
        .await
    }

    /// `GET /webhooks`, in creation order, each with its backlog.
    pub async fn list_webhooks(&self, actor: &Actor) -> Result<Vec<Webhook>> {
        actor.require_admin("manage webhooks")?;
        let latest = self.latest_seq();
        self.read(move |r| {
            let mut out = Vec::new();
            for h in r.all_records::<WebhookRecord>(WEBHOOKS)? {
                out.push(with_backlog(r, &h, latest)?);
            }
            Ok(out)
        })
        .await
    }

    /// `GET /webhooks/{id}`, with its backlog.
    pub async fn get_webhook(&self, actor: &Actor, id: Uuid) -> Result<Webhook> {
        actor.require_admin("manage webhooks")?;
        let latest = self.latest_seq();
        self.read(move |r| with_backlog(r, &webhook_required(r, id)?, latest)).await
    }

    /// `PATCH /webhooks/{id}`. Turned off, a webhook considers no event;
    /// turned on again, it receives the events from then on only.
    pub async fn update_webhook(&self, actor: &Actor, id: Uuid, patch: WebhookPatch) -> Result<Webhook> {
        actor.require_admin("manage webhooks")?;
        let url = match patch.url.value() {
            Some(u) => Some(self.checked_url(&u).await?),
            None => None,
        };
        let events = patch.events.value();
        if let Some(e) = &events {
            check_patterns(e)?;
        }
        let description = patch.description.change();
        if let Some(d) = &description {
            check_description(d)?;
        }
        let project = patch.project_id.change();
        let active = patch.active.value();
        self.write_as(actor.request(), move |tx| {
            let old = webhook_required(tx.w, id)?;
            let mut h = old.clone();
            if let Some(u) = url {
                h.url = u;
            }
            if let Some(e) = events {
                h.events = e;
            }
            if let Some(d) = description {
                h.description = d;
            }
            if let Some(p) = project {
                if let Some(p) = p {
                    tx.w.project(p)?.ok_or_else(|| Error::not_found(format!("project {p} not found")))?;
                }
                h.project_id = p;
            }
            if let Some(a) = active {
                h.active = a;
            }
            match (old.active, h.active) {
                (false, true) => {
                    let seq = tx.w.record::<u64>(META, SEQ_KEY)?.unwrap_or(0);
                    tx.w.put_record(WEBHOOK_CURSORS, id.as_bytes(), &seq)?;
                }
                (true, false) => {
                    // The deliveries waiting for a retry end with the rest.
                    tx.w.delete(WEBHOOK_CURSORS, id.as_bytes())?;
                    drop_retries(tx.w, id)?;
                }
                _ => {}
            }
            h.updated_at = tx.now;
            tx.w.put_record(WEBHOOKS, id.as_bytes(), &h)?;
            tx.emit(EventKind::WebhookUpdated, h.to_wire(), Audience::Admins)?;
            Ok(h.to_wire())
        })
        .await
    }

    /// `POST /webhooks/{id}/rotate-secret`: the new secret signs every
    /// attempt from now on, and the previous one too for the policy's
    /// `rotation_grace` (a day), so a receiver can switch without refusing
    /// a delivery.
    pub async fn rotate_webhook_secret(&self, actor: &Actor, id: Uuid) -> Result<CreatedWebhook> {
        actor.require_admin("manage webhooks")?;
        let secret = new_secret()?;
        let grace = jiff::SignedDuration::try_from(self.options().webhooks.policy.rotation_grace)
            .map_err(Error::internal)?;
        self.write_as(actor.request(), move |tx| {
            let mut h = webhook_required(tx.w, id)?;
            h.previous_secret = Some(std::mem::replace(&mut h.secret, secret));
            h.previous_until = Some(tx.now.checked_add(grace).map_err(Error::internal)?);
            h.updated_at = tx.now;
            tx.w.put_record(WEBHOOKS, id.as_bytes(), &h)?;
            tx.emit(EventKind::WebhookUpdated, h.to_wire(), Audience::Admins)?;
            Ok(CreatedWebhook { webhook: h.to_wire(), secret: h.secret })
        })
        .await
    }

    /// `DELETE /webhooks/{id}`, with its delivery state and log.
    pub async fn delete_webhook(&self, actor: &Actor, id: Uuid) -> Result<()> {
        actor.require_admin("manage webhooks")?;
        self.write_as(actor.request(), move |tx| {
            let h = webhook_required(tx.w, id)?;
            for table in [DELIVERIES, DELIVERY_BATCHES] {
                let mut keys = Vec::new();
                tx.w.scan(table, KeyRange::prefix(id.as_bytes()), Direction::Forward, &mut |k, _| {
                    keys.push(k.to_vec());
                    Ok(Scan::Continue)
                })?;
                for k in keys {
                    tx.w.delete(table, &k)?;
                }
            }
            tx.w.delete(WEBHOOK_CURSORS, id.as_bytes())?;
            tx.w.delete(WEBHOOK_STATE, id.as_bytes())?;
            tx.w.delete(WEBHOOKS, id.as_bytes())?;
            tx.emit(EventKind::WebhookDeleted, h.to_wire(), Audience::Admins)
        })
        .await
    }
}
