//! Taskboard's storage behind a trait: an ordered key-value store with named tables,
//! snapshot reads and write transactions run as closures.
//!
//! The board keeps every rule; a backend only stores bytes in the tables of
//! [`tables`] and scans them in key order. Nothing here names redb, so a
//! PostgreSQL backend (one `(key bytea primary key, value bytea)` table per
//! [`Table`]) can implement it without touching the rules.
//!
//! Writes are submitted, not called: a backend may run queued write
//! operations together and make them durable with one sync (group commit),
//! but each operation is still its own transaction — an operation that
//! fails leaves nothing behind, and `done` is called only once the
//! operation's changes are durable.

use std::any::Any;
use std::ops::Bound;

use taskboard_wire::error::Error;

pub mod codec;
pub mod metrics;
pub mod overlay;
pub mod postgres;
pub mod private;
pub mod redb;
pub mod tables;

pub use tables::Table;

/// Order of a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

/// Bounds of a scan over encoded keys.
#[derive(Debug, Clone)]
pub struct KeyRange {
    pub start: Bound<Vec<u8>>,
    pub end: Bound<Vec<u8>>,
}

impl KeyRange {
    /// Every key of the table.
    pub fn all() -> KeyRange {
        KeyRange { start: Bound::Unbounded, end: Bound::Unbounded }
    }

    /// The bounds as borrowed slices, the form range APIs take.
    pub fn bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        fn borrowed(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
            match b {
                Bound::Included(v) => Bound::Included(v.as_slice()),
                Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
                Bound::Unbounded => Bound::Unbounded,
            }
        }
        (borrowed(&self.start), borrowed(&self.end))
    }

    /// Every key that starts with `prefix`.
    pub fn prefix(prefix: &[u8]) -> KeyRange {
        let start = Bound::Included(prefix.to_vec());
        let mut end = prefix.to_vec();
        // The smallest key greater than every key with this prefix: drop
        // trailing 0xff bytes and increment the last one.
        while end.last() == Some(&0xff) {
            end.pop();
        }
        let end = match end.last_mut() {
            Some(last) => {
                *last += 1;
                Bound::Excluded(end)
            }
            None => Bound::Unbounded,
        };
        KeyRange { start, end }
    }
}

/// Whether a scan goes on after the current entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    Continue,
    Stop,
}

/// The visitor of a scan; it may fail with a board error (a record that
/// does not decode, for instance), which ends the scan.
pub type Visitor<'a> = dyn FnMut(&[u8], &[u8]) -> Result<Scan, Error> + 'a;

/// A consistent snapshot of the store.
pub trait ReadTxn {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error>;
    fn scan(
        &self,
        table: Table,
        range: KeyRange,
        direction: Direction,
        visit: &mut Visitor<'_>,
    ) -> Result<(), Error>;
}

/// A write transaction. Reads see the transaction's own writes.
pub trait WriteTxn: ReadTxn {
    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), Error>;
    /// Removes a key; true when it existed.
    fn delete(&mut self, table: Table, key: &[u8]) -> Result<bool, Error>;
    /// Removes a key, not telling whether it existed: a buffered
    /// transaction then need not read it first.
    fn remove(&mut self, table: Table, key: &[u8]) -> Result<(), Error> {
        self.delete(table, key).map(drop)
    }
}

/// The output of a write operation, handed back to whoever submitted it.
pub type Output = Box<dyn Any + Send>;

/// One write operation: `run` inside a transaction, then `done` with its
/// outcome once that transaction is durable (or failed).
pub struct WriteOp {
    pub run: RunFn,
    pub done: DoneFn,
}

/// The body of a write operation.
pub type RunFn = Box<dyn FnOnce(&mut dyn WriteTxn) -> Result<Output, Error> + Send>;
/// The completion of a write operation, called once it is durable or failed.
pub type DoneFn = Box<dyn FnOnce(Result<Output, Error>) + Send>;

/// A storage backend.
pub trait Storage: Send + Sync + 'static {
    /// A snapshot for reading. Blocking: call it off the async threads.
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, Error>;
    /// A snapshot for reading again events already published: each of
    /// them, and every event before it, has committed, so a backend that
    /// holds its readers' events back to a mark (PostgreSQL, whose mark
    /// follows the whole cluster's oldest writing transaction) need not
    /// here. The event hub reads with it what fell out of its memory.
    /// Blocking.
    fn read_published(&self) -> Result<Box<dyn ReadTxn + '_>, Error> {
        self.read()
    }
    /// Queues a write operation. Never blocks; `done` is called from the
    /// backend's writer, in commit order.
    fn submit(&self, op: WriteOp);
    /// Copies a consistent snapshot of the whole store into a new file at
    /// `path` (used by backups).
    fn backup_to(&self, path: &std::path::Path) -> Result<(), Error>;
    /// The backend's name, for monitoring (`redb`, `postgres`).
    fn backend(&self) -> &'static str {
        "other"
    }
    /// What the backend's writer records of its batches, if it records.
    fn writer_metrics(&self) -> Option<std::sync::Arc<crate::metrics::WriterMetrics>> {
        None
    }
    /// For a store that other processes write to as well: a channel that
    /// changes when they may have committed events (its value is the
    /// newest seq they told of, a hint only: the events table is the
    /// truth). `None` for a store that this process alone writes.
    fn commits_elsewhere(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}

/// Calls `step` on the items of `iter` in `direction` until it answers
/// [`Scan::Stop`] or fails: the walk of every backend's scan.
pub(crate) fn walk<T>(
    iter: impl DoubleEndedIterator<Item = T>,
    direction: Direction,
    mut step: impl FnMut(T) -> Result<Scan, Error>,
) -> Result<(), Error> {
    let mut run = |items: &mut dyn Iterator<Item = T>| {
        for item in items {
            if step(item)? == Scan::Stop {
                break;
            }
        }
        Ok(())
    };
    match direction {
        Direction::Forward => run(&mut iter.into_iter()),
        Direction::Reverse => run(&mut iter.rev()),
    }
}

/// Hands `op` to a backend's writer thread through its queue; fails the
/// operation at once when the writer has stopped or the store is closed.
pub(crate) fn queue_write(queue: &std::sync::Mutex<Option<std::sync::mpsc::Sender<WriteOp>>>, op: WriteOp) {
    let queue = queue.lock().unwrap();
    match queue.as_ref() {
        Some(tx) => {
            if let Err(std::sync::mpsc::SendError(op)) = tx.send(op) {
                (op.done)(Err(Error::internal("storage writer stopped")));
            }
        }
        None => (op.done)(Err(Error::internal("storage is closed"))),
    }
}
