//! The request types of the endpoints: bodies and queries.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use uuid::Uuid;

use crate::model::{
    AgentConfig, LinkType, MemberStatus, MemberType, Priority, ProjectStatus, Role, TaskStatus, TaskType,
    UploadedFile,
};
use crate::validate::{Color, Email, LabelName, LongText, Name, Password, Reason, Slug, Title};

/// A field of a PATCH body: absent means unchanged, `null`
/// clears a nullable field and leaves a non-nullable one unchanged.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Patch<T> {
    #[default]
    Absent,
    Null,
    Value(T),
}

impl<T> Patch<T> {
    pub fn is_absent(&self) -> bool {
        matches!(self, Patch::Absent)
    }
    /// The new value of a non-nullable field, if any.
    pub fn value(self) -> Option<T> {
        match self {
            Patch::Value(v) => Some(v),
            _ => None,
        }
    }
    /// The change of a nullable field: `None` when unchanged, `Some(None)`
    /// when cleared.
    pub fn change(self) -> Option<Option<T>> {
        match self {
            Patch::Absent => None,
            Patch::Null => Some(None),
            Patch::Value(v) => Some(Some(v)),
        }
    }
}

impl<T> From<Option<T>> for Patch<T> {
    fn from(v: Option<T>) -> Patch<T> {
        v.map_or(Patch::Null, Patch::Value)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Patch<T>, D::Error> {
        Option::<T>::deserialize(d).map(Patch::from)
    }
}

impl<T: Serialize> Serialize for Patch<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Patch::Value(v) => s.serialize_some(v),
            _ => s.serialize_none(),
        }
    }
}

impl<T: JsonSchema> JsonSchema for Patch<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Option::<T>::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Option::<T>::json_schema(generator)
    }
    fn inline_schema() -> bool {
        true
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewMember {
    pub name: Name,
    pub slug: Slug,
    /// `human` or `agent`: bridges are not created through the API.
    #[serde(rename = "type", default = "default_member_type")]
    #[schemars(schema_with = "creatable_member_type")]
    pub kind: MemberType,
    #[serde(default = "default_role")]
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_config: Option<AgentConfig>,
}

/// The member types creation accepts, as a schema.
fn creatable_member_type(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let creatable: Vec<&str> =
        MemberType::ALL.iter().filter(|t| t.is_creatable()).map(|t| t.as_str()).collect();
    schemars::json_schema!({"type": "string", "enum": creatable, "default": "agent"})
}

fn default_member_type() -> MemberType {
    MemberType::Agent
}
fn default_role() -> Role {
    Role::Member
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct MemberPatch {
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub name: Patch<Name>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub slug: Patch<Slug>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub role: Patch<Role>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub status: Patch<MemberStatus>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub avatar_url: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub agent_config: Patch<AgentConfig>,
    /// Admins and owners only; `null` clears it.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub email: Patch<Email>,
    /// `human` or `agent`; admins and owners only, and only while the
    /// member has done nothing (no run, task, message, access token or
    /// single sign-on account). The old type's credential is dropped.
    #[serde(rename = "type", default, skip_serializing_if = "Patch::is_absent")]
    pub kind: Patch<MemberType>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewPassword {
    pub password: Password,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewProject {
    pub name: Name,
    pub slug: Slug,
    #[serde(default)]
    pub description: Option<LongText>,
    #[serde(default)]
    pub repo_urls: Vec<String>,
    /// Start with automatic assignment switched on.
    #[serde(default)]
    pub auto_assign: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProjectPatch {
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub name: Patch<Name>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub slug: Patch<Slug>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub description: Patch<LongText>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub repo_urls: Patch<Vec<String>>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub status: Patch<ProjectStatus>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub auto_assign: Patch<bool>,
    /// The branch work lands on; null: the repository's default. Admins
    /// and owners only, as the landing settings below.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub base_branch: Patch<String>,
    /// The command a landing runs before it pushes; null: none.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub check_command: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub on_conflict: Patch<super::landing::OnConflict>,
    /// Reviewer agents, by slug or id.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub reviewers: Patch<Vec<String>>,
    /// 0–10.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub required_approvals: Patch<u32>,
    /// 1–20.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub max_rounds: Patch<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewProjectMember {
    pub member_id: Uuid,
}

/// Filters of `GET /tasks`, combined with AND.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TaskFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_id: Option<Uuid>,
    /// A label name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// A task key (exact, any case) or a part of the title (any case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer_id: Option<Uuid>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<TaskType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<Uuid>,
    #[serde(flatten)]
    pub page: Page,
}

/// Paging of a list: optional `limit` (1–1000), `offset`, and `cursor`,
/// the opaque position given by the `Link` header of the page before
/// (docs/rules.md, lists).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Page {
    /// At most this many items (1–1000; all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = Page::MAX_LIMIT))]
    pub limit: Option<u32>,
    /// Skip this many items first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = u32::MAX))]
    pub offset: Option<u32>,
    /// Where the page starts: the cursor from the `Link: <…>; rel="next"`
    /// header of the page before. Opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl Page {
    /// The largest `limit`.
    pub const MAX_LIMIT: u32 = 1000;

    /// Checks the bounds (limit 1–1000).
    pub fn check(&self) -> crate::Result<()> {
        if let Some(l) = self.limit
            && !(1..=Page::MAX_LIMIT).contains(&l)
        {
            return Err(crate::Error::invalid("limit", format!("must be 1-{}, got {l}", Page::MAX_LIMIT)));
        }
        Ok(())
    }
    /// Checks the bounds and applies the page to a whole list.
    pub fn page<T>(&self, items: Vec<T>) -> crate::Result<Vec<T>> {
        self.check()?;
        Ok(self.apply(items))
    }

    /// Applies the page to a whole list.
    pub fn apply<T>(&self, items: Vec<T>) -> Vec<T> {
        let offset = self.offset.unwrap_or(0) as usize;
        let limit = self.limit.map_or(usize::MAX, |l| l as usize);
        items.into_iter().skip(offset).take(limit).collect()
    }

    /// Whether the whole list is asked for: no limit, no cursor.
    pub fn is_whole(&self) -> bool {
        self.limit.is_none() && self.cursor.is_none()
    }

    /// Where a scan starts: after the sort key in the cursor, if any.
    pub fn after(&self, kind: super::CursorKind) -> crate::Result<Option<Vec<u8>>> {
        self.cursor.as_deref().map(|c| super::decode_cursor(kind, c)).transpose()
    }

    /// Applies the page to a whole list in its order, where `key` is the
    /// sort key of an item (unique, and increasing along the list): the
    /// items after the cursor, then offset and limit, with the cursor of
    /// the next page when the page is full.
    pub fn window<T>(
        &self,
        kind: super::CursorKind,
        items: Vec<T>,
        key: impl Fn(&T) -> Vec<u8>,
    ) -> crate::Result<super::Paged<T>> {
        self.check()?;
        let after = self.after(kind)?;
        let offset = self.offset.unwrap_or(0) as usize;
        let limit = self.limit.map_or(usize::MAX, |l| l as usize);
        let page: Vec<T> = items
            .into_iter()
            .filter(|t| after.as_ref().is_none_or(|a| key(t) > *a))
            .skip(offset)
            .take(limit)
            .collect();
        let next = match page.last() {
            Some(last) if page.len() == limit => Some(super::encode_cursor(kind, &key(last))),
            _ => None,
        };
        Ok(super::Paged { items: page, next })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewTask {
    pub title: Title,
    #[serde(default)]
    pub description: Option<LongText>,
    #[serde(rename = "type", default = "default_task_type")]
    pub kind: TaskType,
    #[serde(default = "default_status")]
    pub status: TaskStatus,
    #[serde(default = "default_priority")]
    pub priority: Priority,
    #[serde(default)]
    pub labels: Vec<LabelName>,
    #[serde(default)]
    pub parent_id: Option<Uuid>,
    #[serde(default)]
    pub assignee_id: Option<Uuid>,
    #[serde(default)]
    pub reviewer_id: Option<Uuid>,
    #[serde(default)]
    pub depends_on: Vec<Uuid>,
}

impl NewTask {
    /// A task with this title and every other field at its default.
    pub fn titled(title: Title) -> NewTask {
        NewTask {
            title,
            description: None,
            kind: TaskType::Task,
            status: TaskStatus::Backlog,
            priority: Priority::Medium,
            labels: Vec::new(),
            parent_id: None,
            assignee_id: None,
            reviewer_id: None,
            depends_on: Vec::new(),
        }
    }
}

fn default_task_type() -> TaskType {
    TaskType::Task
}
fn default_status() -> TaskStatus {
    TaskStatus::Backlog
}
fn default_priority() -> Priority {
    Priority::Medium
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TaskPatch {
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub title: Patch<Title>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub description: Patch<LongText>,
    #[serde(rename = "type", default, skip_serializing_if = "Patch::is_absent")]
    pub kind: Patch<TaskType>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub status: Patch<TaskStatus>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub priority: Patch<Priority>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub labels: Patch<Vec<LabelName>>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub assignee_id: Patch<Uuid>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub reviewer_id: Patch<Uuid>,
    /// Move the task under another parent, or (null) to the top.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub parent_id: Patch<Uuid>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub position: Patch<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RejectRequest {
    pub reason: Reason,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AssignRequest {
    pub assignee_id: Uuid,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewLink {
    pub target_id: Uuid,
    pub link_type: LinkType,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewStep {
    pub title: Title,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct StepPatch {
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub title: Patch<Title>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub done: Patch<bool>,
    /// Moves the step to this place in the checklist: 1 is the first,
    /// past the end is the last; the steps are numbered again from 1.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub position: Patch<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewLabel {
    pub name: LabelName,
    #[serde(default)]
    pub color: Color,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LabelPatch {
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub name: Patch<LabelName>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub color: Patch<Color>,
}

/// Filters of `GET /messages`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct MessageFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<Uuid>,
    /// 1–200, default 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MessageFilter::MAX_LIMIT), extend("default" = 50))]
    pub limit: Option<u32>,
    /// Skip this many of the newest messages first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = u32::MAX))]
    pub offset: Option<u32>,
    /// Only messages older than this position: the cursor from the `Link:
    /// <…>; rel="next"` header of the page before. Opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl MessageFilter {
    /// The largest `limit` of a page of messages.
    pub const MAX_LIMIT: u32 = 200;
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct NewMessage {
    #[serde(default)]
    pub chat_id: Option<Uuid>,
    #[serde(default)]
    pub task_id: Option<Uuid>,
    #[serde(default)]
    pub parent_id: Option<Uuid>,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub thinking: Option<LongText>,
    /// Member ids.
    #[serde(default)]
    pub mentions: Vec<Uuid>,
    #[serde(default)]
    pub voice_url: Option<String>,
    #[serde(default)]
    pub attachments: Vec<UploadedFile>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct FilePatch {
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub description: Patch<LongText>,
}

/// Query of `GET /members`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct MemberListQuery {
    #[serde(default)]
    pub include_inactive: bool,
    /// Only the member with this slug (none or one, found by the slug's
    /// index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<Slug>,
    #[serde(flatten)]
    pub page: Page,
}

/// Query of `GET /projects`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProjectListQuery {
    /// Include archived projects.
    #[serde(default)]
    pub include_archived: bool,
    /// Only the project with this slug (none or one, found by the slug's
    /// index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<Slug>,
    #[serde(flatten)]
    pub page: Page,
}

/// Query of `GET /projects/{id}/files`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct FileListQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<String>,
    #[serde(flatten)]
    pub page: Page,
}

/// Query of `POST /tasks`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProjectIdQuery {
    pub project_id: Uuid,
}

/// Query of `PATCH /members/me/status`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StatusQuery {
    pub status: MemberStatus,
}

/// Query of the event stream: resume after this event.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct StreamQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
}
