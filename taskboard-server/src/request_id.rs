//! The request id (`X-Request-Id`): taken from the client when it is
//! usable, generated otherwise; echoed on every response and carried by
//! the request's log span, so a client's report and the server's log
//! lines meet.

use hyper::HeaderMap;
use hyper::header::{HeaderName, HeaderValue};

pub(crate) const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// Longest id accepted from a client; a longer one is replaced, as log
/// lines should not carry what a client chose to make large.
pub(crate) const MAX_LEN: usize = 128;

/// The id of a request: the client's `X-Request-Id` when there is exactly
/// one of 1 to [`MAX_LEN`] visible ASCII characters (no spaces, no
/// controls), a fresh random one otherwise.
pub(crate) fn of(headers: &HeaderMap) -> HeaderValue {
    let mut given = headers.get_all(&HEADER).iter();
    match (given.next(), given.next()) {
        (Some(v), None) if usable(v.as_bytes()) => v.clone(),
        _ => generated(),
    }
}

fn usable(id: &[u8]) -> bool {
    !id.is_empty() && id.len() <= MAX_LEN && id.iter().all(|b| b.is_ascii_graphic())
}

/// A random half chosen once per process, then a count: unique within
/// the process and, by the random half, across processes and restarts,
/// without asking the operating system for randomness on every request
/// (that call was 2 % of serving a read, docs/storage.md S.36).
fn generated() -> HeaderValue {
    use std::sync::LazyLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static PROCESS: LazyLock<u64> = LazyLock::new(|| uuid::Uuid::new_v4().as_u64_pair().0);
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    // Written into one buffer: `format!` took a tenth of a small
    // request's handling (docs/storage.md, S.37).
    let mut words = [0u8; 16];
    words[..8].copy_from_slice(&PROCESS.to_be_bytes());
    words[8..].copy_from_slice(&n.to_be_bytes());
    let mut id = [0u8; 32];
    hex::encode_to_slice(words, &mut id).expect("32 digits for 16 bytes");
    HeaderValue::from_bytes(&id).expect("hex digits are a valid header value")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(values: &[&[u8]]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(HEADER, HeaderValue::from_bytes(v).unwrap());
        }
        h
    }

    #[test]
    fn a_usable_id_is_kept_and_any_other_replaced() {
        assert_eq!(of(&with(&[b"abc-123_X.y:z"])), "abc-123_X.y:z");
        let long = vec![b'a'; MAX_LEN];
        assert_eq!(of(&with(&[&long])).as_bytes(), &long[..]);
        for bad in [&b"has space"[..], b"tab\there", &[b'a'; MAX_LEN + 1], "é".as_bytes(), b""] {
            let id = of(&with(&[bad]));
            assert_ne!(id.as_bytes(), bad);
            assert_eq!(id.len(), 32, "a generated id: {id:?}");
        }
        assert_eq!(of(&with(&[b"one", b"two"])).len(), 32, "two ids: neither is taken");
        assert_eq!(of(&HeaderMap::new()).len(), 32);
        assert_ne!(of(&HeaderMap::new()), of(&HeaderMap::new()), "generated ids differ");
        // The process's random half, then a count in lowercase hex.
        let (a, b) = (generated(), generated());
        let hex = |v: &HeaderValue| v.to_str().unwrap().to_string();
        assert!(hex(&a).bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)), "{a:?}");
        assert_eq!(hex(&a)[..16], hex(&b)[..16]);
        let count = |v: &HeaderValue| u64::from_str_radix(&hex(v)[16..], 16).unwrap();
        assert!(count(&b) > count(&a), "{a:?} then {b:?}");
    }
}
