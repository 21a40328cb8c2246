//! The words of the runs endpoints (see `taskboard_core::api`).

use super::requests::Patch;
use super::run::{EntryKind, Question, RunState, Usage};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// A runner serving agents, as its polls of the event stream show it
/// (`GET /runners`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunnerSeen {
    /// The name the runner gives itself (`name` of its file).
    pub name: String,
    /// The agents it polls for.
    pub agents: Vec<crate::model::MemberRef>,
    /// Its latest poll.
    pub last_seen_at: jiff::Timestamp,
}

/// The query of `GET /runs`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct RunListQuery {
    /// Only the runs of this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<Uuid>,
    /// Only the runs of this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<Uuid>,
    /// Only the runs answering this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Uuid>,
    /// Only the runs in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<RunState>,
    /// 1–1000, default 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000), extend("default" = 50))]
    pub limit: Option<u32>,
    /// Where the page starts: the cursor from the `Link: <…>; rel="next"`
    /// header of the page before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// The body of `POST /tasks/{id}/runs`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewRun {
    /// The agent to run.
    pub agent_id: Uuid,
    /// The lease the run holds the task under, renewed by the runner's
    /// heartbeats (10–86,400 seconds, default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_seconds: Option<u32>,
    /// The runner that will start the agent (1–200 characters): a runner
    /// that starts a run of its own agent names itself, so no other
    /// runner picks the run up. Agents only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

/// The body of `POST /messages/{id}/runs`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewMessageRun {
    /// The agent to answer the message.
    pub agent_id: Uuid,
    /// The runner that will start the agent (1–200 characters), as in
    /// `POST /tasks/{id}/runs`. Agents only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

/// The body of `PATCH /runs/{id}`: what the runner reports.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct RunPatch {
    /// Any state but `starting` and `lost`; a final one ends the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<RunState>,
    /// The runner's name (host and process), 1–200 characters. Set once:
    /// the first runner to name itself has the run, and another name is
    /// 409, so two runners never both start it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Up to 2,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// A question makes the run `awaiting_input` until a person answers;
    /// null withdraws it.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub question: Patch<Question>,
    /// A `land` run that succeeded: the commit now on the base branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_commit: Option<String>,
    /// A `land` run that failed on conflicts: the conflicting files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflicts: Option<Vec<String>>,
}

/// One entry of `POST /runs/{id}/transcript`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewEntry {
    pub kind: EntryKind,
    /// Up to 65,536 bytes.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The body of `POST /runs/{id}/transcript`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct NewEntries {
    /// 1–1,000 entries, appended in order.
    pub entries: Vec<NewEntry>,
}

/// The body of `POST /runs/{id}/answer`: one of the question's options,
/// or text.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct RunAnswer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_id: Option<String>,
    /// Up to 10,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The query of `GET /runs/{id}/transcript`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TranscriptQuery {
    /// Only entries after this `n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    /// 1–1000, default 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000), extend("default" = 200))]
    pub limit: Option<u32>,
}
