//! Typed reads of records over any transaction.

use super::{
    ChatRecord, LabelRecord, LinkRecord, LinkType, MemberRecord, MemberRef, MessageRecord, ProjectFileRecord,
    ProjectRecord, Secret, StepRecord, TaskRecord, UploadRecord, Uuid, id_key,
};
use crate::error::{Error, Result};
use crate::model::{ProjectRole, parse_task_key};
use crate::storage::codec::{Key, decode, uuid_suffix, uuid_value};
use crate::storage::tables::{
    CHATS, LABEL_NAME, LABELS, LINKS, LINKS_FROM, LINKS_TO, MEMBER_EMAIL, MEMBER_NAME, MEMBER_SECRET,
    MEMBER_SLUG, MEMBERS, MESSAGES, PROJECT_FILE_NAME, PROJECT_FILES, PROJECT_MEMBERS, PROJECT_SLUG,
    PROJECT_TASKS, PROJECTS, STEPS, SUBTASKS, TASK_NUMBER, TASKS, Table, UPLOADS,
};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan};

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
        self.get(MEMBERS, &id_key(id))?.map(|b| memo::decode(&memo::MEMBERS, id, &b)).transpose()
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
    /// The member with this email, given lower-cased.
    fn member_by_email(&self, email: &str) -> Result<Option<MemberRecord>> {
        match self.get(MEMBER_EMAIL, email.as_bytes())? {
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
        self.get(PROJECTS, &id_key(id))?.map(|b| memo::decode(&memo::PROJECTS, id, &b)).transpose()
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
    /// What a task depends on (docs/rules.md, tasks): targets of its depends_on
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
    /// The file `id` of `project`; 404 when the project or the file is
    /// not there, or the file belongs to another project.
    fn project_file_in(&self, project: Uuid, id: Uuid) -> Result<ProjectFileRecord> {
        self.project_required(project)?;
        self.project_file(id)?
            .filter(|f| f.project_id == project)
            .ok_or_else(|| Error::not_found(format!("file {id} not found in project {project}")))
    }
    fn project_file_by_name(&self, project: Uuid, filename: &str) -> Result<Option<ProjectFileRecord>> {
        match self.get(PROJECT_FILE_NAME, &Key::new().uuid(project).str(filename))? {
            Some(id) => self.project_file(uuid_value(&id)?),
            None => Ok(None),
        }
    }
}

impl<T: ReadTxn + ?Sized> Records for T {}

/// Members and projects decoded before, by the bytes they were decoded
/// from. Decoding a record (JSON) is most of what reading it costs, and a
/// write reads the same member and project several times (a task's
/// creation: its creator for the system messages and the rendered task,
/// the project for its counter, key and chat). Kept per thread, at most
/// [`memo::MAX`] of each; an entry serves only the very bytes it was
/// decoded from, so it is never stale.
mod memo {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::thread::LocalKey;

    use serde::de::DeserializeOwned;
    use uuid::Uuid;

    use super::{MemberRecord, ProjectRecord};
    use crate::error::Result;

    /// Entries kept of each kind, per thread; past it the memo starts
    /// again.
    pub const MAX: usize = 256;

    type Memo<T> = RefCell<HashMap<Uuid, (Box<[u8]>, T)>>;

    thread_local! {
        pub static MEMBERS: Memo<MemberRecord> = RefCell::new(HashMap::new());
        pub static PROJECTS: Memo<ProjectRecord> = RefCell::new(HashMap::new());
    }

    /// The record `bytes` decode to, from the memo when it holds them.
    pub fn decode<T: DeserializeOwned + Clone>(
        memo: &'static LocalKey<Memo<T>>,
        id: Uuid,
        bytes: &[u8],
    ) -> Result<T> {
        memo.with(|m| {
            if let Some((kept, value)) = m.borrow().get(&id)
                && **kept == *bytes
            {
                return Ok(value.clone());
            }
            let value: T = crate::storage::codec::decode(bytes)?;
            let mut m = m.borrow_mut();
            if m.len() >= MAX {
                m.clear();
            }
            m.insert(id, (bytes.into(), value.clone()));
            Ok(value)
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::storage::codec::encode;

        /// A record changed under the same id is decoded again, never
        /// served from the memo.
        #[test]
        fn a_memo_serves_only_the_bytes_it_decoded() {
            let id = Uuid::now_v7();
            let mut p: ProjectRecord = serde_json::from_value(serde_json::json!({
                "id": id, "name": "Web", "slug": "web", "description": null, "repo_urls": [],
                "status": "active", "task_counter": 1, "chat_id": Uuid::nil(), "auto_assign": false,
                "created_by": Uuid::nil(), "created_at": "2026-11-26T00:00:00Z",
            }))
            .unwrap();
            assert_eq!(decode(&PROJECTS, id, &encode(&p)).unwrap().task_counter, 1);
            assert_eq!(decode(&PROJECTS, id, &encode(&p)).unwrap().task_counter, 1);
            p.task_counter = 2;
            p.name = "Web site".into();
            let again = decode(&PROJECTS, id, &encode(&p)).unwrap();
            assert_eq!((again.task_counter, again.name.as_str()), (2, "Web site"));
            assert!(
                decode(&PROJECTS, id, b"\x01{").is_err(),
                "undecodable bytes are an error, not a kept record"
            );
        }
    }
}
