//! Calling an endpoint: the caller's credentials and the token's scope
//! checked, then the declaration's core function, under an idempotency
//! key when the request carries one.

use std::borrow::Cow;

use bytes::Bytes;

use super::endpoint::{Call, Caller, Encoded, Endpoint, Reply};
use crate::board::{AnswerOf, Board, IdempotencyKey, Idempotent};
use crate::error::Result;

/// Performs `E` as `caller`: what the command line's local mode and an
/// embedding program call.
pub async fn call<E: Endpoint>(
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

/// What a request asks besides its inputs: that the resource still
/// have one of the entity tags of `if_match`, and that the change be made
/// once per `idempotency_key` (docs/rules.md, the agent work protocol).
#[derive(Debug, Default)]
pub struct Conditions<'a> {
    pub if_match: Option<&'a str>,
    pub idempotency_key: Option<IdempotencyKey>,
}

/// Performs `E` as `caller` on the request's `conditions`, answering in
/// wire form: the token's scope is checked; under an idempotency key the
/// first successful answer is stored with the change it answers and
/// replayed, unchanged, to a repeat; an `If-Match` list is checked by the
/// change's own write. What the server does for each request.
pub async fn perform<'c, E: Endpoint>(
    board: &Board,
    caller: &'c Caller,
    conditions: Conditions<'_>,
    call: Call<E>,
) -> Result<Idempotent<Encoded>> {
    super::scopes::permit::<E>(board, caller, &call).await?;
    let Conditions { if_match, idempotency_key } = conditions;
    let path = call.path;
    // The conditional and idempotent paths are boxed: held inline, their
    // futures would make every call's future several times larger, and
    // it is moved (copied) as a whole, on reads that use neither. The
    // caller is borrowed unless a key makes a new one.
    let run = move |caller: Cow<'c, Caller>| async move {
        match if_match {
            Some(list) => {
                let actor = caller.actor()?.clone();
                Box::pin(super::if_match::<E, _, _>(board, actor, path, list, |actor| async move {
                    E::handle_encoded(board, &caller.acting(actor), call).await
                }))
                .await
            }
            None => E::handle_encoded(board, &caller, call).await,
        }
    };
    match idempotency_key {
        Some(key) => Box::pin(idempotent::<E, _>(board, caller, key, run)).await,
        None => run(Cow::Borrowed(caller)).await.map(Idempotent::Fresh),
    }
}

/// Performs `E` as `caller` under an idempotency key (see [`perform`]).
pub async fn call_idempotent<E: Endpoint>(
    board: &Board,
    caller: &Caller,
    key: IdempotencyKey,
    call: Call<E>,
) -> Result<Idempotent<Encoded>> {
    perform::<E>(board, caller, Conditions { if_match: None, idempotency_key: Some(key) }, call).await
}

/// Runs `run` once per key of the caller: `run` is given the caller whose
/// actor carries the key, and the board stores the answer of `E` with the
/// change the first write for it makes.
async fn idempotent<'c, E: Endpoint, F>(
    board: &Board,
    caller: &'c Caller,
    key: IdempotencyKey,
    run: impl FnOnce(Cow<'c, Caller>) -> F,
) -> Result<Idempotent<Encoded>>
where
    F: Future<Output = Result<Encoded>>,
{
    let actor = caller.actor()?.clone();
    let status = E::INFO.status;
    // The board's write returns the operation's own value; the declaration
    // knows which of those values is its answer, and how it is sent.
    let answer_of: AnswerOf = Box::new(move |value: &dyn std::any::Any| {
        if let Some(r) = value.downcast_ref::<E::Response>() {
            return r.stored_form(status);
        }
        if let Some(r) = E::answer_from_write(value) {
            return r.stored_form(status);
        }
        // Endpoints answering `{"ok": true}` for a write that returns nothing.
        if value.is::<()>()
            && std::any::TypeId::of::<E::Response>() == std::any::TypeId::of::<crate::model::Ok>()
        {
            return Some((status, Bytes::from_static(b"{\"ok\":true}")));
        }
        None
    });
    let finish = move |encoded: &Encoded| match encoded {
        Encoded::Json(b) | Encoded::Tagged { json: b, .. } => Some((status, b.clone())),
        Encoded::Empty => Some((204, Bytes::new())),
        _ => None,
    };
    board.idempotent(actor, key, answer_of, finish, |actor| run(Cow::Owned(caller.acting(actor)))).await
}
