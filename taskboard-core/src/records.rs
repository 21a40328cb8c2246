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

use crate::error::{Error, Result};
use crate::model::*;
use crate::storage::codec::{Key, decode, encode, uuid_suffix, uuid_value};
use crate::storage::tables::*;
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, WriteTxn};

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
}

impl TaskRecord {
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
    pub action: String,
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

fn id_key(id: Uuid) -> Vec<u8> {
    id.as_bytes().to_vec()
}

/// Typed reads over any transaction.
pub trait Records: ReadTxn {
    fn record<T: serde::de::DeserializeOwned>(&self, table: Table, key: &[u8]) -> Result<Option<T>> {
        self.get(table, key)?.map(|b| decode(&b)).transpose()
    }

    /// Values of the records whose ids an index prefix scan yields (ids
    /// are the last 16 bytes of each index key), in index order.
    fn ids_with_prefix(&self, table: Table, prefix: &[u8], direction: Direction) -> Result<Vec<Uuid>> {
        let mut ids = Vec::new();
        self.scan(table, KeyRange::prefix(prefix), direction, &mut |k, _| {
            ids.push(uuid_suffix(k)?);
            Ok(Scan::Continue)
        })?;
        Ok(ids)
    }

    /// Values (uuids) stored under a prefix, in key order.
    fn id_values_with_prefix(&self, table: Table, prefix: &[u8]) -> Result<Vec<Uuid>> {
        let mut ids = Vec::new();
        self.scan(table, KeyRange::prefix(prefix), Direction::Forward, &mut |_, v| {
            ids.push(uuid_value(v)?);
            Ok(Scan::Continue)
        })?;
        Ok(ids)
    }

    fn all_records<T: serde::de::DeserializeOwned>(&self, table: Table) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.scan(table, KeyRange::all(), Direction::Forward, &mut |_, v| {
            out.push(decode(v)?);
            Ok(Scan::Continue)
        })?;
        Ok(out)
    }

    fn member(&self, id: Uuid) -> Result<Option<MemberRecord>> {
        self.record(MEMBERS, &id_key(id))
    }
    fn member_required(&self, id: Uuid) -> Result<MemberRecord> {
        self.member(id)?.ok_or_else(|| Error::not_found(format!("member {id} not found")))
    }
    /// An active member, or 404: the rule for assignees, reviewers and
    /// project members.
    fn active_member(&self, id: Uuid) -> Result<MemberRecord> {
        match self.member(id)? {
            Some(m) if m.is_active => Ok(m),
            _ => Err(Error::not_found(format!("member {id} not found"))),
        }
    }
    fn member_by_slug(&self, slug: &str) -> Result<Option<MemberRecord>> {
        match self.get(MEMBER_SLUG, slug.as_bytes())? {
            Some(id) => self.member(uuid_value(&id)?),
            None => Ok(None),
        }
    }
    fn members_by_name(&self, name: &str) -> Result<Vec<MemberRecord>> {
        let prefix = Key::new().str0(&name.to_lowercase());
        let ids = self.ids_with_prefix(MEMBER_NAME, &prefix, Direction::Forward)?;
        let mut out = Vec::new();
        for id in ids {
            if let Some(m) = self.member(id)? {
                out.push(m);
            }
        }
        Ok(out)
    }
    fn member_ref(&self, id: Uuid) -> Result<MemberRef> {
        Ok(match self.member(id)? {
            Some(m) => m.to_ref(),
            None => MemberRef { id, slug: String::new(), name: String::new() },
        })
    }
    fn secret(&self, member: Uuid) -> Result<Secret> {
        Ok(self.record(MEMBER_SECRET, &id_key(member))?.unwrap_or_default())
    }

    fn project(&self, id: Uuid) -> Result<Option<ProjectRecord>> {
        self.record(PROJECTS, &id_key(id))
    }
    fn project_required(&self, id: Uuid) -> Result<ProjectRecord> {
        self.project(id)?.ok_or_else(|| Error::not_found(format!("project {id} not found")))
    }
    fn project_by_slug(&self, slug: &str) -> Result<Option<ProjectRecord>> {
        match self.get(PROJECT_SLUG, slug.as_bytes())? {
            Some(id) => self.project(uuid_value(&id)?),
            None => Ok(None),
        }
    }
    fn project_role(&self, project: Uuid, member: Uuid) -> Result<Option<ProjectRole>> {
        self.record(PROJECT_MEMBERS, &Key::new().uuid(project).uuid(member))
    }
    fn project_member_ids(&self, project: Uuid) -> Result<Vec<Uuid>> {
        self.ids_with_prefix(PROJECT_MEMBERS, &id_key(project), Direction::Forward)
    }
    fn chat(&self, id: Uuid) -> Result<Option<ChatRecord>> {
        self.record(CHATS, &id_key(id))
    }

    fn task(&self, id: Uuid) -> Result<Option<TaskRecord>> {
        self.record(TASKS, &id_key(id))
    }
    fn task_required(&self, id: Uuid) -> Result<TaskRecord> {
        self.task(id)?.ok_or_else(|| Error::not_found(format!("task {id} not found")))
    }
    fn task_by_number(&self, project: Uuid, number: u64) -> Result<Option<TaskRecord>> {
        match self.get(TASK_NUMBER, &Key::new().uuid(project).u64(number))? {
            Some(id) => self.task(uuid_value(&id)?),
            None => Ok(None),
        }
    }
    /// A task by key (`WEB-12`, any case).
    fn task_by_key(&self, key: &str) -> Result<Option<TaskRecord>> {
        let Some((slug, number)) = parse_task_key(key) else { return Ok(None) };
        match self.project_by_slug(&slug)? {
            Some(p) => self.task_by_number(p.id, number),
            None => Ok(None),
        }
    }
    fn tasks_by_ids(&self, ids: &[Uuid]) -> Result<Vec<TaskRecord>> {
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(t) = self.task(id)? {
                out.push(t);
            }
        }
        Ok(out)
    }
    /// The largest task position in a project, if it has tasks.
    fn max_position(&self, project: Uuid) -> Result<Option<f64>> {
        let mut max = None;
        self.scan(PROJECT_TASKS, KeyRange::prefix(&id_key(project)), Direction::Reverse, &mut |k, _| {
            max = Some(crate::storage::codec::f64_at(k, 16)?);
            Ok(Scan::Stop)
        })?;
        Ok(max)
    }
    fn steps(&self, task: Uuid) -> Result<Vec<StepRecord>> {
        let mut steps: Vec<StepRecord> = Vec::new();
        self.scan(STEPS, KeyRange::prefix(&id_key(task)), Direction::Forward, &mut |_, v| {
            steps.push(decode(v)?);
            Ok(Scan::Continue)
        })?;
        steps.sort_by_key(|s| (s.position, s.id));
        Ok(steps)
    }
    fn step(&self, task: Uuid, step: Uuid) -> Result<Option<StepRecord>> {
        self.record(STEPS, &Key::new().uuid(task).uuid(step))
    }
    fn link(&self, id: Uuid) -> Result<Option<LinkRecord>> {
        self.record(LINKS, &id_key(id))
    }
    fn links_from(&self, task: Uuid) -> Result<Vec<LinkRecord>> {
        let ids = self.ids_with_prefix(LINKS_FROM, &id_key(task), Direction::Forward)?;
        ids.into_iter().filter_map(|id| self.link(id).transpose()).collect()
    }
    fn links_to(&self, task: Uuid) -> Result<Vec<LinkRecord>> {
        let ids = self.ids_with_prefix(LINKS_TO, &id_key(task), Direction::Forward)?;
        ids.into_iter().filter_map(|id| self.link(id).transpose()).collect()
    }
    /// What a task depends on (DECISIONS 5.8): targets of its depends_on
    /// links and sources of blocks links aimed at it.
    fn depends_on(&self, task: Uuid) -> Result<Vec<Uuid>> {
        let mut out: Vec<Uuid> = Vec::new();
        for l in self.links_from(task)? {
            if l.link_type == LinkType::DependsOn && !out.contains(&l.target_id) {
                out.push(l.target_id);
            }
        }
        for l in self.links_to(task)? {
            if l.link_type == LinkType::Blocks && !out.contains(&l.source_id) {
                out.push(l.source_id);
            }
        }
        Ok(out)
    }
    fn subtask_ids(&self, parent: Uuid) -> Result<Vec<Uuid>> {
        self.ids_with_prefix(SUBTASKS, &id_key(parent), Direction::Forward)
    }

    fn label(&self, id: Uuid) -> Result<Option<LabelRecord>> {
        self.record(LABELS, &id_key(id))
    }
    fn label_by_name(&self, name: &str) -> Result<Option<LabelRecord>> {
        match self.get(LABEL_NAME, name.to_lowercase().as_bytes())? {
            Some(id) => self.label(uuid_value(&id)?),
            None => Ok(None),
        }
    }

    fn message(&self, id: Uuid) -> Result<Option<MessageRecord>> {
        self.record(MESSAGES, &id_key(id))
    }
    fn upload(&self, id: Uuid) -> Result<Option<UploadRecord>> {
        self.record(UPLOADS, &id_key(id))
    }
    fn project_file(&self, id: Uuid) -> Result<Option<ProjectFileRecord>> {
        self.record(PROJECT_FILES, &id_key(id))
    }
    fn project_file_by_name(&self, project: Uuid, filename: &str) -> Result<Option<ProjectFileRecord>> {
        match self.get(PROJECT_FILE_NAME, &Key::new().uuid(project).str(filename))? {
            Some(id) => self.project_file(uuid_value(&id)?),
            None => Ok(None),
        }
    }

    // ---- rendering ------------------------------------------------------

    fn render_task(&self, t: &TaskRecord) -> Result<Task> {
        let project = self.project_required(t.project_id)?;
        let mut labels = Vec::with_capacity(t.label_ids.len());
        for &id in &t.label_ids {
            if let Some(l) = self.label(id)? {
                labels.push(l.name);
            }
        }
        let parent = match t.parent_id {
            Some(pid) => self.task(pid)?.map(|p| ParentRef {
                id: p.id,
                key: self.task_key_of(&p).unwrap_or_default(),
                title: p.title,
            }),
            None => None,
        };
        let mut subtasks = Vec::new();
        for sub in self.tasks_by_ids(&self.subtask_ids(t.id)?)? {
            subtasks.push(SubtaskRef {
                id: sub.id,
                key: task_key(&project.slug, sub.number),
                title: sub.title,
                status: sub.status,
            });
        }
        Ok(Task {
            id: t.id,
            key: task_key(&project.slug, t.number),
            project: project.to_ref(),
            number: t.number,
            title: t.title.clone(),
            description: t.description.clone(),
            kind: t.kind,
            status: t.status,
            priority: t.priority,
            labels,
            assignee: t.assignee_id.map(|id| self.member_ref(id)).transpose()?,
            reviewer: t.reviewer_id.map(|id| self.member_ref(id)).transpose()?,
            parent,
            subtasks,
            steps: self.steps(t.id)?.iter().map(StepRecord::to_wire).collect(),
            watcher_ids: t.watcher_ids.clone(),
            depends_on: self.depends_on(t.id)?,
            position: t.position,
            created_at: t.created_at,
            updated_at: t.updated_at,
        })
    }

    fn task_key_of(&self, t: &TaskRecord) -> Result<String> {
        Ok(task_key(&self.project_required(t.project_id)?.slug, t.number))
    }

    fn render_link(&self, l: &LinkRecord) -> Result<TaskLink> {
        let source = self.task_required(l.source_id)?;
        let target = self.task_required(l.target_id)?;
        Ok(TaskLink {
            id: l.id,
            source_id: l.source_id,
            target_id: l.target_id,
            link_type: l.link_type,
            source_key: self.task_key_of(&source)?,
            target_key: self.task_key_of(&target)?,
            source_title: source.title,
            target_title: target.title,
        })
    }

    fn render_message(&self, m: &MessageRecord) -> Result<Message> {
        let mut mentions = Vec::with_capacity(m.mention_ids.len());
        for &id in &m.mention_ids {
            mentions.push(self.member_ref(id)?);
        }
        let mut attachments = Vec::with_capacity(m.attachment_ids.len());
        for &id in &m.attachment_ids {
            if let Some(u) = self.upload(id)? {
                attachments.push(Attachment {
                    id: u.file_id,
                    filename: u.filename,
                    mime_type: u.mime_type,
                    size: u.size,
                });
            }
        }
        Ok(Message {
            id: m.id,
            chat_id: m.chat_id,
            task_id: m.task_id,
            parent_id: m.parent_id,
            author_type: m.author_type,
            author_id: m.author_id,
            author: m.author_id.map(|id| self.member_ref(id)).transpose()?,
            actor: m.actor_id.map(|id| self.member_ref(id)).transpose()?,
            content: m.content.clone(),
            thinking: m.thinking.clone(),
            mentions,
            voice_url: m.voice_url.clone(),
            attachments,
            created_at: m.created_at,
        })
    }

    fn render_project_file(&self, f: &ProjectFileRecord) -> Result<ProjectFile> {
        Ok(ProjectFile {
            id: f.id,
            filename: f.filename.clone(),
            description: f.description.clone(),
            mime_type: f.mime_type.clone(),
            size: f.size,
            uploaded_by: self.member_ref(f.uploaded_by)?,
            created_at: f.created_at,
            updated_at: f.updated_at,
        })
    }

    fn render_action(&self, a: &ActionRecord) -> Result<TaskAction> {
        Ok(TaskAction {
            id: a.id,
            task_id: a.task_id,
            actor: self.member_ref(a.actor_id)?,
            action: a.action.clone(),
            changes: a.changes.clone(),
            created_at: a.created_at,
        })
    }
}

impl<T: ReadTxn + ?Sized> Records for T {}

/// Writes of records with their index entries.
pub trait RecordWrites: WriteTxn {
    fn put_record<T: Serialize>(&mut self, table: Table, key: &[u8], value: &T) -> Result<()> {
        self.put(table, key, &encode(value))
    }
    fn put_marker(&mut self, table: Table, key: &[u8]) -> Result<()> {
        self.put(table, key, &[])
    }

    /// Rewrites a member whose slug and name are unchanged: no index
    /// entry moves.
    fn put_member_record(&mut self, m: &MemberRecord) -> Result<()> {
        self.put_record(MEMBERS, &id_key(m.id), m)
    }

    fn put_member(&mut self, old: Option<&MemberRecord>, m: &MemberRecord) -> Result<()> {
        if let Some(old) = old {
            if old.slug != m.slug {
                self.delete(MEMBER_SLUG, old.slug.as_bytes())?;
            }
            if old.name != m.name {
                self.delete(MEMBER_NAME, &Key::new().str0(&old.name.to_lowercase()).uuid(old.id))?;
            }
        }
        self.put(MEMBER_SLUG, m.slug.as_bytes(), m.id.as_bytes())?;
        self.put_marker(MEMBER_NAME, &Key::new().str0(&m.name.to_lowercase()).uuid(m.id))?;
        self.put_record(MEMBERS, &id_key(m.id), m)
    }

    fn put_secret(&mut self, member: Uuid, secret: &Secret) -> Result<()> {
        self.put_record(MEMBER_SECRET, &id_key(member), secret)
    }

    /// Rewrites a project whose slug is unchanged (its task counter, for
    /// instance): no index entry moves.
    fn put_project_record(&mut self, p: &ProjectRecord) -> Result<()> {
        self.put_record(PROJECTS, &id_key(p.id), p)
    }

    fn put_project(&mut self, old: Option<&ProjectRecord>, p: &ProjectRecord) -> Result<()> {
        if let Some(old) = old
            && old.slug != p.slug
        {
            self.delete(PROJECT_SLUG, old.slug.as_bytes())?;
        }
        self.put(PROJECT_SLUG, p.slug.as_bytes(), p.id.as_bytes())?;
        self.put_record(PROJECTS, &id_key(p.id), p)
    }

    /// Writes a task and keeps every task index in step with it.
    fn put_task(&mut self, old: Option<&TaskRecord>, t: &TaskRecord) -> Result<()> {
        if let Some(old) = old {
            remove_task_indexes(self, old, Some(t))?;
        }
        let order = |k: Key| k.f64(t.position).u64(t.number).build();
        self.put(TASK_NUMBER, &Key::new().uuid(t.project_id).u64(t.number), t.id.as_bytes())?;
        self.put(PROJECT_TASKS, &order(Key::new().uuid(t.project_id)), t.id.as_bytes())?;
        self.put(
            PROJECT_STATUS_TASKS,
            &order(Key::new().uuid(t.project_id).u8(t.status.index())),
            t.id.as_bytes(),
        )?;
        self.put_marker(STATUS_TASKS, &Key::new().u8(t.status.index()).uuid(t.id))?;
        if let Some(a) = t.assignee_id {
            self.put_marker(ASSIGNEE_TASKS, &Key::new().uuid(a).uuid(t.id))?;
        }
        if let Some(r) = t.reviewer_id {
            self.put_marker(REVIEWER_TASKS, &Key::new().uuid(r).uuid(t.id))?;
        }
        if let Some(p) = t.parent_id {
            self.put_marker(SUBTASKS, &Key::new().uuid(p).uuid(t.id))?;
        }
        for &l in &t.label_ids {
            self.put_marker(LABEL_TASKS, &Key::new().uuid(l).uuid(t.id))?;
        }
        self.put_record(TASKS, &id_key(t.id), t)
    }

    fn delete_task_record(&mut self, t: &TaskRecord) -> Result<()> {
        remove_task_indexes(self, t, None)?;
        self.delete(TASK_NUMBER, &Key::new().uuid(t.project_id).u64(t.number))?;
        self.delete(TASKS, &id_key(t.id))?;
        Ok(())
    }

    fn put_link(&mut self, l: &LinkRecord) -> Result<()> {
        self.put_marker(LINKS_FROM, &Key::new().uuid(l.source_id).uuid(l.id))?;
        self.put_marker(LINKS_TO, &Key::new().uuid(l.target_id).uuid(l.id))?;
        self.put_record(LINKS, &id_key(l.id), l)
    }

    fn delete_link(&mut self, l: &LinkRecord) -> Result<()> {
        self.delete(LINKS_FROM, &Key::new().uuid(l.source_id).uuid(l.id))?;
        self.delete(LINKS_TO, &Key::new().uuid(l.target_id).uuid(l.id))?;
        self.delete(LINKS, &id_key(l.id))?;
        Ok(())
    }

    fn put_message(&mut self, m: &MessageRecord) -> Result<()> {
        if let Some(c) = m.chat_id {
            self.put_marker(CHAT_MESSAGES, &Key::new().uuid(c).uuid(m.id))?;
        }
        if let Some(t) = m.task_id {
            self.put_marker(TASK_MESSAGES, &Key::new().uuid(t).uuid(m.id))?;
        }
        if let Some(p) = m.parent_id {
            self.put_marker(REPLIES, &Key::new().uuid(p).uuid(m.id))?;
        }
        self.put_record(MESSAGES, &id_key(m.id), m)
    }

    /// Deletes a message and its attachments' records; returns the blobs
    /// to remove once the transaction is durable.
    fn delete_message(&mut self, m: &MessageRecord) -> Result<Vec<String>> {
        crate::events::log::detach_message(self, m)?;
        let mut blobs = Vec::new();
        if let Some(c) = m.chat_id {
            self.delete(CHAT_MESSAGES, &Key::new().uuid(c).uuid(m.id))?;
        }
        if let Some(t) = m.task_id {
            self.delete(TASK_MESSAGES, &Key::new().uuid(t).uuid(m.id))?;
        }
        if let Some(p) = m.parent_id {
            self.delete(REPLIES, &Key::new().uuid(p).uuid(m.id))?;
        }
        for &a in &m.attachment_ids {
            if let Some(u) = self.upload(a)? {
                self.delete(UPLOADS, &id_key(a))?;
                blobs.push(u.storage_name);
            }
        }
        self.delete(MESSAGES, &id_key(m.id))?;
        Ok(blobs)
    }

    fn put_upload(&mut self, u: &UploadRecord) -> Result<()> {
        let unbound = Key::new().u64(u.created_at.as_millisecond().max(0) as u64).uuid(u.file_id);
        if u.message_id.is_some() {
            self.delete(UNBOUND_UPLOADS, &unbound)?;
        } else {
            self.put_marker(UNBOUND_UPLOADS, &unbound)?;
        }
        self.put_record(UPLOADS, &id_key(u.file_id), u)
    }

    fn put_project_file(&mut self, old: Option<&ProjectFileRecord>, f: &ProjectFileRecord) -> Result<()> {
        if let Some(old) = old
            && old.filename != f.filename
        {
            self.delete(PROJECT_FILE_NAME, &Key::new().uuid(old.project_id).str(&old.filename))?;
        }
        self.put(PROJECT_FILE_NAME, &Key::new().uuid(f.project_id).str(&f.filename), f.id.as_bytes())?;
        self.put_record(PROJECT_FILES, &id_key(f.id), f)
    }

    fn delete_project_file(&mut self, f: &ProjectFileRecord) -> Result<()> {
        self.delete(PROJECT_FILE_NAME, &Key::new().uuid(f.project_id).str(&f.filename))?;
        self.delete(PROJECT_FILES, &id_key(f.id))?;
        Ok(())
    }

    fn put_label(&mut self, old: Option<&LabelRecord>, l: &LabelRecord) -> Result<()> {
        if let Some(old) = old {
            self.delete(LABEL_NAME, old.name.to_lowercase().as_bytes())?;
        }
        self.put(LABEL_NAME, l.name.to_lowercase().as_bytes(), l.id.as_bytes())?;
        self.put_record(LABELS, &id_key(l.id), l)
    }
}

impl<T: WriteTxn + ?Sized> RecordWrites for T {}

fn remove_task_indexes<W: WriteTxn + ?Sized>(
    w: &mut W,
    old: &TaskRecord,
    new: Option<&TaskRecord>,
) -> Result<()> {
    let order_changed = new.is_none_or(|n| n.position != old.position || n.status != old.status);
    if order_changed {
        let order = |k: Key| k.f64(old.position).u64(old.number).build();
        w.delete(PROJECT_TASKS, &order(Key::new().uuid(old.project_id)))?;
        w.delete(PROJECT_STATUS_TASKS, &order(Key::new().uuid(old.project_id).u8(old.status.index())))?;
        w.delete(STATUS_TASKS, &Key::new().u8(old.status.index()).uuid(old.id))?;
    }
    if let Some(a) = old.assignee_id
        && new.is_none_or(|n| n.assignee_id != Some(a))
    {
        w.delete(ASSIGNEE_TASKS, &Key::new().uuid(a).uuid(old.id))?;
    }
    if let Some(r) = old.reviewer_id
        && new.is_none_or(|n| n.reviewer_id != Some(r))
    {
        w.delete(REVIEWER_TASKS, &Key::new().uuid(r).uuid(old.id))?;
    }
    if let Some(p) = old.parent_id
        && new.is_none_or(|n| n.parent_id != Some(p))
    {
        w.delete(SUBTASKS, &Key::new().uuid(p).uuid(old.id))?;
    }
    for &l in &old.label_ids {
        if new.is_none_or(|n| !n.label_ids.contains(&l)) {
            w.delete(LABEL_TASKS, &Key::new().uuid(l).uuid(old.id))?;
        }
    }
    Ok(())
}
