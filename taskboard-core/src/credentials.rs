//! Credentials: argon2id password hashes, agent tokens (docs/rules.md, members) and
//! JWTs (docs/rules.md, members).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use argon2::password_hash::{PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Argon2, PasswordHash};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::Role;

/// Prefix of agent tokens.
pub const AGENT_TOKEN_PREFIX: &str = "tbk-";

/// Lifetime of a login JWT unless the board is told otherwise
/// (`BoardOptions::session_lifetime`, the server's `--session-lifetime`).
pub const JWT_LIFETIME_SECS: i64 = 72 * 3600;

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).expect("the system random generator is available");
    buf
}

/// A new agent token: `tbk-` and 43 URL-safe characters (256 random bits).
pub fn new_agent_token() -> String {
    format!("{AGENT_TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(random_bytes::<32>()))
}

/// A generated password for the bootstrap owner: 24 URL-safe characters.
/// A fresh secret to sign session tokens with.
pub fn new_jwt_secret() -> String {
    URL_SAFE_NO_PAD.encode(random_bytes::<48>())
}

/// A generated password: 144 random bits in URL-safe base64, drawn again
/// while it starts with `-`, so that it passes as the value of an option
/// (`taskboard login --password …`) instead of being taken for a flag.
pub fn new_password() -> String {
    loop {
        let password = URL_SAFE_NO_PAD.encode(random_bytes::<18>());
        if !password.starts_with('-') {
            return password;
        }
    }
}

/// The stored form of an agent token. Tokens carry 256 random bits, so a
/// plain SHA-256 is enough; a slow hash would only slow every request.
pub fn token_hash(token: &str) -> String {
    // Runs on every request of an agent: one allocation, not one per byte.
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Hashes a password with argon2id. Slow by design: call off the async
/// threads.
pub fn hash_password(password: &str) -> Result<String> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()).map_err(Error::internal)?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(Error::internal)
}

/// Checks a password against its argon2 hash. Slow by design.
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
        .unwrap_or(false)
}

/// The bounded pool password hashing runs on. Hashing is slow by design,
/// so at most `permits` hashes run at once (on the blocking pool, beside
/// the storage reads, which are never kept waiting by it), at most
/// `queue` more wait for a turn, and any beyond are refused at once with
/// `too_many_requests` and a `Retry-After` of a second, rather than
/// queueing without end.
pub struct HashPool {
    permits: Arc<tokio::sync::Semaphore>,
    waiting: AtomicUsize,
    queue: usize,
}

impl std::fmt::Debug for HashPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HashPool").field("available", &self.permits.available_permits()).finish()
    }
}

/// Takes a place in the queue back when the wait ends, even when the
/// waiting request is dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl HashPool {
    /// Waiting requests allowed per hash running.
    pub const QUEUE_PER_PERMIT: usize = 32;

    pub fn new(permits: usize) -> HashPool {
        let permits = permits.max(1);
        HashPool {
            permits: Arc::new(tokio::sync::Semaphore::new(permits)),
            waiting: AtomicUsize::new(0),
            queue: permits * HashPool::QUEUE_PER_PERMIT,
        }
    }

    /// Runs `f` (a hash or a verification) on the pool.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        let permit = {
            if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.queue {
                self.waiting.fetch_sub(1, Ordering::AcqRel);
                return Err(Error::too_many_requests(
                    "too many password checks are waiting; try again shortly",
                    Duration::from_secs(1),
                ));
            }
            let _waiting = Waiting(&self.waiting);
            self.permits.clone().acquire_owned().await.map_err(Error::internal)?
        };
        // The permit travels with the work: a request dropped meanwhile
        // does not free its place before the hash is done.
        tokio::task::spawn_blocking(move || {
            let out = f();
            drop(permit);
            out
        })
        .await
        .map_err(Error::internal)
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    role: Role,
    iat: i64,
    exp: i64,
    /// The member's credential version when the token was issued; a
    /// password change raises it, ending every older token. Absent in
    /// tokens of older builds: version 0.
    #[serde(default)]
    ver: u64,
}

/// What a valid login JWT names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JwtSubject {
    pub member: Uuid,
    /// The credential version it was issued under.
    pub version: u64,
}

/// Signs and checks login JWTs (HS256).
pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    /// SHA-256 of the secret, from which keys for other purposes derive.
    root: [u8; 32],
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtKeys(***)")
    }
}

impl JwtKeys {
    pub fn new(secret: &[u8]) -> JwtKeys {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_required_spec_claims(&["exp", "sub"]);
        validation.leeway = 0;
        JwtKeys {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            root: Sha256::digest(secret).into(),
        }
    }

    /// A key for `purpose`, derived from the secret: the same in every
    /// process that shares the secret, and telling nothing of it.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(self.root);
        hash.update(purpose.as_bytes());
        hash.finalize().into()
    }

    /// The secret kept in `dir/jwt_secret`, created with mode 0600 on
    /// first use.
    pub fn load_or_create(dir: &Path) -> Result<JwtKeys> {
        let path = dir.join("jwt_secret");
        match std::fs::read(&path) {
            Ok(secret) if secret.len() >= 32 => return Ok(JwtKeys::new(&secret)),
            Ok(_) => return Err(Error::internal(format!("{} is too short", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::internal(e)),
        }
        let secret = new_jwt_secret();
        write_private(&path, secret.as_bytes())?;
        Ok(JwtKeys::new(secret.as_bytes()))
    }

    /// A token for `member`, issued at `now` (seconds) under its
    /// credential version `version`, valid for `lifetime`.
    pub fn issue(
        &self,
        member: Uuid,
        role: Role,
        version: u64,
        now: i64,
        lifetime: Duration,
    ) -> Result<String> {
        let exp = now.saturating_add(i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX));
        let claims = Claims { sub: member.to_string(), role, iat: now, exp, ver: version };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).map_err(Error::internal)
    }

    /// What a valid, unexpired token names. Whether its version is still
    /// the member's is for the caller to check.
    pub fn verify(&self, token: &str) -> Result<JwtSubject> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|_| Error::unauthorized("invalid or expired token"))?;
        let member = data.claims.sub.parse().map_err(|_| Error::unauthorized("invalid token"))?;
        Ok(JwtSubject { member, version: data.claims.ver })
    }
}

/// Writes a file readable by its owner only.
pub fn write_private(path: &Path, contents: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut file = crate::private::create_file(path)?;
    file.write_all(contents)?;
    file.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIFETIME: Duration = Duration::from_secs(JWT_LIFETIME_SECS as u64);

    /// One draw in 64 starts with `-`: among 4,000 a generator that let
    /// them through would show one but for a chance of about 1e-27.
    #[test]
    fn a_generated_password_never_starts_like_an_option() {
        for _ in 0..4000 {
            let password = new_password();
            assert!(!password.starts_with('-'), "{password}");
            assert_eq!(password.len(), 24, "{password}");
        }
    }

    #[test]
    fn agent_tokens_have_the_prefix_and_enough_randomness() {
        let t = new_agent_token();
        assert!(t.starts_with("tbk-"));
        assert!(t.len() >= 4 + 40);
        assert!(t[4..].chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_ne!(t, new_agent_token());
        assert_eq!(token_hash(&t).len(), 64);
    }

    #[test]
    fn passwords_verify_against_argon2id_hashes() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong horse", &h));
    }

    #[test]
    fn jwts_carry_the_member_and_expire() {
        let keys = JwtKeys::new(b"0123456789abcdef0123456789abcdef");
        let id = Uuid::now_v7();
        let now = jiff::Timestamp::now().as_second();
        let t = keys.issue(id, Role::Owner, 3, now, LIFETIME).unwrap();
        assert_eq!(keys.verify(&t).unwrap(), JwtSubject { member: id, version: 3 });
        let old = keys.issue(id, Role::Owner, 0, now - JWT_LIFETIME_SECS - 10, LIFETIME).unwrap();
        assert!(keys.verify(&old).is_err());
        assert!(JwtKeys::new(b"another secret another secret 00").verify(&t).is_err());
    }

    #[tokio::test]
    async fn a_full_hashing_queue_refuses_at_once() {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};
        let pool = HashPool::new(1);
        let mut cx = Context::from_waker(Waker::noop());
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let mut running = Box::pin(pool.run(move || hold.recv().is_ok()));
        assert!(running.as_mut().poll(&mut cx).is_pending());
        let mut queued: Vec<_> =
            (0..HashPool::QUEUE_PER_PERMIT).map(|_| Box::pin(pool.run(|| true))).collect();
        for q in &mut queued {
            assert!(q.as_mut().poll(&mut cx).is_pending());
        }
        match Box::pin(pool.run(|| true)).as_mut().poll(&mut cx) {
            Poll::Ready(Err(e)) => {
                assert_eq!(e.kind(), crate::ErrorKind::TooManyRequests);
                assert_eq!(e.retry_after(), Some(1));
            }
            other => panic!("expected a refusal, got {:?}", other.map(|r| r.map(|_| ()))),
        }
        // A place freed by a request that gave up is taken again.
        queued.pop();
        assert!(Box::pin(pool.run(|| true)).as_mut().poll(&mut cx).is_pending());
        release.send(()).unwrap();
        assert!(running.await.unwrap());
    }

    #[test]
    fn the_secret_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let a = JwtKeys::load_or_create(dir.path()).unwrap();
        let b = JwtKeys::load_or_create(dir.path()).unwrap();
        let t =
            a.issue(Uuid::now_v7(), Role::Member, 0, jiff::Timestamp::now().as_second(), LIFETIME).unwrap();
        assert!(b.verify(&t).is_ok());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("jwt_secret")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
