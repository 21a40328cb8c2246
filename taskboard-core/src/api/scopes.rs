//! The one check of an access token against the endpoint it calls: the
//! scope the declaration names, and the projects the request is about
//! (docs/rules.md, access tokens). Every way of calling an endpoint (the
//! server, MCP over HTTP and stdio, the command line's local mode and an
//! embedding program through [`super::call`]) passes here.

use std::sync::Arc;

use uuid::Uuid;

use super::endpoint::{Call, Caller, Endpoint, PathParams, QueryParams, RequestBody};
use crate::board::Board;
use crate::error::{Error, Result};
use crate::tokens::Grant;

/// The fields of a query or body that name what a request is about.
const NAMING_FIELDS: [&str; 3] = ["project_id", "task_id", "chat_id"];

/// The fields of a body that name other tasks the request ties to its own
/// (a link's target, a parent, dependencies): a project-limited token may
/// not reach into another project through them (docs/decisions.md, 20.h).
const TASK_FIELDS: [&str; 3] = ["target_id", "parent_id", "depends_on"];

/// The path parameters that name what a request is about.
const NAMING_PARAMS: [&str; 5] = ["project_id", "task_id", "run_id", "chat_id", "message_id"];

/// The ids of `call` that tell its project, each with what it names.
fn references<E: Endpoint>(call: &Call<E>) -> Vec<(&'static str, Uuid)> {
    let mut out = Vec::new();
    let names = E::INFO.path.split('/').filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'));
    for (name, id) in names.zip(call.path.ids()) {
        if let Some(known) = NAMING_PARAMS.iter().find(|n| **n == name) {
            out.push((*known, id));
        }
    }
    let query = call.query.to_json().ok();
    let body = call.body.json_view();
    for value in [query, body].into_iter().flatten() {
        let serde_json::Value::Object(map) = value else { continue };
        for name in NAMING_FIELDS {
            if let Some(id) = map.get(name).and_then(|v| v.as_str()).and_then(|s| s.parse::<Uuid>().ok()) {
                out.push((name, id));
            }
        }
        for name in TASK_FIELDS {
            let ids = match map.get(name) {
                Some(serde_json::Value::Array(items)) => items.iter().collect(),
                Some(one) => vec![one],
                None => Vec::new(),
            };
            out.extend(
                ids.into_iter().filter_map(|v| v.as_str()?.parse::<Uuid>().ok()).map(|id| ("task_id", id)),
            );
        }
    }
    out
}

/// Refuses (403, naming the scope or the project) a call beyond the
/// caller's access token; a caller without one passes. What the call
/// names is read before the future is made, so the future does not hold
/// the call.
pub fn permit<E: Endpoint>(
    board: &Board,
    caller: &Caller,
    call: &Call<E>,
) -> impl Future<Output = Result<()>> + Send + use<E> {
    let pending = pending::<E>(caller, call);
    let board = board.clone();
    async move {
        let Some((grant, references)) = pending? else { return Ok(()) };
        for (project, slug) in board.projects_of(references).await? {
            if !grant.allows_project(project) {
                return Err(Error::forbidden(format!(
                    "this access token is not for project {slug} ({project})"
                )));
            }
        }
        Ok(())
    }
}

/// What is left to check once the scope has passed: the projects of the
/// call, when the token is restricted to projects.
type Pending = Option<(Arc<Grant>, Vec<(&'static str, Uuid)>)>;

fn pending<E: Endpoint>(caller: &Caller, call: &Call<E>) -> Result<Pending> {
    if !E::INFO.auth {
        return Ok(None);
    }
    let Some(grant) = caller.actor.as_ref().and_then(|a| a.grant.clone()) else { return Ok(None) };
    grant.require(E::SCOPE)?;
    let Some(allowed) = &grant.project_ids else { return Ok(None) };
    if E::BOARD_WIDE {
        return Ok(None);
    }
    let references = references(call);
    if references.is_empty() {
        return Err(Error::forbidden(format!(
            "this access token is restricted to {} project(s); {} {} names none of them (give a \
             project_id or task_id)",
            allowed.len(),
            E::INFO.method.as_str(),
            E::INFO.path
        )));
    }
    Ok(Some((grant, references)))
}
