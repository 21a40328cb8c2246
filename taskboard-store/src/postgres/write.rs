//! The write path: group commit into one PostgreSQL transaction.
//!
//! One writer thread per store takes every queued operation at once and
//! runs them in one transaction that first takes the board's write lock
//! (`pg_advisory_xact_lock`), so the writers of all processes sharing the
//! database take turns, batch by batch. Holding the lock, nothing else
//! writes until this transaction ends: an operation that reads, decides
//! and writes (a take, a claim, the next task number) is exact across
//! processes, without retries.
//!
//! The batch runs optimistically, in as few round trips as it can:
//!
//! - Nothing is written to the database until every operation has run:
//!   each operation's writes are buffered in its [`Overlay`], and those of
//!   an operation that succeeds join the batch's overlay, which the next
//!   operations read through. So the database stays as the batch found
//!   it, and every row or scan read from it is cached for the rest of the
//!   batch ([`Frozen`]): operations that read the same records (the
//!   project, the actor, the event counter) fetch them once per batch.
//! - Then the writes of the whole batch go out at once, one statement per
//!   table (`INSERT … SELECT FROM unnest(…) ON CONFLICT DO UPDATE`, one
//!   `DELETE … = ANY(…)`), pipelined, and the transaction commits.
//! - An operation that fails or panics leaves nothing (its overlay is
//!   dropped); no savepoint is needed for that. Should the database
//!   refuse the batch's writes (a constraint, a trigger, a full disk on
//!   one table), the batch falls back to writing operation by operation,
//!   each under a savepoint: the refused one fails, and so does every
//!   later operation that read something a failed one wrote (what it
//!   decided on never happened); the others commit.
//!
//! A batch that stored events ends with `NOTIFY` on the board's channel
//! (`listen::channel`), the newest seq as payload, delivered at commit:
//! the wake-up of the other processes' listeners.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::ops::Bound;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};
use std::time::Instant;

use futures_util::future::try_join_all;

use super::conn::Conn;
use super::listen::channel;
use super::read::{Reads, Rows};
use super::schema::{LOCK_CLASS_WRITE, ident, lock_id, qualified, split};
use crate::metrics::WriterMetrics;
use crate::overlay::{Overlay, Writes};
use crate::tables::EVENTS;
use crate::{Direction, DoneFn, KeyRange, Output, ReadTxn, Scan, Table, Visitor, WriteOp};
use taskboard_wire::error::Error;

/// Most operations committed in one transaction.
pub const MAX_BATCH: usize = 512;

const SAVEPOINT: &str = "SAVEPOINT op";
const RELEASE: &str = "RELEASE SAVEPOINT op";
const ROLLBACK_TO: &str = "ROLLBACK TO SAVEPOINT op; RELEASE SAVEPOINT op";
/// Taken right after the lock: a failed statement (a read the database
/// refused) rolls back to it, keeping the lock and the transaction.
const ROLLBACK_TO_BATCH: &str = "ROLLBACK TO SAVEPOINT batch";

/// The writer thread's state: its connection, opened again after a loss.
pub(super) struct Writer {
    pub target: super::conn::Target,
    pub schema: String,
    pub conn: Option<Conn>,
    pub metrics: Arc<WriterMetrics>,
}

type Outcome = (DoneFn, Result<Output, Error>);

/// An operation that ran: its outcome, and for one that succeeded its
/// writes and what it read of the batch (for the fallback).
struct Ran {
    done: DoneFn,
    result: Result<Output, Error>,
    writes: Option<Writes>,
    read: ReadSet,
}

impl Writer {
    pub fn run(mut self, rx: mpsc::Receiver<WriteOp>) {
        let mut batch: Vec<WriteOp> = Vec::with_capacity(MAX_BATCH);
        while let Ok(first) = rx.recv() {
            batch.push(first);
            let started = Instant::now();
            let began = self.begin();
            self.metrics.lock_seconds.observe_duration(started.elapsed());
            // Operations queued while the lock was awaited join this
            // batch: with other processes writing, that wait is most of a
            // batch's cycle, and taking them now spares them a whole turn.
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(op) => batch.push(op),
                    Err(_) => break,
                }
            }
            self.metrics.batch_operations.observe(batch.len() as f64);
            let outcomes: Vec<Outcome> = match began {
                Ok(()) => self.run_batch(batch.drain(..)),
                Err(e) => batch.drain(..).map(|op| (op.done, Err(e.clone()))).collect(),
            };
            self.metrics.batch_seconds.observe_duration(started.elapsed());
            for (done, outcome) in outcomes {
                done(outcome);
            }
        }
    }

    fn connection(&mut self) -> Result<&Conn, Error> {
        if self.conn.as_ref().is_none_or(|c| c.client.is_closed()) {
            self.conn = Some(Conn::open_local(&self.target)?);
        }
        Ok(self.conn.as_ref().expect("opened above"))
    }

    /// Opens the batch's transaction and takes the board's write lock,
    /// waiting for the writers of other processes.
    fn begin(&mut self) -> Result<(), Error> {
        let begin = format!(
            "BEGIN; SELECT pg_advisory_xact_lock({LOCK_CLASS_WRITE}, {}); SAVEPOINT batch",
            lock_id(&self.schema)
        );
        let conn = match self.connection() {
            Ok(conn) => conn,
            Err(e) => {
                self.metrics.failed_batches.fetch_add(1, Ordering::Relaxed);
                return Err(e);
            }
        };
        if let Err(e) = conn.wait(conn.batch(&begin)) {
            // Most likely a lost connection, which this thread learns of
            // only while it waits on it: start afresh next time.
            self.conn = None;
            self.metrics.failed_batches.fetch_add(1, Ordering::Relaxed);
            return Err(e);
        }
        Ok(())
    }

    /// Runs a batch in the transaction [`Writer::begin`] opened, and
    /// commits it.
    fn run_batch(&mut self, ops: impl Iterator<Item = WriteOp>) -> Vec<Outcome> {
        let schema = self.schema.clone();
        let metrics = self.metrics.clone();
        let conn = self.conn.as_ref().expect("opened by begin");
        let (ran, broken) = run_ops(conn, &schema, ops, &metrics);
        let result = match broken {
            Some(e) => Err((e, ran)),
            None => write_and_commit(conn, &schema, ran, &metrics),
        };
        match result {
            Ok(outcomes) => outcomes,
            Err((e, ran)) => {
                // The connection may be in any state now: start afresh.
                let _ = conn.wait(conn.batch("ROLLBACK"));
                self.conn = None;
                metrics.failed_batches.fetch_add(1, Ordering::Relaxed);
                ran.into_iter().map(|r| (r.done, r.result.and(Err(e.clone())))).collect()
            }
        }
    }
}

/// Runs every operation over the batch's overlay. The error is set when
/// the transaction can no longer be used.
fn run_ops(
    conn: &Conn,
    schema: &str,
    ops: impl Iterator<Item = WriteOp>,
    metrics: &WriterMetrics,
) -> (Vec<Ran>, Option<Error>) {
    let frozen = Frozen::new(Reads { conn, schema, first: Cell::new(None), marked: false }, metrics);
    let mut batch = Overlay::new(&frozen);
    let mut ran = Vec::new();
    let mut broken: Option<Error> = None;
    for op in ops {
        if let Some(e) = &broken {
            ran.push(Ran { done: op.done, result: Err(e.clone()), writes: None, read: ReadSet::default() });
            continue;
        }
        let tracked = Tracked { base: &batch, read: RefCell::new(ReadSet::default()) };
        let mut overlay = Overlay::new(&tracked);
        let result = catch_unwind(AssertUnwindSafe(|| (op.run)(&mut overlay)))
            .unwrap_or_else(|_| Err(Error::internal("write operation panicked")));
        let writes = overlay.into_writes();
        let read = tracked.read.into_inner();
        let writes = match result {
            Ok(_) => {
                batch.absorb(writes.clone());
                Some(writes)
            }
            Err(_) => None,
        };
        if frozen.failed.take()
            && let Err(e) = conn.wait(conn.batch(ROLLBACK_TO_BATCH))
        {
            broken = Some(e);
        }
        ran.push(Ran { done: op.done, result, writes, read });
    }
    metrics.read_seconds.observe_duration(frozen.reading.get());
    (ran, broken)
}

/// Writes the batch and commits; on a refusal, writes operation by
/// operation. The error is the batch's when nothing could commit.
fn write_and_commit(
    conn: &Conn,
    schema: &str,
    ran: Vec<Ran>,
    metrics: &WriterMetrics,
) -> Result<Vec<Outcome>, (Error, Vec<Ran>)> {
    let mut all = Writes::default();
    for r in &ran {
        if let Some(w) = &r.writes {
            all.merge(w.clone());
        }
    }
    // The newest seq stored into the events table (keyed by big-endian
    // seq), for the wake-up of the other processes.
    let newest_event = all
        .table(EVENTS)
        .and_then(|t| t.iter().rev().find(|(_, v)| v.is_some()))
        .and_then(|(k, _)| <[u8; 8]>::try_from(k.as_slice()).ok())
        .map(u64::from_be_bytes);
    let writing = Instant::now();
    let written = conn.wait(write(conn, schema, all, None, None));
    metrics.write_seconds.observe_duration(writing.elapsed());
    let ran = match written {
        Ok(()) => ran.into_iter().map(|r| (r.done, r.result)).collect(),
        Err(_) => {
            if let Err(e) = conn.wait(conn.batch(ROLLBACK_TO_BATCH)) {
                return Err((e, ran));
            }
            write_one_by_one(conn, schema, ran)?
        }
    };
    let committing = Instant::now();
    let end = match newest_event {
        Some(seq) => format!("NOTIFY {}, '{seq}'; COMMIT", ident(&channel(schema))),
        None => "COMMIT".to_string(),
    };
    let committed = conn.wait(conn.batch(&end));
    metrics.commit_seconds.observe_duration(committing.elapsed());
    match committed {
        Ok(()) => Ok(ran),
        Err(e) => Err((
            e,
            ran.into_iter()
                .map(|(done, result)| Ran { done, result, writes: None, read: ReadSet::default() })
                .collect(),
        )),
    }
}

/// The fallback: each operation's writes under a savepoint of its own.
fn write_one_by_one(conn: &Conn, schema: &str, ran: Vec<Ran>) -> Result<Vec<Outcome>, (Error, Vec<Ran>)> {
    let mut refused = Writes::default();
    let mut out = Vec::with_capacity(ran.len());
    let mut rest = ran.into_iter();
    while let Some(r) = rest.next() {
        let Some(writes) = r.writes else {
            out.push((r.done, r.result));
            continue;
        };
        if r.read.touches(&refused) {
            refused.merge(writes);
            let e = Error::internal(
                "an earlier operation of the same batch, whose write this one read, was refused",
            );
            out.push((r.done, Err(e)));
            continue;
        }
        let kept = writes.clone();
        match conn.wait(write(conn, schema, writes, Some(SAVEPOINT), Some(RELEASE))) {
            Ok(()) => out.push((r.done, r.result)),
            Err(e) => {
                if let Err(lost) = conn.wait(conn.batch(ROLLBACK_TO)) {
                    let mut ran: Vec<Ran> = out
                        .into_iter()
                        .map(|(done, result)| Ran { done, result, writes: None, read: ReadSet::default() })
                        .collect();
                    ran.push(Ran { done: r.done, result: Err(e), writes: None, read: ReadSet::default() });
                    ran.extend(rest);
                    return Err((lost, ran));
                }
                refused.merge(kept);
                out.push((r.done, Err(e)));
            }
        }
    }
    Ok(out)
}

type Step<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + 'a>>;

/// Writes `writes` (one statement per table and kind) in one round trip,
/// between the statements `before` and `after` when given.
async fn write(
    conn: &Conn,
    schema: &str,
    writes: Writes,
    before: Option<&str>,
    after: Option<&str>,
) -> Result<(), Error> {
    let mut upserts: Vec<(String, Upsert)> = Vec::new();
    let mut deletes: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    for (table, entries) in writes.into_tables() {
        let mut up = Upsert::default();
        let mut gone = Vec::new();
        for (key, value) in entries {
            match value {
                Some(v) => {
                    let c = split(&v);
                    up.keys.push(key);
                    up.versions.push(c.version);
                    up.records.push(c.record);
                    up.raws.push(c.raw);
                }
                None => gone.push(key),
            }
        }
        let name = qualified(schema, table);
        if !up.keys.is_empty() {
            upserts.push((
                format!(
                    "INSERT INTO {name} (key, version, record, raw) \
                     SELECT k, v, r::json, w FROM unnest($1::bytea[], $2::int2[], $3::text[], $4::bytea[]) AS u(k, v, r, w) \
                     ON CONFLICT (key) DO UPDATE SET version = excluded.version, record = excluded.record, raw = excluded.raw"
                ),
                up,
            ));
        }
        if !gone.is_empty() {
            deletes.push((format!("DELETE FROM {name} WHERE key = ANY($1::bytea[])"), gone));
        }
    }
    if upserts.is_empty() && deletes.is_empty() {
        return Ok(());
    }
    let mut steps: Vec<Step<'_>> = Vec::new();
    if let Some(sql) = before {
        steps.push(Box::pin(conn.batch(sql)));
    }
    for (sql, up) in &upserts {
        steps.push(Box::pin(async move {
            conn.execute(sql, &[&up.keys, &up.versions, &up.records, &up.raws]).await.map(drop)
        }));
    }
    for (sql, keys) in &deletes {
        steps.push(Box::pin(async move { conn.execute(sql, &[keys]).await.map(drop) }));
    }
    if let Some(sql) = after {
        steps.push(Box::pin(conn.batch(sql)));
    }
    try_join_all(steps).await.map(drop)
}

/// The upserts of one table, as the arrays `unnest` takes.
#[derive(Default)]
struct Upsert {
    keys: Vec<Vec<u8>>,
    versions: Vec<Option<i16>>,
    records: Vec<Option<String>>,
    raws: Vec<Option<Vec<u8>>>,
}

/// What one operation read of the batch's state: keys and scanned ranges.
#[derive(Default)]
struct ReadSet {
    keys: Vec<(Table, Vec<u8>)>,
    ranges: Vec<(Table, KeyRange)>,
}

impl ReadSet {
    /// Whether anything read here was written by `writes`.
    fn touches(&self, writes: &Writes) -> bool {
        self.keys.iter().any(|(table, key)| writes.table(*table).is_some_and(|t| t.contains_key(key)))
            || self.ranges.iter().any(|(table, range)| {
                writes.table(*table).is_some_and(|t| t.range::<[u8], _>(range.bounds()).next().is_some())
            })
    }
}

/// The batch's state as an operation reads it, recording what it reads.
struct Tracked<'b> {
    base: &'b dyn ReadTxn,
    read: RefCell<ReadSet>,
}

impl ReadTxn for Tracked<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.read.borrow_mut().keys.push((table, key.to_vec()));
        self.base.get(table, key)
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange,
        direction: Direction,
        visit: &mut Visitor<'_>,
    ) -> Result<(), Error> {
        self.read.borrow_mut().ranges.push((table, range.clone()));
        self.base.scan(table, range, direction, visit)
    }
}

/// The rows of one scan read so far, in its direction, and whether they
/// are all the range holds.
struct CachedScan {
    rows: Rc<Rows>,
    complete: bool,
}

type ScanKey = (usize, Bound<Vec<u8>>, Bound<Vec<u8>>, bool);
/// Rows read by key: table index and key, the value or `None`.
type RowCache = HashMap<(usize, Vec<u8>), Option<Vec<u8>>>;

/// An interval of keys with every row the database holds in it.
struct Known {
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    rows: Rc<Rows>,
}

impl Known {
    fn covers(&self, range: &KeyRange) -> bool {
        let low = match (&self.start, &range.start) {
            (Bound::Unbounded, _) => true,
            (_, Bound::Unbounded) => false,
            (Bound::Excluded(a), Bound::Included(b)) => a < b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => a <= b,
        };
        let high = match (&self.end, &range.end) {
            (Bound::Unbounded, _) => true,
            (_, Bound::Unbounded) => false,
            (Bound::Excluded(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => a >= b,
        };
        low && high
    }
}

/// Visits the rows of `rows` (in key order) that fall in `range`.
fn visit_within(
    rows: &[(Vec<u8>, Vec<u8>)],
    range: &KeyRange,
    direction: Direction,
    visit: &mut Visitor<'_>,
) -> Result<(), Error> {
    use std::ops::RangeBounds;
    let bounds = range.bounds();
    let inside = rows.iter().filter(|(k, _)| RangeBounds::<[u8]>::contains(&bounds, k.as_slice()));
    crate::walk(inside, direction, |(k, v)| visit(k, v))
}

/// The database as the batch found it. The batch writes nothing until
/// its end and the lock keeps every other writer out, so what was read
/// once stays true for the whole batch: rows and scans are cached.
struct Frozen<'c> {
    reads: Reads<'c>,
    metrics: &'c WriterMetrics,
    /// Time spent reading the database (observed at the batch's end).
    reading: Cell<std::time::Duration>,
    gets: RefCell<RowCache>,
    scans: RefCell<HashMap<ScanKey, CachedScan>>,
    /// Key intervals of a table whose every row is known, by table: a
    /// forward scan read whole in its first page, widened up to the next
    /// key after it (asked in the same round trip). Scans of fresh ids
    /// (a new task's steps, links, subtasks) fall in the interval an
    /// earlier one left, as ids grow with time.
    known: RefCell<HashMap<usize, Vec<Known>>>,
    /// A statement failed: the transaction must roll back to the batch's
    /// savepoint before it can be used again.
    failed: Cell<bool>,
}

impl<'c> Frozen<'c> {
    fn new(reads: Reads<'c>, metrics: &'c WriterMetrics) -> Frozen<'c> {
        Frozen {
            reads,
            metrics,
            reading: Cell::new(std::time::Duration::ZERO),
            gets: Default::default(),
            scans: Default::default(),
            known: Default::default(),
            failed: Cell::new(false),
        }
    }

    /// Runs a read of the database, timed and noted.
    fn timed<T>(&self, read: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
        let started = Instant::now();
        let result = read();
        self.reading.set(self.reading.get() + started.elapsed());
        self.noted(result)
    }

    /// Notes a read of the database: counted, and a failure marks the
    /// transaction.
    fn noted<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        self.metrics.read_round_trips.fetch_add(1, Ordering::Relaxed);
        if result.is_err() {
            self.failed.set(true);
        }
        result
    }
}

impl ReadTxn for Frozen<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        let cache_key = (table.index, key.to_vec());
        if let Some(v) = self.gets.borrow().get(&cache_key) {
            return Ok(v.clone());
        }
        let value = self.timed(|| self.reads.get(table, key))?;
        self.gets.borrow_mut().insert(cache_key, value.clone());
        Ok(value)
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange,
        direction: Direction,
        visit: &mut Visitor<'_>,
    ) -> Result<(), Error> {
        let known = self
            .known
            .borrow()
            .get(&table.index)
            .and_then(|intervals| intervals.iter().find(|k| k.covers(&range)).map(|k| k.rows.clone()));
        if let Some(rows) = known {
            return visit_within(&rows, &range, direction, visit);
        }
        let key: ScanKey =
            (table.index, range.start.clone(), range.end.clone(), direction == Direction::Reverse);
        if direction == Direction::Forward && !self.scans.borrow().contains_key(&key) {
            let (rows, full, next) = self.timed(|| self.reads.first_page(table, &range))?;
            let rows = Rc::new(rows);
            if !full {
                let end = next.map_or(Bound::Unbounded, Bound::Excluded);
                let interval = Known { start: range.start.clone(), end, rows: rows.clone() };
                self.known.borrow_mut().entry(table.index).or_default().push(interval);
                return visit_within(&rows, &range, direction, visit);
            }
            // More rows follow: read on lazily below, from these.
            self.scans.borrow_mut().insert(key.clone(), CachedScan { rows, complete: false });
        }
        let cached = self.scans.borrow().get(&key).map(|c| (c.rows.clone(), c.complete));
        let (rows, complete) = cached.unwrap_or_default();
        for (k, v) in rows.iter() {
            if visit(k, v)? == Scan::Stop {
                return Ok(());
            }
        }
        if complete {
            return Ok(());
        }
        // Read on from the database after the last cached row.
        let mut rest = range;
        if let Some((last, _)) = rows.last() {
            match direction {
                Direction::Forward => rest.start = Bound::Excluded(last.clone()),
                Direction::Reverse => rest.end = Bound::Excluded(last.clone()),
            }
        }
        let mut more: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut stopped = false;
        // An error of the visitor is the operation's, not the database's:
        // kept apart, so the transaction is not taken for failed.
        let mut refused: Option<Error> = None;
        let started = Instant::now();
        let scanned = self.reads.scan(table, rest, direction, &mut |k, v| {
            more.push((k.to_vec(), v.to_vec()));
            match visit(k, v) {
                Ok(next) => {
                    stopped = next == Scan::Stop;
                    Ok(next)
                }
                Err(e) => {
                    refused = Some(e);
                    stopped = true;
                    Ok(Scan::Stop)
                }
            }
        });
        self.reading.set(self.reading.get() + started.elapsed());
        let scanned = self.noted(scanned);
        let mut all = Rc::unwrap_or_clone(rows);
        all.extend(more);
        let complete = scanned.is_ok() && !stopped;
        self.scans.borrow_mut().insert(key, CachedScan { rows: Rc::new(all), complete });
        match refused {
            Some(e) => Err(e),
            None => scanned,
        }
    }
}
