//! Every command, written once against [`Backend`]. The CLI holds no rule
//! of the board: it turns arguments into requests, resolves the references
//! a person types (slugs, keys, names) and prints the answers.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use taskboard_core::api::*;
use taskboard_core::archive::BackupRequest;
use taskboard_core::model::*;
use taskboard_core::validate::*;
use taskboard_core::{Board, BoardOptions, Error, ErrorKind, Result};
use uuid::Uuid;

use crate::backend::{Backend, LocalBackend, open_board};
use crate::cli::*;
use crate::client::{Client, OnProgress, save_download, upload_from_path};
use crate::login::{self, StoredLogin};
use crate::output::Out;

/// Why a run failed: exit code 2 for usage, 1 for the board's errors.
#[derive(Debug)]
pub enum Failure {
    Usage(String),
    Api(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Api(e)
    }
}

/// Where the commands go.
enum Mode {
    Local(PathBuf),
    Remote(Client),
}

fn choose_mode(g: &Global) -> std::result::Result<Mode, Failure> {
    if let Some(server) = &g.server {
        if g.acting_as.is_some() {
            return Err(Failure::Usage(
                "--as applies to local mode only; a server acts as the token's member".into(),
            ));
        }
        let token = match &g.token {
            Some(t) => Some(t.clone()),
            None => login::load()?
                .filter(|s| s.server.trim_end_matches('/') == server.trim_end_matches('/'))
                .map(|s| s.token),
        };
        return Ok(Mode::Remote(Client::new(server, token)?));
    }
    if let Some(dir) = &g.data_dir {
        return Ok(Mode::Local(dir.clone()));
    }
    match login::load()? {
        Some(stored) => Ok(Mode::Remote(Client::new(&stored.server, g.token.clone().or(Some(stored.token)))?)),
        None => Err(Failure::Usage(
            "no board chosen: give --data-dir DIR (local board) or --server URL (a server), or run `taskboard login`"
                .into(),
        )),
    }
}

fn need_data_dir(g: &Global, command: &str) -> std::result::Result<PathBuf, Failure> {
    g.data_dir
        .clone()
        .ok_or_else(|| Failure::Usage(format!("`{command}` needs --data-dir DIR (or TASKBOARD_DATA_DIR)")))
}

/// Runs one parsed command line.
pub async fn run(cli: Cli) -> std::result::Result<(), Failure> {
    let out = Out { json: cli.global.json, quiet: cli.global.quiet };
    let g = cli.global;
    match cli.command {
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "taskboard", &mut std::io::stdout());
            Ok(())
        }
        Command::Init { owner, password } => init(&need_data_dir(&g, "init")?, &owner, password, out).await,
        Command::Import { dir } => {
            let data_dir = need_data_dir(&g, "import")?;
            let bar = bar("import", "records");
            let summary = Board::import_archive(dir, data_dir, archive_progress(&bar)).await;
            finish(bar);
            out.summary("imported", &summary?);
            Ok(())
        }
        Command::Export { dir } => {
            let board = open_board(&need_data_dir(&g, "export")?).await.map_err(|e| {
                if e.kind() == ErrorKind::Conflict {
                    Error::conflict(format!("{} Or, with a server, `taskboard backup DIR`.", e.detail()))
                } else {
                    e
                }
            })?;
            let bar = bar("export", "files");
            let summary = board.export_archive(dir, archive_progress(&bar)).await;
            finish(bar);
            out.summary("exported", &summary?);
            Ok(())
        }
        Command::Login { login: name, password } => {
            let server =
                g.server.clone().ok_or_else(|| Failure::Usage("`login` needs --server URL".into()))?;
            let password = match password {
                Some(p) => p,
                None => read_secret("password")?,
            };
            let client = Client::new(&server, None)?;
            let response = client.call::<Login>((), (), LoginRequest { login: name, password }).await?;
            let path = login::store(&StoredLogin {
                server: client.base_url().to_string(),
                token: response.token.clone(),
                member_id: response.member_id,
                slug: response.slug.clone(),
            })?;
            out.done(
                &response,
                &format!("logged in as {}; token stored in {}", response.slug, path.display()),
            );
            Ok(())
        }
        Command::Logout => {
            let removed = login::remove()?;
            let text = if removed { "logged out" } else { "not logged in" };
            out.done(&serde_json::json!({"ok": true}), text);
            Ok(())
        }
        command => match choose_mode(&g)? {
            Mode::Local(dir) => {
                let backend = LocalBackend::open(&dir, g.acting_as.as_deref()).await?;
                if let Command::Events { since } = command {
                    return local_events(&backend, since, out).await;
                }
                execute(&backend, command, out).await
            }
            Mode::Remote(client) => {
                if let Command::Events { since } = command {
                    let mut events = client.events(since).await?;
                    loop {
                        out.json_line(&events.next().await?);
                    }
                }
                execute(&crate::backend::RemoteBackend { client }, command, out).await
            }
        },
    }
}

async fn init(
    dir: &Path,
    owner: &str,
    password: Option<String>,
    out: Out,
) -> std::result::Result<(), Failure> {
    let slug = Slug::new(owner).map_err(|e| e.at("owner"))?;
    let password = password.map(Password::new).transpose().map_err(|e| e.at("password"))?;
    let board = Board::open(dir, BoardOptions::default()).await?;
    let boot = board
        .bootstrap_owner(slug, password)
        .await?
        .ok_or_else(|| Error::conflict(format!("{} already holds a board with members", dir.display())))?;
    board.flush().await?;
    let json = serde_json::json!({"owner": boot.owner, "password": boot.generated_password});
    let mut text = format!("created a board in {} with owner {}", dir.display(), boot.owner.slug);
    if let Some(p) = &boot.generated_password {
        text.push_str(&format!("\npassword (shown once): {p}"));
    }
    if out.quiet {
        println!("{}", boot.owner.id);
    }
    out.done(&json, &text);
    Ok(())
}

/// Locally nobody else can write while this process holds the board, so
/// the stream is the retained events after `since`, then the end.
async fn local_events(b: &LocalBackend, since: Option<u64>, out: Out) -> std::result::Result<(), Failure> {
    let since = since.unwrap_or_else(|| {
        b.board.latest_seq().saturating_sub(taskboard_core::events::RETAINED_EVENTS as u64)
    });
    let sub = b.board.subscribe(Some(since));
    if sub.resync_required {
        out.json_line(&serde_json::json!({"type": "resync_required"}));
    }
    let viewer = b.board.viewer(b.caller.actor()?);
    for event in sub.replay.iter().filter(|e| e.visible_to(&viewer)) {
        let frame: serde_json::Value = serde_json::from_str(&event.frame()).map_err(Error::internal)?;
        out.json_line(&frame);
    }
    Ok(())
}

// ---- helpers ---------------------------------------------------------------

fn read_secret(what: &str) -> Result<String> {
    if std::io::stdin().is_terminal() {
        eprint!("{what}: ");
    }
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| Error::bad_request(format!("reading the {what}: {e}")))?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

/// A progress bar on stderr when it is a terminal; none in scripts.
fn bar(what: &str, unit: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    let template = if unit == "bytes" {
        "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} {eta}".to_string()
    } else {
        format!("{{msg}} [{{bar:40}}] {{pos}}/{{len}} {unit}")
    };
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    Some(bar)
}

fn byte_progress(bar: &Option<ProgressBar>) -> Option<OnProgress> {
    let bar = bar.clone()?;
    Some(Arc::new(move |done, total| {
        if let Some(t) = total {
            bar.set_length(t);
        }
        bar.set_position(done);
    }))
}

fn archive_progress(bar: &Option<ProgressBar>) -> Option<taskboard_core::archive::ProgressFn> {
    let bar = bar.clone()?;
    Some(Arc::new(move |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    }))
}

fn finish(bar: Option<ProgressBar>) {
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

fn valid<T>(field: &str, v: std::result::Result<T, InvalidValue>) -> Result<T> {
    v.map_err(|e| e.at(field))
}

fn patch<T>(value: Option<T>, clear: bool) -> Patch<T> {
    match (value, clear) {
        (Some(v), _) => Patch::Value(v),
        (None, true) => Patch::Null,
        (None, false) => Patch::Absent,
    }
}

fn page(p: PageArgs) -> Page {
    Page { limit: p.limit, offset: p.offset, cursor: p.cursor }
}

fn agent_config(a: AgentConfigArgs) -> Result<Option<AgentConfig>> {
    if let Some(json) = a.agent_config {
        return serde_json::from_str(&json).map(Some).map_err(|e| Error::invalid("agent_config", e));
    }
    let any = !a.capabilities.is_empty()
        || !a.labels.is_empty()
        || a.chat_listen.is_some()
        || a.task_listen.is_some()
        || a.prompt.is_some()
        || a.model.is_some();
    let prompt = a.prompt.map(LongText::new).transpose().map_err(|e| e.at("prompt"))?;
    Ok(any.then(|| AgentConfig {
        capabilities: a.capabilities,
        labels: a.labels,
        chat_listen: a.chat_listen.unwrap_or(Listen::All),
        task_listen: a.task_listen.unwrap_or(Listen::All),
        prompt,
        model: a.model,
    }))
}

async fn member_id<B: Backend>(b: &B, reference: Option<&str>) -> Result<Option<Uuid>> {
    match reference {
        Some(r) => Ok(Some(b.find_member(r).await?.id)),
        None => Ok(None),
    }
}

async fn task_id<B: Backend>(b: &B, reference: Option<&str>) -> Result<Option<Uuid>> {
    match reference {
        Some(r) => Ok(Some(b.find_task(r).await?.id)),
        None => Ok(None),
    }
}

/// A label by id or name (names are unique regardless of case).
async fn find_label<B: Backend>(b: &B, reference: &str) -> Result<Label> {
    let labels = b.call::<ListLabels>((), Page::default(), ()).await?;
    let by_id = reference.parse::<Uuid>().ok();
    labels
        .into_iter()
        .find(|l| Some(l.id) == by_id || l.name.eq_ignore_ascii_case(reference))
        .ok_or_else(|| Error::not_found(format!("label {reference} not found")))
}

/// A step by id or by its number in the task's list (1 = first).
async fn find_step<B: Backend>(b: &B, task: Uuid, reference: &str) -> Result<Step> {
    let steps = b.call::<ListSteps>(task, Page::default(), ()).await?;
    let found = match (reference.parse::<Uuid>(), reference.parse::<usize>()) {
        (Ok(id), _) => steps.into_iter().find(|s| s.id == id),
        (_, Ok(n)) if n >= 1 => steps.into_iter().nth(n - 1),
        _ => None,
    };
    found.ok_or_else(|| Error::not_found(format!("step {reference} not found")))
}

/// A project file by id or exact name.
async fn find_file<B: Backend>(b: &B, project: Uuid, reference: &str) -> Result<ProjectFile> {
    if let Ok(id) = reference.parse::<Uuid>() {
        return b.call::<GetFile>((project, id), (), ()).await;
    }
    let files = b
        .call::<ListFiles>(
            project,
            FileListQuery { search: Some(reference.to_string()), page: Page::default() },
            (),
        )
        .await?;
    files
        .into_iter()
        .find(|f| f.filename == reference)
        .ok_or_else(|| Error::not_found(format!("file {reference} not found")))
}

/// Where a download goes: `-` is standard output; a directory or nothing
/// means the file's own name (only its last component) inside it.
enum Sink {
    Stdout,
    File { part: PathBuf, target: Option<PathBuf>, dir: PathBuf },
}

impl Sink {
    fn new(output: Option<PathBuf>, id: Uuid) -> Sink {
        match output {
            Some(p) if p.as_os_str() == "-" => Sink::Stdout,
            Some(p) if !p.is_dir() => {
                let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
                Sink::File { part: part_path(&dir, id), target: Some(p), dir }
            }
            other => {
                let dir = other.unwrap_or_else(|| PathBuf::from("."));
                Sink::File { part: part_path(&dir, id), target: None, dir }
            }
        }
    }
}

fn part_path(dir: &Path, id: Uuid) -> PathBuf {
    dir.join(format!(".taskboard-download-{}.part", id.simple()))
}

/// Downloads into the sink: a file is written under a temporary name and
/// renamed once complete, so an interrupted download leaves no half file
/// under the real name.
async fn download<F>(sink: Sink, fetch: F) -> Result<(crate::client::Downloaded, Option<PathBuf>)>
where
    F: AsyncFnOnce(&mut (dyn tokio::io::AsyncWrite + Unpin + Send)) -> Result<crate::client::Downloaded>,
{
    match sink {
        Sink::Stdout => Ok((fetch(&mut tokio::io::stdout()).await?, None)),
        Sink::File { part, target, dir } => {
            let io = |e: std::io::Error| Error::bad_request(format!("{}: {e}", part.display()));
            let mut file = tokio::fs::File::create(&part).await.map_err(io)?;
            let result = fetch(&mut file).await;
            drop(file);
            let done = match result {
                Ok(d) => d,
                Err(e) => {
                    let _ = std::fs::remove_file(&part);
                    return Err(e);
                }
            };
            let target = target.unwrap_or_else(|| {
                let name = done
                    .filename
                    .as_deref()
                    .and_then(|n| Path::new(n).file_name())
                    .map(|n| n.to_os_string())
                    .unwrap_or_else(|| "download".into());
                dir.join(name)
            });
            std::fs::rename(&part, &target).map_err(io)?;
            Ok((done, Some(target)))
        }
    }
}

// ---- commands ----------------------------------------------------------------

async fn execute<B: Backend>(b: &B, command: Command, out: Out) -> std::result::Result<(), Failure> {
    match command {
        Command::Whoami => out.item(&b.call::<GetMe>((), (), ()).await?),
        Command::Health => {
            let h = b.call::<GetHealth>((), (), ()).await?;
            out.done(&h, &format!("{} (version {})", h.status, h.version));
        }
        Command::Member(c) => member(b, c, out).await?,
        Command::Project(c) => project(b, c, out).await?,
        Command::Task(c) => task(b, c, out).await?,
        Command::Step(c) => step(b, c, out).await?,
        Command::Label(c) => label(b, c, out).await?,
        Command::Message(c) => message(b, c, out).await?,
        Command::File(c) => file(b, c, out).await?,
        Command::Attachment(AttachmentCmd::Download { attachment, output }) => {
            let bar = bar("download", "bytes");
            let progress = byte_progress(&bar);
            let result = download(Sink::new(output, attachment), async |w| {
                let d = b.call::<DownloadAttachment>(attachment, (), ()).await?;
                save_download(d, w, progress).await
            })
            .await;
            finish(bar);
            let (done, path) = result?;
            if let Some(path) = path {
                downloaded(out, &done, &path);
            }
        }
        Command::Backup { dir } => {
            let path = b.local_path(&dir)?;
            let summary = b.call::<Backup>((), (), BackupRequest { path }).await?;
            out.summary(&format!("backed up to {dir}"), &summary);
        }
        Command::Init { .. }
        | Command::Login { .. }
        | Command::Logout
        | Command::Events { .. }
        | Command::Export { .. }
        | Command::Import { .. }
        | Command::Completions { .. } => unreachable!("handled before a backend is chosen"),
    }
    Ok(())
}

fn downloaded(out: Out, d: &crate::client::Downloaded, path: &Path) {
    let json = serde_json::json!({
        "path": path, "filename": d.filename, "mime_type": d.mime_type, "size": d.size
    });
    out.done(&json, &format!("saved {} ({} bytes)", path.display(), d.size));
}

async fn member<B: Backend>(b: &B, c: MemberCmd, out: Out) -> Result<()> {
    match c {
        MemberCmd::List { all, page: p } => out.list(
            &b.call::<ListMembers>((), MemberListQuery { include_inactive: all, page: page(p) }, ()).await?,
        ),
        MemberCmd::Show { member } => out.item(&b.find_member(&member).await?),
        MemberCmd::Create { name, slug, kind, role, config } => {
            let new = NewMember {
                name: valid("name", Name::new(name))?,
                slug: valid("slug", Slug::new(slug))?,
                kind,
                role,
                agent_config: agent_config(config)?,
            };
            out.item(&b.call::<CreateMember>((), (), new).await?)
        }
        MemberCmd::Update { member, name, slug, role, status, avatar_url, clear_avatar, agent_config } => {
            let id = b.find_member(&member).await?.id;
            let patch = MemberPatch {
                name: patch(name.map(Name::new).transpose().map_err(|e| e.at("name"))?, false),
                slug: patch(slug.map(Slug::new).transpose().map_err(|e| e.at("slug"))?, false),
                role: patch(role, false),
                status: patch(status, false),
                avatar_url: patch(avatar_url, clear_avatar),
                agent_config: patch(
                    agent_config
                        .map(|j| serde_json::from_str(&j).map_err(|e| Error::invalid("agent_config", e)))
                        .transpose()?,
                    false,
                ),
            };
            out.item(&b.call::<UpdateMember>(id, (), patch).await?)
        }
        MemberCmd::Delete { member } => {
            let m = b.find_member(&member).await?;
            out.done(&b.call::<DeleteMember>(m.id, (), ()).await?, &format!("deleted member {}", m.slug))
        }
        MemberCmd::RegenerateToken { member } => {
            let m = b.find_member(&member).await?;
            let t = b.call::<RegenerateToken>(m.id, (), ()).await?;
            if out.quiet {
                println!("{}", t.token);
            } else {
                out.done(&t, &format!("new token of {} (shown once): {}", m.slug, t.token));
            }
        }
        MemberCmd::RevokeToken { member } => {
            let m = b.find_member(&member).await?;
            out.done(&b.call::<RevokeToken>(m.id, (), ()).await?, &format!("revoked the token of {}", m.slug))
        }
        MemberCmd::SetPassword { member, password } => {
            let m = b.find_member(&member).await?;
            let password = match password {
                Some(p) => p,
                None => read_secret("new password")?,
            };
            let request = NewPassword { password: valid("password", Password::new(password))? };
            out.done(&b.call::<SetPassword>(m.id, (), request).await?, &format!("password of {} set", m.slug))
        }
        MemberCmd::Status { status } => {
            let s = b.call::<SetMyStatus>((), StatusQuery { status }, ()).await?;
            out.done(&s, &format!("status: {}", s.status))
        }
    }
    Ok(())
}

async fn project<B: Backend>(b: &B, c: ProjectCmd, out: Out) -> Result<()> {
    match c {
        ProjectCmd::List { all, page: p } => out.list(
            &b.call::<ListProjects>((), ProjectListQuery { include_archived: all, page: page(p) }, ())
                .await?,
        ),
        ProjectCmd::Show { project } => out.item(&b.find_project(&project).await?),
        ProjectCmd::Create { name, slug, description, repo_urls, auto_assign } => {
            let new = NewProject {
                name: valid("name", Name::new(name))?,
                slug: valid("slug", Slug::new(slug))?,
                description: description.map(LongText::new).transpose().map_err(|e| e.at("description"))?,
                repo_urls,
                auto_assign,
            };
            out.item(&b.call::<CreateProject>((), (), new).await?)
        }
        ProjectCmd::Update {
            project,
            name,
            slug,
            description,
            clear_description,
            repo_urls,
            clear_repos,
            status,
            auto_assign,
        } => {
            let id = b.find_project(&project).await?.id;
            let repos = if clear_repos {
                Patch::Value(Vec::new())
            } else {
                patch((!repo_urls.is_empty()).then_some(repo_urls), false)
            };
            let patch = ProjectPatch {
                name: patch(name.map(Name::new).transpose().map_err(|e| e.at("name"))?, false),
                slug: patch(slug.map(Slug::new).transpose().map_err(|e| e.at("slug"))?, false),
                description: patch(
                    description.map(LongText::new).transpose().map_err(|e| e.at("description"))?,
                    clear_description,
                ),
                repo_urls: repos,
                status: patch(status, false),
                auto_assign: patch(auto_assign, false),
            };
            out.item(&b.call::<UpdateProject>(id, (), patch).await?)
        }
        ProjectCmd::Delete { project } => {
            let p = b.find_project(&project).await?;
            out.done(&b.call::<DeleteProject>(p.id, (), ()).await?, &format!("deleted project {}", p.slug))
        }
        ProjectCmd::Members { project } => {
            let p = b.find_project(&project).await?;
            out.list(&b.call::<ListProjectMembers>(p.id, Page::default(), ()).await?)
        }
        ProjectCmd::AddMember { project, member } => {
            let p = b.find_project(&project).await?;
            let m = b.find_member(&member).await?;
            out.done(
                &b.call::<AddProjectMember>(p.id, (), NewProjectMember { member_id: m.id }).await?,
                &format!("added {} to {}", m.slug, p.slug),
            )
        }
        ProjectCmd::RemoveMember { project, member } => {
            let p = b.find_project(&project).await?;
            let m = b.find_member(&member).await?;
            out.done(
                &b.call::<RemoveProjectMember>((p.id, m.id), (), ()).await?,
                &format!("removed {} from {}", m.slug, p.slug),
            )
        }
    }
    Ok(())
}

fn label_names(labels: Vec<String>) -> Result<Vec<LabelName>> {
    labels.into_iter().map(|l| valid("labels", LabelName::new(l))).collect()
}

async fn task<B: Backend>(b: &B, c: TaskCmd, out: Out) -> Result<()> {
    match c {
        TaskCmd::List { project, status, assignee, reviewer, label, q, kind, priority, parent, page: p } => {
            let project_id = match project {
                Some(r) => Some(b.find_project(&r).await?.id),
                None => None,
            };
            let filter = TaskFilter {
                project_id,
                status,
                assignee_id: member_id(b, assignee.as_deref()).await?,
                label,
                q,
                reviewer_id: member_id(b, reviewer.as_deref()).await?,
                kind,
                priority,
                parent_id: task_id(b, parent.as_deref()).await?,
                page: page(p),
            };
            let tasks = b.call::<ListTasks>((), filter, ()).await?;
            out.list(&tasks);
            out.next_page(tasks.next.as_deref());
        }
        TaskCmd::Show { task } => out.item(&b.find_task(&task).await?),
        TaskCmd::Create {
            project,
            title,
            description,
            kind,
            status,
            priority,
            labels,
            parent,
            assignee,
            reviewer,
            depends_on,
        } => {
            let project = b.find_project(&project).await?;
            let mut new = NewTask::titled(valid("title", Title::new(title))?);
            new.description = description.map(LongText::new).transpose().map_err(|e| e.at("description"))?;
            new.kind = kind.unwrap_or(new.kind);
            new.status = status.unwrap_or(new.status);
            new.priority = priority.unwrap_or(new.priority);
            new.labels = label_names(labels)?;
            new.parent_id = task_id(b, parent.as_deref()).await?;
            new.assignee_id = member_id(b, assignee.as_deref()).await?;
            new.reviewer_id = member_id(b, reviewer.as_deref()).await?;
            for d in depends_on {
                new.depends_on.push(b.find_task(&d).await?.id);
            }
            out.item(&b.call::<CreateTask>((), ProjectIdQuery { project_id: project.id }, new).await?)
        }
        TaskCmd::Update {
            task,
            title,
            description,
            clear_description,
            kind,
            status,
            priority,
            labels,
            clear_labels,
            assignee,
            clear_assignee,
            reviewer,
            clear_reviewer,
            parent,
            clear_parent,
            position,
        } => {
            let id = b.find_task(&task).await?.id;
            let labels = if clear_labels {
                Patch::Value(Vec::new())
            } else {
                patch((!labels.is_empty()).then(|| label_names(labels)).transpose()?, false)
            };
            let patch = TaskPatch {
                title: patch(title.map(Title::new).transpose().map_err(|e| e.at("title"))?, false),
                description: patch(
                    description.map(LongText::new).transpose().map_err(|e| e.at("description"))?,
                    clear_description,
                ),
                kind: patch(kind, false),
                status: patch(status, false),
                priority: patch(priority, false),
                labels,
                assignee_id: patch(member_id(b, assignee.as_deref()).await?, clear_assignee),
                reviewer_id: patch(member_id(b, reviewer.as_deref()).await?, clear_reviewer),
                parent_id: patch(task_id(b, parent.as_deref()).await?, clear_parent),
                position: patch(position, false),
            };
            out.item(&b.call::<UpdateTask>(id, (), patch).await?)
        }
        TaskCmd::Delete { task } => {
            let t = b.find_task(&task).await?;
            out.done(&b.call::<DeleteTask>(t.id, (), ()).await?, &format!("deleted {}", t.key))
        }
        TaskCmd::Take { task } => {
            let id = b.find_task(&task).await?.id;
            out.item(&b.call::<TakeTask>(id, (), ()).await?)
        }
        TaskCmd::Reject { task, reason } => {
            let t = b.find_task(&task).await?;
            let request = RejectRequest { reason: valid("reason", Reason::new(reason))? };
            out.done(
                &b.call::<RejectTask>(t.id, (), request).await?,
                &format!("{} sent back to the backlog", t.key),
            )
        }
        TaskCmd::Assign { task, member } => {
            let id = b.find_task(&task).await?.id;
            let assignee_id = b.find_member(&member).await?.id;
            out.item(&b.call::<AssignTask>(id, (), AssignRequest { assignee_id }).await?)
        }
        TaskCmd::Watch { task } => {
            let t = b.find_task(&task).await?;
            out.done(&b.call::<WatchTask>(t.id, (), ()).await?, &format!("watching {}", t.key))
        }
        TaskCmd::Unwatch { task } => {
            let t = b.find_task(&task).await?;
            out.done(&b.call::<UnwatchTask>(t.id, (), ()).await?, &format!("no longer watching {}", t.key))
        }
        TaskCmd::Label(TaskLabelCmd::Add { task, label }) => {
            let t = b.find_task(&task).await?;
            let l = find_label(b, &label).await?;
            out.done(
                &b.call::<AddTaskLabel>((t.id, l.id), (), ()).await?,
                &format!("{} labelled {}", t.key, l.name),
            )
        }
        TaskCmd::Label(TaskLabelCmd::Remove { task, label }) => {
            let t = b.find_task(&task).await?;
            let l = find_label(b, &label).await?;
            out.done(
                &b.call::<RemoveTaskLabel>((t.id, l.id), (), ()).await?,
                &format!("label {} taken off {}", l.name, t.key),
            )
        }
        TaskCmd::Link { task, target, link_type } => {
            let id = b.find_task(&task).await?.id;
            let target_id = b.find_task(&target).await?.id;
            out.item(&b.call::<CreateLink>(id, (), NewLink { target_id, link_type }).await?)
        }
        TaskCmd::Links { task } => {
            let id = b.find_task(&task).await?.id;
            out.list(&b.call::<ListLinks>(id, Page::default(), ()).await?)
        }
        TaskCmd::Unlink { task, link } => {
            let t = b.find_task(&task).await?;
            let link = link.parse::<Uuid>().map_err(|e| Error::invalid("link", e))?;
            out.done(
                &b.call::<DeleteLink>((t.id, link), (), ()).await?,
                &format!("link {link} of {} deleted", t.key),
            )
        }
        TaskCmd::Actions { task } => {
            let id = b.find_task(&task).await?.id;
            out.list(&b.call::<ListActions>(id, Page::default(), ()).await?)
        }
    }
    Ok(())
}

async fn step<B: Backend>(b: &B, c: StepCmd, out: Out) -> Result<()> {
    match c {
        StepCmd::List { task } => {
            let id = b.find_task(&task).await?.id;
            out.list(&b.call::<ListSteps>(id, Page::default(), ()).await?)
        }
        StepCmd::Add { task, title } => {
            let id = b.find_task(&task).await?.id;
            out.item(
                &b.call::<CreateStep>(id, (), NewStep { title: valid("title", Title::new(title))? }).await?,
            )
        }
        StepCmd::Update { task, step, title, done } => {
            let id = b.find_task(&task).await?.id;
            let s = find_step(b, id, &step).await?;
            let patch = StepPatch {
                title: patch(title.map(Title::new).transpose().map_err(|e| e.at("title"))?, false),
                done: patch(done, false),
            };
            out.item(&b.call::<UpdateStep>((id, s.id), (), patch).await?)
        }
        StepCmd::Done { task, step } => {
            let id = b.find_task(&task).await?.id;
            let s = find_step(b, id, &step).await?;
            out.item(
                &b.call::<UpdateStep>(
                    (id, s.id),
                    (),
                    StepPatch { done: Patch::Value(true), ..Default::default() },
                )
                .await?,
            )
        }
        StepCmd::Delete { task, step } => {
            let id = b.find_task(&task).await?.id;
            let s = find_step(b, id, &step).await?;
            out.done(&b.call::<DeleteStep>((id, s.id), (), ()).await?, &format!("deleted step {:?}", s.title))
        }
    }
    Ok(())
}

async fn label<B: Backend>(b: &B, c: LabelCmd, out: Out) -> Result<()> {
    match c {
        LabelCmd::List { page: p } => out.list(&b.call::<ListLabels>((), page(p), ()).await?),
        LabelCmd::Create { name, color } => {
            let new = NewLabel {
                name: valid("name", LabelName::new(name))?,
                color: match color {
                    Some(c) => valid("color", Color::new(c))?,
                    None => Color::default(),
                },
            };
            out.item(&b.call::<CreateLabel>((), (), new).await?)
        }
        LabelCmd::Update { label, name, color } => {
            let l = find_label(b, &label).await?;
            let patch = LabelPatch {
                name: patch(name.map(LabelName::new).transpose().map_err(|e| e.at("name"))?, false),
                color: patch(color.map(Color::new).transpose().map_err(|e| e.at("color"))?, false),
            };
            out.item(&b.call::<UpdateLabel>(l.id, (), patch).await?)
        }
        LabelCmd::Delete { label } => {
            let l = find_label(b, &label).await?;
            out.done(&b.call::<DeleteLabel>(l.id, (), ()).await?, &format!("deleted label {}", l.name))
        }
    }
    Ok(())
}

/// `(chat_id, task_id)` of a place.
async fn place<B: Backend>(b: &B, p: Place) -> Result<(Option<Uuid>, Option<Uuid>)> {
    if let Some(project) = p.project {
        let project = b.find_project(&project).await?;
        let chat = project
            .chat_id
            .ok_or_else(|| Error::not_found(format!("project {} has no main chat", project.slug)))?;
        return Ok((Some(chat), None));
    }
    Ok((p.chat, task_id(b, p.task.as_deref()).await?))
}

async fn message<B: Backend>(b: &B, c: MessageCmd, out: Out) -> Result<()> {
    match c {
        MessageCmd::Post { place: p, content, reply_to, attach, mentions, thinking, voice_url } => {
            let (chat_id, task_id) = place(b, p).await?;
            let mut mention_ids = Vec::new();
            for m in mentions {
                mention_ids.push(b.find_member(&m).await?.id);
            }
            let mut attachments = Vec::new();
            for path in attach {
                let bar = bar(&format!("upload {}", path.display()), "bytes");
                let result = async {
                    let upload = upload_from_path(&path, None, byte_progress(&bar)).await?;
                    b.call::<UploadAttachment>((), (), upload).await
                }
                .await;
                finish(bar);
                attachments.push(result?);
            }
            let new = NewMessage {
                chat_id,
                task_id,
                parent_id: reply_to,
                content,
                thinking: thinking.map(LongText::new).transpose().map_err(|e| e.at("thinking"))?,
                mentions: mention_ids,
                voice_url,
                attachments,
            };
            out.item(&b.call::<PostMessage>((), (), new).await?)
        }
        MessageCmd::List { place: p, parent, limit, offset } => {
            let (chat_id, task_id) = place(b, p).await?;
            out.list(
                &b.call::<ListMessages>(
                    (),
                    MessageFilter { chat_id, task_id, parent_id: parent, limit, offset },
                    (),
                )
                .await?,
            )
        }
        MessageCmd::Replies { message } => {
            out.list(&b.call::<ListReplies>(message, Page::default(), ()).await?)
        }
    }
    Ok(())
}

async fn file<B: Backend>(b: &B, c: FileCmd, out: Out) -> Result<()> {
    match c {
        FileCmd::Upload { project, path, name, description } => {
            let p = b.find_project(&project).await?;
            let bar = bar(&format!("upload {}", path.display()), "bytes");
            let result = async {
                let mut upload = upload_from_path(&path, name.as_deref(), byte_progress(&bar)).await?;
                upload.fields.extend(description.map(|d| ("description".to_string(), d)));
                b.call::<UploadFile>(p.id, (), upload).await
            }
            .await;
            finish(bar);
            out.item(&result?)
        }
        FileCmd::List { project, search, page: pg } => {
            let p = b.find_project(&project).await?;
            out.list(&b.call::<ListFiles>(p.id, FileListQuery { search, page: page(pg) }, ()).await?)
        }
        FileCmd::Show { project, file } => {
            let p = b.find_project(&project).await?;
            out.item(&find_file(b, p.id, &file).await?)
        }
        FileCmd::Download { project, file, output } => {
            let p = b.find_project(&project).await?;
            let f = find_file(b, p.id, &file).await?;
            let bar = bar(&format!("download {}", f.filename), "bytes");
            let progress = byte_progress(&bar);
            let result = download(Sink::new(output, f.id), async |w| {
                let d = b.call::<DownloadFile>((p.id, f.id), (), ()).await?;
                save_download(d, w, progress).await
            })
            .await;
            finish(bar);
            let (done, path) = result?;
            if let Some(path) = path {
                downloaded(out, &done, &path);
            }
        }
        FileCmd::Describe { project, file, description, clear } => {
            let p = b.find_project(&project).await?;
            let f = find_file(b, p.id, &file).await?;
            let patch = FilePatch {
                description: patch(
                    description.map(LongText::new).transpose().map_err(|e| e.at("description"))?,
                    clear,
                ),
            };
            out.item(&b.call::<UpdateFile>((p.id, f.id), (), patch).await?)
        }
        FileCmd::Delete { project, file } => {
            let p = b.find_project(&project).await?;
            let f = find_file(b, p.id, &file).await?;
            out.done(&b.call::<DeleteFile>((p.id, f.id), (), ()).await?, &format!("deleted {}", f.filename))
        }
    }
    Ok(())
}
