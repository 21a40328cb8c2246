//! A member's access tokens and the end of its logins.

use crate::access_tokens::{AccessToken, CreatedAccessToken, NewAccessToken};
use crate::endpoint::{Endpoint, Info, Method};
use crate::model::{Ok, Scope};
use uuid::Uuid;

/// `POST /members/{id}/tokens`.
#[derive(Debug)]
pub struct CreateAccessToken;

impl Endpoint for CreateAccessToken {
    const INFO: Info = Info {
        name: "create_access_token",
        method: Method::Post,
        path: "/api/v1/members/{member_id}/tokens",
        auth: true,
        status: 201,
        summary: "Create an access token (shown once)",
        description: "A named token (`tba-…`) acting as the member with only the given `scopes` (`read`, \
            `tasks:write`, `messages:write`, `files:write`, `runs:write`, `admin`), in the given \
            `project_ids` only when set, until `expires_at` when set. The token is in this answer \
            only; the board keeps its SHA-256. The member itself, an owner, or an admin for a member \
            whose role is `member` (403 otherwise). A token made with an access token has no scope or \
            project that token lacks (403). The name is 1 to 100 characters, `expires_at` in the \
            future (422 otherwise); a member holds at most 100 tokens (409).",
        errors: &[403, 404, 409],
    };
    const SCOPE: Scope = Scope::Admin;
    const BOARD_WIDE: bool = true;
    type Path = Uuid;
    type Query = ();
    type Body = NewAccessToken;
    type Response = CreatedAccessToken;
}

/// `GET /members/{id}/tokens`.
#[derive(Debug)]
pub struct ListAccessTokens;

impl Endpoint for ListAccessTokens {
    const INFO: Info = Info {
        name: "list_access_tokens",
        method: Method::Get,
        path: "/api/v1/members/{member_id}/tokens",
        auth: true,
        status: 200,
        summary: "List a member's access tokens",
        description: "Every access token of the member in creation order, without its secret, with \
            `last_used_at` (refreshed at most once a minute). Who may create the member's tokens may \
            list them (403 otherwise).",
        errors: &[403, 404],
    };
    const BOARD_WIDE: bool = true;
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Vec<AccessToken>;
}

/// `DELETE /members/{id}/tokens/{token_id}`.
#[derive(Debug)]
pub struct RevokeAccessToken;

impl Endpoint for RevokeAccessToken {
    const INFO: Info = Info {
        name: "revoke_access_token",
        method: Method::Delete,
        path: "/api/v1/members/{member_id}/tokens/{token_id}",
        auth: true,
        status: 200,
        summary: "Revoke an access token",
        description: "The token fails with 401 at once, on every server process of the board. Who may \
            create the member's tokens may revoke them (403 otherwise); 404 for a token the member does \
            not hold.",
        errors: &[403, 404],
    };
    const SCOPE: Scope = Scope::Admin;
    const BOARD_WIDE: bool = true;
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = ();
    type Response = Ok;
}

/// `POST /members/{id}/logout-everywhere`.
#[derive(Debug)]
pub struct LogoutEverywhere;

impl Endpoint for LogoutEverywhere {
    const INFO: Info = Info {
        name: "logout_everywhere",
        method: Method::Post,
        path: "/api/v1/members/{member_id}/logout-everywhere",
        auth: true,
        status: 200,
        summary: "End every login of a member",
        description: "Every login JWT of the member stops working at once (401) and its open event \
            streams close. Access tokens and an agent's own token are not logins: they stay until \
            revoked. The member itself, or an owner for anyone (403 otherwise); 400 for an agent.",
        errors: &[400, 403, 404],
    };
    const SCOPE: Scope = Scope::Admin;
    const BOARD_WIDE: bool = true;
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Ok;
}
