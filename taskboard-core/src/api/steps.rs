//! The checklist of a task: its steps.

use super::endpoint::Handle;
use super::endpoint::{Call, Caller};
use crate::board::{Board, Resource};
use crate::error::Result;
use crate::model::{Ok, Step};
use crate::wire::api::{CreateStep, DeleteStep, ListSteps, UpdateStep};
use crate::wire::{CursorKind, Paged};

impl Handle for ListSteps {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Paged<Step>> {
        let steps = board.list_steps(call.path).await?;
        call.query.window(CursorKind::Steps, steps, |s| {
            // Positions as bytes that sort like the numbers, then the id.
            [((s.position as u64) ^ (1 << 63)).to_be_bytes().as_slice(), s.id.as_bytes()].concat()
        })
    }
}

impl Handle for CreateStep {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Task(path))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Step> {
        board.create_step(caller.actor()?, call.path, call.body.title).await
    }
}

impl Handle for UpdateStep {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Step(path.0, path.1))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Step> {
        board.update_step(caller.actor()?, call.path.0, call.path.1, call.body).await
    }
}

impl Handle for DeleteStep {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Step(path.0, path.1))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.delete_step(caller.actor()?, call.path.0, call.path.1).await?;
        Ok(Ok::OK)
    }
}
