//! One way to call an endpoint, whoever performs it: the board in this
//! process, a server through the HTTP client, or the server's own board
//! for an MCP session. The command line and the MCP tools are written
//! once against [`Perform`], and so are the references they accept (ids,
//! slugs, task keys), which resolve through the endpoints' indexed
//! lookups rather than through whole lists.

use std::future::Future;

use uuid::Uuid;

use crate::api::{
    self, Caller, Endpoint, GetMe, GetMember, GetProject, GetTask, ListMembers, ListProjects, ListTasks,
    MemberListQuery, ProjectListQuery, TaskFilter,
};
use crate::board::Board;
use crate::error::{Error, Result};
use crate::model::{Member, Project, Task};
use crate::validate::Slug;

/// Performs endpoints as one member. The `find_*` and `*_id` methods
/// accept what a person or an agent types: ids, slugs and task keys.
pub trait Perform: Clone + Send + Sync + 'static {
    /// Performs the endpoint `E` and returns its typed answer, or the
    /// API's error (status, code and detail).
    fn call<E: Endpoint>(
        &self,
        path: E::Path,
        query: E::Query,
        body: E::Body,
    ) -> impl Future<Output = Result<E::Response>> + Send;

    /// The same performer presenting `lease` on its calls, as a request's
    /// `Taskboard-Lease` header does (docs/rules.md, fencing), unless it
    /// presents one already: a lease given with the calls wins over the
    /// one a session remembers.
    fn presenting(&self, lease: Uuid) -> Self;

    /// A path as the board's machine reads it: a local one made absolute,
    /// a server's left as it is (it names a place on the server).
    fn local_path(&self, path: &str) -> Result<String> {
        Ok(path.to_string())
    }

    /// The member with this id or slug (an inactive one too).
    fn find_member(&self, reference: &str) -> impl Future<Output = Result<Member>> + Send {
        async move {
            if let Ok(id) = reference.parse::<Uuid>() {
                return self.call::<GetMember>(id, (), ()).await;
            }
            // `me` is the caller wherever a member is asked (a member
            // whose slug is `me` is then named by its id).
            if reference == "me" {
                return self.call::<GetMe>((), (), ()).await;
            }
            let not_found = || Error::not_found(format!("member {reference} not found"));
            let slug = Slug::new(reference).map_err(|_| not_found())?;
            let query = MemberListQuery { include_inactive: true, slug: Some(slug), ..Default::default() };
            self.call::<ListMembers>((), query, ()).await?.into_items().pop().ok_or_else(not_found)
        }
    }

    /// The project with this id or slug (an archived one too).
    fn find_project(&self, reference: &str) -> impl Future<Output = Result<Project>> + Send {
        async move {
            if let Ok(id) = reference.parse::<Uuid>() {
                return self.call::<GetProject>(id, (), ()).await;
            }
            let not_found = || Error::not_found(format!("project {reference} not found"));
            let slug = Slug::new(reference).map_err(|_| not_found())?;
            let query = ProjectListQuery { include_archived: true, slug: Some(slug), ..Default::default() };
            self.call::<ListProjects>((), query, ()).await?.into_items().pop().ok_or_else(not_found)
        }
    }

    /// The task with this id or key (any case).
    fn find_task(&self, reference: &str) -> impl Future<Output = Result<Task>> + Send {
        async move {
            if let Ok(id) = reference.parse::<Uuid>() {
                return self.call::<GetTask>(id, (), ()).await;
            }
            // A key names its project (`WEB-APP-12` is in `web-app`):
            // asking within it is what a token restricted to projects may do.
            let project_id = match reference.rsplit_once('-') {
                Some((prefix, n)) if n.parse::<u64>().is_ok() => {
                    self.find_project(&prefix.to_lowercase()).await.ok().map(|p| p.id)
                }
                _ => None,
            };
            let filter = TaskFilter { q: Some(reference.to_string()), project_id, ..Default::default() };
            self.call::<ListTasks>((), filter, ())
                .await?
                .into_iter()
                .find(|t| t.key.eq_ignore_ascii_case(reference))
                .ok_or_else(|| Error::not_found(format!("task {reference} not found")))
        }
    }

    /// The id of the member with this id or slug, or of the caller for
    /// `me`.
    fn member_id(&self, reference: &str) -> impl Future<Output = Result<Uuid>> + Send {
        async move {
            match reference.parse::<Uuid>() {
                Ok(id) => Ok(id),
                Err(_) if reference == "me" => Ok(self.call::<GetMe>((), (), ()).await?.id),
                Err(_) => Ok(self.find_member(reference).await?.id),
            }
        }
    }

    /// The id of the project with this id or slug.
    fn project_id(&self, reference: &str) -> impl Future<Output = Result<Uuid>> + Send {
        async move {
            match reference.parse::<Uuid>() {
                Ok(id) => Ok(id),
                Err(_) => Ok(self.find_project(reference).await?.id),
            }
        }
    }

    /// The id of the task with this id or key.
    fn task_id(&self, reference: &str) -> impl Future<Output = Result<Uuid>> + Send {
        async move {
            match reference.parse::<Uuid>() {
                Ok(id) => Ok(id),
                Err(_) => Ok(self.find_task(reference).await?.id),
            }
        }
    }
}

/// The board of this process performing endpoints as one caller: the
/// command line's local mode, and the server's MCP sessions as the member
/// of each request.
#[derive(Debug, Clone)]
pub struct BoardCaller {
    pub board: Board,
    pub caller: Caller,
}

impl Perform for BoardCaller {
    fn call<E: Endpoint>(
        &self,
        path: E::Path,
        query: E::Query,
        body: E::Body,
    ) -> impl Future<Output = Result<E::Response>> + Send {
        api::call::<E>(&self.board, &self.caller, path, query, body)
    }

    fn presenting(&self, lease: Uuid) -> BoardCaller {
        let mut this = self.clone();
        this.caller.actor = this.caller.actor.map(|a| match a.lease() {
            Some(_) => a,
            None => a.presenting(Some(lease)),
        });
        this
    }

    /// The board reads paths on this machine: a relative one is made
    /// absolute here, where it was given.
    fn local_path(&self, path: &str) -> Result<String> {
        Ok(std::path::absolute(path)?.to_string_lossy().into_owned())
    }
}
