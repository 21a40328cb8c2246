//! What an ACP agent sends, on the board (docs/rules.md, "Runs"): its
//! plan becomes the task's steps, its messages and thoughts a comment
//! (the thoughts as its `thinking`) when it asks a question and when its
//! turn ends, its tool calls transcript entries, its permission requests
//! the run's question, answered with the option a person picks.

use std::collections::{HashMap, VecDeque};

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionKind, Plan, PlanEntryStatus, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome, SessionUpdate, ToolCall,
    ToolCallUpdate,
};
use serde_json::{Value, json};
use taskboard_core::api::{
    AppendTranscript, CreateStep, DeleteStep, GetRun, GetTask, GetTranscript, NewEntries, NewEntry,
    NewMessage, NewStep, Patch, PostMessage, RunPatch, StepPatch, TranscriptQuery, UpdateRun, UpdateStep,
};
use taskboard_core::runs::{EntryKind, MAX_ENTRY_TEXT, Question, QuestionOption, Usage};
use taskboard_core::validate::{LongText, Title};
use taskboard_core::{ErrorKind, Perform};
use uuid::Uuid;

use crate::AgentCtx;
use crate::job::Target;

/// Most characters of a comment (the board's limit).
const COMMENT_CHARS: usize = 100_000;
/// Entries of one transcript append at most.
const BATCH: usize = 500;
/// Most options of a question (the board's limit).
const OPTIONS: usize = 20;

/// The answer to a permission request the run cannot ask or wait for.
pub(super) fn cancelled() -> RequestPermissionResponse {
    RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled)
}

fn selected(option: &PermissionOption) -> RequestPermissionResponse {
    RequestPermissionResponse::new(RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
        option.option_id.clone(),
    )))
}

/// The option allowing what the agent asks, once: a runner that allows
/// by its file answers each request as it comes rather than let the
/// agent remember an "always" of its own, outside that file. An agent
/// offering only "always" gets that.
fn allowing(options: &[PermissionOption]) -> Option<&PermissionOption> {
    options
        .iter()
        .find(|o| o.kind == PermissionOptionKind::AllowOnce)
        .or_else(|| options.iter().find(|o| o.kind == PermissionOptionKind::AllowAlways))
}

/// The permission request whose question is open on the board.
struct Asked {
    id: String,
    /// The transcript's count once it was asked: its answer comes after.
    after: u64,
    /// The question's option ids and the agent's options they stand for.
    options: Vec<(String, PermissionOption)>,
    responder: Responder<RequestPermissionResponse>,
}

/// What the agent said, on its way to the board.
pub(super) struct Report<'a, C> {
    a: &'a AgentCtx<C>,
    run: Uuid,
    target: Target,
    /// Transcript entries not yet sent; none once the run is closed.
    entries: Vec<NewEntry>,
    open: bool,
    /// The message or thought being streamed: one entry once something
    /// else comes or the entries are sent.
    segment: Option<(EntryKind, String)>,
    /// What the agent said and thought since its last comment.
    said: String,
    thought: String,
    /// What its last comment said.
    last_said: String,
    /// The steps that the plan's entries are, in order, and whether this
    /// run added each.
    plan_steps: Vec<(Uuid, bool)>,
    /// Tool calls' titles, for updates that name none.
    tools: HashMap<String, String>,
    /// Tool calls' kinds (`edit`, `read`), for permission requests that
    /// name none.
    kinds: HashMap<String, String>,
    asked: Option<Asked>,
    waiting: VecDeque<(RequestPermissionRequest, Responder<RequestPermissionResponse>)>,
    questions: u32,
}

fn cut(text: &mut String, bytes: usize) {
    text.truncate(text.floor_char_boundary(bytes));
}

/// Appends to a comment's text up to the board's limit.
fn add_capped(to: &mut String, text: &str) {
    let room = COMMENT_CHARS.saturating_sub(to.chars().count());
    to.extend(text.chars().take(room));
}

fn text_of(content: &ContentBlock) -> Option<&str> {
    match content {
        ContentBlock::Text(t) => Some(&t.text),
        _ => None,
    }
}

/// A protocol value's wire name (`in_progress`, `allow_once`).
fn name_of<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

/// `data` of an entry, left out when over the board's limit.
fn bounded(data: Value) -> Option<Value> {
    (data.to_string().len() <= MAX_ENTRY_TEXT).then_some(data)
}

impl<'a, C: Perform> Report<'a, C> {
    pub fn new(a: &'a AgentCtx<C>, run: Uuid, target: Target) -> Report<'a, C> {
        Report {
            a,
            run,
            target,
            entries: Vec::new(),
            open: true,
            segment: None,
            said: String::new(),
            thought: String::new(),
            last_said: String::new(),
            plan_steps: Vec::new(),
            tools: HashMap::new(),
            kinds: HashMap::new(),
            asked: None,
            waiting: VecDeque::new(),
            questions: 0,
        }
    }

    fn log(&self, what: &str, e: &taskboard_core::Error) {
        eprintln!("runner: {}: run {}: {what}: {}", self.a.me.slug, self.run, e.detail());
    }

    fn entry(&mut self, kind: EntryKind, mut text: String, data: Option<Value>) {
        self.end_segment();
        if self.open {
            cut(&mut text, MAX_ENTRY_TEXT);
            self.entries.push(NewEntry { kind, text, data: data.and_then(bounded) });
        }
    }

    fn end_segment(&mut self) {
        if let Some((kind, text)) = self.segment.take()
            && self.open
        {
            self.entries.push(NewEntry { kind, text, data: None });
        }
    }

    fn stream(&mut self, kind: EntryKind, text: &str) {
        if kind == EntryKind::Thought {
            add_capped(&mut self.thought, text);
        } else {
            add_capped(&mut self.said, text);
        }
        if self.segment.as_ref().is_some_and(|(k, s)| *k != kind || s.len() + text.len() > MAX_ENTRY_TEXT) {
            self.end_segment();
        }
        let (_, s) = self.segment.get_or_insert_with(|| (kind, String::new()));
        s.push_str(text);
        cut(s, MAX_ENTRY_TEXT);
    }

    /// Sends the transcript entries gathered so far.
    pub async fn flush(&mut self) {
        self.end_segment();
        while self.open && !self.entries.is_empty() {
            let batch: Vec<NewEntry> = self.entries.drain(..self.entries.len().min(BATCH)).collect();
            let sent =
                self.a.client.call::<AppendTranscript>(self.run, (), NewEntries { entries: batch }).await;
            match sent {
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Conflict | ErrorKind::Forbidden | ErrorKind::NotFound
                    ) =>
                {
                    self.open = false;
                    self.entries.clear();
                }
                Err(e) => self.log("the transcript", &e),
                Ok(_) => {}
            }
        }
    }

    /// One `session/update`.
    pub async fn update(&mut self, update: SessionUpdate) {
        match update {
            SessionUpdate::AgentMessageChunk(c) => {
                if let Some(t) = text_of(&c.content) {
                    self.stream(EntryKind::Message, t);
                }
            }
            SessionUpdate::AgentThoughtChunk(c) => {
                if let Some(t) = text_of(&c.content) {
                    self.stream(EntryKind::Thought, t);
                }
            }
            SessionUpdate::ToolCall(t) => self.tool_call(&t),
            SessionUpdate::ToolCallUpdate(u) => self.tool_call_update(&u),
            SessionUpdate::Plan(p) => {
                let text: Vec<String> =
                    p.entries.iter().map(|e| format!("[{}] {}", name_of(&e.status), e.content)).collect();
                let data = serde_json::to_value(&p).ok();
                self.entry(EntryKind::Plan, text.join("\n"), data);
                self.plan(&p).await;
            }
            _ => {}
        }
        // A flood of updates is sent as it comes, not held until the tick.
        if self.entries.len() >= BATCH {
            self.flush().await;
        }
    }

    fn tool_call(&mut self, t: &ToolCall) {
        let id = t.tool_call_id.0.to_string();
        self.tools.insert(id.clone(), t.title.clone());
        self.kinds.insert(id.clone(), name_of(&t.kind));
        let (kind, status) = (name_of(&t.kind), name_of(&t.status));
        let paths: Vec<String> = t.locations.iter().map(|l| l.path.to_string_lossy().into_owned()).collect();
        let data = json!({
            "tool_call_id": id, "title": t.title, "kind": kind, "status": status, "locations": paths,
            "raw_input": t.raw_input.as_ref().filter(|v| v.to_string().len() <= 4096),
        });
        self.entry(EntryKind::ToolCall, format!("{} ({kind}, {status})", t.title), Some(data));
    }

    fn tool_call_update(&mut self, u: &ToolCallUpdate) {
        let id = u.tool_call_id.0.to_string();
        if let Some(title) = &u.fields.title {
            self.tools.insert(id.clone(), title.clone());
        }
        if let Some(kind) = &u.fields.kind {
            self.kinds.insert(id.clone(), name_of(kind));
        }
        let title = self.tools.get(&id).cloned().unwrap_or_else(|| id.clone());
        let status = u.fields.status.as_ref().map(name_of);
        let text = match &status {
            Some(s) => format!("{title}: {s}"),
            None => format!("{title}: updated"),
        };
        let data = json!({
            "tool_call_id": id, "title": title, "status": status,
            "raw_output": u.fields.raw_output.as_ref().filter(|v| v.to_string().len() <= 4096),
        });
        self.entry(EntryKind::ToolCall, text, Some(data));
    }

    /// Makes the task's steps follow the plan: the plan's entries in order
    /// are steps this run added or found with the same title; a title or
    /// completion that changed is updated, a step this run added for an
    /// entry since dropped is deleted. The same plan twice changes nothing.
    async fn plan(&mut self, plan: &Plan) {
        let Target::Task(task_id) = self.target else { return };
        let c = &self.a.client;
        let task = match c.call::<GetTask>(task_id, (), ()).await {
            Ok(t) => t,
            Err(e) => return self.log("the plan's steps", &e),
        };
        let steps = task.steps;
        self.plan_steps.retain(|(id, _)| steps.iter().any(|s| s.id == *id));
        let entries: Vec<(Title, bool)> = plan
            .entries
            .iter()
            .filter_map(|e| {
                let title: String = e.content.chars().take(500).collect();
                Some((Title::new(title).ok()?, e.status == PlanEntryStatus::Completed))
            })
            .collect();
        let mut wrong = Vec::new();
        for (i, (title, done)) in entries.iter().enumerate() {
            let found = match self.plan_steps.get(i) {
                Some((id, _)) => steps.iter().find(|s| s.id == *id),
                None => {
                    let taken = &self.plan_steps;
                    let same = steps
                        .iter()
                        .find(|s| s.title == title.as_str() && !taken.iter().any(|(id, _)| *id == s.id));
                    if let Some(s) = same {
                        self.plan_steps.push((s.id, false));
                    }
                    same
                }
            };
            let patch = match found {
                Some(s) => StepPatch {
                    title: if s.title == title.as_str() {
                        Patch::Absent
                    } else {
                        Patch::Value(title.clone())
                    },
                    done: if s.done == *done { Patch::Absent } else { Patch::Value(*done) },
                    ..Default::default()
                },
                None => match c.call::<CreateStep>(task_id, (), NewStep { title: title.clone() }).await {
                    Ok(s) => {
                        self.plan_steps.push((s.id, true));
                        StepPatch {
                            done: if *done { Patch::Value(true) } else { Patch::Absent },
                            ..Default::default()
                        }
                    }
                    Err(e) => {
                        self.log("a step of the plan", &e);
                        return;
                    }
                },
            };
            if !patch.title.is_absent() || !patch.done.is_absent() {
                let id = self.plan_steps[i].0;
                if let Err(e) = c.call::<UpdateStep>((task_id, id), (), patch).await {
                    wrong.push(e);
                }
            }
        }
        let dropped: Vec<(Uuid, bool)> =
            self.plan_steps.drain(entries.len().min(self.plan_steps.len())..).collect();
        for (id, added) in dropped {
            if added && let Err(e) = c.call::<DeleteStep>((task_id, id), (), ()).await {
                wrong.push(e);
            }
        }
        if let Some(e) = wrong.first() {
            self.log("the plan's steps", e);
        }
    }

    /// Posts what the agent said and thought since its last comment, if
    /// anything; `instead` is the comment's text when it only thought.
    async fn comment(&mut self, instead: &str) {
        let said = std::mem::take(&mut self.said);
        let thought = std::mem::take(&mut self.thought);
        if said.trim().is_empty() && thought.trim().is_empty() {
            return;
        }
        if !said.trim().is_empty() {
            self.last_said.clone_from(&said);
        }
        let content = if said.trim().is_empty() { instead.to_string() } else { said };
        let thinking = if thought.trim().is_empty() { None } else { LongText::new(thought).ok() };
        let new = match &self.target {
            Target::Task(task) | Target::Review(task) => {
                NewMessage { task_id: Some(*task), content, thinking, ..Default::default() }
            }
            Target::Reply(m) => NewMessage {
                chat_id: m.chat_id,
                task_id: m.task_id,
                parent_id: Some(m.id),
                content,
                thinking,
                ..Default::default()
            },
        };
        if let Err(e) = self.a.client.call::<PostMessage>((), (), new).await {
            self.log("the agent's comment", &e);
        }
    }

    /// The turn ended: what the agent said is posted, its usage recorded.
    pub async fn end_turn(&mut self, reason: Option<&str>, usage: Option<(u64, u64)>) {
        self.withdraw();
        self.flush().await;
        let instead = match reason {
            Some(r) => format!("The turn ended: {r}."),
            None => "The turn ended.".to_string(),
        };
        self.comment(&instead).await;
        if let Some((input_tokens, output_tokens)) = usage {
            let patch = RunPatch { usage: Some(Usage { input_tokens, output_tokens }), ..Default::default() };
            if let Err(e) = self.a.client.call::<UpdateRun>(self.run, (), patch).await {
                self.log("the usage", &e);
            }
        }
    }

    /// What the agent said last (its last comment): its summary of the
    /// work.
    pub fn last_said(&self) -> &str {
        &self.last_said
    }

    /// Whether a question waits for a person.
    pub fn asking(&self) -> bool {
        self.asked.is_some()
    }

    /// A permission request: asked on the board as the run's question,
    /// or after the question open now.
    pub async fn ask(
        &mut self,
        request: RequestPermissionRequest,
        responder: Responder<RequestPermissionResponse>,
    ) {
        let id = request.tool_call.tool_call_id.0.to_string();
        let kind =
            request.tool_call.fields.kind.as_ref().map(name_of).or_else(|| self.kinds.get(&id).cloned());
        let permissions = &self.a.entry.permissions;
        if permissions.allows(kind.as_deref())
            && let Some(option) = allowing(&request.options)
        {
            // The runner's file allows it: answered here, and said so.
            let title = request.tool_call.fields.title.clone().or_else(|| self.tools.get(&id).cloned());
            let text = format!(
                "Allowed by the runner (permissions = {}): {}",
                permissions.describe(),
                title.unwrap_or_else(|| id.clone())
            );
            let data = json!({
                "tool_call_id": id, "kind": kind, "option_id": option.option_id.0.to_string(), "by": "runner",
            });
            self.entry(EntryKind::Answer, text, Some(data));
            let _ = responder.respond(selected(option));
            return;
        }
        if self.asked.is_some() {
            self.waiting.push_back((request, responder));
            return;
        }
        let title =
            request.tool_call.fields.title.clone().or_else(|| self.tools.get(&id).cloned()).unwrap_or(id);
        let mut text = format!("The agent asks permission: {title}");
        text = text.chars().take(10_000).collect();
        self.flush().await;
        self.comment(&text).await;
        self.questions += 1;
        let qid = format!("permission-{}", self.questions);
        let mut options: Vec<(String, PermissionOption)> = Vec::new();
        for (i, o) in request.options.into_iter().take(OPTIONS).enumerate() {
            let theirs = o.option_id.0.to_string();
            let ok =
                (1..=100).contains(&theirs.chars().count()) && !options.iter().any(|(id, _)| *id == theirs);
            options.push((if ok { theirs } else { format!("option-{}", i + 1) }, o));
        }
        if options.is_empty() {
            let _ = responder.respond(cancelled());
            return;
        }
        let question = Question {
            id: qid.clone(),
            text,
            options: options
                .iter()
                .map(|(id, o)| {
                    let label = if o.name.trim().is_empty() {
                        name_of(&o.kind)
                    } else {
                        o.name.chars().take(500).collect()
                    };
                    QuestionOption { id: id.clone(), label }
                })
                .collect(),
        };
        let patch = RunPatch { question: Patch::Value(question), ..Default::default() };
        match self.a.client.call::<UpdateRun>(self.run, (), patch).await {
            Ok(run) => self.asked = Some(Asked { id: qid, after: run.transcript_count, options, responder }),
            Err(e) => {
                self.log("the agent's question", &e);
                let _ = responder.respond(cancelled());
            }
        }
    }

    /// The run changed on the board: answers the agent if a person
    /// answered its question.
    pub async fn check_answer(&mut self) {
        let Some((qid, after)) = self.asked.as_ref().map(|q| (q.id.clone(), q.after)) else { return };
        let c = &self.a.client;
        let run = match c.call::<GetRun>(self.run, (), ()).await {
            Ok(r) => r,
            Err(e) => return self.log("the run", &e),
        };
        if run.state.is_final() {
            return self.withdraw();
        }
        if run.question.as_ref().is_some_and(|q| q.id == qid) {
            return;
        }
        // The answer is in the transcript, after the question.
        let mut after = after;
        let answer = loop {
            let q = TranscriptQuery { after: Some(after), limit: Some(1000) };
            let page = match c.call::<GetTranscript>(self.run, q, ()).await {
                Ok(p) => p,
                Err(e) => return self.log("the answer", &e),
            };
            let Some(last) = page.last() else { break None };
            after = last.n;
            let found = page.into_iter().find(|e| {
                e.kind == EntryKind::Answer
                    && e.data.as_ref().and_then(|d| d["question_id"].as_str()) == Some(qid.as_str())
            });
            if found.is_some() {
                break found;
            }
        };
        let Some(asked) = self.asked.take() else { return };
        let response = match answer {
            None => cancelled(),
            Some(entry) => {
                let picked = entry.data.as_ref().and_then(|d| d["option_id"].as_str().map(String::from));
                let choice = match picked {
                    Some(id) => asked.options.iter().find(|(o, _)| *o == id),
                    // A person answered in words: an option of that name,
                    // else the first that rejects.
                    None => asked
                        .options
                        .iter()
                        .find(|(id, o)| {
                            let t = entry.text.trim();
                            id.eq_ignore_ascii_case(t) || o.name.trim().eq_ignore_ascii_case(t)
                        })
                        .or_else(|| {
                            asked.options.iter().find(|(_, o)| {
                                matches!(
                                    o.kind,
                                    PermissionOptionKind::RejectOnce | PermissionOptionKind::RejectAlways
                                )
                            })
                        }),
                };
                choice.map_or_else(cancelled, |(_, o)| selected(o))
            }
        };
        let _ = asked.responder.respond(response);
        if let Some((request, responder)) = self.waiting.pop_front() {
            Box::pin(self.ask(request, responder)).await;
        }
    }

    /// Answers the open permission request and those waiting `cancelled`.
    pub fn withdraw(&mut self) {
        if let Some(asked) = self.asked.take() {
            let _ = asked.responder.respond(cancelled());
        }
        for (_, responder) in self.waiting.drain(..) {
            let _ = responder.respond(cancelled());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(id: &str, kind: PermissionOptionKind) -> PermissionOption {
        PermissionOption::new(id.to_string(), id.to_string(), kind)
    }

    #[test]
    fn the_runner_allows_once_rather_than_always_and_never_picks_a_rejection() {
        let claude = [
            option("allow_always", PermissionOptionKind::AllowAlways),
            option("allow", PermissionOptionKind::AllowOnce),
            option("reject", PermissionOptionKind::RejectOnce),
        ];
        assert_eq!(allowing(&claude).map(|o| o.option_id.0.to_string()), Some("allow".into()));
        let always = [
            option("reject", PermissionOptionKind::RejectOnce),
            option("ok", PermissionOptionKind::AllowAlways),
        ];
        assert_eq!(allowing(&always).map(|o| o.option_id.0.to_string()), Some("ok".into()));
        assert!(allowing(&[option("no", PermissionOptionKind::RejectAlways)]).is_none());
    }
}
