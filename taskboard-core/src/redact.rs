//! Credentials out of logs (docs/decisions.md 20.t): the one function
//! every log writer passes its text through.
//!
//! A credential is recognised by its form wherever it appears in a
//! line, whatever field or message carries it: an agent token (`tbk-`),
//! an access token (`tba-`), a webhook secret (`whsec_`), each also with
//! its `-` or `_` percent-encoded as a query string carries it, and a
//! JSON Web Token (`eyJ…` in three dot-separated parts, a login's or an
//! identity provider's). The kind stays readable (`tba-REDACTED`), the
//! secret part does not.

use std::borrow::Cow;

/// What a redacted secret reads as.
pub const REDACTED: &str = "REDACTED";

/// The prefixes of the board's own credentials, as written and as
/// percent-encoded, with what they are replaced by.
const PREFIXES: &[(&str, &str)] = &[
    ("tbk-", "tbk-"),
    ("tba-", "tba-"),
    ("whsec_", "whsec_"),
    ("tbk%2d", "tbk-"),
    ("tba%2d", "tba-"),
    ("whsec%5f", "whsec_"),
];

/// Characters a prefixed credential is made of: URL-safe base64 for the
/// tokens, standard base64 for a webhook secret, and `%` so a secret
/// written percent-encoded is taken whole.
fn is_secret_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'+' | b'/' | b'=' | b'%')
}

fn is_base64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')
}

/// `text` with every credential in it replaced; borrowed when there was
/// none.
///
/// ```
/// use taskboard_core::redact::redact;
/// assert_eq!(redact("GET /x?access_token=tba-abcDEF_123-x&limit=5"), "GET /x?access_token=tba-REDACTED&limit=5");
/// assert_eq!(redact("tokens start with tba-"), "tokens start with tba-");
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    // Bytes of `text` already copied to `out`.
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let Some((kind, end)) = credential_at(bytes, i) else {
            i += 1;
            continue;
        };
        let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
        out.push_str(&text[copied..i]);
        out.push_str(kind);
        out.push_str(REDACTED);
        copied = end;
        i = end;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
    }
}

/// Whether `text` holds a credential.
pub fn holds_credential(text: &str) -> bool {
    matches!(redact(text), Cow::Owned(_))
}

/// The credential starting at `at`, if one does: what stays readable of
/// it, and where it ends.
fn credential_at(bytes: &[u8], at: usize) -> Option<(&'static str, usize)> {
    let rest = &bytes[at..];
    for (prefix, shown) in PREFIXES {
        if rest.len() > prefix.len() && rest[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes()) {
            let secret = rest[prefix.len()..].iter().take_while(|b| is_secret_char(**b)).count();
            // A prefix alone (`tokens start with tba-`) is no secret.
            if secret > 0 {
                return Some((shown, at + prefix.len() + secret));
            }
        }
    }
    if rest.starts_with(b"eyJ") {
        return jwt_len(rest).map(|n| ("", at + n));
    }
    None
}

/// The length of a JSON Web Token at the start of `rest`: a header and a
/// payload of base64url, then a signature (empty for an unsigned one).
fn jwt_len(rest: &[u8]) -> Option<usize> {
    let header = rest.iter().take_while(|b| is_base64url(**b)).count();
    if rest.get(header) != Some(&b'.') {
        return None;
    }
    let payload_at = header + 1;
    let payload = rest[payload_at..].iter().take_while(|b| is_base64url(**b)).count();
    if payload == 0 || rest.get(payload_at + payload) != Some(&b'.') {
        return None;
    }
    let signature_at = payload_at + payload + 1;
    let signature = rest[signature_at..].iter().take_while(|b| is_base64url(**b)).count();
    Some(signature_at + signature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_credential_is_redacted_wherever_it_appears() {
        let agent = "tbk-Zx9_aB3-kLmN0pQrStUvWxYz0123456789abcdEF";
        let access = "tba-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbC";
        let hook = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+/x=";
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbmEifQ.c2lnbmF0dXJl_-x";
        for (text, want) in [
            (format!("?token={agent}"), "?token=tbk-REDACTED".to_string()),
            (format!("?access_token={access}&limit=5"), "?access_token=tba-REDACTED&limit=5".into()),
            (format!("?q={access}"), "?q=tba-REDACTED".into()),
            (format!("secret {hook}."), "secret whsec_REDACTED.".into()),
            (format!("\"authorization\":\"Bearer {jwt}\""), "\"authorization\":\"Bearer REDACTED\"".into()),
            (format!("a={access} b={agent}"), "a=tba-REDACTED b=tbk-REDACTED".into()),
        ] {
            assert_eq!(redact(&text), want, "{text}");
        }
    }

    #[test]
    fn percent_encoded_prefixes_are_redacted_too() {
        assert_eq!(redact("q=tba%2Dabc123&x=1"), "q=tba-REDACTED&x=1");
        assert_eq!(redact("q=TBK%2dabc"), "q=tbk-REDACTED");
        assert_eq!(redact("s=whsec%5FabcDEF%2B%3D"), "s=whsec_REDACTED");
    }

    #[test]
    fn text_without_a_credential_is_left_as_it_is() {
        for text in [
            "",
            "tokens start with tba- or tbk-",
            "GET /api/v1/tasks?q=login+bug&limit=5 200",
            "eyJ alone, eyJabc.def without a signature part",
            "a whsec_ and nothing after it",
            "ünïcödé tba-",
        ] {
            assert!(matches!(redact(text), Cow::Borrowed(_)), "{text}");
            assert!(!holds_credential(text), "{text}");
        }
        assert_eq!(redact("ünï tba-x ünï"), "ünï tba-REDACTED ünï");
    }

    #[test]
    fn redacting_again_changes_nothing() {
        let once = redact("tba-abc eyJa.eyJb.c whsec_x").into_owned();
        assert_eq!(redact(&once), once);
    }
}
