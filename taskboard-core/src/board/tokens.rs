//! Access tokens and the end of logins (docs/rules.md, access tokens and
//! sessions): who may create, list and revoke a member's tokens, how a
//! token resolves to its member and grant, and "log out everywhere".

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use uuid::Uuid;

use super::rights::{check_account_rights, load_actor_member};
use super::{Actor, Board, Tx};
use crate::credentials;
use crate::error::{Error, Result};
use crate::events::{Audience, EventKind};
use crate::model::{MemberType, Role};
use crate::records::{MemberRecord, RecordWrites, Records};
use crate::storage::codec::{Key, uuid_value};
use crate::storage::tables::{ACCESS_TOKEN_HASH, ACCESS_TOKENS, MEMBER_ACCESS_TOKENS};
use crate::storage::{Direction, KeyRange, Scan};
use crate::tokens::{
    AccessToken, AccessTokenRecord, CreatedAccessToken, Grant, MAX_TOKENS_PER_MEMBER, NewAccessToken,
    checked, new_access_token,
};

/// How often `last_used_at` of one token is written.
const LAST_USED_INTERVAL: Duration = Duration::from_secs(60);

/// The rights of managing `target`'s access tokens: its own, or another's
/// within [`check_account_rights`] (an owner for anyone, an admin for a
/// member whose role is `member`).
fn check_tokens_rights(acting: &MemberRecord, target: &MemberRecord, what: &str) -> Result<()> {
    if acting.id != target.id {
        check_account_rights(acting, target, what)?;
    }
    Ok(())
}

/// A token made through another access token stays within it: no scope
/// and no project the acting token lacks.
fn check_narrower(actor: &Actor, new: &NewAccessToken) -> Result<()> {
    let Some(grant) = actor.grant() else { return Ok(()) };
    for scope in &new.scopes {
        if !grant.scopes.contains(scope) {
            return Err(Error::forbidden(format!(
                "a token made with an access token cannot have the scope {scope}, which that token lacks"
            )));
        }
    }
    if let Some(allowed) = &grant.project_ids {
        match &new.project_ids {
            None => {
                return Err(Error::forbidden(
                    "a token made with a project-restricted access token must name its projects",
                ));
            }
            Some(ids) => {
                if let Some(other) = ids.iter().find(|id| !allowed.contains(id)) {
                    return Err(Error::forbidden(format!(
                        "a token made with an access token cannot reach project {other}, which that token \
                         cannot"
                    )));
                }
            }
        }
    }
    Ok(())
}

fn token_key(member: Uuid, token: Uuid) -> Vec<u8> {
    Key::new().uuid(member).uuid(token).build()
}

fn tokens_of(r: &(impl Records + ?Sized), member: Uuid) -> Result<Vec<AccessTokenRecord>> {
    let mut ids = Vec::new();
    r.scan(MEMBER_ACCESS_TOKENS, KeyRange::prefix(member.as_bytes()), Direction::Forward, &mut |k, _| {
        ids.push(Uuid::from_slice(&k[16..32]).map_err(|_| Error::internal("malformed token key"))?);
        Ok(Scan::Continue)
    })?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(rec) = r.record::<AccessTokenRecord>(ACCESS_TOKENS, id.as_bytes())? {
            out.push(rec);
        }
    }
    Ok(out)
}

impl Board {
    /// `POST /members/{id}/tokens`: the member itself, an owner, or an
    /// admin for a member whose role is `member`; a token made through an
    /// access token stays within that token's scopes and projects.
    pub async fn create_access_token(
        &self,
        actor: &Actor,
        member: Uuid,
        new: NewAccessToken,
    ) -> Result<CreatedAccessToken> {
        let mut new = checked(new, self.inner.options.clock.timestamp())?;
        check_narrower(actor, &new)?;
        let parent = actor.grant().cloned();
        if let Some(parent) = &parent {
            // A token made with a token ends no later than it.
            new.expires_at = match (new.expires_at, parent.expires_at) {
                (Some(asked), Some(limit)) => Some(asked.min(limit)),
                (asked, limit) => asked.or(limit),
            };
        }
        let actor = actor.clone();
        let token = new_access_token();
        self.write_as(actor.request(), move |tx| {
            let acting = load_actor_member(tx, &actor)?;
            let target = tx.w.member_required(member)?;
            if !target.is_active {
                return Err(Error::not_found(format!("member {member} not found")));
            }
            check_tokens_rights(&acting, &target, "create access tokens for")?;
            if let Some(parent) = &parent
                && tx.w.record::<AccessTokenRecord>(ACCESS_TOKENS, parent.token_id.as_bytes())?.is_none()
            {
                return Err(unknown_access_token());
            }
            for id in new.project_ids.iter().flatten() {
                if tx.w.project(*id)?.is_none() {
                    return Err(Error::invalid("project_ids", format!("project {id} not found")));
                }
            }
            if tokens_of(tx.w, member)?.len() >= MAX_TOKENS_PER_MEMBER {
                return Err(Error::conflict(format!(
                    "member {} already has {MAX_TOKENS_PER_MEMBER} access tokens; revoke one first",
                    target.slug
                )));
            }
            // Made for another member: never more than its maker may do.
            let role_cap = if acting.id == member {
                parent.as_ref().and_then(|p| p.role_cap)
            } else {
                Some(acting.role)
            };
            // An agent without an access token acts with its own token.
            let by_own_agent_token = parent.is_none() && acting.kind == MemberType::Agent;
            let rec = AccessTokenRecord {
                id: Uuid::now_v7(),
                member_id: member,
                name: new.name.clone(),
                scopes: new.scopes.clone(),
                project_ids: new.project_ids.clone(),
                created_at: tx.now,
                last_used_at: None,
                expires_at: new.expires_at,
                hash: credentials::token_hash(&token),
                parent_id: parent.as_ref().map(|p| p.token_id),
                agent_token_of: by_own_agent_token.then_some(acting.id),
                role_cap,
            };
            tx.w.put_record(ACCESS_TOKENS, rec.id.as_bytes(), &rec)?;
            tx.w.put(MEMBER_ACCESS_TOKENS, &token_key(member, rec.id), &[])?;
            tx.w.put(ACCESS_TOKEN_HASH, rec.hash.as_bytes(), rec.id.as_bytes())?;
            let listed = rec.to_wire();
            tx.emit(
                EventKind::TokenCreated,
                json!({"member_id": member, "token": &listed, "by": acting.id}),
                Audience::Member { member_id: member },
            )?;
            Ok(CreatedAccessToken { access_token: listed, token: token.clone() })
        })
        .await
    }

    /// `GET /members/{id}/tokens`: in creation order, without secrets;
    /// with the rights of creating them.
    pub async fn list_access_tokens(&self, actor: &Actor, member: Uuid) -> Result<Vec<AccessToken>> {
        let acting = actor.id();
        let cap = actor.grant().and_then(|g| g.role_cap);
        self.read(move |r| {
            let mut acting = r.active_member(acting)?;
            acting.role = acting.role.capped(cap);
            let target = r.member_required(member)?;
            check_tokens_rights(&acting, &target, "list the access tokens of")?;
            Ok(tokens_of(r, member)?.iter().map(AccessTokenRecord::to_wire).collect())
        })
        .await
    }

    /// `DELETE /members/{id}/tokens/{token_id}`: the token is 401 at once.
    pub async fn revoke_access_token(&self, actor: &Actor, member: Uuid, token: Uuid) -> Result<()> {
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            let acting = load_actor_member(tx, &actor)?;
            let target = tx.w.member_required(member)?;
            check_tokens_rights(&acting, &target, "revoke access tokens of")?;
            let rec =
                tx.w.record::<AccessTokenRecord>(ACCESS_TOKENS, token.as_bytes())?
                    .filter(|t| t.member_id == member)
                    .ok_or_else(|| {
                        Error::not_found(format!("access token {token} of member {member} not found"))
                    })?;
            delete_token(tx, &rec, acting.id)?;
            revoke_descendants(tx, Origin::Token(rec.id), acting.id)?;
            Ok(())
        })
        .await
    }

    /// `POST /members/{id}/logout-everywhere`: the member itself, or an
    /// owner for anyone. Every login JWT of the member ends (its
    /// credential version rises) and its open event streams close; access
    /// tokens and an agent's own token stay until revoked.
    pub async fn logout_everywhere(&self, actor: &Actor, member: Uuid) -> Result<()> {
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            let acting = load_actor_member(tx, &actor)?;
            let target = tx.w.member_required(member)?;
            if acting.id != member && acting.role != Role::Owner {
                return Err(Error::forbidden("only an owner may log out another member everywhere"));
            }
            if target.kind == MemberType::Agent {
                return Err(Error::bad_request(format!(
                    "member {} is an agent; agents do not log in (revoke its tokens instead)",
                    target.slug
                )));
            }
            let mut secret = tx.w.secret(member)?;
            secret.credential_version += 1;
            tx.w.put_secret(member, &secret)?;
            tx.emit(
                EventKind::MemberLoggedOut,
                json!({"member_id": member, "by": acting.id}),
                Audience::Member { member_id: member },
            )?;
            Ok(())
        })
        .await
    }

    /// An access token the board has seen: its member and grant, from the
    /// cache.
    pub(super) fn access_token_known(&self, token: &str) -> Option<(Arc<MemberRecord>, Arc<Grant>)> {
        let cache = self.inner.credentials.cache.read().unwrap();
        let (member, grant) = cache.access.get(token)?;
        cache.members.get(member).map(|(m, _)| (m.clone(), grant.clone()))
    }

    /// Resolves an access token (`tba-…`) to its member and grant by
    /// reading the store, and caches them: 401 for an unknown, revoked or
    /// expired token or an inactive member.
    pub(super) async fn authenticate_access_token(&self, token: &str) -> Result<Actor> {
        let generation = self.inner.credentials.cache.read().unwrap().generation;
        let hash = credentials::token_hash(token);
        let (member, version, rec) = self
            .read(move |r| {
                let Some(id) = r.get(ACCESS_TOKEN_HASH, hash.as_bytes())? else { return Ok(None) };
                let id = uuid_value(&id)?;
                let Some(rec) = r.record::<AccessTokenRecord>(ACCESS_TOKENS, id.as_bytes())? else {
                    return Ok(None);
                };
                let Some(member) = r.member(rec.member_id)? else { return Ok(None) };
                Ok(Some((Arc::new(member), r.secret(rec.member_id)?.credential_version, rec)))
            })
            .await?
            .ok_or_else(unknown_access_token)?;
        let grant = Arc::new(rec.grant());
        let mut cache = self.inner.credentials.cache.write().unwrap();
        if cache.keep(generation, &member, version) {
            cache.access.insert(token.to_string(), (member.id, grant.clone()));
        }
        drop(cache);
        self.admit_access(member, grant)
    }

    /// The actor of an access token's member, if it may act: active, and
    /// the token not expired.
    pub(super) fn admit_access(&self, member: Arc<MemberRecord>, grant: Arc<Grant>) -> Result<Actor> {
        if !member.is_active {
            return Err(unknown_access_token());
        }
        grant.check_expiry(self.inner.options.clock.timestamp())?;
        self.touch_member(&member);
        self.touch_token(grant.token_id);
        // Never more than the member's role now, nor than the token's cap.
        let capped = member.role.capped(grant.role_cap);
        let member = if capped == member.role {
            member
        } else {
            Arc::new(MemberRecord { role: capped, ..(*member).clone() })
        };
        let mut actor = Actor::new(member);
        actor.grant = Some(grant);
        Ok(actor)
    }

    /// Refreshes a token's `last_used_at`, at most once a minute per token
    /// (the map of `last_seen` holds members and tokens by their ids).
    fn touch_token(&self, token: Uuid) {
        let now = Instant::now();
        {
            let mut seen = self.inner.credentials.last_seen.lock().unwrap();
            match seen.get(&token) {
                Some(at) if now.duration_since(*at) < LAST_USED_INTERVAL => return,
                _ => {
                    seen.insert(token, now);
                }
            }
        }
        let board = self.clone();
        let refresh = async move {
            let _ = board
                .write(move |tx| {
                    if let Some(mut rec) =
                        tx.w.record::<AccessTokenRecord>(ACCESS_TOKENS, token.as_bytes())?
                    {
                        rec.last_used_at = Some(tx.now);
                        tx.w.put_record(ACCESS_TOKENS, token.as_bytes(), &rec)?;
                    }
                    Ok(())
                })
                .await;
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(refresh);
        }
    }

    /// The projects `ids` belong to, each id read as what `names` says it
    /// is (`project_id`, `task_id`, `run_id`, `chat_id`, `message_id`);
    /// ids of nothing are left out (the endpoint answers 404 for them).
    pub async fn projects_of(&self, ids: Vec<(&'static str, Uuid)>) -> Result<Vec<(Uuid, String)>> {
        self.read(move |r| {
            let mut out: Vec<Uuid> = Vec::new();
            for (name, id) in ids {
                let project = match name {
                    "project_id" => r.project(id)?.map(|p| p.id),
                    "task_id" => r.task(id)?.map(|t| t.project_id),
                    "chat_id" => r.chat(id)?.map(|c| c.project_id),
                    "run_id" => match r
                        .record::<crate::runs::RunRecord>(crate::storage::tables::RUNS, id.as_bytes())?
                    {
                        Some(run) => match (run.project_id, run.task_id) {
                            (Some(p), _) => Some(p),
                            (None, Some(t)) => r.task(t)?.map(|t| t.project_id),
                            (None, None) => None,
                        },
                        None => None,
                    },
                    "message_id" => match r.message(id)? {
                        Some(m) => match (m.chat_id, m.task_id) {
                            (Some(c), _) => r.chat(c)?.map(|c| c.project_id),
                            (None, Some(t)) => r.task(t)?.map(|t| t.project_id),
                            (None, None) => None,
                        },
                        None => None,
                    },
                    _ => None,
                };
                if let Some(p) = project
                    && !out.contains(&p)
                {
                    out.push(p);
                }
            }
            let mut named = Vec::with_capacity(out.len());
            for p in out {
                let slug = r.project(p)?.map(|p| p.slug).unwrap_or_default();
                named.push((p, slug));
            }
            Ok(named)
        })
        .await
    }
}

/// Deletes an access token and tells its member's streams, which close.
fn delete_token(tx: &mut Tx<'_>, rec: &AccessTokenRecord, by: Uuid) -> Result<()> {
    tx.w.delete(ACCESS_TOKENS, rec.id.as_bytes())?;
    tx.w.delete(MEMBER_ACCESS_TOKENS, &token_key(rec.member_id, rec.id))?;
    tx.w.delete(ACCESS_TOKEN_HASH, rec.hash.as_bytes())?;
    tx.emit(
        EventKind::TokenRevoked,
        json!({"member_id": rec.member_id, "id": rec.id, "name": rec.name, "by": by}),
        Audience::Member { member_id: rec.member_id },
    )
}

/// What access tokens were made with.
pub(super) enum Origin {
    /// An access token: the tokens made with it, and theirs.
    Token(Uuid),
    /// An agent's own token: the tokens the agent made with it, and theirs.
    AgentToken(Uuid),
}

/// Revokes every access token made with `origin`, and the tokens made with
/// those, in the transaction that revokes `origin` (docs/decisions.md,
/// 20.c). Tokens are few (100 a member at most) and revoked rarely, so
/// one pass over the table per generation costs less than an index every
/// creation would keep.
pub(super) fn revoke_descendants(tx: &mut Tx<'_>, origin: Origin, by: Uuid) -> Result<()> {
    let mut parents: Vec<Uuid> = match origin {
        Origin::Token(id) => vec![id],
        Origin::AgentToken(agent) => {
            let made = all_tokens(tx.w, |t| t.agent_token_of == Some(agent))?;
            for t in &made {
                delete_token(tx, t, by)?;
            }
            made.iter().map(|t| t.id).collect()
        }
    };
    while !parents.is_empty() {
        let children = all_tokens(tx.w, |t| t.parent_id.is_some_and(|p| parents.contains(&p)))?;
        for t in &children {
            delete_token(tx, t, by)?;
        }
        parents = children.iter().map(|t| t.id).collect();
    }
    Ok(())
}

fn all_tokens(
    r: &(impl Records + ?Sized),
    keep: impl Fn(&AccessTokenRecord) -> bool,
) -> Result<Vec<AccessTokenRecord>> {
    let mut out = Vec::new();
    r.scan(ACCESS_TOKENS, KeyRange::all(), Direction::Forward, &mut |_, v| {
        let t: AccessTokenRecord = crate::storage::codec::decode(v)?;
        if keep(&t) {
            out.push(t);
        }
        Ok(Scan::Continue)
    })?;
    Ok(out)
}

fn unknown_access_token() -> Error {
    Error::unauthorized("invalid or revoked access token")
}
