//! The resources of the board as they appear on the wire: field
//! names and enum spellings are exactly those of docs/api.md.

use std::collections::BTreeMap;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = crate::validate::InvalidValue;
            fn from_str(s: &str) -> Result<$name, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(crate::validate::InvalidValue(format!(
                        "unknown value {s:?}, expected one of: {}",
                        [$($text),+].join(", ")
                    ))),
                }
            }
        }
    };
}

wire_enum!(
    /// Kind of member. Creation accepts only human or agent.
    MemberType { Human = "human", Agent = "agent", Bridge = "bridge" }
);
wire_enum!(
    /// Board-wide role of a member.
    Role { Owner = "owner", Admin = "admin", Member = "member" }
);
wire_enum!(
    /// What an access token may do (docs/rules.md, access tokens): each
    /// endpoint declares the one scope it needs.
    Scope {
        Read = "read",
        TasksWrite = "tasks:write",
        MessagesWrite = "messages:write",
        FilesWrite = "files:write",
        RunsWrite = "runs:write",
        Admin = "admin",
    }
);
wire_enum!(MemberStatus { Online = "online", Offline = "offline", Busy = "busy" });
wire_enum!(
    /// Which messages an agent is told about.
    Listen { All = "all", Mentions = "mentions" }
);
wire_enum!(ProjectStatus { Active = "active", Archived = "archived" });
wire_enum!(
    /// Role of a member inside one project.
    ProjectRole { Owner = "owner", Member = "member" }
);
wire_enum!(TaskType { Task = "task", Bug = "bug", Epic = "epic" });
wire_enum!(TaskStatus {
    Backlog = "backlog",
    Todo = "todo",
    InProgress = "in_progress",
    Review = "review",
    Done = "done",
});
wire_enum!(Priority { Low = "low", Medium = "medium", High = "high", Urgent = "urgent" });
wire_enum!(LinkType { Blocks = "blocks", DependsOn = "depends_on", RelatesTo = "relates_to" });
wire_enum!(AuthorType { Human = "human", Agent = "agent", System = "system" });

impl MemberType {
    /// Whether `POST /members` creates members of this type (humans and
    /// agents; bridges come from elsewhere).
    pub fn is_creatable(self) -> bool {
        self != MemberType::Bridge
    }
}

impl Role {
    /// Admins and owners manage members and credentials (docs/rules.md, members).
    pub fn is_admin(self) -> bool {
        matches!(self, Role::Owner | Role::Admin)
    }

    fn rank(self) -> u8 {
        match self {
            Role::Member => 0,
            Role::Admin => 1,
            Role::Owner => 2,
        }
    }

    /// This role, lowered to `cap` when `cap` ranks below it: what a
    /// credential capped at `cap` acts with (docs/decisions.md, 20.a).
    pub fn capped(self, cap: Option<Role>) -> Role {
        match cap {
            Some(cap) if cap.rank() < self.rank() => cap,
            _ => self,
        }
    }
}

impl TaskStatus {
    /// Counted as open work by auto-assignment (docs/rules.md, tasks).
    pub fn is_open(self) -> bool {
        matches!(self, TaskStatus::Todo | TaskStatus::InProgress | TaskStatus::Review)
    }
    pub fn index(self) -> u8 {
        self as u8
    }
}

/// Settings of an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentConfig {
    #[serde(default)]
    pub capabilities: Vec<String>,
    #[serde(default)]
    pub labels: Vec<String>,
    /// Chat messages the agent is told about: when it is mentioned, or all.
    #[serde(default = "listen_mentions")]
    pub chat_listen: Listen,
    /// Task comments the agent is told about: when it is mentioned, or all.
    #[serde(default = "listen_mentions")]
    pub task_listen: Listen,
    #[serde(default)]
    pub prompt: Option<crate::validate::LongText>,
    #[serde(default)]
    pub model: Option<String>,
}

fn listen_mentions() -> Listen {
    Listen::Mentions
}

impl Default for AgentConfig {
    fn default() -> AgentConfig {
        AgentConfig {
            capabilities: Vec::new(),
            labels: Vec::new(),
            chat_listen: Listen::Mentions,
            task_listen: Listen::Mentions,
            prompt: None,
            model: None,
        }
    }
}

/// A person, an agent or a bridge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Member {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    #[serde(rename = "type")]
    pub kind: MemberType,
    pub role: Role,
    pub status: MemberStatus,
    pub is_active: bool,
    pub avatar_url: Option<String>,
    pub last_seen_at: Timestamp,
    pub agent_config: AgentConfig,
    /// The email single sign-on matches at a member's first sign-in;
    /// set by an admin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// `{id, slug, name}` of a member, used wherever a member is referenced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemberRef {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
}

/// Response of member creation; `token` only for agents, shown once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CreatedMember {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    #[serde(rename = "type")]
    pub kind: MemberType,
    pub role: Role,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent_config: Option<AgentConfig>,
}

/// A project with its task counter and main chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Project {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub description: Option<String>,
    pub repo_urls: Vec<String>,
    pub status: ProjectStatus,
    pub task_counter: u64,
    pub chat_id: Option<Uuid>,
    pub auto_assign: bool,
    /// How the project's work is reviewed and landed.
    #[serde(flatten)]
    pub landing: super::landing::LandingSettings,
}

/// `{id, slug, name}` of the project a task belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProjectRef {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
}

/// Item of `GET /projects/{id}/members`; `role` is the project role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProjectMember {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    #[serde(rename = "type")]
    pub kind: MemberType,
    pub role: ProjectRole,
}

/// `{id, key, title}` of a parent task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ParentRef {
    pub id: Uuid,
    pub key: String,
    pub title: String,
}

/// `{id, key, title, status}` of a subtask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubtaskRef {
    pub id: Uuid,
    pub key: String,
    pub title: String,
    pub status: TaskStatus,
}

/// A task with everything a board shows about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Task {
    pub id: Uuid,
    pub project: ProjectRef,
    pub number: u64,
    pub key: String,
    pub title: String,
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub kind: TaskType,
    pub status: TaskStatus,
    pub priority: Priority,
    pub labels: Vec<String>,
    pub assignee: Option<MemberRef>,
    pub reviewer: Option<MemberRef>,
    pub parent: Option<ParentRef>,
    pub subtasks: Vec<SubtaskRef>,
    pub steps: Vec<Step>,
    pub watcher_ids: Vec<Uuid>,
    pub depends_on: Vec<Uuid>,
    pub position: f64,
    /// Who holds the task under a lease and until when; null without one.
    pub lease: Option<Lease>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Where an imported task came from; absent for tasks made here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_ref: Option<ExternalRef>,
    /// The agent's branch against its base.
    #[serde(default)]
    pub changes: Option<super::landing::ChangesSummary>,
    #[serde(default)]
    pub review: super::landing::TaskReview,
    /// The commit that landed the work.
    #[serde(default)]
    pub merge_commit: Option<String>,
}

/// The origin of an imported task: the tracker it came from and its id
/// there (`{"source": "beads", "id": "bd-12"}`). Importing again finds
/// the task by it, within its project.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct ExternalRef {
    pub source: String,
    pub id: String,
}

impl std::fmt::Display for ExternalRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.source, self.id)
    }
}

/// A time-limited hold on a task: the holder keeps it by heartbeats, and
/// the board gives it back when `expires_at` passes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Lease {
    /// The lease's fencing token: a request about the task that carries
    /// `Taskboard-Lease` with any other id is refused with 409.
    pub id: Uuid,
    pub holder: MemberRef,
    pub expires_at: Timestamp,
}

/// A checklist step of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    pub id: Uuid,
    pub title: String,
    pub done: bool,
    pub position: i64,
}

/// A link between two tasks, seen from its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskLink {
    pub id: Uuid,
    pub source_id: Uuid,
    pub target_id: Uuid,
    pub link_type: LinkType,
    pub target_key: String,
    pub source_key: String,
    pub target_title: String,
    pub source_title: String,
}

/// `{id, filename, mime_type, size}` of a file attached to a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Attachment {
    pub id: Uuid,
    pub filename: String,
    pub mime_type: String,
    pub size: u64,
}

/// A chat message or a task comment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    pub id: Uuid,
    pub chat_id: Option<Uuid>,
    pub task_id: Option<Uuid>,
    pub parent_id: Option<Uuid>,
    pub author_type: AuthorType,
    pub author_id: Option<Uuid>,
    pub author: Option<MemberRef>,
    pub actor: Option<MemberRef>,
    pub content: String,
    pub thinking: Option<String>,
    pub mentions: Vec<MemberRef>,
    pub voice_url: Option<String>,
    pub attachments: Vec<Attachment>,
    pub created_at: Timestamp,
    /// On a comment brought in by an import: its author's name as the
    /// source wrote it (`owner@example.com`, `Carol Danvers`). The
    /// comment is the importer's (`author`), never that person's own words
    /// on this board, whatever member the name resembles.
    #[serde(default)]
    pub imported_author: Option<String>,
}

/// Descriptor of an uploaded file, returned by `POST /upload` and passed
/// back in a message's `attachments`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UploadedFile {
    pub file_id: Uuid,
    pub filename: String,
    pub mime_type: String,
    pub size: u64,
    pub storage_name: String,
}

/// A file kept in a project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProjectFile {
    pub id: Uuid,
    pub filename: String,
    pub description: Option<String>,
    pub mime_type: String,
    pub size: u64,
    pub uploaded_by: MemberRef,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A global label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Label {
    pub id: Uuid,
    pub name: String,
    pub color: String,
}

/// One changed field in the audit log: its value before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    #[schemars(schema_with = "any_value")]
    pub from: serde_json::Value,
    #[schemars(schema_with = "any_value")]
    pub to: serde_json::Value,
}

/// The schema of a field that holds any JSON value: `{}` rather than
/// `true`, which many client generators cannot read.
fn any_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"description": "Any JSON value"})
}

/// What an audit-log entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    Created,
    Updated,
    Take,
    Assign,
    Reject,
    Release,
    LeaseExpired,
    /// Created or changed by an import; `changes.source` names where from.
    Imported,
}

impl AuditAction {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::Created => "created",
            AuditAction::Updated => "updated",
            AuditAction::Take => "take",
            AuditAction::Assign => "assign",
            AuditAction::Reject => "reject",
            AuditAction::Release => "release",
            AuditAction::LeaseExpired => "lease_expired",
            AuditAction::Imported => "imported",
        }
    }
}

impl std::fmt::Display for AuditAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An audit-log record of a task (docs/rules.md, tasks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskAction {
    pub id: Uuid,
    pub task_id: Uuid,
    pub actor: MemberRef,
    pub action: AuditAction,
    pub changes: BTreeMap<String, Change>,
    pub created_at: Timestamp,
}

/// `{"ok": true}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Ok {
    pub ok: bool,
}

impl Ok {
    pub const OK: Ok = Ok { ok: true };
}

/// Response of reject: `{"ok": true, "reason": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Rejected {
    pub ok: bool,
    pub reason: String,
}

/// Response of watch and unwatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Watchers {
    pub ok: bool,
    pub watcher_ids: Vec<Uuid>,
}

/// Response of token regeneration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenResponse {
    pub token: String,
}

/// Response of `PATCH /members/me/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatusResponse {
    pub status: MemberStatus,
}

/// Response of `GET /health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    pub status: String,
    pub version: String,
}

/// Builds a task key from a project slug and a number (docs/rules.md, tasks).
///
/// ```
/// assert_eq!(taskboard_wire::model::task_key("web-app", 12), "WEB-APP-12");
/// ```
pub fn task_key(project_slug: &str, number: u64) -> String {
    format!("{}-{number}", project_slug.to_uppercase())
}

/// Splits a task key into the project slug it names and the number:
/// `WEB-APP-12` → (`web-app`, 12). Case-insensitive.
pub fn parse_task_key(key: &str) -> Option<(String, u64)> {
    let (prefix, number) = key.rsplit_once('-')?;
    let number: u64 = number.parse().ok()?;
    if prefix.is_empty() {
        return None;
    }
    Some((prefix.to_lowercase(), number))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_keys_round_trip() {
        assert_eq!(task_key("web-app", 12), "WEB-APP-12");
        assert_eq!(parse_task_key("WEB-APP-12"), Some(("web-app".into(), 12)));
        assert_eq!(parse_task_key("web-7"), Some(("web".into(), 7)));
        assert_eq!(parse_task_key("web"), None);
        assert_eq!(parse_task_key("-3"), None);
    }

    #[test]
    fn enums_use_the_specification_spelling() {
        assert_eq!(serde_json::to_string(&TaskStatus::InProgress).unwrap(), "\"in_progress\"");
        assert_eq!(serde_json::to_string(&LinkType::DependsOn).unwrap(), "\"depends_on\"");
        assert_eq!("review".parse::<TaskStatus>().unwrap(), TaskStatus::Review);
        assert!("doing".parse::<TaskStatus>().is_err());
    }
}
