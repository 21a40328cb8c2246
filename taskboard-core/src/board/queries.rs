//! Reading tasks: lists with their filters, one task, a task by key.

use std::ops::Bound;
use std::sync::Arc;

use uuid::Uuid;

use super::pages::{Item, List};
use super::{Actor, Board, RenderedTask};
use crate::error::Result;
use crate::model::Task;
use crate::records::{Records, Render, TaskRecord};
use crate::storage::codec::{Key, uuid_suffix, uuid_value};
use crate::storage::tables::{
    ASSIGNEE_ORDER, LABEL_TASKS, PROJECT_ASSIGNEE_ORDER, PROJECT_LABEL_ORDER, PROJECT_STATUS_TASKS,
    PROJECT_TASKS, REVIEWER_TASKS, STATUS_ORDER, SUBTASKS, TASK_ORDER,
};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, Table};
use crate::wire::{CursorKind, Page, TaskFilter};

/// The sort key of a task in every task list: position, number, id. The
/// ordered indexes end their keys with it, and a task list's cursor holds
/// it.
pub(crate) fn sort_key(t: &TaskRecord) -> Vec<u8> {
    Key::new().f64(t.position).u64(t.number).uuid(t.id).build()
}

/// Where the scan of a task list starts.
enum Source {
    /// An index in list order: entries `prefix position number [task_id]`,
    /// the task id in the value (`id_in_value`) or ending the key.
    Ordered { table: Table, prefix: Vec<u8>, id_in_value: bool },
    /// A set of tasks in no useful order, sorted once read.
    Set(Vec<Uuid>),
}

/// A task filter resolved against the store: names made ids, `q` made
/// lower case and looked up as a key.
struct Plan<'f> {
    f: &'f TaskFilter,
    label_id: Option<Uuid>,
    q: Option<String>,
    key_match: Option<Uuid>,
    source: Source,
    /// Whether the source alone answers every filter, so entries can be
    /// skipped (offset) without reading their records.
    exact: bool,
}

impl Plan<'_> {
    fn matches(&self, t: &TaskRecord) -> bool {
        let f = self.f;
        f.project_id.is_none_or(|p| t.project_id == p)
            && f.status.is_none_or(|s| t.status == s)
            && f.assignee_id.is_none_or(|a| t.assignee_id == Some(a))
            && f.reviewer_id.is_none_or(|a| t.reviewer_id == Some(a))
            && f.parent_id.is_none_or(|p| t.parent_id == Some(p))
            && f.kind.is_none_or(|k| t.kind == k)
            && f.priority.is_none_or(|p| t.priority == p)
            && self.label_id.is_none_or(|l| t.label_ids.contains(&l))
            && self
                .q
                .as_ref()
                .is_none_or(|q| self.key_match == Some(t.id) || t.title.to_lowercase().contains(q.as_str()))
    }
}

/// Chooses the index a task list starts from: a task key or a rare title
/// part first, then the narrowest combination of project with assignee,
/// label or status, then one filter alone, then every task in order.
/// `None` when nothing can match (an unknown label).
fn plan<'f>(r: &dyn ReadTxn, f: &'f TaskFilter) -> Result<Option<Plan<'f>>> {
    let label_id = match &f.label {
        Some(name) => match r.label_by_name(name)? {
            Some(l) => Some(l.id),
            None => return Ok(None),
        },
        None => None,
    };
    let q = f.q.as_ref().map(|q| q.trim().to_lowercase()).filter(|q| !q.is_empty());
    let key_match = match &q {
        Some(q) => r.task_by_key(q)?.map(|t| t.id),
        None => None,
    };
    let searched = match &q {
        Some(q) => match crate::records::titles::candidates(r, q)? {
            crate::records::titles::Candidates::Few(mut ids) => {
                ids.extend(key_match);
                Some(ids)
            }
            crate::records::titles::Candidates::Many => None,
        },
        None => None,
    };
    let ordered =
        |table: Table, prefix: Vec<u8>, id_in_value: bool| Source::Ordered { table, prefix, id_in_value };
    let others = |n: usize| {
        [
            f.project_id.is_some(),
            f.status.is_some(),
            f.assignee_id.is_some(),
            f.reviewer_id.is_some(),
            f.parent_id.is_some(),
            f.kind.is_some(),
            f.priority.is_some(),
            label_id.is_some(),
            q.is_some(),
        ]
        .iter()
        .filter(|x| **x)
        .count()
            == n
    };
    let (source, exact) = if let Some(ids) = searched {
        (Source::Set(ids), false)
    } else if let Some(parent) = f.parent_id {
        (Source::Set(r.ids_with_prefix(SUBTASKS, parent.as_bytes(), Direction::Forward)?), false)
    } else if let (Some(p), Some(a)) = (f.project_id, f.assignee_id) {
        (ordered(PROJECT_ASSIGNEE_ORDER, Key::new().uuid(p).uuid(a).build(), false), others(2))
    } else if let (Some(p), Some(l)) = (f.project_id, label_id) {
        (ordered(PROJECT_LABEL_ORDER, Key::new().uuid(p).uuid(l).build(), false), others(2))
    } else if let (Some(p), Some(s)) = (f.project_id, f.status) {
        (ordered(PROJECT_STATUS_TASKS, Key::new().uuid(p).u8(s.index()).build(), true), others(2))
    } else if let Some(a) = f.assignee_id {
        (ordered(ASSIGNEE_ORDER, a.as_bytes().to_vec(), false), others(1))
    } else if let Some(rv) = f.reviewer_id {
        (Source::Set(r.ids_with_prefix(REVIEWER_TASKS, rv.as_bytes(), Direction::Forward)?), false)
    } else if let Some(l) = label_id.filter(|_| f.project_id.is_none()) {
        (Source::Set(r.ids_with_prefix(LABEL_TASKS, l.as_bytes(), Direction::Forward)?), false)
    } else if let Some(p) = f.project_id {
        (ordered(PROJECT_TASKS, p.as_bytes().to_vec(), true), others(1))
    } else if let Some(s) = f.status {
        (ordered(STATUS_ORDER, vec![s.index()], false), others(1))
    } else {
        (ordered(TASK_ORDER, Vec::new(), false), others(0))
    };
    Ok(Some(Plan { f, label_id, q, key_match, source, exact }))
}

/// A task a list reaches, in list order: its id and sort key, and its
/// record when the plan had to read it to check the filters.
pub(crate) struct Found {
    pub id: Uuid,
    pub record: Option<TaskRecord>,
    key: Vec<u8>,
}

impl Found {
    /// The task's sort key (see [`sort_key`]), for a page's cursor.
    pub fn sort_key(&self) -> &[u8] {
        &self.key
    }
}

/// Visits the tasks matching a filter in list order, starting after the
/// sort key `after` and skipping the first `skip` matches, until `visit`
/// stops. Reads only the index entries and records up to where it stops
/// (sets from a search or an unordered index are read whole, then sorted).
/// When the index answers every filter, no record is read: the id and
/// the sort key come from the index entry, and `visit` gets no record.
pub(crate) fn visit_tasks(
    r: &dyn ReadTxn,
    f: &TaskFilter,
    after: Option<&[u8]>,
    mut skip: usize,
    visit: &mut dyn FnMut(Found) -> Result<Scan>,
) -> Result<()> {
    let Some(plan) = plan(r, f)? else { return Ok(()) };
    match &plan.source {
        Source::Ordered { table, prefix, id_in_value } => {
            let mut range = KeyRange::prefix(prefix);
            if let Some(a) = after {
                range.start = Bound::Excluded([prefix.as_slice(), a].concat());
            }
            r.scan(*table, range, Direction::Forward, &mut |k, v| {
                if plan.exact && skip > 0 {
                    skip -= 1;
                    return Ok(Scan::Continue);
                }
                let id = if *id_in_value { uuid_value(v)? } else { uuid_suffix(k)? };
                // The index key after its prefix is the sort key, but for
                // the indexes that keep the id in the value.
                let suffix = &k[prefix.len()..];
                let key = if *id_in_value { [suffix, id.as_bytes()].concat() } else { suffix.to_vec() };
                if plan.exact {
                    return visit(Found { id, record: None, key });
                }
                let Some(t) = r.task(id)? else { return Ok(Scan::Continue) };
                if !plan.matches(&t) {
                    return Ok(Scan::Continue);
                }
                if skip > 0 {
                    skip -= 1;
                    return Ok(Scan::Continue);
                }
                visit(Found { id, record: Some(t), key })
            })
        }
        Source::Set(ids) => {
            let mut ids = ids.clone();
            ids.sort_unstable();
            ids.dedup();
            let mut tasks: Vec<(Vec<u8>, TaskRecord)> = Vec::new();
            for id in ids {
                if let Some(t) = r.task(id)?
                    && plan.matches(&t)
                {
                    let key = sort_key(&t);
                    if after.is_none_or(|a| key.as_slice() > a) {
                        tasks.push((key, t));
                    }
                }
            }
            tasks.sort_by(|a, b| a.0.cmp(&b.0));
            for (key, t) in tasks.into_iter().skip(skip) {
                if visit(Found { id: t.id, record: Some(t), key })? == Scan::Stop {
                    break;
                }
            }
            Ok(())
        }
    }
}

impl Board {
    /// `GET /tasks` (docs/rules.md, lists). Tasks rendered before and
    /// unchanged since come from the cache of rendered tasks, their JSON
    /// with them; those rendered here join it (a page's worth at most).
    /// When the index answers the filters, a cached task costs no record
    /// read at all.
    pub fn list_tasks(&self, filter: TaskFilter) -> List<Task> {
        // Read before the snapshot is: a change committed in between
        // clears the cache and this generation with it, so tasks rendered
        // from the older snapshot are not kept.
        let generation = self.task_cache_generation();
        let board = self.clone();
        let page = filter.page.clone();
        List::new(self, CursorKind::Tasks, page, move |r, start, out| {
            let mut rendered = Vec::new();
            visit_tasks(r, &filter, start.after.as_deref(), start.skip, &mut |found| {
                let task = match board.cached_task(found.id) {
                    Some(task) => task,
                    None => {
                        let t = match found.record {
                            Some(ref t) => t,
                            None => &r.task_required(found.id)?,
                        };
                        let task = RenderedTask::new(r.render_task(t)?);
                        if rendered.len() < Page::MAX_LIMIT as usize {
                            rendered.push(task.clone());
                        }
                        task
                    }
                };
                let item = Item::Rendered { json: &|| task.json(), value: &|| task.task.clone() };
                out.push(item, &|| found.sort_key().to_vec())
            })?;
            board.cache_tasks(generation, rendered);
            Ok(())
        })
    }

    /// `GET /tasks/{id}`: from the cache of rendered tasks when it holds
    /// the task, without a storage read.
    pub async fn get_task(&self, _actor: &Actor, id: Uuid) -> Result<Task> {
        Ok(self.rendered_task(id).await?.task.clone())
    }

    /// `GET /tasks/{id}` as the JSON the API sends and its entity tag,
    /// each computed once per version of the task: the fast path for
    /// servers.
    pub async fn get_task_json(&self, _actor: &Actor, id: Uuid) -> Result<(Arc<str>, Arc<str>)> {
        let task = self.rendered_task(id).await?;
        Ok((task.json(), task.etag()))
    }

    async fn rendered_task(&self, id: Uuid) -> Result<Arc<RenderedTask>> {
        if let Some(task) = self.cached_task(id) {
            return Ok(task);
        }
        let generation = self.task_cache_generation();
        let task = RenderedTask::new(self.read(move |r| r.render_task(&r.task_required(id)?)).await?);
        self.cache_tasks(generation, [task.clone()]);
        Ok(task)
    }
}
