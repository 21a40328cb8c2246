//! # taskboard-core
//!
//! The whole Taskboard board as a library: members, projects, tasks with
//! steps, links and watchers, labels, chat messages and task comments,
//! uploads and project files, the audit log, credentials and the event
//! stream, stored in redb.
//!
//! Every rule of the board (docs/rules.md) lives here, so a program that embeds
//! this crate gets the same board as a user of the HTTP server.
//!
//! ```
//! use taskboard_core::api::{NewProject, NewTask};
//! use taskboard_core::validate::{Name, Slug, Title};
//! use taskboard_core::{Board, BoardOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // `Board::open(dir, options)` keeps the board in a data directory.
//! let board = Board::open_in_memory(BoardOptions::default()).await?;
//! let boot = board.bootstrap_owner(Slug::new("owner")?, None).await?.expect("the board is empty");
//! let owner = board.actor(boot.owner.id).await?;
//! let project = NewProject {
//!     name: Name::new("Web app")?,
//!     slug: Slug::new("web-app")?,
//!     description: None,
//!     repo_urls: vec![],
//!     auto_assign: false,
//! };
//! let project = board.create_project(&owner, project).await?;
//! let task = board.create_task(&owner, project.id, NewTask::titled(Title::new("Fix login")?)).await?;
//! assert_eq!(task.key, "WEB-APP-1");
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod api;
pub mod archive;
mod backup;
pub mod blobs;
pub mod board;
pub mod credentials;
pub mod events;
pub mod oidc;
mod perform;
pub mod records;
pub mod redact;
pub mod review;
pub mod runs;
pub mod tls;
pub mod tokens;
pub mod webhooks;

pub use taskboard_store::{self as storage, metrics, private};
pub use taskboard_wire::{self as wire, error, model, validate};

pub use board::{Actor, Board, BoardOptions};
pub use error::{Error, ErrorKind, Result};
pub use events::{Event, Subscription, Viewer};
pub use perform::BoardCaller;
pub use taskboard_wire::perform::{Perform, Serve, ServeAll};
