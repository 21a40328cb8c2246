//! The words of signing in: a login with a password and its answer, the
//! ways a board offers (`GET /auth/methods`), and the queries and body of
//! single sign-on's start, callback and code exchange.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::model::Role;

/// The query of `GET /auth/oidc/start`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SignInQuery {
    /// Where to come back with `?login_code=`: a path of this server
    /// (`/`), or a loopback URL (`http://127.0.0.1:PORT/`).
    #[serde(default = "root_path")]
    pub return_to: String,
}

fn root_path() -> String {
    "/".to_string()
}

/// The query of `GET /auth/oidc/callback`: the provider's answer.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct CallbackQuery {
    /// The authorization code.
    #[serde(default)]
    pub code: Option<String>,
    /// The one-time state the sign-in started with.
    #[serde(default)]
    pub state: Option<String>,
    /// The issuer of the answer (RFC 9207), checked when given.
    #[serde(default)]
    pub iss: Option<String>,
    /// A refusal by the provider (`access_denied` …).
    #[serde(default)]
    pub error: Option<String>,
    /// What the provider says of its refusal.
    #[serde(default)]
    pub error_description: Option<String>,
    /// Where the provider explains its refusal; not used.
    #[serde(default)]
    pub error_uri: Option<String>,
    /// Sent by some providers (Keycloak, Entra ID); not used.
    #[serde(default)]
    pub session_state: Option<String>,
    /// Sent by some providers (Google: the scopes granted, the account's
    /// index, the prompt shown, the hosted domain); not used.
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub authuser: Option<String>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub hd: Option<String>,
}

/// The body of `POST /auth/oidc/exchange`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LoginCodeRequest {
    /// The one-time code of a finished single sign-on.
    pub login_code: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LoginRequest {
    /// Slug or name of the member.
    pub login: String,
    pub password: String,
}

/// Response of login.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LoginResponse {
    pub token: String,
    pub member_id: Uuid,
    pub slug: String,
    pub role: Role,
}

/// Whether password login is open to every human or to owners only
/// (`--password-login`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PasswordLogin {
    #[default]
    All,
    /// Owners only: the way back in when the provider is down.
    Owners,
}

/// The ways to sign in on this board (`GET /auth/methods`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuthMethods {
    /// `all`: every human may log in with a password; `owners`: only
    /// owners may (`--password-login`).
    pub password: PasswordLogin,
    /// Single sign-on, when configured.
    pub sso: Option<SsoMethod>,
}

/// Single sign-on as the sign-in page offers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SsoMethod {
    /// The provider's name for the button (`--oidc-name`, else the
    /// issuer's host).
    pub name: String,
    pub issuer: String,
    /// The path that starts a sign-in (`?return_to=` to add).
    pub start: String,
}

/// The cookie binding a sign-in to the browser that started it
/// (docs/decisions.md 20.r): set by the start, sent to the callback only.
pub const BROWSER_COOKIE: &str = "taskboard_sso";
