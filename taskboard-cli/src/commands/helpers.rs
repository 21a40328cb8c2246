//! What the commands share: references a person types (slugs, keys,
//! names, step numbers, short ids) resolved through the backend, values
//! checked, progress bars, and downloads.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use taskboard_core::api::{FileListQuery, GetFile, ListFiles, ListLabels, ListLinks, ListSteps, Page, Patch};
use taskboard_core::model::{AgentConfig, Label, Listen, ProjectFile, Step};
use taskboard_core::validate::{InvalidValue, LongText};
use taskboard_core::{Error, Perform, Result};
use uuid::Uuid;

use crate::cli::{AgentConfigArgs, PageArgs};
use crate::client::OnProgress;

/// A password from the terminal, without echo (rpassword reads the
/// controlling terminal), or the first line of standard input when it is
/// not a terminal (scripts).
pub(super) fn read_secret(what: &str) -> Result<String> {
    let io = |e: std::io::Error| Error::bad_request(format!("reading the {what}: {e}"));
    if std::io::stdin().is_terminal() {
        return rpassword::prompt_password(format!("{what}: ")).map_err(io);
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(io)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

/// A progress bar on stderr when it is a terminal; none in scripts.
pub(super) fn bar(what: &str, unit: &str) -> Option<ProgressBar> {
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

pub(super) fn byte_progress(bar: &Option<ProgressBar>) -> Option<OnProgress> {
    let bar = bar.clone()?;
    Some(Arc::new(move |done, total| {
        if let Some(t) = total {
            bar.set_length(t);
        }
        bar.set_position(done);
    }))
}

pub(super) fn archive_progress(bar: &Option<ProgressBar>) -> Option<taskboard_core::archive::ProgressFn> {
    let bar = bar.clone()?;
    Some(Arc::new(move |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    }))
}

pub(super) fn finish(bar: Option<ProgressBar>) {
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

pub(super) fn valid<T>(field: &str, v: std::result::Result<T, InvalidValue>) -> Result<T> {
    v.map_err(|e| e.at(field))
}

pub(super) fn patch<T>(value: Option<T>, clear: bool) -> Patch<T> {
    match (value, clear) {
        (Some(v), _) => Patch::Value(v),
        (None, true) => Patch::Null,
        (None, false) => Patch::Absent,
    }
}

pub(super) fn page(p: PageArgs) -> Page {
    Page { limit: p.limit, offset: p.offset, cursor: p.cursor }
}

pub(super) fn agent_config(a: AgentConfigArgs) -> Result<Option<AgentConfig>> {
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
        chat_listen: a.chat_listen.unwrap_or(Listen::Mentions),
        task_listen: a.task_listen.unwrap_or(Listen::Mentions),
        prompt,
        model: a.model,
    }))
}

/// The one of `ids` that `reference` names as a list prints it
/// (docs/decisions.md 22.c): the short form of a table (its last hex
/// digits) or any longer end or start of its hex digits, hyphens or not.
/// None or two matching is refused, saying so.
pub(super) fn pick_id(what: &str, reference: &str, ids: impl IntoIterator<Item = Uuid>) -> Result<Uuid> {
    let part: String = reference.chars().filter(|c| *c != '-').collect::<String>().to_ascii_lowercase();
    if part.len() < 4 || !part.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(Error::invalid(
            what,
            format!(
                "{reference:?} is not an id: give it whole or at least its last 4 hex digits, as a list shows"
            ),
        ));
    }
    let found: Vec<Uuid> = ids
        .into_iter()
        .filter(|id| {
            let hex = id.simple().to_string();
            hex.ends_with(&part) || hex.starts_with(&part)
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(Error::not_found(format!("no {what} has an id {reference}"))),
        many => Err(Error::invalid(
            what,
            format!("{} {what}s have ids with {reference}: give more of the id", many.len()),
        )),
    }
}

pub(super) async fn member_id<B: Perform>(b: &B, reference: Option<&str>) -> Result<Option<Uuid>> {
    match reference {
        Some(r) => Ok(Some(b.find_member(r).await?.id)),
        None => Ok(None),
    }
}

pub(super) async fn task_id<B: Perform>(b: &B, reference: Option<&str>) -> Result<Option<Uuid>> {
    match reference {
        Some(r) => Ok(Some(b.find_task(r).await?.id)),
        None => Ok(None),
    }
}

/// A label by id or name (names are unique regardless of case).
pub(super) async fn find_label<B: Perform>(b: &B, reference: &str) -> Result<Label> {
    let labels = b.call::<ListLabels>((), Page::default(), ()).await?;
    let by_id = reference.parse::<Uuid>().ok();
    labels
        .into_iter()
        .find(|l| Some(l.id) == by_id || l.name.eq_ignore_ascii_case(reference))
        .ok_or_else(|| Error::not_found(format!("label {reference} not found")))
}

/// A step by id or by its number in the task's list (1 = first).
pub(super) async fn find_step<B: Perform>(b: &B, task: Uuid, reference: &str) -> Result<Step> {
    let steps = b.call::<ListSteps>(task, Page::default(), ()).await?;
    let found = match (reference.parse::<Uuid>(), reference.parse::<usize>()) {
        (Ok(id), _) => steps.into_iter().find(|s| s.id == id),
        (_, Ok(n)) if n >= 1 => steps.into_iter().nth(n - 1),
        _ => None,
    };
    found.ok_or_else(|| Error::not_found(format!("step {reference} not found")))
}

/// A link of a task by id, or by the short id its tables show (the id's
/// last hex digits).
pub(super) async fn find_link<B: Perform>(b: &B, task: Uuid, reference: &str) -> Result<Uuid> {
    if let Ok(id) = reference.parse::<Uuid>() {
        return Ok(id);
    }
    let digits = reference.to_ascii_lowercase();
    if digits.len() < 4 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(Error::invalid("link", format!("{reference:?} is neither an id nor a short id")));
    }
    let found: Vec<Uuid> = b
        .call::<ListLinks>(task, Page::default(), ())
        .await?
        .into_iter()
        .map(|l| l.id)
        .filter(|id| id.simple().to_string().ends_with(&digits))
        .collect();
    match found[..] {
        [id] => Ok(id),
        [] => Err(Error::not_found(format!("link {reference} not found"))),
        _ => Err(Error::invalid("link", format!("{reference} names several links; give more digits"))),
    }
}

/// A project file by id or exact name.
pub(super) async fn find_file<B: Perform>(b: &B, project: Uuid, reference: &str) -> Result<ProjectFile> {
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
pub(super) enum Sink {
    Stdout,
    File { part: PathBuf, target: Option<PathBuf>, dir: PathBuf },
}

impl Sink {
    pub(super) fn new(output: Option<PathBuf>, id: Uuid) -> Sink {
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

pub(super) fn part_path(dir: &Path, id: Uuid) -> PathBuf {
    dir.join(format!(".taskboard-download-{}.part", id.simple()))
}

/// Downloads into the sink: a file is written under a temporary name and
/// renamed once complete, so an interrupted download leaves no half file
/// under the real name.
pub(super) async fn download<F>(sink: Sink, fetch: F) -> Result<(crate::client::Downloaded, Option<PathBuf>)>
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
