//! Bulk import of the work of other trackers (docs/import.md): the
//! records a reader of their files made, and the plan the board answers.

use crate::endpoint::{Endpoint, Info, Method};
use crate::{ImportPlan, ImportRequest};
use uuid::Uuid;

/// `POST /projects/{id}/import`.
#[derive(Debug)]
pub struct ImportTasks;

impl Endpoint for ImportTasks {
    const INFO: Info = Info {
        name: "import_tasks",
        method: Method::Post,
        path: "/api/v1/projects/{project_id}/import",
        auth: true,
        status: 200,
        summary: "Import tasks from another tracker (admins and owners)",
        description: "Applies up to 1,000 records of one `source` in one transaction: all of them or none. \
            A record whose `external_ref` (source and id) names a task of the project updates that task \
            where it differs; any other creates one, keeping its creation time, comments with their \
            authors and times, and a note in the audit log of where it came from. Parents and links name \
            other records by their source id, in this request or imported before. Assignees and comment \
            authors are matched by slug, email or name, or created as inactive humans with \
            `create_members`. Missing labels are created. With `dry_run` nothing changes and the answer \
            is the plan: create, update, unchanged or skip (with the reason) for each record.",
        errors: &[403, 404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ImportRequest;
    type Response = ImportPlan;
}
