//! Runs: an agent's attempts at tasks, started by a person or by the
//! agent's runner, written by the runner, followed and answered by people.

use crate::endpoint::{Endpoint, Info, Method};
use crate::run::{Run, TranscriptEntry};
use crate::{
    NewEntries, NewMessageRun, NewRun, Paged, RunAnswer, RunListQuery, RunPatch, RunnerSeen, TranscriptQuery,
};
use uuid::Uuid;

/// `GET /runs`.
#[derive(Debug)]
pub struct ListRuns;

impl Endpoint for ListRuns {
    const INFO: Info = Info {
        name: "list_runs",
        method: Method::Get,
        path: "/api/v1/runs",
        auth: true,
        status: 200,
        summary: "List runs",
        description: "Runs of agents at tasks, newest first, optionally of one task, one agent or in one \
            state. Paged by `cursor` (the `Link` header of the page before).",
        errors: &[],
    };
    type Path = ();
    type Query = RunListQuery;
    type Body = ();
    type Response = Paged<Run>;
}

/// `GET /runners`.
#[derive(Debug)]
pub struct ListRunners;

impl Endpoint for ListRunners {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "list_runners",
        method: Method::Get,
        path: "/api/v1/runners",
        auth: true,
        status: 200,
        summary: "List the runners connected",
        description: "The runners polling the event stream for agents now (a poll with `runner` named in \
            the last minute or so), by name, with the agents each serves and when it last polled.",
        errors: &[],
    };
    type Path = ();
    type Query = ();
    type Body = ();
    type Response = Vec<RunnerSeen>;
}

/// `GET /runs/{id}`.
#[derive(Debug)]
pub struct GetRun;

impl Endpoint for GetRun {
    const INFO: Info = Info {
        name: "get_run",
        method: Method::Get,
        path: "/api/v1/runs/{run_id}",
        auth: true,
        status: 200,
        summary: "Get a run",
        description: "A run with its state, its open question and the size of its transcript.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Run;
}

/// `GET /runs/{id}/transcript`.
#[derive(Debug)]
pub struct GetTranscript;

impl Endpoint for GetTranscript {
    const INFO: Info = Info {
        name: "get_transcript",
        method: Method::Get,
        path: "/api/v1/runs/{run_id}/transcript",
        auth: true,
        status: 200,
        summary: "Read a run's transcript",
        description: "Entries in order, after `after` (an entry's `n`) when given. A transcript is capped \
            (10 MB by default); past the cap one entry says how many bytes were dropped.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = TranscriptQuery;
    type Body = ();
    type Response = Vec<TranscriptEntry>;
}

/// `POST /tasks/{id}/runs`.
#[derive(Debug)]
pub struct StartRun;

impl Endpoint for StartRun {
    const SCOPE: crate::model::Scope = crate::model::Scope::RunsWrite;
    const INFO: Info = Info {
        name: "start_run",
        method: Method::Post,
        path: "/api/v1/tasks/{task_id}/runs",
        auth: true,
        status: 201,
        summary: "Start a run of an agent on a task",
        description: "The task is assigned to the agent and held under a lease of `lease_seconds` (default \
            300) in the agent's name; the run starts `starting`, and the agent's runner starts the agent. \
            A person may start a run only on a task they may change, of an agent that is a member of the \
            task's project (403 otherwise); an agent only itself, on a task it may take or already holds. \
            409 when the task is done, already has a run that has not ended, or is held under someone \
            else's lease; 422 when `agent_id` is not an active agent, or when a person gives `runner`.",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = NewRun;
    type Response = Run;
}

/// `POST /messages/{id}/runs`.
#[derive(Debug)]
pub struct StartMessageRun;

impl Endpoint for StartMessageRun {
    const INFO: Info = Info {
        name: "start_message_run",
        method: Method::Post,
        path: "/api/v1/messages/{message_id}/runs",
        auth: true,
        status: 201,
        summary: "Start a run of an agent answering a message",
        description: "The agent answers a chat message or a task comment: the run starts `starting` with \
            `message_id` set, and the agent's runner starts the agent and posts its answer as a reply. A \
            comment's run names its task for context but takes no lease and never moves the task. A person \
            may ask any active agent; an agent only itself. 403 when the agent does not see the message \
            (a chat of a project it is not a member of; a comment on a task of such a project that neither \
            involves nor mentions it); 409 when the message is the agent's own, when the agent already has \
            a run answering it that has not ended, or, asked by the agent itself, any run answering it; 422 when `agent_id` is not an active agent, or when a \
            person gives `runner`.",
        errors: &[403, 404, 409],
    };
    const SCOPE: crate::model::Scope = crate::model::Scope::RunsWrite;
    type Path = Uuid;
    type Query = ();
    type Body = NewMessageRun;
    type Response = Run;
}

/// `PATCH /runs/{id}`.
#[derive(Debug)]
pub struct UpdateRun;

impl Endpoint for UpdateRun {
    const SCOPE: crate::model::Scope = crate::model::Scope::RunsWrite;
    const INFO: Info = Info {
        name: "update_run",
        method: Method::Patch,
        path: "/api/v1/runs/{run_id}",
        auth: true,
        status: 200,
        summary: "Report a run's progress (its agent)",
        description: "Only the run's agent (its runner, with the agent's token) writes a run: state, runner, \
            exit code, stop reason, branch, commit, usage, question. The runner is set once: another runner's \
            name is 409 (the run is another runner's). A final state ends the run: \
            `succeeded` moves its task to `review`; `failed`, `timed_out` and `cancelled` give the task back \
            (`todo`) with a comment quoting the tail of the output. 409 once the run is final.",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = RunPatch;
    type Response = Run;
}

/// `POST /runs/{id}/transcript`.
#[derive(Debug)]
pub struct AppendTranscript;

impl Endpoint for AppendTranscript {
    const SCOPE: crate::model::Scope = crate::model::Scope::RunsWrite;
    const INFO: Info = Info {
        name: "append_transcript",
        method: Method::Post,
        path: "/api/v1/runs/{run_id}/transcript",
        auth: true,
        status: 200,
        summary: "Append to a run's transcript (its agent)",
        description: "Only the run's agent. Every entry counts toward the transcript's cap, whatever its \
            kind; entries past it are dropped and counted in one entry. Followers get them as `run.output` \
            events, at most ten a second per run. 409 once the run is final; 429 with `Retry-After` when the \
            run appends more than 20 times a second after a burst of 100 (batch entries instead).",
        errors: &[403, 404, 409, 429],
    };
    type Path = Uuid;
    type Query = ();
    type Body = NewEntries;
    type Response = Run;
}

/// `POST /runs/{id}/cancel`.
#[derive(Debug)]
pub struct CancelRun;

impl Endpoint for CancelRun {
    const SCOPE: crate::model::Scope = crate::model::Scope::RunsWrite;
    const INFO: Info = Info {
        name: "cancel_run",
        method: Method::Post,
        path: "/api/v1/runs/{run_id}/cancel",
        auth: true,
        status: 200,
        summary: "Cancel a run",
        description: "The run ends `cancelled` at once and its task is given back (`todo`, unassigned); the \
            runner stops the agent when it sees the event. A person or the run's agent; 409 once the run \
            is final.",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Run;
}

/// `POST /runs/{id}/answer`.
#[derive(Debug)]
pub struct AnswerRun;

impl Endpoint for AnswerRun {
    const SCOPE: crate::model::Scope = crate::model::Scope::RunsWrite;
    const INFO: Info = Info {
        name: "answer_run",
        method: Method::Post,
        path: "/api/v1/runs/{run_id}/answer",
        auth: true,
        status: 200,
        summary: "Answer a run's question",
        description: "A person answers the question of a run `awaiting_input`: `option_id`, one of its \
            options, or `text`. The answer goes to the transcript and the run is `running` again. 409 when \
            the run has no open question; 403 for agents.",
        errors: &[403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = RunAnswer;
    type Response = Run;
}
