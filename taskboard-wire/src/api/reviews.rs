//! Review and land: the changes a run recorded, reviews of them, and the
//! landing or discarding of a task's branch (docs/rules.md, review and
//! land).

use crate::endpoint::{Endpoint, Info, Method};
use crate::model::Scope;
use crate::review::{Changes, ChangesReport, MergeRequest, NewReview, Review};
use crate::run::Run;
use uuid::Uuid;

/// `POST /runs/{id}/changes`.
#[derive(Debug)]
pub struct RecordChanges;

impl Endpoint for RecordChanges {
    const SCOPE: Scope = Scope::RunsWrite;

    /// Two diffs at their cap, escaped as JSON strings, and their files.
    const BODY_LIMIT: Option<usize> = Some(4 * crate::review::MAX_DIFF_BYTES + (1 << 20));
    const INFO: Info = Info {
        name: "record_changes",
        method: Method::Post,
        path: "/api/v1/runs/{run_id}/changes",
        auth: true,
        status: 200,
        summary: "Record a run's changes (its agent)",
        description: "The run's runner records, at the end of a work run, the task's branch against its \
            base (`task`) and the run's own change (`run`): files with counts, the unified diff (at most \
            2 MB, `truncated` when cut; binary files listed, never inlined). The task then shows the branch, \
            head and counts, and a new head is a new review (`pending`). Only the run's agent, while the run \
            is open (409 once final, or for a run that is not a work run).",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ChangesReport;
    type Response = Run;
}

/// `GET /tasks/{id}/changes`.
#[derive(Debug)]
pub struct GetTaskChanges;

impl Endpoint for GetTaskChanges {
    const INFO: Info = Info {
        name: "get_task_changes",
        method: Method::Get,
        path: "/api/v1/tasks/{task_id}/changes",
        auth: true,
        status: 200,
        summary: "A task's changes against its base",
        description: "The branch, base and head commits, the files with their counts and the unified diff, as \
            the last run that recorded them saw them; served without the repository. 404 before any run \
            recorded changes.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Changes;
}

/// `GET /runs/{id}/changes`.
#[derive(Debug)]
pub struct GetRunChanges;

impl Endpoint for GetRunChanges {
    const INFO: Info = Info {
        name: "get_run_changes",
        method: Method::Get,
        path: "/api/v1/runs/{run_id}/changes",
        auth: true,
        status: 200,
        summary: "One run's own changes (its round)",
        description: "What this run changed on the branch: its round's change, as its runner recorded it. 404 \
            when the run recorded none.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Changes;
}

/// `POST /tasks/{id}/reviews`.
#[derive(Debug)]
pub struct CreateReview;

impl Endpoint for CreateReview {
    const SCOPE: Scope = Scope::TasksWrite;
    const INFO: Info = Info {
        name: "create_review",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/reviews",
        auth: true,
        status: 201,
        summary: "Review a task's changes",
        description: "A verdict (`approve`, `request_changes`, `comment`), a body and comments on lines of the \
            diff (`path`, `line`, `side` `new` or `old`), by a person or an agent, but not the agent whose \
            work it is (403). A comment on a line the diff does not show is 422. `request_changes` starts \
            the next round: a run of the task's agent on the same branch, with the review in its prompt; \
            after the project's `max_rounds`, a reviewer agent's request sends the task to the person who \
            created it instead. 409 without changes, when done, or while a run of the task is open.",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = NewReview;
    type Response = Review;
}

/// `GET /tasks/{id}/reviews`.
#[derive(Debug)]
pub struct ListReviews;

impl Endpoint for ListReviews {
    const INFO: Info = Info {
        name: "list_reviews",
        method: Method::Get,
        path: "/api/v1/tasks/{task_id}/reviews",
        auth: true,
        status: 200,
        summary: "A task's reviews",
        description: "In the order they were made. A line comment is `outdated` once a later round changed \
            its line (or took it out of the diff).",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Vec<Review>;
}

/// `POST /tasks/{id}/merge`.
#[derive(Debug)]
pub struct MergeTask;

impl Endpoint for MergeTask {
    const SCOPE: Scope = Scope::TasksWrite;
    const INFO: Info = Info {
        name: "merge_task",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/merge",
        auth: true,
        status: 201,
        summary: "Land a task's branch",
        description: "Queues a landing (`merge`, `squash` or `rebase`; default `merge`): a `land` run that the \
            runner of the task's agent performs with the repository. It fetches, brings the branch onto the \
            base, runs the project's `check_command`, and pushes the base only if it has not moved; the task \
            is then `done` with `merge_commit`. A conflict or a failing check fails the run, and with \
            `on_conflict: agent` starts a run of the agent to bring its branch up to date. By a member of \
            the project or an admin (403); 409 without changes or repository, when done, while a run is \
            open, or short of the project's `required_approvals`.",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = MergeRequest;
    type Response = Run;
}

/// `POST /tasks/{id}/discard`.
#[derive(Debug)]
pub struct DiscardTask;

impl Endpoint for DiscardTask {
    const SCOPE: Scope = Scope::TasksWrite;
    const INFO: Info = Info {
        name: "discard_task",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/discard",
        auth: true,
        status: 201,
        summary: "Discard a task's branch",
        description: "Gives the task back (`todo`, nobody's, its changes and reviews set aside) and queues a \
            `discard` run that deletes the branch from the repository. By a member of the project or an \
            admin (403); 409 without changes, when done, or while a run is open.",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Run;
}
