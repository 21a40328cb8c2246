//! The `Idempotency-Key` of a request: the key as sent, checked, and the
//! fingerprint of the request it came with (method, path with query,
//! body), which tells a retry of the same request from another request
//! reusing the key.
//!
//! An upload's body is hashed as it streams: its fingerprint is known
//! once the content has been read to its end, which is before the write
//! that records the file.
//!
//! The keys whose first request is still running are held in memory
//! (`Running`), so a repeat meanwhile is 409; after a crash nothing is
//! running.
//!
//! The answers kept under idempotency keys: stored in the transaction of
//! the change they answer, so a retry after a crash either finds the
//! answer or finds nothing changed, and sealed, so an answer holding a
//! secret cannot be read from the store without its key.
//!
//! Layout: [`IDEMPOTENCY`] maps `member uuid (16) ‖ lookup` to the
//! [`StoredAnswer`], where `lookup` is [`lookup_of`] the member and the
//! key; [`IDEMPOTENCY_AGE`] maps `stored at, ms (8) ‖ member uuid (16) ‖
//! lookup` to nothing, for the sweep.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::records::RecordWrites;
use crate::storage::codec::{Key, decode, uuid_suffix};
use crate::storage::tables::{IDEMPOTENCY, IDEMPOTENCY_AGE};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, WriteTxn};
pub use crate::wire::Answer;
use crate::wire::{LateFields, Upload};

/// An idempotency key with the fingerprint of its request.
#[derive(Debug, Clone)]
pub struct IdempotencyKey {
    key: String,
    fingerprint: Fingerprint,
}

/// The fingerprint of a request: known from the start, or, for an
/// upload, once its content has streamed to its end.
#[derive(Debug, Clone)]
enum Fingerprint {
    Known(String),
    Streamed(Arc<OnceLock<String>>),
}

pub(super) fn hex(hash: impl AsRef<[u8]>) -> String {
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
    /// Whether a request may carry a key: a POST, PATCH or DELETE by a
    /// member (docs/rules.md, safe retries); elsewhere the header is
    /// left unread.
    pub fn applies(method: &str, by_member: bool) -> bool {
        by_member && matches!(method, "POST" | "PATCH" | "DELETE")
    }

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
        upload: &mut Upload,
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
    pub(super) fn fingerprint(&self) -> Option<&str> {
        match &self.fingerprint {
            Fingerprint::Known(f) => Some(f),
            Fingerprint::Streamed(done) => done.get().map(String::as_str),
        }
    }
}

/// Hashes an upload's content as it is read; at its end adds the text
/// fields that came after it and publishes the fingerprint.
struct HashingReader {
    inner: Pin<Box<dyn tokio::io::AsyncRead + Send>>,
    hasher: Option<Sha256>,
    late: LateFields,
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

/// The idempotency keys whose first request is still running, by member.
#[derive(Debug, Default)]
pub(crate) struct Running(Mutex<HashSet<(Uuid, String)>>);

/// A key held as running; let go when the request ends, however it ends.
pub(super) struct Held {
    running: Arc<Running>,
    entry: (Uuid, String),
}

impl Held {
    /// Holds `key` of `member` as running: 409 when it already is (a
    /// repeat while the first request runs).
    pub(super) fn hold(running: &Arc<Running>, member: Uuid, key: &IdempotencyKey) -> Result<Held> {
        let entry = (member, key.key.clone());
        if !running.0.lock().unwrap().insert(entry.clone()) {
            return Err(Error::conflict("a request with this Idempotency-Key is still running"));
        }
        Ok(Held { running: running.clone(), entry })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.running.0.lock().unwrap().remove(&self.entry);
    }
}

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

impl StoredAnswer {
    /// What a repeat of the stored request answers: the stored answer
    /// when `key` comes with the same request, 422 when with another
    /// one, 409 when this request's body has not been read whole yet.
    pub(super) fn replay(self, member: Uuid, key: &IdempotencyKey) -> Result<(u16, Bytes)> {
        match key.fingerprint() {
            Some(f) if f == self.fingerprint => {
                let body = match &self.sealed {
                    Some(sealed) => Bytes::from(open(member, key.key(), sealed)?),
                    None => Bytes::from(self.body),
                };
                Ok((self.status, body))
            }
            Some(_) => Err(Error::invalid(
                "Idempotency-Key",
                "this key was used for another request (method, path or body differ)",
            )),
            None => Err(Error::conflict("a request with this Idempotency-Key is still running")),
        }
    }
}

/// The key in [`IDEMPOTENCY`] of the answer that `lookup` (see
/// [`lookup_of`]) names.
fn key_of(member: Uuid, lookup: &str) -> Vec<u8> {
    Key::new().uuid(member).str(lookup).build()
}

/// The answer stored for `key` of `member`, if any.
pub(super) fn load(r: &dyn ReadTxn, member: Uuid, key: &str) -> Result<Option<StoredAnswer>> {
    match r.get(IDEMPOTENCY, &key_of(member, &lookup_of(member, key)))? {
        Some(v) => decode(&v).map(Some),
        None => Ok(None),
    }
}

/// Stores the answer `status` and `body` for `key` of `member`, sealed,
/// in the transaction of `w`.
pub(super) fn store(
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
        sealed: Some(seal(member, key.key(), body)?),
        stored_at: now,
    };
    let lookup = lookup_of(member, key.key());
    w.put_record(IDEMPOTENCY, &key_of(member, &lookup), &answer)?;
    let age = Key::new().u64(now.as_millisecond().max(0) as u64).uuid(member).str(&lookup).build();
    w.put(IDEMPOTENCY_AGE, &age, &[])
}

/// Removes up to 10,000 answers stored more than [`IDEMPOTENCY_TTL`]
/// before `now`. Returns how many.
pub(super) fn sweep(w: &mut dyn WriteTxn, now: Timestamp) -> Result<usize> {
    let cutoff = now.checked_sub(IDEMPOTENCY_TTL).unwrap_or(Timestamp::MIN);
    let end = Key::new().u64(cutoff.as_millisecond().max(0) as u64).build();
    let range = KeyRange { start: std::ops::Bound::Unbounded, end: std::ops::Bound::Excluded(end) };
    let mut old = Vec::new();
    w.scan(IDEMPOTENCY_AGE, range, Direction::Forward, &mut |k, _| {
        old.push(k.to_vec());
        Ok(if old.len() >= 10_000 { Scan::Stop } else { Scan::Continue })
    })?;
    for k in &old {
        let member = uuid_suffix(&k[..24])?;
        let lookup = std::str::from_utf8(&k[24..]).map_err(Error::internal)?;
        w.delete(IDEMPOTENCY, &key_of(member, lookup))?;
        w.delete(IDEMPOTENCY_AGE, k)?;
    }
    Ok(old.len())
}
