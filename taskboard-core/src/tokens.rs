//! Access tokens (docs/rules.md, access tokens): named credentials of a
//! member with scopes, an optional restriction to projects and an
//! optional expiry, shown once and stored as a hash.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::{Role, Scope};
pub use taskboard_wire::access_tokens::*;

/// Prefix of access tokens, apart from the agents' own `tbk-` tokens so a
/// credential says at a glance (and to a secret scanner) which it is.
pub const ACCESS_TOKEN_PREFIX: &str = "tba-";

/// Most access tokens one member holds.
pub const MAX_TOKENS_PER_MEMBER: usize = 100;

/// An access token as stored (table `ACCESS_TOKENS`): its SHA-256, never
/// the token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AccessTokenRecord {
    pub id: Uuid,
    pub member_id: Uuid,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub project_ids: Option<Vec<Uuid>>,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
    pub expires_at: Option<Timestamp>,
    /// Hex SHA-256 of the token.
    pub hash: String,
    /// The access token this one was made with: it expires no later and
    /// is revoked with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<Uuid>,
    /// The agent whose own token (`tbk-`) made this one: revoked when
    /// that token is revoked or replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_token_of: Option<Uuid>,
    /// The highest role the token acts with: the minter's role when a
    /// member made it for another (and its parent's cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_cap: Option<Role>,
}

impl AccessTokenRecord {
    pub fn to_wire(&self) -> AccessToken {
        AccessToken {
            id: self.id,
            member_id: self.member_id,
            name: self.name.clone(),
            scopes: self.scopes.clone(),
            project_ids: self.project_ids.clone(),
            created_at: self.created_at,
            last_used_at: self.last_used_at,
            expires_at: self.expires_at,
        }
    }

    pub fn grant(&self) -> Grant {
        Grant {
            token_id: self.id,
            scopes: self.scopes.clone(),
            project_ids: self.project_ids.clone(),
            expires_at: self.expires_at,
            role_cap: self.role_cap,
        }
    }
}

/// What the credentials of a request allow beyond the member's role: an
/// access token's scopes and projects. A login JWT and an agent's own
/// token carry none, which is every scope and every project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub token_id: Uuid,
    pub scopes: Vec<Scope>,
    pub project_ids: Option<Vec<Uuid>>,
    pub expires_at: Option<Timestamp>,
    /// The highest role the token acts with, whatever its member's role
    /// becomes: None for a token its member made.
    pub role_cap: Option<Role>,
}

impl Grant {
    /// 403 naming `scope` unless the token has it.
    pub fn require(&self, scope: Scope) -> Result<()> {
        if self.scopes.contains(&scope) {
            return Ok(());
        }
        let held: Vec<&str> = self.scopes.iter().map(|s| s.as_str()).collect();
        Err(Error::forbidden(format!(
            "this access token lacks the scope {scope} that this request needs (it has: {})",
            held.join(", ")
        )))
    }

    /// Whether the token may act in `project`.
    pub fn allows_project(&self, project: Uuid) -> bool {
        self.project_ids.as_ref().is_none_or(|ids| ids.contains(&project))
    }

    /// 401 once the token has expired.
    pub fn check_expiry(&self, now: Timestamp) -> Result<()> {
        match self.expires_at {
            Some(at) if at <= now => {
                Err(Error::unauthorized(format!("this access token expired at {at}; create a new one")))
            }
            _ => Ok(()),
        }
    }
}

/// A new access token: `tba-` and 43 URL-safe characters (256 random bits).
pub fn new_access_token() -> String {
    let agent = crate::credentials::new_agent_token();
    let random = agent.strip_prefix(crate::credentials::AGENT_TOKEN_PREFIX).unwrap_or(&agent);
    format!("{ACCESS_TOKEN_PREFIX}{random}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(name: &str, scopes: Vec<Scope>) -> NewAccessToken {
        NewAccessToken { name: name.into(), scopes, project_ids: None, expires_at: None }
    }

    #[test]
    fn fields_are_checked() {
        let now = Timestamp::now();
        assert!(checked(new("", vec![Scope::Read]), now).is_err());
        assert!(checked(new(&"x".repeat(101), vec![Scope::Read]), now).is_err());
        assert!(checked(new("ci", vec![]), now).is_err());
        let ok = checked(new(" ci ", vec![Scope::Admin, Scope::Read, Scope::Read]), now).unwrap();
        assert_eq!(ok.name, "ci");
        assert_eq!(ok.scopes, vec![Scope::Read, Scope::Admin]);
        let past = NewAccessToken { expires_at: Some(now), ..new("ci", vec![Scope::Read]) };
        assert!(checked(past, now).is_err());
        let none = NewAccessToken { project_ids: Some(vec![]), ..new("ci", vec![Scope::Read]) };
        assert!(checked(none, now).is_err());
    }

    #[test]
    fn tokens_have_their_own_prefix() {
        let t = new_access_token();
        assert!(t.starts_with("tba-"));
        assert_eq!(t.len(), 4 + 43);
    }
}
