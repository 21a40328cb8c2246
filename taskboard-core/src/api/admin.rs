//! Administration and the event stream.

use super::endpoint::Handle;
use super::endpoint::{Call, Caller, Upgrade};
use crate::archive::ArchiveSummary;
use crate::board::Board;
use crate::error::Result;
use crate::wire::api::{Backup, EventStream};

impl Handle for Backup {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<ArchiveSummary> {
        board.backup_archive(caller.actor()?, call.body.path.into()).await
    }
}

impl Handle for EventStream {
    async fn handle(_: &Board, _: &Caller, call: Call<Self>) -> Result<Upgrade> {
        Ok(Upgrade { since: call.query.since })
    }
}
