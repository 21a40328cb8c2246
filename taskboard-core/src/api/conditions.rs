//! The `If-Match` condition of a change.

use super::endpoint::Endpoint;
use crate::board::{Actor, Board};
use crate::error::{Error, Result};
use crate::storage::ReadTxn;
use crate::wire::etag_listed;

/// Performs `call` (a PATCH or DELETE of `E`) for `actor` on the
/// condition that the resource's current entity tag is listed in
/// `if_match`: `call` is given the actor carrying the condition, and the
/// condition is checked inside the transaction of the change it makes as
/// that actor, so nothing can change the resource between the check and
/// the write (412 `precondition_failed` otherwise, with nothing changed).
pub async fn if_match<E: Endpoint, T, F>(
    board: &Board,
    actor: Actor,
    path: E::Path,
    if_match: &str,
    call: impl FnOnce(Actor) -> F,
) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    let list = if_match.to_string();
    let check = move |r: &dyn ReadTxn| match E::current_etag(r, path)? {
        Some(current) if !etag_listed(&list, &current) => Err(Error::new(
            crate::error::ErrorKind::PreconditionFailed,
            format!("If-Match {list} is not the current ETag {current}: the resource changed"),
        )),
        _ => Ok(()),
    };
    board.on_condition(actor, Box::new(check), call).await
}
