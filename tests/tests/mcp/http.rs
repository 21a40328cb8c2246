//! MCP over Streamable HTTP at `/mcp` of a real server, with the rmcp
//! client.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    GetPromptRequestParams, ReadResourceRequestParams, ResourceContents, SubscribeRequestParams,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::support::{Board, Session, call, client, ok, text};

async fn connect(board: &Board, token: &str) -> (Session, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let config =
        StreamableHttpClientTransportConfig::with_uri(board.mcp_url()).auth_header(token.to_string());
    let transport = StreamableHttpClientTransport::from_config(config);
    let (handler, updates) = client();
    let session = handler.serve(transport).await.expect("the MCP session starts");
    (session, updates)
}

#[tokio::test]
async fn tools_list_names_every_tool_with_input_and_output_schemas() {
    let board = Board::start().await;
    let (session, _) = connect(&board, &board.owner.clone()).await;
    let tools = session.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, taskboard_mcp::TOOL_NAMES);
    for tool in &tools {
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")), "{}", tool.name);
        let output =
            tool.output_schema.as_ref().unwrap_or_else(|| panic!("{} has no output schema", tool.name));
        assert_eq!(output.get("type"), Some(&json!("object")), "{}", tool.name);
        assert!(tool.description.as_ref().is_some_and(|d| d.len() > 40), "{} is described", tool.name);
    }
    // The core's request types are the schemas: create_task's fields come
    // from the task body, with its limits and enums.
    let create = tools.iter().find(|t| t.name == "create_task").unwrap();
    let props = create.input_schema["properties"].as_object().unwrap();
    assert!(props["title"]["maxLength"].is_number(), "title keeps its limit: {}", props["title"]);
    assert!(props["priority"].to_string().contains("urgent"), "priority keeps its values");
    assert!(props.contains_key("project") && !props.contains_key("project_id"), "project by slug");
    assert_eq!(create.input_schema["required"], json!(["project", "title"]));
    // The whole list fits in a model's context.
    let listed = serde_json::to_string(&json!({"tools": tools})).unwrap();
    eprintln!("tools/list: {} bytes, about {} tokens", listed.len(), listed.len() / 4);
    assert!(listed.len() / 4 < 9500, "tools/list is {} bytes", listed.len());
    session.cancel().await.ok();
    board.shutdown().await;
}

#[tokio::test]
async fn the_worker_profile_offers_the_tools_of_work_only() {
    let board = Board::start().await;
    let token = board.agent("bot").await;
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}?profile=worker", board.mcp_url()))
        .auth_header(token.clone());
    let (handler, _updates) = client();
    let session = handler
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the MCP session starts");
    let tools = session.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, taskboard_mcp::WORKER_TOOL_NAMES);
    let listed = serde_json::to_string(&json!({"tools": tools})).unwrap();
    assert!(listed.chars().count() <= 12_000, "worker tools/list is {} characters", listed.len());
    // A tool of the full profile only is no tool here.
    let refused = session.call_tool(rmcp::model::CallToolRequestParams::new("create_task")).await;
    assert!(refused.is_err(), "create_task is not a worker tool");
    let task = board.task("Work").await;
    // Without output schemas, answers still carry structured content.
    let got = call(&session, "get_task", json!({"task": task["key"]})).await;
    assert_ne!(got.is_error, Some(true), "{:?}", got.content);
    assert_eq!(got.structured_content.expect("structured content")["task"]["key"], task["key"]);
    session.cancel().await.ok();
    taskboard_core::tls::install_provider();
    let bad = reqwest::Client::new()
        .post(format!("{}?profile=everything", board.mcp_url()))
        .bearer_auth(&token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    board.shutdown().await;
}

#[tokio::test]
async fn an_agent_works_a_task_through_the_whole_loop() {
    let board = Board::start().await;
    let token = board.agent("bot").await;
    let task = board.task("Write the parser").await;
    let key = task["key"].as_str().unwrap().to_string();
    let (session, _) = connect(&board, &token).await;

    let me = ok(&session, "whoami", json!({})).await;
    assert_eq!(me["member"]["slug"], "bot");
    let ready = ok(&session, "ready_tasks", json!({"project": "web"})).await;
    assert_eq!(ready["tasks"][0]["key"], key.as_str());
    let claimed = ok(&session, "claim_task", json!({"project": "web", "lease_seconds": 60})).await;
    assert_eq!(claimed["task"]["key"], key.as_str());
    assert_eq!(claimed["task"]["status"], "in_progress");
    assert_eq!(claimed["task"]["lease"]["holder"]["slug"], "bot");
    let beat = ok(&session, "heartbeat", json!({"task": key, "lease_seconds": 120})).await;
    assert_eq!(beat["task"]["lease"]["holder"]["slug"], "bot");
    ok(&session, "add_step", json!({"task": key, "title": "tokenizer"})).await;
    ok(&session, "add_step", json!({"task": key, "title": "grammar"})).await;
    let step = ok(&session, "complete_step", json!({"task": key, "step": 1})).await;
    assert_eq!(step["step"]["done"], true);
    let comment =
        ok(&session, "comment", json!({"task": key, "content": "tokenizer done", "mentions": ["owner"]}))
            .await;
    assert_eq!(comment["message"]["content"], "tokenizer done");
    let read = ok(&session, "get_task", json!({"task": key})).await;
    assert_eq!(read["task"]["steps"][0]["done"], true);
    assert!(read["comments"].as_array().unwrap().iter().any(|c| c["content"] == "tokenizer done"));
    let finished =
        ok(&session, "update_task", json!({"task": key, "status": "review", "reviewer": "owner"})).await;
    assert_eq!(finished["task"]["status"], "review");

    // The board, read through the REST API, shows the work.
    let id = task["id"].as_str().unwrap();
    let seen = board.rest("GET", &format!("/api/v1/tasks/{id}"), Value::Null).await;
    assert_eq!(seen["status"], "review");
    assert_eq!(seen["assignee"]["slug"], "bot");
    assert_eq!(seen["reviewer"]["slug"], "owner");
    assert_eq!(seen["steps"].as_array().unwrap().len(), 2);
    assert_eq!(seen["steps"][0]["done"], true);
    assert_eq!(seen["steps"][1]["done"], false);
    let comments = board.rest("GET", &format!("/api/v1/messages?task_id={id}"), Value::Null).await;
    let bot_says: Vec<&Value> =
        comments.as_array().unwrap().iter().filter(|m| m["author"]["slug"] == "bot").collect();
    assert_eq!(bot_says.len(), 1);
    assert_eq!(bot_says[0]["content"], "tokenizer done");

    // Nothing else is ready: claim answers no task, not an error.
    let none = ok(&session, "claim_task", json!({})).await;
    assert_eq!(none["task"], Value::Null);
    session.cancel().await.ok();
    board.shutdown().await;
}

#[tokio::test]
async fn a_refused_call_is_a_tool_error_with_the_api_detail() {
    let board = Board::start().await;
    let first = board.agent("first").await;
    let second = board.agent("second").await;
    let task = board.task("Contested").await;
    let key = task["key"].as_str().unwrap();
    let (a, _) = connect(&board, &first).await;
    let (b, _) = connect(&board, &second).await;
    ok(&a, "take_task", json!({"task": key})).await;

    let refused = call(&b, "take_task", json!({"task": key})).await;
    assert_eq!(refused.is_error, Some(true));
    let said = text(&refused);
    assert!(said.starts_with("409 conflict: "), "{said}");
    // The detail is the API's own: the same call over REST says the same.
    let rest = board
        .http
        .post(format!("{}/api/v1/tasks/{}/take", board.url, task["id"].as_str().unwrap()))
        .bearer_auth(&second)
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 409);
    let detail = rest.json::<Value>().await.unwrap()["detail"].as_str().unwrap().to_string();
    assert_eq!(said, format!("409 conflict: {detail}"));

    // A name that names nothing, and an argument the tool does not take.
    let missing = call(&b, "get_task", json!({"task": "WEB-999"})).await;
    assert_eq!(missing.is_error, Some(true));
    assert_eq!(text(&missing), "404 not_found: task WEB-999 not found");
    let typo = call(&b, "update_task", json!({"task": key, "stauts": "done"})).await;
    assert_eq!(typo.is_error, Some(true));
    assert_eq!(text(&typo), "422 validation_error: stauts: unknown argument; did you mean status?");
    // A value the core refuses keeps the core's detail (the title's limit).
    let long = call(&a, "add_step", json!({"task": key, "title": "x".repeat(501)})).await;
    assert_eq!(long.is_error, Some(true));
    assert!(text(&long).contains("title"), "{}", text(&long));
    a.cancel().await.ok();
    b.cancel().await.ok();
    board.shutdown().await;
}

#[tokio::test]
async fn a_session_presents_the_lease_it_took_so_a_lost_lease_stops_its_writes() {
    let board = Board::start().await;
    let first = board.agent("first").await;
    let second = board.agent("second").await;
    let task = board.task("Fenced").await;
    let key = task["key"].as_str().unwrap();
    let id = task["id"].as_str().unwrap();
    let (a, _) = connect(&board, &first).await;
    let taken = ok(&a, "take_task", json!({"task": key, "lease_seconds": 60})).await;
    let lease = taken["task"]["lease"]["id"].as_str().unwrap().to_string();
    ok(&a, "comment", json!({"task": key, "content": "on it"})).await;

    // The owner hands the task to the second agent, which takes it under
    // a lease of its own: the first agent's lease is no longer current.
    board.rest("PATCH", &format!("/api/v1/tasks/{id}"), json!({"assignee_id": null, "status": "todo"})).await;
    let res = board
        .http
        .post(format!("{}/api/v1/tasks/{id}/take", board.url))
        .bearer_auth(&second)
        .json(&json!({"lease_seconds": 60}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let current = res.json::<Value>().await.unwrap()["lease"]["id"].as_str().unwrap().to_string();
    assert_ne!(current, lease);

    // The session presents the lease it took, by key or by id: refused,
    // and the detail says the lease is not current.
    for reference in [key, id] {
        let refused = call(&a, "comment", json!({"task": reference, "content": "still mine?"})).await;
        assert_eq!(refused.is_error, Some(true));
        assert!(text(&refused).starts_with("409 conflict: "), "{}", text(&refused));
        assert!(text(&refused).contains(&lease), "{}", text(&refused));
    }
    let refused = call(&a, "update_task", json!({"task": key, "status": "done"})).await;
    assert_eq!(refused.is_error, Some(true));
    // A session that took no lease comments as any agent may.
    let (fresh, _) = connect(&board, &first).await;
    ok(&fresh, "comment", json!({"task": key, "content": "a word from outside"})).await;

    let now = board.rest("GET", &format!("/api/v1/tasks/{id}"), Value::Null).await;
    assert_eq!(now["lease"]["id"], current.as_str());
    assert_eq!(now["status"], "in_progress");
    a.cancel().await.ok();
    fresh.cancel().await.ok();
    board.shutdown().await;
}

#[tokio::test]
async fn a_task_resource_reads_as_markdown_and_a_subscriber_hears_of_changes() {
    let board = Board::start().await;
    let token = board.agent("watcher").await;
    let task = board.task("Ship the release").await;
    let key = task["key"].as_str().unwrap();
    let id = task["id"].as_str().unwrap();
    let (session, mut updates) = connect(&board, &token).await;

    let uri = format!("taskboard://tasks/{key}");
    let read =
        session.read_resource(ReadResourceRequestParams::new(uri.clone())).await.expect("resources/read");
    let ResourceContents::TextResourceContents { text, mime_type, .. } = &read.contents[0] else {
        panic!("a text resource")
    };
    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
    assert!(text.starts_with(&format!("# {key} Ship the release\n")), "{text}");
    assert!(text.contains("- status: todo"), "{text}");
    let templates = session.list_all_resource_templates().await.expect("templates");
    assert_eq!(templates[0].uri_template, "taskboard://tasks/{key}");

    #[allow(deprecated)]
    session.subscribe(SubscribeRequestParams::new(uri.clone())).await.expect("resources/subscribe");
    // A change made by someone else, through the REST API.
    board.rest("PATCH", &format!("/api/v1/tasks/{id}"), json!({"priority": "urgent"})).await;
    let told = tokio::time::timeout(Duration::from_secs(30), updates.recv()).await.expect("a notification");
    assert_eq!(told.as_deref(), Some(uri.as_str()));
    // A comment on the task changes the resource (its latest comments).
    // (a comment reaches those it concerns: here the watcher is mentioned)
    let me = ok(&session, "whoami", json!({})).await;
    let mention = json!({"task_id": id, "content": "ping", "mentions": [me["member"]["id"]]});
    board.rest("POST", "/api/v1/messages", mention).await;
    let told = tokio::time::timeout(Duration::from_secs(30), updates.recv()).await.expect("a notification");
    assert_eq!(told.as_deref(), Some(uri.as_str()));
    let again = session.read_resource(ReadResourceRequestParams::new(uri.clone())).await.unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &again.contents[0] else { panic!() };
    assert!(text.contains("- priority: urgent") && text.contains("owner: ping"), "{text}");

    let prompt = session.get_prompt(GetPromptRequestParams::new("work_loop")).await.expect("prompts/get");
    let said = serde_json::to_string(&prompt.messages).unwrap();
    for step in ["claim_task", "heartbeat", "comment", "update_task"] {
        assert!(said.contains(step), "work_loop names {step}");
    }
    session.cancel().await.ok();
    board.shutdown().await;
}

/// A subscriber whose token is revoked hears of no change after it; one
/// whose token stands does (docs/decisions.md, 20.d).
#[tokio::test]
async fn a_subscription_stops_when_the_subscribers_token_is_revoked() {
    let board = Board::start().await;
    let watcher = board.agent("watcher").await;
    let control = board.agent("control").await;
    let task = board.task("Ship the release").await;
    let (key, id) = (task["key"].as_str().unwrap(), task["id"].as_str().unwrap());
    let uri = format!("taskboard://tasks/{key}");
    let (watching, mut watcher_hears) = connect(&board, &watcher).await;
    let (controlling, mut control_hears) = connect(&board, &control).await;
    for session in [&watching, &controlling] {
        #[allow(deprecated)]
        session.subscribe(SubscribeRequestParams::new(uri.clone())).await.expect("resources/subscribe");
    }
    let me = ok(&watching, "whoami", json!({})).await;
    let member = me["member"]["id"].as_str().unwrap().to_string();
    board.rest("POST", &format!("/api/v1/members/{member}/revoke-token"), Value::Null).await;
    board.rest("PATCH", &format!("/api/v1/tasks/{id}"), json!({"priority": "urgent"})).await;
    let told =
        tokio::time::timeout(Duration::from_secs(30), control_hears.recv()).await.expect("a notification");
    assert_eq!(told.as_deref(), Some(uri.as_str()), "the change was published");
    // The watcher's follower reads the same events in the same order: the
    // revocation first, where it stops.
    let heard = tokio::time::timeout(Duration::from_secs(2), watcher_hears.recv()).await;
    assert!(!matches!(heard, Ok(Some(_))), "a revoked subscriber heard {heard:?}");
    watching.cancel().await.ok();
    controlling.cancel().await.ok();
    board.shutdown().await;
}

/// A REST call with `token`; the answer's JSON after a 2xx.
async fn rest_as(board: &Board, token: &str, method: reqwest::Method, path: &str, body: Value) -> Value {
    let mut req = {
        taskboard_core::tls::install_provider();
        reqwest::Client::new()
    }
    .request(method.clone(), format!("{}{path}", board.url))
    .bearer_auth(token);
    if !body.is_null() {
        req = req.json(&body);
    }
    let res = req.send().await.expect("the server answers");
    let status = res.status();
    let text = res.text().await.unwrap();
    assert!(status.is_success(), "{method} {path}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// A reviewer agent on the `reviewer` profile reads a task's changes and
/// files a review asking for changes on a line; the task's agent gets the
/// next round (docs/rules.md, review and land).
#[tokio::test]
async fn a_reviewer_reads_the_changes_and_files_its_review_through_mcp() {
    let board = Board::start().await;
    let coder = board.agent("coder").await;
    let reviewer = board.agent("rev").await;
    let task = board.task("Add b").await;
    let (key, id) = (task["key"].as_str().unwrap(), task["id"].as_str().unwrap());
    let me = rest_as(&board, &coder, reqwest::Method::GET, "/api/v1/members/me", Value::Null).await;
    let run = board.rest("POST", &format!("/api/v1/tasks/{id}/runs"), json!({"agent_id": me["id"]})).await;
    let run_path = format!("/api/v1/runs/{}", run["id"].as_str().unwrap());
    rest_as(&board, &coder, reqwest::Method::PATCH, &run_path, json!({"state": "running"})).await;
    let diff = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,3 @@\n fn a() {}\n+fn b() {}\n fn c() {}\n";
    let changes = json!({"task": {"base_commit": "b0", "head_commit": "h1", "branch": format!("taskboard/{key}"),
        "files": [{"path": "src/lib.rs", "status": "modified", "additions": 1, "deletions": 0}], "diff": diff}});
    rest_as(&board, &coder, reqwest::Method::POST, &format!("{run_path}/changes"), changes).await;
    rest_as(&board, &coder, reqwest::Method::PATCH, &run_path, json!({"state": "succeeded"})).await;

    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("{}?profile=reviewer", board.mcp_url()))
            .auth_header(reviewer.clone());
    let (handler, _updates) = client();
    let session = handler.serve(StreamableHttpClientTransport::from_config(config)).await.expect("a session");
    let tools = session.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, taskboard_mcp::REVIEWER_TOOL_NAMES);
    let got = call(&session, "get_changes", json!({"task": key})).await;
    let said = text(&got);
    assert!(said.contains("src/lib.rs +1 -0") && said.contains("+fn b() {}"), "{said}");
    let comment = json!({"path": "src/lib.rs", "line": 2, "side": "new", "body": "b should return 1"});
    let filed = call(
        &session,
        "review_submit",
        json!({"task": key, "verdict": "request_changes",
        "body": "one thing", "comments": [comment]}),
    )
    .await;
    assert_ne!(filed.is_error, Some(true), "{:?}", filed.content);
    assert_eq!(filed.structured_content.unwrap()["review"]["comments"][0]["text"], "fn b() {}");
    let listed = text(&call(&session, "get_reviews", json!({"task": key})).await);
    assert!(listed.contains("src/lib.rs:2") && listed.contains("b should return 1"), "{listed}");
    // A line outside the diff is refused with the API's detail.
    let outside = call(
        &session,
        "review_submit",
        json!({"task": key, "verdict": "comment",
        "comments": [{"path": "src/lib.rs", "line": 40, "body": "?"}]}),
    )
    .await;
    assert_eq!(outside.is_error, Some(true));
    assert!(text(&outside).contains("not in the diff"), "{}", text(&outside));
    let runs = board.rest("GET", &format!("/api/v1/runs?task_id={id}"), Value::Null).await;
    let round2 = runs.as_array().unwrap().iter().find(|r| r["round"] == 2).expect("a second round");
    assert_eq!(round2["agent"]["slug"], "coder");
    session.cancel().await.ok();
    board.shutdown().await;
}

/// An `initialize` request, raw.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

#[tokio::test]
async fn the_endpoint_refuses_missing_credentials_and_foreign_origins() {
    let board = Board::start().await;
    let post = |token: Option<&str>, origin: Option<&str>| {
        let mut req = board
            .http
            .post(board.mcp_url())
            .header("accept", "application/json, text/event-stream")
            .json(&initialize());
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req.send()
    };
    let none = post(None, None).await.unwrap();
    assert_eq!(none.status(), 401);
    assert_eq!(none.headers()["www-authenticate"], "Bearer");
    assert_eq!(none.json::<Value>().await.unwrap()["code"], "unauthorized");
    assert_eq!(post(Some("tbk-not-a-token"), None).await.unwrap().status(), 401);

    let foreign = post(Some(&board.owner), Some("http://evil.example")).await.unwrap();
    assert_eq!(foreign.status(), 403);
    assert_eq!(foreign.json::<Value>().await.unwrap()["code"], "forbidden");
    let own_origin = board.url.clone();
    let same = post(Some(&board.owner), Some(&own_origin)).await.unwrap();
    assert_eq!(same.status(), 200);
    assert!(same.headers().contains_key("mcp-session-id"), "a session starts");

    // The rmcp client with a bad token does not get a session.
    let config = StreamableHttpClientTransportConfig::with_uri(board.mcp_url()).auth_header("tbk-wrong");
    let (handler, _) = client();
    assert!(handler.serve(StreamableHttpClientTransport::from_config(config)).await.is_err());
    board.shutdown().await;
}

#[tokio::test]
async fn a_tool_beyond_the_access_tokens_scopes_is_refused() {
    let board = Board::start().await;
    let task = board.task("Read only").await;
    let key = task["key"].as_str().unwrap();
    let me = board.rest("GET", "/api/v1/members/me", Value::Null).await;
    let created = board
        .rest(
            "POST",
            &format!("/api/v1/members/{}/tokens", me["id"].as_str().unwrap()),
            json!({"name": "reader", "scopes": ["read"]}),
        )
        .await;
    let (session, _) = connect(&board, created["token"].as_str().unwrap()).await;
    // Only the reading tools are listed for a `read` token.
    let listed: Vec<String> =
        session.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    for reading in ["whoami", "get_task", "search_tasks", "ready_tasks", "read_comments", "wait_for_events"] {
        assert!(listed.iter().any(|n| n == reading), "{reading} in {listed:?}");
    }
    for writing in ["claim_task", "update_task", "create_task", "comment", "complete_step", "heartbeat"] {
        assert!(!listed.iter().any(|n| n == writing), "{writing} not in {listed:?}");
    }
    let read = ok(&session, "get_task", json!({"task": key})).await;
    assert_eq!(read["task"]["title"], "Read only", "{read}");
    let refused = call(&session, "update_task", json!({"task": key, "status": "done"})).await;
    assert_eq!(refused.is_error, Some(true));
    let said = text(&refused);
    assert!(said.starts_with("403 forbidden: ") && said.contains("tasks:write"), "{said}");
    let unchanged =
        board.rest("GET", &format!("/api/v1/tasks/{}", task["id"].as_str().unwrap()), Value::Null).await;
    assert_eq!(unchanged["status"], "todo");
    session.cancel().await.ok();
    // A token restricted to the project finds a task by its key.
    let restricted = board
        .rest(
            "POST",
            &format!("/api/v1/members/{}/tokens", me["id"].as_str().unwrap()),
            json!({"name": "web", "scopes": ["read"], "project_ids": [board.project["id"]]}),
        )
        .await;
    let (session, _) = connect(&board, restricted["token"].as_str().unwrap()).await;
    let read = ok(&session, "get_task", json!({"task": key})).await;
    assert_eq!(read["task"]["key"], key, "{read}");
    session.cancel().await.ok();
    // Writing tasks adds the tools that change tasks, not those that post.
    let writer = board
        .rest(
            "POST",
            &format!("/api/v1/members/{}/tokens", me["id"].as_str().unwrap()),
            json!({"name": "tasks", "scopes": ["read", "tasks:write"]}),
        )
        .await;
    let (session, _) = connect(&board, writer["token"].as_str().unwrap()).await;
    let listed: Vec<String> =
        session.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    assert!(
        listed.iter().any(|n| n == "update_task") && listed.iter().any(|n| n == "claim_task"),
        "{listed:?}"
    );
    assert!(!listed.iter().any(|n| n == "comment" || n == "post_chat"), "{listed:?}");
    session.cancel().await.ok();
    board.shutdown().await;
}
