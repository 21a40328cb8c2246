//! The words of review and land that a task and a project show (their
//! summary of changes, review state and landing settings). The rest of
//! review and land is `crate::review`, which builds on these.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Rounds of agent reviews asking for changes before the task goes to a
/// person, unless the project says otherwise.
pub const DEFAULT_MAX_ROUNDS: u32 = 3;

/// What a landing that failed met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnConflict {
    /// A run of the task's agent brings its branch up to date.
    #[default]
    Agent,
    /// The task goes back to the person who asked for the landing.
    Person,
}

impl std::str::FromStr for OnConflict {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<OnConflict, String> {
        match s {
            "agent" => Ok(OnConflict::Agent),
            "person" => Ok(OnConflict::Person),
            _ => Err(format!("unknown on_conflict {s:?}, expected agent or person")),
        }
    }
}

/// A change set in one line: what a task or run shows wherever runs are
/// shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangesSummary {
    pub branch: String,
    pub head_commit: String,
    pub files: u64,
    pub additions: u64,
    pub deletions: u64,
}

/// Where a task's review stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewState {
    /// No changes to review.
    #[default]
    None,
    /// Changes wait for reviews.
    Pending,
    ChangesRequested,
    Approved,
}

/// A task's review: its state, the round (1 for the first run's changes,
/// one more for each round sent back) and the approvals of the current
/// head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct TaskReview {
    pub state: ReviewState,
    pub round: u32,
    pub approvals: u32,
}

impl TaskReview {
    pub fn is_none(&self) -> bool {
        *self == TaskReview::default()
    }
}

/// How a project's work is reviewed and landed. Set by admins and owners
/// (`PATCH /projects/{id}`): a runner runs `check_command` and pushes to
/// `base_branch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LandingSettings {
    /// Where work lands; null: the repository's default branch.
    pub base_branch: Option<String>,
    /// Run by the landing runner in the merged tree before it pushes
    /// (`sh -c`); a non-zero exit fails the landing. Null: none.
    pub check_command: Option<String>,
    /// What a failed landing does: `agent` (default) starts a run of the
    /// task's agent to bring its branch up to date; `person` leaves it to
    /// the person who asked.
    pub on_conflict: OnConflict,
    /// Reviewer agents: each reviews every successful run's changes.
    pub reviewers: Vec<Uuid>,
    /// Approvals a landing needs (default 0).
    pub required_approvals: u32,
    /// Rounds reviewer agents may send back before the task goes to its
    /// creator (default 3).
    pub max_rounds: u32,
}

impl Default for LandingSettings {
    fn default() -> LandingSettings {
        LandingSettings {
            base_branch: None,
            check_command: None,
            on_conflict: OnConflict::Agent,
            reviewers: Vec::new(),
            required_approvals: 0,
            max_rounds: DEFAULT_MAX_ROUNDS,
        }
    }
}

/// What a run is for. A `work` run does the task (and, after a review
/// asked for changes or a landing failed, brings the branch up to date);
/// a `review` run is a reviewer agent reviewing the task's changes; a
/// `land` run brings the branch onto the base; a `discard` run deletes
/// the branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunPurpose {
    #[default]
    Work,
    Review,
    Land,
    Discard,
}

impl RunPurpose {
    pub fn is_work(&self) -> bool {
        *self == RunPurpose::Work
    }
    pub fn as_str(self) -> &'static str {
        match self {
            RunPurpose::Work => "work",
            RunPurpose::Review => "review",
            RunPurpose::Land => "land",
            RunPurpose::Discard => "discard",
        }
    }
}

/// How a landing brings the branch onto the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MergeMethod {
    /// A merge commit with both parents.
    #[default]
    Merge,
    /// One new commit on the base with the branch's whole change.
    Squash,
    /// The branch's commits replayed on the base.
    Rebase,
}

impl std::str::FromStr for MergeMethod {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<MergeMethod, String> {
        match s {
            "merge" => Ok(MergeMethod::Merge),
            "squash" => Ok(MergeMethod::Squash),
            "rebase" => Ok(MergeMethod::Rebase),
            _ => Err(format!("unknown merge method {s:?}, expected merge, squash or rebase")),
        }
    }
}
