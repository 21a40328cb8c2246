//! Tasks, their links, labels and audit log (their steps: steps.rs).

use crate::endpoint::{Endpoint, Info, ListEndpoint, Method};
use crate::model::{Ok, Rejected, Task, TaskAction, TaskLink, Watchers};
use crate::{
    AssignRequest, NewLink, NewTask, Page, Paged, ProjectIdQuery, RejectRequest, TaskFilter, TaskPatch,
};
use uuid::Uuid;

/// `GET /tasks`.
#[derive(Debug)]
pub struct ListTasks;

impl ListEndpoint for ListTasks {
    const INFO: Info = Info {
        name: "list_tasks",
        method: Method::Get,
        path: "/api/v1/tasks",
        auth: true,
        status: 200,
        summary: "List tasks",
        description: "Tasks by position, then number. Filters combine with AND: project, status, assignee, \
            reviewer, label (a name), type, priority, parent, and `q`, which matches a task key exactly \
            (any case) or a part of the title (any case).",
        errors: &[],
    };
    type Path = ();
    type Query = TaskFilter;
    type Item = Task;
}

/// `POST /tasks?project_id=…`.
#[derive(Debug)]
pub struct CreateTask;

impl Endpoint for CreateTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "create_task",
        method: Method::Post,
        path: "/api/v1/tasks",
        auth: true,
        status: 201,
        summary: "Create a task",
        description: "In the project of `project_id`, numbered from the project's counter without gap. \
            Labels that do not exist yet are created; `depends_on` creates dependency links; the creator \
            and the assignee watch it. With automatic assignment on and no assignee, the least busy \
            matching agent of the project gets it. A system message goes to the task and the chat.",
        errors: &[404],
    };
    type Path = ();
    type Query = ProjectIdQuery;
    type Body = NewTask;
    type Response = Task;
}

/// `GET /tasks/{id}`.
#[derive(Debug)]
pub struct GetTask;

impl Endpoint for GetTask {
    const INFO: Info = Info {
        name: "get_task",
        method: Method::Get,
        path: "/api/v1/tasks/{task_id}",
        auth: true,
        status: 200,
        summary: "Get a task",
        description: "The task with its steps, parent, subtasks, dependencies, labels and watchers.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Task;
}

/// `PATCH /tasks/{id}`.
#[derive(Debug)]
pub struct UpdateTask;

impl Endpoint for UpdateTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "update_task",
        method: Method::Patch,
        path: "/api/v1/tasks/{task_id}",
        auth: true,
        status: 200,
        summary: "Update a task",
        description: "Absent fields stay; `null` clears description, assignee, reviewer and parent. Changes \
            of status, assignee and reviewer write a system message; every change is in the audit log. \
            A parent that would make a cycle is 422.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = TaskPatch;
    type Response = Task;
    const CONDITIONAL: bool = true;
}

/// `DELETE /tasks/{id}`.
#[derive(Debug)]
pub struct DeleteTask;

impl Endpoint for DeleteTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "delete_task",
        method: Method::Delete,
        path: "/api/v1/tasks/{task_id}",
        auth: true,
        status: 200,
        summary: "Delete a task",
        description: "Deletes its steps, links and comments; its subtasks lose their parent.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Ok;
    const CONDITIONAL: bool = true;
}

/// `POST /tasks/{id}/take`.
#[derive(Debug)]
pub struct TakeTask;

impl Endpoint for TakeTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "take_task",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/take",
        auth: true,
        status: 200,
        summary: "Take a task",
        description: "The caller becomes the assignee and the task goes `in_progress`. Atomic: of any number \
            of concurrent takes one succeeds and the others get 409, as does taking a task someone holds. \
            With `lease_seconds` (10–86,400, in the query or an optional body) the task is held under a \
            lease that the board ends when it is not renewed in time.",
        errors: &[404, 409],
    };
    type Path = Uuid;
    type Query = crate::LeaseRequest;
    type Body = crate::body::Optional<crate::LeaseRequest>;
    type Response = Task;
}

/// `POST /tasks/{id}/reject`.
#[derive(Debug)]
pub struct RejectTask;

impl Endpoint for RejectTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "reject_task",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/reject",
        auth: true,
        status: 200,
        summary: "Reject a task back to the backlog",
        description: "The assignee gives the task up with a reason: no assignee, status `backlog`, and a \
            system message with the reason.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = RejectRequest;
    type Response = Rejected;
}

/// `POST /tasks/{id}/assign`.
#[derive(Debug)]
pub struct AssignTask;

impl Endpoint for AssignTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "assign_task",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/assign",
        auth: true,
        status: 200,
        summary: "Assign a task",
        description: "The assignee must be an active member (404 otherwise) and starts watching; the status \
            stays as it is.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = AssignRequest;
    type Response = Task;
}

/// `POST /tasks/{id}/watch`.
#[derive(Debug)]
pub struct WatchTask;

impl Endpoint for WatchTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "watch_task",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/watch",
        auth: true,
        status: 200,
        summary: "Watch a task",
        description: "The caller receives the task's comments as events. Answers the watchers.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Watchers;
}

/// `DELETE /tasks/{id}/watch`.
#[derive(Debug)]
pub struct UnwatchTask;

impl Endpoint for UnwatchTask {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "unwatch_task",
        method: Method::Delete,
        path: "/api/v1/tasks/{task_id}/watch",
        auth: true,
        status: 200,
        summary: "Stop watching a task",
        description: "Answers the watchers.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Watchers;
}

/// `GET /tasks/{id}/links`.
#[derive(Debug)]
pub struct ListLinks;

impl Endpoint for ListLinks {
    const INFO: Info = Info {
        name: "list_links",
        method: Method::Get,
        path: "/api/v1/tasks/{task_id}/links",
        auth: true,
        status: 200,
        summary: "Links of a task, both directions",
        description: "The links the task is the source or the target of.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = Page;
    type Body = ();
    type Response = Paged<TaskLink>;
}

/// `POST /tasks/{id}/links`.
#[derive(Debug)]
pub struct CreateLink;

impl Endpoint for CreateLink {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "create_link",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/links",
        auth: true,
        status: 201,
        summary: "Link a task to another",
        description: "`depends_on`, `blocks` or `relates_to`. An unknown target is 404, the same link twice \
            409, a dependency that would close a cycle 422.",
        errors: &[400, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = NewLink;
    type Response = TaskLink;
}

/// `DELETE /tasks/{id}/links/{link_id}`.
#[derive(Debug)]
pub struct DeleteLink;

impl Endpoint for DeleteLink {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "delete_link",
        method: Method::Delete,
        path: "/api/v1/tasks/{task_id}/links/{link_id}",
        auth: true,
        status: 200,
        summary: "Delete a link",
        description: "A link of this task, in either direction.",
        errors: &[404],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = ();
    type Response = Ok;
}

/// `POST /tasks/{id}/labels/{label_id}`.
#[derive(Debug)]
pub struct AddTaskLabel;

impl Endpoint for AddTaskLabel {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "add_task_label",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/labels/{label_id}",
        auth: true,
        status: 200,
        summary: "Put a label on a task",
        description: "Idempotent; an unknown label is 404.",
        errors: &[404],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = ();
    type Response = Ok;
    const CONDITIONAL: bool = true;
}

/// `DELETE /tasks/{id}/labels/{label_id}`.
#[derive(Debug)]
pub struct RemoveTaskLabel;

impl Endpoint for RemoveTaskLabel {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const INFO: Info = Info {
        name: "remove_task_label",
        method: Method::Delete,
        path: "/api/v1/tasks/{task_id}/labels/{label_id}",
        auth: true,
        status: 200,
        summary: "Take a label off a task",
        description: "Idempotent; an unknown label is 404.",
        errors: &[404],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = ();
    type Response = Ok;
    const CONDITIONAL: bool = true;
}

/// `GET /tasks/{id}/actions`.
#[derive(Debug)]
pub struct ListActions;

impl ListEndpoint for ListActions {
    const INFO: Info = Info {
        name: "list_actions",
        method: Method::Get,
        path: "/api/v1/tasks/{task_id}/actions",
        auth: true,
        status: 200,
        summary: "Audit log of a task",
        description: "Oldest first: who did what, with each changed field's old and new value.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = Page;
    type Item = TaskAction;
}
