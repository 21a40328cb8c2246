//! The checklist of a task: its steps.

use crate::endpoint::{Endpoint, Info, Method};
use crate::model::{Ok, Step};
use crate::{NewStep, Page, Paged, StepPatch};
use uuid::Uuid;

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
}
