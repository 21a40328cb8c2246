//! Writes of records with their index entries.

use super::*;
use crate::error::Result;
use crate::storage::WriteTxn;
use crate::storage::codec::{Key, encode};

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
        self.put_record(PROJECTS, &id_key(p.id), p)?;
        if old.is_some_and(|o| o.status != p.status) {
            super::ready::refresh_project(self, p.id)?;
        }
        Ok(())
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
        self.put_record(TASKS, &id_key(t.id), t)?;
        super::ready::sync(self, old, Some(t))
    }

    fn delete_task_record(&mut self, t: &TaskRecord) -> Result<()> {
        super::ready::sync(self, Some(t), None)?;
        remove_task_indexes(self, t, None)?;
        self.delete(TASK_NUMBER, &Key::new().uuid(t.project_id).u64(t.number))?;
        self.delete(TASKS, &id_key(t.id))?;
        Ok(())
    }

    fn put_link(&mut self, l: &LinkRecord) -> Result<()> {
        self.put_marker(LINKS_FROM, &Key::new().uuid(l.source_id).uuid(l.id))?;
        self.put_marker(LINKS_TO, &Key::new().uuid(l.target_id).uuid(l.id))?;
        self.put_record(LINKS, &id_key(l.id), l)?;
        match super::ready::depender(l) {
            Some(t) => super::ready::refresh(self, t),
            None => Ok(()),
        }
    }

    fn delete_link(&mut self, l: &LinkRecord) -> Result<()> {
        self.delete(LINKS_FROM, &Key::new().uuid(l.source_id).uuid(l.id))?;
        self.delete(LINKS_TO, &Key::new().uuid(l.target_id).uuid(l.id))?;
        self.delete(LINKS, &id_key(l.id))?;
        match super::ready::depender(l) {
            Some(t) => super::ready::refresh(self, t),
            None => Ok(()),
        }
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
