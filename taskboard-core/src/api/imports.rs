//! Bulk import of the work of other trackers (docs/import.md): the
//! records a reader of their files made, and the plan the board answers.

use super::endpoint::Handle;
use super::endpoint::{Call, Caller};
use crate::board::Board;
use crate::error::Result;
use crate::wire::ImportPlan;
use crate::wire::api::ImportTasks;

impl Handle for ImportTasks {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<ImportPlan> {
        board.import_tasks(caller.actor()?, call.path, call.body).await
    }
}
