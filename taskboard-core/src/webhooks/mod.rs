//! Webhooks (docs/rules.md, webhooks): what a webhook is, which events it
//! receives, how a delivery is signed, when it is retried and which
//! addresses may receive one.
//!
//! The board keeps every webhook with its cursor in the event log and its
//! queue of deliveries (`board::webhooks`, `board::deliveries`); a sender
//! (the server's) claims due deliveries through the board, POSTs them and
//! records each outcome there, so the queue survives restarts and several
//! processes sharing one store deliver each event once.

pub mod policy;
pub mod safety;
pub mod signing;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::events::Event;

pub use policy::DeliveryPolicy;
pub use safety::{AddressRule, is_public};
pub use signing::{new_secret, sign};

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
    pub created_by: Uuid,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl WebhookRecord {
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

/// A delivery as stored: the frame it POSTs (copied when queued, since
/// the event log is pruned long before a day of retries ends), where it
/// stands, and the claim of the sender attempting it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DeliveryRecord {
    pub id: Uuid,
    pub webhook_id: Uuid,
    pub seq: u64,
    pub kind: String,
    pub frame: String,
    pub state: DeliveryState,
    pub attempts: u32,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    /// The time of its queue entry while pending: when it is due, or when
    /// the claim on it ends.
    pub due: Option<Timestamp>,
    /// The claim of the sender attempting it now.
    pub claim: Option<Uuid>,
    /// Retries go on until a day (the policy's `give_up_after`) after this.
    pub retry_from: Timestamp,
    pub created_at: Timestamp,
}

impl DeliveryRecord {
    pub fn to_wire(&self) -> Delivery {
        Delivery {
            id: self.id,
            seq: self.seq,
            kind: self.kind.clone(),
            state: self.state,
            attempts: self.attempts,
            last_status: self.last_status,
            last_error: self.last_error.clone(),
            next_attempt_at: if self.state == DeliveryState::Pending { self.due } else { None },
            created_at: self.created_at,
        }
    }
}

/// A delivery claimed by a sender: what to POST, where, signed how.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    pub id: Uuid,
    pub webhook_id: Uuid,
    pub seq: u64,
    pub url: String,
    pub secret: String,
    pub body: String,
    /// The claim, to hand back with the outcome.
    pub claim: Uuid,
}

/// What an attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx answer.
    Delivered { status: u16 },
    /// Any other answer, a redirect included.
    Refused { status: u16 },
    /// No answer: refused address, connection error, timeout.
    Unreachable { error: String },
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
