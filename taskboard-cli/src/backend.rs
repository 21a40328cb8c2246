//! The one interface every command is written against, and its two
//! implementations: [`LocalBackend`] (the board in a data directory,
//! through taskboard-core) and [`RemoteBackend`] (a server, through the
//! typed [`Client`]). Both return the same wire types, so a command prints
//! the same JSON in either mode.

use std::path::Path;

use taskboard_core::api::*;
use taskboard_core::archive::ArchiveSummary;
use taskboard_core::model::{self, *};
use taskboard_core::{Actor, Board, BoardOptions, Error, ErrorKind, Result};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use uuid::Uuid;

use crate::client::{Client, Downloaded, OnProgress};

/// Every operation of the API. References (`find_*`) accept what a person
/// types: ids, slugs and task keys.
// Used generically by the commands (never as `dyn`), so the futures'
// auto traits need not be spelled out.
#[allow(async_fn_in_trait)]
pub trait Backend {
    async fn health(&self) -> Result<Health>;
    async fn whoami(&self) -> Result<Member>;

    async fn find_member(&self, reference: &str) -> Result<Member>;
    async fn find_project(&self, reference: &str) -> Result<Project>;
    async fn find_task(&self, reference: &str) -> Result<Task>;

    async fn list_members(&self, query: MemberListQuery) -> Result<Vec<Member>>;
    async fn get_member(&self, id: Uuid) -> Result<Member>;
    async fn create_member(&self, new: NewMember) -> Result<CreatedMember>;
    async fn update_member(&self, id: Uuid, patch: MemberPatch) -> Result<Member>;
    async fn delete_member(&self, id: Uuid) -> Result<model::Ok>;
    async fn regenerate_token(&self, id: Uuid) -> Result<TokenResponse>;
    async fn revoke_token(&self, id: Uuid) -> Result<model::Ok>;
    async fn set_password(&self, id: Uuid, request: SetPassword) -> Result<model::Ok>;
    async fn set_my_status(&self, status: MemberStatus) -> Result<StatusResponse>;

    async fn list_projects(&self, query: ProjectListQuery) -> Result<Vec<Project>>;
    async fn get_project(&self, id: Uuid) -> Result<Project>;
    async fn create_project(&self, new: NewProject) -> Result<Project>;
    async fn update_project(&self, id: Uuid, patch: ProjectPatch) -> Result<Project>;
    async fn delete_project(&self, id: Uuid) -> Result<model::Ok>;
    async fn list_project_members(&self, id: Uuid) -> Result<Vec<ProjectMember>>;
    async fn add_project_member(&self, id: Uuid, member: Uuid) -> Result<model::Ok>;
    async fn remove_project_member(&self, id: Uuid, member: Uuid) -> Result<model::Ok>;

    async fn list_tasks(&self, filter: TaskFilter) -> Result<Vec<Task>>;
    async fn get_task(&self, id: Uuid) -> Result<Task>;
    async fn create_task(&self, project: Uuid, new: NewTask) -> Result<Task>;
    async fn update_task(&self, id: Uuid, patch: TaskPatch) -> Result<Task>;
    async fn delete_task(&self, id: Uuid) -> Result<model::Ok>;
    async fn take(&self, id: Uuid) -> Result<Task>;
    async fn reject(&self, id: Uuid, request: RejectRequest) -> Result<Rejected>;
    async fn assign(&self, id: Uuid, request: AssignRequest) -> Result<Task>;
    async fn watch(&self, id: Uuid) -> Result<Watchers>;
    async fn unwatch(&self, id: Uuid) -> Result<Watchers>;
    async fn list_links(&self, id: Uuid) -> Result<Vec<TaskLink>>;
    async fn create_link(&self, id: Uuid, new: NewLink) -> Result<TaskLink>;
    async fn delete_link(&self, id: Uuid, link: Uuid) -> Result<model::Ok>;
    async fn add_task_label(&self, id: Uuid, label: Uuid) -> Result<model::Ok>;
    async fn remove_task_label(&self, id: Uuid, label: Uuid) -> Result<model::Ok>;
    async fn list_actions(&self, id: Uuid) -> Result<Vec<TaskAction>>;

    async fn list_steps(&self, task: Uuid) -> Result<Vec<Step>>;
    async fn create_step(&self, task: Uuid, new: NewStep) -> Result<Step>;
    async fn update_step(&self, task: Uuid, step: Uuid, patch: StepPatch) -> Result<Step>;
    async fn delete_step(&self, task: Uuid, step: Uuid) -> Result<model::Ok>;

    async fn list_labels(&self, page: Page) -> Result<Vec<Label>>;
    async fn create_label(&self, new: NewLabel) -> Result<Label>;
    async fn update_label(&self, id: Uuid, patch: LabelPatch) -> Result<Label>;
    async fn delete_label(&self, id: Uuid) -> Result<model::Ok>;

    async fn list_messages(&self, filter: MessageFilter) -> Result<Vec<Message>>;
    async fn post_message(&self, new: NewMessage) -> Result<Message>;
    async fn list_replies(&self, id: Uuid) -> Result<Vec<Message>>;
    async fn upload(&self, path: &Path, progress: Option<OnProgress>) -> Result<UploadedFile>;
    async fn download_attachment(
        &self,
        id: Uuid,
        out: &mut (dyn AsyncWrite + Unpin + Send),
        progress: Option<OnProgress>,
    ) -> Result<Downloaded>;

    async fn list_files(&self, project: Uuid, query: FileListQuery) -> Result<Vec<ProjectFile>>;
    async fn upload_file(
        &self,
        project: Uuid,
        path: &Path,
        filename: Option<&str>,
        description: Option<&str>,
        progress: Option<OnProgress>,
    ) -> Result<ProjectFile>;
    async fn get_file(&self, project: Uuid, id: Uuid) -> Result<ProjectFile>;
    async fn update_file(&self, project: Uuid, id: Uuid, patch: FilePatch) -> Result<ProjectFile>;
    async fn delete_file(&self, project: Uuid, id: Uuid) -> Result<model::Ok>;
    async fn download_file(
        &self,
        project: Uuid,
        id: Uuid,
        out: &mut (dyn AsyncWrite + Unpin + Send),
        progress: Option<OnProgress>,
    ) -> Result<Downloaded>;

    /// A consistent archive of the board in `dir` (for a server: a
    /// directory on the server's machine).
    async fn backup(&self, dir: &str) -> Result<ArchiveSummary>;
}

// ---- local -----------------------------------------------------------------

/// The board of a data directory, opened in this process, acting as one
/// member without credentials (the user of the machine is trusted).
#[derive(Debug)]
pub struct LocalBackend {
    pub board: Board,
    pub actor: Actor,
}

/// Opens the board of `data_dir`. The directory must hold a board already
/// (see `taskboard init`); a database held by a running server is a
/// conflict whose message points at `--server`.
pub async fn open_board(data_dir: &Path) -> Result<Board> {
    if !data_dir.join("board.redb").exists() {
        return Err(Error::not_found(format!(
            "no board in {}; create one with `taskboard init --data-dir {}`",
            data_dir.display(),
            data_dir.display()
        )));
    }
    Board::open(data_dir, BoardOptions::default()).await.map_err(|e| {
        if e.kind() == ErrorKind::Conflict {
            Error::conflict(format!(
                "{}. While a server holds the board, talk to it instead: \
                 taskboard --server http://HOST:PORT … (or `taskboard login`)",
                e.detail()
            ))
        } else {
            e
        }
    })
}

impl LocalBackend {
    /// Acts as the member `acting_as` (slug or id), or as the first active
    /// owner when `None`.
    pub async fn open(data_dir: &Path, acting_as: Option<&str>) -> Result<LocalBackend> {
        let board = open_board(data_dir).await?;
        let actor = board.local_actor(acting_as).await?;
        Ok(LocalBackend { board, actor })
    }
}

fn done() -> Result<model::Ok> {
    Ok(model::Ok::OK)
}

/// Copies an opened file content into `out`, reporting progress.
async fn copy_download(
    mut d: taskboard_core::board::Download,
    out: &mut (dyn AsyncWrite + Unpin + Send),
    progress: Option<OnProgress>,
) -> Result<Downloaded> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = d.file.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).await?;
        size += n as u64;
        if let Some(p) = &progress {
            p(size, Some(d.size));
        }
    }
    out.flush().await?;
    Ok(Downloaded { filename: Some(d.filename), mime_type: Some(d.mime_type), size })
}

/// Opens a local file to upload, wrapped to report progress as it is read.
async fn open_upload(
    path: &Path,
    progress: Option<OnProgress>,
) -> Result<(String, impl tokio::io::AsyncRead + Unpin)> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| Error::bad_request(format!("{}: {e}", path.display())))?;
    let total = file.metadata().await?.len();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Error::invalid("file", format!("{} has no file name", path.display())))?;
    Ok((name, ProgressReader { inner: file, done: 0, total, progress }))
}

struct ProgressReader<R> {
    inner: R,
    done: u64,
    total: u64,
    progress: Option<OnProgress>,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for ProgressReader<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = (buf.filled().len() - before) as u64;
        if read > 0 {
            self.done += read;
            if let Some(p) = &self.progress {
                p(self.done, Some(self.total));
            }
        }
        poll
    }
}

impl Backend for LocalBackend {
    async fn health(&self) -> Result<Health> {
        Ok(Health { status: "ok".into(), version: env!("CARGO_PKG_VERSION").into() })
    }
    async fn whoami(&self) -> Result<Member> {
        self.board.me(&self.actor).await
    }
    async fn find_member(&self, reference: &str) -> Result<Member> {
        self.board.find_member(&self.actor, reference).await
    }
    async fn find_project(&self, reference: &str) -> Result<Project> {
        self.board.find_project(&self.actor, reference).await
    }
    async fn find_task(&self, reference: &str) -> Result<Task> {
        self.board.find_task(&self.actor, reference).await
    }

    async fn list_members(&self, q: MemberListQuery) -> Result<Vec<Member>> {
        self.board.list_members(&self.actor, q.include_inactive, q.page).await
    }
    async fn get_member(&self, id: Uuid) -> Result<Member> {
        self.board.get_member(&self.actor, id).await
    }
    async fn create_member(&self, new: NewMember) -> Result<CreatedMember> {
        self.board.create_member(&self.actor, new).await
    }
    async fn update_member(&self, id: Uuid, patch: MemberPatch) -> Result<Member> {
        self.board.update_member(&self.actor, id, patch).await
    }
    async fn delete_member(&self, id: Uuid) -> Result<model::Ok> {
        self.board.delete_member(&self.actor, id).await?;
        done()
    }
    async fn regenerate_token(&self, id: Uuid) -> Result<TokenResponse> {
        Ok(TokenResponse { token: self.board.regenerate_token(&self.actor, id).await? })
    }
    async fn revoke_token(&self, id: Uuid) -> Result<model::Ok> {
        self.board.revoke_token(&self.actor, id).await?;
        done()
    }
    async fn set_password(&self, id: Uuid, request: SetPassword) -> Result<model::Ok> {
        self.board.set_password(&self.actor, id, request.password).await?;
        done()
    }
    async fn set_my_status(&self, status: MemberStatus) -> Result<StatusResponse> {
        Ok(StatusResponse { status: self.board.set_status(&self.actor, status).await? })
    }

    async fn list_projects(&self, q: ProjectListQuery) -> Result<Vec<Project>> {
        self.board.list_projects(&self.actor, q.include_archived, q.page).await
    }
    async fn get_project(&self, id: Uuid) -> Result<Project> {
        self.board.get_project(&self.actor, id).await
    }
    async fn create_project(&self, new: NewProject) -> Result<Project> {
        self.board.create_project(&self.actor, new).await
    }
    async fn update_project(&self, id: Uuid, patch: ProjectPatch) -> Result<Project> {
        self.board.update_project(&self.actor, id, patch).await
    }
    async fn delete_project(&self, id: Uuid) -> Result<model::Ok> {
        self.board.delete_project(&self.actor, id).await?;
        done()
    }
    async fn list_project_members(&self, id: Uuid) -> Result<Vec<ProjectMember>> {
        self.board.project_members(&self.actor, id).await
    }
    async fn add_project_member(&self, id: Uuid, member: Uuid) -> Result<model::Ok> {
        self.board.add_project_member(&self.actor, id, member).await?;
        done()
    }
    async fn remove_project_member(&self, id: Uuid, member: Uuid) -> Result<model::Ok> {
        self.board.remove_project_member(&self.actor, id, member).await?;
        done()
    }

    async fn list_tasks(&self, filter: TaskFilter) -> Result<Vec<Task>> {
        self.board.list_tasks(&self.actor, filter).await
    }
    async fn get_task(&self, id: Uuid) -> Result<Task> {
        self.board.get_task(&self.actor, id).await
    }
    async fn create_task(&self, project: Uuid, new: NewTask) -> Result<Task> {
        self.board.create_task(&self.actor, project, new).await
    }
    async fn update_task(&self, id: Uuid, patch: TaskPatch) -> Result<Task> {
        self.board.update_task(&self.actor, id, patch).await
    }
    async fn delete_task(&self, id: Uuid) -> Result<model::Ok> {
        self.board.delete_task(&self.actor, id).await?;
        done()
    }
    async fn take(&self, id: Uuid) -> Result<Task> {
        self.board.take(&self.actor, id).await
    }
    async fn reject(&self, id: Uuid, request: RejectRequest) -> Result<Rejected> {
        self.board.reject(&self.actor, id, request.reason).await
    }
    async fn assign(&self, id: Uuid, request: AssignRequest) -> Result<Task> {
        self.board.assign(&self.actor, id, request.assignee_id).await
    }
    async fn watch(&self, id: Uuid) -> Result<Watchers> {
        self.board.watch(&self.actor, id).await
    }
    async fn unwatch(&self, id: Uuid) -> Result<Watchers> {
        self.board.unwatch(&self.actor, id).await
    }
    async fn list_links(&self, id: Uuid) -> Result<Vec<TaskLink>> {
        self.board.list_links(&self.actor, id).await
    }
    async fn create_link(&self, id: Uuid, new: NewLink) -> Result<TaskLink> {
        self.board.create_link(&self.actor, id, new).await
    }
    async fn delete_link(&self, id: Uuid, link: Uuid) -> Result<model::Ok> {
        self.board.delete_link(&self.actor, id, link).await?;
        done()
    }
    async fn add_task_label(&self, id: Uuid, label: Uuid) -> Result<model::Ok> {
        self.board.add_task_label(&self.actor, id, label).await?;
        done()
    }
    async fn remove_task_label(&self, id: Uuid, label: Uuid) -> Result<model::Ok> {
        self.board.remove_task_label(&self.actor, id, label).await?;
        done()
    }
    async fn list_actions(&self, id: Uuid) -> Result<Vec<TaskAction>> {
        self.board.task_actions(&self.actor, id).await
    }

    async fn list_steps(&self, task: Uuid) -> Result<Vec<Step>> {
        self.board.list_steps(&self.actor, task).await
    }
    async fn create_step(&self, task: Uuid, new: NewStep) -> Result<Step> {
        self.board.create_step(&self.actor, task, new.title).await
    }
    async fn update_step(&self, task: Uuid, step: Uuid, patch: StepPatch) -> Result<Step> {
        self.board.update_step(&self.actor, task, step, patch).await
    }
    async fn delete_step(&self, task: Uuid, step: Uuid) -> Result<model::Ok> {
        self.board.delete_step(&self.actor, task, step).await?;
        done()
    }

    async fn list_labels(&self, page: Page) -> Result<Vec<Label>> {
        self.board.list_labels(&self.actor, page).await
    }
    async fn create_label(&self, new: NewLabel) -> Result<Label> {
        self.board.create_label(&self.actor, new).await
    }
    async fn update_label(&self, id: Uuid, patch: LabelPatch) -> Result<Label> {
        self.board.update_label(&self.actor, id, patch).await
    }
    async fn delete_label(&self, id: Uuid) -> Result<model::Ok> {
        self.board.delete_label(&self.actor, id).await?;
        done()
    }

    async fn list_messages(&self, filter: MessageFilter) -> Result<Vec<Message>> {
        self.board.list_messages(&self.actor, filter).await
    }
    async fn post_message(&self, new: NewMessage) -> Result<Message> {
        self.board.post_message(&self.actor, new).await
    }
    async fn list_replies(&self, id: Uuid) -> Result<Vec<Message>> {
        self.board.replies(&self.actor, id).await
    }
    async fn upload(&self, path: &Path, progress: Option<OnProgress>) -> Result<UploadedFile> {
        let (name, reader) = open_upload(path, progress).await?;
        self.board.upload(&self.actor, &name, None, reader).await
    }
    async fn download_attachment(
        &self,
        id: Uuid,
        out: &mut (dyn AsyncWrite + Unpin + Send),
        progress: Option<OnProgress>,
    ) -> Result<Downloaded> {
        copy_download(self.board.open_attachment(&self.actor, id).await?, out, progress).await
    }

    async fn list_files(&self, project: Uuid, q: FileListQuery) -> Result<Vec<ProjectFile>> {
        self.board.list_files(&self.actor, project, q.search, q.page).await
    }
    async fn upload_file(
        &self,
        project: Uuid,
        path: &Path,
        filename: Option<&str>,
        description: Option<&str>,
        progress: Option<OnProgress>,
    ) -> Result<ProjectFile> {
        let (name, reader) = open_upload(path, progress).await?;
        let name = filename.unwrap_or(&name);
        self.board
            .upload_file(&self.actor, project, name, description.map(str::to_string), None, reader)
            .await
    }
    async fn get_file(&self, project: Uuid, id: Uuid) -> Result<ProjectFile> {
        self.board.get_file(&self.actor, project, id).await
    }
    async fn update_file(&self, project: Uuid, id: Uuid, patch: FilePatch) -> Result<ProjectFile> {
        self.board.update_file(&self.actor, project, id, patch).await
    }
    async fn delete_file(&self, project: Uuid, id: Uuid) -> Result<model::Ok> {
        self.board.delete_file(&self.actor, project, id).await?;
        done()
    }
    async fn download_file(
        &self,
        project: Uuid,
        id: Uuid,
        out: &mut (dyn AsyncWrite + Unpin + Send),
        progress: Option<OnProgress>,
    ) -> Result<Downloaded> {
        copy_download(self.board.open_file(&self.actor, project, id).await?, out, progress).await
    }

    async fn backup(&self, dir: &str) -> Result<ArchiveSummary> {
        // Locally the path is on this machine, so a relative one is fine.
        let dir = std::path::absolute(dir)?;
        self.board.backup_archive(&self.actor, dir).await
    }
}

// ---- remote ----------------------------------------------------------------

/// A server, through the typed client.
#[derive(Debug, Clone)]
pub struct RemoteBackend {
    pub client: Client,
}

impl Backend for RemoteBackend {
    async fn health(&self) -> Result<Health> {
        self.client.health().await
    }
    async fn whoami(&self) -> Result<Member> {
        self.client.me().await
    }

    // The API addresses resources by id; slugs and keys are looked up
    // through the list endpoints' filters.
    async fn find_member(&self, reference: &str) -> Result<Member> {
        if let Ok(id) = reference.parse::<Uuid>() {
            return self.client.get_member(id).await;
        }
        let all = self
            .client
            .list_members(&MemberListQuery { include_inactive: true, page: Page::default() })
            .await?;
        all.into_iter()
            .find(|m| m.slug == reference)
            .ok_or_else(|| Error::not_found(format!("member {reference} not found")))
    }
    async fn find_project(&self, reference: &str) -> Result<Project> {
        if let Ok(id) = reference.parse::<Uuid>() {
            return self.client.get_project(id).await;
        }
        let all = self
            .client
            .list_projects(&ProjectListQuery { include_archived: true, page: Page::default() })
            .await?;
        all.into_iter()
            .find(|p| p.slug == reference)
            .ok_or_else(|| Error::not_found(format!("project {reference} not found")))
    }
    async fn find_task(&self, reference: &str) -> Result<Task> {
        if let Ok(id) = reference.parse::<Uuid>() {
            return self.client.get_task(id).await;
        }
        let found = self
            .client
            .list_tasks(&TaskFilter { q: Some(reference.to_string()), ..Default::default() })
            .await?;
        found
            .into_iter()
            .find(|t| t.key.eq_ignore_ascii_case(reference))
            .ok_or_else(|| Error::not_found(format!("task {reference} not found")))
    }

    async fn list_members(&self, q: MemberListQuery) -> Result<Vec<Member>> {
        self.client.list_members(&q).await
    }
    async fn get_member(&self, id: Uuid) -> Result<Member> {
        self.client.get_member(id).await
    }
    async fn create_member(&self, new: NewMember) -> Result<CreatedMember> {
        self.client.create_member(&new).await
    }
    async fn update_member(&self, id: Uuid, patch: MemberPatch) -> Result<Member> {
        self.client.update_member(id, &patch).await
    }
    async fn delete_member(&self, id: Uuid) -> Result<model::Ok> {
        self.client.delete_member(id).await
    }
    async fn regenerate_token(&self, id: Uuid) -> Result<TokenResponse> {
        self.client.regenerate_token(id).await
    }
    async fn revoke_token(&self, id: Uuid) -> Result<model::Ok> {
        self.client.revoke_token(id).await
    }
    async fn set_password(&self, id: Uuid, request: SetPassword) -> Result<model::Ok> {
        self.client.set_password(id, &request).await
    }
    async fn set_my_status(&self, status: MemberStatus) -> Result<StatusResponse> {
        self.client.set_my_status(status).await
    }

    async fn list_projects(&self, q: ProjectListQuery) -> Result<Vec<Project>> {
        self.client.list_projects(&q).await
    }
    async fn get_project(&self, id: Uuid) -> Result<Project> {
        self.client.get_project(id).await
    }
    async fn create_project(&self, new: NewProject) -> Result<Project> {
        self.client.create_project(&new).await
    }
    async fn update_project(&self, id: Uuid, patch: ProjectPatch) -> Result<Project> {
        self.client.update_project(id, &patch).await
    }
    async fn delete_project(&self, id: Uuid) -> Result<model::Ok> {
        self.client.delete_project(id).await
    }
    async fn list_project_members(&self, id: Uuid) -> Result<Vec<ProjectMember>> {
        self.client.list_project_members(id).await
    }
    async fn add_project_member(&self, id: Uuid, member: Uuid) -> Result<model::Ok> {
        self.client.add_project_member(id, member).await
    }
    async fn remove_project_member(&self, id: Uuid, member: Uuid) -> Result<model::Ok> {
        self.client.remove_project_member(id, member).await
    }

    async fn list_tasks(&self, filter: TaskFilter) -> Result<Vec<Task>> {
        self.client.list_tasks(&filter).await
    }
    async fn get_task(&self, id: Uuid) -> Result<Task> {
        self.client.get_task(id).await
    }
    async fn create_task(&self, project: Uuid, new: NewTask) -> Result<Task> {
        self.client.create_task(project, &new).await
    }
    async fn update_task(&self, id: Uuid, patch: TaskPatch) -> Result<Task> {
        self.client.update_task(id, &patch).await
    }
    async fn delete_task(&self, id: Uuid) -> Result<model::Ok> {
        self.client.delete_task(id).await
    }
    async fn take(&self, id: Uuid) -> Result<Task> {
        self.client.take(id).await
    }
    async fn reject(&self, id: Uuid, request: RejectRequest) -> Result<Rejected> {
        self.client.reject(id, &request).await
    }
    async fn assign(&self, id: Uuid, request: AssignRequest) -> Result<Task> {
        self.client.assign(id, &request).await
    }
    async fn watch(&self, id: Uuid) -> Result<Watchers> {
        self.client.watch(id).await
    }
    async fn unwatch(&self, id: Uuid) -> Result<Watchers> {
        self.client.unwatch(id).await
    }
    async fn list_links(&self, id: Uuid) -> Result<Vec<TaskLink>> {
        self.client.list_links(id).await
    }
    async fn create_link(&self, id: Uuid, new: NewLink) -> Result<TaskLink> {
        self.client.create_link(id, &new).await
    }
    async fn delete_link(&self, id: Uuid, link: Uuid) -> Result<model::Ok> {
        self.client.delete_link(id, link).await
    }
    async fn add_task_label(&self, id: Uuid, label: Uuid) -> Result<model::Ok> {
        self.client.add_task_label(id, label).await
    }
    async fn remove_task_label(&self, id: Uuid, label: Uuid) -> Result<model::Ok> {
        self.client.remove_task_label(id, label).await
    }
    async fn list_actions(&self, id: Uuid) -> Result<Vec<TaskAction>> {
        self.client.list_actions(id).await
    }

    async fn list_steps(&self, task: Uuid) -> Result<Vec<Step>> {
        self.client.list_steps(task).await
    }
    async fn create_step(&self, task: Uuid, new: NewStep) -> Result<Step> {
        self.client.create_step(task, &new).await
    }
    async fn update_step(&self, task: Uuid, step: Uuid, patch: StepPatch) -> Result<Step> {
        self.client.update_step(task, step, &patch).await
    }
    async fn delete_step(&self, task: Uuid, step: Uuid) -> Result<model::Ok> {
        self.client.delete_step(task, step).await
    }

    async fn list_labels(&self, page: Page) -> Result<Vec<Label>> {
        self.client.list_labels(&page).await
    }
    async fn create_label(&self, new: NewLabel) -> Result<Label> {
        self.client.create_label(&new).await
    }
    async fn update_label(&self, id: Uuid, patch: LabelPatch) -> Result<Label> {
        self.client.update_label(id, &patch).await
    }
    async fn delete_label(&self, id: Uuid) -> Result<model::Ok> {
        self.client.delete_label(id).await
    }

    async fn list_messages(&self, filter: MessageFilter) -> Result<Vec<Message>> {
        self.client.list_messages(&filter).await
    }
    async fn post_message(&self, new: NewMessage) -> Result<Message> {
        self.client.post_message(&new).await
    }
    async fn list_replies(&self, id: Uuid) -> Result<Vec<Message>> {
        self.client.list_replies(id).await
    }
    async fn upload(&self, path: &Path, progress: Option<OnProgress>) -> Result<UploadedFile> {
        self.client.upload(path, None, progress).await
    }
    async fn download_attachment(
        &self,
        id: Uuid,
        out: &mut (dyn AsyncWrite + Unpin + Send),
        progress: Option<OnProgress>,
    ) -> Result<Downloaded> {
        self.client.download_attachment(id, out, progress).await
    }

    async fn list_files(&self, project: Uuid, q: FileListQuery) -> Result<Vec<ProjectFile>> {
        self.client.list_files(project, &q).await
    }
    async fn upload_file(
        &self,
        project: Uuid,
        path: &Path,
        filename: Option<&str>,
        description: Option<&str>,
        progress: Option<OnProgress>,
    ) -> Result<ProjectFile> {
        self.client.upload_file(project, path, filename, description, progress).await
    }
    async fn get_file(&self, project: Uuid, id: Uuid) -> Result<ProjectFile> {
        self.client.get_file(project, id).await
    }
    async fn update_file(&self, project: Uuid, id: Uuid, patch: FilePatch) -> Result<ProjectFile> {
        self.client.update_file(project, id, &patch).await
    }
    async fn delete_file(&self, project: Uuid, id: Uuid) -> Result<model::Ok> {
        self.client.delete_file(project, id).await
    }
    async fn download_file(
        &self,
        project: Uuid,
        id: Uuid,
        out: &mut (dyn AsyncWrite + Unpin + Send),
        progress: Option<OnProgress>,
    ) -> Result<Downloaded> {
        self.client.download_file(project, id, out, progress).await
    }

    async fn backup(&self, dir: &str) -> Result<ArchiveSummary> {
        self.client.backup(dir).await
    }
}
