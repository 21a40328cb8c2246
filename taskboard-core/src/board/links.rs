//! Links between tasks and the dependency rules.

use std::collections::HashSet;

use serde_json::json;
use uuid::Uuid;

use super::{Actor, Board};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::{LinkType, TaskLink};
use crate::records::{LinkRecord, RecordWrites, Records, Render};
use crate::wire::NewLink;

/// Whether `from` reaches `to` through depends-on edges.
pub(super) fn depends_transitively(r: &(impl Records + ?Sized), from: Uuid, to: Uuid) -> Result<bool> {
    let mut stack = vec![from];
    let mut seen = HashSet::new();
    while let Some(node) = stack.pop() {
        if node == to {
            return Ok(true);
        }
        if seen.insert(node) {
            stack.extend(r.depends_on(node)?);
        }
    }
    Ok(false)
}

impl Board {
    /// `POST /tasks/{id}/links` (docs/rules.md, tasks).
    pub async fn create_link(&self, actor: &Actor, id: Uuid, new: NewLink) -> Result<TaskLink> {
        self.write_as(actor.request(), move |tx| {
            tx.w.task_required(id)?;
            if new.target_id == id {
                return Err(Error::bad_request("a task cannot be linked to itself"));
            }
            tx.w.task(new.target_id)?
                .ok_or_else(|| Error::not_found(format!("target task {} not found", new.target_id)))?;
            if tx
                .w
                .links_from(id)?
                .iter()
                .any(|l| l.target_id == new.target_id && l.link_type == new.link_type)
            {
                return Err(Error::conflict("this link already exists"));
            }
            let edge = match new.link_type {
                LinkType::DependsOn => Some((id, new.target_id)),
                LinkType::Blocks => Some((new.target_id, id)),
                LinkType::RelatesTo => None,
            };
            if let Some((depender, dependee)) = edge
                && depends_transitively(tx.w, dependee, depender)?
            {
                return Err(Error::invalid("target_id", "the link would create a dependency cycle"));
            }
            let l = LinkRecord {
                id: Uuid::now_v7(),
                source_id: id,
                target_id: new.target_id,
                link_type: new.link_type,
                created_at: tx.now,
            };
            tx.w.put_link(&l)?;
            let link = tx.w.render_link(&l)?;
            tx.emit_all(EventKind::LinkCreated, &link)?;
            Ok(link)
        })
        .await
    }

    /// `GET /tasks/{id}/links`: links from and to the task.
    pub async fn list_links(&self, id: Uuid) -> Result<Vec<TaskLink>> {
        self.read(move |r| {
            r.task_required(id)?;
            let mut links = r.links_from(id)?;
            links.extend(r.links_to(id)?);
            links.sort_by_key(|l| l.id);
            links.iter().map(|l| r.render_link(l)).collect()
        })
        .await
    }

    /// `DELETE /tasks/{id}/links/{link_id}`.
    pub async fn delete_link(&self, actor: &Actor, id: Uuid, link_id: Uuid) -> Result<()> {
        self.write_as(actor.request(), move |tx| {
            let l = tx.w.link(link_id)?.filter(|l| l.source_id == id || l.target_id == id);
            let l = l.ok_or_else(|| Error::not_found(format!("link {link_id} not found on task {id}")))?;
            tx.w.delete_link(&l)?;
            tx.emit_all(
                EventKind::LinkDeleted,
                json!({"id": l.id, "source_id": l.source_id, "target_id": l.target_id}),
            )
        })
        .await
    }
}
