//! A board kept in PostgreSQL.

use std::path::Path;
use std::sync::Arc;

use super::{Board, BoardOptions};
use crate::blobs::BlobStore;
use crate::credentials::JwtKeys;
use crate::error::{Error, Result};
use crate::storage::postgres::{PgStore, is_postgres_url};
use crate::storage::tables::META;
use crate::storage::{Output, Storage, WriteOp};

/// The key in META of the secret that signs session tokens, for a board
/// whose processes share a database (each must accept the others' tokens).
pub(crate) const JWT_SECRET_KEY: &[u8] = b"jwt_secret";

impl Board {
    /// Whether `database` already holds a board (a member exists): the
    /// data directory's `board.redb` for the embedded store, the board's
    /// schema in PostgreSQL. Looks without creating anything.
    pub async fn database_holds_board(database: Option<&str>, data_dir: impl AsRef<Path>) -> Result<bool> {
        match database {
            None => Ok(data_dir.as_ref().join("board.redb").exists()),
            Some(url) if is_postgres_url(url) => crate::storage::postgres::holds_board(url).await,
            Some(other) => Err(unsupported(other)),
        }
    }

    /// Opens the board where `database` says: the embedded store in
    /// `data_dir` when it is `None`, a PostgreSQL database for a
    /// `postgres://` URL (see [`Board::open_postgres`]).
    pub async fn open_database(
        database: Option<&str>,
        data_dir: impl AsRef<Path>,
        options: BoardOptions,
    ) -> Result<Board> {
        match database {
            None => Board::open(data_dir, options).await,
            Some(url) if is_postgres_url(url) => Board::open_postgres(url, data_dir, options).await,
            Some(other) => Err(unsupported(other)),
        }
    }

    /// Opens the board kept in the PostgreSQL database at `url` (the
    /// schema is created or migrated first). `data_dir` holds file
    /// contents: every process serving the same database must see the
    /// same directory. The JWT secret, unless given in the options, is
    /// kept in the database, created by the first process that opens it.
    pub async fn open_postgres(
        url: &str,
        data_dir: impl AsRef<Path>,
        options: BoardOptions,
    ) -> Result<Board> {
        let url = url.to_string();
        let dir = data_dir.as_ref().to_path_buf();
        let board = tokio::task::spawn_blocking(move || {
            crate::private::open_data_dir(&dir)?;
            let store: Arc<dyn Storage> = Arc::new(PgStore::open(&url)?);
            let blobs = BlobStore::open(dir.join("blobs"))?;
            let jwt = match &options.jwt_secret {
                Some(secret) => JwtKeys::new(secret.as_bytes()),
                None => JwtKeys::new(&shared_jwt_secret(&*store)?),
            };
            Board::assemble(store, blobs, jwt, options, Some(dir), None)
        })
        .await
        .map_err(Error::internal)??;
        board.started().await
    }
}

fn unsupported(database: &str) -> Error {
    Error::bad_request(format!(
        "unsupported database {:?}: give a postgres:// URL, or none for the embedded store in the data directory",
        database.split(['?', '@']).next().unwrap_or_default()
    ))
}

/// The secret kept in the store, written by whichever process asks first
/// (writes are serialised, so all processes read the same one).
fn shared_jwt_secret(store: &dyn Storage) -> Result<Vec<u8>> {
    if let Some(secret) = store.read()?.get(META, JWT_SECRET_KEY)? {
        return Ok(secret);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let fresh = crate::credentials::new_jwt_secret().into_bytes();
    store.submit(WriteOp {
        run: Box::new(move |w| {
            let secret = match w.get(META, JWT_SECRET_KEY)? {
                Some(existing) => existing,
                None => {
                    w.put(META, JWT_SECRET_KEY, &fresh)?;
                    fresh
                }
            };
            Ok(Box::new(secret) as Output)
        }),
        done: Box::new(move |r| {
            let _ = tx.send(r);
        }),
    });
    let out = rx.recv().map_err(|_| Error::internal("the storage writer stopped"))??;
    Ok(*out.downcast::<Vec<u8>>().expect("the output of this operation"))
}
