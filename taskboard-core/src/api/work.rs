//! The agent work protocol: ready work, claims and leases.

use super::endpoint::Handle;
use super::endpoint::{Call, Caller};
use crate::board::Board;
use crate::error::Result;
use crate::model::Task;
use crate::wire::api::{ClaimTask, HeartbeatTask, ReadyTasks, ReleaseTask};

impl Handle for ReadyTasks {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Vec<Task>> {
        board.ready_tasks(caller.actor()?, call.query).await
    }
}

impl Handle for ClaimTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Option<Task>> {
        board.claim(caller.actor()?, call.body.0.unwrap_or_default()).await
    }
}

impl Handle for HeartbeatTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Task> {
        let seconds = call.body.0.and_then(|b| b.lease_seconds);
        board.heartbeat(caller.actor()?, call.path, seconds).await
    }
}

impl Handle for ReleaseTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Task> {
        let reason = call.body.0.and_then(|b| b.reason);
        board.release(caller.actor()?, call.path, reason).await
    }
}
