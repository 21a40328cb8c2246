//! Project files (docs/rules.md, messages and files).

use serde_json::json;
use tokio::io::AsyncRead;
use uuid::Uuid;

use super::messages::guess_mime;
use super::pages::{IndexList, ItemFn, List};
use super::{Actor, Board};
use crate::error::Result;
use crate::events::EventKind;
use crate::model::ProjectFile;
use crate::records::{ProjectFileRecord, RecordWrites, Records, Render};
use crate::storage::tables::PROJECT_FILE_NAME;
use crate::validate::check_file_name;
use crate::wire::{CursorKind, Download, FilePatch, Page};

impl Board {
    /// `GET /projects/{id}/files`, by file name; `search` is a
    /// case-insensitive substring of the name.
    pub fn list_files(&self, project: Uuid, search: Option<String>, page: Page) -> List<ProjectFile> {
        self.index_list(files_list(project, search), page, move |r| r.project_required(project).map(drop))
    }

    /// `POST /projects/{id}/files`: a new name adds a file; an existing
    /// name replaces its content, size, type and `updated_at` and keeps
    /// its id (docs/rules.md, messages and files). A description given replaces the old one.
    pub async fn upload_file<R: AsyncRead + Unpin>(
        &self,
        actor: &Actor,
        project: Uuid,
        filename: &str,
        description: Option<String>,
        mime_type: Option<&str>,
        content: R,
    ) -> Result<ProjectFile> {
        check_file_name(filename)?;
        if let Some(d) = &description {
            crate::validate::LongText::new(d.clone()).map_err(|e| e.at("description"))?;
        }
        self.upload_file_described(actor, project, filename, move || description, mime_type, content).await
    }

    /// [`Board::upload_file`] with a description known only once the
    /// content has been read (a multipart field after the file): it is
    /// asked for then, and recorded in the same change as the file.
    pub async fn upload_file_described<R: AsyncRead + Unpin>(
        &self,
        actor: &Actor,
        project: Uuid,
        filename: &str,
        description: impl FnOnce() -> Option<String> + Send,
        mime_type: Option<&str>,
        content: R,
    ) -> Result<ProjectFile> {
        check_file_name(filename)?;
        self.read(move |r| r.project_required(project).map(|_| ())).await?;
        let blob = self.blobs().write(content, self.options().max_upload_bytes).await?;
        let description = description();
        if let Some(d) = &description
            && let Err(e) = crate::validate::LongText::new(d.clone())
        {
            self.blobs().remove(&[blob.storage_name]);
            return Err(e.at("description"));
        }
        let filename = filename.to_string();
        let mime_type = mime_type
            .filter(|m| !m.is_empty() && *m != "application/octet-stream")
            .map_or_else(|| guess_mime(&filename), str::to_string);
        let uploader = actor.id();
        let storage_name = blob.storage_name.clone();
        let result = self
            .write(move |tx| {
                tx.w.project_required(project)?;
                let now = tx.now;
                let existing = tx.w.project_file_by_name(project, &filename)?;
                let f = match &existing {
                    Some(old) => {
                        tx.dead_blobs.push(old.storage_name.clone());
                        ProjectFileRecord {
                            description: description.or_else(|| old.description.clone()),
                            mime_type,
                            size: blob.size,
                            storage_name: blob.storage_name,
                            uploaded_by: uploader,
                            updated_at: now,
                            ..old.clone()
                        }
                    }
                    None => ProjectFileRecord {
                        id: Uuid::now_v7(),
                        project_id: project,
                        filename,
                        description,
                        mime_type,
                        size: blob.size,
                        storage_name: blob.storage_name,
                        uploaded_by: uploader,
                        created_at: now,
                        updated_at: now,
                    },
                };
                tx.w.put_project_file(existing.as_ref(), &f)?;
                let file = tx.w.render_project_file(&f)?;
                tx.emit_all(
                    if existing.is_some() { EventKind::FileReplaced } else { EventKind::FileUploaded },
                    json!({"project_id": project, "file": file}),
                )?;
                Ok(file)
            })
            .await;
        if result.is_err() {
            self.blobs().remove(&[storage_name]);
        }
        result
    }

    pub async fn get_file(&self, project: Uuid, id: Uuid) -> Result<ProjectFile> {
        self.read(move |r| r.render_project_file(&r.project_file_in(project, id)?)).await
    }

    /// `GET /projects/{id}/files/{file_id}/download`.
    pub async fn open_file(&self, project: Uuid, id: Uuid) -> Result<Download> {
        let f = self.read(move |r| r.project_file_in(project, id)).await?;
        let file = self.blobs().open_blob(&f.storage_name).await?;
        Ok(Download { filename: f.filename, mime_type: f.mime_type, size: f.size, content: Box::pin(file) })
    }

    /// `PATCH /projects/{id}/files/{file_id}`.
    pub async fn update_file(
        &self,
        actor: &Actor,
        project: Uuid,
        id: Uuid,
        patch: FilePatch,
    ) -> Result<ProjectFile> {
        self.write_as(actor.request(), move |tx| {
            let old = tx.w.project_file_in(project, id)?;
            let mut f = old.clone();
            if let Some(d) = patch.description.change() {
                f.description = d.map(String::from);
            }
            f.updated_at = tx.now;
            tx.w.put_project_file(Some(&old), &f)?;
            let file = tx.w.render_project_file(&f)?;
            tx.emit_all(EventKind::FileUpdated, json!({"project_id": project, "file": file}))?;
            Ok(file)
        })
        .await
    }

    /// `DELETE /projects/{id}/files/{file_id}`: the record and its content.
    pub async fn delete_file(&self, actor: &Actor, project: Uuid, id: Uuid) -> Result<()> {
        self.write_as(actor.request(), move |tx| {
            let f = tx.w.project_file_in(project, id)?;
            tx.w.delete_project_file(&f)?;
            tx.dead_blobs.push(f.storage_name);
            tx.emit_all(
                EventKind::FileDeleted,
                json!({"project_id": project, "id": id, "filename": f.filename}),
            )
        })
        .await
    }
}

/// A project's files by name; `search` is a case-insensitive part of it.
fn files_list(project: Uuid, search: Option<String>) -> IndexList<impl ItemFn<ProjectFile>> {
    let needle = search.map(|s| s.to_lowercase());
    IndexList::new(CursorKind::Files, PROJECT_FILE_NAME, project.as_bytes(), move |r, _, v| {
        match r.project_file(crate::storage::codec::uuid_value(v)?)? {
            Some(f) if needle.as_ref().is_none_or(|n| f.filename.to_lowercase().contains(n.as_str())) => {
                Ok(Some(r.render_project_file(&f)?))
            }
            _ => Ok(None),
        }
    })
}
