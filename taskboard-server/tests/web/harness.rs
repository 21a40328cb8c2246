//! A real server over a fresh data directory, restartable on the same
//! address (the page must find it again), and a few API helpers.
#![allow(dead_code)]

use std::net::SocketAddr;

use serde_json::{Value, json};
use taskboard_server::{Config, Server, ServerHandle};

pub const OWNER_PASSWORD: &str = "owner-password-1";

pub struct App {
    handle: Option<ServerHandle>,
    config: Config,
    _dir: tempfile::TempDir,
    pub addr: SocketAddr,
    pub base: String,
    pub http: reqwest::Client,
    pub owner: String,
}

impl App {
    pub async fn start() -> App {
        App::start_with(|_| {}).await
    }

    /// [`App::start`] after `configure` has adjusted the configuration.
    pub async fn start_with(configure: impl FnOnce(&mut Config)) -> App {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::new(dir.path().join("data"));
        config.listen = "127.0.0.1:0".parse().unwrap();
        config.owner_password = Some(OWNER_PASSWORD.to_string());
        config.jwt_secret = Some("test-secret".to_string());
        configure(&mut config);
        // Bound first: single sign-on's public URL (required) names the port.
        let listener = tokio::net::TcpListener::bind(config.listen).await.expect("a port");
        if config.oidc.is_some() && config.public_url.is_none() {
            config.public_url = Some(format!("http://{}", listener.local_addr().unwrap()));
        }
        let server = Server::on_listener(listener, config.clone()).await.expect("the server starts");
        let addr = server.local_addr();
        let handle = server.spawn();
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let mut app = App {
            handle: Some(handle),
            config,
            _dir: dir,
            addr,
            base: format!("http://{addr}"),
            http,
            owner: String::new(),
        };
        let login = app
            .call("POST", "/auth/login", None, Some(json!({"login": "owner", "password": OWNER_PASSWORD})))
            .await;
        app.owner = login["token"].as_str().unwrap().to_string();
        app
    }

    pub async fn stop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown().await;
        }
    }

    /// Starts the server again on the same data directory and address.
    pub async fn start_again(&mut self) {
        let mut config = self.config.clone();
        config.listen = self.addr;
        let server = Server::bind(config).await.expect("the server starts again on its address");
        self.handle = Some(server.spawn());
    }

    /// An API call under /api/v1/; panics on an error answer.
    pub async fn call(&self, method: &str, path: &str, token: Option<&str>, body: Option<Value>) -> Value {
        let mut req = self.http.request(method.parse().unwrap(), format!("{}/api/v1{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.expect("the server answers");
        let status = res.status();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{method} {path}: {status} {body}");
        body
    }

    pub async fn as_owner(&self, method: &str, path: &str, body: Value) -> Value {
        self.call(method, path, Some(&self.owner.clone()), Some(body)).await
    }

    /// An agent member and its token.
    pub async fn agent(&self, slug: &str) -> (String, String) {
        let m = self
            .as_owner(
                "POST",
                "/members",
                json!({"name": slug, "slug": slug, "type": "agent", "role": "member"}),
            )
            .await;
        (m["id"].as_str().unwrap().to_string(), m["token"].as_str().unwrap().to_string())
    }
}
