//! Tasks, members and projects named the way an agent reads them: a task
//! by its key (`WEB-12`), a member or project by its slug, any of them by
//! id. Each is found through the same endpoints a person would use.

use serde_json::{Map, Value, json};
use taskboard_core::api::{
    GetMe, GetProject, GetTask, ListMembers, ListProjects, ListTasks, MemberListQuery, Page,
    ProjectListQuery, TaskFilter,
};
use taskboard_core::model::{Project, Task};
use taskboard_core::{Error, Result};
use uuid::Uuid;

use crate::Perform;

pub(crate) fn task_ref() -> Value {
    json!({"type": "string", "description": "Task key (e.g. WEB-12) or id"})
}

pub(crate) fn member_ref() -> Value {
    json!({"type": "string", "description": "Member slug, `me`, or id"})
}

pub(crate) fn project_ref() -> Value {
    json!({"type": "string", "description": "Project slug or id"})
}

/// Takes the string argument `name` out of `args`.
pub(crate) fn take_str(args: &mut Map<String, Value>, name: &str) -> Result<Option<String>> {
    match args.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Error::invalid(name, "must be a string")),
    }
}

/// Takes the required string argument `name` out of `args`.
pub(crate) fn need_str(args: &mut Map<String, Value>, name: &str) -> Result<String> {
    take_str(args, name)?.ok_or_else(|| Error::invalid(name, "missing argument"))
}

pub(crate) async fn task<B: Perform>(b: &B, reference: &str) -> Result<Task> {
    if let Ok(id) = reference.parse::<Uuid>() {
        return b.call::<GetTask>(id, (), ()).await;
    }
    // A key names its project (`WEB-APP-12` is in `web-app`): asking
    // within it is what a token restricted to projects may do.
    let project_id = match reference.rsplit_once('-') {
        Some((prefix, n)) if n.parse::<u64>().is_ok() => {
            project(b, &prefix.to_lowercase()).await.ok().map(|p| p.id)
        }
        _ => None,
    };
    let filter = TaskFilter { q: Some(reference.to_string()), project_id, ..Default::default() };
    b.call::<ListTasks>((), filter, ())
        .await?
        .into_iter()
        .find(|t| t.key.eq_ignore_ascii_case(reference))
        .ok_or_else(|| Error::not_found(format!("task {reference} not found")))
}

pub(crate) async fn task_id<B: Perform>(b: &B, reference: &str) -> Result<Uuid> {
    match reference.parse::<Uuid>() {
        Ok(id) => Ok(id),
        Err(_) => Ok(task(b, reference).await?.id),
    }
}

pub(crate) async fn member_id<B: Perform>(b: &B, reference: &str) -> Result<Uuid> {
    if let Ok(id) = reference.parse::<Uuid>() {
        return Ok(id);
    }
    if reference == "me" {
        return Ok(b.call::<GetMe>((), (), ()).await?.id);
    }
    let query = MemberListQuery { include_inactive: true, page: Page::default() };
    b.call::<ListMembers>((), query, ())
        .await?
        .into_iter()
        .find(|m| m.slug == reference)
        .map(|m| m.id)
        .ok_or_else(|| Error::not_found(format!("member {reference} not found")))
}

pub(crate) async fn project<B: Perform>(b: &B, reference: &str) -> Result<Project> {
    if let Ok(id) = reference.parse::<Uuid>() {
        return b.call::<GetProject>(id, (), ()).await;
    }
    let query = ProjectListQuery { include_archived: true, page: Page::default() };
    b.call::<ListProjects>((), query, ())
        .await?
        .into_iter()
        .find(|p| p.slug == reference)
        .ok_or_else(|| Error::not_found(format!("project {reference} not found")))
}

/// Replaces the argument `arg` (a reference) by the id it names under
/// `field`; `null` stays `null` (a PATCH clearing the field).
pub(crate) async fn resolve<B: Perform>(
    b: &B,
    args: &mut Map<String, Value>,
    arg: &str,
    field: &str,
    kind: Kind,
) -> Result<()> {
    let value = match args.remove(arg) {
        None => return Ok(()),
        Some(Value::Null) => Value::Null,
        Some(Value::String(r)) => json!(kind.id(b, &r).await?),
        Some(Value::Array(items)) => {
            let mut ids = Vec::with_capacity(items.len());
            for item in items {
                let r = item.as_str().ok_or_else(|| Error::invalid(arg, "must be a list of strings"))?;
                ids.push(kind.id(b, r).await?);
            }
            json!(ids)
        }
        Some(_) => return Err(Error::invalid(arg, "must be a string")),
    };
    args.insert(field.to_string(), value);
    Ok(())
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Task,
    Member,
    Project,
}

impl Kind {
    async fn id<B: Perform>(self, b: &B, reference: &str) -> Result<Uuid> {
        match self {
            Kind::Task => task_id(b, reference).await,
            Kind::Member => member_id(b, reference).await,
            Kind::Project => match reference.parse::<Uuid>() {
                Ok(id) => Ok(id),
                Err(_) => Ok(project(b, reference).await?.id),
            },
        }
    }
}
