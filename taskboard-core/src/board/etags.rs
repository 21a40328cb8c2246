//! The current entity tag of each resource a PATCH or DELETE may be
//! conditional on, read inside the transaction of the change. Each is
//! the tag of the JSON the resource's answers carry, so it equals the
//! `ETag` a client last saw exactly when nothing it shows changed.

use uuid::Uuid;

use crate::error::{Error, Result};
use crate::records::{Records, Render};
use crate::storage::ReadTxn;
use crate::wire::etag_of_wire;

pub fn task(r: &dyn ReadTxn, id: Uuid) -> Result<Option<String>> {
    etag_of_wire(&r.render_task(&r.task_required(id)?)?)
}

pub fn member(r: &dyn ReadTxn, id: Uuid) -> Result<Option<String>> {
    etag_of_wire(&r.member_required(id)?.to_wire())
}

pub fn project(r: &dyn ReadTxn, id: Uuid) -> Result<Option<String>> {
    etag_of_wire(&r.project_required(id)?.to_wire())
}

pub fn project_file(r: &dyn ReadTxn, project: Uuid, id: Uuid) -> Result<Option<String>> {
    etag_of_wire(&r.render_project_file(&super::files::file_in_project(r, project, id)?)?)
}

pub fn label(r: &dyn ReadTxn, id: Uuid) -> Result<Option<String>> {
    let l = r.label(id)?.ok_or_else(|| Error::not_found(format!("label {id} not found")))?;
    etag_of_wire(&l.to_wire())
}

pub fn step(r: &dyn ReadTxn, task: Uuid, step: Uuid) -> Result<Option<String>> {
    r.task_required(task)?;
    let s = r
        .step(task, step)?
        .ok_or_else(|| Error::not_found(format!("step {step} not found in task {task}")))?;
    etag_of_wire(&s.to_wire())
}
