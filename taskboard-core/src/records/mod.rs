//! Stored records and their indexes.
//!
//! A record holds ids where the wire form holds references; the wire form
//! is assembled on read (`render_*`), so a renamed member, project or label
//! shows its new name everywhere at once. Every function that writes a
//! record also writes its index entries, in the caller's transaction.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::model::{
    AgentConfig, AuditAction, AuthorType, Change, ExternalRef, Label, LinkType, Member, MemberRef,
    MemberStatus, MemberType, Priority, Project, ProjectRef, ProjectStatus, Role, Step, TaskStatus, TaskType,
    UploadedFile,
};

pub(crate) mod event_log;
mod read;
pub mod ready;
mod render;
pub(crate) mod titles;
mod write;

pub use read::Records;
pub use render::Render;
pub use write::RecordWrites;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemberRecord {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub kind: MemberType,
    pub role: Role,
    pub status: MemberStatus,
    pub is_active: bool,
    pub avatar_url: Option<String>,
    pub last_seen_at: Timestamp,
    pub agent_config: AgentConfig,
    pub created_at: Timestamp,
    /// Matched at a first single sign-on (`board::oidc`); indexed by
    /// its lower-cased form in `MEMBER_EMAIL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

impl MemberRecord {
    pub fn to_wire(&self) -> Member {
        Member {
            id: self.id,
            name: self.name.clone(),
            slug: self.slug.clone(),
            kind: self.kind,
            role: self.role,
            status: self.status,
            is_active: self.is_active,
            avatar_url: self.avatar_url.clone(),
            last_seen_at: self.last_seen_at,
            agent_config: self.agent_config.clone(),
            email: self.email.clone(),
        }
    }
    pub fn to_ref(&self) -> MemberRef {
        MemberRef { id: self.id, slug: self.slug.clone(), name: self.name.clone() }
    }
    pub fn is_agent(&self) -> bool {
        self.kind == MemberType::Agent
    }
}

/// Credentials of a member: only hashes are kept.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Secret {
    pub password_hash: Option<String>,
    /// Hex SHA-256 of the agent token.
    pub token_hash: Option<String>,
    /// Raised by every password change. A login JWT carries the version
    /// it was issued under and is refused once it differs, so a password
    /// change ends every token issued before it, even in the same second.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub credential_version: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProjectRecord {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub description: Option<String>,
    pub repo_urls: Vec<String>,
    pub status: ProjectStatus,
    pub task_counter: u64,
    pub chat_id: Uuid,
    pub auto_assign: bool,
    pub created_by: Uuid,
    pub created_at: Timestamp,
    #[serde(default)]
    pub landing: crate::review::LandingSettings,
}

impl ProjectRecord {
    pub fn to_wire(&self) -> Project {
        Project {
            id: self.id,
            name: self.name.clone(),
            slug: self.slug.clone(),
            description: self.description.clone(),
            repo_urls: self.repo_urls.clone(),
            status: self.status,
            task_counter: self.task_counter,
            chat_id: Some(self.chat_id),
            auto_assign: self.auto_assign,
            landing: self.landing.clone(),
        }
    }
    pub fn to_ref(&self) -> ProjectRef {
        ProjectRef { id: self.id, slug: self.slug.clone(), name: self.name.clone() }
    }
}

/// The main chat of a project.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatRecord {
    pub id: Uuid,
    pub project_id: Uuid,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: Uuid,
    pub project_id: Uuid,
    pub number: u64,
    pub title: String,
    pub description: Option<String>,
    pub kind: TaskType,
    pub status: TaskStatus,
    pub priority: Priority,
    pub label_ids: Vec<Uuid>,
    pub assignee_id: Option<Uuid>,
    pub reviewer_id: Option<Uuid>,
    pub parent_id: Option<Uuid>,
    pub watcher_ids: Vec<Uuid>,
    pub position: f64,
    pub created_by: Uuid,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Absent in records written before leases existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<LeaseRecord>,
    /// Origin of an imported task, indexed in `EXTERNAL_REFS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_ref: Option<ExternalRef>,
    /// The number of title folds before the title was indexed, which
    /// names the entries of the title index that hold the task
    /// (`records::titles`); set by `put_task`. Absent in records written
    /// before the index kept its entries in posting lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_fold: Option<u64>,
    /// The agent's branch, its review and its landing.
    #[serde(default, skip_serializing_if = "crate::review::TaskWork::is_empty")]
    pub work: crate::review::TaskWork,
}

/// A lease on a task; indexed in `LEASES` by its expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRecord {
    /// The fencing token a holder presents in `Taskboard-Lease`: new at
    /// every take or claim, kept by heartbeats. Leases written before
    /// fencing read as the nil id.
    #[serde(default)]
    pub id: Uuid,
    pub holder: Uuid,
    pub expires_at: Timestamp,
    /// The duration last asked for, which a heartbeat renews by default.
    pub seconds: u32,
}

impl TaskRecord {
    /// A change of assignee, or a status other than `in_progress`, ends
    /// the lease.
    pub fn end_lease_if_moved(&mut self) {
        if let Some(l) = self.lease
            && (self.assignee_id != Some(l.holder) || self.status != TaskStatus::InProgress)
        {
            self.lease = None;
        }
    }

    pub fn add_watcher(&mut self, member: Uuid) {
        if !self.watcher_ids.contains(&member) {
            self.watcher_ids.push(member);
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepRecord {
    pub id: Uuid,
    pub task_id: Uuid,
    pub title: String,
    pub done: bool,
    pub position: i64,
}

impl StepRecord {
    pub fn to_wire(&self) -> Step {
        Step { id: self.id, title: self.title.clone(), done: self.done, position: self.position }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkRecord {
    pub id: Uuid,
    pub source_id: Uuid,
    pub target_id: Uuid,
    pub link_type: LinkType,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionRecord {
    pub id: Uuid,
    pub task_id: Uuid,
    pub actor_id: Uuid,
    pub action: AuditAction,
    pub changes: BTreeMap<String, Change>,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessageRecord {
    pub id: Uuid,
    pub chat_id: Option<Uuid>,
    pub task_id: Option<Uuid>,
    pub parent_id: Option<Uuid>,
    pub author_type: AuthorType,
    pub author_id: Option<Uuid>,
    pub actor_id: Option<Uuid>,
    pub content: String,
    pub thinking: Option<String>,
    pub mention_ids: Vec<Uuid>,
    pub voice_url: Option<String>,
    pub attachment_ids: Vec<Uuid>,
    pub created_at: Timestamp,
    /// The seq of the `message.new` event that names this message, so
    /// that the event can take a copy when the message is deleted
    /// (`records::event_log::detach_message`). Builds before it kept an entry in
    /// `MESSAGE_EVENTS` instead, which is still read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_seq: Option<u64>,
    /// On a comment an import brought in: its author's name as the
    /// source wrote it; the comment itself is the importer's
    /// (`board::import`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_author: Option<String>,
}

impl MessageRecord {
    /// A new message of `author_type` written at `at`, in no chat or task
    /// yet, with no parent, author, mention, voice or file.
    pub(crate) fn plain(at: Timestamp, author_type: AuthorType, content: String) -> MessageRecord {
        MessageRecord {
            id: Uuid::now_v7(),
            chat_id: None,
            task_id: None,
            parent_id: None,
            author_type,
            author_id: None,
            actor_id: None,
            content,
            thinking: None,
            mention_ids: Vec::new(),
            voice_url: None,
            attachment_ids: Vec::new(),
            created_at: at,
            event_seq: None,
            imported_author: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UploadRecord {
    pub file_id: Uuid,
    pub filename: String,
    pub mime_type: String,
    pub size: u64,
    pub storage_name: String,
    pub uploaded_by: Uuid,
    pub created_at: Timestamp,
    pub message_id: Option<Uuid>,
}

impl UploadRecord {
    pub fn to_wire(&self) -> UploadedFile {
        UploadedFile {
            file_id: self.file_id,
            filename: self.filename.clone(),
            mime_type: self.mime_type.clone(),
            size: self.size,
            storage_name: self.storage_name.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProjectFileRecord {
    pub id: Uuid,
    pub project_id: Uuid,
    pub filename: String,
    pub description: Option<String>,
    pub mime_type: String,
    pub size: u64,
    pub storage_name: String,
    pub uploaded_by: Uuid,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabelRecord {
    pub id: Uuid,
    pub name: String,
    pub color: String,
}

impl LabelRecord {
    pub fn to_wire(&self) -> Label {
        Label { id: self.id, name: self.name.clone(), color: self.color.clone() }
    }
}

pub(crate) fn id_key(id: Uuid) -> Vec<u8> {
    id.as_bytes().to_vec()
}
