//! Who may act on whose account: the acting member as a transaction sees
//! it, and the rule of ranks between accounts.

use super::{Actor, Tx};
use crate::error::{Error, Result};
use crate::model::Role;
use crate::records::{MemberRecord, Records};

/// The acting member, refused once it is no longer active, with the role
/// its credentials act with: never above the cap of the access token it
/// presents (docs/decisions.md, 20.a).
pub(super) fn load_actor_member(tx: &Tx<'_>, actor: &Actor) -> Result<MemberRecord> {
    match tx.w.member(actor.id())? {
        Some(mut m) if m.is_active => {
            m.role = m.role.capped(actor.grant().and_then(|g| g.role_cap));
            Ok(m)
        }
        _ => Err(Error::unauthorized("the acting member is no longer active")),
    }
}

/// Whether `acting` may act on the account of another member `target`:
/// change it, or set, regenerate or revoke its credentials. An owner may
/// act on any account; an admin only on one whose role is `member`; a
/// member on none. So nobody but an owner acts on an account that ranks
/// at or above their own: an admin can neither reset another admin's or
/// an owner's password or token, nor demote an admin first and then
/// reset it. `what` completes "only … may {what} …".
pub(super) fn check_account_rights(acting: &MemberRecord, target: &MemberRecord, what: &str) -> Result<()> {
    match acting.role {
        Role::Owner => Ok(()),
        Role::Admin if target.role == Role::Member => Ok(()),
        Role::Admin => Err(Error::forbidden(format!(
            "only an owner may {what} an admin or owner; {} is an {}",
            target.slug, target.role
        ))),
        Role::Member => Err(Error::forbidden(format!("only an admin or owner may {what} another member"))),
    }
}
