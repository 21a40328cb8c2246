//! Calling an endpoint: the caller's credentials and the token's scope
//! checked, then the declaration's core function, under an idempotency
//! key when the request carries one.

use bytes::Bytes;

use super::endpoint::{Call, Caller, Encoded, Endpoint, Reply};
use crate::board::Board;
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

/// Performs `E` as `caller` under an idempotency key: the first
/// successful answer is stored with the change it answers and replayed,
/// unchanged, to a repeat (docs/rules.md, the agent work protocol).
pub async fn call_idempotent<E: Endpoint>(
    board: &Board,
    caller: &Caller,
    key: crate::board::IdempotencyKey,
    call: Call<E>,
) -> Result<crate::board::Idempotent<Encoded>> {
    super::scopes::permit::<E>(board, caller, &call).await?;
    call_idempotent_with::<E>(board, caller, key, E::handle_encoded(board, caller, call)).await
}

/// [`call_idempotent`] of a call already under way (a conditional one,
/// say): `run` performs `E` and gives its answer in wire form.
pub async fn call_idempotent_with<E: Endpoint>(
    board: &Board,
    caller: &Caller,
    key: crate::board::IdempotencyKey,
    run: impl Future<Output = Result<Encoded>>,
) -> Result<crate::board::Idempotent<Encoded>> {
    let member = caller.actor()?.id();
    let status = E::INFO.status;
    let answer_of: crate::board::AnswerOf = Box::new(move |value: &dyn std::any::Any| {
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
        Encoded::Json(b) => Some((status, b.clone())),
        Encoded::Empty => Some((204, Bytes::new())),
        _ => None,
    };
    board.idempotent(member, key, answer_of, finish, run).await
}
