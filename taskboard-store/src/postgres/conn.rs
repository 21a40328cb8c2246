//! Connections to PostgreSQL for a blocking storage trait.
//!
//! tokio-postgres splits a connection in two: the `Connection` future does
//! the socket I/O and runs on the store's own small runtime, the `Client`
//! only sends requests to it over a channel. So a client's futures can be
//! waited for with [`block_on`] on any thread — the board's blocking pool,
//! the writer thread — without entering a tokio runtime (which panics when
//! the caller is itself inside one).

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

use taskboard_wire::error::{Error, ErrorKind};

/// An error of the database, for the board (the cause goes to the log).
pub(super) fn pg_err(e: impl std::fmt::Display) -> Error {
    Error::internal(format!("postgres: {e}"))
}

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to completion on the current thread, parking between
/// polls. Only for client futures, whose I/O happens on the store's
/// runtime.
pub(super) fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// Where and how to connect: the driver's configuration, and the TLS
/// connector the URL's `sslmode` asks for (`None`: plain only).
#[derive(Clone)]
pub(super) struct Target {
    pub config: Config,
    pub tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
}

impl Target {
    /// Connects; the connection's I/O runs as a task of the current
    /// tokio runtime.
    pub async fn connect(&self) -> Result<Client, Error> {
        let client = match &self.tls {
            None => self.config.connect(NoTls).await.map(|(client, io)| spawn_io(client, io)),
            Some(tls) => self.config.connect(tls.clone()).await.map(|(client, io)| spawn_io(client, io)),
        };
        client.map_err(|e| {
            // The driver's message names the step (a TLS handshake); the
            // cause (an unknown issuer) is in its sources.
            let mut why = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                why.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            Error::new(ErrorKind::Internal, format!("cannot connect to PostgreSQL: {why}"))
        })
    }
}

fn spawn_io<F>(client: Client, io: F) -> Client
where
    F: Future<Output = Result<(), tokio_postgres::Error>> + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = io.await {
            tracing::warn!(%e, "postgres connection ended");
        }
    });
    client
}

/// One connection with its prepared statements, keyed by their SQL.
pub(super) struct Conn {
    pub client: Client,
    statements: Mutex<HashMap<String, Statement>>,
    /// The runtime of a connection used by one thread only (the writer's):
    /// its I/O then runs on that thread while it waits, with no hand-over
    /// to another thread per round trip.
    local: Option<tokio::runtime::Runtime>,
}

impl Conn {
    /// Opens a connection whose I/O runs on the calling thread, within
    /// [`Conn::wait`]. Only for a thread outside any tokio runtime that
    /// keeps the connection to itself.
    pub fn open_local(target: &Target) -> Result<Conn, Error> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(pg_err)?;
        let client = rt.block_on(target.connect())?;
        Ok(Conn { client, statements: Mutex::new(HashMap::new()), local: Some(rt) })
    }

    /// Waits for a future of this connection's client.
    pub fn wait<F: Future>(&self, fut: F) -> F::Output {
        match &self.local {
            Some(rt) => rt.block_on(fut),
            None => block_on(fut),
        }
    }

    /// Opens a connection; its I/O task runs on `rt`.
    pub fn open(rt: &tokio::runtime::Handle, target: &Target) -> Result<Conn, Error> {
        let target = target.clone();
        let connecting = rt.spawn(async move { target.connect().await });
        let client = block_on(connecting).map_err(pg_err)??;
        Ok(Conn { client, statements: Mutex::new(HashMap::new()), local: None })
    }

    /// The prepared statement for `sql`, prepared on first use.
    pub async fn statement(&self, sql: &str) -> Result<Statement, Error> {
        if let Some(s) = self.statements.lock().unwrap().get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).await.map_err(pg_err)?;
        self.statements.lock().unwrap().insert(sql.to_string(), s.clone());
        Ok(s)
    }

    pub async fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error> {
        let s = self.statement(sql).await?;
        self.client.query(&s, params).await.map_err(pg_err)
    }

    pub async fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error> {
        let s = self.statement(sql).await?;
        self.client.execute(&s, params).await.map_err(pg_err)
    }

    pub async fn batch(&self, sql: &str) -> Result<(), Error> {
        self.client.batch_execute(sql).await.map_err(pg_err)
    }
}

/// A pool of connections for snapshot reads. A read holds one connection
/// for as long as its snapshot lives; at most `max` are open at once and
/// further readers wait for one to come back.
pub(super) struct Pool {
    rt: tokio::runtime::Handle,
    target: Target,
    max: usize,
    state: Mutex<PoolState>,
    returned: Condvar,
}

struct PoolState {
    idle: Vec<Conn>,
    open: usize,
}

impl Pool {
    pub fn new(rt: tokio::runtime::Handle, target: Target, max: usize) -> Pool {
        Pool {
            rt,
            target,
            max: max.max(1),
            state: Mutex::new(PoolState { idle: Vec::new(), open: 0 }),
            returned: Condvar::new(),
        }
    }

    /// A connection, opened if none is idle and fewer than `max` are open.
    pub fn get(&self) -> Result<Conn, Error> {
        let mut state = self.state.lock().unwrap();
        loop {
            while let Some(conn) = state.idle.pop() {
                if !conn.client.is_closed() {
                    return Ok(conn);
                }
                state.open -= 1;
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return Conn::open(&self.rt, &self.target).inspect_err(|_| self.forget());
            }
            state = self.wait(state);
        }
    }

    fn wait<'a>(&self, state: MutexGuard<'a, PoolState>) -> MutexGuard<'a, PoolState> {
        self.returned.wait(state).unwrap()
    }

    /// Gives a connection back; a broken one is closed instead.
    pub fn put(&self, conn: Conn) {
        if conn.client.is_closed() {
            self.forget();
            return;
        }
        self.state.lock().unwrap().idle.push(conn);
        self.returned.notify_one();
    }

    /// Counts a connection as gone.
    pub fn forget(&self) {
        self.state.lock().unwrap().open -= 1;
        self.returned.notify_one();
    }

    /// Closes the idle connections.
    pub fn clear(&self) {
        let idle = std::mem::take(&mut self.state.lock().unwrap().idle);
        self.state.lock().unwrap().open -= idle.len();
        drop(idle);
    }
}
