//! What `tools/list` says of each tool: its description (written for
//! the model that chooses it), its input and output schemas (from the
//! endpoints' types, see [`crate::schema`]), and the scope a token needs
//! for it.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value, json};
use taskboard_wire::model::Scope;
use taskboard_wire::{
    ClaimTask, CreateReview, CreateStep, CreateTask, Endpoint, GetMe, GetTask, GetTaskChanges, HeartbeatTask,
    ListLinks, ListMembers, ListMessages, ListProjects, ListReviews, ListTasks, PollEvents, PostMessage,
    ReadyTasks, RejectTask, ReleaseTask, TakeTask, UpdateStep, UpdateTask,
};

use super::{LATEST_COMMENTS, Profile, WAIT_CAP_SECONDS};
use crate::refs::{member_ref, project_ref, task_ref};
use crate::schema::{Input, list_of, output, response};

fn describe(name: &str) -> (&'static str, bool) {
    match name {
        "whoami" => (
            "Who you are on this board: your member record (id, slug, role, agent_config). \
             `me` names you wherever a tool asks for a member.",
            true,
        ),
        "list_projects" => {
            ("Projects you can see, with slug and id. Pass a slug wherever a tool asks for `project`.", true)
        }
        "list_members" => (
            "Members of the board (people and agents) with slug and id. Use a slug to assign, \
             review or mention someone.",
            true,
        ),
        "search_tasks" => (
            "Find tasks by project, status, assignee, reviewer, label, type, priority, parent, or \
             text (`q`: a task key or part of a title). Answers one line per task; call get_task \
             for one task's steps, links and comments. To find work to start, use ready_tasks.",
            true,
        ),
        "get_task" => (
            "Everything needed to work on one task, in one call: its fields, description, steps \
             (complete them with complete_step), sub-tasks, links and the latest comments.",
            true,
        ),
        "ready_tasks" => (
            "Tasks ready to start: unassigned, todo or backlog, not an epic, every dependency \
             done, in an active project of yours; best first (priority, then todo before \
             backlog). To take one, claim_task (any) or take_task (this one).",
            true,
        ),
        "claim_task" => (
            "Take the first ready task, atomically: no other agent gets the same one. It becomes \
             yours and in_progress. With lease_seconds you hold it under a lease that heartbeat \
             renews; when a lease runs out the task goes back to todo. Answers task: null when \
             nothing is ready (then wait_for_events for task.ready). Start your work loop here.",
            false,
        ),
        "take_task" => (
            "Take one named task: it becomes yours and in_progress. Refused with a conflict when \
             someone else has it. lease_seconds as for claim_task.",
            false,
        ),
        "heartbeat" => (
            "Renew your lease on a task you hold before it runs out; lease_seconds is the new \
             length (default: the last one). Call it regularly during long work.",
            false,
        ),
        "release_task" => (
            "Give a task back when you cannot finish it: unassigned, status todo, lease ended; \
             the reason is said in its comments.",
            false,
        ),
        "reject_task" => (
            "Refuse a task you were given, with the reason: it goes back to backlog without an \
             assignee, and the reason is said in its comments.",
            false,
        ),
        "create_task" => (
            "Create a task in a project. parent (a task key) makes it a sub-task; depends_on \
             (task keys) keeps it from being ready until those are done; assignee and reviewer \
             by slug. Defaults: type task, status backlog, priority medium.",
            false,
        ),
        "update_task" => (
            "Change a task: only the fields given change; null clears description, assignee, \
             reviewer or parent. When your work is finished set status to review (someone \
             checks it) or done. assignee and reviewer by slug, parent by task key.",
            false,
        ),
        "add_step" => (
            "Add a step (a checklist item) to a task. Plan your work as steps, then tick them \
             off with complete_step.",
            false,
        ),
        "complete_step" => (
            "Mark a step of a task done (done: false to reopen it). step: its id, or its number \
             in the task's list of steps (1 for the first).",
            false,
        ),
        "comment" => (
            "Comment on a task: progress, questions, results, what is left. mentions: member \
             slugs to notify. reply_to: the id of a comment to answer in its thread.",
            false,
        ),
        "read_comments" => ("A task's comments, oldest first; the newest `limit` (default 50).", true),
        "post_chat" => (
            "Post in a project's chat, for what is not about one task (ask a person, announce). \
             mentions: member slugs to notify.",
            false,
        ),
        "read_chat" => ("A project's chat, oldest first; the newest `limit` (default 50).", true),
        "wait_for_events" => (
            "Wait for changes instead of polling: the board's events after `since` (the `next` \
             of your previous call; leave it out the first time to start from now), waiting up \
             to wait_seconds for one to arrive. Types include task.created, task.updated, \
             task.ready (a task that can now start), message.new (comments, chat), step.*, \
             link.*. resync_required: true means events were missed: reload what you need.",
            true,
        ),
        "get_changes" => (
            "A task's changes against its base: the branch, each file with +added -removed lines, \
             and the unified diff. Use it to see what an agent's work changed.",
            true,
        ),
        "get_reviews" => (
            "A task's reviews: each verdict and body, and comments on lines of the diff \
             (path:line, outdated once a later round changed the line). Read them before a round \
             that answers a review.",
            true,
        ),
        "review_submit" => (
            "File your review of a task's changes: verdict approve, request_changes (body or \
             comments say what to change; the task's agent gets another round) or comment. \
             comments: [{path, line, side new|old, body}] on lines shown by get_changes.",
            false,
        ),
        _ => ("", true),
    }
}

pub(super) fn input(name: &str) -> Input {
    let i = Input::new();
    let mentions =
        json!({"type": "array", "items": {"type": "string"}, "description": "Member slugs to notify"});
    let content = json!({"type": "string", "description": "The text (Markdown)"});
    let page = json!({"type": "integer", "minimum": 1, "maximum": 200, "default": 50});
    match name {
        "list_projects" => i.endpoint::<ListProjects>(&[]),
        "list_members" => i.endpoint::<ListMembers>(&[]),
        "search_tasks" => i
            .arg("project", project_ref(), false)
            .arg("assignee", member_ref(), false)
            .arg("reviewer", member_ref(), false)
            .arg("parent", task_ref(), false)
            .endpoint::<ListTasks>(&["project_id", "assignee_id", "reviewer_id", "parent_id"]),
        "get_task" => i.arg("task", task_ref(), true).arg(
            "comments",
            json!({"type": "integer", "minimum": 0, "maximum": 200, "default": LATEST_COMMENTS,
                   "description": "How many of the latest comments to include"}),
            false,
        ),
        "ready_tasks" => i.arg("project", project_ref(), false).endpoint::<ReadyTasks>(&["project_id"]),
        "claim_task" => i.arg("project", project_ref(), false).endpoint::<ClaimTask>(&["project_id"]),
        "take_task" => i.arg("task", task_ref(), true).endpoint::<TakeTask>(&[]),
        "heartbeat" => i.arg("task", task_ref(), true).endpoint::<HeartbeatTask>(&[]),
        "release_task" => i.arg("task", task_ref(), true).endpoint::<ReleaseTask>(&[]),
        "reject_task" => i.arg("task", task_ref(), true).endpoint::<RejectTask>(&[]),
        "create_task" => i
            .arg("project", project_ref(), true)
            .arg("parent", task_ref(), false)
            .arg("assignee", member_ref(), false)
            .arg("reviewer", member_ref(), false)
            .arg("depends_on", json!({"type": "array", "items": task_ref()}), false)
            .endpoint::<CreateTask>(&["project_id", "parent_id", "assignee_id", "reviewer_id", "depends_on"]),
        "update_task" => i
            .arg("task", task_ref(), true)
            .arg("assignee", member_ref(), false)
            .arg("reviewer", member_ref(), false)
            .arg("parent", task_ref(), false)
            .endpoint::<UpdateTask>(&["assignee_id", "reviewer_id", "parent_id"]),
        "add_step" => i.arg("task", task_ref(), true).endpoint::<CreateStep>(&[]),
        "complete_step" => i
            .arg("task", task_ref(), true)
            .arg(
                "step",
                json!({"type": ["string", "integer"], "description": "Step id, or its number (1 = first)"}),
                true,
            )
            .arg("done", json!({"type": "boolean", "default": true}), false),
        "comment" => i
            .arg("task", task_ref(), true)
            .arg("content", content, true)
            .arg("mentions", mentions, false)
            .arg(
                "reply_to",
                json!({"type": "string", "format": "uuid", "description": "A comment id"}),
                false,
            ),
        "read_comments" | "read_chat" => {
            let what =
                if name == "read_comments" { ("task", task_ref()) } else { ("project", project_ref()) };
            i.arg(what.0, what.1, true).arg("limit", page, false)
        }
        "post_chat" => i
            .arg("project", project_ref(), true)
            .arg("content", content, true)
            .arg("mentions", mentions, false),
        "get_changes" | "get_reviews" => i.arg("task", task_ref(), true),
        "review_submit" => i.arg("task", task_ref(), true).endpoint::<CreateReview>(&[]),
        "wait_for_events" => i
            .arg(
                "since",
                json!({"type": "integer", "minimum": 0, "description": "The `next` of the previous call"}),
                false,
            )
            .arg(
                "wait_seconds",
                json!({"type": "integer", "minimum": 0, "maximum": WAIT_CAP_SECONDS, "default": 20}),
                false,
            )
            .arg("limit", json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}), false),
        _ => i,
    }
}

fn output_schema(name: &str) -> rmcp::model::JsonObject {
    // One level of a Task's fields: its references and steps are objects
    // (named in the tools' descriptions and in get_task's text).
    let task = || response::<GetTask>(1);
    match name {
        "whoami" => output(&[("member", response::<GetMe>(1))], &["member"]),
        "list_projects" => output(&[("projects", response::<ListProjects>(1))], &["projects"]),
        "list_members" => output(&[("members", response::<ListMembers>(1))], &["members"]),
        "search_tasks" | "ready_tasks" => output(&[("tasks", list_of(task()))], &["tasks"]),
        "get_task" => output(
            &[
                ("task", task()),
                ("links", response::<ListLinks>(1)),
                ("comments", response::<ListMessages>(1)),
            ],
            &["task", "links", "comments"],
        ),
        "claim_task" => output(&[("task", json!({"anyOf": [task(), {"type": "null"}]}))], &["task"]),
        "reject_task" => output(&[("rejected", response::<RejectTask>(1))], &["rejected"]),
        "add_step" | "complete_step" => output(&[("step", response::<CreateStep>(1))], &["step"]),
        "comment" | "post_chat" => output(&[("message", response::<PostMessage>(1))], &["message"]),
        "read_comments" | "read_chat" => output(&[("messages", response::<ListMessages>(1))], &["messages"]),
        "get_changes" => output(&[("changes", response::<GetTaskChanges>(1))], &["changes"]),
        "get_reviews" => output(&[("reviews", response::<ListReviews>(1))], &["reviews"]),
        "review_submit" => output(&[("review", response::<CreateReview>(1))], &["review"]),
        "wait_for_events" => match response::<PollEvents>(2) {
            Value::Object(o) => o,
            _ => Map::new(),
        },
        _ => output(&[("task", task())], &["task"]),
    }
}

/// The scope an access token needs for the tool `name`: that of the
/// endpoint it performs (the reading tools need `read`).
pub(crate) fn scope(name: &str) -> Scope {
    match name {
        "claim_task" => ClaimTask::SCOPE,
        "take_task" => TakeTask::SCOPE,
        "heartbeat" => HeartbeatTask::SCOPE,
        "release_task" => ReleaseTask::SCOPE,
        "reject_task" => RejectTask::SCOPE,
        "create_task" => CreateTask::SCOPE,
        "update_task" => UpdateTask::SCOPE,
        "add_step" => CreateStep::SCOPE,
        "complete_step" => UpdateStep::SCOPE,
        "comment" | "post_chat" => PostMessage::SCOPE,
        "review_submit" => CreateReview::SCOPE,
        _ => Scope::Read,
    }
}

/// Every tool's definition, for `tools/list`.
pub(crate) fn definitions(profile: Profile) -> Vec<Tool> {
    profile
        .tool_names()
        .iter()
        .map(|&name| {
            let (description, read_only) = describe(name);
            // No tool deletes anything; the other hints keep their defaults.
            let annotations = match read_only {
                true => ToolAnnotations::new().read_only(true),
                false => ToolAnnotations::new().destructive(false),
            };
            let tool = Tool::new(name, description, input(name).build()).with_annotations(annotations);
            // The worker profile leaves out output schemas: the Task's
            // schema alone would be repeated in five of its tools, more
            // than half of its list. Answers still carry structured
            // content and text.
            match profile {
                Profile::Full => tool.with_raw_output_schema(Arc::new(output_schema(name))),
                Profile::Worker | Profile::Reviewer => tool,
            }
        })
        .collect()
}
