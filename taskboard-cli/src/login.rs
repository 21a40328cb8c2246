//! The stored login: server address and token, kept in the user's config
//! directory with mode 0600 so other users of the machine cannot read it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use taskboard_core::{Error, Result};
use uuid::Uuid;

/// Overrides the credentials file's path (tests, several accounts).
pub const CREDENTIALS_ENV: &str = "TASKBOARD_CREDENTIALS";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredLogin {
    pub server: String,
    pub token: String,
    pub member_id: Uuid,
    pub slug: String,
}

/// `$TASKBOARD_CREDENTIALS`, else `$XDG_CONFIG_HOME/taskboard/credentials.json`,
/// else `~/.config/taskboard/credentials.json`.
pub fn credentials_path() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = nonempty(CREDENTIALS_ENV) {
        return Some(p);
    }
    let config = nonempty("XDG_CONFIG_HOME").or_else(|| nonempty("HOME").map(|h| h.join(".config")))?;
    Some(config.join("taskboard").join("credentials.json"))
}

fn no_home() -> Error {
    Error::bad_request(format!(
        "cannot find a config directory: set HOME, XDG_CONFIG_HOME or {CREDENTIALS_ENV}"
    ))
}

/// The stored login, if any. A damaged file is reported, not ignored.
pub fn load() -> Result<Option<StoredLogin>> {
    let Some(path) = credentials_path() else { return Ok(None) };
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::bad_request(format!("{}: {e}; run `taskboard logout`", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::bad_request(format!("{}: {e}", path.display()))),
    }
}

pub fn store(login: &StoredLogin) -> Result<PathBuf> {
    let path = credentials_path().ok_or_else(no_home)?;
    let io = |e: std::io::Error| Error::bad_request(format!("{}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        // `mode` applies only when the file is created; tighten an old one.
        if path.exists() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        }
    }
    let mut file = options.open(&path).map_err(io)?;
    let json = serde_json::to_vec_pretty(login).map_err(|e| Error::bad_request(e.to_string()))?;
    std::io::Write::write_all(&mut file, &json).map_err(io)?;
    Ok(path)
}

/// Removes the stored login; true when there was one.
pub fn remove() -> Result<bool> {
    let Some(path) = credentials_path() else { return Ok(false) };
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::bad_request(format!("{}: {e}", path.display()))),
    }
}
