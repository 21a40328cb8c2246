//! A member's access tokens and the end of its logins.

use super::endpoint::Handle;
use super::endpoint::{Call, Caller};
use crate::board::Board;
use crate::error::Result;
use crate::model::Ok;
use crate::tokens::{AccessToken, CreatedAccessToken};
use crate::wire::api::{CreateAccessToken, ListAccessTokens, LogoutEverywhere, RevokeAccessToken};

impl Handle for CreateAccessToken {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<CreatedAccessToken> {
        board.create_access_token(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for ListAccessTokens {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Vec<AccessToken>> {
        board.list_access_tokens(caller.actor()?, call.path).await
    }
}

impl Handle for RevokeAccessToken {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.revoke_access_token(caller.actor()?, call.path.0, call.path.1).await?;
        Ok(Ok::OK)
    }
}

impl Handle for LogoutEverywhere {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.logout_everywhere(caller.actor()?, call.path).await?;
        Ok(Ok::OK)
    }
}
