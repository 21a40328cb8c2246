//! Idempotency keys: the first successful answer to a key is stored in
//! the transaction of the change it answers, so a retry after a crash
//! either finds that answer or finds nothing changed.
//!
//! The key travels with the request's task (a task-local): the board's
//! write path, on the first write whose result is the endpoint's answer
//! (or what the endpoint wraps into its answer, a token say), encodes
//! that answer and stores it in the same transaction. Only a call that
//! wrote nothing has its answer stored by a write of its own.
//!
//! An upload's body is hashed as it streams: its fingerprint is known
//! once the content has been read to its end, which is before the write
//! that records the file.

use std::any::Any;
use std::collections::HashSet;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::request::{AnswerStore, Request};
use super::{Actor, Board};
use crate::error::{Error, Result};
use crate::records::RecordWrites;
use crate::storage::codec::{Key, decode, uuid_suffix};
use crate::storage::tables::{IDEMPOTENCY, IDEMPOTENCY_AGE};
use crate::storage::{Direction, KeyRange, Scan, WriteTxn};

/// How long a stored answer is kept at least.
pub const IDEMPOTENCY_TTL: SignedDuration = SignedDuration::from_hours(24);

/// An answer stored for a key. The key itself is not stored: the answer
/// is found by a hash of it and sealed under another (docs/rules.md,
/// idempotency), so an answer that holds a secret (an agent's token, a
/// webhook's secret) cannot be read from the store without the key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredAnswer {
    /// Hex SHA-256 of the method, path with query, and body.
    pub fingerprint: String,
    pub status: u16,
    /// The body in clear: only in answers stored before answers were
    /// sealed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// The body (JSON, or empty for 204) sealed with ChaCha20-Poly1305
    /// under [`seal_key`]: base64 of the nonce then the ciphertext.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
    pub stored_at: Timestamp,
}

/// What the store knows a key by: a hash of the member and the key.
fn lookup_of(member: Uuid, key: &str) -> String {
    hex(derive(b"taskboard idempotency lookup", member, key))
}

/// The key an answer is sealed under: another hash of the member and the
/// key, which nothing stores.
fn seal_key(member: Uuid, key: &str) -> chacha20poly1305::Key {
    derive(b"taskboard idempotency seal", member, key).into()
}

fn derive(purpose: &[u8], member: Uuid, key: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(purpose);
    h.update([0]);
    h.update(member.as_bytes());
    h.update(key.as_bytes());
    h.finalize().into()
}

fn seal(member: Uuid, key: &str, body: &[u8]) -> Result<String> {
    use base64::Engine;
    use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
    let cipher = chacha20poly1305::ChaCha20Poly1305::new(&seal_key(member, key));
    let nonce = chacha20poly1305::ChaCha20Poly1305::generate_nonce(&mut OsRng);
    let mut out = nonce.to_vec();
    out.extend(cipher.encrypt(&nonce, body).map_err(|_| Error::internal("an answer could not be sealed"))?);
    Ok(base64::engine::general_purpose::STANDARD_NO_PAD.encode(out))
}

fn open(member: Uuid, key: &str, sealed: &str) -> Result<Vec<u8>> {
    use base64::Engine;
    use chacha20poly1305::aead::{Aead, KeyInit};
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(sealed)
        .map_err(|_| Error::internal("a stored answer is not base64"))?;
    if bytes.len() < 12 {
        return Err(Error::internal("a stored answer is too short"));
    }
    let (nonce, ciphertext) = bytes.split_at(12);
    chacha20poly1305::ChaCha20Poly1305::new(&seal_key(member, key))
        .decrypt(nonce.into(), ciphertext)
        .map_err(|_| Error::internal("a stored answer could not be opened"))
}

/// An idempotency key with the fingerprint of its request.
#[derive(Debug, Clone)]
pub struct IdempotencyKey {
    key: String,
    fingerprint: Fingerprint,
}

impl StoredAnswer {
    /// The stored body, opened with the key it was stored for.
    fn body(self, member: Uuid, key: &str) -> Result<Bytes> {
        match &self.sealed {
            Some(sealed) => open(member, key, sealed).map(Bytes::from),
            None => Ok(Bytes::from(self.body)),
        }
    }
}

/// The fingerprint of a request: known from the start, or, for an
/// upload, once its content has streamed to its end.
#[derive(Debug, Clone)]
enum Fingerprint {
    Known(String),
    Streamed(Arc<OnceLock<String>>),
}

fn hex(hash: impl AsRef<[u8]>) -> String {
    hash.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::invalid("Idempotency-Key", "must be 1-255 visible ASCII characters"));
    }
    Ok(())
}

fn request_line(method: &str, path_and_query: &str) -> Sha256 {
    let mut h = Sha256::new();
    h.update(method.as_bytes());
    h.update(b" ");
    h.update(path_and_query.as_bytes());
    h.update(b"\n");
    h
}

/// Text fields as `name=value` lines, lengths first so no two lists hash
/// alike.
fn hash_fields(h: &mut Sha256, fields: &[(String, String)]) {
    for (name, value) in fields {
        h.update((name.len() as u64).to_be_bytes());
        h.update(name.as_bytes());
        h.update((value.len() as u64).to_be_bytes());
        h.update(value.as_bytes());
    }
    h.update(b"\n");
}

impl IdempotencyKey {
    /// Checks the key (1–255 visible ASCII characters) and fingerprints
    /// the request it came with.
    pub fn new(key: &str, method: &str, path_and_query: &str, body: &[u8]) -> Result<IdempotencyKey> {
        check_key(key)?;
        let mut h = request_line(method, path_and_query);
        h.update(body);
        Ok(IdempotencyKey { key: key.to_string(), fingerprint: Fingerprint::Known(hex(h.finalize())) })
    }

    /// A key on an upload: the fingerprint covers the method, the path,
    /// the file's name and type, the text fields and the content, and is
    /// computed as the content streams (the content of `upload` is
    /// replaced by a reader that hashes it). The multipart framing (the
    /// boundary) is left out, so a retry that frames the same parts
    /// differently is the same request.
    pub fn streamed(
        key: &str,
        method: &str,
        path_and_query: &str,
        upload: &mut crate::wire::Upload,
    ) -> Result<IdempotencyKey> {
        check_key(key)?;
        let mut h = request_line(method, path_and_query);
        let head = [(upload.filename.clone(), upload.mime_type.clone().unwrap_or_default())];
        hash_fields(&mut h, &head);
        hash_fields(&mut h, &upload.fields);
        let done = Arc::new(OnceLock::new());
        let content = std::mem::replace(&mut upload.content, Box::pin(tokio::io::empty()));
        upload.content = Box::pin(HashingReader {
            inner: content,
            hasher: Some(h),
            late: upload.late.clone(),
            done: done.clone(),
        });
        Ok(IdempotencyKey { key: key.to_string(), fingerprint: Fingerprint::Streamed(done) })
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// The fingerprint, once known.
    fn fingerprint(&self) -> Option<&str> {
        match &self.fingerprint {
            Fingerprint::Known(f) => Some(f),
            Fingerprint::Streamed(done) => done.get().map(String::as_str),
        }
    }

    /// What a repeat of a stored request answers: the stored answer when
    /// the request is the same, 422 when it is another one, 409 when
    /// this request's body has not been read whole yet.
    pub fn replay(&self, member: Uuid, stored: StoredAnswer) -> Result<(u16, Bytes)> {
        match self.fingerprint() {
            Some(f) if f == stored.fingerprint => Ok((stored.status, stored.body(member, &self.key)?)),
            Some(_) => Err(Error::invalid(
                "Idempotency-Key",
                "this key was used for another request (method, path or body differ)",
            )),
            None => Err(Error::conflict("a request with this Idempotency-Key is still running")),
        }
    }
}

/// Hashes an upload's content as it is read; at its end adds the text
/// fields that came after it and publishes the fingerprint.
struct HashingReader {
    inner: Pin<Box<dyn tokio::io::AsyncRead + Send>>,
    hasher: Option<Sha256>,
    late: crate::wire::LateFields,
    done: Arc<OnceLock<String>>,
}

impl tokio::io::AsyncRead for HashingReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = self.inner.as_mut().poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let read = &buf.filled()[before..];
            if let Some(h) = self.hasher.as_mut() {
                if !read.is_empty() {
                    h.update(read);
                } else if buf.remaining() > 0 {
                    let mut h = self.hasher.take().expect("checked above");
                    h.update(b"\n");
                    hash_fields(&mut h, &self.late.get());
                    let _ = self.done.set(hex(h.finalize()));
                }
            }
        }
        polled
    }
}

/// Encodes a write's result as the endpoint's answer, when it is one.
pub type AnswerOf = Box<dyn Fn(&dyn Any) -> Option<(u16, Bytes)> + Send + Sync>;

/// What the write path needs to store an answer.
pub(crate) struct Pending {
    member: Uuid,
    key: IdempotencyKey,
    answer_of: AnswerOf,
    stored: AtomicBool,
    /// A write ran under this key.
    wrote: AtomicBool,
}

/// The key in [`IDEMPOTENCY`] of the answer that `lookup` (see
/// [`lookup_of`]) names.
fn key_of(member: Uuid, lookup: &str) -> Vec<u8> {
    Key::new().uuid(member).str(lookup).build()
}

impl AnswerStore for Pending {
    /// Stores the answer if `value` is it and none is stored yet; called
    /// inside the write's transaction.
    fn store_if_answer(&self, w: &mut dyn WriteTxn, now: Timestamp, value: &dyn Any) -> Result<()> {
        self.wrote.store(true, Ordering::Release);
        if self.stored.load(Ordering::Acquire) {
            return Ok(());
        }
        let Some((status, body)) = (self.answer_of)(value) else { return Ok(()) };
        store(w, self.member, &self.key, now, status, &body)?;
        self.stored.store(true, Ordering::Release);
        Ok(())
    }
}

fn store(
    w: &mut dyn WriteTxn,
    member: Uuid,
    key: &IdempotencyKey,
    now: Timestamp,
    status: u16,
    body: &[u8],
) -> Result<()> {
    let fingerprint = key
        .fingerprint()
        .ok_or_else(|| Error::internal("an upload was recorded before its body was read whole"))?;
    let answer = StoredAnswer {
        fingerprint: fingerprint.to_string(),
        status,
        body: String::new(),
        sealed: Some(seal(member, &key.key, body)?),
        stored_at: now,
    };
    let lookup = lookup_of(member, &key.key);
    w.put_record(IDEMPOTENCY, &key_of(member, &lookup), &answer)?;
    let age = Key::new().u64(now.as_millisecond().max(0) as u64).uuid(member).str(&lookup).build();
    w.put(IDEMPOTENCY_AGE, &age, &[])
}

/// The outcome of an idempotent call.
pub enum Idempotent<T> {
    /// Performed now.
    Fresh(T),
    /// Performed before: the stored status and body.
    Replayed { status: u16, body: Bytes },
}

/// Removes a running key from the in-flight set when the call ends,
/// however it ends.
struct Running<'a> {
    set: &'a std::sync::Mutex<HashSet<(Uuid, String)>>,
    entry: (Uuid, String),
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.set.lock().unwrap().remove(&self.entry);
    }
}

impl Board {
    /// The answer stored for `key` of `member`, if any.
    pub async fn stored_answer(&self, member: Uuid, key: &str) -> Result<Option<StoredAnswer>> {
        let k = key_of(member, &lookup_of(member, key));
        self.read(move |r| match r.get(IDEMPOTENCY, &k)? {
            Some(v) => decode(&v).map(Some),
            None => Ok(None),
        })
        .await
    }

    /// Runs `call` once per key of `member`: a repeat with the same
    /// fingerprint replays the stored answer (changing nothing), another
    /// fingerprint is 422, and a repeat while the first still runs is
    /// 409. `call` is given `actor` carrying the key: `answer_of` turns
    /// the result of a write it makes as that actor into the answer to
    /// store, in that write's transaction; `finish` gives the final
    /// answer's status and body for a call that wrote nothing.
    pub async fn idempotent<T, F>(
        &self,
        actor: Actor,
        key: IdempotencyKey,
        answer_of: AnswerOf,
        finish: impl FnOnce(&T) -> Option<(u16, Bytes)>,
        call: impl FnOnce(Actor) -> F,
    ) -> Result<Idempotent<T>>
    where
        F: Future<Output = Result<T>>,
    {
        let member = actor.id();
        let check = |stored: StoredAnswer| -> Result<Idempotent<T>> {
            let (status, body) = key.replay(member, stored)?;
            Ok(Idempotent::Replayed { status, body })
        };
        if let Some(stored) = self.stored_answer(member, &key.key).await? {
            return check(stored);
        }
        let entry = (member, key.key.clone());
        if !self.inner.idempotency_running.lock().unwrap().insert(entry.clone()) {
            return Err(Error::conflict("a request with this Idempotency-Key is still running"));
        }
        let _running = Running { set: &self.inner.idempotency_running, entry };
        // It may have finished between the first look and the insert.
        if let Some(stored) = self.stored_answer(member, &key.key).await? {
            return check(stored);
        }
        let pending = Arc::new(Pending {
            member,
            key: key.clone(),
            answer_of,
            stored: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
        });
        let request = Request {
            answer: Some(pending.clone()),
            ..actor.request().as_deref().cloned().unwrap_or_default()
        };
        let value = call(actor.within(request)).await?;
        if !pending.stored.load(Ordering::Acquire)
            && let Some((status, body)) = finish(&value)
        {
            // A call that changed something stores its answer with the
            // change; one that reached here wrote without recognising
            // its answer, which the declarations must not allow.
            let wrote = pending.wrote.load(Ordering::Acquire);
            debug_assert!(!wrote, "a write under an idempotency key did not store its answer");
            if wrote {
                tracing::error!(key = key.key(), "an idempotent answer was not stored with its change");
            }
            self.write(move |tx| store(tx.w, member, &key, tx.now, status, &body)).await?;
        }
        Ok(Idempotent::Fresh(value))
    }

    /// Removes answers stored more than a day ago (by the board's clock).
    /// Returns how many.
    pub async fn sweep_idempotency(&self) -> Result<usize> {
        self.write(|tx| {
            let cutoff = tx.now.checked_sub(IDEMPOTENCY_TTL).unwrap_or(Timestamp::MIN);
            let end = Key::new().u64(cutoff.as_millisecond().max(0) as u64).build();
            let range = KeyRange { start: std::ops::Bound::Unbounded, end: std::ops::Bound::Excluded(end) };
            let mut old = Vec::new();
            tx.w.scan(IDEMPOTENCY_AGE, range, Direction::Forward, &mut |k, _| {
                old.push(k.to_vec());
                Ok(if old.len() >= 10_000 { Scan::Stop } else { Scan::Continue })
            })?;
            for k in &old {
                let member = uuid_suffix(&k[..24])?;
                let key = std::str::from_utf8(&k[24..]).map_err(Error::internal)?;
                tx.w.delete(IDEMPOTENCY, &key_of(member, key))?;
                tx.w.delete(IDEMPOTENCY_AGE, k)?;
            }
            Ok(old.len())
        })
        .await
    }
}
