//! The harness: a real server on 127.0.0.1 port 0 over a fresh data
//! directory per test, and typed helpers around reqwest.
//!
//! The test binary `api_postgres` runs the same tests with each server's
//! board in PostgreSQL: a schema of its own in a throwaway cluster the
//! test process starts.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use reqwest::Method;
use reqwest::header::HeaderMap;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use taskboard_core::model::{CreatedMember, Project, Task};
use taskboard_pg_scratch::Scratch;
use taskboard_server::{Config, Server, ServerHandle};
use uuid::Uuid;

pub const OWNER_PASSWORD: &str = "owner-password-1";

/// A running server and what a test needs to talk to it.
pub struct TestApp {
    handle: Option<ServerHandle>,
    config: Config,
    /// Keeps the data directory alive for the whole test.
    _dir: tempfile::TempDir,
    pub base: String,
    pub client: reqwest::Client,
    /// A login JWT of the bootstrap owner.
    pub owner_token: String,
    pub owner_id: Uuid,
}

/// A response: status, headers and body (JSON when it parses).
#[derive(Debug)]
pub struct Res {
    pub status: u16,
    pub headers: HeaderMap,
    pub bytes: bytes::Bytes,
    pub body: Value,
}

impl Res {
    /// The body as `T`, after checking the status.
    #[track_caller]
    pub fn expect<T: DeserializeOwned>(&self, status: u16) -> T {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.body);
        serde_json::from_value(self.body.clone())
            .unwrap_or_else(|e| panic!("body does not fit the type: {e}; body: {}", self.body))
    }

    /// Checks an error answer: status, code, and that `detail` contains
    /// `detail_part`.
    #[track_caller]
    pub fn error(&self, status: u16, code: &str, detail_part: &str) {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.body);
        assert_eq!(self.body["code"], code, "body: {}", self.body);
        let detail = self.body["detail"].as_str().expect("errors carry a detail");
        assert!(detail.contains(detail_part), "detail {detail:?} does not contain {detail_part:?}");
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Whether this test binary keeps its boards in PostgreSQL.
pub fn on_postgres() -> bool {
    env!("CARGO_CRATE_NAME") == "api_postgres"
}

/// Starts a server with the default test configuration.
pub async fn spawn() -> TestApp {
    spawn_with(|_| {}).await
}

/// Starts a server after `configure` has adjusted the configuration.
pub async fn spawn_with(configure: impl FnOnce(&mut Config)) -> TestApp {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut config = Config::new(dir.path().join("data"));
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.owner_password = Some(OWNER_PASSWORD.to_string());
    config.jwt_secret = Some("test-secret".to_string());
    if on_postgres() {
        config.database = Some(Scratch::shared().fresh_url());
    }
    configure(&mut config);
    start(config, dir).await
}

async fn start(mut config: Config, dir: tempfile::TempDir) -> TestApp {
    // Bound before it is spawned: requests made right away wait in the
    // backlog, no sleep needed. Bound here, so a board with single
    // sign-on gets its public URL (required) on its own port.
    let listener = tokio::net::TcpListener::bind(config.listen).await.expect("a port");
    if config.oidc.is_some() && config.public_url.is_none() {
        config.public_url = Some(format!("http://{}", listener.local_addr().unwrap()));
    }
    let server = Server::on_listener(listener, config.clone()).await.expect("the server starts");
    let base = format!("http://{}", server.local_addr());
    let handle = server.spawn();
    taskboard_core::tls::install_provider();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut app = TestApp {
        handle: Some(handle),
        config,
        _dir: dir,
        base,
        client,
        owner_token: String::new(),
        owner_id: Uuid::nil(),
    };
    let login: Value = app
        .post("/api/v1/auth/login", None, json!({"login": "owner", "password": OWNER_PASSWORD}))
        .await
        .expect(200);
    app.owner_token = login["token"].as_str().unwrap().to_string();
    app.owner_id = login["member_id"].as_str().unwrap().parse().unwrap();
    app
}

impl TestApp {
    /// The address of the metrics listener, when one was configured.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.handle.as_ref().and_then(|h| h.metrics_addr())
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn owner(&self) -> Option<&str> {
        Some(&self.owner_token)
    }

    pub fn data_dir(&self) -> &Path {
        &self.config.data_dir
    }

    pub fn blob_dir(&self) -> PathBuf {
        self.config.data_dir.join("blobs")
    }

    pub fn board(&self) -> &taskboard_core::Board {
        self.handle.as_ref().expect("running").board()
    }

    /// Stops the server gracefully and starts a new one on the same data
    /// directory.
    pub async fn restart(self) -> TestApp {
        self.restart_with(|_| {}).await
    }

    /// Stops the server gracefully and starts a new one on the same data
    /// directory, after `configure` has adjusted its configuration.
    pub async fn restart_with(mut self, configure: impl FnOnce(&mut Config)) -> TestApp {
        self.stop().await;
        let mut config = self.config.clone();
        configure(&mut config);
        config.listen = "127.0.0.1:0".parse().unwrap();
        let dir = std::mem::replace(&mut self._dir, tempfile::tempdir().unwrap());
        start(config, dir).await
    }

    /// Stops the server gracefully.
    pub async fn stop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.shutdown().await;
        }
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Res {
        let res = req.send().await.expect("the server answers");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let bytes = res.bytes().await.expect("a body");
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Res { status, headers, bytes, body }
    }

    pub fn request(&self, method: Method, path: &str, token: Option<&str>) -> reqwest::RequestBuilder {
        let req = self.client.request(method, self.url(path));
        match token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    pub async fn call(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> Res {
        let mut req = self.request(method, path, token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        self.send(req).await
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Res {
        self.call(Method::GET, path, token, None).await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: impl Serialize) -> Res {
        self.call(Method::POST, path, token, Some(serde_json::to_value(body).unwrap())).await
    }

    /// A POST without a body.
    pub async fn post_empty(&self, path: &str, token: Option<&str>) -> Res {
        self.call(Method::POST, path, token, None).await
    }

    pub async fn patch(&self, path: &str, token: Option<&str>, body: impl Serialize) -> Res {
        self.call(Method::PATCH, path, token, Some(serde_json::to_value(body).unwrap())).await
    }

    pub async fn put(&self, path: &str, token: Option<&str>, body: impl Serialize) -> Res {
        self.call(Method::PUT, path, token, Some(serde_json::to_value(body).unwrap())).await
    }

    pub async fn delete(&self, path: &str, token: Option<&str>) -> Res {
        self.call(Method::DELETE, path, token, None).await
    }

    /// Creates a member as the owner; agents come with their token.
    pub async fn create_member(&self, slug: &str, kind: &str, role: &str) -> CreatedMember {
        self.post(
            "/api/v1/members",
            self.owner(),
            json!({"name": slug, "slug": slug, "type": kind, "role": role}),
        )
        .await
        .expect(201)
    }

    /// An agent with `role` and its token.
    pub async fn create_agent(&self, slug: &str, role: &str) -> (Uuid, String) {
        let m = self.create_member(slug, "agent", role).await;
        (m.id, m.token.expect("agents get a token"))
    }

    /// Adds `member` to `project` as the owner.
    pub async fn add_to_project(&self, project: Uuid, member: Uuid) {
        let path = format!("/api/v1/projects/{project}/members");
        let res = self.post(&path, self.owner(), serde_json::json!({"member_id": member})).await;
        assert!((200..300).contains(&res.status), "adding {member} to {project}: {}", res.body);
    }

    pub async fn create_project(&self, token: Option<&str>, slug: &str) -> Project {
        self.post("/api/v1/projects", token, json!({"name": slug, "slug": slug})).await.expect(201)
    }

    pub async fn create_task(&self, token: Option<&str>, project: Uuid, title: &str) -> Task {
        self.post(&format!("/api/v1/tasks?project_id={project}"), token, json!({"title": title}))
            .await
            .expect(201)
    }

    /// Uploads `content` as a multipart `file` field (and `description`).
    pub async fn upload(
        &self,
        path: &str,
        token: Option<&str>,
        filename: &str,
        content: Vec<u8>,
        description: Option<&str>,
    ) -> Res {
        let mut form = reqwest::multipart::Form::new();
        if let Some(d) = description {
            form = form.text("description", d.to_string());
        }
        let part = reqwest::multipart::Part::bytes(content).file_name(filename.to_string());
        form = form.part("file", part);
        self.send(self.request(Method::POST, path, token).multipart(form)).await
    }
}
