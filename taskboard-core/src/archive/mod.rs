//! Export and import of a whole board as a portable archive, and backups.
//!
//! An archive is a directory: `board.jsonl` holds one JSON object per line,
//! `{"type": …, "data": …}` — a header, then every record of the board in
//! table and key order — and `blobs/` holds the file contents under their
//! storage names. Index entries are not exported: import rebuilds them
//! from the records, so an archive does not depend on the storage layout.
//! Export is deterministic, so export → import → export gives the same
//! bytes.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crate::records::{
    ActionRecord, ChatRecord, LabelRecord, LinkRecord, MemberRecord, MessageRecord, ProjectFileRecord,
    ProjectRecord, RecordWrites, Records, Secret, StepRecord, TaskRecord, UploadRecord,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

mod source;
mod target;

use crate::board::{Board, BoardOptions};
use crate::error::{Error, Result};
use crate::model::ProjectRole;
use crate::records::event_log::EventRecord;
use crate::storage::codec::{Key, decode, uuid_at, uuid_suffix};
use crate::storage::tables::{self, Table};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan};
pub(crate) use target::target_error;
use target::{ArchiveDir, fresh_dir};

/// Name of the archive format, in its header line.
pub const ARCHIVE_FORMAT: &str = "taskboard-archive";
/// Version of the archive format.
pub const ARCHIVE_VERSION: u32 = 1;

/// Reports progress: (items done, items in all).
pub type ProgressFn = Arc<dyn Fn(u64, u64) + Send + Sync>;

pub use taskboard_wire::{ArchiveSummary, BackupRequest};

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
enum Line {
    Header {
        format: String,
        version: u32,
    },
    Meta {
        key: String,
        value: serde_json::Value,
    },
    Label(LabelRecord),
    Member(MemberRecord),
    Secret {
        member_id: Uuid,
        secret: Secret,
    },
    Project(ProjectRecord),
    ProjectMember {
        project_id: Uuid,
        member_id: Uuid,
        role: ProjectRole,
    },
    Chat(ChatRecord),
    Task(TaskRecord),
    Step(StepRecord),
    Link(LinkRecord),
    Action(ActionRecord),
    Upload(UploadRecord),
    Message(MessageRecord),
    ProjectFile(ProjectFileRecord),
    Event(EventRecord),
    /// A webhook with its secret; its queue is not archived, and a
    /// restored webhook receives the events after the import.
    Webhook(crate::webhooks::WebhookRecord),
    /// A provider's account linked to a member (single sign-on).
    OidcLink(crate::board::OidcLink),
}

/// The tables that hold records, in archive order; every other table is an
/// index rebuilt on import.
const RECORD_TABLES: &[Table] = &[
    tables::META,
    tables::LABELS,
    tables::MEMBERS,
    tables::MEMBER_SECRET,
    tables::PROJECTS,
    tables::PROJECT_MEMBERS,
    tables::CHATS,
    tables::TASKS,
    tables::STEPS,
    tables::LINKS,
    tables::ACTIONS,
    tables::UPLOADS,
    tables::MESSAGES,
    tables::PROJECT_FILES,
    tables::EVENTS,
    tables::WEBHOOKS,
    tables::OIDC_SUBJECTS,
];

fn line_of(table: Table, key: &[u8], value: &[u8]) -> Result<Line> {
    Ok(match table {
        t if t == tables::META => Line::Meta {
            key: String::from_utf8(key.to_vec()).map_err(Error::internal)?,
            value: decode(value)?,
        },
        t if t == tables::LABELS => Line::Label(decode(value)?),
        t if t == tables::MEMBERS => Line::Member(decode(value)?),
        t if t == tables::MEMBER_SECRET => {
            Line::Secret { member_id: uuid_at(key, 0)?, secret: decode(value)? }
        }
        t if t == tables::PROJECTS => Line::Project(decode(value)?),
        t if t == tables::PROJECT_MEMBERS => Line::ProjectMember {
            project_id: uuid_at(key, 0)?,
            member_id: uuid_suffix(key)?,
            role: decode(value)?,
        },
        t if t == tables::CHATS => Line::Chat(decode(value)?),
        t if t == tables::TASKS => Line::Task(decode(value)?),
        t if t == tables::STEPS => Line::Step(decode(value)?),
        t if t == tables::LINKS => Line::Link(decode(value)?),
        t if t == tables::ACTIONS => Line::Action(decode(value)?),
        t if t == tables::UPLOADS => Line::Upload(decode(value)?),
        t if t == tables::MESSAGES => Line::Message(decode(value)?),
        t if t == tables::PROJECT_FILES => Line::ProjectFile(decode(value)?),
        t if t == tables::EVENTS => Line::Event(decode(value)?),
        t if t == tables::WEBHOOKS => Line::Webhook(decode(value)?),
        t if t == tables::OIDC_SUBJECTS => Line::OidcLink(decode(value)?),
        t => return Err(Error::internal(format!("table {} is not a record table", t.name))),
    })
}

/// Writes one line through its index-maintaining write.
fn import_line(w: &mut dyn crate::storage::WriteTxn, line: Line) -> Result<()> {
    match line {
        Line::Header { .. } => Err(Error::bad_request("a second header line in the archive")),
        Line::Meta { key, value } => w.put_record(tables::META, key.as_bytes(), &value),
        Line::Label(l) => w.put_label(None, &l),
        Line::Member(m) => w.put_member(None, &m),
        Line::Secret { member_id, secret } => {
            if let Some(hash) = &secret.token_hash {
                w.put(tables::TOKEN_MEMBER, hash.as_bytes(), member_id.as_bytes())?;
            }
            w.put_secret(member_id, &secret)
        }
        Line::Project(p) => w.put_project(None, &p),
        Line::ProjectMember { project_id, member_id, role } => {
            w.put_record(tables::PROJECT_MEMBERS, &Key::new().uuid(project_id).uuid(member_id), &role)
        }
        Line::Chat(c) => w.put_record(tables::CHATS, c.id.as_bytes(), &c),
        Line::Task(t) => w.put_task(None, &t),
        Line::Step(s) => w.put_record(tables::STEPS, &Key::new().uuid(s.task_id).uuid(s.id), &s),
        Line::Link(l) => w.put_link(&l),
        Line::Action(a) => w.put_record(tables::ACTIONS, &Key::new().uuid(a.task_id).uuid(a.id), &a),
        Line::Upload(u) => w.put_upload(&u),
        Line::Message(m) => w.put_message(&m),
        Line::ProjectFile(f) => w.put_project_file(None, &f),
        Line::Event(e) => crate::records::event_log::import(w, &e),
        Line::OidcLink(l) => {
            w.put_record(tables::OIDC_SUBJECTS, &crate::board::OidcLink::key(&l.issuer, &l.subject), &l)
        }
        Line::Webhook(h) => {
            w.put_record(tables::WEBHOOKS, h.id.as_bytes(), &h)?;
            if h.active {
                let seq = w.record::<u64>(tables::META, b"event_seq")?.unwrap_or(0);
                w.put_record(tables::WEBHOOK_CURSORS, h.id.as_bytes(), &seq)?;
            }
            Ok(())
        }
    }
}

/// Creates `dir` as an empty directory (absent or empty before).
/// Writes every record of a snapshot to `out`; returns the record count
/// and the storage names of the blobs the records refer to. `fail` turns
/// a write error into the error to report.
fn write_records(
    r: &dyn ReadTxn,
    out: &mut dyn Write,
    fail: &dyn Fn(std::io::Error) -> Error,
) -> Result<(u64, Vec<String>)> {
    let header = Line::Header { format: ARCHIVE_FORMAT.into(), version: ARCHIVE_VERSION };
    serde_json::to_writer(&mut *out, &header).map_err(|e| fail(e.into()))?;
    out.write_all(b"\n").map_err(fail)?;
    let mut records = 0u64;
    let mut blobs = Vec::new();
    for &table in RECORD_TABLES {
        r.scan(table, KeyRange::all(), Direction::Forward, &mut |k, v| {
            if table == tables::META && k == crate::board::JWT_SECRET_KEY {
                // The session secret of a board in PostgreSQL belongs to
                // its database, as a data directory's secret file does to
                // the directory: neither moves with the board.
                return Ok(Scan::Continue);
            }
            if table == tables::META
                && (k == crate::records::titles::FOLD_KEY || k == crate::records::titles::LEGACY_KEY)
            {
                // The search index's own count, rebuilt with the index.
                return Ok(Scan::Continue);
            }
            let line = line_of(table, k, v)?;
            match &line {
                Line::Upload(u) => blobs.push(u.storage_name.clone()),
                Line::ProjectFile(f) => blobs.push(f.storage_name.clone()),
                _ => {}
            }
            serde_json::to_writer(&mut *out, &line).map_err(|e| fail(e.into()))?;
            out.write_all(b"\n").map_err(fail)?;
            records += 1;
            Ok(Scan::Continue)
        })?;
    }
    Ok((records, blobs))
}

impl Board {
    /// Writes a consistent archive of the whole board into `dir`, which
    /// must be absent or empty. Records come from one snapshot; a blob
    /// deleted while it is being copied makes the export start over.
    pub async fn export_archive(&self, dir: PathBuf, progress: Option<ProgressFn>) -> Result<ArchiveSummary> {
        let target = dir.clone();
        let target = Arc::new(
            tokio::task::spawn_blocking(move || ArchiveDir::prepare(&target))
                .await
                .map_err(Error::internal)??,
        );
        let result = self.export_into(target.clone(), progress).await;
        if result.is_err() {
            tokio::task::spawn_blocking(move || target.discard()).await.map_err(Error::internal)?;
        }
        result
    }

    async fn export_into(
        &self,
        target: Arc<ArchiveDir>,
        progress: Option<ProgressFn>,
    ) -> Result<ArchiveSummary> {
        let blob_dir = self.blob_dir().to_path_buf();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let out_dir = target.path.clone();
            let (records, names) = self
                .read(move |r| {
                    let path = out_dir.join("board.jsonl");
                    let fail = |e| target_error(&path, e);
                    let mut out = BufWriter::new(crate::private::create_file(&path).map_err(fail)?);
                    let result = write_records(r, &mut out, &fail)?;
                    out.into_inner().map_err(|e| fail(e.into_error()))?.sync_all().map_err(fail)?;
                    Ok(result)
                })
                .await?;
            let (out_dir, blob_dir2, progress2) = (target.path.clone(), blob_dir.clone(), progress.clone());
            let copied = tokio::task::spawn_blocking(move || -> Result<Option<ArchiveSummary>> {
                let blobs_out = out_dir.join("blobs");
                crate::private::create_dir(&blobs_out).map_err(|e| target_error(&blobs_out, e))?;
                let total = names.len() as u64;
                let mut summary = ArchiveSummary { records, ..Default::default() };
                for (i, name) in names.iter().enumerate() {
                    let mut source = match std::fs::File::open(blob_dir2.join(name)) {
                        Ok(file) => file,
                        // Deleted since the snapshot: start over.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                        Err(e) => return Err(e.into()),
                    };
                    let to = blobs_out.join(name);
                    let fail = |e| target_error(&to, e);
                    let mut file = crate::private::create_file(&to).map_err(fail)?;
                    summary.blob_bytes += std::io::copy(&mut source, &mut file).map_err(fail)?;
                    summary.blobs += 1;
                    if let Some(p) = &progress2 {
                        p(i as u64 + 1, total);
                    }
                }
                Ok(Some(summary))
            })
            .await
            .map_err(Error::internal)??;
            match copied {
                Some(summary) => return Ok(summary),
                None if attempt < 3 => {
                    let target = target.clone();
                    tokio::task::spawn_blocking(move || target.clear()).await.map_err(Error::internal)??;
                }
                None => return Err(Error::conflict("the board kept changing during the export; try again")),
            }
        }
    }

    /// Creates the board data directory `data_dir` (absent or empty) from
    /// the archive in `archive`. On failure the new directory is removed.
    pub async fn import_archive(
        archive: PathBuf,
        data_dir: PathBuf,
        progress: Option<ProgressFn>,
    ) -> Result<ArchiveSummary> {
        Board::import_archive_into(archive, None, data_dir, progress).await
    }

    /// [`Board::import_archive`] into the board `database` names (see
    /// [`Board::open_database`]): with PostgreSQL the database must hold
    /// no board yet, `data_dir` (the file contents) must be absent or
    /// empty, and a failed import deletes what it wrote to both.
    pub async fn import_archive_into(
        archive: PathBuf,
        database: Option<String>,
        data_dir: PathBuf,
        progress: Option<ProgressFn>,
    ) -> Result<ArchiveSummary> {
        if database.is_some() && Board::database_holds_board(database.as_deref(), &data_dir).await? {
            return Err(Error::conflict("the database already holds a board; import into an empty one"));
        }
        let target = data_dir.clone();
        tokio::task::spawn_blocking(move || fresh_dir(&target)).await.map_err(Error::internal)??;
        let mut opened = None;
        let result =
            Board::import_into(archive, database.as_deref(), data_dir.clone(), progress, &mut opened).await;
        if result.is_err() {
            if let (Some(board), Some(_)) = (opened, &database) {
                // The embedded store goes with its directory; a database
                // is emptied.
                if let Err(e) = board.write(|tx| clear(tx.w)).await {
                    tracing::warn!(%e, "emptying the database after a failed import failed");
                }
            }
            let _ = std::fs::remove_dir_all(&data_dir);
        }
        result
    }

    async fn import_into(
        archive: PathBuf,
        database: Option<&str>,
        data_dir: PathBuf,
        progress: Option<ProgressFn>,
        opened: &mut Option<Board>,
    ) -> Result<ArchiveSummary> {
        use tokio::io::AsyncBufReadExt;
        let records = archive.clone();
        let file = tokio::task::spawn_blocking(move || source::open_records(&records))
            .await
            .map_err(Error::internal)??;
        let file = tokio::fs::File::from_std(file);
        let total_bytes = file.metadata().await?.len();
        let mut lines = tokio::io::BufReader::new(file).lines();
        let bad = |n: usize, e: &dyn std::fmt::Display| Error::bad_request(format!("archive line {n}: {e}"));
        let header: Line = match lines.next_line().await.map_err(|e| bad(1, &e))? {
            Some(l) => serde_json::from_str(&l).map_err(|e| bad(1, &e))?,
            None => return Err(Error::bad_request("the archive is empty")),
        };
        match header {
            Line::Header { format, version } if format == ARCHIVE_FORMAT && version == ARCHIVE_VERSION => {}
            _ => return Err(Error::bad_request("not a taskboard archive of a version this build reads")),
        }
        let board = Board::open_database(database, &data_dir, BoardOptions::default()).await?;
        *opened = Some(board.clone());
        let mut summary = ArchiveSummary::default();
        let mut read_bytes = 0u64;
        let mut line_no = 1usize;
        let mut batch: Vec<Line> = Vec::new();
        let mut sources = source::Blobs::of(&archive);
        let mut blobs = Vec::new();
        loop {
            let next = lines.next_line().await.map_err(|e| bad(line_no + 1, &e))?;
            if let Some(l) = &next {
                line_no += 1;
                read_bytes += l.len() as u64 + 1;
                let line: Line = serde_json::from_str(l).map_err(|e| bad(line_no, &e))?;
                let named = match &line {
                    Line::Upload(u) => Some(&u.storage_name),
                    Line::ProjectFile(f) => Some(&f.storage_name),
                    _ => None,
                };
                // Checked before the line's batch is written.
                if let Some(name) = named {
                    blobs.push((name.clone(), sources.check(line_no, name)?));
                }
                batch.push(line);
            }
            if batch.len() >= 5_000 || (next.is_none() && !batch.is_empty()) {
                let chunk = std::mem::take(&mut batch);
                summary.records += chunk.len() as u64;
                board
                    .write(move |tx| {
                        for line in chunk {
                            import_line(tx.w, line)?;
                        }
                        Ok(())
                    })
                    .await?;
                if let Some(p) = &progress {
                    p(read_bytes, total_bytes);
                }
            }
            if next.is_none() {
                break;
            }
        }
        let blob_dir = board.blob_dir().to_path_buf();
        let copied = tokio::task::spawn_blocking(move || -> Result<ArchiveSummary> {
            let mut s = ArchiveSummary::default();
            for (name, checked) in blobs {
                let to = crate::blobs::BlobStore::open_existing(&blob_dir).path(&name)?;
                let bytes = sources.copy(&name, checked, &to)?;
                s.blobs += 1;
                s.blob_bytes += bytes;
            }
            Ok(s)
        })
        .await
        .map_err(Error::internal)??;
        board.flush().await?;
        summary.blobs = copied.blobs;
        summary.blob_bytes = copied.blob_bytes;
        Ok(summary)
    }
}

/// Deletes every entry of every table, in one transaction.
fn clear(w: &mut dyn crate::storage::WriteTxn) -> Result<()> {
    for &table in tables::ALL {
        let mut keys = Vec::new();
        w.scan(table, KeyRange::all(), Direction::Forward, &mut |k, _| {
            keys.push(k.to_vec());
            Ok(Scan::Continue)
        })?;
        for k in keys {
            w.delete(table, &k)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::validate::{Name, Slug, Title};
    use crate::wire::{NewMessage, NewProject, NewTask};

    fn read_tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = vec![("board.jsonl".to_string(), std::fs::read(dir.join("board.jsonl")).unwrap())];
        let mut names: Vec<_> =
            std::fs::read_dir(dir.join("blobs")).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        for p in names {
            out.push((p.file_name().unwrap().to_string_lossy().into(), std::fs::read(&p).unwrap()));
        }
        out
    }

    #[tokio::test]
    async fn export_import_export_is_byte_for_byte_identical() {
        let tmp = tempfile::tempdir().unwrap();
        let board = Board::open(tmp.path().join("a"), BoardOptions::default()).await.unwrap();
        let boot = board.bootstrap_owner(Slug::new("owner").unwrap(), None).await.unwrap().unwrap();
        let owner = board.actor(boot.owner.id).await.unwrap();
        let p = board
            .create_project(
                &owner,
                NewProject {
                    name: Name::new("Web").unwrap(),
                    slug: Slug::new("web").unwrap(),
                    description: None,
                    repo_urls: vec!["https://example.com/web.git".into()],
                    auto_assign: false,
                },
            )
            .await
            .unwrap();
        let mut new = NewTask::titled(Title::new("First").unwrap());
        new.labels = vec![crate::validate::LabelName::new("bug").unwrap()];
        let t = board.create_task(&owner, p.id, new).await.unwrap();
        let up = board.upload(&owner, "notes.txt", None, &b"hello"[..]).await.unwrap();
        board
            .post_message(
                &owner,
                NewMessage {
                    task_id: Some(t.id),
                    content: "see file".into(),
                    attachments: vec![up],
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        board
            .upload_file(&owner, p.id, "spec.md", Some("the spec".into()), None, &b"# spec"[..])
            .await
            .unwrap();

        let first = tmp.path().join("export1");
        let s1 = board.export_archive(first.clone(), None).await.unwrap();
        assert_eq!(s1.blobs, 2);
        let restored = tmp.path().join("b");
        Board::import_archive(first.clone(), restored.clone(), None).await.unwrap();
        let board2 = Board::open(&restored, BoardOptions::default()).await.unwrap();
        let second = tmp.path().join("export2");
        board2.export_archive(second.clone(), None).await.unwrap();
        assert_eq!(read_tree(&first), read_tree(&second));

        // The indexes were rebuilt: keys, labels and files resolve.
        let keyed = crate::api::TaskFilter { q: Some("WEB-1".into()), ..Default::default() };
        assert_eq!(board2.list_tasks(keyed).await.unwrap()[0].labels, vec!["bug"]);
        let files = board2.list_files(p.id, None, Default::default()).await.unwrap();
        assert_eq!(files[0].filename, "spec.md");
        assert!(board2.login("owner", "wrong", None).await.is_err());
    }

    #[tokio::test]
    async fn import_refuses_a_non_empty_target() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("x"), b"x").unwrap();
        let err = Board::import_archive(tmp.path().join("nowhere"), tmp.path().to_path_buf(), None)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Conflict);
        assert!(tmp.path().join("x").exists());
    }
}
