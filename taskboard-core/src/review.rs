//! Review and land (docs/rules.md, review and land): the words the API
//! speaks of it are the wire's (`taskboard_wire::review`, re-exported
//! here); what the store keeps of reviews and of an agent's work on a
//! task is here. The rules are in `board::changes`, `board::reviews` and
//! `board::landing`.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use taskboard_wire::review::*;

/// A line comment as the board keeps it: with the line's text when it
/// was made, so a later round can tell that the line changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewCommentRecord {
    pub path: String,
    pub line: u32,
    pub side: Side,
    pub body: String,
    /// The commented line as the diff showed it.
    pub text: String,
}

/// A review as the board keeps it (table `REVIEWS`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRecord {
    pub id: Uuid,
    pub task_id: Uuid,
    pub author_id: Uuid,
    pub verdict: Verdict,
    pub body: String,
    pub comments: Vec<ReviewCommentRecord>,
    /// The head of the changes the review was made on.
    pub head_commit: String,
    pub round: u32,
    pub created_at: Timestamp,
}

/// Where an agent's work on a task stands, as the task record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaskWork {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<ChangesSummary>,
    #[serde(default, skip_serializing_if = "TaskReview::is_none")]
    pub review: TaskReview,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_commit: Option<String>,
    /// The agent whose work the changes are: the agent of the run that
    /// recorded them, which a round sent back goes to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<Uuid>,
    /// Rounds that reviewer agents sent back, against `max_rounds`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub agent_rounds: u32,
    /// When a person last changed the task (`PATCH`): agents whose runs
    /// of it failed may claim it again after that (`board::retries`). The
    /// end of a run, a release or a cancel is not such a change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_at: Option<Timestamp>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TaskWork {
    pub fn is_empty(&self) -> bool {
        *self == TaskWork::default()
    }
}
