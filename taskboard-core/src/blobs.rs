//! The blob store: file contents of uploads and project files, kept as
//! files in `DATA_DIR/blobs` under names the board generates.
//!
//! A blob is written to `blobs/tmp` first and renamed into place only
//! once complete, synced and within the size limit; on any error the
//! temporary file is removed, so nothing partial remains.

use std::path::{Path, PathBuf};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct BlobStore {
    dir: PathBuf,
}

/// A blob that has been written and synced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    pub storage_name: String,
    pub size: u64,
}

impl BlobStore {
    /// Opens the store and clears temporary files a crash left behind.
    pub fn open(dir: PathBuf) -> Result<BlobStore> {
        let tmp = dir.join("tmp");
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp)?;
        }
        crate::private::create_dir_all(&dir)?;
        crate::private::create_dir(&tmp)?;
        Ok(BlobStore { dir })
    }

    /// A handle on an existing store, without clearing its temporary files.
    pub fn open_existing(dir: &Path) -> BlobStore {
        BlobStore { dir: dir.to_path_buf() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of a stored blob. Storage names are generated uuids; any
    /// other name is refused so a record can never point outside the store.
    pub fn path(&self, storage_name: &str) -> Result<PathBuf> {
        if storage_name.len() != 32 || !storage_name.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(Error::internal(format!("bad storage name {storage_name:?}")));
        }
        Ok(self.dir.join(storage_name))
    }

    /// Streams `reader` into a new blob, refusing (413) once more than
    /// `limit` bytes arrive.
    pub async fn write<R: AsyncRead + Unpin>(&self, mut reader: R, limit: u64) -> Result<StoredBlob> {
        let storage_name = Uuid::new_v4().simple().to_string();
        let tmp = self.dir.join("tmp").join(&storage_name);
        let result = async {
            let path = tmp.clone();
            let file = tokio::task::spawn_blocking(move || crate::private::create_file(&path))
                .await
                .map_err(Error::internal)??;
            let mut file = tokio::fs::File::from_std(file);
            let mut buf = vec![0u8; 64 * 1024];
            let mut size: u64 = 0;
            loop {
                let n = reader
                    .read(&mut buf)
                    .await
                    .map_err(|e| Error::bad_request(format!("the upload could not be read: {e}")))?;
                if n == 0 {
                    break;
                }
                size += n as u64;
                if size > limit {
                    return Err(Error::too_large(format!("the file exceeds the limit of {limit} bytes")));
                }
                file.write_all(&buf[..n]).await?;
            }
            file.sync_all().await?;
            drop(file);
            tokio::fs::rename(&tmp, self.dir.join(&storage_name)).await?;
            Ok(size)
        }
        .await;
        match result {
            Ok(size) => Ok(StoredBlob { storage_name, size }),
            Err(e) => {
                let _ = tokio::fs::remove_file(&tmp).await;
                Err(e)
            }
        }
    }

    /// Opens a blob for reading.
    pub async fn open_blob(&self, storage_name: &str) -> Result<tokio::fs::File> {
        let path = self.path(storage_name)?;
        tokio::fs::File::open(&path).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::not_found("file content not found")
            } else {
                Error::internal(e)
            }
        })
    }

    /// Removes blobs; missing ones are ignored.
    pub fn remove(&self, storage_names: &[String]) {
        for name in storage_names {
            if let Ok(path) = self.path(name)
                && let Err(e) = std::fs::remove_file(&path)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(%e, blob = %name, "could not remove blob");
            }
        }
    }
}
