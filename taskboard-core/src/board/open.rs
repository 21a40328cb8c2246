//! Opening a board: in a data directory, in memory, or on a given store;
//! the schema's version checked and upgraded, and the parts assembled.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use uuid::Uuid;

use super::tx::SEQ_KEY;
use super::{Board, BoardOptions, Hub, Inner, auth, log, throttle};
use crate::blobs::BlobStore;
use crate::credentials::JwtKeys;
use crate::error::{Error, Result};
use crate::records::{RecordWrites, Records};
use crate::storage::redb::RedbStore;
use crate::storage::tables::META;
use crate::storage::{Storage, WriteTxn};

pub(super) const SCHEMA_KEY: &[u8] = b"schema";
/// 2: ordered task indexes and the title trigram index.
const SCHEMA_VERSION: u32 = 2;

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
        board.started().await
    }

    /// The last steps of opening any store: following the events other
    /// processes write, bringing an older schema up to date, and the
    /// start-up work (docs/storage.md).
    pub(super) async fn started(self) -> Result<Board> {
        self.follow_other_processes();
        self.upgrade_schema().await?;
        self.start_up().await?;
        Ok(self)
    }

    /// Brings a board written by an older build to this schema: version 1
    /// lacked the ordered task indexes and the title trigrams, which are
    /// written for every task in one transaction.
    pub(super) async fn upgrade_schema(&self) -> Result<()> {
        let version = self.read(|r| r.record::<u32>(META, SCHEMA_KEY)).await?;
        if version.is_none_or(|v| v >= SCHEMA_VERSION) {
            return Ok(());
        }
        self.write(|tx| {
            let tasks: Vec<crate::records::TaskRecord> = tx.w.all_records(crate::storage::tables::TASKS)?;
            for t in &tasks {
                tx.w.put_task(None, t)?;
            }
            crate::records::titles::fold(tx.w)?;
            Board::mark_schema(tx.w)
        })
        .await
    }

    pub(super) fn assemble(
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
                credentials: auth::Credentials::new(jwt, throttle, hashers),
                options,
                data_dir,
                scratch,
                presence: Default::default(),
                task_cache: Default::default(),
                streams: Default::default(),
                running: Default::default(),
                webhook_wake: tokio::sync::Notify::new(),
                run_output: Default::default(),
                stopping: tokio::sync::watch::Sender::new(false),
            }),
        };
        Ok(board)
    }

    pub(crate) fn mark_schema(w: &mut dyn WriteTxn) -> Result<()> {
        w.put_record(META, SCHEMA_KEY, &SCHEMA_VERSION)
    }
}
