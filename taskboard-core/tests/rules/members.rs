//! Members, roles and authentication (REST-INTERFACE Members, Auth and
//! Authentication; DECISIONS 3; docs/decisions.md 3.a–3.d).

use base64::Engine;
use taskboard_core::api::{MemberPatch, NewMember, NewMessage, Page, Patch};
use taskboard_core::credentials::AGENT_TOKEN_PREFIX;
use taskboard_core::model::*;
use taskboard_core::storage::redb::RedbStore;
use taskboard_core::storage::tables;
use taskboard_core::storage::{Direction, KeyRange, Scan, Storage};
use taskboard_core::validate::{LongText, Password};
use taskboard_core::{Board, BoardOptions, ErrorKind, Perform};

use crate::support::*;

fn password(p: &str) -> Password {
    Password::new(p).unwrap()
}

fn new_member(s: &str, kind: MemberType, role: Role) -> NewMember {
    NewMember { name: name(s), slug: slug(s), kind, role, agent_config: None }
}

// ---- bootstrap (3.1) -------------------------------------------------------

#[tokio::test]
async fn bootstrap_creates_one_owner_on_an_empty_board_with_a_generated_password() {
    let board = Board::open_in_memory(BoardOptions::default()).await.unwrap();
    assert!(board.is_empty().await.unwrap());
    let boot = board.bootstrap_owner(slug("boss"), None).await.unwrap().unwrap();
    assert_eq!(boot.owner.slug, "boss");
    assert_eq!(boot.owner.role, Role::Owner);
    assert_eq!(boot.owner.kind, MemberType::Human);
    let generated = boot.generated_password.expect("generated when none is given");
    assert!(generated.len() >= 16);
    board.login("boss", &generated, None).await.unwrap();
    assert!(!board.is_empty().await.unwrap());
    // A board that has members is not bootstrapped again.
    assert!(board.bootstrap_owner(slug("other"), None).await.unwrap().is_none());
    let _owner = board.actor(boot.owner.id).await.unwrap();
    let all = board.list_members(true, Page::default()).await.unwrap();
    assert_eq!(all.len(), 1);
}

#[tokio::test]
async fn bootstrap_uses_the_given_password_and_prints_none() {
    let board = Board::open_in_memory(BoardOptions::default()).await.unwrap();
    let boot = board.bootstrap_owner(slug("owner"), Some(password("s3cret-pass"))).await.unwrap().unwrap();
    assert!(boot.generated_password.is_none());
    assert_eq!(board.login("owner", "s3cret-pass", None).await.unwrap().member_id, boot.owner.id);
}

// ---- login and credentials (Auth; 3.4–3.6) ---------------------------------

#[tokio::test]
async fn login_by_slug_or_name() {
    let fx = board().await;
    let by_slug = fx.board.login("owner", OWNER_PASSWORD, None).await.unwrap();
    assert_eq!(by_slug.member_id, fx.owner.id());
    assert_eq!(by_slug.slug, "owner");
    assert_eq!(by_slug.role, Role::Owner);
    let ana = fx.human("ana", Role::Member).await;
    fx.board.set_password(&fx.owner, ana.id(), password("ana-password")).await.unwrap();
    // The name is "ana name"; any case works.
    let by_name = fx.board.login("Ana Name", "ana-password", None).await.unwrap();
    assert_eq!(by_name.member_id, ana.id());
    assert_eq!(by_name.role, Role::Member);
    let actor = fx.board.authenticate(&by_name.token).await.unwrap();
    assert_eq!(actor.id(), ana.id());
}

#[tokio::test]
async fn login_by_name_needs_exactly_one_active_human_with_that_name() {
    let fx = board().await;
    for s in ["twin-a", "twin-b"] {
        let m = fx
            .board
            .create_member(
                &fx.owner,
                NewMember { name: name("Twin"), ..new_member(s, MemberType::Human, Role::Member) },
            )
            .await
            .unwrap();
        fx.board.set_password(&fx.owner, m.id, password("twin-password")).await.unwrap();
    }
    assert_eq!(kind(fx.board.login("twin", "twin-password", None).await), ErrorKind::Unauthorized);
    fx.board.login("twin-a", "twin-password", None).await.unwrap();
    // Once one of them is gone the name is unambiguous again.
    let b = fx.performer().find_member("twin-b").await.unwrap();
    fx.board.delete_member(&fx.owner, b.id).await.unwrap();
    let a = fx.board.login("TWIN", "twin-password", None).await.unwrap();
    assert_eq!(a.slug, "twin-a");
}

#[tokio::test]
async fn wrong_login_or_password_is_unauthorized() {
    let fx = board().await;
    assert_eq!(kind(fx.board.login("owner", "not the password", None).await), ErrorKind::Unauthorized);
    assert_eq!(kind(fx.board.login("nobody", OWNER_PASSWORD, None).await), ErrorKind::Unauthorized);
    assert_eq!(kind(fx.board.authenticate("garbage").await), ErrorKind::Unauthorized);
    assert_eq!(kind(fx.board.authenticate("tbk-unknown-token").await), ErrorKind::Unauthorized);
}

#[tokio::test]
async fn agents_have_no_password_and_cannot_log_in() {
    let fx = board().await;
    let bot = fx.agent("bot").await;
    assert_eq!(kind(fx.board.login("bot", "", None).await), ErrorKind::Unauthorized);
    assert_eq!(
        kind(fx.board.set_password(&fx.owner, bot.id(), password("agent-password")).await),
        ErrorKind::BadRequest
    );
}

#[tokio::test]
async fn agent_tokens_are_tbk_and_at_least_40_url_safe_characters() {
    let fx = board().await;
    let (bot, token) = fx.agent_with("bot", AgentConfig::default()).await;
    let rest = token.strip_prefix("tbk-").expect("the tbk- prefix");
    assert_eq!(AGENT_TOKEN_PREFIX, "tbk-");
    assert!(rest.len() >= 40, "{rest}");
    assert!(rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    assert_eq!(fx.board.authenticate(&token).await.unwrap().id(), bot.id());
    let again = fx.board.regenerate_token(&fx.owner, bot.id()).await.unwrap();
    assert_ne!(again, token);
    assert!(again.starts_with("tbk-"));
}

/// Only a hash of the token is stored: no table of the database holds the
/// token itself.
#[tokio::test]
async fn only_a_hash_of_an_agent_token_is_stored() {
    let fx = board_on_disk().await;
    let created =
        fx.board.create_member(&fx.owner, new_member("bot", MemberType::Agent, Role::Member)).await.unwrap();
    let token = created.token.unwrap();
    let path = fx.path().join("board.redb");
    let Fx { board, dir, .. } = fx;
    drop(board);
    let store = RedbStore::open(&path).unwrap();
    let r = store.read().unwrap();
    let needle = token.as_bytes();
    let secret_part = &needle[4..];
    let mut hashes = 0;
    for &table in tables::ALL {
        r.scan(table, KeyRange::all(), Direction::Forward, &mut |k, v| {
            for bytes in [k, v] {
                assert!(
                    !bytes.windows(secret_part.len()).any(|w| w == secret_part),
                    "table {} holds the token",
                    table.name
                );
            }
            Ok(Scan::Continue)
        })
        .unwrap();
    }
    r.scan(tables::TOKEN_MEMBER, KeyRange::all(), Direction::Forward, &mut |_, _| {
        hashes += 1;
        Ok(Scan::Continue)
    })
    .unwrap();
    assert_eq!(hashes, 1, "the token's hash is indexed");
    drop(dir);
}

#[tokio::test]
async fn revoke_token_makes_the_old_token_fail_at_once() {
    let fx = board().await;
    let (bot, token) = fx.agent_with("bot", AgentConfig::default()).await;
    // Authenticate first so any cache of credentials is warm.
    fx.board.authenticate(&token).await.unwrap();
    fx.board.revoke_token(&fx.owner, bot.id()).await.unwrap();
    assert_eq!(kind(fx.board.authenticate(&token).await), ErrorKind::Unauthorized);
}

#[tokio::test]
async fn regenerate_token_makes_the_old_token_fail_at_once() {
    let fx = board().await;
    let (bot, token) = fx.agent_with("bot", AgentConfig::default()).await;
    fx.board.authenticate(&token).await.unwrap();
    let fresh = fx.board.regenerate_token(&fx.owner, bot.id()).await.unwrap();
    assert_eq!(kind(fx.board.authenticate(&token).await), ErrorKind::Unauthorized);
    assert_eq!(fx.board.authenticate(&fresh).await.unwrap().id(), bot.id());
}

#[tokio::test]
async fn token_operations_on_a_non_agent_are_bad_request() {
    let fx = board().await;
    let ana = fx.human("ana", Role::Member).await;
    assert_eq!(kind(fx.board.regenerate_token(&fx.owner, ana.id()).await), ErrorKind::BadRequest);
    assert_eq!(kind(fx.board.revoke_token(&fx.owner, ana.id()).await), ErrorKind::BadRequest);
}

#[tokio::test]
async fn a_deleted_member_gets_401_everywhere_and_cannot_log_in() {
    let fx = board().await;
    let ana = fx.human("ana", Role::Member).await;
    fx.board.set_password(&fx.owner, ana.id(), password("ana-password")).await.unwrap();
    let jwt = fx.board.login("ana", "ana-password", None).await.unwrap().token;
    let (bot, token) = fx.agent_with("bot", AgentConfig::default()).await;
    fx.board.authenticate(&jwt).await.unwrap();
    fx.board.authenticate(&token).await.unwrap();

    fx.board.delete_member(&fx.owner, ana.id()).await.unwrap();
    fx.board.delete_member(&fx.owner, bot.id()).await.unwrap();
    assert_eq!(kind(fx.board.authenticate(&jwt).await), ErrorKind::Unauthorized);
    assert_eq!(kind(fx.board.authenticate(&token).await), ErrorKind::Unauthorized);
    assert_eq!(kind(fx.board.login("ana", "ana-password", None).await), ErrorKind::Unauthorized);
    assert_eq!(kind(fx.board.actor(ana.id()).await), ErrorKind::NotFound);
    // An actor resolved before the deletion cannot act either.
    let p = fx.project("web").await;
    assert_eq!(
        kind(fx.board.update_member(&ana, ana.id(), MemberPatch::default()).await),
        ErrorKind::Unauthorized
    );
    let _ = p;
}

#[tokio::test]
async fn a_new_member_takes_the_slug_of_a_deleted_one_which_is_renamed() {
    let fx = board().await;
    let ana = fx.human("ana", Role::Member).await;
    fx.board.delete_member(&fx.owner, ana.id()).await.unwrap();
    let m = fx.board.get_member(ana.id()).await.unwrap();
    assert!(!m.is_active);
    assert_eq!(m.slug, "ana", "a deleted member keeps its slug until it is taken");
    let again =
        fx.board.create_member(&fx.owner, new_member("ana", MemberType::Human, Role::Member)).await.unwrap();
    assert_ne!(again.id, ana.id());
    assert_eq!(fx.board.get_member(ana.id()).await.unwrap().slug, "ana~deleted-1");
    // Taken and deleted again: the next number.
    fx.board.delete_member(&fx.owner, again.id).await.unwrap();
    let third =
        fx.board.create_member(&fx.owner, new_member("ana", MemberType::Agent, Role::Member)).await.unwrap();
    assert_eq!(fx.board.get_member(again.id).await.unwrap().slug, "ana~deleted-2");
    let active = fx.board.list_members(false, Page::default()).await.unwrap();
    assert_eq!(active.iter().filter(|m| m.slug == "ana").map(|m| m.id).collect::<Vec<_>>(), [third.id]);
    // An active member's slug stays taken, by a creation or a rename.
    assert_eq!(
        kind(fx.board.create_member(&fx.owner, new_member("ana", MemberType::Human, Role::Member)).await),
        ErrorKind::Conflict
    );
    let bob = fx.human("bob", Role::Member).await;
    let reslug = MemberPatch { slug: Patch::Value(slug("ana")), ..Default::default() };
    assert_eq!(kind(fx.board.update_member(&fx.owner, bob.id(), reslug).await), ErrorKind::Conflict);
}

fn retype(kind: MemberType) -> MemberPatch {
    MemberPatch { kind: Patch::Value(kind), ..Default::default() }
}

#[tokio::test]
async fn a_members_type_is_corrected_while_it_has_done_nothing() {
    let fx = board().await;
    let (alice, token) = fx.agent_with("alice", AgentConfig::default()).await;
    let human = fx.board.update_member(&fx.owner, alice.id(), retype(MemberType::Human)).await.unwrap();
    assert_eq!(human.kind, MemberType::Human);
    assert_eq!(human.id, alice.id());
    // The agent's token went with the type; a password makes her a person.
    assert_eq!(kind(fx.board.authenticate(&token).await), ErrorKind::Unauthorized);
    fx.board.set_password(&fx.owner, alice.id(), password("alice-password")).await.unwrap();
    fx.board.login("alice", "alice-password", None).await.unwrap();
    // And back, while she still has done nothing: the password goes.
    let agent = fx.board.update_member(&fx.owner, alice.id(), retype(MemberType::Agent)).await.unwrap();
    assert_eq!(agent.kind, MemberType::Agent);
    assert_eq!(kind(fx.board.login("alice", "alice-password", None).await), ErrorKind::Unauthorized);
    // A bridge is not a type to change to; nor may a member change its own.
    assert_eq!(
        kind(fx.board.update_member(&fx.owner, alice.id(), retype(MemberType::Bridge)).await),
        ErrorKind::Validation
    );
    let bob = fx.human("bob", Role::Member).await;
    assert_eq!(
        kind(fx.board.update_member(&bob, bob.id(), retype(MemberType::Agent)).await),
        ErrorKind::Forbidden
    );
}

#[tokio::test]
async fn a_members_type_stays_once_it_has_done_something() {
    let fx = board().await;
    let p = fx.project("web").await;
    // Assigned a task.
    let bot = fx.agent("bot").await;
    fx.join(p.id, &bot).await;
    let t = fx.task(&p, "first").await;
    fx.board.assign(&fx.owner, t.id, bot.id()).await.unwrap();
    let refused = fx.board.update_member(&fx.owner, bot.id(), retype(MemberType::Human)).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Conflict);
    assert!(refused.to_string().contains("tasks are assigned to it"), "{refused}");
    // Created a task.
    let ana = fx.human("ana", Role::Member).await;
    fx.join(p.id, &ana).await;
    fx.board.create_task(&ana, p.id, new_task("hers")).await.unwrap();
    let refused = fx.board.update_member(&fx.owner, ana.id(), retype(MemberType::Agent)).await.unwrap_err();
    assert!(refused.to_string().contains("it created tasks"), "{refused}");
    // Wrote a comment.
    let cy = fx.human("cy", Role::Member).await;
    fx.join(p.id, &cy).await;
    let comment = NewMessage { task_id: Some(t.id), content: "hello".into(), ..Default::default() };
    fx.board.post_message(&cy, comment).await.unwrap();
    let refused = fx.board.update_member(&fx.owner, cy.id(), retype(MemberType::Agent)).await.unwrap_err();
    assert!(refused.to_string().contains("it wrote messages"), "{refused}");
    // The same type again is no change, done something or not.
    fx.board.update_member(&fx.owner, cy.id(), retype(MemberType::Human)).await.unwrap();
}

// ---- JWT (3.5) -------------------------------------------------------------

#[tokio::test]
async fn jwt_is_hs256_with_sub_role_iat_and_a_72_hour_exp() {
    let fx = board().await;
    let token = fx.board.login("owner", OWNER_PASSWORD, None).await.unwrap().token;
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3);
    let decode = |s: &str| -> serde_json::Value {
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap()).unwrap()
    };
    assert_eq!(decode(parts[0])["alg"], "HS256");
    let claims = decode(parts[1]);
    assert_eq!(claims["sub"], fx.owner.id().to_string());
    assert_eq!(claims["role"], "owner");
    let (iat, exp) = (claims["iat"].as_i64().unwrap(), claims["exp"].as_i64().unwrap());
    assert_eq!(exp - iat, 72 * 3600);
    assert!((iat - jiff::Timestamp::now().as_second()).abs() < 600);
}

#[tokio::test]
async fn a_jwt_signed_with_another_secret_is_unauthorized() {
    let fx = board().await;
    let other = board().await;
    let foreign = other.board.login("owner", OWNER_PASSWORD, None).await.unwrap().token;
    assert_eq!(kind(fx.board.authenticate(&foreign).await), ErrorKind::Unauthorized);
}

#[tokio::test]
async fn the_jwt_secret_is_kept_in_the_data_directory_readable_by_the_owner_only() {
    let fx = board_on_disk().await;
    let token = fx.board.login("owner", OWNER_PASSWORD, None).await.unwrap().token;
    let secret = fx.path().join("jwt_secret");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // The same secret after a restart: issued tokens stay valid.
    let fx = fx.reopen().await;
    assert_eq!(fx.board.authenticate(&token).await.unwrap().id(), fx.owner.id());
}

#[tokio::test]
async fn a_configured_jwt_secret_is_used_instead_of_a_generated_one() {
    let options = BoardOptions {
        jwt_secret: Some("a configured secret of enough length".into()),
        ..Default::default()
    };
    let fx = board_on_disk_with(options).await;
    assert!(!fx.path().join("jwt_secret").exists(), "nothing is generated");
    let token = fx.board.login("owner", OWNER_PASSWORD, None).await.unwrap().token;
    let fx = fx.reopen().await;
    assert_eq!(fx.board.authenticate(&token).await.unwrap().id(), fx.owner.id());
}

// ---- roles and permissions (3.3; 3.a) --------------------------------------

#[tokio::test]
async fn creating_members_needs_admin_or_owner() {
    let fx = board().await;
    let plain = fx.human("plain", Role::Member).await;
    let admin = fx.human("admin", Role::Admin).await;
    assert_eq!(
        kind(fx.board.create_member(&plain, new_member("x", MemberType::Agent, Role::Member)).await),
        ErrorKind::Forbidden
    );
    let created =
        fx.board.create_member(&admin, new_member("y", MemberType::Agent, Role::Member)).await.unwrap();
    assert!(created.token.is_some(), "agents get their token on creation");
    let human =
        fx.board.create_member(&admin, new_member("z", MemberType::Human, Role::Admin)).await.unwrap();
    assert!(human.token.is_none());
    assert_eq!(human.role, Role::Admin);
}

#[tokio::test]
async fn member_creation_defaults_and_conflicts() {
    let fx = board().await;
    let created: taskboard_core::api::NewMember =
        serde_json::from_value(serde_json::json!({"name": "Bot", "slug": "bot"})).unwrap();
    assert_eq!(created.kind, MemberType::Agent, "type defaults to agent");
    assert_eq!(created.role, Role::Member, "role defaults to member");
    let m = fx.board.create_member(&fx.owner, created.clone()).await.unwrap();
    assert_eq!(m.kind, MemberType::Agent);
    assert_eq!(kind(fx.board.create_member(&fx.owner, created).await), ErrorKind::Conflict);
    let bridge =
        NewMember { kind: MemberType::Bridge, ..new_member("bridge", MemberType::Human, Role::Member) };
    assert_eq!(kind(fx.board.create_member(&fx.owner, bridge).await), ErrorKind::Validation);
    let human_with_config = NewMember {
        agent_config: Some(AgentConfig::default()),
        ..new_member("h", MemberType::Human, Role::Member)
    };
    assert_eq!(kind(fx.board.create_member(&fx.owner, human_with_config).await), ErrorKind::Validation);
}

#[tokio::test]
async fn only_an_owner_grants_or_takes_away_the_owner_role() {
    let fx = board().await;
    let admin = fx.human("admin", Role::Admin).await;
    let plain = fx.human("plain", Role::Member).await;
    assert_eq!(
        kind(fx.board.create_member(&admin, new_member("o2", MemberType::Human, Role::Owner)).await),
        ErrorKind::Forbidden
    );
    let promote = MemberPatch { role: Patch::Value(Role::Owner), ..Default::default() };
    assert_eq!(kind(fx.board.update_member(&admin, plain.id(), promote.clone()).await), ErrorKind::Forbidden);
    fx.board.update_member(&fx.owner, plain.id(), promote).await.unwrap();
    let demote = MemberPatch { role: Patch::Value(Role::Member), ..Default::default() };
    assert_eq!(kind(fx.board.update_member(&admin, plain.id(), demote.clone()).await), ErrorKind::Forbidden);
    fx.board.update_member(&fx.owner, plain.id(), demote).await.unwrap();
    // An admin may make a member an admin.
    let to_admin = MemberPatch { role: Patch::Value(Role::Admin), ..Default::default() };
    assert_eq!(fx.board.update_member(&admin, plain.id(), to_admin).await.unwrap().role, Role::Admin);
}

#[tokio::test]
async fn the_last_active_owner_cannot_be_demoted() {
    let fx = board().await;
    let demote = MemberPatch { role: Patch::Value(Role::Admin), ..Default::default() };
    assert_eq!(
        kind(fx.board.update_member(&fx.owner, fx.owner.id(), demote.clone()).await),
        ErrorKind::BadRequest
    );
    // A deleted owner does not count as an owner.
    let gone = fx.human("gone", Role::Owner).await;
    fx.board.delete_member(&fx.owner, gone.id()).await.unwrap();
    assert_eq!(
        kind(fx.board.update_member(&fx.owner, fx.owner.id(), demote.clone()).await),
        ErrorKind::BadRequest
    );
    let second = fx.human("second", Role::Owner).await;
    fx.board.update_member(&fx.owner, fx.owner.id(), demote).await.unwrap();
    let back = MemberPatch { role: Patch::Value(Role::Member), ..Default::default() };
    assert_eq!(kind(fx.board.update_member(&second, second.id(), back).await), ErrorKind::BadRequest);
}

#[tokio::test]
async fn the_last_active_owner_cannot_be_deleted() {
    let fx = board().await;
    assert_eq!(kind(fx.board.delete_member(&fx.owner, fx.owner.id()).await), ErrorKind::BadRequest);
    let second = fx.human("second", Role::Owner).await;
    fx.board.delete_member(&second, fx.owner.id()).await.unwrap();
    assert_eq!(kind(fx.board.delete_member(&second, second.id()).await), ErrorKind::BadRequest);
}

#[tokio::test]
async fn only_owners_delete_members() {
    let fx = board().await;
    let admin = fx.human("admin", Role::Admin).await;
    let plain = fx.human("plain", Role::Member).await;
    assert_eq!(kind(fx.board.delete_member(&admin, plain.id()).await), ErrorKind::Forbidden);
    assert_eq!(kind(fx.board.delete_member(&plain, admin.id()).await), ErrorKind::Forbidden);
    fx.board.delete_member(&fx.owner, plain.id()).await.unwrap();
    assert_eq!(kind(fx.board.delete_member(&fx.owner, plain.id()).await), ErrorKind::NotFound);
    assert_eq!(kind(fx.board.delete_member(&fx.owner, uuid::Uuid::now_v7()).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn a_member_changes_its_own_name_avatar_status_and_agent_config() {
    let fx = board().await;
    let (bot, _) = fx.agent_with("bot", AgentConfig::default()).await;
    let config =
        AgentConfig { labels: vec!["backend".into()], model: Some("m1".into()), ..Default::default() };
    let patch = MemberPatch {
        name: Patch::Value(name("Robot")),
        avatar_url: Patch::Value("https://example.com/a.png".into()),
        status: Patch::Value(MemberStatus::Busy),
        agent_config: Patch::Value(config.clone()),
        ..Default::default()
    };
    let m = fx.board.update_member(&bot, bot.id(), patch).await.unwrap();
    assert_eq!(m.name, "Robot");
    assert_eq!(m.avatar_url.as_deref(), Some("https://example.com/a.png"));
    assert_eq!(m.status, MemberStatus::Busy);
    assert_eq!(m.agent_config, config);
    // null clears a nullable field and leaves a non-nullable one (1.3).
    let patch = MemberPatch { name: Patch::Null, avatar_url: Patch::Null, ..Default::default() };
    let m = fx.board.update_member(&bot, bot.id(), patch).await.unwrap();
    assert_eq!(m.name, "Robot");
    assert_eq!(m.avatar_url, None);
}

#[tokio::test]
async fn agent_config_in_a_patch_replaces_the_whole_configuration() {
    let fx = board().await;
    let full = AgentConfig {
        capabilities: vec!["rust".into()],
        labels: vec!["backend".into()],
        chat_listen: Listen::Mentions,
        task_listen: Listen::Mentions,
        prompt: Some(LongText::new("be brief").unwrap()),
        model: Some("m1".into()),
    };
    let (bot, _) = fx.agent_with("bot", full).await;
    let partial: AgentConfig = serde_json::from_value(serde_json::json!({"labels": ["ops"]})).unwrap();
    let patch = MemberPatch { agent_config: Patch::Value(partial), ..Default::default() };
    let m = fx.board.update_member(&fx.owner, bot.id(), patch).await.unwrap();
    assert_eq!(m.agent_config, AgentConfig { labels: vec!["ops".into()], ..AgentConfig::default() });
}

#[tokio::test]
async fn a_member_cannot_change_its_own_slug_or_role() {
    let fx = board().await;
    let ana = fx.human("ana", Role::Member).await;
    let slug_patch = MemberPatch { slug: Patch::Value(slug("ana2")), ..Default::default() };
    assert_eq!(kind(fx.board.update_member(&ana, ana.id(), slug_patch.clone()).await), ErrorKind::Forbidden);
    let role_patch = MemberPatch { role: Patch::Value(Role::Admin), ..Default::default() };
    assert_eq!(kind(fx.board.update_member(&ana, ana.id(), role_patch).await), ErrorKind::Forbidden);
    // An admin may.
    assert_eq!(fx.board.update_member(&fx.owner, ana.id(), slug_patch).await.unwrap().slug, "ana2");
}

#[tokio::test]
async fn changing_another_member_needs_admin_or_owner() {
    let fx = board().await;
    let ana = fx.human("ana", Role::Member).await;
    let bob = fx.human("bob", Role::Member).await;
    let admin = fx.human("admin", Role::Admin).await;
    let patch = MemberPatch { name: Patch::Value(name("Robert")), ..Default::default() };
    assert_eq!(kind(fx.board.update_member(&ana, bob.id(), patch.clone()).await), ErrorKind::Forbidden);
    assert_eq!(fx.board.update_member(&admin, bob.id(), patch).await.unwrap().name, "Robert");
    assert_eq!(
        kind(fx.board.update_member(&admin, uuid::Uuid::now_v7(), MemberPatch::default()).await),
        ErrorKind::NotFound
    );
}

#[tokio::test]
async fn a_taken_slug_is_conflict_on_update() {
    let fx = board().await;
    let ana = fx.human("ana", Role::Member).await;
    fx.human("bob", Role::Member).await;
    let patch = MemberPatch { slug: Patch::Value(slug("bob")), ..Default::default() };
    assert_eq!(kind(fx.board.update_member(&fx.owner, ana.id(), patch).await), ErrorKind::Conflict);
    // Its own slug is not a conflict; the old slug is freed by a rename.
    let same = MemberPatch { slug: Patch::Value(slug("ana")), ..Default::default() };
    fx.board.update_member(&fx.owner, ana.id(), same).await.unwrap();
    let rename = MemberPatch { slug: Patch::Value(slug("anna")), ..Default::default() };
    fx.board.update_member(&fx.owner, ana.id(), rename).await.unwrap();
    fx.human("ana", Role::Member).await;
    assert_eq!(fx.performer().find_member("anna").await.unwrap().id, ana.id());
}

#[tokio::test]
async fn credentials_of_another_member_need_admin_and_own_ones_are_self_service() {
    let fx = board().await;
    let (bot, token) = fx.agent_with("bot", AgentConfig::default()).await;
    let (other, _) = fx.agent_with("other", AgentConfig::default()).await;
    let ana = fx.human("ana", Role::Member).await;
    assert_eq!(kind(fx.board.regenerate_token(&bot, other.id()).await), ErrorKind::Forbidden);
    assert_eq!(kind(fx.board.revoke_token(&bot, other.id()).await), ErrorKind::Forbidden);
    assert_eq!(
        kind(fx.board.set_password(&bot, ana.id(), password("something-long")).await),
        ErrorKind::Forbidden
    );
    // Its own token and password.
    let fresh = fx.board.regenerate_token(&bot, bot.id()).await.unwrap();
    assert_eq!(kind(fx.board.authenticate(&token).await), ErrorKind::Unauthorized);
    fx.board.revoke_token(&bot, bot.id()).await.unwrap();
    assert_eq!(kind(fx.board.authenticate(&fresh).await), ErrorKind::Unauthorized);
    fx.board.set_password(&ana, ana.id(), password("my-own-password")).await.unwrap();
    fx.board.login("ana", "my-own-password", None).await.unwrap();
    // An admin sets another human's password.
    let admin = fx.human("admin", Role::Admin).await;
    fx.board.set_password(&admin, ana.id(), password("reset-by-admin")).await.unwrap();
    assert_eq!(kind(fx.board.login("ana", "my-own-password", None).await), ErrorKind::Unauthorized);
    fx.board.login("ana", "reset-by-admin", None).await.unwrap();
}

#[tokio::test]
async fn passwords_are_8_to_1024_characters() {
    assert!(Password::new("short").is_err());
    assert!(Password::new("x".repeat(1025)).is_err());
    assert!(Password::new("12345678").is_ok());
    assert!(Password::new("x".repeat(1024)).is_ok());
}

#[tokio::test]
async fn members_are_listed_by_creation_time_and_paged() {
    let fx = board().await;
    for s in ["c", "a", "b"] {
        fx.human(s, Role::Member).await;
    }
    let all = fx.board.list_members(false, Page::default()).await.unwrap();
    assert_eq!(all.iter().map(|m| m.slug.as_str()).collect::<Vec<_>>(), ["owner", "c", "a", "b"]);
    let page = Page { limit: Some(2), offset: Some(1), ..Page::default() };
    let some = fx.board.list_members(false, page).await.unwrap();
    assert_eq!(some.iter().map(|m| m.slug.as_str()).collect::<Vec<_>>(), ["c", "a"]);
    let bad = Page { limit: Some(0), ..Page::default() };
    assert_eq!(kind(fx.board.list_members(false, bad).await), ErrorKind::Validation);
}

#[tokio::test]
async fn me_is_the_caller_and_members_are_found_by_id_or_slug() {
    let fx = board().await;
    let ana = fx.human("ana", Role::Member).await;
    assert_eq!(fx.board.me(&ana).await.unwrap().id, ana.id());
    assert_eq!(fx.performer().find_member("ana").await.unwrap().id, ana.id());
    assert_eq!(fx.performer().find_member(&ana.id().to_string()).await.unwrap().slug, "ana");
    assert_eq!(kind(fx.performer().find_member("nobody").await), ErrorKind::NotFound);
    assert_eq!(kind(fx.board.get_member(uuid::Uuid::now_v7()).await), ErrorKind::NotFound);
}

// ---- status and presence (REST status; 3.7) --------------------------------

#[tokio::test]
async fn set_status_sends_agent_status() {
    let fx = board().await;
    let bot = fx.agent("bot").await;
    let mut sub = fx.board.subscribe(None);
    assert_eq!(fx.board.set_status(&bot, MemberStatus::Busy).await.unwrap(), MemberStatus::Busy);
    let events = drain(&mut sub);
    assert_eq!(kinds(&events), ["agent.status"]);
    assert_eq!(events[0].data(), serde_json::json!({"member_id": bot.id(), "status": "busy"}));
    assert_eq!(fx.board.get_member(bot.id()).await.unwrap().status, MemberStatus::Busy);
}

#[tokio::test]
async fn the_first_connection_sets_online_and_the_last_sets_offline_unless_busy() {
    let fx = board().await;
    let bot = fx.agent("bot").await;
    let status = |fx: &Fx| {
        let (board, _owner, id) = (fx.board.clone(), fx.owner.clone(), bot.id());
        async move { board.get_member(id).await.unwrap().status }
    };
    let before = fx.board.get_member(bot.id()).await.unwrap().last_seen_at;
    fx.board.connected(&bot).await.unwrap();
    assert_eq!(status(&fx).await, MemberStatus::Online);
    assert!(fx.board.get_member(bot.id()).await.unwrap().last_seen_at >= before);
    fx.board.connected(&bot).await.unwrap();
    fx.board.disconnected(&bot).await.unwrap();
    assert_eq!(status(&fx).await, MemberStatus::Online, "one connection is still open");
    fx.board.disconnected(&bot).await.unwrap();
    assert_eq!(status(&fx).await, MemberStatus::Offline);

    fx.board.connected(&bot).await.unwrap();
    fx.board.set_status(&bot, MemberStatus::Busy).await.unwrap();
    fx.board.disconnected(&bot).await.unwrap();
    assert_eq!(status(&fx).await, MemberStatus::Busy, "busy was set by the member itself");
    fx.board.connected(&bot).await.unwrap();
    assert_eq!(status(&fx).await, MemberStatus::Busy);
}

#[tokio::test]
async fn member_changes_emit_member_events() {
    let fx = board().await;
    let mut sub = fx.board.subscribe(None);
    let (bot, _) = fx.agent_with("bot", AgentConfig::default()).await;
    fx.board.regenerate_token(&fx.owner, bot.id()).await.unwrap();
    fx.board.revoke_token(&fx.owner, bot.id()).await.unwrap();
    fx.board.delete_member(&fx.owner, bot.id()).await.unwrap();
    let events = drain(&mut sub);
    assert_eq!(
        kinds(&events),
        ["member.created", "member.token_revoked", "member.token_revoked", "member.deleted"]
    );
    assert!(events[1].ends_session_of(bot.id()));
    assert!(events[3].ends_session_of(bot.id()));
    assert!(!events[0].ends_session_of(bot.id()));
}
