//! Authentication and credentials: logging in (throttled, with password
//! hashing on the bounded pool), resolving credentials to the acting
//! member, and who may set whose credentials (docs/decisions.md 3.e–3.h).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde_json::json;
use uuid::Uuid;

use super::cache::AuthCache;
use super::members::replace_token;
use super::rights::{check_account_rights, load_actor_member};
use super::throttle::LoginThrottle;
use super::tokens::{Origin, revoke_descendants};
use super::{Actor, Board};
use crate::credentials::{self, AGENT_TOKEN_PREFIX, HashPool, JwtKeys};
use crate::error::{Error, Result};
use crate::events::{Audience, EventKind};
use crate::model::MemberType;
use crate::records::{MemberRecord, RecordWrites, Records};
use crate::storage::codec::uuid_value;
use crate::storage::tables::TOKEN_MEMBER;
use crate::tokens::ACCESS_TOKEN_PREFIX;
use crate::validate::Password;
use crate::wire::LoginResponse;

/// What checking who calls keeps between calls, in one place: the keys
/// tokens are signed with, the login throttle, the password hashers, the
/// cache of resolved credentials and when each member was last seen.
pub(super) struct Credentials {
    pub(super) jwt: JwtKeys,
    pub(super) throttle: LoginThrottle,
    pub(super) hashers: HashPool,
    pub(super) cache: std::sync::RwLock<AuthCache>,
    pub(super) last_seen: std::sync::Mutex<std::collections::HashMap<Uuid, Instant>>,
}

impl Credentials {
    pub(super) fn new(jwt: JwtKeys, throttle: LoginThrottle, hashers: HashPool) -> Credentials {
        Credentials { jwt, throttle, hashers, cache: Default::default(), last_seen: Default::default() }
    }
}

/// How often `last_seen_at` is refreshed by requests.
const LAST_SEEN_INTERVAL: Duration = Duration::from_secs(60);

/// Checked against when a login names nobody, so that the time an answer
/// takes does not tell which logins exist.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG";

/// The rights of setting `target`'s password: its own, or another's
/// within [`check_account_rights`]; only humans have passwords.
fn check_password_rights(acting: &MemberRecord, target: &MemberRecord) -> Result<()> {
    if acting.id != target.id {
        check_account_rights(acting, target, "set the password of")?;
    }
    if target.kind == MemberType::Agent {
        return Err(Error::bad_request(format!(
            "member {} is an agent; agents have no password",
            target.slug
        )));
    }
    Ok(())
}

/// The rights of regenerating or revoking `target`'s token.
fn check_token_rights(acting: &MemberRecord, target: &MemberRecord, what: &str) -> Result<()> {
    if acting.id != target.id {
        check_account_rights(acting, target, what)?;
    }
    if target.kind != MemberType::Agent {
        return Err(Error::bad_request(format!("member {} is not an agent", target.slug)));
    }
    Ok(())
}

impl Board {
    /// What a login answers: a session token for `member` at its
    /// credentials' `version`.
    pub(super) fn login_response(&self, member: MemberRecord, version: u64) -> Result<LoginResponse> {
        let token = self.inner.credentials.jwt.issue(
            member.id,
            member.role,
            version,
            Timestamp::now().as_second(),
            self.inner.options.session_lifetime,
        )?;
        Ok(LoginResponse { token, member_id: member.id, slug: member.slug, role: member.role })
    }

    /// Logs in by slug or name (`POST /auth/login`). Wrong login and
    /// wrong password give the same 401. `client` is the address the
    /// attempt comes from, when known: failed logins are throttled per
    /// login and per address (429 with the time to wait), and a refused
    /// attempt costs no password hash.
    pub async fn login(&self, login: &str, password: &str, client: Option<IpAddr>) -> Result<LoginResponse> {
        let wrong = || Error::unauthorized("wrong login or password");
        let inner = self.inner.clone();
        let login = login.to_string();
        let (login_key, stored, candidate) = self
            .read(move |r| {
                let throttle = &inner.credentials.throttle;
                // An address over its limit is refused before anything
                // else is read.
                throttle.check_address(r, client)?;
                let member = match r.member_by_slug(&login)? {
                    Some(m) => Some(m),
                    None => {
                        let mut by_name = r.members_by_name(&login)?;
                        by_name.retain(|m| m.is_active && m.kind != MemberType::Agent);
                        if by_name.len() == 1 { by_name.pop() } else { None }
                    }
                };
                let key = throttle.login_key(&login, member.as_ref().map(|m| m.id));
                let stored = throttle.stored(r, key, client)?;
                match member {
                    Some(m) if m.is_active && m.kind != MemberType::Agent => {
                        let secret = r.secret(m.id)?;
                        let version = secret.credential_version;
                        Ok((key, stored, secret.password_hash.map(|h| (m, h, version))))
                    }
                    _ => Ok((key, stored, None)),
                }
            })
            .await?;
        let attempt = self.inner.credentials.throttle.begin(login_key, client, stored)?;
        let password = password.to_string();
        let verified = match candidate {
            Some((member, hash, version)) => {
                let ok = self
                    .inner
                    .credentials
                    .hashers
                    .run(move || credentials::verify_password(&password, &hash))
                    .await?;
                ok.then_some((member, version))
            }
            None => {
                self.inner
                    .credentials
                    .hashers
                    .run(move || credentials::verify_password(&password, DUMMY_HASH))
                    .await?;
                None
            }
        };
        let outcome = attempt.finish(verified.is_some());
        if let Some(outcome) = outcome {
            self.write(move |tx| outcome.apply(tx.w, tx.now)).await?;
        }
        let Some((member, version)) = verified else { return Err(wrong()) };
        self.check_password_login(&member)?;
        self.login_response(member, version)
    }

    /// Resolves credentials (a JWT, an agent token or an access token) to
    /// the acting member.
    /// Inactive members, revoked tokens and JWTs issued before the
    /// member's last password change get 401.
    pub async fn authenticate(&self, token: &str) -> Result<Actor> {
        if let Some(known) = self.authenticate_known(token) {
            return known;
        }
        // Boxed: only a member's first request reads the store, and held
        // inline that read would make every request's future larger, which
        // is copied as it is moved (docs/storage.md, S.46).
        Box::pin(self.authenticate_stored(token)).await
    }

    /// Credentials the board has seen, resolved from its cache without
    /// reading the store: None when they must be read.
    fn authenticate_known(&self, token: &str) -> Option<Result<Actor>> {
        if token.starts_with(ACCESS_TOKEN_PREFIX) {
            let (member, grant) = self.access_token_known(token)?;
            return Some(self.admit_access(member, grant));
        }
        let jwt = match self.verify_jwt(token) {
            Ok(jwt) => jwt,
            Err(e) => return Some(Err(e)),
        };
        let (member, version) = {
            let cache = self.inner.credentials.cache.read().unwrap();
            let id = jwt.map(|j| j.member).or_else(|| cache.tokens.get(token).copied())?;
            cache.members.get(&id).cloned()?
        };
        Some(self.admit(member, version, jwt))
    }

    /// The subject of a login JWT; None for an agent token.
    fn verify_jwt(&self, token: &str) -> Result<Option<credentials::JwtSubject>> {
        if token.starts_with(AGENT_TOKEN_PREFIX) {
            Ok(None)
        } else {
            self.inner.credentials.jwt.verify(token).map(Some)
        }
    }

    /// Resolves credentials by reading the store, and caches what it found.
    async fn authenticate_stored(&self, token: &str) -> Result<Actor> {
        if token.starts_with(ACCESS_TOKEN_PREFIX) {
            return self.authenticate_access_token(token).await;
        }
        let jwt = self.verify_jwt(token)?;
        let is_agent_token = jwt.is_none();
        let generation = self.inner.credentials.cache.read().unwrap().generation;
        let hash = is_agent_token.then(|| credentials::token_hash(token));
        let jwt_member = jwt.map(|j| j.member);
        let (member, version) = self
            .read(move |r| {
                let member = match (jwt_member, hash) {
                    (Some(id), _) => r.member(id)?,
                    (None, Some(hash)) => match r.get(TOKEN_MEMBER, hash.as_bytes())? {
                        Some(id) => r.member(uuid_value(&id)?)?,
                        None => None,
                    },
                    (None, None) => None,
                };
                match member {
                    Some(m) => Ok(Some((r.secret(m.id)?.credential_version, m))),
                    None => Ok(None),
                }
            })
            .await?
            .filter(|(_, m)| m.is_active)
            .map(|(version, m)| (Arc::new(m), version))
            .ok_or_else(unknown_credentials)?;
        let mut cache = self.inner.credentials.cache.write().unwrap();
        if cache.keep(generation, &member, version) && is_agent_token {
            cache.tokens.insert(token.to_string(), member.id);
        }
        drop(cache);
        self.admit(member, version, jwt)
    }

    /// The actor of a member found for a JWT or an agent token, if it may
    /// act: active, and a JWT issued since the last password change.
    fn admit(
        &self,
        member: Arc<MemberRecord>,
        version: u64,
        jwt: Option<credentials::JwtSubject>,
    ) -> Result<Actor> {
        if !member.is_active {
            return Err(unknown_credentials());
        }
        if jwt.is_some_and(|j| j.version != version) {
            return Err(Error::unauthorized(
                "the password changed since this token was issued; log in again",
            ));
        }
        self.touch_member(&member);
        Ok(Actor::new(member))
    }

    /// Refreshes `last_seen_at`, at most once a minute per member.
    pub(super) fn touch_member(&self, member: &MemberRecord) {
        let now = Instant::now();
        {
            let mut seen = self.inner.credentials.last_seen.lock().unwrap();
            match seen.get(&member.id) {
                Some(at) if now.duration_since(*at) < LAST_SEEN_INTERVAL => return,
                _ => {
                    seen.insert(member.id, now);
                }
            }
        }
        let board = self.clone();
        let id = member.id;
        let refresh = async move {
            let _ = board
                .write(move |tx| {
                    if let Some(mut m) = tx.w.member(id)? {
                        m.last_seen_at = tx.now;
                        tx.w.put_member_record(&m)?;
                    }
                    Ok(())
                })
                .await;
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(refresh);
        }
    }

    /// `POST /members/{id}/regenerate-token`: the old token fails at once.
    pub async fn regenerate_token(&self, actor: &Actor, id: Uuid) -> Result<String> {
        let actor = actor.clone();
        let token = credentials::new_agent_token();
        self.write_as(actor.request(), move |tx| {
            let acting = load_actor_member(tx, &actor)?;
            let target = tx.w.member_required(id)?;
            check_token_rights(&acting, &target, "regenerate the token of")?;
            replace_token(tx, id, Some(&token))?;
            revoke_descendants(tx, Origin::AgentToken(id), acting.id)?;
            tx.emit(
                EventKind::MemberTokenRevoked,
                json!({"member_id": id}),
                Audience::Member { member_id: id },
            )?;
            // The answer of `POST /members/{id}/regenerate-token`, as a key
            // keeps it.
            Ok(crate::model::TokenResponse { token })
        })
        .await
        .map(|answer| answer.token)
    }

    /// `POST /members/{id}/revoke-token`.
    pub async fn revoke_token(&self, actor: &Actor, id: Uuid) -> Result<()> {
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            let acting = load_actor_member(tx, &actor)?;
            let target = tx.w.member_required(id)?;
            check_token_rights(&acting, &target, "revoke the token of")?;
            replace_token(tx, id, None)?;
            revoke_descendants(tx, Origin::AgentToken(id), acting.id)?;
            tx.emit(
                EventKind::MemberTokenRevoked,
                json!({"member_id": id}),
                Audience::Member { member_id: id },
            )?;
            Ok(())
        })
        .await
    }

    /// `PUT /members/{id}/password`: the member itself, an owner,
    /// or an admin for a member whose role is `member`, sets a human's
    /// password. Every login JWT issued to that member before it stops
    /// working at once, and its WebSockets are closed
    /// (`member.token_revoked`).
    pub async fn set_password(&self, actor: &Actor, id: Uuid, password: Password) -> Result<()> {
        // Refused before hashing, so a refused request costs no hash.
        let acting_id = actor.id();
        self.read(move |r| {
            let acting = r
                .member(acting_id)?
                .filter(|m| m.is_active)
                .ok_or_else(|| Error::unauthorized("the acting member is no longer active"))?;
            check_password_rights(&acting, &r.member_required(id)?)
        })
        .await?;
        let hash = self
            .inner
            .credentials
            .hashers
            .run(move || credentials::hash_password(password.as_str()))
            .await??;
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            // Again in the transaction: a role may have changed meanwhile.
            let acting = load_actor_member(tx, &actor)?;
            check_password_rights(&acting, &tx.w.member_required(id)?)?;
            let mut secret = tx.w.secret(id)?;
            secret.password_hash = Some(hash);
            secret.credential_version += 1;
            tx.w.put_secret(id, &secret)?;
            tx.emit(
                EventKind::MemberTokenRevoked,
                json!({"member_id": id}),
                Audience::Member { member_id: id },
            )?;
            Ok(())
        })
        .await
    }
}

fn unknown_credentials() -> Error {
    Error::unauthorized("invalid or expired credentials")
}
