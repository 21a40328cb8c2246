//! The tools: what each performs; what `tools/list` says of them is in
//! `tools/listing.rs`.

use serde::Serialize;
use serde_json::{Map, Value, json};
use taskboard_wire::model::{Message, Task, TaskLink};
use taskboard_wire::{
    ClaimTask, CreateReview, CreateStep, CreateTask, Endpoint, GetMe, GetTaskChanges, HeartbeatTask,
    ListLinks, ListMembers, ListMessages, ListProjects, ListReviews, ListTasks, MessageFilter, Page, Patch,
    PollEvents, PostMessage, ReadyTasks, RejectTask, ReleaseTask, StepPatch, TakeTask, UpdateStep,
    UpdateTask,
};
use taskboard_wire::{Error, Perform, Result, Serve};

use crate::refs::{self, Kind, resolve};
use crate::render;
use crate::schema::decode;

mod listing;

pub(crate) use listing::{definitions, scope};

/// The longest `wait_for_events` holds a call, in seconds: well inside the
/// time MCP clients give a tool call before they give up on it.
pub const WAIT_CAP_SECONDS: u32 = 30;

/// Comments `get_task` includes by default.
const LATEST_COMMENTS: u32 = 10;

/// Every tool, in the order of `tools/list`.
pub const TOOL_NAMES: &[&str] = &[
    "whoami",
    "list_projects",
    "list_members",
    "search_tasks",
    "get_task",
    "ready_tasks",
    "claim_task",
    "take_task",
    "heartbeat",
    "release_task",
    "reject_task",
    "create_task",
    "update_task",
    "add_step",
    "complete_step",
    "comment",
    "read_comments",
    "post_chat",
    "read_chat",
    "wait_for_events",
    "get_changes",
    "get_reviews",
    "review_submit",
];

/// The tools of the `worker` profile: what an agent at work on a task
/// needs, and no more, so its `tools/list` stays small (the runner offers
/// this profile to the agents it starts).
pub const WORKER_TOOL_NAMES: &[&str] = &[
    "ready_tasks",
    "claim_task",
    "get_task",
    "heartbeat",
    "release_task",
    "add_step",
    "complete_step",
    "comment",
    "wait_for_events",
    "get_changes",
    "get_reviews",
];

/// The tools of the `reviewer` profile: what a reviewer agent needs to
/// read a task's changes and file its review (the runner offers it to
/// review runs).
pub const REVIEWER_TOOL_NAMES: &[&str] =
    &["get_task", "get_changes", "get_reviews", "review_submit", "comment"];

/// Which tools a connection offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Every tool.
    #[default]
    Full,
    /// [`WORKER_TOOL_NAMES`] only.
    Worker,
    /// [`REVIEWER_TOOL_NAMES`] only.
    Reviewer,
}

impl Profile {
    pub fn tool_names(self) -> &'static [&'static str] {
        match self {
            Profile::Full => TOOL_NAMES,
            Profile::Worker => WORKER_TOOL_NAMES,
            Profile::Reviewer => REVIEWER_TOOL_NAMES,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Worker => "worker",
            Profile::Reviewer => "reviewer",
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Profile, String> {
        match s {
            "full" => Ok(Profile::Full),
            "worker" => Ok(Profile::Worker),
            "reviewer" => Ok(Profile::Reviewer),
            _ => Err(format!("unknown MCP profile {s:?}, expected full, worker or reviewer")),
        }
    }
}

/// What a tool answers: structured content (an object) and its short text.
pub(crate) struct Answer {
    pub structured: Value,
    pub text: String,
}

fn answer(key: &str, value: &impl Serialize, text: String) -> Result<Answer> {
    let value = serde_json::to_value(value).map_err(Error::internal)?;
    Ok(Answer { structured: json!({ key: value }), text })
}

/// Performs the tool `name` with `args` (checked against its schema's
/// argument names by the caller).
pub(crate) async fn call<B: Perform>(b: &B, name: &str, mut args: Map<String, Value>) -> Result<Answer> {
    let args = &mut args;
    match name {
        "whoami" => {
            let me = b.call::<GetMe>((), (), ()).await?;
            answer("member", &me, render::member_line(&me))
        }
        "list_projects" => {
            let (q, ()) = decode::<ListProjects>(std::mem::take(args))?;
            let list = b.call::<ListProjects>((), q, ()).await?.into_items();
            answer("projects", &list, render::projects(&list))
        }
        "list_members" => {
            let (q, ()) = decode::<ListMembers>(std::mem::take(args))?;
            let list = b.call::<ListMembers>((), q, ()).await?.into_items();
            answer("members", &list, render::members(&list))
        }
        "search_tasks" => {
            resolve(b, args, "project", "project_id", Kind::Project).await?;
            resolve(b, args, "assignee", "assignee_id", Kind::Member).await?;
            resolve(b, args, "reviewer", "reviewer_id", Kind::Member).await?;
            resolve(b, args, "parent", "parent_id", Kind::Task).await?;
            args.entry("limit").or_insert(json!(50));
            let (q, ()) = decode::<ListTasks>(std::mem::take(args))?;
            let list = b.call::<ListTasks>((), q, ()).await?.into_items();
            answer("tasks", &list, render::tasks(&list))
        }
        "get_task" => {
            let task = b.find_task(&refs::need_str(args, "task")?).await?;
            let limit = match args.remove("comments") {
                None | Some(Value::Null) => LATEST_COMMENTS,
                Some(v) => v
                    .as_u64()
                    .filter(|n| *n <= 200)
                    .ok_or_else(|| Error::invalid("comments", "must be an integer 0-200"))?
                    as u32,
            };
            let (links, comments) = details(b, &task, limit).await?;
            let text = render::task_markdown(&task, &links, &comments);
            let value = json!({"task": task, "links": links, "comments": comments});
            Ok(Answer { structured: value, text })
        }
        "ready_tasks" => {
            resolve(b, args, "project", "project_id", Kind::Project).await?;
            let (q, ()) = decode::<ReadyTasks>(std::mem::take(args))?;
            let list = b.call::<ReadyTasks>((), q, ()).await?;
            answer("tasks", &list, render::tasks(&list))
        }
        "claim_task" => {
            resolve(b, args, "project", "project_id", Kind::Project).await?;
            let ((), body) = decode::<ClaimTask>(std::mem::take(args))?;
            let task = b.call::<ClaimTask>((), (), body).await?;
            let text = match &task {
                Some(t) => format!("claimed {}", render::task_line(t)),
                None => "nothing is ready; wait_for_events tells when a task becomes ready".into(),
            };
            answer("task", &task, text)
        }
        "get_changes" => {
            let id = b.task_id(&refs::need_str(args, "task")?).await?;
            let changes = b.call::<GetTaskChanges>(id, (), ()).await?;
            let text = render::changes(&changes);
            answer("changes", &changes, text)
        }
        "get_reviews" => {
            let id = b.task_id(&refs::need_str(args, "task")?).await?;
            let reviews = b.call::<ListReviews>(id, (), ()).await?;
            answer("reviews", &reviews, render::reviews(&reviews))
        }
        "review_submit" => {
            let id = b.task_id(&refs::need_str(args, "task")?).await?;
            let ((), body) = decode::<CreateReview>(std::mem::take(args))?;
            let review = b.call::<CreateReview>(id, (), body).await?;
            let text =
                format!("filed {} review {} of round {}", verdict(review.verdict), review.id, review.round);
            answer("review", &review, text)
        }
        "take_task" => task_call::<B, TakeTask>(b, args, "took").await,
        "heartbeat" => task_call::<B, HeartbeatTask>(b, args, "lease renewed:").await,
        "release_task" => task_call::<B, ReleaseTask>(b, args, "released").await,
        "update_task" => {
            resolve(b, args, "assignee", "assignee_id", Kind::Member).await?;
            resolve(b, args, "reviewer", "reviewer_id", Kind::Member).await?;
            resolve(b, args, "parent", "parent_id", Kind::Task).await?;
            task_call::<B, UpdateTask>(b, args, "updated").await
        }
        "reject_task" => {
            let id = b.task_id(&refs::need_str(args, "task")?).await?;
            let ((), body) = decode::<RejectTask>(std::mem::take(args))?;
            let rejected = b.call::<RejectTask>(id, (), body).await?;
            answer("rejected", &rejected, format!("rejected: {}", rejected.reason))
        }
        "create_task" => {
            resolve(b, args, "project", "project_id", Kind::Project).await?;
            resolve(b, args, "parent", "parent_id", Kind::Task).await?;
            resolve(b, args, "assignee", "assignee_id", Kind::Member).await?;
            resolve(b, args, "reviewer", "reviewer_id", Kind::Member).await?;
            resolve(b, args, "depends_on", "depends_on", Kind::Task).await?;
            let (q, body) = decode::<CreateTask>(std::mem::take(args))?;
            let task = b.call::<CreateTask>((), q, body).await?;
            answer("task", &task, format!("created {}", render::task_line(&task)))
        }
        "add_step" => {
            let id = b.task_id(&refs::need_str(args, "task")?).await?;
            let ((), body) = decode::<CreateStep>(std::mem::take(args))?;
            let step = b.call::<CreateStep>(id, (), body).await?;
            answer("step", &step, format!("added step {}", render::step_line(&step)))
        }
        "complete_step" => complete_step(b, args).await,
        "comment" => {
            let id = b.task_id(&refs::need_str(args, "task")?).await?;
            resolve(b, args, "mentions", "mentions", Kind::Member).await?;
            if let Some(reply_to) = args.remove("reply_to") {
                args.insert("parent_id".into(), reply_to);
            }
            args.insert("task_id".into(), json!(id));
            post(b, args).await
        }
        "post_chat" => {
            let project = b.find_project(&refs::need_str(args, "project")?).await?;
            let chat = project
                .chat_id
                .ok_or_else(|| Error::not_found(format!("project {} has no chat", project.slug)))?;
            resolve(b, args, "mentions", "mentions", Kind::Member).await?;
            args.insert("chat_id".into(), json!(chat));
            post(b, args).await
        }
        "read_comments" => {
            let id = b.task_id(&refs::need_str(args, "task")?).await?;
            args.insert("task_id".into(), json!(id));
            read(b, args).await
        }
        "read_chat" => {
            let project = b.find_project(&refs::need_str(args, "project")?).await?;
            let chat = project
                .chat_id
                .ok_or_else(|| Error::not_found(format!("project {} has no chat", project.slug)))?;
            args.insert("chat_id".into(), json!(chat));
            read(b, args).await
        }
        "wait_for_events" => {
            if let Some(wait) = args.remove("wait_seconds") {
                let wait = wait.as_u64().filter(|w| *w <= u64::from(WAIT_CAP_SECONDS)).ok_or_else(|| {
                    Error::invalid("wait_seconds", format!("must be an integer 0-{WAIT_CAP_SECONDS}"))
                })?;
                args.insert("wait".into(), json!(wait));
            } else {
                args.insert("wait".into(), json!(20));
            }
            let (q, ()) = decode::<PollEvents>(std::mem::take(args))?;
            let page = b.call::<PollEvents>((), q, ()).await?;
            let mut text = format!("{} event(s), next since={}", page.events.len(), page.next);
            for e in &page.events {
                text.push_str(&format!("\n{} {}", e["type"].as_str().unwrap_or("?"), event_subject(e)));
            }
            if page.resync_required {
                text.push_str("\nresync_required: events were missed; reload what you need");
            }
            let structured = serde_json::to_value(&page).map_err(Error::internal)?;
            Ok(Answer { structured, text })
        }
        _ => Err(Error::not_found(format!("no tool named {name}"))),
    }
}

/// A task's links and its latest `limit` comments.
pub(crate) async fn details<B: Perform>(
    b: &B,
    task: &Task,
    limit: u32,
) -> Result<(Vec<TaskLink>, Vec<Message>)> {
    let links = b.call::<ListLinks>(task.id, Page::default(), ()).await?.into_items();
    let comments = if limit == 0 {
        Vec::new()
    } else {
        let filter = MessageFilter { task_id: Some(task.id), limit: Some(limit), ..Default::default() };
        b.call::<ListMessages>((), filter, ()).await?.into_items()
    };
    Ok((links, comments))
}

/// The endpoints on `/tasks/{id}/…` answering the Task.
async fn task_call<B, E>(b: &B, args: &mut Map<String, Value>, verb: &str) -> Result<Answer>
where
    B: Perform + Serve<E>,
    E: Endpoint<Path = uuid::Uuid, Response = Task>,
{
    let id = b.task_id(&refs::need_str(args, "task")?).await?;
    let (q, body) = decode::<E>(std::mem::take(args))?;
    let task = b.call::<E>(id, q, body).await?;
    answer("task", &task, format!("{verb} {}", render::task_line(&task)))
}

async fn complete_step<B: Perform>(b: &B, args: &mut Map<String, Value>) -> Result<Answer> {
    let task = b.find_task(&refs::need_str(args, "task")?).await?;
    let step = match args.remove("step") {
        Some(Value::String(s)) => {
            let id =
                s.parse::<uuid::Uuid>().map_err(|_| Error::invalid("step", "must be a step id or number"))?;
            task.steps.iter().find(|st| st.id == id)
        }
        Some(Value::Number(n)) => {
            n.as_u64().and_then(|n| (n as usize).checked_sub(1)).and_then(|i| task.steps.get(i))
        }
        _ => return Err(Error::invalid("step", "missing argument: a step id or number")),
    }
    .ok_or_else(|| Error::not_found(format!("{} has no such step ({} steps)", task.key, task.steps.len())))?;
    let done = args
        .remove("done")
        .map_or(Ok(true), |d| d.as_bool().ok_or_else(|| Error::invalid("done", "must be a boolean")))?;
    let patch = StepPatch { done: Patch::Value(done), ..Default::default() };
    let step = b.call::<UpdateStep>((task.id, step.id), (), patch).await?;
    answer("step", &step, format!("{}: {}", task.key, render::step_line(&step)))
}

async fn post<B: Perform>(b: &B, args: &mut Map<String, Value>) -> Result<Answer> {
    let ((), body) = decode::<PostMessage>(std::mem::take(args))?;
    let message = b.call::<PostMessage>((), (), body).await?;
    answer("message", &message, format!("posted message {}", message.id))
}

async fn read<B: Perform>(b: &B, args: &mut Map<String, Value>) -> Result<Answer> {
    let (q, ()) = decode::<ListMessages>(std::mem::take(args))?;
    let list = b.call::<ListMessages>((), q, ()).await?;
    answer("messages", &list, render::messages(&list))
}

/// What an event is about, for its line of text.
fn event_subject(e: &Value) -> String {
    let d = &e["data"];
    let key = d["key"].as_str().or_else(|| d["slug"].as_str()).unwrap_or("");
    let title = d["title"].as_str().or_else(|| d["content"].as_str()).unwrap_or("");
    let mut s = format!("{key} {title}");
    s.truncate(120);
    s.trim().to_string()
}

fn verdict(v: taskboard_wire::review::Verdict) -> &'static str {
    match v {
        taskboard_wire::review::Verdict::Approve => "an approving",
        taskboard_wire::review::Verdict::RequestChanges => "a changes-requesting",
        taskboard_wire::review::Verdict::Comment => "a comment",
    }
}

#[cfg(test)]
mod tests {
    use super::listing::input;
    use super::*;

    #[test]
    fn every_tool_is_described_with_object_schemas() {
        let tools = definitions(Profile::Full);
        assert_eq!(tools.len(), TOOL_NAMES.len());
        for tool in &tools {
            assert!(tool.description.as_ref().is_some_and(|d| d.len() > 40), "{} is described", tool.name);
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            let output = tool.output_schema.as_ref().expect("an output schema");
            assert_eq!(output["type"], "object", "{}", tool.name);
        }
    }

    #[test]
    fn arguments_by_key_replace_the_endpoint_ids() {
        let create = input("create_task").build();
        let props = create["properties"].as_object().unwrap();
        for name in ["project", "parent", "assignee", "reviewer", "depends_on", "title", "priority", "type"] {
            assert!(props.contains_key(name), "create_task takes {name}");
        }
        for id in ["project_id", "parent_id", "assignee_id", "reviewer_id"] {
            assert!(!props.contains_key(id), "create_task does not take {id}");
        }
        let search = input("search_tasks").build();
        assert!(!search["properties"].as_object().unwrap().contains_key("cursor"));
    }

    #[test]
    fn arguments_decode_through_the_core_types() {
        let mut args = Map::new();
        args.insert("title".into(), json!("  "));
        let err = decode::<CreateStep>(args).expect_err("a blank title is refused");
        assert_eq!(err.kind(), taskboard_wire::ErrorKind::Validation);
        assert!(err.detail().contains("title"), "{}", err.detail());
        let mut args = Map::new();
        args.insert("status".into(), json!("todo"));
        args.insert("limit".into(), json!(5));
        let (filter, ()) = decode::<ListTasks>(args).expect("a filter");
        assert_eq!(filter.page.limit, Some(5));
    }
}
