//! The local board every command can be performed on: the board in a
//! data directory, opened in this process and performing endpoints as
//! one member ([`BoardCaller`], through taskboard-core), as the typed
//! [`Client`](crate::client::Client) does for a server. Both implement
//! the core's [`Perform`](taskboard_core::Perform) and return the same
//! wire types, so a command prints the same JSON in either mode.

use std::path::PathBuf;

use taskboard_core::api::Caller;
use taskboard_core::{Board, BoardCaller, BoardOptions, Error, ErrorKind, Result};

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

/// The board at `place`, acting as the member `acting_as` (slug or id),
/// or as the first active owner when `None`, without credentials (the
/// user of the machine is trusted).
pub async fn open_local(place: &Place, acting_as: Option<&str>) -> Result<BoardCaller> {
    let board = open_board(place).await?;
    let actor = board.local_actor(acting_as).await?;
    Ok(BoardCaller { board, caller: Caller::member(actor) })
}
