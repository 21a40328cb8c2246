//! The MCP server: tools, task resources with subscriptions, and the
//! `work_loop` prompt, over any [`Connect`].

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role, ServerCapabilities, ServerConfig, SubscribeRequestParams, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use taskboard_wire::{Error, ErrorKind, Perform};
use taskboard_wire::{ListTasks, Page, TaskFilter};

use crate::leases::Leases;
use crate::subscribe::Subscriptions;
use crate::tools::Profile;
use crate::{Connect, render, schema, tools};

/// The protocol revisions served: the sessionless revision, whose
/// requests each carry what they need (any process of a board serves
/// them), and those with a session, in which a client subscribes to a
/// resource and hears of its changes on the session.
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2026_07_28,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2024_11_05,
];

const TASK_URI: &str = "taskboard://tasks/";

static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| tools::definitions(Profile::Full));
static WORKER_TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| tools::definitions(Profile::Worker));
static REVIEWER_TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| tools::definitions(Profile::Reviewer));

const INSTRUCTIONS: &str = "Taskboard: a task board shared by people and agents. Find work with \
ready_tasks or claim_task, read it with get_task, plan it as steps, report with comment, and \
finish with update_task (status review or done). The work_loop prompt has the whole loop.";

/// One MCP connection (a stdio process, or one session of the HTTP
/// transport).
pub struct McpServer<C: Connect> {
    connect: Arc<C>,
    subscriptions: Arc<Subscriptions>,
    leases: Arc<Leases>,
    profile: Profile,
}

impl<C: Connect> McpServer<C> {
    pub fn new(connect: C) -> McpServer<C> {
        McpServer::shared(Arc::new(connect))
    }

    /// A connection sharing `connect` with others.
    pub fn shared(connect: Arc<C>) -> McpServer<C> {
        McpServer { connect, subscriptions: Arc::default(), leases: Arc::default(), profile: Profile::Full }
    }

    /// The same connection offering only the tools of `profile`.
    pub fn with_profile(mut self, profile: Profile) -> McpServer<C> {
        self.profile = profile;
        self
    }

    fn tools(&self) -> &'static [Tool] {
        match self.profile {
            Profile::Full => &TOOLS,
            Profile::Worker => &WORKER_TOOLS,
            Profile::Reviewer => &REVIEWER_TOOLS,
        }
    }
}

impl<C: Connect> Drop for McpServer<C> {
    fn drop(&mut self) {
        self.subscriptions.stop.cancel();
    }
}

/// A refused call, as the text of a tool error: the API's status, code and
/// detail.
pub(crate) fn error_text(e: &Error) -> String {
    format!("{} {}: {}", e.kind().status(), e.kind().code(), e.detail())
}

fn protocol_error(e: Error) -> McpError {
    match e.kind() {
        ErrorKind::NotFound => McpError::resource_not_found(e.detail().to_string(), None),
        ErrorKind::Internal => McpError::internal_error(e.detail().to_string(), None),
        _ => McpError::invalid_params(error_text(&e), None),
    }
}

fn task_reference(uri: &str) -> Result<&str, McpError> {
    uri.strip_prefix(TASK_URI).filter(|r| !r.is_empty() && !r.contains('/')).ok_or_else(|| {
        McpError::resource_not_found(format!("no resource {uri}; tasks are {TASK_URI}{{key}}"), None)
    })
}

impl<C: Connect> ServerHandler for McpServer<C> {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_prompts()
            .build();
        ServerConfig::new(capabilities)
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_server_info(Implementation::new("taskboard", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PROTOCOL_VERSIONS)
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let all = self.tools().iter();
        let listed = match self.connect.scopes(&context.extensions) {
            // A token's tools: those its scopes allow.
            Some(scopes) => all.filter(|t| scopes.contains(&tools::scope(&t.name))).cloned().collect(),
            None => all.cloned().collect(),
        };
        Ok(ListToolsResult::with_all_items(listed))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(tool) = self.tools().iter().find(|t| t.name == request.name) else {
            return Err(McpError::invalid_params(format!("no tool named {}", request.name), None));
        };
        let args = request.arguments.unwrap_or_default();
        let result = async {
            schema::check_arguments(&tool.input_schema, &args)?;
            let mut backend = self.connect.backend(&context.extensions)?;
            if let Some(lease) = self.leases.for_args(&args) {
                backend = backend.presenting(lease);
            }
            let answer = tools::call(&backend, &tool.name, args).await?;
            self.leases.learn(&tool.name, &answer.structured);
            Ok(answer)
        }
        .await;
        let result = match result {
            Ok(answer) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(answer.text)]);
                r.structured_content = Some(answer.structured);
                r
            }
            Err(e) => CallToolResult::error(vec![ContentBlock::text(error_text(&e))]),
        };
        Ok(result.into())
    }

    /// The caller's open tasks; any task is readable by its key through
    /// the template.
    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let b = self.connect.backend(&context.extensions).map_err(protocol_error)?;
        let me = b.member_id("me").await.map_err(protocol_error)?;
        let filter = TaskFilter {
            assignee_id: Some(me),
            page: Page { limit: Some(100), ..Page::default() },
            ..Default::default()
        };
        let tasks = b.call::<ListTasks>((), filter, ()).await.map_err(protocol_error)?;
        let resources = tasks
            .into_iter()
            .filter(|t| t.status.is_open())
            .map(|t| {
                Resource::new(format!("{TASK_URI}{}", t.key), t.key.clone())
                    .with_title(t.title.clone())
                    .with_mime_type("text/markdown")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let template = ResourceTemplate::new(format!("{TASK_URI}{{key}}"), "task")
            .with_title("A task")
            .with_description(
                "A task as Markdown: fields, description, steps, sub-tasks, links and the latest \
                 comments. key: the task's key (WEB-12) or id. Subscribe to hear when it changes.",
            )
            .with_mime_type("text/markdown");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let reference = task_reference(&request.uri)?;
        let b = self.connect.backend(&context.extensions).map_err(protocol_error)?;
        let task = b.find_task(reference).await.map_err(protocol_error)?;
        let (links, comments) = tools::details(&b, &task, 10).await.map_err(protocol_error)?;
        let text = render::task_markdown(&task, &links, &comments);
        let contents = ResourceContents::text(text, request.uri).with_mime_type("text/markdown");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let reference = task_reference(&request.uri)?;
        let b = self.connect.backend(&context.extensions).map_err(protocol_error)?;
        let task = b.task_id(reference).await.map_err(protocol_error)?;
        self.subscriptions.subscribe(b, context.peer.clone(), request.uri, task).await.map_err(protocol_error)
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompt = Prompt::new(
            "work_loop",
            Some("How to work here as an agent: claim a task, hold it, report, finish."),
            Some(vec![
                PromptArgument::new("project")
                    .with_description("Only work in this project (slug)")
                    .with_required(false),
            ]),
        );
        Ok(ListPromptsResult::with_all_items(vec![prompt]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != "work_loop" {
            return Err(McpError::invalid_params(format!("no prompt named {}", request.name), None));
        }
        let project = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("project"))
            .and_then(|p| p.as_str())
            .map(str::to_string);
        let text = work_loop(project.as_deref());
        let result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description("The work loop of an agent on this board");
        Ok(result.into())
    }
}

fn work_loop(project: Option<&str>) -> String {
    let scope = project.map_or(String::new(), |p| format!(" with project: \"{p}\""));
    format!(
        "You work on a Taskboard board through its tools. Work in this loop:\n\
         \n\
         1. Find work: call claim_task{scope} with lease_seconds: 300. It takes the first ready \
         task for you alone and answers it, or task: null when nothing is ready; then call \
         wait_for_events until a task.ready or task.created event arrives, and claim again. \
         (ready_tasks shows what is ready without taking anything.)\n\
         2. Read it: get_task with the task's key gives the description, steps, links and the \
         latest comments. Resources taskboard://tasks/{{key}} give the same as Markdown.\n\
         3. Hold it: call heartbeat with the task's key well before lease.expires_at (every \
         two minutes with a five-minute lease). A lease that runs out gives the task back to \
         others.\n\
         4. Plan and do: add_step for each piece of the work, complete_step as each is done, \
         and comment on the task with progress, decisions and questions (mentions: slugs of \
         people who should read it).\n\
         5. Finish: comment with what you did and how it was checked, then update_task with \
         status: review (or done when nobody needs to check it). If you cannot finish, \
         release_task with the reason instead; if the task is not for you, reject_task.\n\
         6. Go back to 1.\n\
         \n\
         A refused tool call answers isError with the board's status and detail (for example \
         409 conflict when someone else already took the task): read the detail and adjust; \
         do not retry the same call unchanged."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worker profile's `tools/list` answer, as sent.
    fn listed(tools: &[Tool]) -> String {
        serde_json::to_string(&ListToolsResult::with_all_items(tools.to_vec())).unwrap()
    }

    #[test]
    fn a_tool_needs_only_read_exactly_when_it_only_reads() {
        for t in TOOLS.iter() {
            let read_only = t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
            let scope = tools::scope(&t.name);
            assert_eq!(scope == taskboard_wire::model::Scope::Read, read_only, "{}: {scope:?}", t.name);
        }
    }

    #[test]
    fn the_worker_profile_lists_its_tools_in_at_most_3000_tokens() {
        let worker = listed(&WORKER_TOOLS);
        // 3,000 tokens at four characters a token.
        assert!(
            worker.chars().count() <= 12_000,
            "worker tools/list is {} characters",
            worker.chars().count()
        );
        let names: Vec<&str> = WORKER_TOOLS.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, crate::WORKER_TOOL_NAMES);
        assert!(listed(&TOOLS).len() > worker.len());
        for name in crate::WORKER_TOOL_NAMES {
            assert!(crate::TOOL_NAMES.contains(name), "{name} is a tool of the full profile too");
        }
    }
}
