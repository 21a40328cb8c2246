//! Credentials: argon2id password hashes, agent tokens (docs/rules.md, members) and
//! JWTs (docs/rules.md, members).

use std::path::Path;

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

/// Lifetime of a login JWT.
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
pub fn new_password() -> String {
    URL_SAFE_NO_PAD.encode(random_bytes::<18>())
}

/// The stored form of an agent token. Tokens carry 256 random bits, so a
/// plain SHA-256 is enough; a slow hash would only slow every request.
pub fn token_hash(token: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(token.as_bytes());
    // Runs on every request of an agent: one allocation, not one per byte.
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 15) as usize] as char);
    }
    out
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

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    role: Role,
    iat: i64,
    exp: i64,
}

/// Signs and checks login JWTs (HS256).
pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
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
        }
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
        let secret = URL_SAFE_NO_PAD.encode(random_bytes::<48>());
        write_private(&path, secret.as_bytes())?;
        Ok(JwtKeys::new(secret.as_bytes()))
    }

    pub fn issue(&self, member: Uuid, role: Role, now: i64) -> Result<String> {
        let claims = Claims { sub: member.to_string(), role, iat: now, exp: now + JWT_LIFETIME_SECS };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).map_err(Error::internal)
    }

    /// The member a valid, unexpired token names.
    pub fn verify(&self, token: &str) -> Result<Uuid> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|_| Error::unauthorized("invalid or expired token"))?;
        data.claims.sub.parse().map_err(|_| Error::unauthorized("invalid token"))
    }
}

/// Writes a file readable by its owner only.
pub fn write_private(path: &Path, contents: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    file.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let t = keys.issue(id, Role::Owner, now).unwrap();
        assert_eq!(keys.verify(&t).unwrap(), id);
        let old = keys.issue(id, Role::Owner, now - JWT_LIFETIME_SECS - 10).unwrap();
        assert!(keys.verify(&old).is_err());
        assert!(JwtKeys::new(b"another secret another secret 00").verify(&t).is_err());
    }

    #[test]
    fn the_secret_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let a = JwtKeys::load_or_create(dir.path()).unwrap();
        let b = JwtKeys::load_or_create(dir.path()).unwrap();
        let t = a.issue(Uuid::now_v7(), Role::Member, jiff::Timestamp::now().as_second()).unwrap();
        assert!(b.verify(&t).is_ok());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("jwt_secret")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
