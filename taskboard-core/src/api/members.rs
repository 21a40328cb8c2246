//! Service status, login and members.

use super::endpoint::{Call, Caller};
use super::endpoint::{Handle, ListHandler};
use crate::board::{Board, List, Resource};
use crate::error::Result;
use crate::model::{CreatedMember, Health, Member, Ok, StatusResponse, TokenResponse};
use crate::wire::LoginResponse;
use crate::wire::MemberListQuery;
use crate::wire::api::{
    CreateMember, DeleteMember, GetHealth, GetMe, GetMember, GetReady, ListMembers, Login, RegenerateToken,
    RevokeToken, SetMyStatus, SetPassword, UpdateMember,
};

impl Handle for GetHealth {
    async fn handle(_: &Board, _: &Caller, _: Call<Self>) -> Result<Health> {
        Ok(Health { status: "ok".into(), version: env!("CARGO_PKG_VERSION").into() })
    }
}

impl Handle for GetReady {
    async fn handle(board: &Board, _: &Caller, _: Call<Self>) -> Result<Health> {
        board.ready().await
    }
}

impl Handle for Login {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<LoginResponse> {
        board.login(&call.body.login, &call.body.password, caller.address).await
    }
}

impl ListHandler for ListMembers {
    fn list(board: &Board, _: &Caller, _: Self::Path, query: Self::Query) -> Result<List<Member>> {
        let MemberListQuery { include_inactive, slug, page } = query;
        Ok(match slug {
            Some(slug) => board.members_by_slug(&slug, include_inactive, page),
            None => board.list_members(include_inactive, page),
        })
    }
}

impl Handle for CreateMember {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<CreatedMember> {
        board.create_member(caller.actor()?, call.body).await
    }
}

impl Handle for GetMe {
    async fn handle(board: &Board, caller: &Caller, _: Call<Self>) -> Result<Member> {
        board.me(caller.actor()?).await
    }
}

impl Handle for SetMyStatus {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<StatusResponse> {
        Ok(StatusResponse { status: board.set_status(caller.actor()?, call.query.status).await? })
    }
}

impl Handle for GetMember {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Member> {
        board.get_member(call.path).await
    }
}

impl Handle for UpdateMember {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Member(path))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Member> {
        board.update_member(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for DeleteMember {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Member(path))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.delete_member(caller.actor()?, call.path).await?;
        Ok(Ok::OK)
    }
}

impl Handle for RegenerateToken {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<TokenResponse> {
        Ok(TokenResponse { token: board.regenerate_token(caller.actor()?, call.path).await? })
    }
}

impl Handle for RevokeToken {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.revoke_token(caller.actor()?, call.path).await?;
        Ok(Ok::OK)
    }
}

impl Handle for SetPassword {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.set_password(caller.actor()?, call.path, call.body.password).await?;
        Ok(Ok::OK)
    }
}
