//! The protocol side of single sign-on, over the `openidconnect` crate
//! and the server's reqwest client: discovery, the authorization URL
//! with PKCE, the code exchange and the ID token's verification, with
//! the provider's signing keys fetched again when a token names a key not
//! yet known (docs/decisions.md 3.r). The rules of a sign-in live in
//! `taskboard_core::board` (`oidc_start`, `oidc_callback`).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreJwsSigningAlgorithm, CoreProviderMetadata,
};
use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken, IssuerUrl, JsonWebKeySet,
    Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope,
    SignatureVerificationError, TokenResponse,
};
use taskboard_core::oidc::{
    AuthorizationRequest, CodeExchange, Identity, IdentityProvider, OidcOptions, ProviderFuture,
};
use taskboard_core::{Error, ErrorKind};
use tokio::sync::RwLock;

/// Single sign-on as the server's options give it.
#[derive(Debug, Clone)]
pub struct OidcConfig {
    /// `--oidc-issuer`: https://, or http:// on a loopback address.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    /// `--oidc-name`: the name on the sign-in button.
    pub name: Option<String>,
    /// `--oidc-scopes`: asked for besides `openid`.
    pub scopes: Vec<String>,
    pub create_members: bool,
    pub admin_group: Option<String>,
    /// Bounds on the sign-ins under way (per client address, and on the
    /// board); the defaults unless a test narrows them.
    #[doc(hidden)]
    pub limits: taskboard_core::oidc::SignInLimits,
}

/// The scopes asked for unless `--oidc-scopes` says otherwise.
pub const DEFAULT_SCOPES: &[&str] = &["openid", "email", "profile"];

impl Default for OidcConfig {
    fn default() -> OidcConfig {
        OidcConfig {
            issuer: String::new(),
            client_id: String::new(),
            client_secret: None,
            name: None,
            scopes: DEFAULT_SCOPES.iter().map(|s| s.to_string()).collect(),
            create_members: false,
            admin_group: None,
            limits: Default::default(),
        }
    }
}

/// Time allowed for one request to the provider.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(15);

impl OidcConfig {
    /// The board's options, with the protocol side over HTTP. Nothing is
    /// fetched yet: discovery happens at the first sign-in (and again
    /// after one failed), so the board starts while the provider is down.
    /// `public_url` is required: the redirect URI is under it, never under
    /// a request's `Host` (docs/decisions.md 20.s).
    pub fn options(&self, public_url: Option<&str>) -> Result<OidcOptions, crate::StartError> {
        let issuer = taskboard_core::oidc::check_issuer(&self.issuer).map_err(|e| e.detail().to_string())?;
        if self.client_id.is_empty() {
            return Err("--oidc-client-id is required with --oidc-issuer".into());
        }
        let public_url = public_url.ok_or(
            "single sign-on (--oidc-issuer) needs --public-url URL (`public-url` in the configuration \
             file, TASKBOARD_PUBLIC_URL): the address people reach the board at, under which the \
             identity provider sends them back (URL/api/v1/auth/oidc/callback); the board never takes it \
             from a request's Host header",
        )?;
        let public_url =
            taskboard_core::oidc::check_public_url(public_url).map_err(|e| e.detail().to_string())?;
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder()
            // A redirect followed here could reach anywhere (SSRF).
            .redirect(reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()?;
        let provider = OpenIdProvider {
            issuer: IssuerUrl::new(issuer.clone()).map_err(|e| format!("--oidc-issuer: {e}"))?,
            client_id: ClientId::new(self.client_id.clone()),
            client_secret: self.client_secret.clone().filter(|s| !s.is_empty()).map(ClientSecret::new),
            scopes: self.scopes.iter().filter(|s| s.as_str() != "openid").cloned().collect(),
            http,
            metadata: RwLock::new(None),
        };
        Ok(OidcOptions {
            issuer,
            display_name: self.name.clone().filter(|n| !n.is_empty()),
            create_members: self.create_members,
            admin_group: self.admin_group.clone().filter(|g| !g.is_empty()),
            public_url,
            limits: self.limits,
            provider: Arc::new(provider),
        })
    }
}

impl OidcConfig {
    /// With `--oidc-admin-group` set, the warning to log when the
    /// provider's discovery lists a `groups` scope that `--oidc-scopes`
    /// does not ask for: such a provider puts no `groups` in the ID token
    /// without it, and everyone would sign in as a member
    /// (docs/decisions.md 22.j). None when all is well, and when the
    /// provider cannot be read now (a sign-in says so then).
    pub async fn groups_scope_warning(&self) -> Option<String> {
        let group = self.admin_group.as_deref().filter(|g| !g.is_empty())?;
        if self.scopes.iter().any(|s| s == "groups") {
            return None;
        }
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()
            .ok()?;
        let url = format!("{}/.well-known/openid-configuration", self.issuer.trim_end_matches('/'));
        let discovery: serde_json::Value = http.get(&url).send().await.ok()?.json().await.ok()?;
        let listed = discovery["scopes_supported"].as_array()?.iter().any(|s| s == "groups");
        listed.then(|| {
            format!(
                "--oidc-admin-group {group} reads the ID token's `groups` claim, and the provider lists a \
                 `groups` scope that --oidc-scopes ({}) does not ask for: without it the provider may send \
                 no groups and everyone signs in as a member; add it: --oidc-scopes {},groups",
                self.scopes.join(","),
                self.scopes.join(",")
            )
        })
    }
}

struct OpenIdProvider {
    issuer: IssuerUrl,
    client_id: ClientId,
    client_secret: Option<ClientSecret>,
    scopes: Vec<String>,
    http: reqwest::Client,
    /// The provider's metadata and signing keys, once discovered.
    metadata: RwLock<Option<CoreProviderMetadata>>,
}

impl std::fmt::Debug for OpenIdProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenIdProvider").field("issuer", &self.issuer.as_str()).finish()
    }
}

fn unreachable_provider(issuer: &IssuerUrl, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        format!("the identity provider {} cannot be used: {e}", issuer.as_str()),
    )
}

/// The error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A refusal of the ID token, naming what fails.
fn refusal(e: &ClaimsVerificationError) -> Error {
    let detail = match e {
        ClaimsVerificationError::SignatureVerification(SignatureVerificationError::NoMatchingKey) => {
            "the ID token is signed with a key the provider does not publish".to_string()
        }
        ClaimsVerificationError::SignatureVerification(s) => {
            format!("the ID token's signature does not verify ({s})")
        }
        ClaimsVerificationError::Expired(why) => format!("the ID token has expired ({why})"),
        ClaimsVerificationError::InvalidAudience(why) => {
            format!("the ID token is meant for another client (audience: {why})")
        }
        ClaimsVerificationError::InvalidIssuer(why) => {
            format!("the ID token comes from another issuer ({why})")
        }
        ClaimsVerificationError::InvalidNonce(why) => {
            format!("the ID token's nonce does not match this sign-in ({why})")
        }
        other => format!("the ID token does not verify ({other})"),
    };
    Error::unauthorized(detail)
}

/// The `groups` claim of an ID token whose signature has been verified.
fn groups_of(token: &str) -> Vec<String> {
    let payload = token.split('.').nth(1).and_then(|p| URL_SAFE_NO_PAD.decode(p.trim_end_matches('=')).ok());
    let claims: Option<serde_json::Value> = payload.and_then(|p| serde_json::from_slice(&p).ok());
    match claims.as_ref().and_then(|c| c.get("groups")) {
        Some(serde_json::Value::Array(groups)) => {
            groups.iter().filter_map(|g| g.as_str().map(str::to_string)).collect()
        }
        Some(serde_json::Value::String(group)) => vec![group.clone()],
        _ => Vec::new(),
    }
}

/// Sends one of openidconnect's requests with the board's reqwest client
/// (the one reqwest of the workspace; openidconnect's own would bring a
/// second). Redirects are not followed: the client is built without them.
async fn send(
    http: reqwest::Client,
    request: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, reqwest::Error> {
    let (parts, body) = request.into_parts();
    let answer =
        http.request(parts.method, parts.uri.to_string()).headers(parts.headers).body(body).send().await?;
    let status = answer.status();
    let headers = answer.headers().clone();
    let mut response = openidconnect::HttpResponse::new(answer.bytes().await?.to_vec());
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

impl OpenIdProvider {
    /// The provider's requests, sent with the board's client.
    fn sender(
        &self,
    ) -> impl Fn(
        openidconnect::HttpRequest,
    ) -> futures_util::future::BoxFuture<
        'static,
        Result<openidconnect::HttpResponse, reqwest::Error>,
    > + '_ {
        move |request| Box::pin(send(self.http.clone(), request))
    }

    /// The provider's metadata and keys: discovered once, again after a
    /// failure.
    async fn metadata(&self) -> Result<CoreProviderMetadata, Error> {
        if let Some(m) = self.metadata.read().await.as_ref() {
            return Ok(m.clone());
        }
        let mut slot = self.metadata.write().await;
        if let Some(m) = slot.as_ref() {
            return Ok(m.clone());
        }
        let discovered = CoreProviderMetadata::discover_async(self.issuer.clone(), &self.sender())
            .await
            .map_err(|e| unreachable_provider(&self.issuer, chain(&e)))?;
        *slot = Some(discovered.clone());
        Ok(discovered)
    }

    /// Fetches the provider's signing keys again (a token named a key
    /// not known yet: the provider rotated its keys).
    async fn refresh_keys(&self, metadata: CoreProviderMetadata) -> Result<CoreProviderMetadata, Error> {
        let jwks = JsonWebKeySet::fetch_async(metadata.jwks_uri(), &self.sender())
            .await
            .map_err(|e| unreachable_provider(&self.issuer, chain(&e)))?;
        let refreshed = metadata.set_jwks(jwks);
        *self.metadata.write().await = Some(refreshed.clone());
        tracing::info!(issuer = self.issuer.as_str(), "fetched the identity provider's signing keys again");
        Ok(refreshed)
    }

    fn client(
        &self,
        metadata: CoreProviderMetadata,
        redirect_uri: &str,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        Error,
    > {
        let redirect = RedirectUrl::new(redirect_uri.to_string()).map_err(|e| {
            Error::bad_request(format!("the redirect URI {redirect_uri:?} is not a URL: {e}"))
        })?;
        Ok(CoreClient::from_provider_metadata(metadata, self.client_id.clone(), self.client_secret.clone())
            .set_redirect_uri(redirect))
    }

    async fn authorize(&self, request: &AuthorizationRequest) -> Result<String, Error> {
        let client = self.client(self.metadata().await?, &request.redirect_uri)?;
        let (state, nonce) = (request.state.clone(), request.nonce.clone());
        let mut auth = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            move || CsrfToken::new(state),
            move || Nonce::new(nonce),
        );
        for scope in &self.scopes {
            auth = auth.add_scope(Scope::new(scope.clone()));
        }
        let verifier = PkceCodeVerifier::new(request.pkce_verifier.clone());
        let (url, _, _) =
            auth.set_pkce_challenge(PkceCodeChallenge::from_code_verifier_sha256(&verifier)).url();
        Ok(url.to_string())
    }

    async fn exchange(&self, exchange: &CodeExchange) -> Result<Identity, Error> {
        let metadata = self.metadata().await?;
        let client = self.client(metadata.clone(), &exchange.redirect_uri)?;
        let response = client
            .exchange_code(AuthorizationCode::new(exchange.code.clone()))
            .map_err(|e| unreachable_provider(&self.issuer, e))?
            .set_pkce_verifier(PkceCodeVerifier::new(exchange.pkce_verifier.clone()))
            .request_async(&self.sender())
            .await
            .map_err(|e| match e {
                RequestTokenError::ServerResponse(r) => Error::unauthorized(format!(
                    "the identity provider refused the code: {}{}",
                    r.error(),
                    r.error_description().map(|d| format!(" ({d})")).unwrap_or_default()
                )),
                other => unreachable_provider(&self.issuer, chain(&other)),
            })?;
        let token = response
            .id_token()
            .ok_or_else(|| Error::unauthorized("the identity provider's answer holds no ID token"))?;
        let nonce = Nonce::new(exchange.nonce.clone());
        // The algorithms the provider says it signs ID tokens with, never
        // `none` (the crate alone would take RS256 only).
        let algs: Vec<CoreJwsSigningAlgorithm> = metadata
            .id_token_signing_alg_values_supported()
            .iter()
            .filter(|a| **a != CoreJwsSigningAlgorithm::None)
            .cloned()
            .collect();
        let verified = token.claims(&client.id_token_verifier().set_allowed_algs(algs.clone()), &nonce);
        let claims = match verified {
            Ok(claims) => claims.clone(),
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => {
                let client = self.client(self.refresh_keys(metadata).await?, &exchange.redirect_uri)?;
                let verifier = client.id_token_verifier().set_allowed_algs(algs);
                token.claims(&verifier, &nonce).map_err(|e| refusal(&e))?.clone()
            }
            Err(e) => return Err(refusal(&e)),
        };
        Ok(Identity {
            subject: claims.subject().as_str().to_string(),
            email: claims.email().map(|e| e.as_str().to_string()),
            email_verified: claims.email_verified().unwrap_or(false),
            name: claims.name().and_then(|n| n.get(None)).map(|n| n.as_str().to_string()),
            preferred_username: claims.preferred_username().map(|u| u.as_str().to_string()),
            groups: groups_of(&token.to_string()),
        })
    }
}

impl IdentityProvider for OpenIdProvider {
    fn authorization_url<'a>(&'a self, request: &'a AuthorizationRequest) -> ProviderFuture<'a, String> {
        Box::pin(self.authorize(request))
    }

    fn sign_in<'a>(&'a self, exchange: &'a CodeExchange) -> ProviderFuture<'a, Identity> {
        Box::pin(self.exchange(exchange))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_read_from_the_payload() {
        let payload = URL_SAFE_NO_PAD.encode(br#"{"sub":"a","groups":["staff","admins"]}"#);
        assert_eq!(groups_of(&format!("h.{payload}.s")), ["staff", "admins"]);
        let one = URL_SAFE_NO_PAD.encode(br#"{"groups":"admins"}"#);
        assert_eq!(groups_of(&format!("h.{one}.s")), ["admins"]);
        assert!(groups_of("not a token").is_empty());
    }
}
