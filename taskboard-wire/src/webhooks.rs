//! The words of the webhooks endpoints (see `taskboard_core::api`).

use super::requests::Patch;
use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Body of `POST /webhooks`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewWebhook {
    /// An http or https URL on a public address.
    pub url: String,
    /// Event types; a trailing `*` matches a prefix (`task.*`). Every
    /// event when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<String>>,
    /// Only the events of this project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Body of `PATCH /webhooks/{id}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct WebhookPatch {
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub url: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub events: Patch<Vec<String>>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub project_id: Patch<Uuid>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub description: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub active: Patch<bool>,
}

/// Query of `GET /webhooks/{id}/deliveries`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct DeliveryQuery {
    /// At most this many deliveries (1–1000, 50 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
    /// Skip this many of the newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = u32::MAX))]
    pub offset: Option<u32>,
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

crate::wire!(Webhook, CreatedWebhook, Delivery);
