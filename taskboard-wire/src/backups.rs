//! The words of backups and archives: where a backup is written, and what
//! an export, import or backup moved.

use serde::{Deserialize, Serialize};

/// What an export or import moved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArchiveSummary {
    /// Records (lines after the header).
    pub records: u64,
    /// File contents.
    pub blobs: u64,
    /// Bytes of file contents.
    pub blob_bytes: u64,
}

/// Request of the backup endpoint: a directory on the server's machine.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BackupRequest {
    pub path: String,
}

crate::wire!(BackupRequest, ArchiveSummary);
