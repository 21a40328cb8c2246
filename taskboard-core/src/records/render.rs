//! Records into their wire form: ids become references, so a renamed
//! member, project or label shows its new name everywhere at once.

use super::*;
use crate::error::Result;
use crate::storage::ReadTxn;

/// The wire form of records, assembled on read.
pub trait Render: Records {
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
            lease: match t.lease {
                Some(l) => {
                    Some(Lease { id: l.id, holder: self.member_ref(l.holder)?, expires_at: l.expires_at })
                }
                None => None,
            },
            created_at: t.created_at,
            updated_at: t.updated_at,
            external_ref: t.external_ref.clone(),
            changes: t.work.changes.clone(),
            review: t.work.review,
            merge_commit: t.work.merge_commit.clone(),
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
