//! A scripted Anthropic Messages API on 127.0.0.1, for tests that run a
//! real coding agent (Claude Code) without a model: every model call the
//! agent makes is answered from a script, and recorded.
//!
//! A script is a list of [`Turn`]s. A model call (`POST /v1/messages`) is
//! answered by the first turn, in the script's order, whose predicate
//! holds for the request and which has answers left; its [`Reply`] is a
//! list of content blocks and a stop reason, streamed as the API streams
//! them (`stream: true`: `message_start`, `ping`, per block
//! `content_block_start`, deltas and `content_block_stop`, then
//! `message_delta` with the stop reason and `message_stop`) or sent as one
//! message. A call no turn matches gets a text saying so, so the agent ends
//! its turn instead of retrying, and [`ModelServer::unmatched`] lists it.
//! Token counting answers an estimate; any other `GET` or `HEAD` (a
//! probe) answers `{}`; every request is recorded with its body.
//!
//! Predicates come first in a script when they are narrower: a request
//! carries the whole conversation, so "the prompt holds the task's title"
//! holds for every later request of that turn too, and a turn "after a
//! tool result" goes before it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

/// The largest request body read (Claude Code sends some 70 kB a call).
const MAX_BODY: usize = 64 << 20;
/// Text and tool input are streamed in deltas of this many bytes at most,
/// as the API sends them in pieces.
const DELTA: usize = 40;
/// The text a model call no turn matches is answered with.
pub const UNSCRIPTED: &str = "The scripted model server has no turn for this request.";

/// One content block of a reply.
#[derive(Clone, Debug)]
pub enum Block {
    Text(String),
    Thinking(String),
    ToolUse { name: String, input: Value },
}

/// What a turn answers: content blocks and a stop reason (`tool_use`
/// when a block is a tool use, else `end_turn`, unless set).
#[derive(Clone, Debug, Default)]
pub struct Reply {
    pub blocks: Vec<Block>,
    pub stop_reason: Option<String>,
}

impl Reply {
    pub fn new() -> Reply {
        Reply::default()
    }

    pub fn text(mut self, text: impl Into<String>) -> Reply {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    /// A thinking block (its signature made up).
    pub fn thinking(mut self, text: impl Into<String>) -> Reply {
        self.blocks.push(Block::Thinking(text.into()));
        self
    }

    /// A call of the agent's tool `name` (`Write`, `Edit`, `Read`, `Bash`
    /// …) with its input.
    pub fn tool_use(mut self, name: impl Into<String>, input: Value) -> Reply {
        self.blocks.push(Block::ToolUse { name: name.into(), input });
        self
    }

    pub fn stop_reason(mut self, reason: impl Into<String>) -> Reply {
        self.stop_reason = Some(reason.into());
        self
    }

    fn stop(&self) -> String {
        self.stop_reason.clone().unwrap_or_else(|| {
            let tool = self.blocks.iter().any(|b| matches!(b, Block::ToolUse { .. }));
            if tool { "tool_use" } else { "end_turn" }.to_string()
        })
    }
}

type Predicate = Box<dyn Fn(&Request) -> bool + Send + Sync>;
type Answer = Box<dyn Fn(&Request) -> Reply + Send + Sync>;

/// A scripted turn: which model calls it answers, and how.
pub struct Turn {
    name: String,
    when: Predicate,
    answer: Answer,
    times: Option<usize>,
}

impl Turn {
    /// The calls `when` holds for, answered with an empty text until
    /// [`Turn::answer`] says otherwise; `name` is what the record says
    /// answered ([`Request::answered_by`]).
    pub fn when(name: impl Into<String>, when: impl Fn(&Request) -> bool + Send + Sync + 'static) -> Turn {
        Turn {
            name: name.into(),
            when: Box::new(when),
            answer: Box::new(|_| Reply::new().text("")),
            times: None,
        }
    }

    /// The side calls to a small model (Claude Code's titles and
    /// summaries, on a Haiku model).
    pub fn small_model() -> Turn {
        Turn::when("small model", Request::is_small_model).answer(Reply::new().text("Scripted work"))
    }

    /// The call after the agent ran a tool: the last message holds a
    /// tool result.
    pub fn after_tool_result() -> Turn {
        Turn::when("after a tool result", |r| !r.is_small_model() && !r.tool_results().is_empty())
    }

    /// The call after the agent ran its tool `name` (`Write`, `Read`,
    /// `mcp__taskboard__review_submit` …): the last message holds its
    /// result.
    pub fn after_tool(name: impl Into<String>) -> Turn {
        let name = name.into();
        Turn::when(format!("after {name}"), move |r| !r.is_small_model() && r.last_tool_use() == Some(&name))
    }

    /// A call whose user messages hold `text` (the prompt, or a message
    /// the agent was sent).
    pub fn prompt_contains(text: impl Into<String>) -> Turn {
        let text = text.into();
        Turn::when(format!("prompt holds {text:?}"), move |r| {
            !r.is_small_model() && r.user_text().contains(&text)
        })
    }

    /// A call whose system prompt holds `text`.
    pub fn system_contains(text: impl Into<String>) -> Turn {
        let text = text.into();
        Turn::when(format!("system holds {text:?}"), move |r| {
            !r.is_small_model() && r.system_text().contains(&text)
        })
    }

    /// Answers with `reply`.
    pub fn answer(self, reply: Reply) -> Turn {
        self.answer_with(move |_| reply.clone())
    }

    /// Answers with what `answer` makes of the request (a path in the
    /// agent's working directory, say).
    pub fn answer_with(mut self, answer: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Turn {
        self.answer = Box::new(answer);
        self
    }

    /// Answers `n` calls at most; then the next matching turn answers.
    pub fn times(mut self, n: usize) -> Turn {
        self.times = Some(n);
        self
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// The path with its query (`/v1/messages?beta=true`).
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The JSON body; a body that is not JSON as a string; Null if none.
    pub body: Value,
    pub received: Instant,
    pub received_at: SystemTime,
    /// The turn that answered it; None for a model call no turn matched,
    /// and for what is not a model call.
    pub answered_by: Option<String>,
}

impl Request {
    /// A call of the model (`POST /v1/messages`, not token counting).
    pub fn is_model_call(&self) -> bool {
        self.method == "POST" && self.path.split('?').next() == Some("/v1/messages")
    }

    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or_default()
    }

    pub fn is_small_model(&self) -> bool {
        self.model().contains("haiku")
    }

    pub fn is_stream(&self) -> bool {
        self.body["stream"].as_bool().unwrap_or(false)
    }

    /// The names of the tools offered.
    pub fn tools(&self) -> Vec<&str> {
        let tools = self.body["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
        tools.iter().filter_map(|t| t["name"].as_str()).collect()
    }

    /// The system prompt's text (a string or text blocks).
    pub fn system_text(&self) -> String {
        text_of(&self.body["system"])
    }

    /// The text of every user message, in order, tool results left out.
    pub fn user_text(&self) -> String {
        let messages = self.body["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
        let user = messages.iter().filter(|m| m["role"] == "user");
        user.map(|m| text_of(&m["content"])).collect::<Vec<_>>().join("\n")
    }

    /// The tool results of the last message.
    pub fn tool_results(&self) -> Vec<&Value> {
        let last = self.body["messages"].as_array().and_then(|m| m.last());
        let content = last.filter(|m| m["role"] == "user").and_then(|m| m["content"].as_array());
        content.map(|c| c.iter().filter(|b| b["type"] == "tool_result").collect()).unwrap_or_default()
    }

    /// The name of the tool whose result the last message holds: the
    /// tool the model's previous answer called.
    pub fn last_tool_use(&self) -> Option<&str> {
        let id = self.tool_results().first()?["tool_use_id"].as_str()?;
        let messages = self.body["messages"].as_array()?;
        let asked = messages.iter().rev().find(|m| m["role"] == "assistant")?;
        let blocks = asked["content"].as_array()?;
        blocks.iter().find(|b| b["type"] == "tool_use" && b["id"] == id)?["name"].as_str()
    }

    /// The agent's working directory, as Claude Code's system prompt
    /// states it (`Working directory: …`).
    pub fn working_directory(&self) -> Option<String> {
        let system = self.system_text();
        let line = system.lines().find_map(|l| l.trim().strip_prefix("Working directory:"))?;
        Some(line.trim().to_string())
    }
}

/// Text blocks' text (a string is its own text).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

struct Shared {
    script: Vec<Turn>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// How many calls each turn of the script answered.
    used: Vec<usize>,
    requests: Vec<Request>,
}

/// The server, on a thread of its own; stopped when dropped.
pub struct ModelServer {
    url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ModelServer {
    /// Binds 127.0.0.1 port 0 and serves `script` until dropped.
    pub fn start(script: Vec<Turn>) -> ModelServer {
        let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("the model server binds");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let used = vec![0; script.len()];
        let shared = Arc::new(Shared { script, state: Mutex::new(State { used, requests: Vec::new() }) });
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("model-server".into())
            .spawn(move || {
                let runtime =
                    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
                runtime.block_on(serve(listener, serving, stopped));
            })
            .expect("the model server's thread");
        ModelServer { url, shared, stop: Some(stop), thread: Some(thread) }
    }

    /// `http://127.0.0.1:PORT`, the agent's `ANTHROPIC_BASE_URL`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.state.lock().unwrap().requests.clone()
    }

    /// The model calls so far, in order.
    pub fn model_calls(&self) -> Vec<Request> {
        self.requests().into_iter().filter(Request::is_model_call).collect()
    }

    /// The model calls no turn matched.
    pub fn unmatched(&self) -> Vec<Request> {
        self.model_calls().into_iter().filter(|r| r.answered_by.is_none()).collect()
    }

    /// The model calls the turn named `name` answered.
    pub fn answered_by(&self, name: &str) -> Vec<Request> {
        self.model_calls().into_iter().filter(|r| r.answered_by.as_deref() == Some(name)).collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(&shared, req).await) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            // A client that goes away mid-answer is its own business.
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> hyper::Response<Body> {
    hyper::Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(body.into()).boxed())
        .expect("a response")
}

async fn handle(shared: &Shared, req: hyper::Request<Incoming>) -> hyper::Response<Body> {
    let method = req.method().clone();
    let path = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let bytes = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return full(StatusCode::PAYLOAD_TOO_LARGE, "text/plain", format!("{e}\n")),
    };
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    let mut request = Request {
        method: method.to_string(),
        path,
        headers,
        body,
        received: Instant::now(),
        received_at: SystemTime::now(),
        answered_by: None,
    };
    let endpoint = request.path.split('?').next().unwrap_or_default().to_string();
    let response = match (&method, endpoint.as_str()) {
        (&Method::POST, "/v1/messages") => {
            let (turn, reply) = choose(shared, &request);
            request.answered_by = turn;
            let n = shared.state.lock().unwrap().requests.len();
            if request.is_stream() {
                stream(&request, &reply, n)
            } else {
                let message = message(&request, &reply, n);
                full(StatusCode::OK, "application/json", message.to_string())
            }
        }
        (&Method::POST, "/v1/messages/count_tokens") => {
            let estimate = json!({"input_tokens": input_tokens(&request)});
            full(StatusCode::OK, "application/json", estimate.to_string())
        }
        (&Method::GET | &Method::HEAD, _) => full(StatusCode::OK, "application/json", "{}"),
        _ => {
            let error = json!({"type": "error", "error": {"type": "not_found_error",
                "message": format!("the scripted model server answers POST /v1/messages, not {method} {endpoint}")}});
            full(StatusCode::NOT_FOUND, "application/json", error.to_string())
        }
    };
    shared.state.lock().unwrap().requests.push(request);
    response
}

/// The first turn with answers left whose predicate holds, and its reply;
/// [`UNSCRIPTED`] when none does.
fn choose(shared: &Shared, request: &Request) -> (Option<String>, Reply) {
    let mut state = shared.state.lock().unwrap();
    for (i, turn) in shared.script.iter().enumerate() {
        if turn.times.is_some_and(|n| state.used[i] >= n) || !(turn.when)(request) {
            continue;
        }
        state.used[i] += 1;
        return (Some(turn.name.clone()), (turn.answer)(request));
    }
    (None, Reply::new().text(UNSCRIPTED))
}

fn input_tokens(request: &Request) -> usize {
    request.body.to_string().len() / 4 + 1
}

fn output_tokens(reply: &Reply) -> usize {
    let size: usize = reply
        .blocks
        .iter()
        .map(|b| match b {
            Block::Text(t) | Block::Thinking(t) => t.len(),
            Block::ToolUse { name, input } => name.len() + input.to_string().len(),
        })
        .sum();
    size / 4 + 1
}

fn message_id(n: usize) -> String {
    format!("msg_scripted_{n:04}")
}

fn tool_use_id(n: usize, block: usize) -> String {
    format!("toolu_scripted_{n:04}_{block}")
}

/// The reply as one message (a call without `stream`).
fn message(request: &Request, reply: &Reply, n: usize) -> Value {
    let content: Vec<Value> = reply
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::Thinking(t) => json!({"type": "thinking", "thinking": t, "signature": "scripted"}),
            Block::ToolUse { name, input } => {
                json!({"type": "tool_use", "id": tool_use_id(n, i), "name": name, "input": input})
            }
        })
        .collect();
    json!({
        "id": message_id(n), "type": "message", "role": "assistant", "model": request.model(),
        "content": content, "stop_reason": reply.stop(), "stop_sequence": null,
        "usage": {"input_tokens": input_tokens(request), "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": output_tokens(reply)},
    })
}

/// `s` in pieces of at most [`DELTA`] bytes, on character boundaries.
fn pieces(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let mut at = rest.len().min(DELTA);
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        let (piece, tail) = rest.split_at(at);
        out.push(piece);
        rest = tail;
    }
    out
}

/// The reply as the API streams it: one server-sent event per chunk.
fn stream(request: &Request, reply: &Reply, n: usize) -> hyper::Response<Body> {
    let mut events: Vec<(&str, Value)> = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": message_id(n), "type": "message", "role": "assistant", "model": request.model(),
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input_tokens(request), "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 1},
            }}),
        ),
        ("ping", json!({"type": "ping"})),
    ];
    for (index, block) in reply.blocks.iter().enumerate() {
        let delta = |delta: Value| {
            ("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": delta}))
        };
        match block {
            Block::Text(text) => {
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
                ));
                events.extend(
                    pieces(text).into_iter().map(|t| delta(json!({"type": "text_delta", "text": t}))),
                );
            }
            Block::Thinking(text) => {
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                ));
                events.extend(
                    pieces(text).into_iter().map(|t| delta(json!({"type": "thinking_delta", "thinking": t}))),
                );
                events.push(delta(json!({"type": "signature_delta", "signature": "scripted"})));
            }
            Block::ToolUse { name, input } => {
                events.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block":
                           {"type": "tool_use", "id": tool_use_id(n, index), "name": name, "input": {}}}),
                ));
                // The API's first input delta is empty; the JSON follows in pieces.
                let input = input.to_string();
                let parts = std::iter::once("").chain(pieces(&input));
                events.extend(parts.map(|p| delta(json!({"type": "input_json_delta", "partial_json": p}))));
            }
        }
        events.push(("content_block_stop", json!({"type": "content_block_stop", "index": index})));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": reply.stop(), "stop_sequence": null},
               "usage": {"output_tokens": output_tokens(reply)}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    let frames: Vec<Result<Frame<Bytes>, Infallible>> = events
        .into_iter()
        .map(|(name, data)| Ok(Frame::data(Bytes::from(format!("event: {name}\ndata: {data}\n\n")))))
        .collect();
    hyper::Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream; charset=utf-8")
        .header("cache-control", "no-cache")
        .body(StreamBody::new(futures_util::stream::iter(frames)).boxed())
        .expect("a response")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Posts `body` to the server and answers the status and the text.
    fn post(server: &ModelServer, path: &str, body: Value) -> (u16, String) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            taskboard_core::tls::install_provider();
            let r = reqwest::Client::new()
                .post(format!("{}{path}", server.url()))
                .json(&body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        })
    }

    /// The events of a stream: (name, data).
    fn events(text: &str) -> Vec<(String, Value)> {
        text.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                let (event, data) = e.split_once('\n').unwrap();
                let name = event.strip_prefix("event: ").unwrap().to_string();
                (name, serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap())
            })
            .collect()
    }

    fn call(text: &str, tool_result: bool) -> Value {
        let mut messages = vec![json!({"role": "user", "content": [{"type": "text", "text": text}]})];
        if tool_result {
            messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {}}]}));
            messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}));
        }
        json!({"model": "claude-sonnet-4-5", "stream": true, "system": [{"type": "text", "text": "Working directory: /w\n"}],
               "messages": messages, "tools": [{"name": "Write"}]})
    }

    #[test]
    fn a_script_streams_its_blocks_as_the_api_does_and_records_every_request() {
        let input =
            json!({"file_path": "/w/hello.txt", "content": "a line longer than one delta of the stream\n"});
        let write = input.clone();
        let server = ModelServer::start(vec![
            Turn::small_model(),
            Turn::after_tool_result().answer(Reply::new().text("Done.")),
            Turn::prompt_contains("WEB-1").answer_with(move |r| {
                assert_eq!(r.working_directory().as_deref(), Some("/w"));
                Reply::new().text("Writing.").tool_use("Write", write.clone())
            }),
        ]);
        let (status, text) = post(&server, "/v1/messages?beta=true", call("# WEB-1: Write hello.txt", false));
        assert_eq!(status, 200);
        let streamed = events(&text);
        let names: Vec<&str> = streamed.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(&names[..3], ["message_start", "ping", "content_block_start"]);
        assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
        for (name, data) in &streamed {
            assert_eq!(data["type"], name.as_str());
        }
        assert_eq!(streamed[0].1["message"]["role"], "assistant");
        assert!(streamed[0].1["message"]["usage"]["input_tokens"].as_u64().unwrap() > 0);
        let tool_start = streamed.iter().find(|(_, d)| d["content_block"]["type"] == "tool_use").unwrap();
        assert_eq!(tool_start.1["index"], 1);
        assert_eq!(tool_start.1["content_block"]["name"], "Write");
        let json: String = streamed
            .iter()
            .filter(|(_, d)| d["delta"]["type"] == "input_json_delta")
            .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
            .collect();
        assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), input);
        let stop = &streamed[streamed.len() - 2].1;
        assert_eq!(stop["delta"]["stop_reason"], "tool_use");
        assert!(stop["usage"]["output_tokens"].as_u64().is_some());

        let (_, text) = post(&server, "/v1/messages?beta=true", call("# WEB-1: Write hello.txt", true));
        let said: String = events(&text)
            .iter()
            .filter(|(_, d)| d["delta"]["type"] == "text_delta")
            .map(|(_, d)| d["delta"]["text"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(said, "Done.");
        let mut small = call("title?", false);
        small["model"] = json!("claude-haiku-4-5");
        small["stream"] = json!(false);
        let (_, text) = post(&server, "/v1/messages", small);
        let message: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(message["content"][0]["text"], "Scripted work");
        assert_eq!(message["stop_reason"], "end_turn");
        let mut other = call("something else", false);
        other["stream"] = json!(false);
        let (_, text) = post(&server, "/v1/messages", other);
        assert!(text.contains(UNSCRIPTED), "{text}");
        let (status, _) = post(&server, "/v1/complete", json!({}));
        assert_eq!(status, 404);

        let calls = server.model_calls();
        let by: Vec<Option<&str>> = calls.iter().map(|r| r.answered_by.as_deref()).collect();
        assert_eq!(
            by,
            [Some("prompt holds \"WEB-1\""), Some("after a tool result"), Some("small model"), None]
        );
        assert_eq!(server.unmatched().len(), 1);
        assert_eq!(server.requests().len(), 5);
        assert!(calls[0].user_text().contains("# WEB-1"));
    }

    #[test]
    fn a_turn_answers_as_many_times_as_it_is_given() {
        let server = ModelServer::start(vec![
            Turn::prompt_contains("go").times(1).answer(Reply::new().text("first")),
            Turn::prompt_contains("go").answer(Reply::new().text("then")),
        ]);
        let mut body = call("go", false);
        body["stream"] = json!(false);
        let texts: Vec<String> = (0..3)
            .map(|_| {
                let (_, text) = post(&server, "/v1/messages", body.clone());
                serde_json::from_str::<Value>(&text).unwrap()["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(texts, ["first", "then", "then"]);
    }
}
