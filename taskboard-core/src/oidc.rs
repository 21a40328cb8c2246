//! Single sign-on with OpenID Connect: its settings, what the protocol
//! side hands the board, and the rules on the addresses involved
//! (docs/rules.md, single sign-on).
//!
//! The board keeps the rules (one-time states and login codes, linking a
//! member by issuer and subject or by verified email, creating members,
//! groups to roles); the protocol itself (discovery, the authorization
//! URL with PKCE, the code exchange and the ID token's verification) is
//! an [`IdentityProvider`] the server implements over HTTP, so this crate
//! makes no HTTP request.

use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The path the provider sends the browser back to.
pub const CALLBACK_PATH: &str = "/api/v1/auth/oidc/callback";

pub use crate::wire::BROWSER_COOKIE;

/// A future of the protocol side.
pub type ProviderFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// What the board asks the provider for at the start of a sign-in.
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    pub redirect_uri: String,
    pub state: String,
    pub nonce: String,
    /// The PKCE code verifier; the URL carries its S256 challenge.
    pub pkce_verifier: String,
}

/// What the board hands back to exchange the code of a callback.
#[derive(Debug, Clone)]
pub struct CodeExchange {
    pub redirect_uri: String,
    pub code: String,
    pub nonce: String,
    pub pkce_verifier: String,
}

/// Who signed in, from a verified ID token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
    pub name: Option<String>,
    pub preferred_username: Option<String>,
    pub groups: Vec<String>,
}

/// The protocol side of single sign-on, for one issuer. Its refusals are
/// errors with a `detail` naming them (401 for a token that does not
/// verify, 503 for a provider that cannot be reached).
pub trait IdentityProvider: fmt::Debug + Send + Sync + 'static {
    /// The URL to send the browser to.
    fn authorization_url<'a>(&'a self, request: &'a AuthorizationRequest) -> ProviderFuture<'a, String>;
    /// Exchanges the code and verifies the ID token it brings: signature
    /// (fetching the provider's keys again for a key it does not know),
    /// issuer, audience, expiry and nonce.
    fn sign_in<'a>(&'a self, exchange: &'a CodeExchange) -> ProviderFuture<'a, Identity>;
}

pub use crate::wire::PasswordLogin;

/// Single sign-on as configured.
#[derive(Debug, Clone)]
pub struct OidcOptions {
    /// The issuer, as checked by [`check_issuer`].
    pub issuer: String,
    /// Shown on the sign-in button; the issuer's host when `None`.
    pub display_name: Option<String>,
    /// Creates a human member at the first sign-in of someone no member
    /// matches (`--oidc-create-members`); refused with 403 otherwise.
    pub create_members: bool,
    /// Members in this group are admins, the others members (owners keep
    /// their role), set at every sign-in (`--oidc-admin-group`).
    pub admin_group: Option<String>,
    /// The URL the board is reached at (`--public-url`), as checked by
    /// [`check_public_url`]: the redirect URI is under it, never under the
    /// address a request names (its `Host` header is the client's to
    /// choose), and the browser cookie is `Secure` when it is https.
    pub public_url: String,
    /// How many sign-ins may be under way.
    pub limits: SignInLimits,
    pub provider: Arc<dyn IdentityProvider>,
}

/// Bounds on the sign-ins under way (docs/decisions.md 20.s): each start
/// stores a state for 10 minutes, so starts are counted per client
/// address (in the windows of the login throttle, 429 with the time
/// left beyond) and the states kept are bounded for the whole board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInLimits {
    /// Sign-ins one client address (an IPv6 one by its /64) may start
    /// within the login throttle's window.
    pub per_address: u32,
    /// Sign-ins under way on the board at once (started, not yet back
    /// from the provider nor expired); a start beyond is 429.
    pub pending: u64,
}

impl Default for SignInLimits {
    fn default() -> SignInLimits {
        SignInLimits { per_address: 60, pending: 10_000 }
    }
}

impl OidcOptions {
    /// The name on the sign-in button.
    pub fn display_name(&self) -> String {
        if let Some(name) = &self.display_name {
            return name.clone();
        }
        url::Url::parse(&self.issuer)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_else(|| self.issuer.clone())
    }

    /// The redirect URI, under `--public-url`.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("{}{CALLBACK_PATH}", self.public_url.trim_end_matches('/'))
    }

    /// The `Set-Cookie` value binding a sign-in to its browser: sent back
    /// to the callback path only, for the sign-in's 10 minutes, out of
    /// reach of scripts, along with the provider's redirect (a top-level
    /// navigation, which `SameSite=Lax` lets through) and over https only
    /// when the board is reached over https.
    pub(crate) fn browser_cookie(&self, value: &str, max_age_secs: i64) -> String {
        let secure = if self.public_url.starts_with("https://") { "; Secure" } else { "" };
        format!(
            "{BROWSER_COOKIE}={value}; Path={CALLBACK_PATH}; Max-Age={max_age_secs}; HttpOnly; \
             SameSite=Lax{secure}"
        )
    }
}

/// The board's public URL (`--public-url`): `http://` or `https://` with
/// a host, and no user, query or fragment. Given without a trailing
/// slash.
pub fn check_public_url(url: &str) -> Result<String> {
    let refuse = |why: &str| Error::invalid("public-url", format!("{url:?} {why}"));
    let parsed = url::Url::parse(url).map_err(|e| refuse(&format!("is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(refuse("must be http:// or https://"));
    }
    if parsed.host().is_none() {
        return Err(refuse("has no host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(refuse("must not hold a user or a password"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(refuse("must not have a query or a fragment"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// Lower-cased and trimmed, the form emails are compared and indexed in.
pub fn email_key(email: &str) -> String {
    email.trim().to_lowercase()
}

/// Whether `host` is a loopback address or `localhost`.
fn is_loopback(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(a) => IpAddr::V4(*a).is_loopback(),
        url::Host::Ipv6(a) => IpAddr::V6(*a).is_loopback(),
    }
}

/// An issuer must be `https://`, except on a loopback address (a local
/// provider, tests), where `http://` is accepted. Gives the issuer as
/// written, without a trailing slash added or removed.
pub fn check_issuer(issuer: &str) -> Result<String> {
    let url = url::Url::parse(issuer)
        .map_err(|e| Error::invalid("oidc-issuer", format!("{issuer:?} is not a URL: {e}")))?;
    let loopback = url.host().is_some_and(|h| is_loopback(&h));
    match url.scheme() {
        "https" => Ok(issuer.to_string()),
        "http" if loopback => Ok(issuer.to_string()),
        _ => Err(Error::invalid(
            "oidc-issuer",
            format!("{issuer:?} must be https:// (http:// only on a loopback address)"),
        )),
    }
}

/// Where a sign-in returns to: a path of this server, or a loopback URL
/// (`taskboard login --sso` listens there). Anything else would make the
/// board an open redirect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReturnTo(String);

impl ReturnTo {
    pub fn parse(text: &str) -> Result<ReturnTo> {
        let refuse = |why: &str| {
            Error::invalid(
                "return_to",
                format!(
                    "{text:?} {why}; it must be a path of this server (starting with one /) or a \
                     loopback URL such as http://127.0.0.1:PORT/"
                ),
            )
        };
        if text.chars().any(|c| c.is_control() || c == '\\') {
            return Err(refuse("holds a control character or a backslash"));
        }
        if text.contains('#') {
            return Err(refuse("has a fragment"));
        }
        if text.starts_with('/') {
            if text.starts_with("//") {
                return Err(refuse("names another host"));
            }
            return Ok(ReturnTo(text.to_string()));
        }
        let url = url::Url::parse(text).map_err(|_| refuse("is neither a path nor a URL"))?;
        if url.scheme() != "http" {
            return Err(refuse("is not http:// on a loopback address"));
        }
        if !url.host().is_some_and(|h| is_loopback(&h))
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return Err(refuse("is not on a loopback address"));
        }
        Ok(ReturnTo(url.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The address with `login_code` added to its query.
    pub fn with_login_code(&self, code: &str) -> String {
        let sep = if self.0.contains('?') { '&' } else { '?' };
        format!("{}{sep}login_code={code}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuers_are_https_except_on_loopback() {
        assert!(check_issuer("https://id.example.com/realms/x").is_ok());
        assert!(check_issuer("http://127.0.0.1:4000").is_ok());
        assert!(check_issuer("http://[::1]:4000/").is_ok());
        assert!(check_issuer("http://localhost:4000").is_ok());
        let e = check_issuer("http://id.example.com").unwrap_err();
        assert!(e.detail().contains("https://"), "{}", e.detail());
        assert!(check_issuer("ftp://127.0.0.1").is_err());
        assert!(check_issuer("not a url").is_err());
    }

    #[test]
    fn a_public_url_is_http_or_https_with_a_host_and_nothing_else() {
        assert_eq!(check_public_url("https://board.example.com/").unwrap(), "https://board.example.com");
        assert_eq!(check_public_url("http://127.0.0.1:8080/tb").unwrap(), "http://127.0.0.1:8080/tb");
        for bad in [
            "board.example.com",
            "ftp://board.example.com",
            "https://u:p@board.example.com",
            "https://b.example/?x=1",
            "https://b.example/#x",
        ] {
            let e = check_public_url(bad).unwrap_err();
            assert!(e.detail().starts_with("public-url"), "{bad}: {}", e.detail());
        }
    }

    #[test]
    fn return_to_is_a_path_here_or_a_loopback_url() {
        assert_eq!(ReturnTo::parse("/").unwrap().with_login_code("c"), "/?login_code=c");
        assert_eq!(ReturnTo::parse("/board?x=1").unwrap().with_login_code("c"), "/board?x=1&login_code=c");
        assert!(ReturnTo::parse("http://127.0.0.1:5555/cb").is_ok());
        assert!(ReturnTo::parse("http://localhost:5555/").is_ok());
        assert!(ReturnTo::parse("http://[::1]:5555/").is_ok());
        for bad in [
            "https://evil.example/",
            "http://evil.example/",
            "//evil.example/",
            "/\\evil.example",
            "http://127.0.0.1.evil.example/",
            "http://user@127.0.0.1/",
            "javascript:alert(1)",
            "https://127.0.0.1/",
            "/#x",
            "",
        ] {
            let e = ReturnTo::parse(bad).unwrap_err();
            assert_eq!(e.kind().status(), 422, "{bad}");
            assert!(e.detail().starts_with("return_to"), "{}", e.detail());
        }
    }
}
