//! The words of the work endpoints (see `taskboard_core::api`).

use crate::validate::{LabelName, Reason};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The query of `GET /tasks/ready`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ReadyQuery {
    /// Only this project; without it, the active projects the caller is a
    /// member of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<Uuid>,
    /// Only tasks carrying this label (a name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// 1–1000, default 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000), extend("default" = 50))]
    pub limit: Option<u32>,
}

/// The body of `POST /tasks/claim`, every field optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ClaimRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<Uuid>,
    /// Label names of which the task must carry one; by default the
    /// caller's `agent_config.labels` when it has any, else any task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<LabelName>>,
    /// Hold the task under a lease of this many seconds (10–86,400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_seconds: Option<u32>,
}

/// `lease_seconds` of take (query or body) and heartbeat (body).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LeaseRequest {
    /// 10–86,400 seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_seconds: Option<u32>,
}

/// The body of `POST /tasks/{id}/release`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ReleaseRequest {
    /// Said in the system message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
}
