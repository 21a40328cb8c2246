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

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};

use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::error::{Error, Result};
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
