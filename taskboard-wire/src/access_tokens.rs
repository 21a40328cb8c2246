//! The words of access tokens (docs/rules.md, access tokens): the body
//! that asks for one, a token as listed and as created, and the check of
//! a new token's fields. The core keeps them as hashes and says what
//! they allow (`taskboard_core::tokens`).

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::Scope;

/// Longest name of an access token, in characters.
pub const MAX_TOKEN_NAME: usize = 100;

/// Body of `POST /members/{id}/tokens`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewAccessToken {
    /// 1 to 100 characters, to tell the token from the member's others.
    pub name: String,
    /// At least one scope.
    pub scopes: Vec<Scope>,
    /// The projects the token is for; absent: every project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_ids: Option<Vec<Uuid>>,
    /// When the token stops working; absent: never. Must be in the future.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
}

/// An access token as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AccessToken {
    pub id: Uuid,
    pub member_id: Uuid,
    pub name: String,
    pub scopes: Vec<Scope>,
    /// `null`: every project.
    pub project_ids: Option<Vec<Uuid>>,
    pub created_at: Timestamp,
    /// Refreshed at most once a minute.
    pub last_used_at: Option<Timestamp>,
    pub expires_at: Option<Timestamp>,
}

/// Answer of `POST /members/{id}/tokens`: the token itself, shown once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CreatedAccessToken {
    #[serde(flatten)]
    pub access_token: AccessToken,
    /// The secret (`tba-…`): shown in this answer only.
    pub token: String,
}

/// A new token's fields, checked: the name trimmed and 1–100 characters,
/// scopes at least one and each once, a project list not empty and each
/// once, an expiry after `now`.
pub fn checked(mut new: NewAccessToken, now: Timestamp) -> Result<NewAccessToken> {
    new.name = new.name.trim().to_string();
    let length = new.name.chars().count();
    if length == 0 || length > MAX_TOKEN_NAME {
        return Err(Error::invalid("name", format!("must be 1 to {MAX_TOKEN_NAME} characters")));
    }
    if new.name.chars().any(char::is_control) {
        return Err(Error::invalid("name", "must not hold control characters"));
    }
    new.scopes.sort();
    new.scopes.dedup();
    if new.scopes.is_empty() {
        let all: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
        return Err(Error::invalid("scopes", format!("name at least one of: {}", all.join(", "))));
    }
    if let Some(ids) = &mut new.project_ids {
        ids.sort();
        ids.dedup();
        if ids.is_empty() {
            return Err(Error::invalid(
                "project_ids",
                "name at least one project, or leave project_ids out for every project",
            ));
        }
    }
    if let Some(at) = new.expires_at
        && at <= now
    {
        return Err(Error::invalid("expires_at", format!("must be in the future (now is {now})")));
    }
    Ok(new)
}

crate::wire!(NewAccessToken, AccessToken, CreatedAccessToken);
