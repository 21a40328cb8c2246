//! Local mode: `taskboard --data-dir DIR agent run`. A local board is
//! held by one process, and the agents' processes must reach it (over
//! HTTP with `TASKBOARD_SERVER`, and through the board's MCP server), so
//! the runner opens the board by serving it itself, on a loopback port
//! of its own, and then acts exactly as in remote mode against it.

use std::net::SocketAddr;

use taskboard_core::{Error, ErrorKind, Result};
use taskboard_server::{Config, Server, ServerHandle};

use crate::backend::Place;

/// The board of `place`, served on 127.0.0.1 on a free port until
/// [`LocalBoard::stop`].
pub struct LocalBoard {
    handle: ServerHandle,
}

impl LocalBoard {
    pub async fn serve(place: &Place) -> Result<LocalBoard> {
        place.must_hold_board().await?;
        let mut config = Config::new(&place.data_dir);
        config.database = place.database.clone();
        config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        let server = Server::bind(config).await.map_err(|e| match e.downcast_ref::<Error>() {
            Some(e) if e.kind() == ErrorKind::Conflict => Error::conflict(format!(
                "{}. While a server holds the board, run the agents against it: \
                 taskboard --server http://HOST:PORT agent run …",
                e.detail()
            )),
            Some(e) => e.clone(),
            None => Error::internal(format!("cannot serve the board of {}: {e}", place.describe())),
        })?;
        Ok(LocalBoard { handle: server.spawn() })
    }

    /// Where the agents reach the board.
    pub fn url(&self) -> String {
        format!("http://{}", self.handle.addr())
    }

    /// Stops serving, once the runner has stopped, and closes the board.
    pub async fn stop(self) {
        self.handle.shutdown().await;
    }
}
