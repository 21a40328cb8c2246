//! Review and land: the changes a run recorded, reviews of them, and the
//! landing or discarding of a task's branch (docs/rules.md, review and
//! land).

use super::endpoint::Handle;
use super::endpoint::{Call, Caller};
use crate::board::Board;
use crate::error::Result;
use crate::review::{Changes, Review};
use crate::runs::Run;
use crate::wire::api::{
    CreateReview, DiscardTask, GetRunChanges, GetTaskChanges, ListReviews, MergeTask, RecordChanges,
};

impl Handle for RecordChanges {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Run> {
        board.record_changes(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for GetTaskChanges {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Changes> {
        board.task_changes(call.path).await
    }
}

impl Handle for GetRunChanges {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Changes> {
        board.run_changes(call.path).await
    }
}

impl Handle for CreateReview {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Review> {
        board.create_review(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for ListReviews {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Vec<Review>> {
        board.list_reviews(call.path).await
    }
}

impl Handle for MergeTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Run> {
        board.merge_task(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for DiscardTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Run> {
        board.discard_task(caller.actor()?, call.path).await
    }
}
