//! Members, credentials and presence (docs/rules.md, members, roles and
//! authentication).

use serde_json::json;
use uuid::Uuid;

use super::pages::{IndexList, Item, ItemFn, List};
use super::rights::{check_account_rights, load_actor_member};
use super::{Actor, Board, Tx};
use crate::credentials;
use crate::error::{Error, Result};
use crate::events::{Audience, EventKind};
use crate::model::{AgentConfig, CreatedMember, Member, MemberStatus, MemberType, Role};
use crate::records::{MemberRecord, MessageRecord, RecordWrites, Records, Secret, TaskRecord};
use crate::storage::tables::{
    AGENT_RUNS, ASSIGNEE_TASKS, MEMBER_ACCESS_TOKENS, MEMBER_SECRET, MEMBERS, MESSAGES, OIDC_SUBJECTS,
    REVIEWER_TASKS, TASKS, TOKEN_MEMBER, Table,
};
use crate::storage::{Direction, KeyRange, Scan};
use crate::validate::{Password, Slug};
use crate::wire::{CursorKind, MemberPatch, NewMember, Page};

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

/// A slug made of a name, a username or an email (its local part):
/// lower-case letters, digits and `_`, other runs as one hyphen;
/// `fallback` when nothing is left.
pub(super) fn slug_base(who: &str, fallback: &str) -> String {
    let base = who.split('@').next().unwrap_or(who);
    let mut slug = String::new();
    for c in base.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_end_matches('-').chars().take(56).collect();
    if slug.is_empty() { fallback.to_string() } else { slug }
}

/// [`slug_base`] made free: `-2`, `-3`… added until no member has it.
pub(super) fn free_slug_of(r: &(impl Records + ?Sized), who: &str, fallback: &str) -> Result<String> {
    let base = slug_base(who, fallback);
    let mut slug = base.clone();
    let mut n = 2;
    while r.member_by_slug(&slug)?.is_some() {
        slug = format!("{base}-{n}");
        n += 1;
    }
    Ok(slug)
}

/// Makes `slug` free for the member `except` (or a new one): taken by an
/// active member it is refused; held by a deactivated member, that record
/// keeps its id and is renamed `slug~deleted-<n>` (the first free n from
/// 1), a slug no one can choose since `~` is not a slug's character
/// (docs/decisions.md 22.b).
fn take_slug(tx: &mut Tx<'_>, slug: &str, except: Option<Uuid>) -> Result<()> {
    match tx.w.member_by_slug(slug)? {
        Some(m) if Some(m.id) == except => Ok(()),
        Some(m) if m.is_active => Err(Error::conflict(format!("slug {slug:?} is already taken"))),
        Some(old) => {
            let mut n = 1;
            let mut renamed = format!("{slug}~deleted-{n}");
            while tx.w.member_by_slug(&renamed)?.is_some() {
                n += 1;
                renamed = format!("{slug}~deleted-{n}");
            }
            let mut m = old.clone();
            m.slug = renamed;
            tx.w.put_member(Some(&old), &m)?;
            tx.emit_all(EventKind::MemberUpdated, m.to_wire())?;
            Ok(())
        }
        None => Ok(()),
    }
}

/// Whether any key of `table` starts with `prefix`.
fn any_under(r: &(impl Records + ?Sized), table: Table, prefix: &[u8]) -> Result<bool> {
    let mut found = false;
    r.scan(table, KeyRange::prefix(prefix), Direction::Forward, &mut |_, _| {
        found = true;
        Ok(Scan::Stop)
    })?;
    Ok(found)
}

/// What a member has done that fixes its type (docs/decisions.md 22.a):
/// a run, a task assigned, to review or created, a message written, an
/// access token or a single sign-on account. `None` when it has done
/// nothing. Tasks and messages have no index by author, so both tables
/// are read through; the change is rare and made by an admin.
fn first_deed(r: &(impl Records + ?Sized), id: Uuid) -> Result<Option<&'static str>> {
    let key = id.as_bytes();
    if any_under(r, AGENT_RUNS, key)? {
        return Ok(Some("it has runs"));
    }
    if any_under(r, ASSIGNEE_TASKS, key)? {
        return Ok(Some("tasks are assigned to it"));
    }
    if any_under(r, REVIEWER_TASKS, key)? {
        return Ok(Some("it reviews tasks"));
    }
    if any_under(r, MEMBER_ACCESS_TOKENS, key)? {
        return Ok(Some("it has access tokens"));
    }
    let mut deed = None;
    r.scan(OIDC_SUBJECTS, KeyRange::all(), Direction::Forward, &mut |_, v| {
        if v == key.as_slice() {
            deed = Some("it signed in with single sign-on");
            return Ok(Scan::Stop);
        }
        Ok(Scan::Continue)
    })?;
    if deed.is_some() {
        return Ok(deed);
    }
    r.scan(TASKS, KeyRange::all(), Direction::Forward, &mut |_, v| {
        let t: TaskRecord = crate::storage::codec::decode(v)?;
        if t.created_by == id {
            deed = Some("it created tasks");
            return Ok(Scan::Stop);
        }
        Ok(Scan::Continue)
    })?;
    if deed.is_some() {
        return Ok(deed);
    }
    r.scan(MESSAGES, KeyRange::all(), Direction::Forward, &mut |_, v| {
        let m: MessageRecord = crate::storage::codec::decode(v)?;
        if m.author_id == Some(id) {
            deed = Some("it wrote messages");
            return Ok(Scan::Stop);
        }
        Ok(Scan::Continue)
    })?;
    Ok(deed)
}

/// Sets a new agent token on a member, dropping the old one's index entry.
pub(super) fn replace_token(tx: &mut Tx<'_>, member: Uuid, token: Option<&str>) -> Result<()> {
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

impl Board {
    /// Creates the first owner when the board has no member (docs/rules.md,
    /// members). Returns `None` when the board already has members.
    pub async fn bootstrap_owner(&self, slug: Slug, password: Option<Password>) -> Result<Option<Bootstrap>> {
        let generated = password.is_none().then(credentials::new_password);
        let plain = password.map(String::from).or_else(|| generated.clone()).expect("one of the two");
        let hash = self.inner.credentials.hashers.run(move || credentials::hash_password(&plain)).await??;
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
                    email: None,
                };
                tx.w.put_member(None, &m)?;
                tx.w.put_secret(m.id, &Secret { password_hash: Some(hash), ..Secret::default() })?;
                tx.emit_all(EventKind::MemberCreated, m.to_wire())?;
                Ok(Some(m.to_wire()))
            })
            .await?;
        Ok(owner.map(|owner| Bootstrap { owner, generated_password: generated }))
    }

    /// The acting member for a member id, without credentials: for
    /// programs that embed the board and vouch for their callers.
    pub async fn actor(&self, member_id: Uuid) -> Result<Actor> {
        let member = self.read(move |r| r.active_member(member_id)).await?;
        Ok(Actor::new(member))
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
        Ok(Actor::new(member))
    }

    /// `GET /members`: by creation time; inactive ones only on request.
    pub fn list_members(&self, include_inactive: bool, page: Page) -> List<Member> {
        self.index_list(members_list(include_inactive), page, |_| Ok(()))
    }

    /// `GET /members?slug=`: the member with this slug, found by the
    /// slug's index, as a list of none or one (an inactive one only on
    /// request), paged as the whole list is.
    pub fn members_by_slug(&self, slug: &Slug, include_inactive: bool, page: Page) -> List<Member> {
        let slug = slug.to_string();
        List::new(self, CursorKind::Members, page, move |r, start, out| {
            let found = r.member_by_slug(&slug)?.filter(|m| include_inactive || m.is_active);
            match found {
                Some(m)
                    if start.skip == 0
                        && start.after.as_deref().is_none_or(|a| a < m.id.as_bytes().as_slice()) =>
                {
                    let key = m.id.as_bytes().to_vec();
                    out.push(Item::Value(m.to_wire()), &|| key.clone()).map(|_| ())
                }
                _ => Ok(()),
            }
        })
    }

    pub async fn get_member(&self, id: Uuid) -> Result<Member> {
        self.read(move |r| Ok(r.member_required(id)?.to_wire())).await
    }

    /// `GET /members/me`.
    pub async fn me(&self, actor: &Actor) -> Result<Member> {
        self.get_member(actor.id()).await
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
        self.write_as(actor.request(), move |tx| {
            take_slug(tx, &new.slug, None)?;
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
                email: None,
            };
            tx.w.put_member(None, &m)?;
            tx.w.put_secret(m.id, &Secret::default())?;
            if let Some(token) = &token {
                replace_token(tx, m.id, Some(token))?;
            }
            tx.emit_all(EventKind::MemberCreated, m.to_wire())?;
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

    /// `PATCH /members/{id}` with the permissions of docs/rules.md (members: roles).
    pub async fn update_member(&self, actor: &Actor, id: Uuid, patch: MemberPatch) -> Result<Member> {
        let actor = actor.clone();
        self.write_as(actor.request(), move |tx| {
            let acting = load_actor_member(tx, &actor)?;
            let old = tx.w.member_required(id)?;
            let is_self = acting.id == id;
            if is_self
                && !acting.role.is_admin()
                && (!patch.slug.is_absent()
                    || !patch.role.is_absent()
                    || !patch.email.is_absent()
                    || !patch.kind.is_absent())
            {
                return Err(Error::forbidden(
                    "only an admin or owner may change a slug, a role, a type or an email",
                ));
            }
            if !is_self {
                check_account_rights(&acting, &old, "change")?;
            }
            let mut m = old.clone();
            if let Some(name) = patch.name.value() {
                m.name = name.to_string();
            }
            if let Some(slug) = patch.slug.value() {
                take_slug(tx, &slug, Some(id))?;
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
            if let Some(email) = patch.email.change() {
                if let Some(e) = &email {
                    match tx.w.member_by_email(&crate::oidc::email_key(e.as_str()))? {
                        Some(other) if other.id != id => {
                            return Err(Error::conflict(format!(
                                "the email {} is already {}'s",
                                e.as_str(),
                                other.slug
                            )));
                        }
                        _ => {}
                    }
                }
                m.email = email.map(String::from);
            }
            if let Some(status) = patch.status.value() {
                m.status = status;
            }
            if let Some(avatar) = patch.avatar_url.change() {
                m.avatar_url = avatar;
            }
            if let Some(kind) = patch.kind.value()
                && kind != old.kind
            {
                if !kind.is_creatable() {
                    return Err(Error::invalid("type", "a member's type is human or agent"));
                }
                if let Some(deed) = first_deed(tx.w, id)? {
                    return Err(Error::conflict(format!(
                        "the type of {} cannot change: {deed}; create a new member instead",
                        old.slug
                    )));
                }
                // The credential of the old type goes with it: an agent's
                // token, a person's password.
                let mut secret = tx.w.secret(id)?;
                if secret.password_hash.take().is_some() {
                    secret.credential_version += 1;
                }
                tx.w.put_secret(id, &secret)?;
                replace_token(tx, id, None)?;
                m.kind = kind;
                if kind != MemberType::Agent {
                    m.agent_config = AgentConfig::default();
                }
            }
            let mut config_changed = false;
            if let Some(config) = patch.agent_config.value() {
                if m.kind != MemberType::Agent {
                    return Err(Error::invalid("agent_config", "only agents have an agent configuration"));
                }
                config_changed = config != old.agent_config;
                m.agent_config = config;
            }
            tx.w.put_member(Some(&old), &m)?;
            tx.emit_all(EventKind::MemberUpdated, m.to_wire())?;
            if m.status != old.status {
                tx.emit_all(EventKind::AgentStatus, json!({"member_id": m.id, "status": m.status}))?;
            }
            if config_changed {
                tx.emit(
                    EventKind::ConfigUpdated,
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
        self.write_as(actor.request(), move |tx| {
            let mut m = tx.w.member_required(id)?;
            m.status = status;
            m.last_seen_at = tx.now;
            tx.w.put_member_record(&m)?;
            tx.emit_all(EventKind::AgentStatus, json!({"member_id": id, "status": status}))?;
            // The answer of `PATCH /members/me/status`, as a key keeps it.
            Ok(crate::model::StatusResponse { status })
        })
        .await
        .map(|answer| answer.status)
    }

    /// `DELETE /members/{id}`: owners only; the member is deactivated, its
    /// token dropped; its slug stays its own until a new member takes it
    /// (see `take_slug`).
    pub async fn delete_member(&self, actor: &Actor, id: Uuid) -> Result<()> {
        actor.require_owner("delete members")?;
        self.write_as(actor.request(), move |tx| {
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
            tx.emit_all(EventKind::MemberDeleted, json!({"id": id}))?;
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

/// Members by creation (their ids are time-ordered).
fn members_list(include_inactive: bool) -> IndexList<impl ItemFn<Member>> {
    IndexList::new(CursorKind::Members, MEMBERS, &[], move |_, _, v| {
        let m: MemberRecord = crate::storage::codec::decode(v)?;
        Ok((include_inactive || m.is_active).then(|| m.to_wire()))
    })
}
