//! The words of the imports endpoints (see `taskboard_core::api`).

use crate::model::{LinkType, Priority, TaskStatus, TaskType};
use crate::validate::{LabelName, LongText, Slug, Title};
use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Most records in one import request; a reader sends larger imports in
/// batches of this size or less.
pub const MAX_IMPORT_RECORDS: usize = 1000;

/// `POST /projects/{id}/import`: records of one source, applied together.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ImportRequest {
    /// The tracker the records come from (`beads`, `backlog`, `taskmaster`,
    /// `github`, `jira`, `linear`, or any slug an embedder chooses); with a
    /// record's `id` it forms the task's `external_ref`.
    pub source: Slug,
    /// Compute the plan and change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Create people named as assignees or comment authors who match no
    /// member, as inactive human members.
    #[serde(default)]
    pub create_members: bool,
    pub records: Vec<ImportRecord>,
}

/// One task as its tracker had it, already mapped to the board's values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImportRecord {
    /// Its id in the source (`bd-12`, `TASK-3`, `42`): 1–200 characters.
    pub id: String,
    pub title: Title,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<LongText>,
    #[serde(rename = "type", default = "task_type")]
    pub kind: TaskType,
    #[serde(default = "backlog")]
    pub status: TaskStatus,
    #[serde(default = "medium")]
    pub priority: Priority,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<LabelName>,
    /// A member's slug, email or name as the source wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// The source id of the parent task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<ImportLink>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<ImportStep>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<ImportComment>,
    /// When the task was created in the source; now when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    /// When the source closed it; kept in the audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<Timestamp>,
}

fn task_type() -> TaskType {
    TaskType::Task
}
fn backlog() -> TaskStatus {
    TaskStatus::Backlog
}
fn medium() -> Priority {
    Priority::Medium
}

impl ImportRecord {
    /// A record with this id and title and every other field at its default.
    pub fn new(id: impl Into<String>, title: Title) -> ImportRecord {
        ImportRecord {
            id: id.into(),
            title,
            description: None,
            kind: TaskType::Task,
            status: TaskStatus::Backlog,
            priority: Priority::Medium,
            labels: Vec::new(),
            assignee: None,
            parent: None,
            links: Vec::new(),
            steps: Vec::new(),
            comments: Vec::new(),
            created_at: None,
            closed_at: None,
        }
    }
}

/// A link from the record's task to the task of another record (by its
/// source id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImportLink {
    pub link_type: LinkType,
    pub target: String,
}

/// A checklist step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImportStep {
    pub title: Title,
    #[serde(default)]
    pub done: bool,
}

/// A comment with its author (slug, email or name) and time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImportComment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    pub content: LongText,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
}

/// What an import does to one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportAction {
    Create,
    Update,
    Unchanged,
    Skip,
}

impl ImportAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ImportAction::Create => "create",
            ImportAction::Update => "update",
            ImportAction::Unchanged => "unchanged",
            ImportAction::Skip => "skip",
        }
    }
}

/// The plan of one record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImportItem {
    /// The record's source id.
    pub id: String,
    pub action: ImportAction,
    /// The task's key (for a dry run's creations, the key it would get).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<Uuid>,
    /// The fields an update changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    /// Why a record is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Source ids the record refers to (parent, links) that are neither
    /// in this request nor imported before; a later batch may hold them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<String>,
    /// What was kept aside (an assignee who matches no member, a parent
    /// that would make a cycle).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The answer of an import: what it did, or with `dry_run` what it would do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImportPlan {
    pub dry_run: bool,
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub skipped: u64,
    /// Labels that did not exist and are created.
    pub labels_created: Vec<String>,
    /// Slugs of the inactive members created for people of the source.
    pub members_created: Vec<String>,
    /// People of the source who match no member and were not created
    /// (without `create_members`): their tasks are left unassigned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub people_unmatched: Vec<String>,
    pub items: Vec<ImportItem>,
}

impl ImportPlan {
    /// Adds the counts and lists of a later batch.
    pub fn absorb(&mut self, other: ImportPlan) {
        self.created += other.created;
        self.updated += other.updated;
        self.unchanged += other.unchanged;
        self.skipped += other.skipped;
        self.labels_created.extend(other.labels_created);
        self.members_created.extend(other.members_created);
        self.people_unmatched.extend(other.people_unmatched);
        self.items.extend(other.items);
    }
}
