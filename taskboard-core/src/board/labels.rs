//! Global labels and the labels of tasks.

use serde_json::json;
use uuid::Uuid;

use super::pages::{IndexList, ItemFn, List};
use super::{Actor, Board, Tx};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::{AuditAction, Label};
use crate::records::{LabelRecord, RecordWrites, Records};
use crate::storage::Direction;
use crate::storage::codec::uuid_value;
use crate::storage::tables::{LABEL_NAME, LABEL_TASKS, LABELS};
use crate::validate::LabelName;
use crate::wire::{CursorKind, LabelPatch, NewLabel, Page};

/// Label ids for names, creating the labels that do not exist yet with
/// the default colour (docs/rules.md, tasks).
pub(super) fn label_ids(tx: &mut Tx<'_>, names: &[LabelName]) -> Result<Vec<Uuid>> {
    let mut ids = Vec::with_capacity(names.len());
    for name in names {
        let id = match tx.w.label_by_name(name)? {
            Some(l) => l.id,
            None => {
                let l = LabelRecord {
                    id: Uuid::now_v7(),
                    name: name.to_string(),
                    color: crate::validate::Color::DEFAULT.to_string(),
                };
                tx.w.put_label(None, &l)?;
                tx.emit_all(EventKind::LabelCreated, l.to_wire())?;
                l.id
            }
        };
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

pub(super) fn label_names(r: &(impl Records + ?Sized), ids: &[Uuid]) -> Result<Vec<String>> {
    let mut names = Vec::with_capacity(ids.len());
    for &id in ids {
        if let Some(l) = r.label(id)? {
            names.push(l.name);
        }
    }
    Ok(names)
}

impl Board {
    /// `POST /tasks/{id}/labels/{label_id}` (idempotent) and `DELETE`.
    pub async fn set_task_label(&self, actor: &Actor, id: Uuid, label: Uuid, on: bool) -> Result<()> {
        let me = actor.id();
        self.write_as(actor.request(), move |tx| {
            let old = tx.w.task_required(id)?;
            tx.w.label(label)?.ok_or_else(|| Error::not_found(format!("label {label} not found")))?;
            let mut t = old.clone();
            if on && !t.label_ids.contains(&label) {
                t.label_ids.push(label);
            }
            if !on {
                t.label_ids.retain(|l| *l != label);
            }
            Board::save_task_change(tx, me, &old, t, AuditAction::Updated).map(|_| ())
        })
        .await
    }

    pub async fn add_task_label(&self, actor: &Actor, id: Uuid, label: Uuid) -> Result<()> {
        self.set_task_label(actor, id, label, true).await
    }

    pub async fn remove_task_label(&self, actor: &Actor, id: Uuid, label: Uuid) -> Result<()> {
        self.set_task_label(actor, id, label, false).await
    }

    /// `GET /labels`, by name.
    pub fn list_labels(&self, page: Page) -> List<Label> {
        self.index_list(labels_list(), page, |_| Ok(()))
    }

    /// `GET /labels/{id}`.
    pub async fn get_label(&self, id: Uuid) -> Result<Label> {
        self.read(move |r| match r.label(id)? {
            Some(l) => Ok(l.to_wire()),
            None => Err(Error::not_found(format!("label {id} not found"))),
        })
        .await
    }

    /// `POST /labels`: names are unique regardless of case (409).
    pub async fn create_label(&self, actor: &Actor, new: NewLabel) -> Result<Label> {
        self.write_as(actor.request(), move |tx| {
            if tx.w.label_by_name(&new.name)?.is_some() {
                return Err(Error::conflict(format!("label {:?} already exists", new.name.as_str())));
            }
            let l = LabelRecord {
                id: Uuid::now_v7(),
                name: new.name.to_string(),
                color: new.color.as_str().to_string(),
            };
            tx.w.put_label(None, &l)?;
            tx.emit_all(EventKind::LabelCreated, l.to_wire())?;
            Ok(l.to_wire())
        })
        .await
    }

    /// `PATCH /labels/{id}`: a rename shows on every task at once, since
    /// tasks hold label ids.
    pub async fn update_label(&self, actor: &Actor, id: Uuid, patch: LabelPatch) -> Result<Label> {
        self.write_as(actor.request(), move |tx| {
            let old = tx.w.label(id)?.ok_or_else(|| Error::not_found(format!("label {id} not found")))?;
            let mut l = old.clone();
            if let Some(name) = patch.name.value() {
                if let Some(other) = tx.w.label_by_name(&name)?
                    && other.id != id
                {
                    return Err(Error::conflict(format!("label {:?} already exists", name.as_str())));
                }
                l.name = name.to_string();
            }
            if let Some(color) = patch.color.value() {
                l.color = color.as_str().to_string();
            }
            tx.w.put_label(Some(&old), &l)?;
            tx.emit_all(EventKind::LabelUpdated, l.to_wire())?;
            Ok(l.to_wire())
        })
        .await
    }

    /// `DELETE /labels/{id}`: removed from every task too.
    pub async fn delete_label(&self, actor: &Actor, id: Uuid) -> Result<()> {
        self.write_as(actor.request(), move |tx| {
            let l = tx.w.label(id)?.ok_or_else(|| Error::not_found(format!("label {id} not found")))?;
            for tid in tx.w.ids_with_prefix(LABEL_TASKS, id.as_bytes(), Direction::Forward)? {
                if let Some(old) = tx.w.task(tid)? {
                    let mut t = old.clone();
                    t.label_ids.retain(|x| *x != id);
                    tx.w.put_task(Some(&old), &t)?;
                }
            }
            tx.w.delete(LABEL_NAME, l.name.to_lowercase().as_bytes())?;
            tx.w.delete(LABELS, id.as_bytes())?;
            tx.emit_all(EventKind::LabelDeleted, json!({"id": id, "name": l.name}))
        })
        .await
    }
}

/// Labels by name.
fn labels_list() -> IndexList<impl ItemFn<Label>> {
    IndexList::new(CursorKind::Labels, LABEL_NAME, &[], |r, _, v| {
        Ok(r.label(uuid_value(v)?)?.map(|l| l.to_wire()))
    })
}
