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
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::events::Event;

pub use policy::{DeliveryPolicy, MAX_PENDING};
pub use safety::{AddressRule, is_public};
pub use signing::{new_secret, sign, signatures};
pub(crate) use state::{BatchRecord, Claim, DeliveryRecord, Retry, WebhookState, delivery_seq};
pub use state::{DeliveryBatch, DeliveryItem, Outcome, delivery_id};

/// How webhooks of a board behave.
#[derive(Debug, Clone, Default)]
pub struct WebhookOptions {
    /// Targets on loopback, private, link-local and unspecified addresses
    /// are allowed (`--webhook-allow-private`).
    pub allow_private: bool,
    pub policy: DeliveryPolicy,
}

/// A webhook as the API shows it; its secret is shown only by creation
/// and rotation ([`CreatedWebhook`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Webhook {
    pub id: Uuid,
    pub url: String,
    /// Event types; a trailing `*` matches a prefix (`task.*`), `*` alone
    /// every event.
    pub events: Vec<String>,
    /// Only events of this project, when set.
    pub project_id: Option<Uuid>,
    pub description: Option<String>,
    pub active: bool,
    /// The member whose view of the event stream the webhook receives.
    pub created_by: Uuid,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Events after the webhook's cursor (the last one whose first
    /// attempt is done, or that it does not take) plus its deliveries
    /// waiting for a retry: the most it has still to send. Shown by
    /// `GET /webhooks` and `GET /webhooks/{id}`; 0 while inactive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<u64>,
    /// How its deliveries fare; shown by `GET /webhooks` and `GET
    /// /webhooks/{id}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<WebhookHealth>,
}

/// How a webhook's deliveries fare: its newest attempted delivery, and
/// the attempted ones in a row, newest first, that did not get through
/// (0 once one is delivered; counted over its newest 100 deliveries).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookHealth {
    /// The state of the newest attempted delivery; none before any.
    pub last_state: Option<DeliveryState>,
    /// The HTTP status its last attempt got back, when one came.
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    /// When that delivery's event happened.
    pub last_at: Option<Timestamp>,
    pub consecutive_failures: u32,
}

/// A webhook with its signing secret: the answer of creation and of
/// secret rotation, the only ones that show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub webhook: Webhook,
    /// `whsec_` and the base64 of 32 random bytes.
    pub secret: String,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    Pending,
    Delivered,
    Failed,
}

/// One event on its way to one webhook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Delivery {
    /// Also the `webhook-id` header of every attempt.
    pub id: Uuid,
    pub seq: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub state: DeliveryState,
    pub attempts: u32,
    /// The HTTP status of the last attempt, when one came back.
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    /// When a pending delivery is next attempted.
    pub next_attempt_at: Option<Timestamp>,
    pub created_at: Timestamp,
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

crate::wire::wire!(Webhook, CreatedWebhook, Delivery);

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
