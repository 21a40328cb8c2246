//! MCP sessions over HTTP: each belongs to the member whose `initialize`
//! opened it, on every verb; they are bounded per member, per process and
//! in idle time; and a transport error answers JSON, never text.

use std::time::Duration;

use reqwest::{Method, RequestBuilder, Response};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use taskboard_server::McpLimits;

use crate::support::{Board, client};

const ACCEPT: &str = "application/json, text/event-stream";

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

fn ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

/// A request to `/mcp` as `token`, in `session` if given.
fn request(board: &Board, method: Method, token: &str, session: Option<&str>) -> RequestBuilder {
    let mut req = board
        .http
        .request(method, board.mcp_url())
        .header("accept", ACCEPT)
        .header("mcp-protocol-version", "2025-11-25")
        .bearer_auth(token);
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    req
}

/// Opens a session as `token` (initialize, then initialized); its id.
async fn open(board: &Board, token: &str) -> String {
    let res = request(board, Method::POST, token, None).json(&initialize()).send().await.unwrap();
    assert_eq!(res.status(), 200, "initialize");
    let id = res.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = res.text().await;
    let done = request(board, Method::POST, token, Some(&id))
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 202, "initialized");
    id
}

/// A ping in `session`; the status (the body read to its end).
async fn ping_in(board: &Board, token: &str, session: &str) -> u16 {
    let res = request(board, Method::POST, token, Some(session)).json(&ping(2)).send().await.unwrap();
    let status = res.status().as_u16();
    let _ = res.text().await;
    status
}

/// A JSON error answer: its status and body, checking it is JSON.
async fn json_answer(res: Response) -> (u16, Value) {
    let status = res.status().as_u16();
    let kind = res.headers().get("content-type").map(|v| v.to_str().unwrap().to_string());
    let text = res.text().await.unwrap();
    assert_eq!(kind.as_deref(), Some("application/json"), "{status} {text}");
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON: {text}")))
}

/// A 404 with a detail.
async fn not_found(res: Response) {
    let (status, body) = json_answer(res).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["code"], "not_found");
    assert!(body["detail"].as_str().unwrap().contains("Mcp-Session-Id"), "{body}");
}

#[tokio::test]
async fn a_session_is_its_members_alone_on_every_verb() {
    let board = Board::start().await;
    let one = board.agent("one").await;
    let two = board.agent("two").await;
    let session = open(&board, &one).await;

    // Another member naming the session: a tool call, the stream, the end.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}}});
    not_found(request(&board, Method::POST, &two, Some(&session)).json(&call).send().await.unwrap()).await;
    not_found(request(&board, Method::GET, &two, Some(&session)).send().await.unwrap()).await;
    not_found(request(&board, Method::DELETE, &two, Some(&session)).send().await.unwrap()).await;
    // A session nobody opened, on every verb.
    let unknown = "4b9f1c1e-0000-4000-8000-000000000000";
    not_found(request(&board, Method::DELETE, &one, Some(unknown)).send().await.unwrap()).await;
    not_found(request(&board, Method::GET, &one, Some(unknown)).send().await.unwrap()).await;
    not_found(request(&board, Method::POST, &one, Some(unknown)).json(&ping(2)).send().await.unwrap()).await;

    // The owner's session is untouched: its tools act as its member, and
    // its stream opens.
    let mine = request(&board, Method::POST, &one, Some(&session)).json(&call).send().await.unwrap();
    assert_eq!(mine.status(), 200);
    let mine = mine.text().await.unwrap();
    assert!(mine.contains(r#"\"slug\":\"one\""#) || mine.contains(r#""slug":"one""#), "{mine}");
    let stream = request(&board, Method::GET, &one, Some(&session)).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    drop(stream);

    // Its member ends it; then it is gone for its member too.
    let ended = request(&board, Method::DELETE, &one, Some(&session)).send().await.unwrap();
    assert_eq!(ended.status(), 204);
    not_found(request(&board, Method::POST, &one, Some(&session)).json(&ping(4)).send().await.unwrap()).await;
    board.shutdown().await;
}

#[tokio::test]
async fn a_member_holds_sixteen_sessions_and_a_process_its_bound() {
    let limits = McpLimits { sessions_per_process: 20, ..McpLimits::default() };
    let board = Board::start_with(limits).await;
    let one = board.agent("one").await;
    let two = board.agent("two").await;
    let mut sessions = Vec::new();
    for _ in 0..16 {
        sessions.push(open(&board, &one).await);
    }
    // The oldest is in use: a client listens on its stream.
    let listening = request(&board, Method::GET, &one, Some(&sessions[0])).send().await.unwrap();
    assert_eq!(listening.status(), 200);

    // A 17th closes the least recently used idle one, not the one in use.
    let newest = open(&board, &one).await;
    not_found(request(&board, Method::POST, &one, Some(&sessions[1])).json(&ping(2)).send().await.unwrap())
        .await;
    assert_eq!(ping_in(&board, &one, &sessions[0]).await, 200, "the session in use stays");
    for s in &sessions[2..] {
        assert_eq!(ping_in(&board, &one, s).await, 200);
    }
    assert_eq!(ping_in(&board, &one, &newest).await, 200);

    // The process holds 20: another member gets 4, then a clear 429.
    for _ in 0..4 {
        open(&board, &two).await;
    }
    let refused = request(&board, Method::POST, &two, None).json(&initialize()).send().await.unwrap();
    let retry = refused.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    let (status, body) = json_answer(refused).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["code"], "too_many_requests");
    assert!(body["detail"].as_str().unwrap().contains("most MCP sessions (20)"), "{body}");
    assert_eq!(retry.as_deref(), Some("60"));
    // The official client is refused too, and no session is opened.
    let config = StreamableHttpClientTransportConfig::with_uri(board.mcp_url()).auth_header(two.clone());
    let (handler, _) = client();
    assert!(handler.serve(StreamableHttpClientTransport::from_config(config)).await.is_err());

    // Ending one makes room.
    let ended = request(&board, Method::DELETE, &one, Some(&newest)).send().await.unwrap();
    assert_eq!(ended.status(), 204);
    open(&board, &two).await;
    drop(listening);
    board.shutdown().await;
}

#[tokio::test]
async fn an_idle_session_closes_and_one_with_an_open_stream_stays() {
    // A process of two sessions, so that whether one was closed shows
    // without a request in it (which would use it).
    let limits =
        McpLimits { idle: Duration::from_millis(300), sessions_per_process: 2, ..McpLimits::default() };
    let board = Board::start_with(limits).await;
    let one = board.agent("one").await;
    let two = board.agent("two").await;
    let listened = open(&board, &one).await;
    let idle = open(&board, &one).await;
    let stream = request(&board, Method::GET, &one, Some(&listened)).send().await.unwrap();
    assert_eq!(stream.status(), 200);

    // The process is full until the idle one is closed (ten seconds at most).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let res = request(&board, Method::POST, &two, None).json(&initialize()).send().await.unwrap();
        let status = res.status();
        let _ = res.text().await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 429);
        assert!(tokio::time::Instant::now() < deadline, "the idle session was not closed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    not_found(request(&board, Method::POST, &one, Some(&idle)).json(&ping(2)).send().await.unwrap()).await;
    // Nothing was asked of the listened one for as long: its stream kept it.
    assert_eq!(ping_in(&board, &one, &listened).await, 200);
    drop(stream);
    board.shutdown().await;
}

#[tokio::test]
async fn transport_errors_answer_json() {
    let board = Board::start().await;
    let token = board.owner.clone();
    let post = || request(&board, Method::POST, &token, None);

    // Not JSON: a JSON-RPC parse error.
    let res = post().header("content-type", "application/json").body("{\"jsonrpc\": \"2.0\", ").send();
    let (status, body) = json_answer(res.await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], Value::Null);
    assert_eq!(body["error"]["code"], -32700, "{body}");
    // JSON that is not a JSON-RPC message: an invalid request, with its id.
    let res = post().json(&json!({"jsonrpc": "2.0", "id": 7, "method": 5})).send();
    let (status, body) = json_answer(res.await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(body["id"], 7);
    assert_eq!(body["error"]["code"], -32600, "{body}");
    let res = post().json(&json!([initialize()])).send();
    let (_, body) = json_answer(res.await.unwrap()).await;
    assert!(body["error"]["message"].as_str().unwrap().contains("batch"), "{body}");

    // Too large, of another type, not accepting the answer's types.
    let big = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"pad\":\"{}\"}}", "x".repeat(2 << 20));
    let res = post().header("content-type", "application/json").body(big).send();
    let (status, body) = json_answer(res.await.unwrap()).await;
    assert_eq!((status, body["code"].as_str()), (413, Some("payload_too_large")), "{body}");
    let res = post().header("content-type", "text/plain").body(initialize().to_string()).send();
    let (status, body) = json_answer(res.await.unwrap()).await;
    assert_eq!((status, body["code"].as_str()), (415, Some("unsupported_media_type")), "{body}");
    let res = board.http.post(board.mcp_url()).bearer_auth(&token).json(&initialize()).send();
    let (status, body) = json_answer(res.await.unwrap()).await;
    assert_eq!(status, 406, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("text/event-stream"), "{body}");

    // A stream without a session, and a verb the endpoint does not have.
    let res = request(&board, Method::GET, &token, None).header("accept", "text/event-stream").send();
    let (status, body) = json_answer(res.await.unwrap()).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("Session ID"), "{body}");
    let res = request(&board, Method::PUT, &token, None).send().await.unwrap();
    let allow = res.headers().get("allow").cloned();
    let (status, body) = json_answer(res).await;
    assert_eq!((status, body["code"].as_str()), (405, Some("method_not_allowed")), "{body}");
    assert_eq!(allow.unwrap(), "GET, POST, DELETE");
    board.shutdown().await;
}
