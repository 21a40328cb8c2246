//! Who may set whose credentials, password changes ending older tokens,
//! and login throttling (docs/decisions.md 3.e–3.h).

use std::net::IpAddr;
use std::time::Duration;

use taskboard_core::api::{MemberPatch, NewMember, Patch};
use taskboard_core::board::{Clock, LoginLimits};
use taskboard_core::model::*;
use taskboard_core::validate::Password;
use taskboard_core::{Actor, BoardOptions, Error, ErrorKind};

use crate::support::*;

fn password(p: &str) -> Password {
    Password::new(p).unwrap()
}

/// A human with a password, created by the owner.
async fn human_with_password(fx: &Fx, s: &str, role: Role, pw: &str) -> Actor {
    let m = fx.human(s, role).await;
    fx.board.set_password(&fx.owner, m.id(), password(pw)).await.unwrap();
    m
}

async fn agent_with_role(fx: &Fx, s: &str, role: Role) -> (Actor, String) {
    let new = NewMember { name: name(s), slug: slug(s), kind: MemberType::Agent, role, agent_config: None };
    let m = fx.board.create_member(&fx.owner, new).await.unwrap();
    (fx.board.actor(m.id).await.unwrap(), m.token.unwrap())
}

#[track_caller]
fn forbidden_naming<T: std::fmt::Debug>(result: taskboard_core::Result<T>, part: &str) {
    let e: Error = result.expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::Forbidden, "{e}");
    assert!(e.detail().contains(part), "{:?} does not name {part:?}", e.detail());
}

// ---- who sets whose password (3.2) -------------------------------------------

#[tokio::test]
async fn an_admin_sets_passwords_of_members_only_and_an_owner_of_anyone() {
    let fx = board().await;
    let admin = fx.human("admin", Role::Admin).await;
    let other_admin = fx.human("admin2", Role::Admin).await;
    let owner2 = fx.human("owner2", Role::Owner).await;
    let plain = fx.human("plain", Role::Member).await;

    // The takeover: an admin resetting an owner's password, then logging
    // in as the owner.
    forbidden_naming(fx.board.set_password(&admin, fx.owner.id(), password("taken-over")).await, "owner");
    assert_eq!(
        kind(fx.board.login("owner", "taken-over", None).await),
        ErrorKind::Unauthorized,
        "the owner's password is unchanged"
    );
    fx.board.login("owner", OWNER_PASSWORD, None).await.unwrap();
    forbidden_naming(fx.board.set_password(&admin, other_admin.id(), password("taken-over")).await, "admin2");

    fx.board.set_password(&admin, plain.id(), password("reset-by-admin")).await.unwrap();
    fx.board.login("plain", "reset-by-admin", None).await.unwrap();
    fx.board.set_password(&admin, admin.id(), password("my-own-password")).await.unwrap();
    forbidden_naming(
        fx.board.set_password(&plain, admin.id(), password("taken-over")).await,
        "admin or owner",
    );

    // Owners may reset anyone's, another owner's included.
    fx.board.set_password(&fx.owner, owner2.id(), password("owner2-password")).await.unwrap();
    fx.board.set_password(&fx.owner, admin.id(), password("admin-password")).await.unwrap();
    fx.board.login("admin", "admin-password", None).await.unwrap();

    let (bot, _) = agent_with_role(&fx, "bot", Role::Member).await;
    let e = fx.board.set_password(&fx.owner, bot.id(), password("agent-password")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadRequest);
    assert!(e.detail().contains("agent"), "{e}");
}

#[tokio::test]
async fn an_admin_changes_no_account_that_ranks_at_or_above_its_own() {
    let fx = board().await;
    let admin = fx.human("admin", Role::Admin).await;
    let other_admin = fx.human("admin2", Role::Admin).await;
    let plain = fx.human("plain", Role::Member).await;

    // Demoting an admin first, to reset its password next, is refused.
    let demote = MemberPatch { role: Patch::Value(Role::Member), ..Default::default() };
    forbidden_naming(fx.board.update_member(&admin, other_admin.id(), demote.clone()).await, "admin2");
    let rename = MemberPatch { name: Patch::Value(name("Mallory")), ..Default::default() };
    forbidden_naming(fx.board.update_member(&admin, fx.owner.id(), rename.clone()).await, "owner");
    let reslug = MemberPatch { slug: Patch::Value(slug("nobody")), ..Default::default() };
    forbidden_naming(fx.board.update_member(&admin, fx.owner.id(), reslug).await, "owner");

    // Members below it, itself, and everything for an owner.
    fx.board.update_member(&admin, plain.id(), rename.clone()).await.unwrap();
    let promote = MemberPatch { role: Patch::Value(Role::Admin), ..Default::default() };
    fx.board.update_member(&admin, plain.id(), promote).await.unwrap();
    forbidden_naming(fx.board.update_member(&admin, plain.id(), rename.clone()).await, "plain");
    fx.board.update_member(&admin, admin.id(), rename.clone()).await.unwrap();
    assert_eq!(fx.board.update_member(&fx.owner, other_admin.id(), demote).await.unwrap().role, Role::Member);
}

#[tokio::test]
async fn an_admin_regenerates_or_revokes_tokens_of_member_agents_only() {
    let fx = board().await;
    let admin = fx.human("admin", Role::Admin).await;
    let (owner_bot, owner_token) = agent_with_role(&fx, "owner-bot", Role::Owner).await;
    let (admin_bot, admin_token) = agent_with_role(&fx, "admin-bot", Role::Admin).await;
    let (member_bot, _) = agent_with_role(&fx, "member-bot", Role::Member).await;

    for bot in [&owner_bot, &admin_bot] {
        forbidden_naming(fx.board.regenerate_token(&admin, bot.id()).await, bot.member.slug.as_str());
        forbidden_naming(fx.board.revoke_token(&admin, bot.id()).await, bot.member.slug.as_str());
    }
    // Their tokens still work.
    fx.board.authenticate(&owner_token).await.unwrap();
    fx.board.authenticate(&admin_token).await.unwrap();
    // An admin agent renews its own token; an owner any agent's.
    let renewed = fx.board.regenerate_token(&admin_bot, admin_bot.id()).await.unwrap();
    fx.board.authenticate(&renewed).await.unwrap();
    fx.board.regenerate_token(&admin, member_bot.id()).await.unwrap();
    fx.board.revoke_token(&admin, member_bot.id()).await.unwrap();
    fx.board.revoke_token(&fx.owner, owner_bot.id()).await.unwrap();
    assert_eq!(kind(fx.board.authenticate(&owner_token).await), ErrorKind::Unauthorized);
}

// ---- a password change ends older tokens (3.2) ----------------------------------

#[tokio::test]
async fn a_password_change_ends_every_older_jwt_and_a_new_login_works_at_once() {
    let fx = board_on_disk().await;
    let ana = human_with_password(&fx, "ana", Role::Member, "ana-password").await;
    let first = fx.board.login("ana", "ana-password", None).await.unwrap().token;
    let second = fx.board.login("ana", "ana-password", None).await.unwrap().token;
    let owners = fx.board.login("owner", OWNER_PASSWORD, None).await.unwrap().token;
    // Resolved once, so the change must reach the cache too.
    assert_eq!(fx.board.authenticate(&first).await.unwrap().id(), ana.id());

    fx.board.set_password(&ana, ana.id(), password("new-password")).await.unwrap();
    // Tokens issued in the same second as the change, before it, end
    // too: they carry the credential version, not only their time.
    for old in [&first, &second] {
        let e = fx.board.authenticate(old).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unauthorized);
        assert!(e.detail().contains("password changed"), "{e}");
    }
    let fresh = fx.board.login("ana", "new-password", None).await.unwrap().token;
    assert_eq!(fx.board.authenticate(&fresh).await.unwrap().id(), ana.id());
    assert_eq!(kind(fx.board.login("ana", "ana-password", None).await), ErrorKind::Unauthorized);
    // Other members' tokens are untouched.
    fx.board.authenticate(&owners).await.unwrap();

    // An owner's reset ends them as well, and it all survives a restart.
    fx.board.set_password(&fx.owner, ana.id(), password("third-password")).await.unwrap();
    assert_eq!(kind(fx.board.authenticate(&fresh).await), ErrorKind::Unauthorized);
    let third = fx.board.login("ana", "third-password", None).await.unwrap().token;
    let fx = fx.reopen().await;
    assert_eq!(kind(fx.board.authenticate(&fresh).await), ErrorKind::Unauthorized);
    assert_eq!(fx.board.authenticate(&third).await.unwrap().id(), ana.id());
    fx.board.authenticate(&owners).await.unwrap();
}

#[tokio::test]
async fn a_password_change_ends_the_members_sessions() {
    let fx = board().await;
    let ana = human_with_password(&fx, "ana", Role::Member, "ana-password").await;
    let mut sub = fx.board.subscribe(None);
    drain(&mut sub);
    fx.board.set_password(&fx.owner, ana.id(), password("new-password")).await.unwrap();
    let events = drain(&mut sub);
    assert_eq!(kinds(&events), ["member.token_revoked"]);
    assert!(events[0].ends_session_of(ana.id()));
    assert!(!events[0].ends_session_of(fx.owner.id()));
    assert!(!events[0].visible_to(&fx.board.viewer(&fx.owner)), "only the member hears of it");
}

// ---- login throttling (3.9) ------------------------------------------------------

fn at(a: &str) -> Option<IpAddr> {
    Some(a.parse().unwrap())
}

async fn throttled(clock: &Clock) -> Fx {
    board_with(BoardOptions { clock: clock.clone(), ..Default::default() }).await
}

#[track_caller]
fn too_many<T: std::fmt::Debug>(result: taskboard_core::Result<T>) -> u64 {
    let e = result.expect_err("throttled");
    assert_eq!(e.kind(), ErrorKind::TooManyRequests, "{e}");
    e.retry_after().expect("a time to wait")
}

#[tokio::test]
async fn the_eleventh_failure_for_a_login_is_refused_until_the_window_has_passed() {
    let clock = Clock::manual();
    let fx = throttled(&clock).await;
    human_with_password(&fx, "ana", Role::Member, "ana-password").await;
    let window = LoginLimits::default().window;
    assert_eq!(window, Duration::from_secs(15 * 60));
    for i in 0..10 {
        clock.advance(Duration::from_secs(10));
        let wrong = fx.board.login("ana", &format!("wrong-{i}"), at("10.0.0.1")).await;
        assert_eq!(kind(wrong), ErrorKind::Unauthorized, "failure {}", i + 1);
    }
    // Refused whatever the password and wherever from, by slug or name.
    let left = too_many(fx.board.login("ana", "ana-password", at("10.0.0.2")).await);
    assert_eq!(left, 15 * 60 - 90, "the window started with the first failure");
    too_many(fx.board.login("Ana Name", "ana-password", None).await);
    // Others log in from the same address.
    fx.board.login("owner", OWNER_PASSWORD, at("10.0.0.1")).await.unwrap();

    clock.advance(Duration::from_secs(left - 1));
    assert_eq!(too_many(fx.board.login("ana", "ana-password", None).await), 1);
    clock.advance(Duration::from_secs(1));
    fx.board.login("ana", "ana-password", at("10.0.0.1")).await.unwrap();
}

#[tokio::test]
async fn a_success_resets_the_logins_count() {
    let clock = Clock::manual();
    let fx = throttled(&clock).await;
    human_with_password(&fx, "ana", Role::Member, "ana-password").await;
    for _ in 0..9 {
        assert_eq!(kind(fx.board.login("ana", "wrong", None).await), ErrorKind::Unauthorized);
    }
    fx.board.login("ana", "ana-password", None).await.unwrap();
    for _ in 0..10 {
        assert_eq!(kind(fx.board.login("ana", "wrong", None).await), ErrorKind::Unauthorized);
    }
    too_many(fx.board.login("ana", "ana-password", None).await);
}

#[tokio::test]
async fn unknown_logins_are_throttled_like_known_ones() {
    let fx = throttled(&Clock::manual()).await;
    for _ in 0..10 {
        assert_eq!(kind(fx.board.login("nobody", "whatever-pw", None).await), ErrorKind::Unauthorized);
    }
    too_many(fx.board.login("NOBODY", "whatever-pw", None).await);
    assert_eq!(kind(fx.board.login("somebody", "whatever-pw", None).await), ErrorKind::Unauthorized);
}

#[tokio::test]
async fn the_hundred_and_first_failure_from_one_address_is_refused() {
    let clock = Clock::manual();
    let fx = throttled(&clock).await;
    for i in 0..100 {
        // Ten logins, ten failures each: no login reaches its own limit.
        let r = fx.board.login(&format!("guess-{}", i % 10), "wrong-password", at("192.0.2.7")).await;
        assert_eq!(kind(r), ErrorKind::Unauthorized, "failure {}", i + 1);
    }
    let left = too_many(fx.board.login("owner", OWNER_PASSWORD, at("192.0.2.7")).await);
    assert_eq!(left, 15 * 60);
    // Another address, or an embedder giving none, is not held back.
    fx.board.login("owner", OWNER_PASSWORD, at("192.0.2.8")).await.unwrap();
    fx.board.login("owner", OWNER_PASSWORD, None).await.unwrap();
    clock.advance(Duration::from_secs(15 * 60));
    fx.board.login("owner", OWNER_PASSWORD, at("192.0.2.7")).await.unwrap();
}

#[tokio::test]
async fn the_limits_and_the_window_are_options() {
    let clock = Clock::manual();
    let limits = LoginLimits { per_login: 2, per_address: 3, window: Duration::from_millis(500) };
    let fx =
        board_with(BoardOptions { clock: clock.clone(), login_limits: limits, ..Default::default() }).await;
    for _ in 0..2 {
        assert_eq!(kind(fx.board.login("owner", "wrong-pw", None).await), ErrorKind::Unauthorized);
    }
    assert_eq!(too_many(fx.board.login("owner", OWNER_PASSWORD, None).await), 1, "rounded up to a second");
    clock.advance(Duration::from_millis(500));
    fx.board.login("owner", OWNER_PASSWORD, None).await.unwrap();
}
