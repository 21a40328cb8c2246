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
mod changes;
mod clock;
pub mod conditions;
mod database;
mod deliveries;
mod delivery_log;
mod fencing;
mod files;
mod first_run;
mod follow;
mod import;
mod labels;
mod landing;
mod links;
mod members;
mod message_runs;
mod messages;
mod oidc;
mod open;
mod options;
mod pages;
mod presence;
mod processes;
mod projects;
mod queries;
mod ready;
mod retries;
mod reviews;
mod rights;
mod run_output;
mod run_records;
mod runs;
mod steps;
mod tasks;
mod throttle;
mod tokens;
mod tx;
mod webhooks;
mod work;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;

use crate::blobs::BlobStore;
use crate::error::{Error, Result};
use crate::events::hub::Hub;
use crate::events::{Event, EventMemory, Subscription, Viewer};
use crate::records::event_log as log;
use crate::storage::{Storage, WriteOp, WriteTxn};

pub use crate::events::EventBatch;
pub use crate::records::titles::{RECENT_MAX as TITLE_RECENT_MAX, STEP as TITLE_FOLD_STEP};
pub use actor::Actor;
pub(crate) use cache::{RenderedTask, TaskCache};
pub use clock::Clock;
pub use conditions::{
    Conditions, IDEMPOTENCY_TTL, IdempotencyKey, Idempotent, IfMatch, Request, Resource, Session,
    StoredAnswer,
};
pub(crate) use database::JWT_SECRET_KEY;
pub use fencing::LEASE_SECONDS;
pub use first_run::{INITIAL_PASSWORD_FILE, InitialPassword};
pub use follow::Follower;
pub use members::Bootstrap;
pub use oidc::{LOGIN_CODE_LIFETIME, OidcLink};
pub use options::{BoardOptions, DEFAULT_MAX_UPLOAD_BYTES};
pub use pages::{List, ONE_GO, STREAM_CHUNK, STREAM_DEPTH};
pub use presence::{PRESENCE_RENEWAL, PRESENCE_TTL};
pub use run_output::OUTPUT_INTERVAL_MS;
pub use throttle::LoginLimits;
pub(crate) use tx::Tx;

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
    /// Who is who: keys, throttle, hashers and their caches (`auth`).
    credentials: auth::Credentials,
    options: BoardOptions,
    data_dir: Option<PathBuf>,
    /// Blob directory of an in-memory board, removed on drop.
    scratch: Option<PathBuf>,
    /// Who is present, as this process knows it (`presence`).
    presence: presence::Presence,
    task_cache: std::sync::RwLock<TaskCache>,
    streams: Arc<crate::wire::StreamGauge>,
    /// Idempotency keys whose first request is still running.
    running: Arc<conditions::Running>,
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

impl Board {
    /// The data directory, for a board opened from one.
    pub fn data_dir(&self) -> Option<&Path> {
        self.inner.data_dir.as_deref()
    }

    pub fn options(&self) -> &BoardOptions {
        &self.inner.options
    }

    /// What the lists streamed by this board hold in memory.
    pub fn stream_gauge(&self) -> Arc<crate::wire::StreamGauge> {
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

    /// Runs a write operation made for a request in its own transaction:
    /// the request's `If-Match` condition is checked first (in its first
    /// write) and the write's value stored as its answer under its
    /// `Idempotency-Key`, with the change. Returns once it is durable and
    /// its events are published.
    pub(crate) async fn write_as<T, F>(&self, request: Option<Arc<Request>>, f: F) -> Result<T>
    where
        T: conditions::Answer + Send + 'static,
        F: FnOnce(&mut Tx<'_>) -> Result<T> + Send + 'static,
    {
        let Some(request) = request else { return self.write(f).await };
        self.write(move |tx| {
            request.check_first(&*tx.w)?;
            let value = f(tx)?;
            request.store_answer(tx.w, tx.now, &value)?;
            Ok(value)
        })
        .await
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
        // What the operation made travels from the writer to `done` in a
        // slot of its own type, not through the storage's untyped output.
        let slot = Arc::new(Mutex::new(None::<(T, Vec<Event>, Vec<String>)>));
        let made = slot.clone();
        let op = WriteOp {
            run: Box::new(move |w: &mut dyn WriteTxn| {
                let mut ctx = Tx { w, now: clock.timestamp(), events: Vec::new(), dead_blobs: Vec::new() };
                let value = f(&mut ctx)?;
                *made.lock().unwrap() = Some((value, ctx.events, ctx.dead_blobs));
                Ok(Box::new(()) as crate::storage::Output)
            }),
            done: Box::new(move |result| {
                let result = result.map(|_| {
                    let (value, events, dead_blobs) =
                        slot.lock().unwrap().take().expect("a committed operation filled its slot");
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
        crate::events::viewer_of(&actor.member)
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
}
