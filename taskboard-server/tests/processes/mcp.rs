//! MCP through a round-robin balancer: an HTTP proxy written here sends
//! each request to the next of the three processes, as a balancer without
//! session affinity does. A client of the sessionless revision
//! (2026-07-28, rmcp's client in its discover lifecycle) works a task
//! through it; a session opened on one process is refused, with a detail
//! that says why, by the others.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use reqwest::Method;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::support::Cluster;

/// A round-robin HTTP balancer in front of `backends`: each request, not
/// each connection, goes to the next one.
struct Balancer {
    addr: SocketAddr,
    served: Arc<Vec<AtomicUsize>>,
}

type ProxyBody = UnsyncBoxBody<Bytes, std::io::Error>;

async fn forward(
    http: reqwest::Client,
    backend: String,
    req: hyper::Request<Incoming>,
) -> Result<hyper::Response<ProxyBody>, std::io::Error> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map_err(std::io::Error::other)?.to_bytes();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut out = http.request(parts.method.clone(), format!("{backend}{path}")).body(body);
    for (name, value) in &parts.headers {
        if name != hyper::header::HOST && name != hyper::header::CONTENT_LENGTH {
            out = out.header(name, value);
        }
    }
    let res = out.send().await.map_err(std::io::Error::other)?;
    let mut answer = hyper::Response::builder().status(res.status());
    for (name, value) in res.headers() {
        if name != hyper::header::TRANSFER_ENCODING && name != hyper::header::CONNECTION {
            answer = answer.header(name, value);
        }
    }
    let stream = res.bytes_stream().map(|chunk| chunk.map(Frame::data).map_err(std::io::Error::other));
    Ok(answer.body(BodyExt::boxed_unsync(StreamBody::new(stream))).expect("a response"))
}

impl Balancer {
    async fn start(backends: Vec<String>) -> Balancer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let served: Arc<Vec<AtomicUsize>> = Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let next = Arc::new(AtomicUsize::new(0));
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let counts = served.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (backends, next, counts, http) =
                    (backends.clone(), next.clone(), counts.clone(), http.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let i = next.fetch_add(1, Ordering::SeqCst) % backends.len();
                        counts[i].fetch_add(1, Ordering::SeqCst);
                        let answer = forward(http.clone(), backends[i].clone(), req);
                        async move {
                            Ok::<_, std::io::Error>(answer.await.unwrap_or_else(|e| {
                                let body = Full::new(Bytes::from(format!("balancer: {e}")));
                                let body = body.map_err(|never| match never {}).boxed_unsync();
                                hyper::Response::builder().status(502).body(body).unwrap()
                            }))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Balancer { addr, served }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn served(&self) -> Vec<usize> {
        self.served.iter().map(|n| n.load(Ordering::SeqCst)).collect()
    }
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> Value {
    let Value::Object(args) = args else { panic!("arguments are an object") };
    let result: CallToolResult = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_ne!(result.is_error, Some(true), "{tool} failed: {:?}", result.content);
    result.structured_content.unwrap_or_else(|| panic!("{tool}: no structured content"))
}

#[tokio::test]
async fn a_sessionless_client_works_through_a_round_robin_balancer() {
    let cluster = Cluster::start().await;
    let project = cluster.project("mcp").await;
    let (_, token) = cluster.agent("bot", &project).await;
    let task = cluster.task(1, &project, "Through the balancer".into()).await;
    let key = task["key"].as_str().unwrap().to_string();
    let balancer = Balancer::start(cluster.procs.iter().map(|p| p.base.clone()).collect()).await;

    let config = StreamableHttpClientTransportConfig::with_uri(balancer.url()).auth_header(token.clone());
    // ring is the workspace's one TLS provider; rmcp's reqwest client
    // takes the process's.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_config(config);
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client = ().serve_with_lifecycle(transport, lifecycle).await.expect("the client starts");
    assert_eq!(client.peer_info().map(|i| i.protocol_version.clone()), Some(ProtocolVersion::V_2026_07_28));

    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), taskboard_mcp::TOOL_NAMES.len());
    let me = call(&client, "whoami", json!({})).await;
    assert_eq!(me["member"]["slug"], "bot");
    let claimed = call(&client, "claim_task", json!({"project": "mcp", "lease_seconds": 60})).await;
    assert_eq!(claimed["task"]["key"], key.as_str());
    call(&client, "heartbeat", json!({"task": key, "lease_seconds": 120})).await;
    call(&client, "add_step", json!({"task": key, "title": "one"})).await;
    call(&client, "complete_step", json!({"task": key, "step": 1})).await;
    call(&client, "comment", json!({"task": key, "content": "done through three processes"})).await;
    let done = call(&client, "update_task", json!({"task": key, "status": "review"})).await;
    assert_eq!(done["task"]["status"], "review");
    let read = call(&client, "get_task", json!({"task": key})).await;
    assert_eq!(read["task"]["steps"][0]["done"], true);
    client.cancel().await.ok();

    // Every process served some of it, and the board shows the work.
    let served = balancer.served();
    assert!(served.iter().all(|&n| n >= 3), "requests per process: {served:?}");
    let id = task["id"].as_str().unwrap();
    let seen = cluster.ok(2, Method::GET, &format!("/api/v1/tasks/{id}"), None).await;
    assert_eq!(seen["status"], "review");
    assert_eq!(seen["assignee"]["slug"], "bot");

    // A session lives in the process that opened it: the next process
    // refuses it with a detail that says so, as JSON.
    taskboard_core::tls::install_provider();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let post = |session: Option<&str>, body: &Value| {
        let mut req = http
            .post(balancer.url())
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(s) = session {
            req = req.header("mcp-session-id", s).header("mcp-protocol-version", "2025-11-25");
        }
        req.send()
    };
    let opened = post(None, &initialize).await.unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = opened.text().await;
    let elsewhere =
        post(Some(&session), &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await.unwrap();
    assert_eq!(elsewhere.status(), 404);
    let body: Value = elsewhere.json().await.unwrap();
    assert!(body["detail"].as_str().unwrap().contains("another server process"), "{body}");
}
