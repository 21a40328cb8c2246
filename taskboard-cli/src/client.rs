//! A typed HTTP client of the whole Taskboard API.
//!
//! Every request is built from the endpoint table of the core
//! ([`taskboard_core::api::ENDPOINTS`]): method, path and expected status
//! come from there, bodies and responses are the core's wire types, so the
//! client cannot drift from the server. Error responses are turned back
//! into [`taskboard_core::Error`] with the server's kind and `detail`.
//!
//! Uploads stream from a file and downloads stream into any writer; neither
//! holds a whole file in memory. [`Events`] follows the WebSocket event
//! stream and resumes with `since` after a disconnect.
//!
//! ```no_run
//! # async fn demo() -> taskboard_core::Result<()> {
//! use taskboard_cli::client::Client;
//! use taskboard_core::api::TaskFilter;
//!
//! let client = Client::new("http://127.0.0.1:8080", Some("tbk-…".into()))?;
//! for task in client.list_tasks(&TaskFilter::default()).await? {
//!     println!("{} {}", task.key, task.title);
//! }
//! # Ok(()) }
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use reqwest::multipart::{Form, Part};
use serde::Serialize;
use serde::de::DeserializeOwned;
use taskboard_core::api::{self, EndpointName as E};
use taskboard_core::archive::{ArchiveSummary, BackupRequest};
use taskboard_core::error::ErrorBody;
use taskboard_core::model::{self, *};
use taskboard_core::{Error, ErrorKind, Result};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite;
use uuid::Uuid;

/// Reports transfer progress: (bytes done, bytes in all when known).
pub type OnProgress = Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

/// What a download wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// The file name the server gave in `Content-Disposition`.
    pub filename: Option<String>,
    pub mime_type: Option<String>,
    pub size: u64,
}

/// A client of one Taskboard server, with optional credentials (a JWT
/// from login or an agent token). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

/// Errors of the transport (server unreachable, connection dropped) are
/// `internal` on our side, but unlike the server's own 500s their detail
/// says what happened, since it is about the caller's machine.
fn transport(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Internal, format!("cannot talk to the server: {e}"))
}

fn local_file(path: &Path, e: std::io::Error) -> Error {
    Error::new(ErrorKind::BadRequest, format!("{}: {e}", path.display()))
}

/// Turns an error response back into the core's error.
fn error_of(status: u16, body: &str) -> Error {
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(b) => {
            Error::new(ErrorKind::from_code(&b.code).unwrap_or(ErrorKind::from_status(status)), b.detail)
        }
        Err(_) if body.trim().is_empty() => {
            Error::new(ErrorKind::from_status(status), format!("HTTP {status}"))
        }
        Err(_) => Error::new(ErrorKind::from_status(status), body.trim().to_string()),
    }
}

/// Fills the `{param}` segments of an endpoint path, in order.
fn fill_path(template: &str, params: &[Uuid]) -> String {
    let mut out = String::with_capacity(template.len() + params.len() * 36);
    let mut rest = template;
    let mut values = params.iter();
    while let Some(start) = rest.find('{') {
        let end = start + rest[start..].find('}').expect("balanced braces in the endpoint table");
        out.push_str(&rest[..start]);
        out.push_str(&values.next().expect("a value for every path parameter").to_string());
        rest = &rest[end + 1..];
    }
    assert!(values.next().is_none(), "more values than path parameters in {template}");
    out.push_str(rest);
    out
}

/// The file name of a `Content-Disposition` header (RFC 6266: `filename*`
/// preferred over `filename`).
fn disposition_filename(header: &str) -> Option<String> {
    let mut plain = None;
    for part in header.split(';').map(str::trim) {
        if let Some(v) = part.strip_prefix("filename*=") {
            let encoded = v.split_once("''").map_or(v, |(_, e)| e);
            return percent_encoding::percent_decode_str(encoded).decode_utf8().ok().map(|s| s.into_owned());
        }
        if let Some(v) = part.strip_prefix("filename=") {
            plain = Some(v.trim_matches('"').to_string());
        }
    }
    plain
}

impl Client {
    /// A client of the server at `base_url` (`http://host:port`).
    pub fn new(base_url: &str, token: Option<String>) -> Result<Client> {
        let base = base_url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::invalid("server", format!("{base_url:?} is not an http:// or https:// URL")));
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("taskboard-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(transport)?;
        Ok(Client { http, base, token })
    }

    /// The same server with other credentials.
    pub fn with_token(&self, token: Option<String>) -> Client {
        Client { token, ..self.clone() }
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    fn request(&self, name: E, params: &[Uuid]) -> reqwest::RequestBuilder {
        let endpoint = name.endpoint();
        let method = match endpoint.method {
            api::Method::Get => reqwest::Method::GET,
            api::Method::Post => reqwest::Method::POST,
            api::Method::Put => reqwest::Method::PUT,
            api::Method::Patch => reqwest::Method::PATCH,
            api::Method::Delete => reqwest::Method::DELETE,
        };
        let url = format!("{}{}", self.base, fill_path(endpoint.path, params));
        let builder = self.http.request(method, url);
        match (&self.token, endpoint.auth) {
            (Some(token), true) => builder.bearer_auth(token),
            _ => builder,
        }
    }

    /// Sends and checks the status; any other 2xx than the table's is
    /// accepted too, error statuses become [`Error`]s.
    async fn send(&self, builder: reqwest::RequestBuilder) -> Result<reqwest::Response> {
        let response = builder.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let body = response.text().await.unwrap_or_default();
        Err(error_of(status, &body))
    }

    async fn fetch<T: DeserializeOwned>(&self, builder: reqwest::RequestBuilder) -> Result<T> {
        let response = self.send(builder).await?;
        let bytes = response.bytes().await.map_err(transport)?;
        serde_json::from_slice(&bytes).map_err(|e| transport(format!("unexpected response: {e}")))
    }

    async fn call<T: DeserializeOwned>(&self, name: E, params: &[Uuid]) -> Result<T> {
        self.fetch(self.request(name, params)).await
    }

    async fn call_json<T: DeserializeOwned, B: Serialize + ?Sized>(
        &self,
        name: E,
        params: &[Uuid],
        body: &B,
    ) -> Result<T> {
        self.fetch(self.request(name, params).json(body)).await
    }

    async fn call_query<T: DeserializeOwned, Q: Serialize + ?Sized>(
        &self,
        name: E,
        params: &[Uuid],
        query: &Q,
    ) -> Result<T> {
        self.fetch(self.request(name, params).query(query)).await
    }

    // ---- utility and auth ------------------------------------------------

    pub async fn health(&self) -> Result<Health> {
        self.call(E::health, &[]).await
    }

    /// Logs in; use [`Client::with_token`] with the returned token.
    pub async fn login(&self, request: &api::LoginRequest) -> Result<LoginResponse> {
        self.call_json(E::login, &[], request).await
    }

    // ---- members ---------------------------------------------------------

    pub async fn list_members(&self, query: &api::MemberListQuery) -> Result<Vec<Member>> {
        self.call_query(E::list_members, &[], query).await
    }
    pub async fn create_member(&self, new: &api::NewMember) -> Result<CreatedMember> {
        self.call_json(E::create_member, &[], new).await
    }
    pub async fn me(&self) -> Result<Member> {
        self.call(E::get_me, &[]).await
    }
    pub async fn set_my_status(&self, status: MemberStatus) -> Result<StatusResponse> {
        self.call_query(E::set_my_status, &[], &api::StatusQuery { status }).await
    }
    pub async fn get_member(&self, id: Uuid) -> Result<Member> {
        self.call(E::get_member, &[id]).await
    }
    pub async fn update_member(&self, id: Uuid, patch: &api::MemberPatch) -> Result<Member> {
        self.call_json(E::update_member, &[id], patch).await
    }
    pub async fn delete_member(&self, id: Uuid) -> Result<model::Ok> {
        self.call(E::delete_member, &[id]).await
    }
    pub async fn regenerate_token(&self, id: Uuid) -> Result<TokenResponse> {
        self.call(E::regenerate_token, &[id]).await
    }
    pub async fn revoke_token(&self, id: Uuid) -> Result<model::Ok> {
        self.call(E::revoke_token, &[id]).await
    }
    pub async fn set_password(&self, id: Uuid, request: &api::SetPassword) -> Result<model::Ok> {
        self.call_json(E::set_password, &[id], request).await
    }

    // ---- projects --------------------------------------------------------

    pub async fn list_projects(&self, query: &api::ProjectListQuery) -> Result<Vec<Project>> {
        self.call_query(E::list_projects, &[], query).await
    }
    pub async fn create_project(&self, new: &api::NewProject) -> Result<Project> {
        self.call_json(E::create_project, &[], new).await
    }
    pub async fn get_project(&self, id: Uuid) -> Result<Project> {
        self.call(E::get_project, &[id]).await
    }
    pub async fn update_project(&self, id: Uuid, patch: &api::ProjectPatch) -> Result<Project> {
        self.call_json(E::update_project, &[id], patch).await
    }
    pub async fn delete_project(&self, id: Uuid) -> Result<model::Ok> {
        self.call(E::delete_project, &[id]).await
    }
    pub async fn list_project_members(&self, id: Uuid) -> Result<Vec<ProjectMember>> {
        self.call(E::list_project_members, &[id]).await
    }
    pub async fn add_project_member(&self, id: Uuid, member_id: Uuid) -> Result<model::Ok> {
        self.call_json(E::add_project_member, &[id], &api::AddProjectMember { member_id }).await
    }
    pub async fn remove_project_member(&self, id: Uuid, member_id: Uuid) -> Result<model::Ok> {
        self.call(E::remove_project_member, &[id, member_id]).await
    }

    // ---- project files ---------------------------------------------------

    pub async fn list_files(&self, project: Uuid, query: &api::FileListQuery) -> Result<Vec<ProjectFile>> {
        self.call_query(E::list_files, &[project], query).await
    }

    /// Uploads `path` as a project file named `filename` (the path's file
    /// name when `None`), streaming it from disk.
    pub async fn upload_file(
        &self,
        project: Uuid,
        path: &Path,
        filename: Option<&str>,
        description: Option<&str>,
        progress: Option<OnProgress>,
    ) -> Result<ProjectFile> {
        let mut form = Form::new().part("file", file_part(path, filename, progress).await?);
        if let Some(d) = description {
            form = form.text("description", d.to_string());
        }
        self.fetch(self.request(E::upload_file, &[project]).multipart(form)).await
    }
    pub async fn get_file(&self, project: Uuid, id: Uuid) -> Result<ProjectFile> {
        self.call(E::get_file, &[project, id]).await
    }
    pub async fn update_file(&self, project: Uuid, id: Uuid, patch: &api::FilePatch) -> Result<ProjectFile> {
        self.call_json(E::update_file, &[project, id], patch).await
    }
    pub async fn delete_file(&self, project: Uuid, id: Uuid) -> Result<model::Ok> {
        self.call(E::delete_file, &[project, id]).await
    }
    /// Streams a project file's content into `out`.
    pub async fn download_file<W: AsyncWrite + Unpin + ?Sized>(
        &self,
        project: Uuid,
        id: Uuid,
        out: &mut W,
        progress: Option<OnProgress>,
    ) -> Result<Downloaded> {
        self.download(self.request(E::download_file, &[project, id]), out, progress).await
    }

    // ---- tasks -----------------------------------------------------------

    pub async fn list_tasks(&self, filter: &api::TaskFilter) -> Result<Vec<Task>> {
        self.call_query(E::list_tasks, &[], filter).await
    }
    pub async fn create_task(&self, project_id: Uuid, new: &api::NewTask) -> Result<Task> {
        let builder = self.request(E::create_task, &[]).query(&api::ProjectIdQuery { project_id }).json(new);
        self.fetch(builder).await
    }
    pub async fn get_task(&self, id: Uuid) -> Result<Task> {
        self.call(E::get_task, &[id]).await
    }
    pub async fn update_task(&self, id: Uuid, patch: &api::TaskPatch) -> Result<Task> {
        self.call_json(E::update_task, &[id], patch).await
    }
    pub async fn delete_task(&self, id: Uuid) -> Result<model::Ok> {
        self.call(E::delete_task, &[id]).await
    }
    pub async fn take(&self, id: Uuid) -> Result<Task> {
        self.call(E::take_task, &[id]).await
    }
    pub async fn reject(&self, id: Uuid, request: &api::RejectRequest) -> Result<Rejected> {
        self.call_json(E::reject_task, &[id], request).await
    }
    pub async fn assign(&self, id: Uuid, request: &api::AssignRequest) -> Result<Task> {
        self.call_json(E::assign_task, &[id], request).await
    }
    pub async fn watch(&self, id: Uuid) -> Result<Watchers> {
        self.call(E::watch_task, &[id]).await
    }
    pub async fn unwatch(&self, id: Uuid) -> Result<Watchers> {
        self.call(E::unwatch_task, &[id]).await
    }
    pub async fn list_links(&self, id: Uuid) -> Result<Vec<TaskLink>> {
        self.call(E::list_links, &[id]).await
    }
    pub async fn create_link(&self, id: Uuid, new: &api::NewLink) -> Result<TaskLink> {
        self.call_json(E::create_link, &[id], new).await
    }
    pub async fn delete_link(&self, id: Uuid, link: Uuid) -> Result<model::Ok> {
        self.call(E::delete_link, &[id, link]).await
    }
    pub async fn add_task_label(&self, id: Uuid, label: Uuid) -> Result<model::Ok> {
        self.call(E::add_task_label, &[id, label]).await
    }
    pub async fn remove_task_label(&self, id: Uuid, label: Uuid) -> Result<model::Ok> {
        self.call(E::remove_task_label, &[id, label]).await
    }
    pub async fn list_actions(&self, id: Uuid) -> Result<Vec<TaskAction>> {
        self.call(E::list_actions, &[id]).await
    }

    // ---- steps -----------------------------------------------------------

    pub async fn list_steps(&self, task: Uuid) -> Result<Vec<Step>> {
        self.call(E::list_steps, &[task]).await
    }
    pub async fn create_step(&self, task: Uuid, new: &api::NewStep) -> Result<Step> {
        self.call_json(E::create_step, &[task], new).await
    }
    pub async fn update_step(&self, task: Uuid, step: Uuid, patch: &api::StepPatch) -> Result<Step> {
        self.call_json(E::update_step, &[task, step], patch).await
    }
    pub async fn delete_step(&self, task: Uuid, step: Uuid) -> Result<model::Ok> {
        self.call(E::delete_step, &[task, step]).await
    }

    // ---- messages and attachments ----------------------------------------

    pub async fn list_messages(&self, filter: &api::MessageFilter) -> Result<Vec<Message>> {
        self.call_query(E::list_messages, &[], filter).await
    }
    pub async fn post_message(&self, new: &api::NewMessage) -> Result<Message> {
        self.call_json(E::post_message, &[], new).await
    }
    pub async fn list_replies(&self, id: Uuid) -> Result<Vec<Message>> {
        self.call(E::list_replies, &[id]).await
    }
    /// Uploads `path` to attach to a message, streaming it from disk.
    pub async fn upload(
        &self,
        path: &Path,
        filename: Option<&str>,
        progress: Option<OnProgress>,
    ) -> Result<UploadedFile> {
        let form = Form::new().part("file", file_part(path, filename, progress).await?);
        self.fetch(self.request(E::upload, &[]).multipart(form)).await
    }
    /// Streams an attachment's content into `out`.
    pub async fn download_attachment<W: AsyncWrite + Unpin + ?Sized>(
        &self,
        id: Uuid,
        out: &mut W,
        progress: Option<OnProgress>,
    ) -> Result<Downloaded> {
        self.download(self.request(E::download_attachment, &[id]), out, progress).await
    }

    // ---- labels ----------------------------------------------------------

    pub async fn list_labels(&self, page: &api::Page) -> Result<Vec<Label>> {
        self.call_query(E::list_labels, &[], page).await
    }
    pub async fn create_label(&self, new: &api::NewLabel) -> Result<Label> {
        self.call_json(E::create_label, &[], new).await
    }
    pub async fn update_label(&self, id: Uuid, patch: &api::LabelPatch) -> Result<Label> {
        self.call_json(E::update_label, &[id], patch).await
    }
    pub async fn delete_label(&self, id: Uuid) -> Result<model::Ok> {
        self.call(E::delete_label, &[id]).await
    }

    // ---- admin -----------------------------------------------------------

    /// [ext] A consistent backup written by the server into `path`, a
    /// directory on the server's machine (owners only).
    pub async fn backup(&self, path: &str) -> Result<ArchiveSummary> {
        self.call_json(E::backup, &[], &BackupRequest { path: path.to_string() }).await
    }

    // ---- events ----------------------------------------------------------

    /// Follows the event stream from after `since` (from now when `None`).
    /// Connects once before returning, so wrong credentials or an
    /// unreachable server are reported here.
    pub async fn events(&self, since: Option<u64>) -> Result<Events> {
        let socket = self.connect_events(since).await?;
        Ok(Events { client: self.clone(), since, socket: Some(socket) })
    }

    async fn connect_events(&self, since: Option<u64>) -> Result<Socket> {
        use tungstenite::client::IntoClientRequest;
        let ws_base = if let Some(rest) = self.base.strip_prefix("https://") {
            format!("wss://{rest}")
        } else {
            format!("ws://{}", self.base.trim_start_matches("http://"))
        };
        let mut url = format!("{ws_base}{}", E::websocket.endpoint().path);
        if let Some(since) = since {
            url.push_str(&format!("?since={since}"));
        }
        let mut request = url.into_client_request().map_err(transport)?;
        if let Some(token) = &self.token {
            let value = format!("Bearer {token}")
                .parse()
                .map_err(|_| Error::invalid("token", "not a header value"))?;
            request.headers_mut().insert("authorization", value);
        }
        match tokio_tungstenite::connect_async(request).await {
            Ok((socket, _)) => Ok(socket),
            Err(tungstenite::Error::Http(response)) => {
                let body = response.body().as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
                Err(error_of(response.status().as_u16(), &body.unwrap_or_default()))
            }
            Err(e) => Err(transport(e)),
        }
    }

    async fn download<W: AsyncWrite + Unpin + ?Sized>(
        &self,
        builder: reqwest::RequestBuilder,
        out: &mut W,
        progress: Option<OnProgress>,
    ) -> Result<Downloaded> {
        let response = self.send(builder).await?;
        let header =
            |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let filename = header("content-disposition").as_deref().and_then(disposition_filename);
        let mime_type = header("content-type");
        let total = response.content_length();
        let mut stream = response.bytes_stream();
        let mut size = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(transport)?;
            out.write_all(&chunk).await.map_err(Error::from)?;
            size += chunk.len() as u64;
            if let Some(p) = &progress {
                p(size, total);
            }
        }
        out.flush().await.map_err(Error::from)?;
        Ok(Downloaded { filename, mime_type, size })
    }
}

/// A multipart file part streamed from disk, with a known length so the
/// server can refuse an oversized upload at once.
async fn file_part(path: &Path, filename: Option<&str>, progress: Option<OnProgress>) -> Result<Part> {
    let file = tokio::fs::File::open(path).await.map_err(|e| local_file(path, e))?;
    let total = file.metadata().await.map_err(|e| local_file(path, e))?.len();
    let name = match filename {
        Some(n) => n.to_string(),
        None => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Error::invalid("file", format!("{} has no file name", path.display())))?,
    };
    let mut sent = 0u64;
    let stream = tokio_util::io::ReaderStream::new(file).inspect_ok(move |chunk| {
        sent += chunk.len() as u64;
        if let Some(p) = &progress {
            p(sent, Some(total));
        }
    });
    Ok(Part::stream_with_length(reqwest::Body::wrap_stream(stream), total).file_name(name))
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The event stream of a server (DECISIONS 7), resumed after disconnects.
///
/// Each item is one frame as JSON (`{"type", "seq", "ts", "data"}` or
/// `{"type": "resync_required"}`); the `hello` frame of each connection is
/// consumed here. After a disconnect (server restart, close code 4008 for
/// a slow reader) it reconnects with `since` set to the last seq seen, so
/// nothing is lost or repeated while the server retains the events.
pub struct Events {
    client: Client,
    since: Option<u64>,
    socket: Option<Socket>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").field("since", &self.since).finish()
    }
}

impl Events {
    /// The seq of the last event delivered (or of the server's latest
    /// event when connected without `since`).
    pub fn last_seq(&self) -> Option<u64> {
        self.since
    }

    /// The next event. Fails only on errors that reconnecting cannot fix:
    /// credentials refused (401, 403) or an unknown address (404).
    pub async fn next(&mut self) -> Result<serde_json::Value> {
        let mut backoff = Duration::from_millis(100);
        loop {
            let Some(socket) = self.socket.as_mut() else {
                match self.client.connect_events(self.since).await {
                    Ok(socket) => {
                        self.socket = Some(socket);
                        backoff = Duration::from_millis(100);
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            ErrorKind::Unauthorized | ErrorKind::Forbidden | ErrorKind::NotFound
                        ) =>
                    {
                        return Err(e);
                    }
                    Err(_) => {
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                    }
                }
                continue;
            };
            let frame = match socket.next().await {
                Some(Ok(tungstenite::Message::Text(text))) => text,
                // Pings are answered by tungstenite while reading.
                Some(Ok(tungstenite::Message::Close(_))) | Some(Err(_)) | None => {
                    self.socket = None;
                    continue;
                }
                Some(Ok(_)) => continue,
            };
            let Ok(value) = serde_json::from_str::<serde_json::Value>(frame.as_str()) else { continue };
            let seq = value.get("seq").and_then(|s| s.as_u64());
            if value.get("type").and_then(|t| t.as_str()) == Some("hello") {
                // Without `since` the stream starts now: resume from the
                // server's latest seq if this connection drops.
                if self.since.is_none() {
                    self.since = seq;
                }
                continue;
            }
            if let Some(seq) = seq {
                self.since = Some(seq);
            }
            return Ok(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_path_fills() {
        for (_, endpoint) in api::ENDPOINTS {
            let n = endpoint.path.matches('{').count();
            let ids: Vec<Uuid> = (0..n).map(|_| Uuid::nil()).collect();
            let path = fill_path(endpoint.path, &ids);
            assert!(!path.contains('{'), "{path}");
        }
        let id = Uuid::nil();
        assert_eq!(
            fill_path("/api/v1/tasks/{task_id}/steps/{step_id}", &[id, id]),
            format!("/api/v1/tasks/{id}/steps/{id}")
        );
    }

    /// The client method of each endpoint. The match is exhaustive, so an
    /// endpoint added to the table without a client method fails to compile.
    fn method_of(name: E) -> &'static str {
        match name {
            E::health => "health",
            E::login => "login",
            E::list_members => "list_members",
            E::create_member => "create_member",
            E::get_me => "me",
            E::set_my_status => "set_my_status",
            E::get_member => "get_member",
            E::update_member => "update_member",
            E::delete_member => "delete_member",
            E::regenerate_token => "regenerate_token",
            E::revoke_token => "revoke_token",
            E::set_password => "set_password",
            E::list_projects => "list_projects",
            E::create_project => "create_project",
            E::get_project => "get_project",
            E::update_project => "update_project",
            E::delete_project => "delete_project",
            E::list_project_members => "list_project_members",
            E::add_project_member => "add_project_member",
            E::remove_project_member => "remove_project_member",
            E::list_files => "list_files",
            E::upload_file => "upload_file",
            E::get_file => "get_file",
            E::update_file => "update_file",
            E::delete_file => "delete_file",
            E::download_file => "download_file",
            E::list_tasks => "list_tasks",
            E::create_task => "create_task",
            E::get_task => "get_task",
            E::update_task => "update_task",
            E::delete_task => "delete_task",
            E::take_task => "take",
            E::reject_task => "reject",
            E::assign_task => "assign",
            E::watch_task => "watch",
            E::unwatch_task => "unwatch",
            E::list_links => "list_links",
            E::create_link => "create_link",
            E::delete_link => "delete_link",
            E::add_task_label => "add_task_label",
            E::remove_task_label => "remove_task_label",
            E::list_actions => "list_actions",
            E::list_steps => "list_steps",
            E::create_step => "create_step",
            E::update_step => "update_step",
            E::delete_step => "delete_step",
            E::list_messages => "list_messages",
            E::post_message => "post_message",
            E::list_replies => "list_replies",
            E::upload => "upload",
            E::download_attachment => "download_attachment",
            E::list_labels => "list_labels",
            E::create_label => "create_label",
            E::update_label => "update_label",
            E::delete_label => "delete_label",
            E::backup => "backup",
            E::websocket => "events",
        }
    }

    #[test]
    fn every_endpoint_has_a_client_method() {
        let methods: std::collections::HashSet<_> =
            api::ENDPOINTS.iter().map(|(n, _)| method_of(*n)).collect();
        assert_eq!(methods.len(), api::ENDPOINTS.len(), "one method per endpoint");
    }

    #[test]
    fn errors_come_back_with_their_kind_and_detail() {
        let e = error_of(409, r#"{"detail":"slug \"web\" is already taken","code":"conflict"}"#);
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert_eq!(e.detail(), "slug \"web\" is already taken");
        assert_eq!(error_of(422, "").kind(), ErrorKind::Validation);
        assert_eq!(error_of(502, "bad gateway").detail(), "bad gateway");
    }

    #[test]
    fn content_disposition_names() {
        assert_eq!(
            disposition_filename("attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf").as_deref(),
            Some("résumé.pdf")
        );
        assert_eq!(disposition_filename("inline; filename=\"a.png\"").as_deref(), Some("a.png"));
        assert_eq!(disposition_filename("attachment"), None);
    }
}
