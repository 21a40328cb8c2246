//! Runs (docs/rules.md, runs): one attempt of one agent at one task, with
//! its state, its question to a person and its transcript, as the API
//! shows them and as the store keeps them. The rules are in
//! `board::runs`.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use crate::wire::run::{
    EntryKind, Question, QuestionOption, Run, RunState, RunTask, RunWork, TranscriptEntry, Usage,
};

/// Default cap of a run's transcript: 10 MB of entry text and data.
pub const DEFAULT_TRANSCRIPT_CAP: u64 = 10 * 1000 * 1000;
/// Default lease of a run's task, renewed by the runner's heartbeats.
pub const DEFAULT_RUN_LEASE_SECONDS: u32 = 300;
/// Largest text of one transcript entry.
pub const MAX_ENTRY_TEXT: usize = 64 * 1024;
/// Most entries in one append.
pub const MAX_ENTRIES_PER_APPEND: usize = 1000;
/// Characters of output a failed run's comment quotes.
pub const FAILURE_TAIL_CHARS: usize = 2000;

/// A run as stored (`RUNS`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: Uuid,
    pub task_id: Option<Uuid>,
    /// The task's key and title when the run was made, shown once the
    /// task is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<RunTask>,
    pub project_id: Option<Uuid>,
    pub message_id: Option<Uuid>,
    pub agent_id: Uuid,
    /// Who asked for the run (the agent itself for work it claimed).
    pub requested_by: Uuid,
    pub runner: Option<String>,
    pub state: RunState,
    pub created_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    pub exit_code: Option<i32>,
    pub stop_reason: Option<String>,
    pub branch: Option<String>,
    pub commit: Option<String>,
    pub usage: Option<Usage>,
    pub question: Option<Question>,
    pub transcript_count: u64,
    /// Bytes of the entries kept, against the cap.
    pub transcript_bytes: u64,
    /// Bytes of the entries dropped over the cap, and the entry saying so.
    #[serde(default)]
    pub dropped_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_entry: Option<u64>,
    /// What the run is for, and where it stands in the task's review.
    #[serde(default, skip_serializing_if = "RunWork::is_plain")]
    pub work: RunWork,
}

impl RunRecord {
    /// A new run of `agent_id`, `starting`, at nothing yet: the caller
    /// sets its task or message.
    pub fn starting(agent_id: Uuid, requested_by: Uuid, runner: Option<String>, now: Timestamp) -> RunRecord {
        RunRecord {
            id: Uuid::now_v7(),
            task_id: None,
            task: None,
            project_id: None,
            message_id: None,
            agent_id,
            requested_by,
            runner,
            state: RunState::Starting,
            created_at: now,
            started_at: None,
            ended_at: None,
            exit_code: None,
            stop_reason: None,
            branch: None,
            commit: None,
            usage: None,
            question: None,
            transcript_count: 0,
            transcript_bytes: 0,
            dropped_bytes: 0,
            dropped_entry: None,
            work: RunWork::default(),
        }
    }
}
