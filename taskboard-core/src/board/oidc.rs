//! Single sign-on with OpenID Connect (docs/rules.md, single sign-on;
//! docs/decisions.md 3.r–3.w).
//!
//! A sign-in starts with a random `state`; the store keeps only its hash
//! (`OIDC_STATES`) with where the sign-in returns to, so a flow started
//! on one server process of a board finishes on another. The start also
//! hands the browser a cookie holding a random value whose hash is kept
//! with the state, and the callback refuses a state whose browser does
//! not send that value back (docs/decisions.md 20.r): someone who
//! finished a sign-in at the provider cannot have another browser follow
//! their callback address and be signed in as them (login CSRF). Starts
//! are counted per client address and the states kept are bounded. The PKCE
//! verifier and the nonce are keyed hashes of the state (the key derives
//! from the board's JWT secret, which all its processes share), so they
//! are never stored either. The callback takes the state out of the store
//! before anything else (a replayed callback finds nothing), has the
//! provider exchange the code and verify the ID token, applies the rules
//! below and stores a one-time login code, again by its hash, which the
//! page or the command line exchanges for a login within 60 seconds.
//!
//! The rules: a provider's account (issuer, subject) signs in as the
//! member linked to it. At its first sign-in it is linked to the active
//! human with the same email, which the provider must say is verified;
//! with no such member a human member is created when the board allows
//! it (`--oidc-create-members`), and refused with 403 otherwise. With
//! `--oidc-admin-group`, each sign-in makes the member an admin when the
//! ID token's `groups` hold that group and a member when they do not;
//! owners keep their role. Every sign-in and every refusal is logged with
//! the member or the reason, never a token.

use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

use super::{Board, Tx};
use crate::credentials;
use crate::error::{Error, ErrorKind, Result};
use crate::events::EventKind;
use crate::model::{AgentConfig, MemberStatus, MemberType, Role};
use crate::oidc::{
    AuthorizationRequest, CodeExchange, Identity, OidcOptions, PasswordLogin, ReturnTo, email_key,
};
use crate::records::{MemberRecord, RecordWrites, Records, Secret};
use crate::storage::codec::Key;
use crate::storage::tables::{LOGIN_CODES, OIDC_EXPIRY, OIDC_STATES, OIDC_SUBJECTS};
use crate::storage::{Direction, KeyRange, Scan, WriteTxn};
use crate::validate::Slug;
use crate::wire::CallbackQuery;
use crate::wire::LoginResponse;
use crate::wire::Redirect;

/// How long a started sign-in may take at the provider.
const STATE_LIFETIME: SignedDuration = SignedDuration::from_mins(10);
/// How long a login code is good for.
pub const LOGIN_CODE_LIFETIME: SignedDuration = SignedDuration::from_secs(60);
/// Expired states and codes swept by each one stored.
const SWEEP: usize = 8;

/// Where the count of the states kept is, in `OIDC_STATES` (whose other
/// keys are hex digests).
const PENDING_COUNT: &[u8] = b"#pending";

/// A sign-in waiting for the provider's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PendingSignIn {
    return_to: ReturnTo,
    redirect_uri: String,
    expires_at: Timestamp,
    /// The hash of the value of the browser's cookie; empty for a
    /// sign-in started before browsers were bound, which no callback
    /// finishes.
    #[serde(default)]
    browser: String,
}

/// A finished sign-in waiting to be exchanged for a login.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LoginCode {
    member_id: Uuid,
    expires_at: Timestamp,
}

/// The link of a provider's account to a member, as stored (and
/// archived).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OidcLink {
    pub issuer: String,
    pub subject: String,
    pub member_id: Uuid,
}

impl OidcLink {
    pub fn key(issuer: &str, subject: &str) -> Vec<u8> {
        Key::new().str0(issuer).str(subject).build()
    }
}

fn random_secret() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the system's random source");
    URL_SAFE_NO_PAD.encode(bytes)
}

fn expiry_key(at: Timestamp, kind: u8, hash: &str) -> Vec<u8> {
    Key::new().u64(at.as_millisecond().max(0) as u64).u8(kind).str(hash).build()
}

/// Adds `by` to the count of the states kept.
fn count_pending(w: &mut dyn WriteTxn, by: i64) -> Result<u64> {
    let now: u64 = w.record(OIDC_STATES, PENDING_COUNT)?.unwrap_or(0);
    let next = now.saturating_add_signed(by);
    w.put_record(OIDC_STATES, PENDING_COUNT, &next)?;
    Ok(next)
}

/// Removes up to [`SWEEP`] states and codes that expired before `now`.
fn sweep(w: &mut dyn WriteTxn, now: Timestamp) -> Result<()> {
    let cut = now.as_millisecond().max(0) as u64;
    let mut ended = Vec::new();
    w.scan(OIDC_EXPIRY, KeyRange::all(), Direction::Forward, &mut |k, _| {
        let at = k.get(..8).map(|b| u64::from_be_bytes(b.try_into().unwrap())).unwrap_or(u64::MAX);
        if at >= cut || ended.len() == SWEEP {
            return Ok(Scan::Stop);
        }
        ended.push(k.to_vec());
        Ok(Scan::Continue)
    })?;
    let mut states = 0;
    for key in ended {
        w.delete(OIDC_EXPIRY, &key)?;
        let table = if key.get(8) == Some(&b's') { OIDC_STATES } else { LOGIN_CODES };
        if w.delete(table, &key[9..])? && table == OIDC_STATES {
            states += 1;
        }
    }
    if states > 0 {
        count_pending(w, -states)?;
    }
    Ok(())
}

/// A refusal, logged with its reason.
fn refused(e: Error) -> Error {
    tracing::warn!(target: "taskboard::audit", reason = e.detail(), status = e.kind().status(), "single sign-on refused");
    e
}

impl Board {
    fn oidc(&self) -> Result<&OidcOptions> {
        self.inner.options.oidc.as_ref().ok_or_else(|| Error::not_found("single sign-on is not configured"))
    }

    /// The PKCE verifier and the nonce of a state.
    fn oidc_secrets(&self, state: &str) -> (String, String) {
        let key = self.inner.credentials.jwt.derive("oidc");
        let derive = |purpose: &str| {
            let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
            mac.update(purpose.as_bytes());
            mac.update(&[0]);
            mac.update(state.as_bytes());
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        };
        (derive("pkce"), derive("nonce"))
    }

    /// `GET /auth/oidc/start`: where to send the browser, with the
    /// cookie that binds the sign-in to it. `client` is the address the
    /// start comes from, for the count of starts per address.
    pub async fn oidc_start(&self, return_to: &str, client: Option<IpAddr>) -> Result<Redirect> {
        let oidc = self.oidc()?;
        let return_to = ReturnTo::parse(return_to).map_err(refused)?;
        let limits = oidc.limits;
        // Refused before the provider is asked anything.
        let inner = self.inner.clone();
        self.read(move |r| inner.credentials.throttle.check_sign_in(r, client, limits.per_address))
            .await
            .map_err(refused)?;
        let redirect_uri = oidc.redirect_uri();
        let state = random_secret();
        let browser = random_secret();
        let (pkce_verifier, nonce) = self.oidc_secrets(&state);
        let request = AuthorizationRequest {
            redirect_uri: redirect_uri.clone(),
            state: state.clone(),
            nonce,
            pkce_verifier,
        };
        let url = oidc.provider.authorization_url(&request).await?;
        let hash = credentials::token_hash(&state);
        let browser_hash = credentials::token_hash(&browser);
        let inner = self.inner.clone();
        self.write(move |tx| {
            let expires_at = tx.now.checked_add(STATE_LIFETIME).map_err(Error::internal)?;
            sweep(tx.w, tx.now)?;
            inner.credentials.throttle.count_sign_in(tx.w, client, limits.per_address, tx.now)?;
            if count_pending(tx.w, 1)? > limits.pending {
                return Err(Error::too_many_requests(
                    "too many sign-ins are under way on this board; try again in a minute",
                    std::time::Duration::from_secs(60),
                ));
            }
            let pending = PendingSignIn { return_to, redirect_uri, expires_at, browser: browser_hash };
            tx.w.put_record(OIDC_STATES, hash.as_bytes(), &pending)?;
            tx.w.put_marker(OIDC_EXPIRY, &expiry_key(expires_at, b's', &hash))?;
            Ok(())
        })
        .await
        .map_err(|e| if e.kind() == ErrorKind::TooManyRequests { refused(e) } else { e })?;
        let max_age = STATE_LIFETIME.as_secs();
        Ok(Redirect { location: url, set_cookie: Some(oidc.browser_cookie(&browser, max_age)) })
    }

    /// `GET /auth/oidc/callback`: where the browser goes next, with a
    /// one-time login code. `browser` is the value of the sign-in's
    /// cookie the browser sent, if any.
    pub async fn oidc_callback(&self, answer: CallbackQuery, browser: Option<&str>) -> Result<Redirect> {
        let result = self.oidc_callback_inner(answer, browser).await;
        let location = result.map_err(|e| if e.kind() == ErrorKind::Internal { e } else { refused(e) })?;
        // The cookie has served: the browser forgets it.
        let cleared = self.oidc()?.browser_cookie("", 0);
        Ok(Redirect { location, set_cookie: Some(cleared) })
    }

    async fn oidc_callback_inner(&self, answer: CallbackQuery, browser: Option<&str>) -> Result<String> {
        let oidc = self.oidc()?;
        let state = answer.state.clone().ok_or_else(|| Error::invalid("state", "missing query parameter"))?;
        let hash = credentials::token_hash(&state);
        // Taken out first, so a replay finds nothing whatever happens
        // next: a callback is one attempt, refused or not.
        let pending = self
            .write(move |tx| {
                let pending: Option<PendingSignIn> = tx.w.record(OIDC_STATES, hash.as_bytes())?;
                let Some(pending) = pending else { return Ok(None) };
                tx.w.delete(OIDC_STATES, hash.as_bytes())?;
                tx.w.delete(OIDC_EXPIRY, &expiry_key(pending.expires_at, b's', &hash))?;
                count_pending(tx.w, -1)?;
                Ok((pending.expires_at > tx.now).then_some(pending))
            })
            .await?
            .ok_or_else(|| {
                Error::bad_request("unknown, expired or already used state: start the sign-in again")
            })?;
        let same_browser = browser
            .is_some_and(|b| !pending.browser.is_empty() && credentials::token_hash(b) == pending.browser);
        if !same_browser {
            return Err(Error::bad_request(
                "this sign-in was not started in this browser (its sign-in cookie is missing or does not \
                 match): start the sign-in again here",
            ));
        }
        if let Some(iss) = &answer.iss
            && iss != &oidc.issuer
        {
            return Err(Error::unauthorized(format!(
                "the answer comes from issuer {iss:?}, not from the configured {:?}",
                oidc.issuer
            )));
        }
        if let Some(error) = &answer.error {
            let description = answer.error_description.as_deref().unwrap_or("no description");
            return Err(Error::unauthorized(format!(
                "the identity provider refused the sign-in: {error} ({description})"
            )));
        }
        let code = answer.code.ok_or_else(|| Error::invalid("code", "missing query parameter"))?;
        let (pkce_verifier, nonce) = self.oidc_secrets(&state);
        let exchange =
            CodeExchange { redirect_uri: pending.redirect_uri.clone(), code, nonce, pkce_verifier };
        let identity = oidc.provider.sign_in(&exchange).await?;
        let login_code = random_secret();
        let code_hash = credentials::token_hash(&login_code);
        let (issuer, rules) = (oidc.issuer.clone(), Rules::of(oidc));
        let (member, how) = self
            .write(move |tx| {
                let (member, how) = rules.member_of(tx, &issuer, &identity)?;
                let expires_at = tx.now.checked_add(LOGIN_CODE_LIFETIME).map_err(Error::internal)?;
                sweep(tx.w, tx.now)?;
                let code = LoginCode { member_id: member.id, expires_at };
                tx.w.put_record(LOGIN_CODES, code_hash.as_bytes(), &code)?;
                tx.w.put_marker(OIDC_EXPIRY, &expiry_key(expires_at, b'c', &code_hash))?;
                Ok((member, how))
            })
            .await?;
        tracing::info!(
            target: "taskboard::audit",
            member = %member.slug,
            member_id = %member.id,
            role = %member.role,
            how,
            "single sign-on"
        );
        Ok(pending.return_to.with_login_code(&login_code))
    }

    /// `POST /auth/oidc/exchange`: a login code for a login, once.
    pub async fn oidc_exchange(&self, login_code: &str) -> Result<LoginResponse> {
        let hash = credentials::token_hash(login_code);
        let found = self
            .write(move |tx| {
                let code: Option<LoginCode> = tx.w.record(LOGIN_CODES, hash.as_bytes())?;
                let Some(code) = code else { return Ok(None) };
                tx.w.delete(LOGIN_CODES, hash.as_bytes())?;
                tx.w.delete(OIDC_EXPIRY, &expiry_key(code.expires_at, b'c', &hash))?;
                if code.expires_at <= tx.now {
                    return Ok(None);
                }
                let member = tx.w.member(code.member_id)?.filter(|m| m.is_active);
                let Some(member) = member else { return Ok(None) };
                let version = tx.w.secret(member.id)?.credential_version;
                Ok(Some((member, version)))
            })
            .await?;
        let Some((member, version)) = found else {
            return Err(refused(Error::unauthorized("unknown, expired or already used login code")));
        };
        self.login_response(member, version)
    }

    /// What the sign-in page offers (`GET /auth/methods`), with `start`
    /// the path that begins a single sign-on.
    pub fn auth_methods(&self, start: &str) -> crate::wire::AuthMethods {
        let oidc = self.inner.options.oidc.as_ref();
        crate::wire::AuthMethods {
            password: self.inner.options.password_login,
            sso: oidc.map(|o| crate::wire::SsoMethod {
                name: o.display_name(),
                issuer: o.issuer.clone(),
                start: start.to_string(),
            }),
        }
    }

    /// Refuses a password login the board keeps for owners.
    pub(super) fn check_password_login(&self, member: &MemberRecord) -> Result<()> {
        if self.inner.options.password_login == PasswordLogin::Owners && member.role != Role::Owner {
            return Err(Error::forbidden(
                "password login is open to owners only on this board; sign in with single sign-on",
            ));
        }
        Ok(())
    }
}

/// The settings the rules of a sign-in need, moved into its transaction.
struct Rules {
    create_members: bool,
    admin_group: Option<String>,
}

impl Rules {
    fn of(oidc: &OidcOptions) -> Rules {
        Rules { create_members: oidc.create_members, admin_group: oidc.admin_group.clone() }
    }

    /// The member `identity` signs in as, linked or created here, with
    /// its role set by its groups; and how it was found.
    fn member_of(
        &self,
        tx: &mut Tx<'_>,
        issuer: &str,
        identity: &Identity,
    ) -> Result<(MemberRecord, &'static str)> {
        let key = OidcLink::key(issuer, &identity.subject);
        let linked: Option<OidcLink> = tx.w.record(OIDC_SUBJECTS, &key)?;
        let (member, how) = match linked {
            Some(link) => {
                let m = tx.w.member_required(link.member_id)?;
                if !m.is_active {
                    return Err(Error::forbidden(format!("member {} is deactivated", m.slug)));
                }
                (m, "linked")
            }
            None => {
                let email =
                    identity.email.as_deref().map(str::trim).filter(|e| !e.is_empty()).ok_or_else(|| {
                        Error::forbidden(
                            "the ID token has no email claim, so no member can be matched or created",
                        )
                    })?;
                if !identity.email_verified {
                    return Err(Error::forbidden(format!(
                        "the identity provider does not say the email {email} is verified"
                    )));
                }
                let (m, how) = match tx.w.member_by_email(&email_key(email))? {
                    Some(m) if m.kind != MemberType::Human => {
                        return Err(Error::forbidden(format!(
                            "the member with the email {email} ({}) is not a human",
                            m.slug
                        )));
                    }
                    Some(m) if !m.is_active => {
                        return Err(Error::forbidden(format!("member {} is deactivated", m.slug)));
                    }
                    Some(m) => (m, "linked by email"),
                    None if self.create_members => (create(tx, identity, email)?, "created"),
                    None => {
                        return Err(Error::forbidden(format!(
                            "no member has the email {email}, and this board does not create members at \
                             sign-in (--oidc-create-members); an admin can give a member this email"
                        )));
                    }
                };
                let link = OidcLink {
                    issuer: issuer.to_string(),
                    subject: identity.subject.clone(),
                    member_id: m.id,
                };
                tx.w.put_record(OIDC_SUBJECTS, &key, &link)?;
                (m, how)
            }
        };
        let member = self.apply_groups(tx, member, identity)?;
        Ok((member, how))
    }

    fn apply_groups(
        &self,
        tx: &mut Tx<'_>,
        member: MemberRecord,
        identity: &Identity,
    ) -> Result<MemberRecord> {
        let Some(group) = &self.admin_group else { return Ok(member) };
        if member.role == Role::Owner {
            return Ok(member);
        }
        let role = if identity.groups.iter().any(|g| g == group) { Role::Admin } else { Role::Member };
        if role == member.role {
            return Ok(member);
        }
        let mut changed = member.clone();
        changed.role = role;
        tx.w.put_member(Some(&member), &changed)?;
        tx.emit_all(EventKind::MemberUpdated, changed.to_wire())?;
        Ok(changed)
    }
}

/// A human member for a first sign-in: its slug from the preferred
/// username or the email's local part (made unique), its name from the
/// token.
fn create(tx: &mut Tx<'_>, identity: &Identity, email: &str) -> Result<MemberRecord> {
    let who = identity.preferred_username.as_deref().unwrap_or(email);
    let slug = super::members::free_slug_of(tx.w, who, "member")?;
    let slug = Slug::new(slug).map_err(|e| Error::internal(format!("a slug made at sign-in: {e}")))?;
    let name = identity.name.as_deref().map(str::trim).filter(|n| !n.is_empty()).unwrap_or(email);
    let m = MemberRecord {
        id: Uuid::now_v7(),
        name: name.chars().take(200).collect(),
        slug: slug.to_string(),
        kind: MemberType::Human,
        role: Role::Member,
        status: MemberStatus::Offline,
        is_active: true,
        avatar_url: None,
        last_seen_at: tx.now,
        agent_config: AgentConfig::default(),
        created_at: tx.now,
        email: Some(email.to_string()),
    };
    tx.w.put_member(None, &m)?;
    tx.w.put_secret(m.id, &Secret::default())?;
    tx.emit_all(EventKind::MemberCreated, m.to_wire())?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::super::members::slug_base;

    #[test]
    fn slugs_of_usernames_and_emails() {
        assert_eq!(slug_base("Ana.Lopez@example.com", "member"), "ana-lopez");
        assert_eq!(slug_base("bob", "member"), "bob");
        assert_eq!(slug_base("@x", "member"), "member");
    }
}
