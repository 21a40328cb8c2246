//! Chat messages, task comments and uploads (docs/rules.md, messages and
//! files).

use std::ops::Bound;

use jiff::Timestamp;
use tokio::io::AsyncRead;
use uuid::Uuid;

use super::pages::{IndexList, ItemFn, List};
use super::{Actor, Board, Tx};
use crate::error::{Error, Result};
use crate::events::Audience;
use crate::model::{AuthorType, MemberType, Message, UploadedFile};
use crate::records::{MessageRecord, RecordWrites, Records, Render, TaskRecord, UploadRecord};
use crate::storage::codec::{Key, uuid_at, uuid_suffix};
use crate::storage::tables::{CHAT_MESSAGES, MESSAGES, REPLIES, TASK_MESSAGES, UNBOUND_UPLOADS, UPLOADS};
use crate::storage::{Direction, KeyRange, Scan};
use crate::validate::check_content;
use crate::wire::{
    CursorKind, Download, MessageFilter, NewMessage, Page, Paged, decode_cursor, encode_cursor,
};

/// Largest page of `GET /messages`.
pub const MAX_MESSAGE_PAGE: u32 = crate::wire::MessageFilter::MAX_LIMIT;

/// `@slug` words of a text.
fn slug_mentions(content: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in content.match_indices('@') {
        if i > 0 && content[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let slug: String = content[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == '-')
            .collect();
        let slug = slug.trim_end_matches('-').to_string();
        if !slug.is_empty() && !out.contains(&slug) {
            out.push(slug);
        }
    }
    out
}

/// Who hears of a comment on `task` (its state in the comment's
/// transaction): those involved in the task, and those it mentions.
pub(crate) fn comment_audience(task: &TaskRecord, m: &MessageRecord) -> Audience {
    let mut involved = task.watcher_ids.clone();
    involved.extend(task.assignee_id);
    involved.extend(task.reviewer_id);
    Audience::TaskComment { involved, mentions: m.mention_ids.clone() }
}

/// A guessed content type for a file name.
pub(crate) fn guess_mime(filename: &str) -> String {
    mime_guess::from_path(filename).first_or_octet_stream().essence_str().to_string()
}

impl Board {
    /// Writes the new message `m` and emits its `message.new` to
    /// `audience`, or when None to its audience (docs/rules.md, events)
    /// computed from the state inside the message's transaction; the
    /// record keeps the event's seq. The message as rendered.
    pub(crate) fn write_message(
        tx: &mut Tx<'_>,
        m: &mut MessageRecord,
        audience: Option<Audience>,
    ) -> Result<Message> {
        let audience = match audience {
            Some(audience) => audience,
            None => Board::message_audience(tx, m)?,
        };
        let message = tx.w.render_message(m)?;
        m.event_seq = Some(tx.emit_message(&message, audience, m.id)?);
        tx.w.put_message(m)?;
        Ok(message)
    }

    /// Who hears of `m`: those involved in its task and those it
    /// mentions, or its chat's project members.
    fn message_audience(tx: &mut Tx<'_>, m: &MessageRecord) -> Result<Audience> {
        if let Some(task_id) = m.task_id {
            return Ok(comment_audience(&tx.w.task_required(task_id)?, m));
        }
        let chat_id = m.chat_id.ok_or_else(|| Error::internal("message without chat or task"))?;
        let chat =
            tx.w.chat(chat_id)?.ok_or_else(|| Error::not_found(format!("chat {chat_id} not found")))?;
        Ok(Audience::Chat {
            project_members: tx.w.project_member_ids(chat.project_id)?,
            mentions: m.mention_ids.clone(),
        })
    }

    /// `GET /messages`: the last `limit` messages (after skipping the
    /// newest `offset`, or older than the message in `cursor`) of a chat,
    /// a task or a thread, in chronological order; of all messages without
    /// a filter (docs/rules.md, messages and files). The next page holds
    /// older messages; it is read from where this one stopped.
    pub async fn list_messages(&self, filter: MessageFilter) -> Result<Paged<Message>> {
        let limit = filter.limit.unwrap_or(50);
        if !(1..=MAX_MESSAGE_PAGE).contains(&limit) {
            return Err(Error::invalid("limit", format!("must be 1-{MAX_MESSAGE_PAGE}, got {limit}")));
        }
        let before = filter.cursor.as_deref().map(|c| decode_cursor(CursorKind::Messages, c)).transpose()?;
        let offset = filter.offset.unwrap_or(0) as usize;
        self.read(move |r| {
            let (table, prefix) = if let Some(p) = filter.parent_id {
                (REPLIES, p.as_bytes().to_vec())
            } else if let Some(t) = filter.task_id {
                (TASK_MESSAGES, t.as_bytes().to_vec())
            } else if let Some(c) = filter.chat_id {
                (CHAT_MESSAGES, c.as_bytes().to_vec())
            } else {
                (MESSAGES, Vec::new())
            };
            let mut range = KeyRange::prefix(&prefix);
            if let Some(before) = &before {
                range.end = Bound::Excluded([prefix.as_slice(), before].concat());
            }
            let mut skipped = 0;
            let mut out: Vec<MessageRecord> = Vec::with_capacity(limit as usize);
            r.scan(table, range, Direction::Reverse, &mut |k, _| {
                // The message id follows the prefix in every index.
                let id = uuid_at(k, prefix.len())?;
                let Some(m) = r.message(id)? else { return Ok(Scan::Continue) };
                let keep = filter.chat_id.is_none_or(|c| m.chat_id == Some(c))
                    && filter.task_id.is_none_or(|t| m.task_id == Some(t))
                    && filter.parent_id.is_none_or(|p| m.parent_id == Some(p));
                if keep {
                    if skipped < offset {
                        skipped += 1;
                    } else {
                        out.push(m);
                    }
                }
                Ok(if out.len() >= limit as usize { Scan::Stop } else { Scan::Continue })
            })?;
            let next = match out.last() {
                Some(oldest) if out.len() == limit as usize => {
                    Some(encode_cursor(CursorKind::Messages, oldest.id.as_bytes()))
                }
                _ => None,
            };
            out.reverse();
            let items = out.iter().map(|m| r.render_message(m)).collect::<Result<_>>()?;
            Ok(Paged { items, next })
        })
        .await
    }

    /// `GET /messages/{id}/replies`, by creation time (404 for an unknown
    /// message).
    pub fn replies(&self, id: Uuid, page: Page) -> List<Message> {
        self.index_list(replies_list(id), page, move |r| match r.message(id)? {
            Some(_) => Ok(()),
            None => Err(Error::not_found(format!("message {id} not found"))),
        })
    }

    /// `POST /messages` (docs/rules.md, messages and files): the author comes from the
    /// actor; `@slug` words add mentions; attachments bind unbound uploads.
    pub async fn post_message(&self, actor: &Actor, new: NewMessage) -> Result<Message> {
        if new.chat_id.is_none() && new.task_id.is_none() {
            return Err(Error::bad_request("a message needs chat_id or task_id"));
        }
        if new.chat_id.is_some() && new.task_id.is_some() {
            return Err(Error::invalid("task_id", "give chat_id or task_id, not both"));
        }
        check_content(&new.content).map_err(|e| e.at("content"))?;
        if new.content.trim().is_empty() && new.attachments.is_empty() {
            return Err(Error::invalid("content", "must not be empty unless attachments are given"));
        }
        let author = actor.member.clone();
        let fence = actor.fence();
        self.write_as(actor.request(), move |tx| {
            if let Some(c) = new.chat_id {
                tx.w.chat(c)?.ok_or_else(|| Error::not_found(format!("chat {c} not found")))?;
            }
            if let Some(t) = new.task_id {
                let t = tx.w.task_required(t)?;
                fence.check(tx.w, &t, super::fencing::Touch::Comment)?;
            }
            if let Some(p) = new.parent_id {
                let parent =
                    tx.w.message(p)?
                        .ok_or_else(|| Error::not_found(format!("parent message {p} not found")))?;
                if parent.chat_id != new.chat_id || parent.task_id != new.task_id {
                    return Err(Error::invalid("parent_id", "the parent message is in another chat or task"));
                }
            }
            let mut mentions = Vec::new();
            for &id in &new.mentions {
                match tx.w.member(id)? {
                    Some(_) => {
                        if !mentions.contains(&id) {
                            mentions.push(id)
                        }
                    }
                    None => return Err(Error::invalid("mentions", format!("unknown member {id}"))),
                }
            }
            for slug in slug_mentions(&new.content) {
                if let Some(m) = tx.w.member_by_slug(&slug)?
                    && m.is_active
                    && !mentions.contains(&m.id)
                {
                    mentions.push(m.id);
                }
            }
            let id = Uuid::now_v7();
            let mut attachment_ids = Vec::new();
            for (i, a) in new.attachments.iter().enumerate() {
                let field = format!("attachments[{i}]");
                let mut u =
                    tx.w.upload(a.file_id)?
                        .ok_or_else(|| Error::invalid(&field, format!("unknown upload {}", a.file_id)))?;
                if u.message_id.is_some() {
                    return Err(Error::invalid(
                        &field,
                        format!("upload {} is already attached to a message", a.file_id),
                    ));
                }
                u.message_id = Some(id);
                tx.w.put_upload(&u)?;
                attachment_ids.push(u.file_id);
            }
            let mut m = MessageRecord {
                id,
                chat_id: new.chat_id,
                task_id: new.task_id,
                parent_id: new.parent_id,
                author_type: match author.kind {
                    MemberType::Agent => AuthorType::Agent,
                    MemberType::Human | MemberType::Bridge => AuthorType::Human,
                },
                author_id: Some(author.id),
                actor_id: None,
                content: new.content,
                thinking: new.thinking.map(String::from),
                mention_ids: mentions,
                voice_url: new.voice_url,
                attachment_ids,
                created_at: tx.now,
                event_seq: None,
                imported_author: None,
            };
            Board::write_message(tx, &mut m, None)
        })
        .await
    }

    /// `POST /upload`: streams the content to the blob store (413 over
    /// the limit, nothing kept), then records the unbound upload.
    pub async fn upload<R: AsyncRead + Unpin>(
        &self,
        actor: &Actor,
        filename: &str,
        mime_type: Option<&str>,
        content: R,
    ) -> Result<UploadedFile> {
        let filename = filename.trim();
        if filename.is_empty() || filename.len() > 255 {
            return Err(Error::invalid("file", "the file name must be 1-255 bytes"));
        }
        if let Some(problem) = crate::validate::unsafe_name_problem(filename) {
            return Err(Error::invalid("file", format!("invalid file name {filename:?}: {problem}")));
        }
        let blob = self.blobs().write(content, self.options().max_upload_bytes).await?;
        let u = UploadRecord {
            file_id: Uuid::now_v7(),
            filename: filename.to_string(),
            mime_type: mime_type
                .filter(|m| !m.is_empty())
                .map_or_else(|| guess_mime(filename), str::to_string),
            size: blob.size,
            storage_name: blob.storage_name.clone(),
            uploaded_by: actor.id(),
            created_at: Timestamp::now(),
            message_id: None,
        };
        let record = u.clone();
        let result = self
            .write(move |tx| {
                tx.w.put_upload(&record)?;
                Ok(record.to_wire())
            })
            .await;
        if result.is_err() {
            self.blobs().remove(&[blob.storage_name]);
        }
        result
    }

    /// `GET /attachments/{id}/download`.
    pub async fn open_attachment(&self, id: Uuid) -> Result<Download> {
        let u = self
            .read(move |r| {
                r.upload(id)?.ok_or_else(|| Error::not_found(format!("attachment {id} not found")))
            })
            .await?;
        let file = self.blobs().open_blob(&u.storage_name).await?;
        Ok(Download { filename: u.filename, mime_type: u.mime_type, size: u.size, content: Box::pin(file) })
    }

    /// Deletes uploads older than the configured age that were never
    /// attached to a message; returns how many.
    pub async fn reclaim_unbound_uploads(&self, now: Timestamp) -> Result<usize> {
        let ttl = self.options().unbound_upload_ttl.as_millis() as i64;
        let cutoff = (now.as_millisecond() - ttl).max(0) as u64;
        self.write(move |tx| {
            let mut stale = Vec::new();
            tx.w.scan(
                UNBOUND_UPLOADS,
                KeyRange {
                    start: std::ops::Bound::Unbounded,
                    end: std::ops::Bound::Excluded(Key::new().u64(cutoff).build()),
                },
                Direction::Forward,
                &mut |k, _| {
                    stale.push((k.to_vec(), uuid_suffix(k)?));
                    Ok(Scan::Continue)
                },
            )?;
            for (key, id) in &stale {
                tx.w.delete(UNBOUND_UPLOADS, key)?;
                if let Some(u) = tx.w.upload(*id)?
                    && u.message_id.is_none()
                {
                    tx.w.delete(UPLOADS, id.as_bytes())?;
                    tx.dead_blobs.push(u.storage_name);
                }
            }
            Ok(stale.len())
        })
        .await
    }
}

/// A message's replies, oldest first.
fn replies_list(parent: Uuid) -> IndexList<impl ItemFn<Message>> {
    IndexList::new(CursorKind::Replies, REPLIES, parent.as_bytes(), |r, k, _| {
        r.message(uuid_at(k, 0)?)?.map(|m| r.render_message(&m)).transpose()
    })
}

#[cfg(test)]
mod tests {
    use super::slug_mentions;

    #[test]
    fn slug_mentions_are_words_after_an_at_sign() {
        assert_eq!(slug_mentions("hi @ana and @bot-1, see a@b"), vec!["ana", "bot-1"]);
        assert_eq!(slug_mentions("@ana @ana"), vec!["ana"]);
        assert!(slug_mentions("mail me@example.com").is_empty());
    }
}
