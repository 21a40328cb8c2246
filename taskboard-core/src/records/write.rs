//! Writes of records with their index entries.

use super::{
    LabelRecord, LinkRecord, MemberRecord, MessageRecord, ProjectFileRecord, ProjectRecord, Records, Secret,
    Serialize, TaskRecord, UploadRecord, Uuid, id_key,
};
use crate::error::Result;
use crate::storage::WriteTxn;
use crate::storage::codec::{Key, encode};
use crate::storage::tables::{
    ASSIGNEE_ORDER, ASSIGNEE_TASKS, CHAT_MESSAGES, EXTERNAL_REFS, LABEL_NAME, LABEL_TASKS, LABELS, LINKS,
    LINKS_FROM, LINKS_TO, MEMBER_EMAIL, MEMBER_NAME, MEMBER_SECRET, MEMBER_SLUG, MEMBERS, MESSAGES,
    PROJECT_ASSIGNEE_ORDER, PROJECT_FILE_NAME, PROJECT_FILES, PROJECT_LABEL_ORDER, PROJECT_SLUG,
    PROJECT_STATUS_TASKS, PROJECT_TASKS, PROJECTS, REPLIES, REVIEWER_TASKS, STATUS_ORDER, SUBTASKS,
    TASK_MESSAGES, TASK_NUMBER, TASK_ORDER, TASKS, Table, UNBOUND_UPLOADS, UPLOADS,
};

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
            if let Some(email) = old.email.as_deref().filter(|_| old.email != m.email) {
                self.delete(MEMBER_EMAIL, crate::oidc::email_key(email).as_bytes())?;
            }
        }
        if let Some(email) = &m.email {
            self.put(MEMBER_EMAIL, crate::oidc::email_key(email).as_bytes(), m.id.as_bytes())?;
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

    /// Writes a task and keeps every task index in step with it: only the
    /// entries that differ between the old and the new record are
    /// written or removed.
    fn put_task(&mut self, old: Option<&TaskRecord>, t: &TaskRecord) -> Result<()> {
        let before = old.map(task_index_entries).unwrap_or_default();
        let after = task_index_entries(t);
        for entry in &before {
            if !after.contains(entry) {
                self.delete(entry.0, &entry.1)?;
            }
        }
        for (table, key, value) in after.iter().filter(|e| !before.contains(e)) {
            self.put(*table, key, value)?;
        }
        match crate::records::titles::index_title(self, old, Some(t))? {
            Some(fold) if t.title_fold != Some(fold) => {
                self.put_record(TASKS, &id_key(t.id), &TaskRecord { title_fold: Some(fold), ..t.clone() })?
            }
            _ => self.put_record(TASKS, &id_key(t.id), t)?,
        }
        super::ready::sync(self, old, Some(t))
    }

    fn delete_task_record(&mut self, t: &TaskRecord) -> Result<()> {
        super::ready::sync(self, Some(t), None)?;
        crate::records::titles::index_title(self, Some(t), None)?;
        for (table, key, _) in task_index_entries(t) {
            self.delete(table, &key)?;
        }
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
        super::event_log::detach_message(self, m)?;
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

/// Every index entry of a task but its title's (`records::titles`):
/// (table, key, value). Ordered indexes end their keys with the list
/// order (position, number, id), so one cursor (see
/// [`crate::wire::paged`]) positions a scan in any of them.
pub(crate) fn task_index_entries(t: &TaskRecord) -> Vec<(Table, Vec<u8>, Vec<u8>)> {
    let order = |k: Key| k.f64(t.position).u64(t.number).build();
    let ordered = |k: Key| k.f64(t.position).u64(t.number).uuid(t.id).build();
    let id = t.id.as_bytes().to_vec();
    let p = t.project_id;
    let mut out = vec![
        (TASK_NUMBER, Key::new().uuid(p).u64(t.number).build(), id.clone()),
        (PROJECT_TASKS, order(Key::new().uuid(p)), id.clone()),
        (PROJECT_STATUS_TASKS, order(Key::new().uuid(p).u8(t.status.index())), id.clone()),
        (TASK_ORDER, ordered(Key::new()), Vec::new()),
        (STATUS_ORDER, ordered(Key::new().u8(t.status.index())), Vec::new()),
    ];
    if let Some(a) = t.assignee_id {
        out.push((ASSIGNEE_TASKS, Key::new().uuid(a).uuid(t.id).build(), Vec::new()));
        out.push((ASSIGNEE_ORDER, ordered(Key::new().uuid(a)), Vec::new()));
        out.push((PROJECT_ASSIGNEE_ORDER, ordered(Key::new().uuid(p).uuid(a)), Vec::new()));
    }
    if let Some(r) = t.reviewer_id {
        out.push((REVIEWER_TASKS, Key::new().uuid(r).uuid(t.id).build(), Vec::new()));
    }
    if let Some(parent) = t.parent_id {
        out.push((SUBTASKS, Key::new().uuid(parent).uuid(t.id).build(), Vec::new()));
    }
    if let Some(r) = &t.external_ref {
        out.push((EXTERNAL_REFS, Key::new().uuid(p).str0(&r.source).str(&r.id).build(), id.clone()));
    }
    for &l in &t.label_ids {
        out.push((LABEL_TASKS, Key::new().uuid(l).uuid(t.id).build(), Vec::new()));
        out.push((PROJECT_LABEL_ORDER, ordered(Key::new().uuid(p).uuid(l)), Vec::new()));
    }
    out
}
