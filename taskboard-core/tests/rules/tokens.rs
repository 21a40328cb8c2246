//! Access tokens: who makes whose, their scopes and projects checked
//! against every endpoint's declaration, expiry, revocation, and logging
//! out everywhere (docs/rules.md, access tokens and sessions).

use std::time::Duration;

use taskboard_core::api::{
    self, Caller, GetMember, GetTask, ListMembers, ListTasks, MemberListQuery, TaskFilter,
};
use taskboard_core::api::{Patch, TaskPatch, UpdateTask};
use taskboard_core::board::Clock;
use taskboard_core::model::*;
use taskboard_core::tokens::NewAccessToken;
use taskboard_core::validate::Password;
use taskboard_core::{BoardOptions, ErrorKind};
use uuid::Uuid;

use crate::support::*;

fn new(name: &str, scopes: &[Scope]) -> NewAccessToken {
    NewAccessToken { name: name.into(), scopes: scopes.to_vec(), project_ids: None, expires_at: None }
}

#[track_caller]
fn refused<T: std::fmt::Debug>(result: taskboard_core::Result<T>, kind: ErrorKind, part: &str) {
    let e = result.expect_err("refused");
    assert_eq!(e.kind(), kind, "{e}");
    assert!(e.detail().contains(part), "{:?} does not name {part:?}", e.detail());
}

/// The actor a token resolves to, as a server would resolve it.
async fn through(fx: &Fx, token: &str) -> Caller {
    Caller::member(fx.board.authenticate(token).await.unwrap())
}

#[tokio::test]
async fn a_member_makes_its_own_tokens_and_ranks_decide_for_others() {
    let fx = board().await;
    let alice = fx.human("alice", Role::Member).await;
    let bob = fx.human("bob", Role::Member).await;
    let admin = fx.human("ada", Role::Admin).await;
    let other_admin = fx.human("grace", Role::Admin).await;
    fx.board.create_access_token(&alice, alice.id(), new("mine", &[Scope::Read])).await.unwrap();
    refused(
        fx.board.create_access_token(&alice, bob.id(), new("x", &[Scope::Read])).await,
        ErrorKind::Forbidden,
        "",
    );
    refused(fx.board.list_access_tokens(&alice, bob.id()).await, ErrorKind::Forbidden, "");
    fx.board.create_access_token(&admin, bob.id(), new("for bob", &[Scope::Read])).await.unwrap();
    refused(
        fx.board.create_access_token(&admin, other_admin.id(), new("x", &[Scope::Read])).await,
        ErrorKind::Forbidden,
        "owner",
    );
    fx.board.create_access_token(&fx.owner, other_admin.id(), new("by owner", &[Scope::Read])).await.unwrap();
    let listed = fx.board.list_access_tokens(&admin, bob.id()).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "for bob");
    // An agent's own token keeps every scope: it makes tokens for itself.
    let (_, agent_token) = fx.agent_with("bot", AgentConfig::default()).await;
    let bot = fx.board.authenticate(&agent_token).await.unwrap();
    assert!(bot.grant().is_none(), "an agent's own token is not restricted");
    fx.board.create_access_token(&bot, bot.id(), new("ci", &[Scope::Admin, Scope::RunsWrite])).await.unwrap();
}

#[tokio::test]
async fn a_token_is_held_to_its_scopes_and_projects_on_every_path() {
    let fx = board().await;
    let web = fx.project("web").await;
    let ops = fx.project("ops").await;
    let mine = fx.task(&web, "mine").await;
    let theirs = fx.task(&ops, "theirs").await;
    let read =
        fx.board.create_access_token(&fx.owner, fx.owner.id(), new("read", &[Scope::Read])).await.unwrap();
    let caller = through(&fx, &read.token).await;
    api::call::<GetTask>(&fx.board, &caller, mine.id, (), ()).await.unwrap();
    let patch = || TaskPatch { title: Patch::Value(title("changed")), ..Default::default() };
    refused(
        api::call::<UpdateTask>(&fx.board, &caller, mine.id, (), patch()).await,
        ErrorKind::Forbidden,
        "tasks:write",
    );
    assert_eq!(fx.get(mine.id).await.title, "mine", "nothing changed");

    let restricted =
        NewAccessToken { project_ids: Some(vec![web.id]), ..new("web", &[Scope::Read, Scope::TasksWrite]) };
    let web_token = fx.board.create_access_token(&fx.owner, fx.owner.id(), restricted).await.unwrap();
    let caller = through(&fx, &web_token.token).await;
    api::call::<UpdateTask>(&fx.board, &caller, mine.id, (), patch()).await.unwrap();
    refused(api::call::<GetTask>(&fx.board, &caller, theirs.id, (), ()).await, ErrorKind::Forbidden, "ops");
    let in_ops = TaskFilter { project_id: Some(ops.id), ..Default::default() };
    refused(api::call::<ListTasks>(&fx.board, &caller, (), in_ops, ()).await, ErrorKind::Forbidden, "ops");
    refused(
        api::call::<ListTasks>(&fx.board, &caller, (), TaskFilter::default(), ()).await,
        ErrorKind::Forbidden,
        "names none",
    );
    let in_web = TaskFilter { project_id: Some(web.id), ..Default::default() };
    assert_eq!(api::call::<ListTasks>(&fx.board, &caller, (), in_web, ()).await.unwrap().len(), 1);
    // What is about the board, not a project, stays open.
    let everyone = MemberListQuery { include_inactive: false, ..Default::default() };
    api::call::<ListMembers>(&fx.board, &caller, (), everyone, ()).await.unwrap();
    api::call::<GetMember>(&fx.board, &caller, fx.owner.id(), (), ()).await.unwrap();
    // A token made with this one stays within it.
    let actor = caller.actor.clone().unwrap();
    let wider = new("wider", &[Scope::Read]);
    refused(fx.board.create_access_token(&actor, actor.id(), wider).await, ErrorKind::Forbidden, "project");
}

#[tokio::test]
async fn tokens_expire_are_revoked_at_once_and_are_bounded() {
    let clock = Clock::manual();
    let fx = board_with(BoardOptions { clock: clock.clone(), ..BoardOptions::default() }).await;
    let past = NewAccessToken { expires_at: Some(clock.timestamp()), ..new("late", &[Scope::Read]) };
    refused(
        fx.board.create_access_token(&fx.owner, fx.owner.id(), past).await,
        ErrorKind::Validation,
        "expires_at",
    );
    let soon = clock.timestamp() + jiff::SignedDuration::from_secs(60);
    let short = NewAccessToken { expires_at: Some(soon), ..new("short", &[Scope::Read]) };
    let short = fx.board.create_access_token(&fx.owner, fx.owner.id(), short).await.unwrap();
    fx.board.authenticate(&short.token).await.unwrap();
    clock.advance(Duration::from_secs(61));
    refused(fx.board.authenticate(&short.token).await, ErrorKind::Unauthorized, "expired");

    let kept =
        fx.board.create_access_token(&fx.owner, fx.owner.id(), new("kept", &[Scope::Read])).await.unwrap();
    fx.board.authenticate(&kept.token).await.unwrap();
    fx.board.revoke_access_token(&fx.owner, fx.owner.id(), kept.access_token.id).await.unwrap();
    refused(fx.board.authenticate(&kept.token).await, ErrorKind::Unauthorized, "access token");
    refused(
        fx.board.revoke_access_token(&fx.owner, fx.owner.id(), Uuid::now_v7()).await,
        ErrorKind::NotFound,
        "access token",
    );

    let holder = fx.human("many", Role::Member).await;
    for n in 0..100 {
        fx.board
            .create_access_token(&holder, holder.id(), new(&format!("t{n}"), &[Scope::Read]))
            .await
            .unwrap();
    }
    refused(
        fx.board.create_access_token(&holder, holder.id(), new("one more", &[Scope::Read])).await,
        ErrorKind::Conflict,
        "100",
    );
}

#[tokio::test]
async fn logging_out_everywhere_ends_logins_and_keeps_access_tokens() {
    let fx = board().await;
    let alice = fx.human("alice", Role::Member).await;
    let admin = fx.human("ada", Role::Admin).await;
    fx.board.set_password(&fx.owner, alice.id(), Password::new("alice-password").unwrap()).await.unwrap();
    let jwt = fx.board.login("alice", "alice-password", None).await.unwrap().token;
    let token =
        fx.board.create_access_token(&alice, alice.id(), new("script", &[Scope::Read])).await.unwrap();
    let mut sub = fx.board.subscribe(Some(fx.board.latest_seq()));
    refused(fx.board.logout_everywhere(&admin, alice.id()).await, ErrorKind::Forbidden, "owner");
    fx.board.logout_everywhere(&alice, alice.id()).await.unwrap();
    refused(fx.board.authenticate(&jwt).await, ErrorKind::Unauthorized, "");
    fx.board.authenticate(&token.token).await.unwrap();
    let again = fx.board.login("alice", "alice-password", None).await.unwrap().token;
    fx.board.logout_everywhere(&fx.owner, alice.id()).await.unwrap();
    refused(fx.board.authenticate(&again).await, ErrorKind::Unauthorized, "");
    let events = drain(&mut sub);
    assert_eq!(kinds(&events), ["member.logged_out", "member.logged_out"]);
    let bot = fx.agent("bot").await;
    refused(fx.board.logout_everywhere(&bot, bot.id()).await, ErrorKind::BadRequest, "agent");
}

#[tokio::test]
async fn the_audit_log_records_tokens_without_their_secret() {
    let fx = board().await;
    let mut sub = fx.board.subscribe(Some(fx.board.latest_seq()));
    let made =
        fx.board.create_access_token(&fx.owner, fx.owner.id(), new("ci", &[Scope::Read])).await.unwrap();
    fx.board.revoke_access_token(&fx.owner, fx.owner.id(), made.access_token.id).await.unwrap();
    let events = drain(&mut sub);
    assert_eq!(kinds(&events), ["token.created", "token.revoked"]);
    for e in &events {
        assert!(!e.frame().contains(&made.token), "{}", e.frame());
        assert_eq!(e.data()["member_id"], fx.owner.id().to_string());
    }
    assert_eq!(events[0].data()["token"]["name"], "ci");
}
