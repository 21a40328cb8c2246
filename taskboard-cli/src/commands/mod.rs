//! Every command, written once against [`Perform`]. The CLI holds no rule
//! of the board: it turns arguments into requests, resolves the references
//! a person types (slugs, keys, names) and prints the answers.

use std::path::{Path, PathBuf};

use taskboard_core::api::{Backup, DownloadAttachment, GetHealth, GetMe, Login, LoginRequest};
use taskboard_core::validate::{Password, Slug};
use taskboard_core::{Board, BoardCaller, BoardOptions, Error, ErrorKind, Perform};

use crate::backend::{Place, open_board, open_local};
use crate::cli::{AgentCmd, AttachmentCmd, Cli, Command, Global};
use crate::client::{Client, save_download};
use crate::exit::Failure;
use crate::login::{self, StoredLogin};
use crate::output::Out;
use taskboard_core::archive::BackupRequest;

mod helpers;
mod import;
mod members;
mod messages;
mod reviews;
mod runs;
mod tasks;
mod tokens;
mod webhooks;

use helpers::{Sink, archive_progress, bar, byte_progress, download, finish, read_secret};

/// Where the commands go.
enum Mode {
    Local(Place),
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
        return Ok(Mode::Remote(
            Client::new(server, token)?
                .with_idempotency_key(g.idempotency_key.clone())
                .with_lease(g.lease_id),
        ));
    }
    if g.data_dir.is_some() || g.database.is_some() {
        if g.idempotency_key.is_some() {
            return Err(Failure::Usage(
                "--idempotency-key applies to a server; a local board has no network to retry over".into(),
            ));
        }
        return Ok(Mode::Local(need_place(g, "a local board")?));
    }
    match login::load()? {
        Some(stored) => Ok(Mode::Remote(
            Client::new(&stored.server, g.token.clone().or(Some(stored.token)))?
                .with_idempotency_key(g.idempotency_key.clone())
                .with_lease(g.lease_id),
        )),
        None => Err(Failure::Usage(
            "no board chosen: give --data-dir DIR (local board) or --server URL (a server), or run `taskboard login`"
                .into(),
        )),
    }
}

/// The local board of the global options: a data directory, with a
/// database when `--database` is given (the directory then holds the
/// board's file contents).
fn need_place(g: &Global, command: &str) -> std::result::Result<Place, Failure> {
    let database = g.database.clone().filter(|d| !d.is_empty());
    match &g.data_dir {
        Some(dir) => Ok(Place { data_dir: dir.clone(), database }),
        None if database.is_some() => Err(Failure::Usage(format!(
            "{command} in a database needs --data-dir DIR too: the directory of the board's file contents, \
             the one its servers share"
        ))),
        None => Err(Failure::Usage(format!("`{command}` needs --data-dir DIR (or TASKBOARD_DATA_DIR)"))),
    }
}

/// `export` without a data directory: it reads a board in this process,
/// which a server's board is not; `backup` is the server's export
/// (docs/decisions.md 22.f).
fn export_needs_a_data_dir(g: &Global) -> Failure {
    let server = g.server.clone().or_else(|| login::load().ok().flatten().map(|s| s.server));
    let using = match server {
        Some(server) => format!(" You use the server {server}:"),
        None => " With a server,".to_string(),
    };
    Failure::Usage(format!(
        "`export` reads a board's data directory in this process: give --data-dir DIR (or TASKBOARD_DATA_DIR).\
         {using} `taskboard backup DIR` writes the same archive there, in a directory of the server's machine"
    ))
}

/// Makes a new board from an archive (`import`, `restore`).
async fn unpack(
    g: &Global,
    archive: PathBuf,
    (command, done): (&str, &str),
    out: Out,
) -> std::result::Result<(), Failure> {
    let place = need_place(g, command)?;
    let bar = bar(command, "records");
    let summary =
        Board::import_archive_into(archive, place.database, place.data_dir, archive_progress(&bar)).await;
    finish(bar);
    out.summary(done, &summary?);
    Ok(())
}

/// Runs one parsed command line.
pub async fn run(cli: Cli) -> std::result::Result<(), Failure> {
    let out = Out { json: cli.global.json, quiet: cli.global.quiet };
    let g = cli.global;
    match cli.command {
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            // Generated into memory: the generators panic when a write
            // fails, and a closed pipe (`| head`) makes writes fail.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "taskboard", &mut script);
            let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), &script);
            Ok(())
        }
        Command::Init { owner, password } => init(&need_place(&g, "init")?, &owner, password, out).await,
        Command::Import { dir, from: None, .. } => unpack(&g, dir, ("import", "imported"), out).await,
        Command::Restore { archive } => unpack(&g, archive, ("restore", "restored"), out).await,
        Command::Export { dir } => {
            let place = need_place(&g, "export").map_err(|_| export_needs_a_data_dir(&g))?;
            let board = open_board(&place).await.map_err(|e| {
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
        Command::Login { login: name, sso, password } => {
            let server =
                g.server.clone().ok_or_else(|| Failure::Usage("`login` needs --server URL".into()))?;
            let client = Client::new(&server, None)?;
            let response = match name {
                Some(name) if !sso => {
                    let password = match password {
                        Some(p) => p,
                        None => read_secret("password")?,
                    };
                    client.call::<Login>((), (), LoginRequest { login: name, password }).await?
                }
                _ => login::sso(&client).await?,
            };
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
        Command::Agent(AgentCmd::Guard { .. }) => unreachable!("handled before the runtime starts"),
        Command::Agent(AgentCmd::Run { agents, config }) => {
            if g.data_dir.is_some() || g.database.is_some() {
                // Local mode: the runner serves the board to its agents.
                let local = crate::runner::local::LocalBoard::serve(&need_place(&g, "agent run")?).await?;
                let options =
                    crate::runner::Options { config, agents, server: Some(local.url()), local: true };
                let ran = crate::runner::run(options).await;
                local.stop().await;
                return Ok(ran?);
            }
            let server = match &g.server {
                Some(s) => Some(s.clone()),
                None => login::load()?.map(|s| s.server),
            };
            crate::runner::run(crate::runner::Options { config, agents, server, local: false }).await?;
            Ok(())
        }
        Command::Logout { everywhere: false } => {
            let removed = login::remove()?;
            let text = if removed { "logged out" } else { "not logged in" };
            out.done(&serde_json::json!({"ok": true}), text);
            Ok(())
        }
        command => match choose_mode(&g)? {
            Mode::Local(place) => {
                let mut backend = open_local(&place, g.acting_as.as_deref()).await?;
                backend.caller.actor = backend.caller.actor.map(|a| a.presenting(g.lease_id));
                if let Command::Mcp { profile } = command {
                    return crate::mcp::serve_stdio(backend, profile).await;
                }
                if let Command::Events { since, .. } = command {
                    return local_events(&backend, since, out).await;
                }
                execute(&backend, command, out).await
            }
            Mode::Remote(client) => {
                if let Command::Mcp { profile } = command {
                    return crate::mcp::serve_stdio(client, profile).await;
                }
                if let Command::Events { since, sse: true } = command {
                    let mut events = client.sse_events(since).await?;
                    while out.json_line(&events.next().await?) {}
                    return Ok(());
                }
                if let Command::Events { since, .. } = command {
                    let mut events = client.events(since).await?;
                    // Until stdout is closed (`| head`), or an error ends it.
                    while out.json_line(&events.next().await?) {}
                    return Ok(());
                }
                execute(&client, command, out).await.map_err(|f| login_elsewhere(f, &g))
            }
        },
    }
}

/// A refusal for want of credentials from `--server URL`, given no
/// token: say where the stored login is for, if anywhere, and the
/// command that logs in to this address (docs/decisions.md 22.f).
fn login_elsewhere(failure: Failure, g: &Global) -> Failure {
    let (Failure::Api(e), Some(server), None) = (&failure, &g.server, &g.token) else {
        return failure;
    };
    if e.kind() != ErrorKind::Unauthorized {
        return failure;
    }
    let here = server.trim_end_matches('/');
    let stored = match login::load() {
        Ok(Some(stored)) if stored.server.trim_end_matches('/') != here => stored.server,
        Ok(None) => String::new(),
        _ => return failure,
    };
    let whose = if stored.is_empty() {
        "you have not logged in".to_string()
    } else {
        format!("the stored login is for another address, {stored}")
    };
    Failure::Api(Error::unauthorized(format!(
        "{}: {whose}; to use {here}, run `taskboard login --server {here}`",
        e.detail().trim_end_matches('.')
    )))
}

async fn init(
    place: &Place,
    owner: &str,
    password: Option<String>,
    out: Out,
) -> std::result::Result<(), Failure> {
    let slug = Slug::new(owner).map_err(|e| e.at("owner"))?;
    let password = password.map(Password::new).transpose().map_err(|e| e.at("password"))?;
    let board =
        Board::open_database(place.database.as_deref(), &place.data_dir, BoardOptions::default()).await?;
    let boot = board
        .bootstrap_owner(slug, password)
        .await?
        .ok_or_else(|| Error::conflict(format!("{} already holds a board with members", place.describe())))?;
    board.flush().await?;
    let json = serde_json::json!({"owner": boot.owner, "password": boot.generated_password});
    let mut text = format!("created a board in {} with owner {}", place.describe(), boot.owner.slug);
    if let Some(p) = &boot.generated_password {
        text.push_str(&format!("\npassword (shown once): {p}"));
    }
    if out.quiet {
        out.line(&boot.owner.id.to_string());
    }
    out.done(&json, &text);
    Ok(())
}

/// Locally nobody else can write while this process holds the board, so
/// the stream is the retained events after `since`, then the end.
async fn local_events(b: &BoardCaller, since: Option<u64>, out: Out) -> std::result::Result<(), Failure> {
    let since = since.unwrap_or_else(|| {
        b.board.latest_seq().saturating_sub(taskboard_core::events::RETAINED_EVENTS as u64)
    });
    let mut sub = b.board.subscribe(Some(since));
    if sub.resync_required && !out.json_line(&serde_json::json!({"type": "resync_required"})) {
        return Ok(());
    }
    let viewer = b.board.viewer(b.caller.actor()?);
    while sub.replaying() {
        let event = sub.next().await.map_err(Error::internal)?;
        if !event.visible_to(&viewer) {
            continue;
        }
        let frame: serde_json::Value = serde_json::from_str(&event.frame()).map_err(Error::internal)?;
        if !out.json_line(&frame) {
            break;
        }
    }
    Ok(())
}

async fn execute<B: Perform>(b: &B, command: Command, out: Out) -> std::result::Result<(), Failure> {
    match command {
        Command::Whoami => out.item(&b.call::<GetMe>((), (), ()).await?),
        Command::Health => {
            let h = b.call::<GetHealth>((), (), ()).await?;
            out.done(&h, &format!("{} (version {})", h.status, h.version));
        }
        Command::Member(c) => members::member(b, c, out).await?,
        Command::Project(c) => members::project(b, c, out).await?,
        Command::Task(c) => tasks::task(b, c, out).await?,
        Command::Step(c) => tasks::step(b, c, out).await?,
        Command::Label(c) => tasks::label(b, c, out).await?,
        Command::Webhook(c) => webhooks::webhook(b, c, out).await?,
        Command::Token(c) => tokens::token(b, c, out).await?,
        Command::Logout { everywhere: true } => {
            let me = tokens::logout_everywhere(b).await?;
            login::remove()?;
            out.done(
                &serde_json::json!({"ok": true}),
                &format!("every login of {} ended; logged out", me.slug),
            );
        }
        Command::Run(c) => runs::run(b, c, out).await?,
        Command::Review(c) => reviews::review(b, c, out).await?,
        Command::Message(c) => messages::message(b, c, out).await?,
        Command::File(c) => messages::file(b, c, out).await?,
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
        Command::Import { dir, from: Some(format), project, dry_run, create_members } => {
            let project =
                project.ok_or_else(|| Failure::Usage("import --from needs --project SLUG".into()))?;
            let options = import::Options { format, path: dir, project, dry_run, create_members };
            import::import(b, options, out).await?;
        }
        Command::Backup { dir } => {
            let path = b.local_path(&dir)?;
            let summary = b.call::<Backup>((), (), BackupRequest { path }).await?;
            out.summary(&format!("backed up to {dir}"), &summary);
        }
        Command::Init { .. }
        | Command::Login { .. }
        | Command::Logout { everywhere: false }
        | Command::Agent(_)
        | Command::Events { .. }
        | Command::Mcp { .. }
        | Command::Export { .. }
        | Command::Import { from: None, .. }
        | Command::Restore { .. }
        | Command::Completions { .. } => unreachable!("handled before a backend is chosen"),
    }
    Ok(())
}

pub(super) fn downloaded(out: Out, d: &crate::client::Downloaded, path: &Path) {
    let json = serde_json::json!({
        "path": path, "filename": d.filename, "mime_type": d.mime_type, "size": d.size
    });
    out.done(&json, &format!("saved {} ({} bytes)", path.display(), d.size));
}
