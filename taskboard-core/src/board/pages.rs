//! Lists, read in one place for every list endpoint.
//!
//! A [`List`] is what a list's board function returns: how to read it
//! from one snapshot, in order, and the page asked for. From it come both
//! the typed answer (a [`Paged`], what an embedding program and the
//! command line's local mode get) and the wire form the server sends
//! ([`List::encode`]): a page, or a whole list that turns out small, is
//! rendered in one go; a whole list that does not is streamed with bounded
//! memory. Reading a page starts right after the cursor's key, skips
//! `offset` matches and stops once the page is full, so a page reads what
//! it returns (plus the entries a filter passes over), however deep it is.

use std::future::{Future, IntoFuture};
use std::ops::Bound;
use std::pin::Pin;

use bytes::{Bytes, BytesMut};
use serde::Serialize;

use super::Board;
use crate::error::{Error, Result};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, Table};
use crate::wire::{CursorKind, Encoded, JsonSink, Page, Paged, encode_cursor};

/// The size a streamed list's chunks grow to before they are sent.
pub const STREAM_CHUNK: usize = 32 * 1024;
/// How many chunks of a streamed list may wait for the client.
pub const STREAM_DEPTH: usize = 2;
/// A whole list whose JSON stays within this size is sent in one go, with
/// its length; a longer one is streamed from there on. What one request
/// holds at most before its list streams.
pub const ONE_GO: usize = 128 * 1024;

/// Where the reading of a list starts: after the sort key of the
/// cursor, skipping `skip` matches.
pub(crate) struct Start {
    pub after: Option<Vec<u8>>,
    pub skip: usize,
}

/// An item handed to a list's output: a value, or a value the board keeps
/// rendered as JSON (which is then sent as it is).
pub(crate) enum Item<'a, T> {
    Value(T),
    Rendered { json: &'a dyn Fn() -> std::sync::Arc<str>, value: &'a dyn Fn() -> T },
}

/// Where a list's reader puts its items, in order; `key` gives the sort
/// key of the item (kept for the cursor of a full page). `Stop` once the
/// page is full or the client has gone.
pub(crate) trait Out<T> {
    fn push(&mut self, item: Item<'_, T>, key: &dyn Fn() -> Vec<u8>) -> Result<Scan>;
}

/// Reads a list from a snapshot into an output.
type Reader<T> = Box<dyn FnOnce(&dyn ReadTxn, Start, &mut dyn Out<T>) -> Result<()> + Send>;

/// A list of `T`: how to read it, and the page asked for. `.await` it
/// for the page of items; the server sends [`List::encode`].
#[must_use = "a list is read when awaited or encoded"]
pub struct List<T> {
    board: Board,
    kind: CursorKind,
    page: Page,
    read: Reader<T>,
}

impl<T: Serialize + Send + 'static> List<T> {
    /// A list read by `read` from a snapshot, in the order of its cursor
    /// kind's sort keys.
    pub(crate) fn new(
        board: &Board,
        kind: CursorKind,
        page: Page,
        read: impl FnOnce(&dyn ReadTxn, Start, &mut dyn Out<T>) -> Result<()> + Send + 'static,
    ) -> List<T> {
        List { board: board.clone(), kind, page, read: Box::new(read) }
    }

    /// The page asked for, as items, with the cursor of the next page when
    /// it is full.
    pub async fn page(self) -> Result<Paged<T>> {
        let List { board, kind, page, read } = self;
        let start = start(kind, &page)?;
        let limit = limit(&page);
        board
            .read(move |r| {
                let mut out = Items { items: Vec::new(), limit, last: None };
                read(r, start, &mut out)?;
                let next = out.last.map(|key| encode_cursor(kind, &key));
                Ok(Paged { items: out.items, next })
            })
            .await
    }

    /// The list in its wire form. A page (a `limit` or a `cursor`) is
    /// rendered in one go with the cursor of the next page; a whole list
    /// too when its JSON stays within [`ONE_GO`] bytes, and streamed from
    /// there otherwise, in chunks of about [`STREAM_CHUNK`] bytes through
    /// a channel of [`STREAM_DEPTH`] chunks: the reading waits while the
    /// channel is full, so a slow client holds it back instead of the list
    /// piling up in memory, and a client that goes away ends it.
    pub async fn encode(self) -> Result<Encoded> {
        let List { board, kind, page, read } = self;
        let start = start(kind, &page)?;
        if !page.is_whole() {
            let limit = limit(&page);
            return board
                .read(move |r| {
                    let mut out = Json::new(limit, None);
                    read(r, start, &mut out)?;
                    let next = out.last.take().map(|key| encode_cursor(kind, &key));
                    Ok(Encoded::Page { json: out.close(), next })
                })
                .await;
        }
        let (first_tx, first_rx) = tokio::sync::oneshot::channel();
        let (sink, stream) = crate::wire::json_stream(STREAM_DEPTH, board.stream_gauge());
        let store = board.clone();
        tokio::task::spawn_blocking(move || {
            let mut out = Json::new(usize::MAX, Some(Streaming { first: Some(first_tx), sink }));
            let result = store.inner.store.read().and_then(|r| read(&*r, start, &mut out));
            out.finish(result);
        });
        match first_rx.await.map_err(|_| Error::internal("the list's reader stopped"))? {
            First::Whole(json) => Ok(Encoded::Page { json, next: None }),
            First::Streaming => Ok(Encoded::Stream(stream)),
            First::Failed(e) => Err(e),
        }
    }
}

impl<T: Serialize + Send + 'static> IntoFuture for List<T> {
    type Output = Result<Paged<T>>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Paged<T>>> + Send>>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.page())
    }
}

fn start(kind: CursorKind, page: &Page) -> Result<Start> {
    page.check()?;
    Ok(Start { after: page.after(kind)?, skip: page.offset.unwrap_or(0) as usize })
}

fn limit(page: &Page) -> usize {
    page.limit.map_or(usize::MAX, |l| l as usize)
}

/// The output that collects items.
struct Items<T> {
    items: Vec<T>,
    limit: usize,
    last: Option<Vec<u8>>,
}

impl<T> Out<T> for Items<T> {
    fn push(&mut self, item: Item<'_, T>, key: &dyn Fn() -> Vec<u8>) -> Result<Scan> {
        self.items.push(match item {
            Item::Value(t) => t,
            Item::Rendered { value, .. } => value(),
        });
        if self.items.len() >= self.limit {
            self.last = Some(key());
            return Ok(Scan::Stop);
        }
        Ok(Scan::Continue)
    }
}

/// What the reader of a streamed list tells first: the whole list, or
/// that it streams, or the error that stopped it before anything was sent.
enum First {
    Whole(Bytes),
    Streaming,
    Failed(Error),
}

/// The streaming end of a whole list's output.
struct Streaming {
    /// Until the list is known to be longer than [`ONE_GO`].
    first: Option<tokio::sync::oneshot::Sender<First>>,
    sink: JsonSink,
}

/// The output that writes a JSON array: whole (a page, `stream` none), or
/// streamed once it is longer than [`ONE_GO`].
struct Json {
    buf: BytesMut,
    count: usize,
    limit: usize,
    last: Option<Vec<u8>>,
    stream: Option<Streaming>,
    gone: bool,
}

impl Json {
    fn new(limit: usize, stream: Option<Streaming>) -> Json {
        let mut buf = BytesMut::with_capacity(16 * 1024);
        buf.extend_from_slice(b"[");
        Json { buf, count: 0, limit, last: None, stream, gone: false }
    }

    fn close(mut self) -> Bytes {
        self.buf.extend_from_slice(b"]");
        self.buf.freeze()
    }

    /// Sends what is written once there is enough of it; false once the
    /// client has gone.
    fn flush(&mut self) -> bool {
        let Some(s) = &mut self.stream else { return true };
        let threshold = if s.first.is_some() { ONE_GO } else { STREAM_CHUNK };
        if self.buf.len() < threshold {
            return true;
        }
        if let Some(first) = s.first.take()
            && first.send(First::Streaming).is_err()
        {
            return false;
        }
        // The list held back until now goes out in chunks like the rest.
        while self.buf.len() >= STREAM_CHUNK {
            let chunk = self.buf.split_to(STREAM_CHUNK).freeze();
            if !s.sink.send_blocking(Ok(chunk)) {
                return false;
            }
        }
        true
    }

    /// Ends a whole list: closes the array, or ends the stream with the
    /// error that stopped it.
    fn finish(mut self, result: Result<()>) {
        let Some(mut s) = self.stream.take() else { return };
        match (s.first.take(), result) {
            (Some(first), Ok(())) => {
                self.buf.extend_from_slice(b"]");
                let _ = first.send(First::Whole(self.buf.freeze()));
            }
            (Some(first), Err(e)) => {
                let _ = first.send(First::Failed(e));
            }
            (None, Ok(())) => {
                self.buf.extend_from_slice(b"]");
                s.sink.send_blocking(Ok(self.buf.freeze()));
            }
            (None, Err(e)) => {
                s.sink.send_blocking(Err(e));
            }
        }
    }
}

impl<T: Serialize> Out<T> for Json {
    fn push(&mut self, item: Item<'_, T>, key: &dyn Fn() -> Vec<u8>) -> Result<Scan> {
        if self.gone {
            return Ok(Scan::Stop);
        }
        if self.count > 0 {
            self.buf.extend_from_slice(b",");
        }
        match item {
            Item::Value(t) => {
                serde_json::to_writer(bytes::BufMut::writer(&mut self.buf), &t).map_err(Error::internal)?
            }
            Item::Rendered { json, .. } => self.buf.extend_from_slice(json().as_bytes()),
        }
        self.count += 1;
        if self.count >= self.limit {
            self.last = Some(key());
            return Ok(Scan::Stop);
        }
        if !self.flush() {
            self.gone = true;
            return Ok(Scan::Stop);
        }
        Ok(Scan::Continue)
    }
}

/// A list kept in an index: the entries of `table` under `prefix`, each
/// made into an item by `item` (given the snapshot, the key after the
/// prefix and the value; `None` passes over it). The cursor holds the key
/// (after the prefix) of the page's last item.
pub(crate) struct IndexList<F> {
    pub kind: CursorKind,
    pub table: Table,
    pub prefix: Vec<u8>,
    pub item: F,
}

/// What makes an index entry into a list item: given the snapshot, the
/// key after the prefix and the value; `None` passes over the entry.
pub(crate) trait ItemFn<T>:
    FnMut(&dyn ReadTxn, &[u8], &[u8]) -> Result<Option<T>> + Send + 'static
{
}

impl<T, F> ItemFn<T> for F where F: FnMut(&dyn ReadTxn, &[u8], &[u8]) -> Result<Option<T>> + Send + 'static {}

impl<F> IndexList<F> {
    pub fn new<T>(kind: CursorKind, table: Table, prefix: &[u8], item: F) -> IndexList<F>
    where
        F: FnMut(&dyn ReadTxn, &[u8], &[u8]) -> Result<Option<T>> + Send + 'static,
    {
        IndexList { kind, table, prefix: prefix.to_vec(), item }
    }
}

impl Board {
    /// An index list, after `check` has found what the list belongs to
    /// (in the same snapshot).
    pub(crate) fn index_list<T, F>(
        &self,
        list: IndexList<F>,
        page: Page,
        check: impl FnOnce(&dyn ReadTxn) -> Result<()> + Send + 'static,
    ) -> List<T>
    where
        T: Serialize + Send + 'static,
        F: ItemFn<T>,
    {
        let IndexList { kind, table, prefix, mut item } = list;
        List::new(self, kind, page, move |r, start, out| {
            check(r)?;
            let mut range = KeyRange::prefix(&prefix);
            if let Some(after) = start.after {
                range.start = Bound::Excluded([prefix.as_slice(), &after].concat());
            }
            let mut skip = start.skip;
            r.scan(table, range, Direction::Forward, &mut |k, v| {
                let suffix = &k[prefix.len()..];
                let Some(t) = item(r, suffix, v)? else { return Ok(Scan::Continue) };
                if skip > 0 {
                    skip -= 1;
                    return Ok(Scan::Continue);
                }
                out.push(Item::Value(t), &|| suffix.to_vec())
            })
        })
    }
}
