//! Records into their wire form: ids become references, so a renamed
//! member, project or label shows its new name everywhere at once.

use super::{ActionRecord, LinkRecord, MessageRecord, ProjectFileRecord, Records, StepRecord, TaskRecord};
use crate::error::Result;
use crate::model::{
    Attachment, Lease, Message, ParentRef, ProjectFile, SubtaskRef, Task, TaskAction, TaskLink, task_key,
};
use crate::storage::ReadTxn;

/// The wire form of records, assembled on read.
pub trait Render: Records {
    /// The one place a task's stored fields meet its answer's: the record
    /// is taken apart field by field and the answer built without `..`, so
    /// a field added to either that the other does not account for is a
    /// compile error here (the fields kept for the board alone are named
    /// and set aside).
    fn render_task(&self, t: &TaskRecord) -> Result<Task> {
        let TaskRecord {
            id,
            project_id,
            number,
            title,
            description,
            kind,
            status,
            priority,
            label_ids,
            assignee_id,
            reviewer_id,
            parent_id,
            watcher_ids,
            position,
            created_by: _,
            created_at,
            updated_at,
            lease,
            external_ref,
            title_fold: _,
            work,
        } = t;
        let crate::review::TaskWork {
            changes,
            review,
            merge_commit,
            agent_id: _,
            agent_rounds: _,
            edited_at: _,
        } = work;
        let project = self.project_required(*project_id)?;
        let mut labels = Vec::with_capacity(label_ids.len());
        for &id in label_ids {
            if let Some(l) = self.label(id)? {
                labels.push(l.name);
            }
        }
        let parent = match *parent_id {
            Some(pid) => self.task(pid)?.map(|p| ParentRef {
                id: p.id,
                key: self.task_key_of(&p).unwrap_or_default(),
                title: p.title,
            }),
            None => None,
        };
        let mut subtasks = Vec::new();
        for sub in self.tasks_by_ids(&self.subtask_ids(*id)?)? {
            subtasks.push(SubtaskRef {
                id: sub.id,
                key: task_key(&project.slug, sub.number),
                title: sub.title,
                status: sub.status,
            });
        }
        Ok(Task {
            id: *id,
            key: task_key(&project.slug, *number),
            project: project.to_ref(),
            number: *number,
            title: title.clone(),
            description: description.clone(),
            kind: *kind,
            status: *status,
            priority: *priority,
            labels,
            assignee: assignee_id.map(|id| self.member_ref(id)).transpose()?,
            reviewer: reviewer_id.map(|id| self.member_ref(id)).transpose()?,
            parent,
            subtasks,
            steps: self.steps(*id)?.iter().map(StepRecord::to_wire).collect(),
            watcher_ids: watcher_ids.clone(),
            depends_on: self.depends_on(*id)?,
            position: *position,
            lease: match lease {
                Some(l) => {
                    Some(Lease { id: l.id, holder: self.member_ref(l.holder)?, expires_at: l.expires_at })
                }
                None => None,
            },
            created_at: *created_at,
            updated_at: *updated_at,
            external_ref: external_ref.clone(),
            changes: changes.clone(),
            review: *review,
            merge_commit: merge_commit.clone(),
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
            imported_author: m.imported_author.clone(),
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
            action: a.action,
            changes: a.changes.clone(),
            created_at: a.created_at,
        })
    }
}

impl<T: ReadTxn + ?Sized> Render for T {}
