//! The PostgreSQL backend: the board in a database that several server
//! processes can share.
//!
//! The layout of the tables and the migrations are in [`schema`], the write
//! path (group commit under the board's write lock, a savepoint per
//! operation) in [`write`]. Reads are snapshots: a repeatable-read,
//! read-only transaction on a pooled connection, held for as long as the
//! [`ReadTxn`] lives.
//!
//! The URL is a libpq-style `postgres://` URL (`host=/dir` in the query
//! names a Unix socket directory); one parameter is the board's own and is
//! not passed to the driver: `schema` (default `taskboard`), the schema
//! that holds the board's tables.

use std::cell::Cell;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use conn::{Conn, Pool, Target};
use read::Reads;

use super::{Direction, KeyRange, ReadTxn, Storage, Table, Visitor, WriteOp};
use crate::metrics::WriterMetrics;
use taskboard_wire::error::{Error, ErrorKind};

mod conn;
pub mod listen;
mod read;
pub mod schema;
mod tls;
mod write;

/// The schema of the board's tables unless the URL names another.
pub const DEFAULT_SCHEMA: &str = "taskboard";
/// Connections for snapshot reads, at most.
pub const DEFAULT_READ_CONNECTIONS: usize = 16;

/// Whether `database` names a PostgreSQL database.
pub fn is_postgres_url(database: &str) -> bool {
    database.starts_with("postgres://") || database.starts_with("postgresql://")
}

/// A board store kept in PostgreSQL.
pub struct PgStore {
    /// Runs the connections' I/O; shut down in the background on drop, so
    /// a store may be dropped anywhere, an async task included.
    rt: Option<tokio::runtime::Runtime>,
    schema: String,
    pool: Pool,
    metrics: Arc<WriterMetrics>,
    queue: Mutex<Option<mpsc::Sender<WriteOp>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// The newest seq other processes told of (`listen`).
    commits: tokio::sync::watch::Receiver<u64>,
}

/// A connection URL split into where and how to connect and the board's
/// own parameters. `sslmode` and `sslrootcert` are read here (see
/// [`tls`]); the rest goes to the driver.
fn parse_url(url: &str) -> Result<(Target, String), Error> {
    let bad = |why: String| Error::new(ErrorKind::BadRequest, format!("database URL: {why}"));
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, query),
        None => (url, ""),
    };
    let mut schema = DEFAULT_SCHEMA.to_string();
    let mut ssl_mode = tls::Mode::Prefer;
    let mut root_cert: Option<std::path::PathBuf> = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let decoded = || url::form_urlencoded::parse(pair.as_bytes()).next().map(|(_, v)| v.into_owned());
        match pair.split_once('=') {
            Some(("schema", value)) => schema = value.to_string(),
            Some(("sslmode", _)) => ssl_mode = tls::Mode::parse(&decoded().unwrap_or_default())?,
            Some(("sslrootcert", _)) => root_cert = decoded().map(Into::into),
            _ => rest.push(pair),
        }
    }
    if schema.is_empty()
        || schema.len() > 63
        || !schema.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(bad(format!("schema {schema:?} must be 1 to 63 letters, digits or underscores")));
    }
    let url = if rest.is_empty() { base.to_string() } else { format!("{base}?{}", rest.join("&")) };
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| bad(format!("{e}")))?;
    if config.get_application_name().is_none() {
        config.application_name("taskboard");
    }
    config.ssl_mode(ssl_mode.driver());
    let tls = tls::connector(ssl_mode, root_cert.as_ref())?;
    Ok((Target { config, tls }, schema))
}

/// Whether the database at `url` holds a board in its schema (the
/// members' table exists and has a row). Creates nothing.
pub async fn holds_board(url: &str) -> Result<bool, Error> {
    let (target, schema) = parse_url(url)?;
    let client = target.connect().await?;
    let members = format!("{}.{}", schema::ident(&schema), schema::ident(crate::tables::MEMBERS.name));
    let exists: bool = client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&members])
        .await
        .map_err(conn::pg_err)?
        .get(0);
    if !exists {
        return Ok(false);
    }
    let row = client
        .query_one(&format!("SELECT EXISTS (SELECT 1 FROM {members})"), &[])
        .await
        .map_err(conn::pg_err)?;
    Ok(row.get(0))
}

impl PgStore {
    /// Connects to the database at `url`, creates or migrates the board's
    /// schema and starts the writer.
    pub fn open(url: &str) -> Result<PgStore, Error> {
        PgStore::open_with(url, DEFAULT_READ_CONNECTIONS)
    }

    /// [`PgStore::open`] with at most `read_connections` snapshot reads
    /// at once.
    pub fn open_with(url: &str, read_connections: usize) -> Result<PgStore, Error> {
        let (target, schema) = parse_url(url)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("taskboard-postgres")
            .enable_all()
            .build()
            .map_err(Error::internal)?;
        let handle = rt.handle().clone();
        let first = Conn::open(&handle, &target)?;
        schema::migrate(&first, &schema)?;
        drop(first);
        let commits = listen::spawn(&handle, target.clone(), &schema);
        let pool = Pool::new(handle, target.clone(), read_connections);
        let (tx, rx) = mpsc::channel::<WriteOp>();
        let metrics = Arc::new(WriterMetrics::default());
        let writer = write::Writer { target, schema: schema.clone(), conn: None, metrics: metrics.clone() };
        let writer = std::thread::Builder::new()
            .name("taskboard-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(Error::internal)?;
        Ok(PgStore {
            rt: Some(rt),
            schema,
            pool,
            metrics,
            queue: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            commits,
        })
    }

    /// The schema holding the board's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Stops the writer after the queued operations are committed, and
    /// closes the connections.
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
        self.pool.clear();
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        self.close();
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl PgStore {
    /// A snapshot; `marked`: its reads of the events table stop at the
    /// mark (see [`read`]).
    fn snapshot(&self, marked: bool) -> Result<PgRead<'_>, Error> {
        let conn = self.pool.get()?;
        // The snapshot is taken by the first statement of the transaction,
        // so one runs now: the snapshot is of the moment `read` is called.
        if let Err(e) = conn.wait(conn.batch(BEGIN_SNAPSHOT)) {
            drop(conn);
            self.pool.forget();
            return Err(e);
        }
        Ok(PgRead { store: self, conn: Some(conn), marked })
    }
}

impl Storage for PgStore {
    /// A snapshot whose events stop at the mark: what streams, `since=`
    /// and the other processes' followers read.
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, Error> {
        Ok(Box::new(self.snapshot(true)?))
    }

    /// Every event the snapshot holds: what is read again is below what
    /// was published, so nothing before it is still to commit.
    fn read_published(&self) -> Result<Box<dyn ReadTxn + '_>, Error> {
        Ok(Box::new(self.snapshot(false)?))
    }

    fn submit(&self, op: WriteOp) {
        crate::queue_write(&self.queue, op)
    }

    fn backup_to(&self, path: &Path) -> Result<(), Error> {
        // Every event the snapshot holds, as the counters it copies count them.
        let snapshot = self.snapshot(false)?;
        super::redb::write_snapshot_file(&snapshot, path)
    }

    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn writer_metrics(&self) -> Option<Arc<WriterMetrics>> {
        Some(self.metrics.clone())
    }

    fn commits_elsewhere(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.commits.clone())
    }
}

const BEGIN_SNAPSHOT: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1";

/// A snapshot: a read-only repeatable-read transaction, ended when
/// dropped.
struct PgRead<'s> {
    store: &'s PgStore,
    conn: Option<Conn>,
    marked: bool,
}

impl PgRead<'_> {
    fn reads(&self) -> Reads<'_> {
        Reads {
            conn: self.conn.as_ref().expect("held until drop"),
            schema: &self.store.schema,
            first: Cell::new(None),
            marked: self.marked,
        }
    }
}

impl ReadTxn for PgRead<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.reads().get(table, key)
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange,
        direction: Direction,
        visit: &mut Visitor<'_>,
    ) -> Result<(), Error> {
        self.reads().scan(table, range, direction, visit)
    }
}

impl Drop for PgRead<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if conn.wait(conn.batch("COMMIT")).is_err() {
            // A connection whose transaction did not end is not reused.
            drop(conn);
            self.store.pool.forget();
            return;
        }
        self.store.pool.put(conn);
    }
}
