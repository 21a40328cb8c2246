//! The write path: group commit into one PostgreSQL transaction.
//!
//! One writer thread per store takes every queued operation at once and
//! runs them in one transaction that first takes the board's write lock
//! (`pg_advisory_xact_lock`), so the writers of all processes sharing the
//! database take turns, batch by batch. Holding the lock, every statement
//! sees every write committed before (read committed), and nothing else
//! writes until this transaction ends: an operation that reads, decides
//! and writes (a take, a claim, the next task number) is exact across
//! processes, without retries.
//!
//! Each operation is its own savepoint: its writes are buffered in an
//! [`Overlay`] while it runs, then written in one round trip together with
//! the release of its savepoint. An operation that fails, panics, or whose
//! writes the database refuses is rolled back to its savepoint and leaves
//! nothing; the others of the batch commit.
//!
//! A batch that stored events ends with `NOTIFY` on the board's channel
//! (`listen::channel`), the newest seq as payload, delivered at commit:
//! the wake-up of the other processes' listeners.

use std::cell::Cell;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::mpsc;

use futures_util::future::try_join_all;

use super::conn::Conn;
use super::listen::channel;
use super::read::Reads;
use super::schema::{LOCK_CLASS_WRITE, ident, lock_id, qualified, split};
use crate::error::Error;
use crate::storage::overlay::{Overlay, Writes};
use crate::storage::tables::EVENTS;
use crate::storage::{Direction, DoneFn, KeyRange, Output, ReadTxn, Table, Visitor, WriteOp};

/// Most operations committed in one transaction.
pub const MAX_BATCH: usize = 512;

const SAVEPOINT: &str = "SAVEPOINT op";
const RELEASE: &str = "RELEASE SAVEPOINT op";
const ROLLBACK_TO: &str = "ROLLBACK TO SAVEPOINT op; RELEASE SAVEPOINT op";

/// The writer thread's state: its connection, opened again after a loss.
pub(super) struct Writer {
    pub config: tokio_postgres::Config,
    pub schema: String,
    pub conn: Option<Conn>,
}

impl Writer {
    pub fn run(mut self, rx: mpsc::Receiver<WriteOp>) {
        let mut batch: Vec<WriteOp> = Vec::with_capacity(MAX_BATCH);
        while let Ok(first) = rx.recv() {
            batch.push(first);
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(op) => batch.push(op),
                    Err(_) => break,
                }
            }
            for (done, outcome) in self.run_batch(batch.drain(..)) {
                done(outcome);
            }
        }
    }

    fn connection(&mut self) -> Result<&Conn, Error> {
        if self.conn.as_ref().is_none_or(|c| c.client.is_closed()) {
            self.conn = Some(Conn::open_local(&self.config)?);
        }
        Ok(self.conn.as_ref().expect("opened above"))
    }

    fn run_batch(&mut self, ops: impl Iterator<Item = WriteOp>) -> Vec<(DoneFn, Result<Output, Error>)> {
        let schema = self.schema.clone();
        let conn = match self.connection() {
            Ok(conn) => conn,
            Err(e) => return ops.map(|op| (op.done, Err(e.clone()))).collect(),
        };
        let begin = format!("BEGIN; SELECT pg_advisory_xact_lock({LOCK_CLASS_WRITE}, {})", lock_id(&schema));
        if let Err(e) = conn.wait(conn.batch(&begin)) {
            // Most likely a lost connection, which this thread learns of
            // only while it waits on it: start afresh next time.
            self.conn = None;
            return ops.map(|op| (op.done, Err(e.clone()))).collect();
        }
        let mut outcomes: Vec<(DoneFn, Result<Output, Error>)> = Vec::new();
        let mut broken: Option<Error> = None;
        let mut newest_event: Option<u64> = None;
        for op in ops {
            if let Some(e) = &broken {
                outcomes.push((op.done, Err(e.clone())));
                continue;
            }
            let (outcome, lost, newest) = run_op(conn, &schema, op.run);
            broken = lost;
            newest_event = newest_event.max(newest);
            outcomes.push((op.done, outcome));
        }
        let end = match (&broken, newest_event) {
            (Some(_), _) => "ROLLBACK".to_string(),
            (None, Some(seq)) => format!("NOTIFY {}, '{seq}'; COMMIT", ident(&channel(&schema))),
            (None, None) => "COMMIT".to_string(),
        };
        let failure = match conn.wait(conn.batch(&end)) {
            Ok(()) => broken,
            Err(e) => Some(broken.unwrap_or(e)),
        };
        if let Some(e) = failure {
            for (_, outcome) in outcomes.iter_mut() {
                if outcome.is_ok() {
                    *outcome = Err(e.clone());
                }
            }
            // The connection may be in any state now: start afresh.
            self.conn = None;
        }
        outcomes
    }
}

/// Runs one operation under its savepoint. The second value is set when
/// the transaction can no longer be used (its savepoint could not be
/// rolled back to); the third is the newest event seq the operation
/// stored, if it succeeded.
fn run_op(
    conn: &Conn,
    schema: &str,
    run: crate::storage::RunFn,
) -> (Result<Output, Error>, Option<Error>, Option<u64>) {
    let reads = Reads { conn, schema, first: Cell::new(Some(SAVEPOINT)) };
    let base = Base(&reads);
    let mut overlay = Overlay::new(&base);
    let result = catch_unwind(AssertUnwindSafe(|| run(&mut overlay)))
        .unwrap_or_else(|_| Err(Error::internal("write operation panicked")));
    let writes = overlay.into_writes();
    let mut newest = None;
    let result = result.and_then(|out| {
        apply(&reads, writes).map(|stored| {
            newest = stored;
            out
        })
    });
    if result.is_err()
        && reads.opened()
        && let Err(e) = conn.wait(conn.batch(ROLLBACK_TO))
    {
        return (result, Some(e), None);
    }
    (result, None, newest)
}

type Step<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + 'a>>;

/// Writes an operation's buffered writes (one statement per table and
/// kind) and releases its savepoint, in one round trip. Returns the newest
/// seq stored into the events table (keyed by big-endian seq).
fn apply(reads: &Reads<'_>, writes: Writes) -> Result<Option<u64>, Error> {
    let conn = reads.conn;
    let mut newest_event = None;
    let mut upserts: Vec<(String, Upsert)> = Vec::new();
    let mut deletes: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    for (table, entries) in writes.into_tables() {
        let mut up = Upsert::default();
        let mut gone = Vec::new();
        for (key, value) in entries {
            match value {
                Some(v) => {
                    if table == EVENTS
                        && let Ok(seq) = <[u8; 8]>::try_from(key.as_slice())
                    {
                        newest_event = newest_event.max(Some(u64::from_be_bytes(seq)));
                    }
                    let c = split(&v);
                    up.keys.push(key);
                    up.versions.push(c.version);
                    up.records.push(c.record);
                    up.raws.push(c.raw);
                }
                None => gone.push(key),
            }
        }
        let name = qualified(reads.schema, table);
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
    if upserts.is_empty() && deletes.is_empty() && !reads.opened() {
        // Nothing was read nor written: there is no savepoint to release.
        return Ok(None);
    }
    let mut steps: Vec<Step<'_>> = Vec::new();
    if let Some(opening) = reads.first.take() {
        steps.push(Box::pin(conn.batch(opening)));
    }
    for (sql, up) in &upserts {
        steps.push(Box::pin(async move {
            conn.execute(sql, &[&up.keys, &up.versions, &up.records, &up.raws]).await.map(drop)
        }));
    }
    for (sql, keys) in &deletes {
        steps.push(Box::pin(async move { conn.execute(sql, &[keys]).await.map(drop) }));
    }
    steps.push(Box::pin(conn.batch(RELEASE)));
    conn.wait(try_join_all(steps)).map(|_| newest_event)
}

/// The upserts of one table, as the arrays `unnest` takes.
#[derive(Default)]
struct Upsert {
    keys: Vec<Vec<u8>>,
    versions: Vec<Option<i16>>,
    records: Vec<Option<String>>,
    raws: Vec<Option<Vec<u8>>>,
}

/// The transaction as the overlay's base: reads only (writes are buffered
/// by the overlay and applied by [`apply`]).
struct Base<'r, 'c>(&'r Reads<'c>);

impl ReadTxn for Base<'_, '_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.0.get(table, key)
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange,
        direction: Direction,
        visit: &mut Visitor<'_>,
    ) -> Result<(), Error> {
        self.0.scan(table, range, direction, visit)
    }
}
