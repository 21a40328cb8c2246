//! Webhooks (docs/rules.md, webhooks): what a webhook is, which events it
//! receives, how a delivery is signed, when it is retried and which
//! addresses may receive one.
//!
//! The board keeps every webhook with its cursor in the event log and a
//! small delivery state (`board::webhooks`, `board::deliveries`); a
//! sender (the server's) claims a webhook through the board, POSTs the
//! events after its cursor straight from the log, first attempts in seq
//! order, with the retries due beside them (a retry holds back nothing),
//! and records its progress there once per batch, so delivery survives
//! restarts and several processes sharing one store deliver each event
//! once.

pub mod policy;
pub mod safety;
pub mod signing;
mod state;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::events::Event;

pub use policy::{DeliveryPolicy, MAX_PENDING};
pub use safety::{AddressRule, is_public};
pub use signing::{new_secret, sign, signatures};
pub(crate) use state::{BatchRecord, Claim, DeliveryRecord, Retry, WebhookState, delivery_seq};
pub use state::{DeliveryBatch, DeliveryItem, Outcome, delivery_id};
pub use taskboard_wire::{CreatedWebhook, Delivery, DeliveryState, Webhook, WebhookHealth};

/// How webhooks of a board behave.
#[derive(Debug, Clone, Default)]
pub struct WebhookOptions {
    /// Targets on loopback, private, link-local and unspecified addresses
    /// are allowed (`--webhook-allow-private`).
    pub allow_private: bool,
    pub policy: DeliveryPolicy,
}

/// A webhook as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WebhookRecord {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub project_id: Option<Uuid>,
    pub description: Option<String>,
    pub active: bool,
    pub secret: String,
    /// The secret before the last rotation, which also signs attempts
    /// until `previous_until` (the grace period of a rotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_until: Option<Timestamp>,
    pub created_by: Uuid,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl WebhookRecord {
    /// The secrets that sign an attempt at `now`: the current one, and
    /// the previous one during the grace period after a rotation.
    pub fn secrets(&self, now: Timestamp) -> Vec<String> {
        let mut out = vec![self.secret.clone()];
        if let (Some(old), Some(until)) = (&self.previous_secret, self.previous_until)
            && now < until
        {
            out.push(old.clone());
        }
        out
    }

    pub fn to_wire(&self) -> Webhook {
        Webhook {
            id: self.id,
            url: self.url.clone(),
            events: self.events.clone(),
            project_id: self.project_id,
            description: self.description.clone(),
            active: self.active,
            created_by: self.created_by,
            created_at: self.created_at,
            updated_at: self.updated_at,
            backlog: None,
            health: None,
        }
    }

    /// Whether the webhook's event patterns take `kind`.
    pub fn wants(&self, kind: &str) -> bool {
        self.events.iter().any(|p| pattern_matches(p, kind))
    }
}

/// An event type pattern: exact, or a prefix before a trailing `*`.
pub fn pattern_matches(pattern: &str, kind: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => kind.starts_with(prefix),
        None => pattern == kind,
    }
}

/// The project an event belongs to, as far as its data names one: the
/// `project_id` or `project` it carries, the project itself for
/// `project.*` events, or the project of the task or chat it names.
pub(crate) fn event_project(
    r: &(impl crate::records::Records + ?Sized),
    event: &Event,
) -> crate::Result<Option<Uuid>> {
    let data = event.data();
    let id = |name: &str| data.get(name).and_then(|v| v.as_str()).and_then(|s| s.parse::<Uuid>().ok());
    if let Some(p) = id("project_id") {
        return Ok(Some(p));
    }
    if let Some(p) = data.get("project").and_then(|p| p.get("id")).and_then(|v| v.as_str()) {
        return Ok(p.parse().ok());
    }
    if event.kind.about_project() {
        return Ok(id("id"));
    }
    for name in ["task_id", "source_id"] {
        if let Some(t) = id(name) {
            return Ok(r.task(t)?.map(|t| t.project_id));
        }
    }
    if let Some(c) = id("chat_id") {
        return Ok(r.chat(c)?.map(|c| c.project_id));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_exactly_or_by_prefix() {
        assert!(pattern_matches("*", "task.created"));
        assert!(pattern_matches("task.*", "task.created"));
        assert!(!pattern_matches("task.*", "message.new"));
        assert!(pattern_matches("message.new", "message.new"));
        assert!(!pattern_matches("message.new", "message.newer"));
    }
}
