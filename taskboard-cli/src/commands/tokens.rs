//! `taskboard token …` and `taskboard logout --everywhere`.

use jiff::{SignedDuration, Timestamp};
use taskboard_core::api::{CreateAccessToken, GetMe, ListAccessTokens, LogoutEverywhere, RevokeAccessToken};
use taskboard_core::model::Member;
use taskboard_core::tokens::{AccessToken, CreatedAccessToken, NewAccessToken};
use taskboard_core::{Error, Perform, Result};

use crate::cli::TokenCmd;
use crate::output::{Out, Row, short_id, when};

/// The member named, or the caller.
async fn member_or_me<B: Perform>(b: &B, member: Option<String>) -> Result<Member> {
    match member {
        Some(m) => b.find_member(&m).await,
        None => b.call::<GetMe>((), (), ()).await,
    }
}

/// `--expires`: a time, or a duration from now (`90m`, `12h`, `30d`, `2w`).
pub(super) fn expiry(text: &str, now: Timestamp) -> Result<Timestamp> {
    if let Ok(at) = text.parse::<Timestamp>() {
        return Ok(at);
    }
    let bad = || {
        Error::invalid(
            "expires",
            format!("{text:?} is neither a time (2027-01-31T00:00:00Z) nor 90m, 12h, 30d or 2w"),
        )
    };
    let (number, unit) = text.trim().split_at(text.trim().len().saturating_sub(1));
    let n: i64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(bad()),
    };
    let span = SignedDuration::from_secs(n.checked_mul(seconds).ok_or_else(bad)?);
    now.checked_add(span).map_err(|_| bad())
}

pub(super) async fn token<B: Perform>(b: &B, c: TokenCmd, out: Out) -> Result<()> {
    match c {
        TokenCmd::Create { name, scopes, projects, expires, member } => {
            let m = member_or_me(b, member).await?;
            let mut project_ids = Vec::new();
            for p in projects {
                project_ids.push(b.find_project(&p).await?.id);
            }
            let new = NewAccessToken {
                name,
                scopes,
                project_ids: (!project_ids.is_empty()).then_some(project_ids),
                expires_at: expires.map(|e| expiry(&e, Timestamp::now())).transpose()?,
            };
            let created = b.call::<CreateAccessToken>(m.id, (), new).await?;
            if out.quiet {
                out.line(&created.token);
            } else {
                out.item(&created);
            }
        }
        TokenCmd::List { member } => {
            let m = member_or_me(b, member).await?;
            out.list(&b.call::<ListAccessTokens>(m.id, (), ()).await?)
        }
        TokenCmd::Revoke { id, member } => {
            let m = member_or_me(b, member).await?;
            let done = b.call::<RevokeAccessToken>((m.id, id), (), ()).await?;
            out.done(&done, &format!("revoked access token {id} of {}", m.slug))
        }
    }
    Ok(())
}

/// Ends every login of the caller (`logout --everywhere`).
pub(super) async fn logout_everywhere<B: Perform>(b: &B) -> Result<Member> {
    let me = b.call::<GetMe>((), (), ()).await?;
    b.call::<LogoutEverywhere>(me.id, (), ()).await?;
    Ok(me)
}

fn scopes(t: &AccessToken) -> String {
    t.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(",")
}

impl Row for AccessToken {
    const HEADERS: &'static [&'static str] =
        &["id", "name", "scopes", "projects", "created", "last used", "expires"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        let projects = match &self.project_ids {
            None => "all".to_string(),
            Some(ids) => ids
                .iter()
                .map(|p| if table { short_id(p) } else { p.to_string() })
                .collect::<Vec<_>>()
                .join(","),
        };
        vec![
            self.id.to_string(),
            self.name.clone(),
            scopes(self),
            projects,
            when(&self.created_at),
            self.last_used_at.as_ref().map(when).unwrap_or_else(|| "never".into()),
            self.expires_at.as_ref().map(when).unwrap_or_else(|| "never".into()),
        ]
    }
}

impl Row for CreatedAccessToken {
    const HEADERS: &'static [&'static str] = &["id", "name", "scopes", "projects", "expires", "token"];
    fn id(&self) -> String {
        self.access_token.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        let mut cells = self.access_token.cells(table);
        cells.truncate(4);
        cells.push(self.access_token.expires_at.as_ref().map(when).unwrap_or_else(|| "never".into()));
        cells.push(format!("{}  (shown once)", self.token));
        cells
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_reads_a_time_or_a_duration() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(expiry("30d", now).unwrap().to_string(), "2026-01-31T00:00:00Z");
        assert_eq!(expiry("2027-01-31T00:00:00Z", now).unwrap().to_string(), "2027-01-31T00:00:00Z");
        assert!(expiry("soon", now).is_err());
        assert!(expiry("5y", now).is_err());
    }
}
