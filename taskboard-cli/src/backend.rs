//! The one interface every command is written against, and its two
//! implementations: [`LocalBackend`] (the board in a data directory,
//! through taskboard-core) and [`RemoteBackend`] (a server, through the
//! typed [`Client`]). Both perform the core's endpoint declarations and
//! return the same wire types, so a command prints the same JSON in
//! either mode.

use std::path::PathBuf;

use taskboard_core::api::{
    self, Caller, Endpoint, GetMember, GetProject, GetTask, ListMembers, ListProjects, ListTasks,
    MemberListQuery, Page, ProjectListQuery, TaskFilter,
};
use taskboard_core::model::{Member, Project, Task};
use taskboard_core::{Board, BoardOptions, Error, ErrorKind, Result};
use uuid::Uuid;

use crate::client::Client;

/// Performs endpoints. References (`find_*`) accept what a person types:
/// ids, slugs and task keys.
// Used generically by the commands (never as `dyn`), so the futures'
// auto traits need not be spelled out.
#[allow(async_fn_in_trait)]
pub trait Backend {
    /// Performs the endpoint `E`.
    async fn call<E: Endpoint>(&self, path: E::Path, query: E::Query, body: E::Body) -> Result<E::Response>;

    /// A path as the board's machine reads it: a local one made absolute,
    /// a server's left as it is (it names a place on the server).
    fn local_path(&self, path: &str) -> Result<String> {
        Ok(path.to_string())
    }

    async fn find_member(&self, reference: &str) -> Result<Member> {
        if let Ok(id) = reference.parse::<Uuid>() {
            return self.call::<GetMember>(id, (), ()).await;
        }
        let query = MemberListQuery { include_inactive: true, page: Page::default() };
        let all = self.call::<ListMembers>((), query, ()).await?;
        all.into_iter()
            .find(|m| m.slug == reference)
            .ok_or_else(|| Error::not_found(format!("member {reference} not found")))
    }

    async fn find_project(&self, reference: &str) -> Result<Project> {
        if let Ok(id) = reference.parse::<Uuid>() {
            return self.call::<GetProject>(id, (), ()).await;
        }
        let query = ProjectListQuery { include_archived: true, page: Page::default() };
        let all = self.call::<ListProjects>((), query, ()).await?;
        all.into_iter()
            .find(|p| p.slug == reference)
            .ok_or_else(|| Error::not_found(format!("project {reference} not found")))
    }

    async fn find_task(&self, reference: &str) -> Result<Task> {
        if let Ok(id) = reference.parse::<Uuid>() {
            return self.call::<GetTask>(id, (), ()).await;
        }
        // A key names its project (`WEB-APP-12` is in `web-app`): asking
        // within it is what a token restricted to projects may do.
        let project_id = match reference.rsplit_once('-') {
            Some((prefix, n)) if n.parse::<u64>().is_ok() => {
                self.find_project(&prefix.to_lowercase()).await.ok().map(|p| p.id)
            }
            _ => None,
        };
        let filter = TaskFilter { q: Some(reference.to_string()), project_id, ..Default::default() };
        let found = self.call::<ListTasks>((), filter, ()).await?;
        found
            .into_iter()
            .find(|t| t.key.eq_ignore_ascii_case(reference))
            .ok_or_else(|| Error::not_found(format!("task {reference} not found")))
    }
}

// ---- local -----------------------------------------------------------------

/// The board of a data directory, opened in this process, acting as one
/// member without credentials (the user of the machine is trusted).
#[derive(Debug, Clone)]
pub struct LocalBackend {
    pub board: Board,
    pub caller: Caller,
}

/// Where a local board is kept: the embedded store in a data directory,
/// or a PostgreSQL database (`--database`), whose file contents are in
/// the data directory.
#[derive(Debug, Clone)]
pub struct Place {
    pub data_dir: PathBuf,
    pub database: Option<String>,
}

impl Place {
    /// How `init` is told to create this board.
    /// 404 saying how to make one, unless the place holds a board.
    pub async fn must_hold_board(&self) -> Result<()> {
        if Board::database_holds_board(self.database.as_deref(), &self.data_dir).await? {
            return Ok(());
        }
        Err(Error::not_found(format!(
            "no board in {}; create one with `{}`",
            self.describe(),
            self.init_hint()
        )))
    }

    fn init_hint(&self) -> String {
        match &self.database {
            None => format!("taskboard init --data-dir {}", self.data_dir.display()),
            Some(_) => format!("taskboard init --database URL --data-dir {}", self.data_dir.display()),
        }
    }

    /// What to call the board in messages.
    pub fn describe(&self) -> String {
        match &self.database {
            None => self.data_dir.display().to_string(),
            Some(_) => "the database".to_string(),
        }
    }
}

/// Opens the board at `place`. It must hold a board already (see
/// `taskboard init`); a database held by a running server is a conflict
/// whose message points at `--server`.
pub async fn open_board(place: &Place) -> Result<Board> {
    place.must_hold_board().await?;
    Board::open_database(place.database.as_deref(), &place.data_dir, BoardOptions::default()).await.map_err(
        |e| {
            if e.kind() == ErrorKind::Conflict {
                Error::conflict(format!(
                    "{}. While a server holds the board, talk to it instead: \
                     taskboard --server http://HOST:PORT … (or `taskboard login`)",
                    e.detail()
                ))
            } else {
                e
            }
        },
    )
}

impl LocalBackend {
    /// Acts as the member `acting_as` (slug or id), or as the first active
    /// owner when `None`.
    pub async fn open(place: &Place, acting_as: Option<&str>) -> Result<LocalBackend> {
        let board = open_board(place).await?;
        let actor = board.local_actor(acting_as).await?;
        Ok(LocalBackend { board, caller: Caller::member(actor) })
    }
}

impl Backend for LocalBackend {
    async fn call<E: Endpoint>(&self, path: E::Path, query: E::Query, body: E::Body) -> Result<E::Response> {
        api::call::<E>(&self.board, &self.caller, path, query, body).await
    }

    fn local_path(&self, path: &str) -> Result<String> {
        Ok(std::path::absolute(path)?.to_string_lossy().into_owned())
    }
}

// ---- remote ----------------------------------------------------------------

/// A server, through the typed client.
#[derive(Debug, Clone)]
pub struct RemoteBackend {
    pub client: Client,
}

impl Backend for RemoteBackend {
    async fn call<E: Endpoint>(&self, path: E::Path, query: E::Query, body: E::Body) -> Result<E::Response> {
        self.client.call::<E>(path, query, body).await
    }
}
