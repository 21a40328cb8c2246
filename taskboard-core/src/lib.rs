//! # taskboard-core
//!
//! The whole Taskboard board as a library: members, projects, tasks with
//! steps, links and watchers, labels, chat messages and task comments,
//! uploads and project files, the audit log, credentials and the event
//! stream, stored in redb.
//!
//! Every rule of the specification lives here, so a program that embeds
//! this crate gets the same board as a user of the HTTP server.
#![forbid(unsafe_code)]

pub mod api;
pub mod archive;
pub mod blobs;
pub mod board;
pub mod credentials;
pub mod error;
pub mod events;
pub mod model;
pub mod records;
pub mod storage;
pub mod validate;

pub use board::{Actor, Board, BoardOptions};
pub use error::{Error, ErrorKind, Result};
pub use events::{Event, Subscription, Viewer};
