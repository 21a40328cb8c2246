//! `If-Match`: the resource a PATCH or DELETE changes, its current entity
//! tag read inside the transaction of the change, and the check of the
//! request's list against it. Each tag is the tag of the JSON the
//! resource's answers carry, so it equals the `ETag` a client last saw
//! exactly when nothing it shows changed.

use uuid::Uuid;

use crate::error::{Error, ErrorKind, Result};
use crate::records::{Records, Render};
use crate::storage::ReadTxn;
use crate::wire::{etag_listed, etag_of_wire};

/// The one resource a conditional endpoint changes, named by the ids of
/// its path: what its `If-Match` list is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Task(Uuid),
    /// A step, by its task and its id.
    Step(Uuid, Uuid),
    Member(Uuid),
    Project(Uuid),
    /// A project's file, by its project and its id.
    ProjectFile(Uuid, Uuid),
    Label(Uuid),
}

impl Resource {
    /// The resource's current entity tag, as `r` sees it; 404 when it
    /// does not exist.
    pub fn etag(self, r: &dyn ReadTxn) -> Result<Option<String>> {
        match self {
            Resource::Task(id) => etag_of_wire(&r.render_task(&r.task_required(id)?)?),
            Resource::Member(id) => etag_of_wire(&r.member_required(id)?.to_wire()),
            Resource::Project(id) => etag_of_wire(&r.project_required(id)?.to_wire()),
            Resource::ProjectFile(project, id) => {
                etag_of_wire(&r.render_project_file(&r.project_file_in(project, id)?)?)
            }
            Resource::Label(id) => {
                let l = r.label(id)?.ok_or_else(|| Error::not_found(format!("label {id} not found")))?;
                etag_of_wire(&l.to_wire())
            }
            Resource::Step(task, step) => {
                r.task_required(task)?;
                let s = r
                    .step(task, step)?
                    .ok_or_else(|| Error::not_found(format!("step {step} not found in task {task}")))?;
                etag_of_wire(&s.to_wire())
            }
        }
    }
}

/// A request's `If-Match` list and the resource it is about.
#[derive(Debug, Clone)]
pub struct IfMatch {
    /// The header's entity tags, as sent (`"a", W/"b"` or `*`).
    pub list: String,
    pub resource: Resource,
}

impl IfMatch {
    /// Checks the list against the resource's current tag as `r` sees
    /// it: 412 `precondition_failed` when the resource changed since.
    pub fn check(&self, r: &dyn ReadTxn) -> Result<()> {
        match self.resource.etag(r)? {
            Some(current) if !etag_listed(&self.list, &current) => Err(Error::new(
                ErrorKind::PreconditionFailed,
                format!("If-Match {} is not the current ETag {current}: the resource changed", self.list),
            )),
            _ => Ok(()),
        }
    }
}
