//! The checklist of a task: its steps.

use uuid::Uuid;

use super::endpoint::{Call, Caller, Endpoint, Info, Method};
use crate::board::{Board, Resource};
use crate::error::Result;
use crate::model::{Ok, Step};
use crate::wire::{CursorKind, NewStep, Page, Paged, StepPatch};

/// `GET /tasks/{id}/steps`.
#[derive(Debug)]
pub struct ListSteps;

impl Endpoint for ListSteps {
    const INFO: Info = Info {
        name: "list_steps",
        method: Method::Get,
        path: "/api/v1/tasks/{task_id}/steps",
        auth: true,
        status: 200,
        summary: "List steps of a task",
        description: "The checklist of the task, by position.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = Page;
    type Body = ();
    type Response = Paged<Step>;

    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Paged<Step>> {
        let steps = board.list_steps(call.path).await?;
        call.query.window(CursorKind::Steps, steps, |s| {
            // Positions as bytes that sort like the numbers, then the id.
            [((s.position as u64) ^ (1 << 63)).to_be_bytes().as_slice(), s.id.as_bytes()].concat()
        })
    }
}

/// `POST /tasks/{id}/steps`.
#[derive(Debug)]
pub struct CreateStep;

impl Endpoint for CreateStep {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "create_step",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/steps",
        auth: true,
        status: 201,
        summary: "Add a step",
        description: "Appends a step to the task's checklist, not done.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = NewStep;
    type Response = Step;

    const CONDITIONAL: bool = true;

    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Task(path))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Step> {
        board.create_step(caller.actor()?, call.path, call.body.title).await
    }
}

/// `PATCH /tasks/{id}/steps/{step_id}`.
#[derive(Debug)]
pub struct UpdateStep;

impl Endpoint for UpdateStep {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "update_step",
        method: Method::Patch,
        path: "/api/v1/tasks/{task_id}/steps/{step_id}",
        auth: true,
        status: 200,
        summary: "Update a step",
        description: "Renames it, ticks it (`done`) or moves it (`position`: 1 is the first step, past the \
            end is the last; the task's steps are numbered again from 1). A position below 1 is 422.",
        errors: &[404],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = StepPatch;
    type Response = Step;

    const CONDITIONAL: bool = true;

    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Step(path.0, path.1))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Step> {
        board.update_step(caller.actor()?, call.path.0, call.path.1, call.body).await
    }
}

/// `DELETE /tasks/{id}/steps/{step_id}`.
#[derive(Debug)]
pub struct DeleteStep;

impl Endpoint for DeleteStep {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "delete_step",
        method: Method::Delete,
        path: "/api/v1/tasks/{task_id}/steps/{step_id}",
        auth: true,
        status: 200,
        summary: "Delete a step",
        description: "Removes the step from the checklist.",
        errors: &[404],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = ();
    type Response = Ok;

    const CONDITIONAL: bool = true;

    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Step(path.0, path.1))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.delete_step(caller.actor()?, call.path.0, call.path.1).await?;
        Ok(Ok::OK)
    }
}
