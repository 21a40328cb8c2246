//! A run as the API shows it (docs/rules.md, runs): its state, its
//! question to a person, its transcript's entries and what it is for.
//! The stored form and the limits are `crate::runs`; the rules are in
//! `board::runs`.

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::landing::{ChangesSummary, MergeMethod, RunPurpose};
use super::model::MemberRef;

/// The state of a run. The last five are final: a run in one of them
/// never changes again. `awaiting_input`: the agent asked a question
/// and waits for a person's answer; `lost`: its runner stopped renewing
/// the task's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Starting,
    Running,
    AwaitingInput,
    Succeeded,
    Failed,
    Cancelled,
    TimedOut,
    Lost,
}

impl RunState {
    pub const ALL: &'static [RunState] = &[
        RunState::Starting,
        RunState::Running,
        RunState::AwaitingInput,
        RunState::Succeeded,
        RunState::Failed,
        RunState::Cancelled,
        RunState::TimedOut,
        RunState::Lost,
    ];

    pub fn is_final(self) -> bool {
        !matches!(self, RunState::Starting | RunState::Running | RunState::AwaitingInput)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Starting => "starting",
            RunState::Running => "running",
            RunState::AwaitingInput => "awaiting_input",
            RunState::Succeeded => "succeeded",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
            RunState::TimedOut => "timed_out",
            RunState::Lost => "lost",
        }
    }
}

impl std::fmt::Display for RunState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RunState {
    type Err = crate::validate::InvalidValue;
    fn from_str(s: &str) -> Result<RunState, Self::Err> {
        RunState::ALL.iter().copied().find(|r| r.as_str() == s).ok_or_else(|| {
            let names: Vec<_> = RunState::ALL.iter().map(|r| r.as_str()).collect();
            crate::validate::InvalidValue(format!(
                "unknown value {s:?}, expected one of: {}",
                names.join(", ")
            ))
        })
    }
}

/// `{id, key, title}` of the task of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunTask {
    pub id: Uuid,
    pub key: String,
    pub title: String,
}

/// Tokens an agent reported using.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// One answer a person may pick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionOption {
    /// 1–100 characters, unique within the question.
    pub id: String,
    pub label: String,
}

/// What an agent asks a person (a permission, a choice).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Question {
    /// 1–100 characters, chosen by the agent.
    pub id: String,
    pub text: String,
    /// The answers to pick from; without options, a person answers in
    /// text.
    #[serde(default)]
    pub options: Vec<QuestionOption>,
}

/// A run as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Run {
    pub id: Uuid,
    /// The task, as it was when the run started if it has been deleted.
    pub task: Option<RunTask>,
    /// The project of the task.
    pub project_id: Option<Uuid>,
    /// The chat message or comment a run answers, for runs that answer
    /// one.
    pub message_id: Option<Uuid>,
    pub agent: MemberRef,
    /// The runner that started the agent, as it names itself (host and
    /// process).
    pub runner: Option<String>,
    pub state: RunState,
    pub created_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    pub exit_code: Option<i32>,
    /// Why the run ended, in words.
    pub stop_reason: Option<String>,
    pub branch: Option<String>,
    pub commit: Option<String>,
    pub usage: Option<Usage>,
    pub question: Option<Question>,
    /// Entries in the transcript.
    pub transcript_count: u64,
    /// What the run is for (`work` unless it reviews, lands or discards),
    /// its round, and its change.
    #[serde(flatten)]
    pub work: RunWork,
}

/// What a transcript entry holds: `output` is what the agent printed,
/// `state` a change of the run's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Output,
    Message,
    Thought,
    ToolCall,
    Plan,
    Question,
    Answer,
    State,
}

/// One entry of a run's transcript; `n` counts from 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TranscriptEntry {
    pub n: u64,
    pub at: Timestamp,
    pub kind: EntryKind,
    pub text: String,
    pub data: Option<Value>,
}

impl TranscriptEntry {
    /// What the entry counts against the transcript's cap.
    pub fn size(&self) -> u64 {
        (self.text.len() + self.data.as_ref().map_or(0, |d| d.to_string().len())) as u64
    }
}

/// What a run is for beyond doing its task: the round it works on, the
/// review it answers, the landing it performs (docs/rules.md, review and
/// land). Kept on the record and shown on the run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RunWork {
    #[serde(default)]
    pub purpose: RunPurpose,
    /// The task's review round the run belongs to (0 before any).
    #[serde(default)]
    pub round: u32,
    /// The review whose requested changes a `work` run makes, or the
    /// landing (a `land` run) whose failure it repairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repairs_run_id: Option<Uuid>,
    /// A `land` run's method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_method: Option<MergeMethod>,
    /// A `land` run's result: the commit now on the base branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_commit: Option<String>,
    /// A failed `land` run's conflicting files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// The run's own change, once recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<ChangesSummary>,
}

impl RunWork {
    pub fn is_plain(&self) -> bool {
        *self == RunWork::default()
    }
}

crate::wire!(Run, TranscriptEntry);
