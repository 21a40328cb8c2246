//! Service status, login and members.

use crate::LoginResponse;
use crate::endpoint::{Endpoint, Info, ListEndpoint, Method};
use crate::model::{CreatedMember, Health, Member, Ok, StatusResponse, TokenResponse};
use crate::{LoginRequest, MemberListQuery, MemberPatch, NewMember, NewPassword, StatusQuery};
use uuid::Uuid;

/// `GET /health`.
#[derive(Debug)]
pub struct GetHealth;

impl Endpoint for GetHealth {
    const INFO: Info = Info {
        name: "health",
        method: Method::Get,
        path: "/health",
        auth: false,
        status: 200,
        summary: "Service status and version",
        description: "Answers `{\"status\": \"ok\", \"version\": …}` while the server runs; needs no credentials.",
        errors: &[],
    };
    type Path = ();
    type Query = ();
    type Body = ();
    type Response = Health;
}

/// `GET /ready`.
#[derive(Debug)]
pub struct GetReady;

impl Endpoint for GetReady {
    const INFO: Info = Info {
        name: "ready",
        method: Method::Get,
        path: "/ready",
        auth: false,
        status: 200,
        summary: "Readiness: the store can be read",
        description: "Reads the store in a fresh snapshot (on PostgreSQL over a connection of the pool) and \
            checks the database file and the directory of file contents are in place; answers \
            `{\"status\": \"ready\", \"version\": …}`, or 503 with a `detail` naming what fails. \
            Needs no credentials. `GET /health` is liveness and reads nothing.",
        errors: &[503],
    };
    type Path = ();
    type Query = ();
    type Body = ();
    type Response = Health;
}

/// `POST /auth/login`.
#[derive(Debug)]
pub struct Login;

impl Endpoint for Login {
    const INFO: Info = Info {
        name: "login",
        method: Method::Post,
        path: "/api/v1/auth/login",
        auth: false,
        status: 200,
        summary: "Log in with slug or name and password",
        description: "Exchanges a human member's slug (or name, when exactly one active human has it) and \
            password for a JWT valid for the server's login lifetime (`--session-lifetime`, 72 hours by \
            default). A wrong login and a wrong password give the same 401. \
            Repeated failures for one login name or from one address are refused with 429 and \
            `Retry-After` until the window has passed.",
        errors: &[401, 429],
    };
    type Path = ();
    type Query = ();
    type Body = LoginRequest;
    type Response = LoginResponse;
}

/// `GET /members`.
#[derive(Debug)]
pub struct ListMembers;

impl ListEndpoint for ListMembers {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "list_members",
        method: Method::Get,
        path: "/api/v1/members",
        auth: true,
        status: 200,
        summary: "List members",
        description: "Active members in creation order; `include_inactive=true` adds deleted ones. \
            `slug` keeps only the member with that slug (a list of none or one).",
        errors: &[],
    };
    type Path = ();
    type Query = MemberListQuery;
    type Item = Member;
}

/// `POST /members`.
#[derive(Debug)]
pub struct CreateMember;

impl Endpoint for CreateMember {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "create_member",
        method: Method::Post,
        path: "/api/v1/members",
        auth: true,
        status: 201,
        summary: "Create a member (agents get a token)",
        description: "Admins and owners only. An agent is created with a token, shown in this answer only; \
            a human gets a password with `PUT /members/{id}/password`. Only an owner may create an owner. \
            A slug already taken (by an active or deleted member) is 409.",
        errors: &[403, 409],
    };
    type Path = ();
    type Query = ();
    type Body = NewMember;
    type Response = CreatedMember;
}

/// `GET /members/me`.
#[derive(Debug)]
pub struct GetMe;

impl Endpoint for GetMe {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "get_me",
        method: Method::Get,
        path: "/api/v1/members/me",
        auth: true,
        status: 200,
        summary: "The calling member",
        description: "The member the credentials belong to.",
        errors: &[],
    };
    type Path = ();
    type Query = ();
    type Body = ();
    type Response = Member;
}

/// `PATCH /members/me/status?status=…`.
#[derive(Debug)]
pub struct SetMyStatus;

impl Endpoint for SetMyStatus {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "set_my_status",
        method: Method::Patch,
        path: "/api/v1/members/me/status",
        auth: true,
        status: 200,
        summary: "Set the caller's status",
        description: "Sets `online`, `offline` or `busy` for the caller and tells every connection \
            (`agent.status`). `busy` stays until the member changes it.",
        errors: &[],
    };
    type Path = ();
    type Query = StatusQuery;
    type Body = ();
    type Response = StatusResponse;
}

/// `GET /members/{id}`.
#[derive(Debug)]
pub struct GetMember;

impl Endpoint for GetMember {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "get_member",
        method: Method::Get,
        path: "/api/v1/members/{member_id}",
        auth: true,
        status: 200,
        summary: "Get a member",
        description: "Any member, active or deleted.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Member;
}

/// `PATCH /members/{id}`.
#[derive(Debug)]
pub struct UpdateMember;

impl Endpoint for UpdateMember {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "update_member",
        method: Method::Patch,
        path: "/api/v1/members/{member_id}",
        auth: true,
        status: 200,
        summary: "Update a member",
        description: "A member may change its own name, avatar_url, status and (agents) agent_config; \
            everything else, and every change to another member, needs an admin. Only an owner grants \
            or takes away the owner role, and the last active owner keeps it (400). `agent_config` \
            replaces the whole configuration.",
        errors: &[400, 403, 404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = MemberPatch;
    type Response = Member;
    const CONDITIONAL: bool = true;
}

/// `DELETE /members/{id}`.
#[derive(Debug)]
pub struct DeleteMember;

impl Endpoint for DeleteMember {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "delete_member",
        method: Method::Delete,
        path: "/api/v1/members/{member_id}",
        auth: true,
        status: 200,
        summary: "Deactivate a member (owners only)",
        description: "The member becomes inactive: its credentials stop working at once, its slug stays \
            taken and its history stays. The last active owner cannot be deleted (400).",
        errors: &[400, 403, 404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Ok;
    const CONDITIONAL: bool = true;
}

/// `POST /members/{id}/regenerate-token`.
#[derive(Debug)]
pub struct RegenerateToken;

impl Endpoint for RegenerateToken {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "regenerate_token",
        method: Method::Post,
        path: "/api/v1/members/{member_id}/regenerate-token",
        auth: true,
        status: 200,
        summary: "Issue a new agent token",
        description: "The agent itself or an admin; the old token fails with 401 at once. The new token is \
            shown in this answer only. 400 for a human.",
        errors: &[400, 403, 404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = TokenResponse;
}

/// `POST /members/{id}/revoke-token`.
#[derive(Debug)]
pub struct RevokeToken;

impl Endpoint for RevokeToken {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "revoke_token",
        method: Method::Post,
        path: "/api/v1/members/{member_id}/revoke-token",
        auth: true,
        status: 200,
        summary: "Revoke an agent token",
        description: "The agent itself or an admin; the token fails with 401 at once and the agent has no \
            token until one is regenerated. 400 for a human.",
        errors: &[400, 403, 404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Ok;
}

/// `PUT /members/{id}/password`.
#[derive(Debug)]
pub struct SetPassword;

impl Endpoint for SetPassword {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "set_password",
        method: Method::Put,
        path: "/api/v1/members/{member_id}/password",
        auth: true,
        status: 200,
        summary: "Set a human member's password",
        description: "The member itself, or an owner; an admin only for a human whose role is `member`, so \
            nobody takes over an account that ranks at or above their own (403). Every JWT issued to \
            the member before the change stops working. 400 for an agent; 429 while too many password \
            hashes are already queued.",
        errors: &[400, 403, 404, 429],
    };
    type Path = Uuid;
    type Query = ();
    type Body = NewPassword;
    type Response = Ok;
}
