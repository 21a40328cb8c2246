//! Entity tags of answers and the `If-Match` condition of a change.

use serde::Serialize;

use super::endpoint::Endpoint;
use crate::board::Board;
use crate::error::{Error, Result};
use crate::storage::ReadTxn;

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

/// Performs `call` (a PATCH or DELETE of `E`) on the condition that the
/// resource's current entity tag is listed in `if_match`; checked inside
/// the transaction of the change, so nothing can change the resource
/// between the check and the write (412 `precondition_failed` otherwise,
/// with nothing changed).
pub async fn if_match<E: Endpoint, T>(
    board: &Board,
    path: E::Path,
    if_match: &str,
    call: impl Future<Output = Result<T>>,
) -> Result<T> {
    let list = if_match.to_string();
    let check = move |r: &dyn ReadTxn| match E::current_etag(r, path)? {
        Some(current) if !etag_listed(&list, &current) => Err(Error::new(
            crate::error::ErrorKind::PreconditionFailed,
            format!("If-Match {list} is not the current ETag {current}: the resource changed"),
        )),
        _ => Ok(()),
    };
    board.on_condition(Box::new(check), call).await
}
