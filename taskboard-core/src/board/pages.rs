//! Paging inside an index scan, for every list kept in key order: the
//! scan starts right after the cursor's key, skips `offset` matches and
//! stops once the page is full, so a page reads what it returns (plus
//! the entries a filter passes over), however deep it is. A whole list
//! (no `limit`, no `cursor`) is streamed instead: serialised in chunks as
//! the scan reads it, the scan waiting while the client is behind.

use std::ops::Bound;

use serde::Serialize;

use super::Board;
use crate::error::{Error, Result};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, Table};
use crate::wire::{CursorKind, JsonSink, JsonStream, Page, Paged, encode_cursor};

/// The size a streamed list's chunks grow to before they are sent.
pub const STREAM_CHUNK: usize = 32 * 1024;
/// How many chunks of a streamed list may wait for the client.
pub const STREAM_DEPTH: usize = 2;

/// Makes an index entry (key after the prefix, value) into a list item,
/// or `None` to pass over it.
pub(crate) type ItemOf<'a, T> = dyn FnMut(&[u8], &[u8]) -> Result<Option<T>> + 'a;

/// A page of the entries of `table` under `prefix`, in key order. `item`
/// makes an entry (key after the prefix, value) into an item, or `None`
/// to pass over it. The cursor holds the key (after the prefix) of the
/// page's last item.
pub(crate) fn index_page<T>(
    r: &dyn ReadTxn,
    kind: CursorKind,
    table: Table,
    prefix: &[u8],
    page: &Page,
    item: &mut ItemOf<'_, T>,
) -> Result<Paged<T>> {
    page.check()?;
    let mut range = KeyRange::prefix(prefix);
    if let Some(after) = page.after(kind)? {
        range.start = Bound::Excluded([prefix, &after].concat());
    }
    let mut skip = page.offset.unwrap_or(0) as usize;
    let limit = page.limit.map_or(usize::MAX, |l| l as usize);
    let mut items = Vec::new();
    let mut last = Vec::new();
    r.scan(table, range, Direction::Forward, &mut |k, v| {
        let suffix = &k[prefix.len()..];
        let Some(t) = item(suffix, v)? else { return Ok(Scan::Continue) };
        if skip > 0 {
            skip -= 1;
            return Ok(Scan::Continue);
        }
        items.push(t);
        if items.len() >= limit {
            last = suffix.to_vec();
            return Ok(Scan::Stop);
        }
        Ok(Scan::Continue)
    })?;
    let next = (items.len() == limit).then(|| encode_cursor(kind, &last));
    Ok(Paged { items, next })
}

/// A list kept in an index: the entries of `table` under `prefix`, each
/// made into an item by `item` (given the snapshot, the key after the
/// prefix and the value; `None` passes over it).
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

/// A JSON array written into chunks of about [`STREAM_CHUNK`] bytes,
/// each sent as soon as it is full.
pub(crate) struct ArrayWriter {
    sink: JsonSink,
    buf: Vec<u8>,
    first: bool,
}

impl ArrayWriter {
    pub fn new(sink: JsonSink) -> ArrayWriter {
        let mut buf = Vec::with_capacity(STREAM_CHUNK + 4096);
        buf.push(b'[');
        ArrayWriter { sink, buf, first: true }
    }

    /// Adds an item already serialised; false once the client has gone.
    pub fn push_json(&mut self, json: &[u8]) -> bool {
        self.separate();
        self.buf.extend_from_slice(json);
        self.flush_full()
    }

    /// Serialises and adds an item; false once the client has gone.
    pub fn push(&mut self, item: &impl Serialize) -> Result<bool> {
        self.separate();
        serde_json::to_writer(&mut self.buf, item).map_err(Error::internal)?;
        Ok(self.flush_full())
    }

    /// Closes the array, or ends the stream with the error that stopped it.
    pub fn finish(mut self, result: Result<()>) {
        let last = result.map(|()| {
            self.buf.push(b']');
            std::mem::take(&mut self.buf).into()
        });
        self.sink.send_blocking(last);
    }

    fn separate(&mut self) {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
    }

    fn flush_full(&mut self) -> bool {
        if self.buf.len() < STREAM_CHUNK {
            return true;
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(STREAM_CHUNK + 4096));
        self.sink.send_blocking(Ok(chunk.into()))
    }
}

impl Board {
    /// A page of an index list.
    pub(crate) async fn index_list<T, F>(&self, list: IndexList<F>, page: Page) -> Result<Paged<T>>
    where
        T: Send + 'static,
        F: ItemFn<T>,
    {
        let IndexList { kind, table, prefix, mut item } = list;
        self.read(move |r| index_page(r, kind, table, &prefix, &page, &mut |k, v| item(r, k, v))).await
    }

    /// A whole index list (after `offset`), streamed from one snapshot as
    /// it is read: the JSON array in chunks of about [`STREAM_CHUNK`]
    /// bytes through a channel of [`STREAM_DEPTH`] chunks. The scan waits
    /// while the channel is full, so a slow client holds it back instead
    /// of the list piling up in memory; a client that goes away ends it.
    pub(crate) fn stream_index<T, F>(&self, list: IndexList<F>, page: Page) -> Result<JsonStream>
    where
        T: Serialize,
        F: ItemFn<T>,
    {
        page.check()?;
        let IndexList { table, prefix, mut item, .. } = list;
        self.stream_with(move |r, out| {
            let mut skip = page.offset.unwrap_or(0) as usize;
            r.scan(table, KeyRange::prefix(&prefix), Direction::Forward, &mut |k, v| {
                let Some(t) = item(r, &k[prefix.len()..], v)? else { return Ok(Scan::Continue) };
                if skip > 0 {
                    skip -= 1;
                    return Ok(Scan::Continue);
                }
                Ok(if out.push(&t)? { Scan::Continue } else { Scan::Stop })
            })
        })
    }

    /// Streams the JSON array that `fill` writes from one snapshot, on a
    /// blocking thread.
    pub(crate) fn stream_with(
        &self,
        fill: impl FnOnce(&dyn ReadTxn, &mut ArrayWriter) -> Result<()> + Send + 'static,
    ) -> Result<JsonStream> {
        let (sink, stream) = crate::wire::json_stream(STREAM_DEPTH, self.stream_gauge());
        let board = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut out = ArrayWriter::new(sink);
            let result = board.inner.store.read().and_then(|r| fill(&*r, &mut out));
            out.finish(result);
        });
        Ok(stream)
    }
}
