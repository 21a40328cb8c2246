//! Single sign-on with OpenID Connect, and the ways to sign in.

use super::endpoint::Handle;
use super::endpoint::{Call, Caller, Endpoint, Redirect};
use crate::board::Board;
use crate::error::Result;
use crate::wire::api::{ExchangeLoginCode, GetAuthMethods, SignInCallback, StartSignIn};
use crate::wire::{AuthMethods, LoginResponse};

impl Handle for GetAuthMethods {
    async fn handle(board: &Board, _: &Caller, _: Call<Self>) -> Result<AuthMethods> {
        Ok(board.auth_methods(StartSignIn::INFO.path))
    }
}

impl Handle for StartSignIn {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Redirect> {
        board.oidc_start(&call.query.return_to, caller.address).await
    }
}

impl Handle for SignInCallback {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Redirect> {
        board.oidc_callback(call.query, caller.cookie.as_deref()).await
    }
}

impl Handle for ExchangeLoginCode {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<LoginResponse> {
        board.oidc_exchange(&call.body.login_code).await
    }
}
