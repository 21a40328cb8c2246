//! The conditions of a request, in one place: `If-Match`,
//! `If-None-Match` and `Idempotency-Key` (docs/rules.md, requests and
//! errors, and idempotency).
//!
//! A request that changes something begins here ([`Board::begin`]): a
//! repeat of a keyed request replays the answer stored for it, changing
//! nothing; otherwise the key is held as running, and the acting member
//! carries a [`Request`] to the operations. The board's write path asks
//! that request, inside the transaction of each write, to check the
//! `If-Match` list (in the first write) and to store the write's value as
//! the answer (the first value that is one, see [`Answer`]), so a retry
//! after a crash finds the answer exactly when it finds the change. The
//! request ends here too ([`Session::finish`]): a call that wrote nothing
//! has its condition checked against a snapshot and its answer stored by
//! a write of its own.
//!
//! The module sits inside the board because the check and the answer
//! belong to the board's write transaction; callers above (the API's
//! `perform`, the server for uploads) call down into it, and nothing here
//! calls back up: what travels down is data (a list, a [`Resource`], a
//! status), and the answer's form comes from the written value's type.

mod idempotency;
mod request;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use tokio::io::AsyncReadExt;
use uuid::Uuid;

pub(crate) use idempotency::Running;
pub use idempotency::{Answer, IDEMPOTENCY_TTL, IdempotencyKey, StoredAnswer};
pub use request::{IfMatch, Request, Resource};

use super::{Actor, Board};
use crate::error::{Error, ErrorKind, Result};
use crate::wire::{Upload, etag_listed};
use idempotency::Held;
use request::{Condition, PendingAnswer};

/// What a request sent besides its inputs: the entity tags of `If-Match`
/// (for a change of one resource) and `If-None-Match` (for a read), as
/// the headers list them, and its idempotency key.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    pub if_match: Option<String>,
    pub if_none_match: Option<String>,
    pub idempotency_key: Option<IdempotencyKey>,
}

impl Conditions {
    /// Whether an answer tagged `tag` is not sent again because the
    /// client holds it: `If-None-Match` lists the tag (304).
    pub fn not_modified(&self, tag: &str) -> bool {
        self.if_none_match.as_deref().is_some_and(|list| etag_listed(list, tag))
    }
}

/// The outcome of a keyed call.
pub enum Idempotent<T> {
    /// Performed now.
    Fresh(T),
    /// Performed before: the stored status and body.
    Replayed { status: u16, body: Bytes },
}

/// A request begun on its conditions: perform it as [`Session::actor`],
/// then [`Session::finish`] it with its answer.
pub struct Session {
    board: Board,
    actor: Actor,
    condition: Option<Arc<Condition>>,
    answer: Option<Arc<PendingAnswer>>,
    _held: Option<Held>,
}

impl Session {
    /// The acting member, carrying what the request asks of its writes.
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// Ends the request once its call succeeded. A call that wrote
    /// nothing has its `If-Match` condition checked against a snapshot,
    /// and its `answer` (the status and body it is sent with, when it is
    /// one kept under a key) stored by a write of its own; a call that
    /// changed something stored its answer with the change.
    pub async fn finish(self, answer: Option<(u16, Bytes)>) -> Result<()> {
        if let Some(condition) = self.condition.clone()
            && !condition.checked.load(Ordering::Acquire)
        {
            self.board.read(move |r| condition.check_first(r)).await?;
        }
        let Some(pending) = self.answer.clone() else { return Ok(()) };
        if pending.stored.load(Ordering::Acquire) {
            return Ok(());
        }
        let Some((status, body)) = answer else { return Ok(()) };
        // A call that changed something stores its answer with the
        // change; one that reached here wrote a value that is no answer,
        // which the operations must not do.
        let wrote = pending.wrote.load(Ordering::Acquire);
        debug_assert!(!wrote, "a write under an idempotency key did not store its answer");
        if wrote {
            tracing::error!(key = pending.key.key(), "an idempotent answer was not stored with its change");
        }
        let member = pending.member;
        self.board
            .write(move |tx| idempotency::store(tx.w, member, &pending.key, tx.now, status, &body))
            .await
    }
}

impl Board {
    /// Begins a request made as `actor` on its conditions: `if_match`,
    /// checked by the first write the request makes, in its transaction
    /// (412 `precondition_failed` when the resource changed, with
    /// nothing changed), and `key`, under which the first successful
    /// answer is stored with the change it answers (`status` is the
    /// endpoint's status of success). A repeat with the same fingerprint
    /// is [`Idempotent::Replayed`], another fingerprint is 422, and a
    /// repeat while the first still runs is 409.
    pub async fn begin(
        &self,
        actor: Actor,
        if_match: Option<IfMatch>,
        key: Option<IdempotencyKey>,
        status: u16,
    ) -> Result<Idempotent<Session>> {
        let mut held = None;
        let answer = match key {
            Some(key) => {
                let member = actor.id();
                if let Some((status, body)) = self.replay(member, &key).await? {
                    return Ok(Idempotent::Replayed { status, body });
                }
                held = Some(Held::hold(&self.inner.running, member, &key)?);
                // It may have finished between the first look and the insert.
                if let Some((status, body)) = self.replay(member, &key).await? {
                    return Ok(Idempotent::Replayed { status, body });
                }
                let stored = AtomicBool::new(false);
                Some(Arc::new(PendingAnswer { member, key, status, stored, wrote: AtomicBool::new(false) }))
            }
            None => None,
        };
        let condition =
            if_match.map(|if_match| Arc::new(Condition { if_match, checked: AtomicBool::new(false) }));
        let request = Request { condition: condition.clone(), answer: answer.clone() };
        let actor = actor.within(request);
        Ok(Idempotent::Fresh(Session { board: self.clone(), actor, condition, answer, _held: held }))
    }

    /// What a repeat under `key` answers, when an answer is stored for it.
    async fn replay(&self, member: Uuid, key: &IdempotencyKey) -> Result<Option<(u16, Bytes)>> {
        let k = key.key().to_string();
        let Some(stored) = self.read(move |r| idempotency::load(r, member, &k)).await? else {
            return Ok(None);
        };
        stored.replay(member, key).map(Some)
    }

    /// For an upload under `key` (made with [`IdempotencyKey::streamed`]):
    /// when an answer is stored for the key, reads the upload's content
    /// through, up to the board's upload limit, so its fingerprint is
    /// known, and returns the status and body the repeat answers. `None`
    /// when nothing is stored: the upload goes ahead, and [`Board::begin`]
    /// holds the key.
    pub async fn replay_upload(
        &self,
        actor: &Actor,
        key: &IdempotencyKey,
        upload: &mut Upload,
    ) -> Result<Option<(u16, Bytes)>> {
        let member = actor.id();
        let k = key.key().to_string();
        let Some(stored) = self.read(move |r| idempotency::load(r, member, &k)).await? else {
            return Ok(None);
        };
        read_through(&mut upload.content, self.options().max_upload_bytes).await?;
        stored.replay(member, key).map(Some)
    }

    /// Removes answers stored more than a day ago (by the board's clock).
    /// Returns how many.
    pub async fn sweep_idempotency(&self) -> Result<usize> {
        self.write(|tx| idempotency::sweep(tx.w, tx.now)).await
    }
}

/// Reads `content` to its end, keeping nothing: 413 beyond `limit` bytes.
async fn read_through(
    content: &mut std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>>,
    limit: u64,
) -> Result<()> {
    let mut bounded = content.take(limit + 1);
    let read = tokio::io::copy(&mut bounded, &mut tokio::io::sink())
        .await
        .map_err(|e| Error::invalid("body", format!("the upload was not read whole: {e}")))?;
    if read > limit {
        return Err(Error::new(
            ErrorKind::PayloadTooLarge,
            format!("the upload is larger than {limit} bytes"),
        ));
    }
    Ok(())
}
