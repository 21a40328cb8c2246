//! The board: every operation of the API, performed as an
//! acting member, with all its rules.
//!
//! Reads run on tokio's blocking pool over a storage snapshot; writes are
//! closures submitted to the storage writer (one transaction each, group
//! committed). The events an operation makes are numbered and stored in
//! its transaction and published once it is durable.

mod actor;
mod auth;
mod cache;
mod clock;
mod condition;
mod database;
mod deliveries;
mod delivery_log;
pub mod etags;
mod fencing;
mod files;
mod first_run;
mod follow;
mod idempotency;
mod import;
mod labels;
mod links;
mod members;
mod message_runs;
mod messages;
mod oidc;
mod options;
mod pages;
mod presence;
mod processes;
mod projects;
mod queries;
mod ready;
mod retries;
mod run_output;
mod runs;
pub(crate) mod search;
mod steps;
mod tasks;
mod throttle;
mod tokens;
mod webhooks;
mod work;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde::Serialize;
use uuid::Uuid;

use crate::blobs::BlobStore;
use crate::credentials::JwtKeys;
use crate::error::{Error, Result};
use crate::events::hub::Hub;
use crate::events::{Audience, Event, EventKind, EventMemory, Subscription, Viewer, log};
use crate::model::Message;
use crate::records::{RecordWrites, Records};
use crate::storage::redb::RedbStore;
use crate::storage::tables::META;
use crate::storage::{Storage, WriteOp, WriteTxn};

pub use actor::Actor;
pub(crate) use cache::{AuthCache, RenderedTask, TaskCache};
pub use clock::Clock;
pub use condition::Condition;
pub(crate) use database::JWT_SECRET_KEY;
pub use first_run::{INITIAL_PASSWORD_FILE, InitialPassword};
pub use follow::{EventBatch, Follower};
pub use idempotency::{AnswerOf, IDEMPOTENCY_TTL, IdempotencyKey, Idempotent, StoredAnswer};
pub use members::Bootstrap;
pub use oidc::{LOGIN_CODE_LIFETIME, OidcLink};
pub use options::{BoardOptions, DEFAULT_MAX_UPLOAD_BYTES};
pub use pages::{List, ONE_GO, STREAM_CHUNK, STREAM_DEPTH};
pub use presence::{PRESENCE_RENEWAL, PRESENCE_TTL};
pub use run_output::OUTPUT_INTERVAL_MS;
pub use search::{RECENT_MAX as TITLE_RECENT_MAX, STEP as TITLE_FOLD_STEP};
pub use throttle::LoginLimits;
pub use work::LEASE_SECONDS;

/// A Taskboard board. Cheap to clone; all clones share one store.
#[derive(Clone)]
pub struct Board {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board").field("data_dir", &self.inner.data_dir).finish()
    }
}

struct Inner {
    store: Arc<dyn Storage>,
    hub: Hub,
    blobs: BlobStore,
    jwt: JwtKeys,
    options: BoardOptions,
    data_dir: Option<PathBuf>,
    /// Blob directory of an in-memory board, removed on drop.
    scratch: Option<PathBuf>,
    last_seen: Mutex<HashMap<Uuid, Instant>>,
    /// This process's open event streams per member (`presence`).
    connections: Arc<Mutex<HashMap<Uuid, usize>>>,
    /// This process among those serving the board (`presence`).
    process: Uuid,
    auth_cache: std::sync::RwLock<AuthCache>,
    task_cache: std::sync::RwLock<TaskCache>,
    streams: Arc<crate::api::StreamGauge>,
    throttle: throttle::LoginThrottle,
    hashers: crate::credentials::HashPool,
    /// Idempotency keys whose first request is still running.
    idempotency_running: Mutex<std::collections::HashSet<(Uuid, String)>>,
    /// Wakes the webhook sender for work no event announces (a
    /// redelivery).
    webhook_wake: tokio::sync::Notify,
    /// Where the `run.output` frames of each run stand.
    run_output: Arc<run_output::OutputPaces>,
    /// True once the process serving the board stops: long polls answer
    /// at once instead of holding its shutdown up.
    stopping: tokio::sync::watch::Sender<bool>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(dir) = &self.scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The context of a write operation: the transaction, the time of the
/// operation and the events it makes.
pub(crate) struct Tx<'a> {
    pub w: &'a mut dyn WriteTxn,
    pub now: Timestamp,
    events: Vec<Event>,
    /// Blobs to delete once the transaction is durable.
    pub dead_blobs: Vec<String>,
}

impl Tx<'_> {
    /// Records an event of this operation; it is numbered now and
    /// published after commit.
    pub fn emit(&mut self, kind: EventKind, data: impl Serialize, audience: Audience) -> Result<()> {
        Tx::emit_naming(self, kind, &data, audience, None)
    }

    /// An event whose data is the message `message` as rendered now; the
    /// store keeps only the message's id (`events::log`).
    pub fn emit_message(&mut self, data: &Message, audience: Audience, message: Uuid) -> Result<()> {
        self.emit_naming(EventKind::MessageNew, data, audience, Some(message))
    }

    fn emit_naming(
        &mut self,
        kind: EventKind,
        data: &impl Serialize,
        audience: Audience,
        message: Option<Uuid>,
    ) -> Result<()> {
        let seq = next_seq(self.w)?;
        let event = Event::serialized(seq, self.now, kind, data, audience).map_err(Error::internal)?;
        log::append(self.w, &event, message)?;
        self.events.push(event);
        Ok(())
    }

    /// An event for every connection.
    pub fn emit_all(&mut self, kind: EventKind, data: impl Serialize) -> Result<()> {
        self.emit(kind, data, Audience::All)
    }
}

const SEQ_KEY: &[u8] = b"event_seq";
const SCHEMA_KEY: &[u8] = b"schema";
/// 2: ordered task indexes and the title trigram index.
const SCHEMA_VERSION: u32 = 2;

fn next_seq(w: &mut dyn WriteTxn) -> Result<u64> {
    let seq = w.record::<u64>(META, SEQ_KEY)?.unwrap_or(0) + 1;
    w.put_record(META, SEQ_KEY, &seq)?;
    Ok(seq)
}

impl Board {
    /// Opens the board kept in `data_dir` (created if missing): the
    /// database `board.redb`, the blob store `blobs/` and the JWT secret.
    pub async fn open(data_dir: impl AsRef<Path>, options: BoardOptions) -> Result<Board> {
        let dir = data_dir.as_ref().to_path_buf();
        let board = tokio::task::spawn_blocking(move || {
            crate::private::open_data_dir(&dir)?;
            let store = RedbStore::open_with_cache(&dir.join("board.redb"), options.store_cache)?;
            let blobs = BlobStore::open(dir.join("blobs"))?;
            let jwt = match &options.jwt_secret {
                Some(secret) => JwtKeys::new(secret.as_bytes()),
                None => JwtKeys::load_or_create(&dir)?,
            };
            Board::assemble(Arc::new(store), blobs, jwt, options, Some(dir), None)
        })
        .await
        .map_err(Error::internal)??;
        board.upgrade_schema().await?;
        board.start_up().await?;
        Ok(board)
    }

    /// A board that lives in memory (redb's in-memory backend), with its
    /// blobs in a temporary directory removed when the board is dropped.
    pub async fn open_in_memory(options: BoardOptions) -> Result<Board> {
        let board = tokio::task::spawn_blocking(move || {
            let store = RedbStore::in_memory()?;
            let scratch = std::env::temp_dir().join(format!("taskboard-mem-{}", Uuid::new_v4().simple()));
            let blobs = BlobStore::open(scratch.clone())?;
            let secret = options.jwt_secret.clone().unwrap_or_else(crate::credentials::new_password);
            let jwt = JwtKeys::new(secret.as_bytes());
            Board::assemble(Arc::new(store), blobs, jwt, options, None, Some(scratch))
        })
        .await
        .map_err(Error::internal)??;
        board.start_up().await?;
        Ok(board)
    }

    /// A board over any storage backend.
    pub async fn with_storage(
        store: Arc<dyn Storage>,
        blob_dir: PathBuf,
        options: BoardOptions,
    ) -> Result<Board> {
        let board = tokio::task::spawn_blocking(move || {
            let blobs = BlobStore::open(blob_dir)?;
            let secret = options.jwt_secret.clone().unwrap_or_else(crate::credentials::new_password);
            let jwt = JwtKeys::new(secret.as_bytes());
            Board::assemble(store, blobs, jwt, options, None, None)
        })
        .await
        .map_err(Error::internal)??;
        board.follow_other_processes();
        board.upgrade_schema().await?;
        board.start_up().await?;
        Ok(board)
    }

    /// Brings a board written by an older build to this schema: version 1
    /// lacked the ordered task indexes and the title trigrams, which are
    /// written for every task in one transaction.
    async fn upgrade_schema(&self) -> Result<()> {
        let version = self.read(|r| r.record::<u32>(META, SCHEMA_KEY)).await?;
        if version.is_none_or(|v| v >= SCHEMA_VERSION) {
            return Ok(());
        }
        self.write(|tx| {
            let tasks: Vec<crate::records::TaskRecord> = tx.w.all_records(crate::storage::tables::TASKS)?;
            for t in &tasks {
                tx.w.put_task(None, t)?;
            }
            search::fold(tx.w)?;
            Board::mark_schema(tx.w)
        })
        .await
    }

    fn assemble(
        store: Arc<dyn Storage>,
        blobs: BlobStore,
        jwt: JwtKeys,
        options: BoardOptions,
        data_dir: Option<PathBuf>,
        scratch: Option<PathBuf>,
    ) -> Result<Board> {
        // Only where the retained window begins and ends is read: its
        // events stay in the store until a subscriber asks for them.
        let (oldest, latest) = {
            let r = store.read()?;
            if let Some(v) = r.record::<u32>(META, SCHEMA_KEY)?
                && v > SCHEMA_VERSION
            {
                return Err(Error::internal(format!(
                    "the data directory was written by a newer Taskboard (schema {v})"
                )));
            }
            (log::oldest(&*r)?, r.record::<u64>(META, SEQ_KEY)?.unwrap_or(0))
        };
        let shared = store.commits_elsewhere().is_some();
        let hub = Hub::new(
            Arc::downgrade(&store),
            latest,
            oldest,
            options.event_buffer,
            options.event_memory,
            shared,
        );
        let throttle = throttle::LoginThrottle::new(
            options.login_limits,
            options.clock.clone(),
            jwt.derive("login throttle"),
        );
        let hashers = crate::credentials::HashPool::new(options.password_hashers);
        let board = Board {
            inner: Arc::new(Inner {
                store,
                hub,
                blobs,
                jwt,
                options,
                data_dir,
                scratch,
                last_seen: Mutex::new(HashMap::new()),
                connections: Default::default(),
                process: Uuid::now_v7(),
                auth_cache: Default::default(),
                task_cache: Default::default(),
                streams: Default::default(),
                throttle,
                hashers,
                idempotency_running: Mutex::new(Default::default()),
                webhook_wake: tokio::sync::Notify::new(),
                run_output: Default::default(),
                stopping: tokio::sync::watch::Sender::new(false),
            }),
        };
        Ok(board)
    }

    /// The data directory, for a board opened from one.
    pub fn data_dir(&self) -> Option<&Path> {
        self.inner.data_dir.as_deref()
    }

    pub fn options(&self) -> &BoardOptions {
        &self.inner.options
    }

    /// What the lists streamed by this board hold in memory.
    pub fn stream_gauge(&self) -> Arc<crate::api::StreamGauge> {
        self.inner.streams.clone()
    }

    pub(crate) fn blobs(&self) -> &BlobStore {
        &self.inner.blobs
    }

    /// Runs a read over a snapshot, on the blocking pool.
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&dyn crate::storage::ReadTxn) -> Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let r = inner.store.read()?;
            f(&*r)
        })
        .await
        .map_err(Error::internal)?
    }

    /// Runs a write operation in its own transaction; returns once it is
    /// durable and its events are published.
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx<'_>) -> Result<T> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel::<Result<(T, u64)>>();
        let inner = self.inner.clone();
        let clock = self.inner.options.clock.clone();
        let pending = idempotency::pending();
        let condition = condition::pending();
        let op = WriteOp {
            run: Box::new(move |w: &mut dyn WriteTxn| {
                if let Some(c) = &condition {
                    c.check_first(&*w)?;
                }
                let mut ctx = Tx { w, now: clock.timestamp(), events: Vec::new(), dead_blobs: Vec::new() };
                let value = f(&mut ctx)?;
                if let Some(p) = &pending {
                    p.store_if_answer(ctx.w, ctx.now, &value)?;
                }
                let out: (T, Vec<Event>, Vec<String>) = (value, ctx.events, ctx.dead_blobs);
                Ok(Box::new(out) as crate::storage::Output)
            }),
            done: Box::new(move |result| {
                let result = result.map(|out| {
                    let (value, events, dead_blobs) = *out
                        .downcast::<(T, Vec<Event>, Vec<String>)>()
                        .expect("the output type of this operation");
                    let newest = events.last().map_or(0, |e| e.seq);
                    cache::invalidate(&inner, &events);
                    if !events.is_empty() {
                        inner.hub.publish(events);
                    }
                    if !dead_blobs.is_empty() {
                        inner.blobs.remove(&dead_blobs);
                    }
                    (value, newest)
                });
                // Let go of the board before waking the caller: once the
                // caller has its answer and drops the last `Board`, the
                // database must close on its thread, not later on the
                // writer's, or an immediate reopen finds the file locked.
                drop(inner);
                let _ = tx.send(result);
            }),
        };
        self.inner.store.submit(op);
        let (value, newest) = rx.await.map_err(|_| Error::internal("the storage writer stopped"))??;
        // With other processes writing too, own events may wait for lower
        // seqs committed elsewhere (`processes`).
        self.published(newest).await;
        Ok(value)
    }

    // ---- events ---------------------------------------------------------

    /// The seq of the newest event.
    pub fn latest_seq(&self) -> u64 {
        self.inner.hub.latest()
    }

    /// The seq of the newest event, as a channel that changes with every
    /// publish: a wake-up for work driven by the event log, which holds
    /// no events in memory.
    pub fn watch_seq(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.hub.watch()
    }

    /// Wakes the webhook sender (work that no event announces).
    pub(crate) fn wake_webhooks(&self) {
        self.inner.webhook_wake.notify_one();
    }

    /// Resolves when [`Board::wake_webhooks`] was called since the last
    /// time it resolved.
    pub async fn webhooks_woken(&self) {
        self.inner.webhook_wake.notified().await
    }

    /// Subscribes to the event stream: replay of retained events after
    /// `since`, then live events, with no gap and no duplicate. Filter
    /// with [`Event::visible_to`].
    pub fn subscribe(&self, since: Option<u64>) -> Subscription {
        self.inner.hub.subscribe(since)
    }

    /// Events this process has published since the board was opened.
    pub fn events_published(&self) -> u64 {
        self.inner.hub.published()
    }

    /// The storage backend's name (`redb`, `postgres`).
    pub fn storage_backend(&self) -> &'static str {
        self.inner.store.backend()
    }

    /// What the storage writer records of its batches.
    pub fn writer_metrics(&self) -> Option<Arc<crate::metrics::WriterMetrics>> {
        self.inner.store.writer_metrics()
    }

    /// What the event stream holds in memory.
    pub fn event_memory(&self) -> EventMemory {
        self.inner.hub.memory()
    }

    /// The viewer of an actor, for the recipient rule.
    pub fn viewer(&self, actor: &Actor) -> Viewer {
        Viewer::of(&actor.member)
    }

    // ---- maintenance ----------------------------------------------------

    /// Copies a consistent snapshot of the database to `path` (a new redb
    /// file). Blobs are not copied; see [`Board::blob_dir`].
    pub async fn backup_database(&self, path: PathBuf) -> Result<()> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || inner.store.backup_to(&path)).await.map_err(Error::internal)?
    }

    /// The directory holding file contents.
    pub fn blob_dir(&self) -> &Path {
        self.inner.blobs.dir()
    }

    /// Makes sure everything submitted so far is durable.
    pub async fn flush(&self) -> Result<()> {
        self.write(|_| Ok(())).await
    }

    /// Starts the background work of a running board: releasing expired
    /// leases every second, renewing this process's presence entries
    /// every few seconds, and reclaiming unbound uploads every hour.
    /// Returns the task's handle.
    pub fn spawn_maintenance(&self) -> tokio::task::JoinHandle<()> {
        let board = self.clone();
        tokio::spawn(async move {
            let mut leases = tokio::time::interval(Duration::from_secs(1));
            leases.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut presence = tokio::time::interval(presence::PRESENCE_RENEWAL);
            presence.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut uploads = tokio::time::interval(Duration::from_secs(3600));
            let mut output =
                tokio::time::interval(Duration::from_millis(run_output::OUTPUT_INTERVAL_MS as u64));
            output.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = output.tick() => {
                        if let Err(e) = board.flush_run_output().await {
                            tracing::warn!(%e, "sending held-back run output failed");
                        }
                    }
                    _ = presence.tick() => {
                        if let Err(e) = board.renew_presence().await {
                            tracing::warn!(%e, "renewing presence failed");
                        }
                    }
                    _ = leases.tick() => {
                        if let Err(e) = board.expire_leases().await {
                            tracing::warn!(%e, "releasing expired leases failed");
                        }
                    }
                    _ = uploads.tick() => {
                        match board.sweep_idempotency().await {
                            Ok(0) => {}
                            Ok(n) => tracing::info!(swept = n, "swept stored idempotent answers"),
                            Err(e) => tracing::warn!(%e, "sweeping stored idempotent answers failed"),
                        }
                        match board.reclaim_unbound_uploads(Timestamp::now()).await {
                            Ok(0) => {}
                            Ok(n) => tracing::info!(reclaimed = n, "reclaimed unbound uploads"),
                            Err(e) => tracing::warn!(%e, "reclaiming unbound uploads failed"),
                        }
                    }
                }
            }
        })
    }

    pub(crate) fn mark_schema(w: &mut dyn WriteTxn) -> Result<()> {
        w.put_record(META, SCHEMA_KEY, &SCHEMA_VERSION)
    }
}
