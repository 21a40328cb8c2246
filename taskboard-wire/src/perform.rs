//! One way to call an endpoint, whoever performs it: the board in the
//! same process, a server through the HTTP client, or the server's own
//! board for an MCP session. The command line and the MCP tools are
//! written once against [`Perform`], and so are the references they
//! accept (ids, slugs, task keys), which resolve through the endpoints'
//! indexed lookups rather than through whole lists.

use std::future::Future;

use uuid::Uuid;

use crate::api::{GetMe, GetMember, GetProject, GetTask, ListMembers, ListProjects, ListTasks};
use crate::endpoint::Endpoint;
use crate::error::{Error, Result};
use crate::model::{Member, Project, Task};
use crate::validate::Slug;
use crate::{MemberListQuery, ProjectListQuery, TaskFilter};

/// One endpoint performed: by the board for every endpoint it handles, by
/// an HTTP client for every declared one.
pub trait Serve<E: Endpoint> {
    /// Performs `E` and returns its typed answer, or the API's error.
    fn serve(
        &self,
        path: E::Path,
        query: E::Query,
        body: E::Body,
    ) -> impl Future<Output = Result<E::Response>> + Send;
}

macro_rules! serve_all {
    ($($endpoint:path),* $(,)?) => {
        /// Every endpoint performed: what [`Perform`] asks of a performer,
        /// so a generic caller may call any endpoint by name. A board
        /// lacking the handler of one endpoint does not compile.
        pub trait ServeAll: $(Serve<$endpoint> +)* {}

        impl<T: $(Serve<$endpoint> +)*> ServeAll for T {}
    };
}
crate::every_endpoint!(serve_all);

/// Performs endpoints as one member. The `find_*` and `*_id` methods
/// accept what a person or an agent types: ids, slugs and task keys.
pub trait Perform: Clone + Send + Sync + 'static + ServeAll {
    /// Performs the endpoint `E` and returns its typed answer, or the
    /// API's error (status, code and detail).
    fn call<E: Endpoint>(
        &self,
        path: E::Path,
        query: E::Query,
        body: E::Body,
    ) -> impl Future<Output = Result<E::Response>> + Send
    where
        Self: Serve<E>,
    {
        Serve::<E>::serve(self, path, query, body)
    }

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
