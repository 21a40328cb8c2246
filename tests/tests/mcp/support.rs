//! What the MCP tests share: a real server on 127.0.0.1 port 0 with a
//! project, two agents and tasks made through the REST API, and the rmcp
//! client (a handler that passes resource notifications to the test).

use std::net::SocketAddr;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ProtocolVersion, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use taskboard_server::{Config, McpLimits, Server, ServerHandle};
use tokio::sync::mpsc;

pub const OWNER_PASSWORD: &str = "owner-password-1";

/// A board served over HTTP, with the REST API at hand.
pub struct Board {
    pub _dir: tempfile::TempDir,
    pub server: Option<ServerHandle>,
    pub url: String,
    pub owner: String,
    pub http: reqwest::Client,
    pub project: Value,
}

impl Board {
    pub async fn start() -> Board {
        Board::start_with(McpLimits::default()).await
    }

    /// A board whose MCP sessions have these bounds.
    pub async fn start_with(mcp: McpLimits) -> Board {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut config = Config::new(dir.path().join("data"));
        config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        config.owner_password = Some(OWNER_PASSWORD.into());
        config.mcp = mcp;
        let server = Server::bind(config).await.expect("the server binds");
        let owner = server.board().login("owner", OWNER_PASSWORD, None).await.expect("owner login").token;
        let server = server.spawn();
        let url = format!("http://{}", server.addr());
        let mut board = Board {
            _dir: dir,
            server: Some(server),
            url,
            owner,
            http: {
                taskboard_core::tls::install_provider();
                reqwest::Client::new()
            },
            project: json!(null),
        };
        board.project = board.rest("POST", "/api/v1/projects", json!({"name": "Web", "slug": "web"})).await;
        board
    }

    /// The MCP endpoint, for rmcp's HTTP client: ring, the workspace's
    /// one TLS provider, is made the process's first, which that client
    /// (reqwest 0.13 built without a provider) takes.
    pub fn mcp_url(&self) -> String {
        taskboard_tests::tls_provider();
        format!("{}/mcp", self.url)
    }

    /// A REST call as the owner; a 2xx answer's JSON.
    pub async fn rest(&self, method: &str, path: &str, body: Value) -> Value {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
        let mut req =
            self.http.request(method.clone(), format!("{}{path}", self.url)).bearer_auth(&self.owner);
        if !body.is_null() {
            req = req.json(&body);
        }
        let res = req.send().await.expect("the server answers");
        let status = res.status();
        let text = res.text().await.expect("a body");
        assert!(status.is_success(), "{method} {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// A new agent in the project; its token.
    pub async fn agent(&self, slug: &str) -> String {
        let created =
            self.rest("POST", "/api/v1/members", json!({"name": slug, "slug": slug, "type": "agent"})).await;
        let project = self.project["id"].as_str().unwrap();
        self.rest(
            "POST",
            &format!("/api/v1/projects/{project}/members"),
            json!({"member_id": created["id"]}),
        )
        .await;
        created["token"].as_str().expect("an agent token").to_string()
    }

    /// A new task of the project (status todo); its JSON.
    pub async fn task(&self, title: &str) -> Value {
        let project = self.project["id"].as_str().unwrap();
        self.rest(
            "POST",
            &format!("/api/v1/tasks?project_id={project}"),
            json!({"title": title, "status": "todo"}),
        )
        .await
    }

    pub async fn shutdown(mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
    }
}

/// The test's MCP client: negotiates the latest revision with sessions
/// and hands resource-updated notifications to the test.
pub struct Client {
    pub updated: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.updated.send(params.uri);
    }
}

pub fn client() -> (Client, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Client { updated: tx }, rx)
}

pub type Session = RunningService<RoleClient, Client>;

/// Calls a tool; the raw result.
pub async fn call(session: &Session, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else { panic!("arguments are an object") };
    session
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: protocol error {e}"))
}

/// Calls a tool that must succeed; its structured content, checked
/// against the tool's output schema.
pub async fn ok(session: &Session, tool: &str, args: Value) -> Value {
    let result = call(session, tool, args).await;
    assert_ne!(result.is_error, Some(true), "{tool} failed: {:?}", result.content);
    assert!(!result.content.is_empty(), "{tool} answers a text too");
    let structured = result.structured_content.unwrap_or_else(|| panic!("{tool}: no structured content"));
    let tools = session.list_all_tools().await.expect("tools/list");
    let schema = tools
        .iter()
        .find(|t| t.name == tool)
        .and_then(|t| t.output_schema.clone())
        .expect("an output schema");
    if let Err(e) = check_schema(&Value::Object((*schema).clone()), &structured, tool) {
        panic!("{tool}: the answer does not fit the output schema: {e}");
    }
    structured
}

/// The text of a result's first content block.
pub fn text(result: &CallToolResult) -> String {
    result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default()
}

/// A small JSON Schema check of what the tools' schemas use: type,
/// required, properties, items, enum, anyOf/oneOf.
pub fn check_schema(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if let Some(options) = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array) {
        return match options.iter().any(|o| check_schema(o, value, at).is_ok()) {
            true => Ok(()),
            false => Err(format!("{at}: {value} fits none of {schema}")),
        };
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let fits = types.iter().any(|t| match *t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            _ => true,
        });
        if !fits {
            return Err(format!("{at}: {value} is not of type {t}"));
        }
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array)
        && !values.contains(value)
    {
        return Err(format!("{at}: {value} is not one of {values:?}"));
    }
    if let (Some(required), Some(obj)) = (schema.get("required").and_then(Value::as_array), value.as_object())
    {
        for name in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(name) {
                return Err(format!("{at}: required {name} is missing in {value}"));
            }
        }
    }
    if let (Some(props), Some(obj)) = (schema.get("properties").and_then(Value::as_object), value.as_object())
    {
        for (name, sub) in props {
            if let Some(v) = obj.get(name) {
                check_schema(sub, v, &format!("{at}.{name}"))?;
            }
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, v) in list.iter().enumerate() {
            check_schema(items, v, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}
