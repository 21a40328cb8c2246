//! `taskboard message …` and `file …`.

use taskboard_core::api::{
    DeleteFile, DownloadFile, FileListQuery, FilePatch, ListFiles, ListMessages, ListReplies, MessageFilter,
    NewMessage, Page, PostMessage, UpdateFile, UploadAttachment, UploadFile,
};
use taskboard_core::validate::LongText;
use taskboard_core::{Error, Perform, Result};
use uuid::Uuid;

use crate::cli::{FileCmd, MessageCmd, Place};
use crate::client::{save_download, upload_from_path};
use crate::output::Out;

use super::downloaded;
use super::helpers::{Sink, bar, byte_progress, download, find_file, finish, page, patch, task_id};

/// `(chat_id, task_id)` of a place.
pub(super) async fn place<B: Perform>(b: &B, p: Place) -> Result<(Option<Uuid>, Option<Uuid>)> {
    if let Some(project) = p.project {
        let project = b.find_project(&project).await?;
        let chat = project
            .chat_id
            .ok_or_else(|| Error::not_found(format!("project {} has no main chat", project.slug)))?;
        return Ok((Some(chat), None));
    }
    Ok((p.chat, task_id(b, p.task.as_deref()).await?))
}

pub(super) async fn message<B: Perform>(b: &B, c: MessageCmd, out: Out) -> Result<()> {
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
        MessageCmd::List { place: p, parent, limit, offset, cursor } => {
            let (chat_id, task_id) = place(b, p).await?;
            let filter = MessageFilter { chat_id, task_id, parent_id: parent, limit, offset, cursor };
            let messages = b.call::<ListMessages>((), filter, ()).await?;
            out.list(&messages);
            out.next_page(messages.next.as_deref());
        }
        MessageCmd::Replies { message } => {
            out.list(&b.call::<ListReplies>(message, Page::default(), ()).await?)
        }
    }
    Ok(())
}

pub(super) async fn file<B: Perform>(b: &B, c: FileCmd, out: Out) -> Result<()> {
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
