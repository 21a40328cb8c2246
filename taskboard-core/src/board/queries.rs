//! Reading tasks: lists with their filters, one task, a task by key.

use std::sync::Arc;

use uuid::Uuid;

use super::{Actor, Board, RenderedTask};
use crate::api::TaskFilter;
use crate::error::{Error, Result};
use crate::model::*;
use crate::records::*;
use crate::storage::codec::{Key, uuid_suffix};
use crate::storage::tables::*;
use crate::storage::{Direction, KeyRange, ReadTxn, Scan};

/// Tasks matching a filter, ordered by position then number. The most
/// selective index available serves the scan; the other filters are
/// checked on the records it yields.
pub(crate) fn query_tasks(r: &dyn ReadTxn, f: &TaskFilter) -> Result<Vec<TaskRecord>> {
    let label_id = match &f.label {
        Some(name) => match r.label_by_name(name)? {
            Some(l) => Some(l.id),
            None => return Ok(Vec::new()),
        },
        None => None,
    };
    let ids: Vec<Uuid> = if let (Some(p), Some(s)) = (f.project_id, f.status) {
        r.id_values_with_prefix(PROJECT_STATUS_TASKS, &Key::new().uuid(p).u8(s.index()))?
    } else if let Some(a) = f.assignee_id {
        r.ids_with_prefix(ASSIGNEE_TASKS, a.as_bytes(), Direction::Forward)?
    } else if let Some(parent) = f.parent_id {
        r.ids_with_prefix(SUBTASKS, parent.as_bytes(), Direction::Forward)?
    } else if let Some(l) = label_id {
        r.ids_with_prefix(LABEL_TASKS, l.as_bytes(), Direction::Forward)?
    } else if let Some(p) = f.project_id {
        r.id_values_with_prefix(PROJECT_TASKS, p.as_bytes())?
    } else if let Some(rv) = f.reviewer_id {
        r.ids_with_prefix(REVIEWER_TASKS, rv.as_bytes(), Direction::Forward)?
    } else if let Some(s) = f.status {
        r.ids_with_prefix(STATUS_TASKS, &[s.index()], Direction::Forward)?
    } else {
        let mut all = Vec::new();
        r.scan(TASKS, KeyRange::all(), Direction::Forward, &mut |k, _| {
            all.push(uuid_suffix(k)?);
            Ok(Scan::Continue)
        })?;
        all
    };
    let q = f.q.as_ref().map(|q| q.trim().to_lowercase()).filter(|q| !q.is_empty());
    let key_match = match &q {
        Some(q) => r.task_by_key(q)?.map(|t| t.id),
        None => None,
    };
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(t) = r.task(id)? else { continue };
        let keep = f.project_id.is_none_or(|p| t.project_id == p)
            && f.status.is_none_or(|s| t.status == s)
            && f.assignee_id.is_none_or(|a| t.assignee_id == Some(a))
            && f.reviewer_id.is_none_or(|a| t.reviewer_id == Some(a))
            && f.parent_id.is_none_or(|p| t.parent_id == Some(p))
            && f.kind.is_none_or(|k| t.kind == k)
            && f.priority.is_none_or(|p| t.priority == p)
            && label_id.is_none_or(|l| t.label_ids.contains(&l))
            && q.as_ref()
                .is_none_or(|q| key_match == Some(t.id) || t.title.to_lowercase().contains(q.as_str()));
        if keep {
            out.push(t);
        }
    }
    out.sort_by(|a, b| a.position.total_cmp(&b.position).then(a.number.cmp(&b.number)).then(a.id.cmp(&b.id)));
    Ok(out)
}

impl Board {
    /// `GET /tasks` (docs/rules.md, lists). Tasks rendered before and unchanged
    /// since come from the cache of rendered tasks.
    pub async fn list_tasks(&self, _actor: &Actor, filter: TaskFilter) -> Result<Vec<Task>> {
        filter.page.check()?;
        let generation = self.task_cache_generation();
        let board = self.clone();
        let (tasks, rendered) = self
            .read(move |r| {
                let records = filter.page.apply(query_tasks(r, &filter)?);
                let mut tasks = Vec::with_capacity(records.len());
                let mut rendered = Vec::new();
                for t in &records {
                    match board.cached_task(t.id) {
                        Some(task) => tasks.push(task),
                        None => {
                            let task = RenderedTask::new(r.render_task(t)?);
                            rendered.push(task.clone());
                            tasks.push(task);
                        }
                    }
                }
                Ok((tasks, rendered))
            })
            .await?;
        self.cache_tasks(generation, rendered);
        Ok(tasks.iter().map(|t| t.task.clone()).collect())
    }

    /// `GET /tasks/{id}`: from the cache of rendered tasks when it holds
    /// the task, without a storage read.
    pub async fn get_task(&self, actor: &Actor, id: Uuid) -> Result<Task> {
        Ok(self.rendered_task(actor, id).await?.task.clone())
    }

    /// `GET /tasks/{id}` as the JSON the API sends, serialised once per
    /// version of the task: the fast path for servers.
    pub async fn get_task_json(&self, actor: &Actor, id: Uuid) -> Result<Arc<str>> {
        Ok(self.rendered_task(actor, id).await?.json())
    }

    async fn rendered_task(&self, _actor: &Actor, id: Uuid) -> Result<Arc<RenderedTask>> {
        if let Some(task) = self.cached_task(id) {
            return Ok(task);
        }
        let generation = self.task_cache_generation();
        let task = RenderedTask::new(self.read(move |r| r.render_task(&r.task_required(id)?)).await?);
        self.cache_tasks(generation, [task.clone()]);
        Ok(task)
    }

    /// A task by id or key (`WEB-12`).
    pub async fn find_task(&self, _actor: &Actor, reference: &str) -> Result<Task> {
        let reference = reference.to_string();
        self.read(move |r| {
            let found = match reference.parse::<Uuid>() {
                Ok(id) => r.task(id)?,
                Err(_) => r.task_by_key(&reference)?,
            };
            let t = found.ok_or_else(|| Error::not_found(format!("task {reference} not found")))?;
            r.render_task(&t)
        })
        .await
    }
}
