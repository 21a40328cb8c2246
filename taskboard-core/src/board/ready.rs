//! Readiness: whether this process can serve the board now (`GET /ready`).

use std::path::Path;

use super::Board;
use super::open::SCHEMA_KEY;
use crate::error::{Error, ErrorKind, Result};
use crate::model::Health;
use crate::storage::tables::META;

impl Board {
    /// Reads the store in a fresh snapshot (on PostgreSQL this takes a
    /// connection and runs a statement on it) and looks at the places the
    /// board keeps on disk: the database file of the embedded store and
    /// the directory of file contents. Any of them failing makes the
    /// board unavailable, with a detail naming which; liveness
    /// (`GET /health`) asks nothing of them.
    pub async fn ready(&self) -> Result<Health> {
        let backend = self.storage_backend();
        let store = self.read(|r| r.get(META, SCHEMA_KEY).map(|_| ())).await;
        if let Err(e) = store {
            tracing::warn!(backend, detail = e.detail(), "readiness: the store cannot be read");
            return Err(unavailable(format!("the {backend} store cannot be read")));
        }
        let database = self.data_dir().filter(|_| backend == "redb").map(|d| d.join("board.redb"));
        let blobs = self.blob_dir().to_path_buf();
        let places = tokio::task::spawn_blocking(move || {
            if let Some(file) = &database {
                present(file, false)?;
            }
            present(&blobs, true)
        })
        .await
        .map_err(Error::internal)?;
        places.map_err(|problem| {
            tracing::warn!(%problem, "readiness: a place of the board is missing");
            unavailable(problem)
        })?;
        Ok(Health { status: "ready".into(), version: env!("CARGO_PKG_VERSION").into() })
    }
}

fn unavailable(detail: impl Into<String>) -> Error {
    Error::new(ErrorKind::Unavailable, detail)
}

/// Whether `path` is there as the file or directory the board opened:
/// a store moved or deleted under a running process still answers from
/// its open handle, but the next start would not find it.
fn present(path: &Path, dir: bool) -> std::result::Result<(), String> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() == dir => {}
        Ok(_) => return Err(format!("{shown} is not a {}", if dir { "directory" } else { "file" })),
        Err(e) => return Err(format!("{shown} cannot be read: {e}")),
    }
    if dir {
        std::fs::read_dir(path).map_err(|e| format!("{shown} cannot be listed: {e}"))?;
    } else {
        std::fs::File::open(path).map_err(|e| format!("{shown} cannot be opened: {e}"))?;
    }
    Ok(())
}
