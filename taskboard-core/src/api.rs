//! Request types of every endpoint and the endpoint table.
//!
//! The server's router, the typed HTTP client and the OpenAPI document are
//! all built from [`ENDPOINTS`], so they cannot drift apart.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use uuid::Uuid;

use crate::model::*;
use crate::validate::*;

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
pub struct LoginRequest {
    /// Slug or name of the member.
    pub login: String,
    pub password: String,
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
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SetPassword {
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
    /// [ext] Start with automatic assignment switched on.
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
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AddProjectMember {
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

/// [ext] Paging of lists that are otherwise answered whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Page {
    /// At most this many items (1–1000; all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = Page::MAX_LIMIT))]
    pub limit: Option<u32>,
    /// Skip this many items first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = u32::MAX))]
    pub offset: Option<u32>,
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
    /// Applies the page to a whole list.
    pub fn apply<T>(&self, items: Vec<T>) -> Vec<T> {
        let offset = self.offset.unwrap_or(0) as usize;
        let limit = self.limit.map_or(usize::MAX, |l| l as usize);
        items.into_iter().skip(offset).take(limit).collect()
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
    /// [ext] Move the task under another parent, or (null) to the top.
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
    #[serde(flatten)]
    pub page: Page,
}

/// Query of `GET /projects`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProjectListQuery {
    /// [ext] Include archived projects.
    #[serde(default)]
    pub include_archived: bool,
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

/// HTTP method of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

/// What an endpoint takes as its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    None,
    Json,
    Multipart,
}

/// One endpoint: its name (used in logs and the OpenAPI operationId), its
/// method and path (matchit syntax), whether it needs credentials, and its
/// success status.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint {
    pub name: &'static str,
    pub method: Method,
    pub path: &'static str,
    pub auth: bool,
    pub body: Body,
    pub status: u16,
    pub summary: &'static str,
}

macro_rules! endpoints {
    ($($name:ident: $method:ident $path:literal, auth=$auth:literal, body=$body:ident, status=$status:literal, $summary:literal;)+) => {
        /// Names of every endpoint.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(non_camel_case_types)]
        pub enum EndpointName { $($name),+ }

        /// Every endpoint of the API.
        pub const ENDPOINTS: &[(EndpointName, Endpoint)] = &[
            $((EndpointName::$name, Endpoint {
                name: stringify!($name),
                method: Method::$method,
                path: $path,
                auth: $auth,
                body: Body::$body,
                status: $status,
                summary: $summary,
            })),+
        ];
    };
}

endpoints! {
    health: Get "/health", auth=false, body=None, status=200, "Service status and version";
    login: Post "/api/v1/auth/login", auth=false, body=Json, status=200, "Log in with slug or name and password";
    list_members: Get "/api/v1/members", auth=true, body=None, status=200, "List members";
    create_member: Post "/api/v1/members", auth=true, body=Json, status=201, "Create a member (agents get a token)";
    get_me: Get "/api/v1/members/me", auth=true, body=None, status=200, "[ext] The calling member";
    set_my_status: Patch "/api/v1/members/me/status", auth=true, body=None, status=200, "Set the caller's status";
    get_member: Get "/api/v1/members/{member_id}", auth=true, body=None, status=200, "Get a member";
    update_member: Patch "/api/v1/members/{member_id}", auth=true, body=Json, status=200, "Update a member";
    delete_member: Delete "/api/v1/members/{member_id}", auth=true, body=None, status=200, "Deactivate a member (owners only)";
    regenerate_token: Post "/api/v1/members/{member_id}/regenerate-token", auth=true, body=None, status=200, "Issue a new agent token";
    revoke_token: Post "/api/v1/members/{member_id}/revoke-token", auth=true, body=None, status=200, "Revoke an agent token";
    set_password: Put "/api/v1/members/{member_id}/password", auth=true, body=Json, status=200, "[ext] Set a human member's password";
    list_projects: Get "/api/v1/projects", auth=true, body=None, status=200, "List projects";
    create_project: Post "/api/v1/projects", auth=true, body=Json, status=201, "Create a project with its main chat";
    get_project: Get "/api/v1/projects/{project_id}", auth=true, body=None, status=200, "Get a project";
    update_project: Patch "/api/v1/projects/{project_id}", auth=true, body=Json, status=200, "Update a project";
    delete_project: Delete "/api/v1/projects/{project_id}", auth=true, body=None, status=200, "Delete a project and everything in it (owners only)";
    list_project_members: Get "/api/v1/projects/{project_id}/members", auth=true, body=None, status=200, "List project members";
    add_project_member: Post "/api/v1/projects/{project_id}/members", auth=true, body=Json, status=200, "Add a member to a project";
    remove_project_member: Delete "/api/v1/projects/{project_id}/members/{member_id}", auth=true, body=None, status=200, "Remove a member from a project";
    list_files: Get "/api/v1/projects/{project_id}/files", auth=true, body=None, status=200, "List project files";
    upload_file: Post "/api/v1/projects/{project_id}/files", auth=true, body=Multipart, status=201, "Upload a project file";
    get_file: Get "/api/v1/projects/{project_id}/files/{file_id}", auth=true, body=None, status=200, "Get a project file's record";
    update_file: Patch "/api/v1/projects/{project_id}/files/{file_id}", auth=true, body=Json, status=200, "Update a project file's description";
    delete_file: Delete "/api/v1/projects/{project_id}/files/{file_id}", auth=true, body=None, status=200, "Delete a project file";
    download_file: Get "/api/v1/projects/{project_id}/files/{file_id}/download", auth=true, body=None, status=200, "Download a project file";
    list_tasks: Get "/api/v1/tasks", auth=true, body=None, status=200, "List tasks";
    create_task: Post "/api/v1/tasks", auth=true, body=Json, status=201, "Create a task";
    get_task: Get "/api/v1/tasks/{task_id}", auth=true, body=None, status=200, "Get a task";
    update_task: Patch "/api/v1/tasks/{task_id}", auth=true, body=Json, status=200, "Update a task";
    delete_task: Delete "/api/v1/tasks/{task_id}", auth=true, body=None, status=200, "Delete a task";
    take_task: Post "/api/v1/tasks/{task_id}/take", auth=true, body=None, status=200, "Take a task";
    reject_task: Post "/api/v1/tasks/{task_id}/reject", auth=true, body=Json, status=200, "Reject a task back to the backlog";
    assign_task: Post "/api/v1/tasks/{task_id}/assign", auth=true, body=Json, status=200, "Assign a task";
    watch_task: Post "/api/v1/tasks/{task_id}/watch", auth=true, body=None, status=200, "Watch a task";
    unwatch_task: Delete "/api/v1/tasks/{task_id}/watch", auth=true, body=None, status=200, "Stop watching a task";
    list_links: Get "/api/v1/tasks/{task_id}/links", auth=true, body=None, status=200, "[ext] Links of a task, both directions";
    create_link: Post "/api/v1/tasks/{task_id}/links", auth=true, body=Json, status=201, "Link a task to another";
    delete_link: Delete "/api/v1/tasks/{task_id}/links/{link_id}", auth=true, body=None, status=200, "[ext] Delete a link";
    add_task_label: Post "/api/v1/tasks/{task_id}/labels/{label_id}", auth=true, body=None, status=200, "Put a label on a task";
    remove_task_label: Delete "/api/v1/tasks/{task_id}/labels/{label_id}", auth=true, body=None, status=200, "Take a label off a task";
    list_actions: Get "/api/v1/tasks/{task_id}/actions", auth=true, body=None, status=200, "[ext] Audit log of a task";
    list_steps: Get "/api/v1/tasks/{task_id}/steps", auth=true, body=None, status=200, "List steps of a task";
    create_step: Post "/api/v1/tasks/{task_id}/steps", auth=true, body=Json, status=201, "Add a step";
    update_step: Patch "/api/v1/tasks/{task_id}/steps/{step_id}", auth=true, body=Json, status=200, "Update a step";
    delete_step: Delete "/api/v1/tasks/{task_id}/steps/{step_id}", auth=true, body=None, status=200, "Delete a step";
    list_messages: Get "/api/v1/messages", auth=true, body=None, status=200, "The last messages of a chat, task or thread";
    post_message: Post "/api/v1/messages", auth=true, body=Json, status=201, "Post a message or comment";
    list_replies: Get "/api/v1/messages/{message_id}/replies", auth=true, body=None, status=200, "Replies to a message";
    upload: Post "/api/v1/upload", auth=true, body=Multipart, status=200, "Upload a file to attach to a message";
    download_attachment: Get "/api/v1/attachments/{attachment_id}/download", auth=true, body=None, status=200, "Download an attachment";
    list_labels: Get "/api/v1/labels", auth=true, body=None, status=200, "List labels";
    create_label: Post "/api/v1/labels", auth=true, body=Json, status=201, "Create a label";
    update_label: Patch "/api/v1/labels/{label_id}", auth=true, body=Json, status=200, "Update a label";
    delete_label: Delete "/api/v1/labels/{label_id}", auth=true, body=None, status=200, "Delete a label";
    backup: Post "/api/v1/admin/backup", auth=true, body=Json, status=200, "[ext] Consistent backup of the board as an archive (owners only)";
    websocket: Get "/api/v1/ws", auth=true, body=None, status=101, "Event stream (WebSocket)";
}

impl EndpointName {
    /// The endpoint's entry in [`ENDPOINTS`].
    pub fn endpoint(self) -> &'static Endpoint {
        &ENDPOINTS.iter().find(|(n, _)| *n == self).expect("every name is in the table").1
    }
}
