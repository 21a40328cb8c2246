//! Who acts: the member, the lease it presents and what its credentials
//! allow.

use std::sync::Arc;

use uuid::Uuid;

use super::conditions::Request;
use crate::error::{Error, Result};
use crate::model::Role;
use crate::records::MemberRecord;
use crate::tokens::Grant;

/// The acting member of an operation, resolved from credentials, and the
/// lease it presents (`Taskboard-Lease`), if any: a lease id is a fencing
/// token, part of who acts rather than of what is asked (docs/rules.md,
/// fencing).
#[derive(Debug, Clone)]
pub struct Actor {
    /// Shared: the credential cache hands the same record to every request
    /// of the member, without copying it.
    pub member: Arc<MemberRecord>,
    pub lease: Option<Uuid>,
    /// The access token's scopes and projects when the credentials were
    /// one; `None` (a login, an agent's own token, a trusted local tool)
    /// allows every scope and project.
    pub grant: Option<Arc<Grant>>,
    /// What the request asks of its writes (`If-Match`, `Idempotency-Key`),
    /// set by [`super::Board::begin`].
    pub(super) request: Option<Arc<Request>>,
}

impl Actor {
    pub fn id(&self) -> Uuid {
        self.member.id
    }
    pub fn role(&self) -> Role {
        self.member.role
    }
    /// The access token's grant, if the actor presented one.
    pub fn grant(&self) -> Option<&Grant> {
        self.grant.as_deref()
    }

    /// What the request asks of the writes made for it: hand it to
    /// `Board::write_as`.
    pub fn request(&self) -> Option<Arc<Request>> {
        self.request.clone()
    }

    /// The same member acting within `request`.
    pub(super) fn within(mut self, request: Request) -> Actor {
        self.request = Some(Arc::new(request));
        self
    }

    /// The same member acting through an access token.
    pub fn granted(mut self, grant: Grant) -> Actor {
        self.grant = Some(Arc::new(grant));
        self
    }

    pub(super) fn require_admin(&self, what: &str) -> Result<()> {
        if self.member.role.is_admin() {
            Ok(())
        } else {
            Err(Error::forbidden(format!("only an admin or owner may {what}")))
        }
    }
    pub(super) fn require_owner(&self, what: &str) -> Result<()> {
        if self.member.role == Role::Owner {
            Ok(())
        } else {
            Err(Error::forbidden(format!("only an owner may {what}")))
        }
    }
}
