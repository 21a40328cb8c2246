//! The words of the webhooks endpoints (see `taskboard_core::api`).

use super::requests::Patch;
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
