//! Tasks, their links, labels and audit log (their steps: steps.rs).

use bytes::Bytes;

use super::endpoint::{Call, Caller, Encoded};
use super::endpoint::{Handle, ListHandler};
use crate::board::{Board, List, Resource};
use crate::error::Result;
use crate::model::{Ok, Rejected, Task, TaskAction, TaskLink, Watchers};
use crate::wire::api::{
    AddTaskLabel, AssignTask, CreateLink, CreateTask, DeleteLink, DeleteTask, GetTask, ListActions,
    ListLinks, ListTasks, RejectTask, RemoveTaskLabel, TakeTask, UnwatchTask, UpdateTask, WatchTask,
};
use crate::wire::{CursorKind, Paged};

impl ListHandler for ListTasks {
    fn list(board: &Board, _: &Caller, _: Self::Path, query: Self::Query) -> Result<List<Task>> {
        Ok(board.list_tasks(query))
    }
}

impl Handle for CreateTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Task> {
        board.create_task(caller.actor()?, call.query.project_id, call.body).await
    }
}

impl Handle for GetTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Task> {
        board.get_task(caller.actor()?, call.path).await
    }

    /// The board keeps tasks rendered; their JSON is sent as it is.
    async fn handle_encoded(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Encoded> {
        let (json, etag) = board.get_task_json(caller.actor()?, call.path).await?;
        Ok(Encoded::Tagged { json: Bytes::from_owner(ArcStr(json)), etag })
    }
}

/// JSON the board keeps rendered, as bytes without a copy.
struct ArcStr(std::sync::Arc<str>);

impl AsRef<[u8]> for ArcStr {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl Handle for UpdateTask {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Task(path))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Task> {
        board.update_task(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for DeleteTask {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Task(path))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.delete_task(caller.actor()?, call.path).await?;
        Ok(Ok::OK)
    }
}

impl Handle for TakeTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Task> {
        let seconds = call.body.0.and_then(|b| b.lease_seconds).or(call.query.lease_seconds);
        board.take_leased(caller.actor()?, call.path, seconds).await
    }
}

impl Handle for RejectTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Rejected> {
        board.reject(caller.actor()?, call.path, call.body.reason).await
    }
}

impl Handle for AssignTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Task> {
        board.assign(caller.actor()?, call.path, call.body.assignee_id).await
    }
}

impl Handle for WatchTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Watchers> {
        board.watch(caller.actor()?, call.path).await
    }
}

impl Handle for UnwatchTask {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Watchers> {
        board.unwatch(caller.actor()?, call.path).await
    }
}

impl Handle for ListLinks {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Paged<TaskLink>> {
        let links = board.list_links(call.path).await?;
        call.query.window(CursorKind::Links, links, |l| l.id.as_bytes().to_vec())
    }
}

impl Handle for CreateLink {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<TaskLink> {
        board.create_link(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for DeleteLink {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.delete_link(caller.actor()?, call.path.0, call.path.1).await?;
        Ok(Ok::OK)
    }
}

impl Handle for AddTaskLabel {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Task(path.0))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.add_task_label(caller.actor()?, call.path.0, call.path.1).await?;
        Ok(Ok::OK)
    }
}

impl Handle for RemoveTaskLabel {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Task(path.0))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.remove_task_label(caller.actor()?, call.path.0, call.path.1).await?;
        Ok(Ok::OK)
    }
}

impl ListHandler for ListActions {
    fn list(board: &Board, _: &Caller, id: Self::Path, query: Self::Query) -> Result<List<TaskAction>> {
        Ok(board.task_actions(id, query))
    }
}
