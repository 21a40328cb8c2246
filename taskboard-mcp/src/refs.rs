//! Tasks, members and projects named the way an agent reads them: a task
//! by its key (`WEB-12`), a member or project by its slug, any of them by
//! id. The arguments name them; [`Perform`]'s resolvers find them, as
//! they do for the command line.

use serde_json::{Map, Value, json};
use taskboard_wire::{Error, Perform, Result};
use uuid::Uuid;

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
            Kind::Task => b.task_id(reference).await,
            Kind::Member => b.member_id(reference).await,
            Kind::Project => b.project_id(reference).await,
        }
    }
}
