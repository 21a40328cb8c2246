//! Signatures of the Standard Webhooks scheme: `v1,` and the base64 of
//! HMAC-SHA256 over `id.timestamp.body`, keyed by the secret's decoded
//! bytes.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Error, Result};

const PREFIX: &str = "whsec_";

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(Error::internal)?;
    Ok(format!("{PREFIX}{}", STANDARD.encode(bytes)))
}

/// The `webhook-signature` header of a delivery attempt.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<String> {
    let key = STANDARD
        .decode(secret.strip_prefix(PREFIX).unwrap_or(secret))
        .map_err(|e| Error::internal(format!("a stored webhook secret does not decode: {e}")))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).map_err(Error::internal)?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes())))
}

/// The `webhook-signature` header signed with each of `secrets`,
/// separated by spaces (the specification lets a receiver accept any of
/// them, so a rotated secret and its predecessor can both sign).
pub fn signatures(secrets: &[String], id: &str, timestamp: i64, body: &[u8]) -> Result<String> {
    let mut out = Vec::with_capacity(secrets.len());
    for s in secrets {
        out.push(sign(s, id, timestamp, body)?);
    }
    Ok(out.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_32_random_bytes() {
        let (a, b) = (new_secret().unwrap(), new_secret().unwrap());
        assert_ne!(a, b);
        assert_eq!(STANDARD.decode(&a[PREFIX.len()..]).unwrap().len(), 32);
    }

    /// The example of the Standard Webhooks specification's test vectors.
    #[test]
    fn signs_like_the_specification() {
        let sig = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        )
        .unwrap();
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}
