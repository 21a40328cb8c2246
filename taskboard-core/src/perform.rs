//! The board of this process as a performer of endpoints
//! ([`BoardCaller`]): it serves every endpoint the core handles, so the
//! command line's local mode and the server's MCP sessions call the board
//! through the wire's [`Perform`], as a client calls a server.

use std::future::Future;

use uuid::Uuid;

use crate::api::{self, Caller, Handle};
use crate::board::Board;
use crate::error::Result;
use crate::wire::perform::{Perform, Serve};

/// The board of this process performing endpoints as one caller: the
/// command line's local mode, and the server's MCP sessions as the member
/// of each request.
#[derive(Debug, Clone)]
pub struct BoardCaller {
    pub board: Board,
    pub caller: Caller,
}

impl<E: Handle> Serve<E> for BoardCaller {
    fn serve(
        &self,
        path: E::Path,
        query: E::Query,
        body: E::Body,
    ) -> impl Future<Output = Result<E::Response>> + Send {
        api::call::<E>(&self.board, &self.caller, path, query, body)
    }
}

impl Perform for BoardCaller {
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
