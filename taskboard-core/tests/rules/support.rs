//! Fixtures and typed helpers shared by the rule tests: a fresh board per
//! test (redb in memory, or a redb file in a temporary directory when
//! storage is part of what is tested), its bootstrap owner, and short
//! constructors for members, projects and tasks.
//!
//! The test binary `rules_postgres` runs the same tests with every board
//! that is not explicitly on disk kept in PostgreSQL instead: a schema of
//! its own in a throwaway cluster the test process starts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use taskboard_core::api::{NewMember, NewProject, NewTask};
use taskboard_core::model::*;
use taskboard_core::validate::{LabelName, Name, Slug, Title};
use taskboard_core::{Actor, Board, BoardOptions, ErrorKind, Event, Result, Subscription};
use uuid::Uuid;

pub const OWNER_PASSWORD: &str = "owner-password";

/// A board with its bootstrap owner.
pub struct Fx {
    pub board: Board,
    pub owner: Actor,
    pub dir: Option<tempfile::TempDir>,
    /// The file contents of a board kept in PostgreSQL, removed with the
    /// fixture.
    pub _blobs: Option<tempfile::TempDir>,
}

/// Whether this test binary keeps its boards in PostgreSQL.
pub fn on_postgres() -> bool {
    env!("CARGO_CRATE_NAME") == "rules_postgres"
}

/// A board in memory: redb's in-memory backend.
pub async fn board() -> Fx {
    board_with(BoardOptions::default()).await
}

pub async fn board_with(options: BoardOptions) -> Fx {
    if on_postgres() {
        let blobs = tempfile::tempdir().unwrap();
        let url = taskboard_pg_scratch::Scratch::shared().fresh_url();
        let board = Board::open_postgres(&url, blobs.path(), options).await.unwrap();
        let owner = bootstrap(&board).await;
        return Fx { board, owner, dir: None, _blobs: Some(blobs) };
    }
    let board = Board::open_in_memory(options).await.unwrap();
    let owner = bootstrap(&board).await;
    Fx { board, owner, dir: None, _blobs: None }
}

/// A board kept in a redb file in a temporary directory.
pub async fn board_on_disk() -> Fx {
    board_on_disk_with(BoardOptions::default()).await
}

pub async fn board_on_disk_with(options: BoardOptions) -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let board = Board::open(dir.path(), options).await.unwrap();
    let owner = bootstrap(&board).await;
    Fx { board, owner, dir: Some(dir), _blobs: None }
}

async fn bootstrap(board: &Board) -> Actor {
    let boot = board
        .bootstrap_owner(
            slug("owner"),
            Some(taskboard_core::validate::Password::new(OWNER_PASSWORD).unwrap()),
        )
        .await
        .unwrap()
        .expect("a fresh board is empty");
    board.actor(boot.owner.id).await.unwrap()
}

impl Fx {
    /// The board performing endpoints as the owner, with the resolvers of
    /// keys and slugs every client uses.
    pub fn performer(&self) -> taskboard_core::BoardCaller {
        let caller = taskboard_core::api::Caller::member(self.owner.clone());
        taskboard_core::BoardCaller { board: self.board.clone(), caller }
    }

    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("a board on disk").path()
    }

    /// Closes the board and opens the same data directory again. The
    /// test's handle is the last one, so dropping it closes the database.
    pub async fn reopen(self) -> Fx {
        let Fx { board, owner, dir, .. } = self;
        let dir = dir.expect("only a board on disk can be reopened");
        let options = board.options().clone();
        drop(board);
        let board = Board::open(dir.path(), options).await.unwrap();
        let owner = board.actor(owner.id()).await.unwrap();
        Fx { board, owner, dir: Some(dir), _blobs: None }
    }

    /// Adds `member` to `project` (the owner does), if it is not in it.
    pub async fn join(&self, project: Uuid, member: &Actor) {
        match self.board.add_project_member(&self.owner, project, member.id()).await {
            Ok(()) => {}
            Err(e) if e.kind() == taskboard_core::ErrorKind::Conflict => {}
            Err(e) => panic!("{e}"),
        }
    }

    /// A human member created by the owner.
    pub async fn human(&self, s: &str, role: Role) -> Actor {
        let m = self
            .board
            .create_member(
                &self.owner,
                NewMember {
                    name: name(&format!("{s} name")),
                    slug: slug(s),
                    kind: MemberType::Human,
                    role,
                    agent_config: None,
                },
            )
            .await
            .unwrap();
        self.board.actor(m.id).await.unwrap()
    }

    /// An agent created by the owner, with its token.
    pub async fn agent_with(&self, s: &str, config: AgentConfig) -> (Actor, String) {
        let m = self
            .board
            .create_member(
                &self.owner,
                NewMember {
                    name: name(&format!("{s} name")),
                    slug: slug(s),
                    kind: MemberType::Agent,
                    role: Role::Member,
                    agent_config: Some(config),
                },
            )
            .await
            .unwrap();
        (self.board.actor(m.id).await.unwrap(), m.token.expect("agents get a token"))
    }

    pub async fn agent(&self, s: &str) -> Actor {
        self.agent_with(s, AgentConfig::default()).await.0
    }

    /// A project created by the owner.
    pub async fn project(&self, s: &str) -> Project {
        self.project_by(&self.owner, s).await
    }

    pub async fn project_by(&self, actor: &Actor, s: &str) -> Project {
        self.board.create_project(actor, new_project(s)).await.unwrap()
    }

    /// A task with default fields, created by the owner.
    pub async fn task(&self, project: &Project, t: &str) -> Task {
        self.board.create_task(&self.owner, project.id, new_task(t)).await.unwrap()
    }

    pub async fn task_with(&self, project: &Project, new: NewTask) -> Task {
        self.board.create_task(&self.owner, project.id, new).await.unwrap()
    }

    pub async fn get(&self, task: Uuid) -> Task {
        self.board.get_task(&self.owner, task).await.unwrap()
    }
}

pub fn new_project(s: &str) -> NewProject {
    NewProject {
        name: name(&format!("{s} project")),
        slug: slug(s),
        description: None,
        repo_urls: Vec::new(),
        auto_assign: false,
    }
}

pub fn new_task(t: &str) -> NewTask {
    NewTask::titled(title(t))
}

pub fn slug(s: &str) -> Slug {
    Slug::new(s).unwrap()
}

pub fn name(s: &str) -> Name {
    Name::new(s).unwrap()
}

pub fn title(s: &str) -> Title {
    Title::new(s).unwrap()
}

pub fn labels(names: &[&str]) -> Vec<LabelName> {
    names.iter().map(|n| LabelName::new(*n).unwrap()).collect()
}

/// The kind of the error of a result that must have failed.
#[track_caller]
pub fn kind<T: std::fmt::Debug>(result: Result<T>) -> ErrorKind {
    match result {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e.kind(),
    }
}

/// Every event of a subscription so far: the replay, then what was
/// published since, from memory or the store. Events are published before
/// a write returns, so after awaiting an operation its events are all here.
pub fn drain(sub: &mut Subscription) -> Vec<Arc<Event>> {
    let mut out = Vec::new();
    while let Some(e) = sub.try_next_blocking().expect("the subscription keeps up") {
        out.push(e);
    }
    out
}

pub fn kinds(events: &[Arc<Event>]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

/// Every regular file under a directory, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
