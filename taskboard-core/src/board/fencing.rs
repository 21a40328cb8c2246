//! Fencing of leases (docs/rules.md, fencing): while a task is held under
//! a lease, only its holder changes its status, assignee or steps; an
//! admin or owner may, and the change ends the lease; an agent that is not
//! the holder changes nothing of the task but may comment. A request that
//! presents a lease id (`Taskboard-Lease`) that is not the task's current
//! lease is refused, whoever sends it, so a holder whose lease expired
//! and was taken by another cannot write over the new holder's work.

use uuid::Uuid;

use super::Actor;
use crate::error::{Error, Result};
use crate::model::{MemberType, Role};
use crate::records::{Render, TaskRecord};

/// Bounds of `lease_seconds`.
pub const LEASE_SECONDS: std::ops::RangeInclusive<u32> = 10..=86_400;

/// Checks a lease duration.
pub fn check_lease(seconds: Option<u32>) -> Result<Option<u32>> {
    match seconds {
        Some(s) if !LEASE_SECONDS.contains(&s) => Err(Error::invalid(
            "lease_seconds",
            format!("must be {}-{}, got {s}", LEASE_SECONDS.start(), LEASE_SECONDS.end()),
        )),
        other => Ok(other),
    }
}

/// What a change of a task touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Touch {
    /// Its status, assignee or steps, or the task as a whole (deletion,
    /// rejection): the holder's alone.
    Work,
    /// Its other fields: people may change them; an agent that is not the
    /// holder may not.
    Fields,
    /// A comment on it: anyone may.
    Comment,
}

/// The part of an [`Actor`] the fencing rule reads, small enough to move
/// into a write's closure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fence {
    pub member: Uuid,
    role: Role,
    kind: MemberType,
    lease: Option<Uuid>,
}

impl Actor {
    /// The member acting without a lease.
    pub fn new(member: impl Into<std::sync::Arc<crate::records::MemberRecord>>) -> Actor {
        Actor { member: member.into(), lease: None, grant: None, request: None }
    }

    /// The same member presenting `lease` (`Taskboard-Lease`).
    pub fn presenting(mut self, lease: Option<Uuid>) -> Actor {
        self.lease = lease;
        self
    }

    /// The lease this actor presents, if any.
    pub fn lease(&self) -> Option<Uuid> {
        self.lease
    }

    pub(crate) fn fence(&self) -> Fence {
        Fence { member: self.member.id, role: self.member.role, kind: self.member.kind, lease: self.lease }
    }
}

/// What the rule allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allowed {
    /// The change goes ahead; a lease, if any, stays.
    Yes,
    /// The change goes ahead and ends another member's lease (an admin's
    /// change of status, assignee or steps).
    EndingLease,
}

impl Fence {
    /// Checks a change of `t` touching `touch`.
    pub(crate) fn check(&self, r: &(impl Render + ?Sized), t: &TaskRecord, touch: Touch) -> Result<Allowed> {
        if let Some(presented) = self.lease
            && t.lease.is_none_or(|l| l.id != presented)
        {
            let key = r.task_key_of(t)?;
            return Err(Error::conflict(match t.lease {
                Some(_) => format!(
                    "lease {presented} is not the current lease on {key}; it was held by another since"
                ),
                None => format!(
                    "lease {presented} is not the current lease on {key}: {key} is not held under a lease"
                ),
            }));
        }
        let Some(l) = t.lease else { return Ok(Allowed::Yes) };
        if l.holder == self.member {
            return Ok(Allowed::Yes);
        }
        let refuse = |what: &str| -> Result<Allowed> {
            let key = r.task_key_of(t)?;
            let holder = r.member(l.holder)?.map(|m| m.slug).unwrap_or_else(|| l.holder.to_string());
            Err(Error::conflict(format!("{key} is held under a lease by {holder}; {what}")))
        };
        match touch {
            Touch::Comment => Ok(Allowed::Yes),
            Touch::Work if self.role.is_admin() => Ok(Allowed::EndingLease),
            Touch::Work => {
                refuse("only the holder, an admin or an owner may change its status, assignee or steps")
            }
            Touch::Fields if self.kind == MemberType::Agent && !self.role.is_admin() => {
                refuse("an agent that is not the holder may only comment on it")
            }
            Touch::Fields => Ok(Allowed::Yes),
        }
    }
}
