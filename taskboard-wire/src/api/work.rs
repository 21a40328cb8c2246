//! The agent work protocol: ready work, claims and leases.

use crate::body::Optional;
use crate::endpoint::{Endpoint, Info, Method};
use crate::model::Task;
use crate::{ClaimRequest, LeaseRequest, ReadyQuery, ReleaseRequest};
use uuid::Uuid;

/// `GET /tasks/ready`.
#[derive(Debug)]
pub struct ReadyTasks;

impl Endpoint for ReadyTasks {
    const INFO: Info = Info {
        name: "ready_tasks",
        method: Method::Get,
        path: "/api/v1/tasks/ready",
        auth: true,
        status: 200,
        summary: "List the tasks ready to start",
        description: "Tasks nobody holds, `todo` or `backlog`, not epics, in an active project, whose every \
            dependency is done. Without `project_id`, from the active projects the caller is a member of. \
            Ordered by priority (urgent first), then `todo` before `backlog`, then position and number.",
        errors: &[404],
    };
    type Path = ();
    type Query = ReadyQuery;
    type Body = ();
    type Response = Vec<Task>;
}

/// `POST /tasks/claim`.
#[derive(Debug)]
pub struct ClaimTask;

impl Endpoint for ClaimTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "claim_task",
        method: Method::Post,
        path: "/api/v1/tasks/claim",
        auth: true,
        status: 200,
        summary: "Claim the first ready task",
        description: "Takes the first ready task (as listed by the ready endpoint) that carries one of \
            `labels` (by default the caller's agent labels, when it has any), exactly as a take does, \
            optionally under a lease. Answers the task, or 204 with no body when none is ready. Concurrent \
            claims never return the same task.",
        errors: &[404],
    };
    type Path = ();
    type Query = ();
    type Body = Optional<ClaimRequest>;
    type Response = Option<Task>;
}

/// `POST /tasks/{id}/heartbeat`.
#[derive(Debug)]
pub struct HeartbeatTask;

impl Endpoint for HeartbeatTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "heartbeat_task",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/heartbeat",
        auth: true,
        status: 200,
        summary: "Renew a lease",
        description: "The holder of the lease extends it from now by `lease_seconds`, by default the \
            duration it last asked for. 403 for anyone but the holder, 409 when the task has no lease.",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = Optional<LeaseRequest>;
    type Response = Task;
}

/// `POST /tasks/{id}/release`.
#[derive(Debug)]
pub struct ReleaseTask;

impl Endpoint for ReleaseTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "release_task",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/release",
        auth: true,
        status: 200,
        summary: "Give a task back",
        description: "The assignee (or an admin) gives the task back: assignee and lease cleared, status \
            `todo`, a system message with the reason. 409 when nobody holds the task.",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = Optional<ReleaseRequest>;
    type Response = Task;
}
