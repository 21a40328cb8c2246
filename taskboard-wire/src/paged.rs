//! Paged answers: a page of a list and the cursor of the page after it.
//!
//! A list answer travels as a JSON array. When more items follow, the
//! cursor of the next page goes beside the body, never inside it: the
//! server sends it as a `Link: <…?cursor=…>; rel="next"` header, the client
//! reads it back from there, so the JSON of a list is the same whether it
//! is paged or not.
//!
//! A cursor is opaque to clients. Inside, it is a tag naming the list kind
//! and the sort key of the last item of the page, so the next scan starts
//! right after that item in the index: its cost does not depend on how
//! deep the page is.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use serde::Serialize;

use crate::error::{Error, Result};

/// A page of a list and the cursor of the next page, if more items may
/// follow. Serialises as the JSON array of its items.
#[derive(Debug, Clone, PartialEq)]
pub struct Paged<T> {
    pub items: Vec<T>,
    /// The opaque cursor of the next page.
    pub next: Option<String>,
}

impl<T> Paged<T> {
    /// A whole list: no next page.
    pub fn all(items: Vec<T>) -> Paged<T> {
        Paged { items, next: None }
    }

    pub fn into_items(self) -> Vec<T> {
        self.items
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Paged<U> {
        Paged { items: self.items.into_iter().map(f).collect(), next: self.next }
    }
}

impl<T> Default for Paged<T> {
    fn default() -> Paged<T> {
        Paged { items: Vec::new(), next: None }
    }
}

impl<T> std::ops::Deref for Paged<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.items
    }
}

impl<T> std::ops::DerefMut for Paged<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.items
    }
}

impl<T> IntoIterator for Paged<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a Paged<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<T: Serialize> Serialize for Paged<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.items.serialize(s)
    }
}

/// The list a cursor belongs to: a cursor of one list is refused by
/// another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CursorKind {
    Tasks = 1,
    Messages = 2,
    Members = 3,
    Projects = 4,
    Labels = 5,
    Files = 6,
    Links = 7,
    Actions = 8,
    Steps = 9,
    ProjectMembers = 10,
    Replies = 11,
    Runs = 12,
}

/// Version of the cursor layout; a cursor of another version is refused
/// (422 naming `cursor`), and the client starts again from the first page.
const CURSOR_VERSION: u8 = 1;

/// Encodes the sort key of the last item of a page as a cursor.
pub fn encode_cursor(kind: CursorKind, key: &[u8]) -> String {
    let mut raw = Vec::with_capacity(key.len() + 2);
    raw.push(CURSOR_VERSION);
    raw.push(kind as u8);
    raw.extend_from_slice(key);
    URL_SAFE_NO_PAD.encode(raw)
}

/// The sort key inside a cursor of `kind`; 422 naming `cursor` for
/// anything else.
pub fn decode_cursor(kind: CursorKind, cursor: &str) -> Result<Vec<u8>> {
    let bad = || {
        Error::invalid("cursor", "not a cursor of this list; take it from the Link header of the page before")
    };
    let raw = URL_SAFE_NO_PAD.decode(cursor.trim()).map_err(|_| bad())?;
    match raw.as_slice() {
        [CURSOR_VERSION, k, key @ ..] if *k == kind as u8 && key.len() <= 512 => Ok(key.to_vec()),
        _ => Err(bad()),
    }
}

/// A JSON array sent as it is produced: chunks of bytes through a bounded
/// channel, so the producer waits while the consumer is behind.
pub struct JsonStream {
    rx: tokio::sync::mpsc::Receiver<Result<Bytes>>,
    gauge: Arc<StreamGauge>,
}

/// The producing end of a [`JsonStream`].
pub struct JsonSink {
    tx: tokio::sync::mpsc::Sender<Result<Bytes>>,
    gauge: Arc<StreamGauge>,
}

/// What the streams of a board hold in memory: bytes produced and not
/// yet taken by the consumer (the server's response body), and the most
/// there ever was. A probe of the backpressure, read by tests.
#[derive(Debug, Default)]
pub struct StreamGauge {
    pending: AtomicUsize,
    high_water: AtomicUsize,
}

impl StreamGauge {
    /// The most bytes ever waiting in the streams at once.
    pub fn high_water(&self) -> usize {
        self.high_water.load(Ordering::Relaxed)
    }
}

/// A stream of `depth` chunks at most, counted by `gauge`.
pub fn json_stream(depth: usize, gauge: Arc<StreamGauge>) -> (JsonSink, JsonStream) {
    let (tx, rx) = tokio::sync::mpsc::channel(depth);
    (JsonSink { tx, gauge: gauge.clone() }, JsonStream { rx, gauge })
}

impl JsonSink {
    /// Sends a chunk, waiting while the stream is full: call it off the
    /// async threads. False once the consumer has gone.
    pub fn send_blocking(&self, chunk: Result<Bytes>) -> bool {
        let len = chunk.as_ref().map_or(0, |b| b.len());
        let now = self.gauge.pending.fetch_add(len, Ordering::Relaxed) + len;
        self.gauge.high_water.fetch_max(now, Ordering::Relaxed);
        if self.tx.blocking_send(chunk).is_err() {
            self.gauge.pending.fetch_sub(len, Ordering::Relaxed);
            return false;
        }
        true
    }
}

impl JsonStream {
    /// The next chunk; `None` at the end.
    pub async fn next(&mut self) -> Option<Result<Bytes>> {
        let chunk = self.rx.recv().await?;
        if let Ok(b) = &chunk {
            self.gauge.pending.fetch_sub(b.len(), Ordering::Relaxed);
        }
        Some(chunk)
    }
}

impl Drop for JsonStream {
    fn drop(&mut self) {
        self.rx.close();
        while let Ok(chunk) = self.rx.try_recv() {
            if let Ok(b) = chunk {
                self.gauge.pending.fetch_sub(b.len(), Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_belong_to_one_list() {
        let c = encode_cursor(CursorKind::Tasks, b"key");
        assert_eq!(decode_cursor(CursorKind::Tasks, &c).unwrap(), b"key");
        assert!(decode_cursor(CursorKind::Messages, &c).is_err());
        assert!(decode_cursor(CursorKind::Tasks, "not base64!").is_err());
        assert!(decode_cursor(CursorKind::Tasks, "").is_err());
    }

    #[test]
    fn a_page_serialises_as_its_array() {
        let p = Paged { items: vec![1, 2], next: Some("x".into()) };
        assert_eq!(serde_json::to_string(&p).unwrap(), "[1,2]");
    }
}
