//! Members, credentials and presence (REST-INTERFACE Members and
//! Authentication; DECISIONS 3).

use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde_json::json;
use uuid::Uuid;

use super::{Actor, Board, Tx};
use crate::api::{MemberPatch, NewMember, Page};
use crate::credentials::{self, AGENT_TOKEN_PREFIX};
use crate::error::{Error, Result};
use crate::events::Audience;
use crate::model::*;
use crate::records::{MemberRecord, RecordWrites, Records, Secret};
use crate::storage::codec::uuid_value;
use crate::storage::tables::{MEMBER_SECRET, MEMBERS, TOKEN_MEMBER};
use crate::storage::{Direction, KeyRange, Scan};
use crate::validate::{Password, Slug};

/// How often `last_seen_at` is refreshed by requests (DECISIONS 3.7).
const LAST_SEEN_INTERVAL: Duration = Duration::from_secs(60);

/// What bootstrapping an empty board did.
#[derive(Debug, Clone)]
pub struct Bootstrap {
    pub owner: Member,
    /// The password, when it was generated (print it once).
    pub generated_password: Option<String>,
}

fn active_owner_count(r: &(impl Records + ?Sized)) -> Result<usize> {
    let mut n = 0;
    r.scan(MEMBERS, KeyRange::all(), Direction::Forward, &mut |_, v| {
        let m: MemberRecord = crate::storage::codec::decode(v)?;
        if m.is_active && m.role == Role::Owner {
            n += 1;
        }
        Ok(Scan::Continue)
    })?;
    Ok(n)
}

fn slug_free(r: &(impl Records + ?Sized), slug: &str, except: Option<Uuid>) -> Result<()> {
    match r.member_by_slug(slug)? {
        Some(m) if Some(m.id) != except => Err(Error::conflict(format!("slug {slug:?} is already taken"))),
        _ => Ok(()),
    }
}

/// Sets a new agent token on a member, dropping the old one's index entry.
fn replace_token(tx: &mut Tx<'_>, member: Uuid, token: Option<&str>) -> Result<()> {
    let mut secret = tx.w.secret(member)?;
    if let Some(old) = secret.token_hash.take() {
        tx.w.delete(TOKEN_MEMBER, old.as_bytes())?;
    }
    if let Some(token) = token {
        let hash = credentials::token_hash(token);
        tx.w.put(TOKEN_MEMBER, hash.as_bytes(), member.as_bytes())?;
        secret.token_hash = Some(hash);
    }
    tx.w.put_secret(member, &secret)
}

fn load_actor_member(tx: &Tx<'_>, actor: &Actor) -> Result<MemberRecord> {
    match tx.w.member(actor.id())? {
        Some(m) if m.is_active => Ok(m),
        _ => Err(Error::unauthorized("the acting member is no longer active")),
    }
}

impl Board {
    /// Creates the first owner when the board has no member (DECISIONS
    /// 3.1). Returns `None` when the board already has members.
    pub async fn bootstrap_owner(&self, slug: Slug, password: Option<Password>) -> Result<Option<Bootstrap>> {
        let generated = password.is_none().then(credentials::new_password);
        let plain = password.map(String::from).or_else(|| generated.clone()).expect("one of the two");
        let hash = tokio::task::spawn_blocking(move || credentials::hash_password(&plain))
            .await
            .map_err(Error::internal)??;
        let owner = self
            .write(move |tx| {
                let mut empty = true;
                tx.w.scan(MEMBERS, KeyRange::all(), Direction::Forward, &mut |_, _| {
                    empty = false;
                    Ok(Scan::Stop)
                })?;
                if !empty {
                    return Ok(None);
                }
                Board::mark_schema(tx.w)?;
                let m = MemberRecord {
                    id: Uuid::now_v7(),
                    name: slug.to_string(),
                    slug: slug.to_string(),
                    kind: MemberType::Human,
                    role: Role::Owner,
                    status: MemberStatus::Offline,
                    is_active: true,
                    avatar_url: None,
                    last_seen_at: tx.now,
                    agent_config: AgentConfig::default(),
                    created_at: tx.now,
                };
                tx.w.put_member(None, &m)?;
                tx.w.put_secret(m.id, &Secret { password_hash: Some(hash), token_hash: None })?;
                tx.emit_all("member.created", m.to_wire())?;
                Ok(Some(m.to_wire()))
            })
            .await?;
        Ok(owner.map(|owner| Bootstrap { owner, generated_password: generated }))
    }

    /// Logs in by slug or name (REST-INTERFACE Auth). Wrong login and
    /// wrong password give the same 401.
    pub async fn login(&self, login: &str, password: &str) -> Result<LoginResponse> {
        let wrong = || Error::unauthorized("wrong login or password");
        let login = login.to_string();
        let candidate = self
            .read(move |r| {
                let member = match r.member_by_slug(&login)? {
                    Some(m) => Some(m),
                    None => {
                        let mut by_name = r.members_by_name(&login)?;
                        by_name.retain(|m| m.is_active && m.kind != MemberType::Agent);
                        if by_name.len() == 1 { by_name.pop() } else { None }
                    }
                };
                match member {
                    Some(m) if m.is_active && m.kind != MemberType::Agent => {
                        let hash = r.secret(m.id)?.password_hash;
                        Ok(hash.map(|h| (m, h)))
                    }
                    _ => Ok(None),
                }
            })
            .await?;
        let Some((member, hash)) = candidate else {
            // Spend the time of a verification anyway, so timing does not
            // tell which logins exist.
            let password = password.to_string();
            let _ = tokio::task::spawn_blocking(move || {
                credentials::verify_password(
                    &password,
                    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG",
                )
            })
            .await;
            return Err(wrong());
        };
        let password = password.to_string();
        let ok = tokio::task::spawn_blocking(move || credentials::verify_password(&password, &hash))
            .await
            .map_err(Error::internal)?;
        if !ok {
            return Err(wrong());
        }
        let token = self.inner.jwt.issue(member.id, member.role, Timestamp::now().as_second())?;
        Ok(LoginResponse { token, member_id: member.id, slug: member.slug, role: member.role })
    }

    /// Resolves credentials (a JWT or an agent token) to the acting member.
    /// Inactive members and revoked tokens get 401.
    pub async fn authenticate(&self, token: &str) -> Result<Actor> {
        let missing = || Error::unauthorized("invalid or expired credentials");
        let is_agent_token = token.starts_with(AGENT_TOKEN_PREFIX);
        let jwt_member = if is_agent_token { None } else { Some(self.inner.jwt.verify(token)?) };
        let cached = {
            let cache = self.inner.auth_cache.read().unwrap();
            let id = jwt_member.or_else(|| cache.tokens.get(token).copied());
            id.and_then(|id| cache.members.get(&id).cloned())
        };
        let member = match cached {
            Some(m) => m,
            None => {
                let generation = self.inner.auth_cache.read().unwrap().generation;
                let hash = is_agent_token.then(|| credentials::token_hash(token));
                let member = self
                    .read(move |r| match (jwt_member, hash) {
                        (Some(id), _) => r.member(id),
                        (None, Some(hash)) => match r.get(TOKEN_MEMBER, hash.as_bytes())? {
                            Some(id) => r.member(uuid_value(&id)?),
                            None => Ok(None),
                        },
                        (None, None) => Ok(None),
                    })
                    .await?
                    .filter(|m| m.is_active)
                    .ok_or_else(missing)?;
                let mut cache = self.inner.auth_cache.write().unwrap();
                if cache.generation == generation {
                    if cache.members.len() >= super::AuthCache::MAX_ENTRIES {
                        cache.members.clear();
                        cache.tokens.clear();
                    }
                    if is_agent_token {
                        cache.tokens.insert(token.to_string(), member.id);
                    }
                    cache.members.insert(member.id, member.clone());
                }
                member
            }
        };
        if !member.is_active {
            return Err(missing());
        }
        self.touch(&member);
        Ok(Actor { member })
    }

    /// The acting member for a member id, without credentials: for
    /// programs that embed the board and vouch for their callers.
    pub async fn actor(&self, member_id: Uuid) -> Result<Actor> {
        let member = self.read(move |r| r.active_member(member_id)).await?;
        Ok(Actor { member })
    }

    /// The acting member of a trusted local tool (the CLI's local mode,
    /// which has no credentials): the active member with this slug or id,
    /// or without one the first active owner by creation time.
    pub async fn local_actor(&self, reference: Option<&str>) -> Result<Actor> {
        let reference = reference.map(str::to_string);
        let member = self
            .read(move |r| match reference {
                Some(reference) => {
                    let found = match reference.parse::<Uuid>() {
                        Ok(id) => r.member(id)?,
                        Err(_) => r.member_by_slug(&reference)?,
                    };
                    match found {
                        Some(m) if m.is_active => Ok(m),
                        Some(_) => Err(Error::unauthorized(format!("member {reference} is not active"))),
                        None => Err(Error::not_found(format!("member {reference} not found"))),
                    }
                }
                None => {
                    let all: Vec<MemberRecord> = r.all_records(MEMBERS)?;
                    all.into_iter()
                        .find(|m| m.is_active && m.role == Role::Owner)
                        .ok_or_else(|| Error::not_found("the board has no active owner"))
                }
            })
            .await?;
        Ok(Actor { member })
    }

    /// Refreshes `last_seen_at`, at most once a minute per member.
    fn touch(&self, member: &MemberRecord) {
        let now = Instant::now();
        {
            let mut seen = self.inner.last_seen.lock().unwrap();
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

    /// `GET /members`: by creation time; inactive ones only on request.
    pub async fn list_members(
        &self,
        _actor: &Actor,
        include_inactive: bool,
        page: Page,
    ) -> Result<Vec<Member>> {
        page.check()?;
        self.read(move |r| {
            let all: Vec<MemberRecord> = r.all_records(MEMBERS)?;
            let members =
                all.into_iter().filter(|m| include_inactive || m.is_active).map(|m| m.to_wire()).collect();
            Ok(page.apply(members))
        })
        .await
    }

    pub async fn get_member(&self, _actor: &Actor, id: Uuid) -> Result<Member> {
        self.read(move |r| Ok(r.member_required(id)?.to_wire())).await
    }

    /// A member by id or slug: the references the CLI accepts.
    pub async fn find_member(&self, _actor: &Actor, reference: &str) -> Result<Member> {
        let reference = reference.to_string();
        self.read(move |r| {
            let found = match reference.parse::<Uuid>() {
                Ok(id) => r.member(id)?,
                Err(_) => r.member_by_slug(&reference)?,
            };
            found
                .map(|m| m.to_wire())
                .ok_or_else(|| Error::not_found(format!("member {reference} not found")))
        })
        .await
    }

    /// `GET /members/me`.
    pub async fn me(&self, actor: &Actor) -> Result<Member> {
        self.get_member(actor, actor.id()).await
    }

    /// `POST /members` (admin or owner; an owner only by an owner).
    pub async fn create_member(&self, actor: &Actor, new: NewMember) -> Result<CreatedMember> {
        actor.require_admin("create members")?;
        if new.role == Role::Owner {
            actor.require_owner("grant the owner role")?;
        }
        if !new.kind.is_creatable() {
            return Err(Error::invalid("type", "creation accepts only human or agent"));
        }
        if new.kind != MemberType::Agent && new.agent_config.is_some() {
            return Err(Error::invalid("agent_config", "only agents have an agent configuration"));
        }
        let token = (new.kind == MemberType::Agent).then(credentials::new_agent_token);
        self.write(move |tx| {
            slug_free(tx.w, &new.slug, None)?;
            let m = MemberRecord {
                id: Uuid::now_v7(),
                name: new.name.to_string(),
                slug: new.slug.to_string(),
                kind: new.kind,
                role: new.role,
                status: MemberStatus::Offline,
                is_active: true,
                avatar_url: None,
                last_seen_at: tx.now,
                agent_config: new.agent_config.clone().unwrap_or_default(),
                created_at: tx.now,
            };
            tx.w.put_member(None, &m)?;
            tx.w.put_secret(m.id, &Secret::default())?;
            if let Some(token) = &token {
                replace_token(tx, m.id, Some(token))?;
            }
            tx.emit_all("member.created", m.to_wire())?;
            Ok(CreatedMember {
                id: m.id,
                name: m.name,
                slug: m.slug,
                kind: m.kind,
                role: m.role,
                token,
                agent_config: new.agent_config,
            })
        })
        .await
    }

    /// `PATCH /members/{id}` with the permissions of DECISIONS 3.3.
    pub async fn update_member(&self, actor: &Actor, id: Uuid, patch: MemberPatch) -> Result<Member> {
        let actor = actor.clone();
        self.write(move |tx| {
            let acting = load_actor_member(tx, &actor)?;
            let old = tx.w.member_required(id)?;
            let is_self = acting.id == id;
            let admin_needed = !is_self || !patch.slug.is_absent() || !patch.role.is_absent();
            if admin_needed && !acting.role.is_admin() {
                return Err(Error::forbidden(if is_self {
                    "only an admin or owner may change a slug or a role".to_string()
                } else {
                    "only an admin or owner may change another member".to_string()
                }));
            }
            let mut m = old.clone();
            if let Some(name) = patch.name.value() {
                m.name = name.to_string();
            }
            if let Some(slug) = patch.slug.value() {
                slug_free(tx.w, &slug, Some(id))?;
                m.slug = slug.to_string();
            }
            if let Some(role) = patch.role.value()
                && role != old.role
            {
                if role == Role::Owner || old.role == Role::Owner {
                    if acting.role != Role::Owner {
                        return Err(Error::forbidden("only an owner may grant or take away the owner role"));
                    }
                    if old.role == Role::Owner && old.is_active && active_owner_count(tx.w)? <= 1 {
                        return Err(Error::bad_request("the last active owner cannot be demoted"));
                    }
                }
                m.role = role;
            }
            if let Some(status) = patch.status.value() {
                m.status = status;
            }
            if let Some(avatar) = patch.avatar_url.change() {
                m.avatar_url = avatar;
            }
            let mut config_changed = false;
            if let Some(config) = patch.agent_config.value() {
                if old.kind != MemberType::Agent {
                    return Err(Error::invalid("agent_config", "only agents have an agent configuration"));
                }
                config_changed = config != old.agent_config;
                m.agent_config = config;
            }
            tx.w.put_member(Some(&old), &m)?;
            tx.emit_all("member.updated", m.to_wire())?;
            if m.status != old.status {
                tx.emit_all("agent.status", json!({"member_id": m.id, "status": m.status}))?;
            }
            if config_changed {
                tx.emit(
                    "config.updated",
                    json!({"member_id": m.id, "agent_config": m.agent_config}),
                    Audience::Member { member_id: m.id },
                )?;
            }
            Ok(m.to_wire())
        })
        .await
    }

    /// `PATCH /members/me/status`.
    pub async fn set_status(&self, actor: &Actor, status: MemberStatus) -> Result<MemberStatus> {
        let id = actor.id();
        self.write(move |tx| {
            let mut m = tx.w.member_required(id)?;
            m.status = status;
            m.last_seen_at = tx.now;
            tx.w.put_member_record(&m)?;
            tx.emit_all("agent.status", json!({"member_id": id, "status": status}))?;
            Ok(status)
        })
        .await
    }

    fn check_credential_rights(actor: &MemberRecord, target: &MemberRecord) -> Result<()> {
        if actor.id != target.id && !actor.role.is_admin() {
            return Err(Error::forbidden("only an admin or owner may manage another member's credentials"));
        }
        Ok(())
    }

    /// `POST /members/{id}/regenerate-token`: the old token fails at once.
    pub async fn regenerate_token(&self, actor: &Actor, id: Uuid) -> Result<String> {
        let actor = actor.clone();
        let token = credentials::new_agent_token();
        self.write(move |tx| {
            let acting = load_actor_member(tx, &actor)?;
            let target = tx.w.member_required(id)?;
            Board::check_credential_rights(&acting, &target)?;
            if target.kind != MemberType::Agent {
                return Err(Error::bad_request(format!("member {} is not an agent", target.slug)));
            }
            replace_token(tx, id, Some(&token))?;
            tx.emit("member.token_revoked", json!({"member_id": id}), Audience::Member { member_id: id })?;
            Ok(token)
        })
        .await
    }

    /// `POST /members/{id}/revoke-token`.
    pub async fn revoke_token(&self, actor: &Actor, id: Uuid) -> Result<()> {
        let actor = actor.clone();
        self.write(move |tx| {
            let acting = load_actor_member(tx, &actor)?;
            let target = tx.w.member_required(id)?;
            Board::check_credential_rights(&acting, &target)?;
            if target.kind != MemberType::Agent {
                return Err(Error::bad_request(format!("member {} is not an agent", target.slug)));
            }
            replace_token(tx, id, None)?;
            tx.emit("member.token_revoked", json!({"member_id": id}), Audience::Member { member_id: id })?;
            Ok(())
        })
        .await
    }

    /// [ext] `PUT /members/{id}/password` (DECISIONS 3.2).
    pub async fn set_password(&self, actor: &Actor, id: Uuid, password: Password) -> Result<()> {
        let hash = tokio::task::spawn_blocking(move || credentials::hash_password(password.as_str()))
            .await
            .map_err(Error::internal)??;
        let actor = actor.clone();
        self.write(move |tx| {
            let acting = load_actor_member(tx, &actor)?;
            let target = tx.w.member_required(id)?;
            Board::check_credential_rights(&acting, &target)?;
            if target.kind == MemberType::Agent {
                return Err(Error::bad_request(format!(
                    "member {} is an agent; agents have no password",
                    target.slug
                )));
            }
            let mut secret = tx.w.secret(id)?;
            secret.password_hash = Some(hash);
            tx.w.put_secret(id, &secret)?;
            Ok(())
        })
        .await
    }

    /// `DELETE /members/{id}`: owners only; the member is deactivated, its
    /// token dropped, its slug stays taken.
    pub async fn delete_member(&self, actor: &Actor, id: Uuid) -> Result<()> {
        actor.require_owner("delete members")?;
        self.write(move |tx| {
            let old = tx.w.member_required(id)?;
            if !old.is_active {
                return Err(Error::not_found(format!("member {id} not found")));
            }
            if old.role == Role::Owner && active_owner_count(tx.w)? <= 1 {
                return Err(Error::bad_request("the last active owner cannot be deleted"));
            }
            let mut m = old.clone();
            m.is_active = false;
            m.status = MemberStatus::Offline;
            tx.w.put_member(Some(&old), &m)?;
            replace_token(tx, id, None)?;
            tx.emit_all("member.deleted", json!({"id": id}))?;
            Ok(())
        })
        .await
    }

    /// Marks a WebSocket connection of `actor` opened: the first one sets
    /// `online` (unless busy) and refreshes `last_seen_at` (DECISIONS 3.7).
    pub async fn connected(&self, actor: &Actor) -> Result<()> {
        let first = {
            let mut conns = self.inner.connections.lock().unwrap();
            let n = conns.entry(actor.id()).or_insert(0);
            *n += 1;
            *n == 1
        };
        self.presence(actor.id(), first.then_some(MemberStatus::Online)).await
    }

    /// Marks a connection closed: the last one sets `offline` unless the
    /// member set `busy` itself.
    pub async fn disconnected(&self, actor: &Actor) -> Result<()> {
        let last = {
            let mut conns = self.inner.connections.lock().unwrap();
            match conns.get_mut(&actor.id()) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                Some(_) => {
                    conns.remove(&actor.id());
                    true
                }
                None => false,
            }
        };
        self.presence(actor.id(), last.then_some(MemberStatus::Offline)).await
    }

    async fn presence(&self, id: Uuid, status: Option<MemberStatus>) -> Result<()> {
        self.write(move |tx| {
            let Some(mut m) = tx.w.member(id)? else { return Ok(()) };
            m.last_seen_at = tx.now;
            let change = status.filter(|s| m.status != MemberStatus::Busy && m.status != *s);
            if let Some(s) = change {
                m.status = s;
            }
            tx.w.put_member_record(&m)?;
            if let Some(s) = change {
                tx.emit_all("agent.status", json!({"member_id": id, "status": s}))?;
            }
            Ok(())
        })
        .await
    }

    /// Whether the board has any member with a password (used by the CLI
    /// and the server to decide on bootstrap).
    pub async fn is_empty(&self) -> Result<bool> {
        self.read(|r| {
            let mut empty = true;
            r.scan(MEMBER_SECRET, KeyRange::all(), Direction::Forward, &mut |_, _| {
                empty = false;
                Ok(Scan::Stop)
            })?;
            Ok(empty)
        })
        .await
    }
}
