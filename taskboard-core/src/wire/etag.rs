//! Entity tags of answers.

use serde::Serialize;

use crate::error::{Error, Result};

/// The strong entity tag of an answer body: it changes whenever the body
/// does, so whenever what the resource shows changes.
pub fn etag(body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(body);
    let hex: String = hash[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether an `If-Match` or `If-None-Match` list names `tag` (`*` names
/// any).
pub fn etag_listed(list: &str, tag: &str) -> bool {
    list.split(',').map(str::trim).any(|t| t == "*" || t == tag || t.strip_prefix("W/") == Some(tag))
}

/// The entity tag of a resource as its answers show it.
pub fn etag_of_wire<T: Serialize>(value: &T) -> Result<Option<String>> {
    Ok(Some(etag(&serde_json::to_vec(value).map_err(Error::internal)?)))
}
