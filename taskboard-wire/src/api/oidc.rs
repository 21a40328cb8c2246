//! Single sign-on with OpenID Connect, and the ways to sign in.

use crate::Redirect;
use crate::endpoint::{Endpoint, Info, Method};
use crate::{AuthMethods, LoginResponse};
use crate::{CallbackQuery, LoginCodeRequest, SignInQuery};

/// `GET /auth/methods`.
#[derive(Debug)]
pub struct GetAuthMethods;

impl Endpoint for GetAuthMethods {
    const INFO: Info = Info {
        name: "auth_methods",
        method: Method::Get,
        path: "/api/v1/auth/methods",
        auth: false,
        status: 200,
        summary: "The ways to sign in",
        description: "Whether password login is open to every human (`all`) or to owners only (`owners`, \
            `--password-login`), and single sign-on when it is configured: the provider's name for a \
            button, its issuer and the path that starts a sign-in. Needs no credentials.",
        errors: &[],
    };
    type Path = ();
    type Query = ();
    type Body = ();
    type Response = AuthMethods;
}

/// `GET /auth/oidc/start`.
#[derive(Debug)]
pub struct StartSignIn;

impl Endpoint for StartSignIn {
    const INFO: Info = Info {
        name: "oidc_start",
        method: Method::Get,
        path: "/api/v1/auth/oidc/start",
        auth: false,
        status: 302,
        summary: "Start a single sign-on (302 to the provider)",
        description: "Answers 302 to the OpenID Connect provider's authorization endpoint (authorization \
            code flow with PKCE, a one-time `state` and a `nonce`), with the redirect URI under the \
            board's `--public-url` (never the request's `Host`), and sets the cookie `taskboard_sso` \
            (HttpOnly, SameSite=Lax, Secure when the public URL is https, sent to the callback path \
            only, for 10 minutes) that binds the sign-in to this browser. `return_to` is where the \
            sign-in comes back with `?login_code=`: a path of this server (`/`, the default) or a \
            loopback URL (`http://127.0.0.1:PORT/…`, for `taskboard login --sso`); anything else is \
            422, so the board redirects nowhere else. One client address may start 60 sign-ins within \
            15 minutes, and the board keeps at most 10,000 under way: 429 with `Retry-After` beyond. \
            404 when single sign-on is not configured, 503 when the provider cannot be reached. A \
            sign-in has 10 minutes at the provider.",
        errors: &[404, 429, 503],
    };
    type Path = ();
    type Query = SignInQuery;
    type Body = ();
    type Response = Redirect;
}

/// `GET /auth/oidc/callback`.
#[derive(Debug)]
pub struct SignInCallback;

impl Endpoint for SignInCallback {
    const INFO: Info = Info {
        name: "oidc_callback",
        method: Method::Get,
        path: "/api/v1/auth/oidc/callback",
        auth: false,
        status: 302,
        summary: "Where the provider returns (302 to return_to with a login code)",
        description: "The provider's redirect URI. Takes the `state` out of the board (400 when it is \
            unknown, expired or already used: a callback works once), refuses it with 400 when the \
            browser does not send back the `taskboard_sso` cookie its start set (a sign-in finishes \
            only in the browser that started it; the state is used up all the same), exchanges the \
            `code` and verifies \
            the ID token: its signature against the provider's published keys (fetched again when the \
            token names a key not yet known, so a rotation is followed), its issuer, audience, expiry \
            and nonce (401 naming what fails; 401 too when the provider answered with an `error`). \
            The account (issuer, subject) signs in as the member linked to it; at its first sign-in it \
            is linked to the active human with the same email, which the provider must say is verified \
            (403 otherwise), or a human member is created when the board allows it \
            (`--oidc-create-members`; 403 otherwise). With `--oidc-admin-group` the member is an admin \
            when the token's `groups` hold that group, a member when not (owners keep their role). \
            Answers 302 to the sign-in's `return_to` with `?login_code=`, a one-time code valid 60 \
            seconds for `POST /auth/oidc/exchange`, and clears the cookie.",
        errors: &[400, 401, 403, 404, 503],
    };
    type Path = ();
    type Query = CallbackQuery;
    type Body = ();
    type Response = Redirect;
    const COOKIE: Option<&'static str> = Some(crate::BROWSER_COOKIE);
}

/// `POST /auth/oidc/exchange`.
#[derive(Debug)]
pub struct ExchangeLoginCode;

impl Endpoint for ExchangeLoginCode {
    const INFO: Info = Info {
        name: "oidc_exchange",
        method: Method::Post,
        path: "/api/v1/auth/oidc/exchange",
        auth: false,
        status: 200,
        summary: "Exchange a login code for a login",
        description: "Answers what `POST /auth/login` answers (a JWT valid for the server's login \
            lifetime, the member's id, slug and role) for the `login_code` a single sign-on handed to \
            its `return_to`. A code works once and for 60 seconds; an unknown, used or expired one is \
            401.",
        errors: &[401],
    };
    type Path = ();
    type Query = ();
    type Body = LoginCodeRequest;
    type Response = LoginResponse;
}
