//! The redb backend: a file, or redb's in-memory backend for tests.
//!
//! One writer thread owns all write transactions. It takes every queued
//! operation at once (up to [`MAX_BATCH`]) and runs them in one durable
//! transaction, each operation buffered in an [`Overlay`] and applied only
//! if it succeeds. So a batch costs one commit and one fsync however many
//! writers queued into it, and an operation that fails leaves nothing.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use redb::{Database, ReadOnlyTable, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};

use super::overlay::Overlay;
use super::tables::{self, Table};
use super::{Direction, DoneFn, KeyRange, Output, ReadTxn, Scan, Storage, Visitor, WriteOp, WriteTxn};
use crate::metrics::WriterMetrics;
use taskboard_wire::error::Error;

/// Most operations committed under one sync.
pub const MAX_BATCH: usize = 1024;
/// redb's page cache unless told otherwise (pages read, and pages
/// written but not yet on disk). redb's own default (1 GiB) lets the
/// memory of a server follow the size of its data; pages beyond the
/// cache are read again through the operating system's page cache,
/// which is not the process's memory, and the indexes keep the pages one
/// request touches few.
pub const DEFAULT_CACHE_BYTES: usize = 16 << 20;

type Def = TableDefinition<'static, &'static [u8], &'static [u8]>;

fn def(table: Table) -> Def {
    TableDefinition::new(table.name)
}

fn storage_err(e: impl std::fmt::Display) -> Error {
    Error::internal(format!("redb: {e}"))
}

/// A board store kept in redb.
pub struct RedbStore {
    db: Arc<Database>,
    metrics: Arc<WriterMetrics>,
    queue: Mutex<Option<mpsc::Sender<WriteOp>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl RedbStore {
    /// Opens (or creates) the database file at `path`, with a page cache
    /// of [`DEFAULT_CACHE_BYTES`].
    pub fn open(path: &Path) -> Result<RedbStore, Error> {
        RedbStore::open_with_cache(path, DEFAULT_CACHE_BYTES)
    }

    /// Opens (or creates) the database file at `path`, with a page cache
    /// (reads and not yet written pages together) of at most
    /// `cache_bytes`.
    pub fn open_with_cache(path: &Path, cache_bytes: usize) -> Result<RedbStore, Error> {
        drop(crate::private::open_or_create(path)?);
        let db = Database::builder().set_cache_size(cache_bytes).create(path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => Error::new(
                taskboard_wire::ErrorKind::Conflict,
                format!(
                    "the database {} is already open in another process (is a server running on this data directory?)",
                    path.display()
                ),
            ),
            e => storage_err(e),
        })?;
        RedbStore::start(db)
    }

    /// A database that lives in memory only.
    pub fn in_memory() -> Result<RedbStore, Error> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(storage_err)?;
        RedbStore::start(db)
    }

    fn start(db: Database) -> Result<RedbStore, Error> {
        // Create every table up front so read transactions never meet a
        // missing one.
        let txn = db.begin_write().map_err(storage_err)?;
        for &table in tables::ALL {
            txn.open_table(def(table)).map_err(storage_err)?;
        }
        for &name in tables::RETIRED {
            txn.delete_table(Def::new(name)).map_err(storage_err)?;
        }
        txn.commit().map_err(storage_err)?;

        let db = Arc::new(db);
        let metrics = Arc::new(WriterMetrics::default());
        let (tx, rx) = mpsc::channel::<WriteOp>();
        let writer_db = db.clone();
        let writer_metrics = metrics.clone();
        let writer = std::thread::Builder::new()
            .name("taskboard-writer".into())
            .spawn(move || write_loop(&writer_db, &writer_metrics, rx))
            .map_err(storage_err)?;
        Ok(RedbStore { db, metrics, queue: Mutex::new(Some(tx)), writer: Mutex::new(Some(writer)) })
    }

    /// Stops the writer after the queued operations are committed.
    pub fn close(&self) {
        self.queue.lock().unwrap().take();
        if let Some(handle) = self.writer.lock().unwrap().take() {
            // The last handle on the store can be dropped by a completion
            // callback, on the writer thread itself: it then ends on its
            // own once the queue is closed.
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }
}

impl Drop for RedbStore {
    fn drop(&mut self) {
        self.close();
    }
}

fn write_loop(db: &Database, metrics: &WriterMetrics, rx: mpsc::Receiver<WriteOp>) {
    let mut batch: Vec<WriteOp> = Vec::with_capacity(MAX_BATCH);
    while let Ok(first) = rx.recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        let started = Instant::now();
        let operations = batch.len();
        let (outcomes, committed) = run_batch(db, metrics, batch.drain(..));
        // A batch that wrote nothing was never a transaction to make
        // durable: the batch figures count the ones that were, so that
        // every batch counted has its commit (or its failure).
        if committed != Committed::Nothing {
            metrics.batch_operations.observe(operations as f64);
            metrics.batch_seconds.observe_duration(started.elapsed());
        }
        for (done, outcome) in outcomes {
            done(outcome);
        }
    }
}

/// Each operation's completion with its outcome.
type Outcomes = Vec<(DoneFn, Result<Output, Error>)>;

/// What became of a batch's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Committed {
    /// Its writes are durable, or it failed as a whole.
    Done,
    /// No operation wrote anything: aborted, with no commit and no sync.
    Nothing,
}

/// Runs a batch of operations in one durable transaction. Each operation
/// writes into its own [`Overlay`]; only the writes of an operation that
/// succeeds are applied to the transaction, so each stays all-or-nothing
/// while the batch pays for one commit and one sync.
fn run_batch(
    db: &Database,
    metrics: &WriterMetrics,
    ops: impl Iterator<Item = WriteOp>,
) -> (Outcomes, Committed) {
    let mut outcomes: Outcomes = Vec::new();
    let txn = match db.begin_write() {
        Ok(txn) => txn,
        Err(e) => {
            let e = storage_err(e);
            metrics.failed_batches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return (ops.map(|op| (op.done, Err(e.clone()))).collect(), Committed::Done);
        }
    };
    let mut broken: Option<Error> = None;
    let mut wrote = false;
    {
        let mut w = RedbWrite { txn: &txn, open: RefCell::new(Vec::new()) };
        for op in ops {
            if let Some(e) = &broken {
                outcomes.push((op.done, Err(e.clone())));
                continue;
            }
            let mut overlay = Overlay::new(&w);
            let result = catch_unwind(AssertUnwindSafe(|| (op.run)(&mut overlay)))
                .unwrap_or_else(|_| Err(Error::internal("write operation panicked")));
            let writes = overlay.into_writes();
            wrote |= result.is_ok() && !writes.is_empty();
            let result = match result {
                Ok(out) => match writes.apply(&mut w) {
                    Ok(()) => Ok(out),
                    Err(e) => {
                        // The transaction holds part of this operation:
                        // nothing of the batch may commit.
                        broken = Some(e.clone());
                        Err(e)
                    }
                },
                Err(e) => Err(e),
            };
            outcomes.push((op.done, result));
        }
    }
    let failure = match broken {
        Some(e) => {
            let _ = txn.abort();
            Some(e)
        }
        // Nothing to make durable (the lease sweep of every second finds
        // nothing to release on most ticks): no commit, so no sync.
        None if !wrote => {
            let _ = txn.abort();
            return (outcomes, Committed::Nothing);
        }
        None => {
            let committing = Instant::now();
            let committed = txn.commit();
            metrics.commit_seconds.observe_duration(committing.elapsed());
            committed.err().map(storage_err)
        }
    };
    if let Some(e) = failure {
        metrics.failed_batches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for (_, outcome) in outcomes.iter_mut() {
            if outcome.is_ok() {
                *outcome = Err(e.clone());
            }
        }
    }
    (outcomes, Committed::Done)
}

impl Storage for RedbStore {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, Error> {
        Ok(Box::new(RedbRead::new(self.db.begin_read().map_err(storage_err)?)))
    }

    fn submit(&self, op: WriteOp) {
        super::queue_write(&self.queue, op)
    }

    fn backup_to(&self, path: &Path) -> Result<(), Error> {
        drop(crate::private::open_or_create(path)?);
        let target = Database::builder().create(path).map_err(storage_err)?;
        let source = self.db.begin_read().map_err(storage_err)?;
        let txn = target.begin_write().map_err(storage_err)?;
        for &table in tables::ALL {
            let from = source.open_table(def(table)).map_err(storage_err)?;
            let mut to = txn.open_table(def(table)).map_err(storage_err)?;
            for entry in from.iter().map_err(storage_err)? {
                let (k, v) = entry.map_err(storage_err)?;
                to.insert(k.value(), v.value()).map_err(storage_err)?;
            }
        }
        txn.commit().map_err(storage_err)?;
        Ok(())
    }

    fn backend(&self) -> &'static str {
        "redb"
    }

    fn writer_metrics(&self) -> Option<Arc<WriterMetrics>> {
        Some(self.metrics.clone())
    }
}

type ReadTable = ReadOnlyTable<&'static [u8], &'static [u8]>;

/// One entry of a range over a table.
type Entry<'a> =
    Result<(redb::AccessGuard<'a, &'static [u8]>, redb::AccessGuard<'a, &'static [u8]>), redb::StorageError>;

struct RedbRead {
    txn: redb::ReadTransaction,
    /// The tables opened so far, shared so that a read made from inside a
    /// scan callback (which holds its table) uses the same handle rather
    /// than open the table again.
    open: RefCell<Vec<Option<Rc<ReadTable>>>>,
}

impl RedbRead {
    fn new(txn: redb::ReadTransaction) -> RedbRead {
        RedbRead { txn, open: RefCell::new((0..tables::ALL.len()).map(|_| None).collect()) }
    }

    fn with_table<R>(
        &self,
        table: Table,
        f: impl FnOnce(&ReadTable) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let opened = self.open.borrow()[table.index].clone();
        let t = match opened {
            Some(t) => t,
            None => {
                let t = Rc::new(self.txn.open_table(def(table)).map_err(storage_err)?);
                self.open.borrow_mut()[table.index] = Some(t.clone());
                t
            }
        };
        f(&t)
    }
}

fn scan_table(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    range: KeyRange,
    direction: Direction,
    visit: &mut Visitor<'_>,
) -> Result<(), Error> {
    let iter = table.range::<&[u8]>(range.bounds()).map_err(storage_err)?;
    super::walk(iter, direction, |entry: Entry<'_>| {
        let (k, v) = entry.map_err(storage_err)?;
        visit(k.value(), v.value())
    })
}

impl ReadTxn for RedbRead {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.with_table(table, |t| Ok(t.get(key).map_err(storage_err)?.map(|v| v.value().to_vec())))
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange,
        direction: Direction,
        visit: &mut Visitor<'_>,
    ) -> Result<(), Error> {
        self.with_table(table, |t| scan_table(t, range, direction, visit))
    }
}

/// A table of a write transaction, shared so that a read made from inside
/// a scan callback (which holds the table) can use it too. Writes take
/// `&mut self`, so they never meet a borrow held by a scan.
type WriteTable<'t> = Rc<RefCell<redb::Table<'t, &'static [u8], &'static [u8]>>>;

struct RedbWrite<'t> {
    txn: &'t WriteTransaction,
    open: RefCell<Vec<(usize, WriteTable<'t>)>>,
}

impl<'t> RedbWrite<'t> {
    fn table(&self, table: Table) -> Result<WriteTable<'t>, Error> {
        let mut open = self.open.borrow_mut();
        if let Some((_, t)) = open.iter().find(|(i, _)| *i == table.index) {
            return Ok(t.clone());
        }
        let t = Rc::new(RefCell::new(self.txn.open_table(def(table)).map_err(storage_err)?));
        open.push((table.index, t.clone()));
        Ok(t)
    }
}

impl ReadTxn for RedbWrite<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        let t = self.table(table)?;
        let t = t.borrow();
        Ok(t.get(key).map_err(storage_err)?.map(|v| v.value().to_vec()))
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange,
        direction: Direction,
        visit: &mut Visitor<'_>,
    ) -> Result<(), Error> {
        let t = self.table(table)?;
        let t = t.borrow();
        scan_table(&*t, range, direction, visit)
    }
}

impl WriteTxn for RedbWrite<'_> {
    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), Error> {
        self.table(table)?.borrow_mut().insert(key, value).map_err(storage_err)?;
        Ok(())
    }

    fn delete(&mut self, table: Table, key: &[u8]) -> Result<bool, Error> {
        Ok(self.table(table)?.borrow_mut().remove(key).map_err(storage_err)?.is_some())
    }
}

/// Writes a snapshot of any backend into a new redb file at `path`: the
/// backup of a store that is not redb, and a board moved to the embedded
/// store.
pub fn write_snapshot_file(source: &dyn ReadTxn, path: &Path) -> Result<(), Error> {
    drop(crate::private::open_or_create(path)?);
    let target = Database::builder().create(path).map_err(storage_err)?;
    let txn = target.begin_write().map_err(storage_err)?;
    for &table in tables::ALL {
        let mut to = txn.open_table(def(table)).map_err(storage_err)?;
        source.scan(table, KeyRange::all(), Direction::Forward, &mut |k, v| {
            to.insert(k, v).map_err(storage_err)?;
            Ok(Scan::Continue)
        })?;
    }
    txn.commit().map_err(storage_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The overlay's merge over a real snapshot (the overlay is tested
    //! here, over the store that uses it, so it names no store itself),
    //! and the writer's batches.
    use super::*;
    use crate::tables::LABELS;

    /// Runs one operation through the writer and waits for it.
    fn run(store: &RedbStore, write: bool) {
        let (tx, rx) = std::sync::mpsc::channel();
        store.submit(crate::WriteOp {
            run: Box::new(move |w| {
                if write {
                    w.put(LABELS, b"k", b"v")?;
                }
                Ok(Box::new(()))
            }),
            done: Box::new(move |r| tx.send(r.is_ok()).unwrap()),
        });
        assert!(rx.recv().unwrap());
    }

    #[test]
    fn a_batch_that_writes_nothing_is_not_committed() {
        let store = RedbStore::in_memory().unwrap();
        let commits = || store.writer_metrics().unwrap().commit_seconds.count();
        let batches = || store.writer_metrics().unwrap().batch_operations.count();
        run(&store, false);
        assert_eq!(commits(), 0, "an operation that wrote nothing made a commit");
        assert_eq!(batches(), 0, "a batch with no commit was counted as one");
        run(&store, true);
        assert_eq!((commits(), batches()), (1, 1));
        assert_eq!(store.read().unwrap().get(LABELS, b"k").unwrap(), Some(b"v".to_vec()));
    }

    #[test]
    fn opening_a_store_deletes_the_tables_no_build_reads_any_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("board.redb");
        {
            let db = Database::builder().create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            for &name in tables::RETIRED {
                txn.open_table(Def::new(name)).unwrap().insert(&b"k"[..], &b""[..]).unwrap();
            }
            txn.commit().unwrap();
        }
        let store = RedbStore::open(&path).unwrap();
        store.close();
        drop(store);
        let db = Database::builder().create(&path).unwrap();
        let names: Vec<String> = db
            .begin_read()
            .unwrap()
            .list_tables()
            .unwrap()
            .map(|t| redb::TableHandle::name(&t).to_string())
            .collect();
        assert!(!names.iter().any(|n| tables::RETIRED.contains(&n.as_str())), "{names:?}");
        assert!(names.iter().any(|n| n == tables::TASKS.name));
    }

    fn collect(r: &dyn ReadTxn, direction: Direction, stop_after: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        r.scan(LABELS, KeyRange::prefix(b"k"), direction, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(if out.len() >= stop_after { Scan::Stop } else { Scan::Continue })
        })
        .unwrap();
        out
    }

    #[test]
    fn scans_merge_buffered_writes_and_deletions_in_both_directions() {
        let store = RedbStore::in_memory().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        store.submit(crate::WriteOp {
            run: Box::new(|w| {
                for k in [&b"k1"[..], b"k3", b"k5"] {
                    w.put(LABELS, k, b"base")?;
                }
                Ok(Box::new(()))
            }),
            done: Box::new(move |r| tx.send(r.is_ok()).unwrap()),
        });
        assert!(rx.recv().unwrap());
        let snapshot = store.read().unwrap();
        let mut o = Overlay::new(&*snapshot);
        o.put(LABELS, b"k0", b"new").unwrap();
        o.put(LABELS, b"k3", b"changed").unwrap();
        assert!(o.delete(LABELS, b"k5").unwrap());
        assert!(!o.delete(LABELS, b"k9").unwrap());
        o.put(LABELS, b"k4", b"new").unwrap();
        let keys = |v: Vec<(Vec<u8>, Vec<u8>)>| {
            v.into_iter()
                .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            keys(collect(&o, Direction::Forward, usize::MAX)),
            [("k0", "new"), ("k1", "base"), ("k3", "changed"), ("k4", "new")]
                .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert_eq!(
            keys(collect(&o, Direction::Reverse, 2)),
            [("k4", "new"), ("k3", "changed")].map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert_eq!(o.get(LABELS, b"k5").unwrap(), None);
        assert_eq!(o.get(LABELS, b"k1").unwrap(), Some(b"base".to_vec()));
        // The base is untouched until the writes are applied.
        assert_eq!(collect(&*snapshot, Direction::Forward, usize::MAX).len(), 3);
    }
}
