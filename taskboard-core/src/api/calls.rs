//! Calling an endpoint: the caller's credentials and the token's scope
//! checked, then the declaration's core function, on the conditions the
//! request sent (`If-Match`, `Idempotency-Key`), which the board's
//! [`conditions`](crate::board::conditions) module keeps.

use bytes::Bytes;

use super::endpoint::{Call, Caller, Encoded, Handle};
use crate::board::{Board, Conditions, IdempotencyKey, Idempotent, IfMatch};
use crate::error::Result;

/// Performs `E` as `caller`: what the command line's local mode and an
/// embedding program call.
pub async fn call<E: Handle>(
    board: &Board,
    caller: &Caller,
    path: E::Path,
    query: E::Query,
    body: E::Body,
) -> Result<E::Response> {
    if E::INFO.auth {
        caller.actor()?;
    }
    let call = Call::new(path, query, body);
    super::scopes::permit::<E>(board, caller, &call).await?;
    E::handle(board, caller, call).await
}

/// Performs `E` as `caller` on the request's `conditions`, answering in
/// wire form: the token's scope is checked; under an idempotency key the
/// first successful answer is stored with the change it answers and
/// replayed, unchanged, to a repeat; an `If-Match` list is checked by the
/// change's own write against the resource the declaration names
/// ([`Handle::resource`]). What the server does for each request.
pub async fn perform<E: Handle>(
    board: &Board,
    caller: &Caller,
    conditions: &Conditions,
    call: Call<E>,
) -> Result<Idempotent<Encoded>> {
    super::scopes::permit::<E>(board, caller, &call).await?;
    let idempotency_key = conditions.idempotency_key.clone();
    let if_match = conditions
        .if_match
        .as_ref()
        .and_then(|list| Some(IfMatch { list: list.clone(), resource: E::resource(call.path)? }));
    if if_match.is_none() && idempotency_key.is_none() {
        return E::handle_encoded(board, caller, call).await.map(Idempotent::Fresh);
    }
    // Boxed: held inline, the conditional path would make every call's
    // future several times larger, and it is moved (copied) as a whole,
    // on reads that have no conditions.
    Box::pin(conditional::<E>(board, caller, if_match, idempotency_key, call)).await
}

/// Performs `E` as `caller` under an idempotency key (see [`perform`]).
pub async fn call_idempotent<E: Handle>(
    board: &Board,
    caller: &Caller,
    key: IdempotencyKey,
    call: Call<E>,
) -> Result<Idempotent<Encoded>> {
    let conditions = Conditions { idempotency_key: Some(key), ..Conditions::default() };
    perform::<E>(board, caller, &conditions, call).await
}

/// Begins the request on the board, performs `E` as the actor that
/// carries its conditions to the writes, and finishes it with the answer.
async fn conditional<E: Handle>(
    board: &Board,
    caller: &Caller,
    if_match: Option<IfMatch>,
    key: Option<IdempotencyKey>,
    call: Call<E>,
) -> Result<Idempotent<Encoded>> {
    let actor = caller.actor()?.clone();
    let session = match board.begin(actor, if_match, key, E::INFO.status).await? {
        Idempotent::Fresh(session) => session,
        Idempotent::Replayed { status, body } => return Ok(Idempotent::Replayed { status, body }),
    };
    let encoded = E::handle_encoded(board, &caller.acting(session.actor().clone()), call).await?;
    session.finish(kept_form(&encoded, E::INFO.status)).await?;
    Ok(Idempotent::Fresh(encoded))
}

/// The status and body an answer is kept with under a key, when the call
/// that made it wrote nothing (a call that wrote stored its answer with
/// its change); `None` for answers that are not kept (streams).
fn kept_form(encoded: &Encoded, status: u16) -> Option<(u16, Bytes)> {
    match encoded {
        Encoded::Json(b) | Encoded::Tagged { json: b, .. } => Some((status, b.clone())),
        Encoded::Empty => Some((204, Bytes::new())),
        _ => None,
    }
}
