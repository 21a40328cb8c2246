//! The third security pass, the board's part (docs/decisions.md, 20):
//! tokens follow their member, streams end with their credentials, a
//! transcript is bounded whatever its entries, only admins choose a
//! project's repository, runs are started by people of the project, and a
//! project-limited token stays in its projects.

use std::time::Duration;

use taskboard_core::api::{
    self, Caller, CreateLink, CreateTask, MemberPatch, NewEntry, NewLink, NewProject, NewRun, NewTask, Patch,
    ProjectIdQuery, ProjectPatch, TaskPatch, UpdateTask,
};
use taskboard_core::board::Clock;
use taskboard_core::model::*;
use taskboard_core::runs::EntryKind;
use taskboard_core::tokens::NewAccessToken;
use taskboard_core::{BoardOptions, ErrorKind};

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

fn promote(role: Role) -> MemberPatch {
    MemberPatch { role: Patch::Value(role), ..Default::default() }
}

#[tokio::test]
async fn a_token_made_for_another_member_never_outranks_its_maker() {
    let fx = board().await;
    let admin = fx.human("ada", Role::Admin).await;
    let max = fx.human("max", Role::Member).await;
    let made = fx.board.create_access_token(&admin, max.id(), new("for max", &[Scope::Admin])).await.unwrap();
    // Max becomes an owner; the token the admin made for him does not.
    fx.board.update_member(&fx.owner, max.id(), promote(Role::Owner)).await.unwrap();
    let through = fx.board.authenticate(&made.token).await.unwrap();
    assert_eq!(through.role(), Role::Admin, "capped at its maker's role");
    refused(
        fx.board.update_member(&through, admin.id(), promote(Role::Owner)).await,
        ErrorKind::Forbidden,
        "owner",
    );
    assert_eq!(fx.board.get_member(admin.id()).await.unwrap().role, Role::Admin, "nothing changed");
    // Nor does a token it makes: the cap passes down.
    let child =
        fx.board.create_access_token(&through, max.id(), new("child", &[Scope::Admin])).await.unwrap();
    let child = fx.board.authenticate(&child.token).await.unwrap();
    refused(
        fx.board.update_member(&child, admin.id(), promote(Role::Owner)).await,
        ErrorKind::Forbidden,
        "owner",
    );
    // A token never carries more than its member's role now.
    fx.board.update_member(&fx.owner, max.id(), promote(Role::Member)).await.unwrap();
    assert_eq!(fx.board.authenticate(&made.token).await.unwrap().role(), Role::Member);
    // Max's own token follows max alone.
    let own = fx.board.create_access_token(&max, max.id(), new("own", &[Scope::Admin])).await.unwrap();
    fx.board.update_member(&fx.owner, max.id(), promote(Role::Owner)).await.unwrap();
    let own = fx.board.authenticate(&own.token).await.unwrap();
    assert_eq!(own.role(), Role::Owner);
    fx.board.update_member(&own, admin.id(), promote(Role::Owner)).await.unwrap();
}

#[tokio::test]
async fn a_token_made_with_a_token_ends_no_later_than_it_and_is_revoked_with_it() {
    let clock = Clock::manual();
    let fx = board_with(BoardOptions { clock: clock.clone(), ..BoardOptions::default() }).await;
    let at = clock.timestamp() + jiff::SignedDuration::from_secs(120);
    let parent = NewAccessToken { expires_at: Some(at), ..new("parent", &[Scope::Read, Scope::Admin]) };
    let parent = fx.board.create_access_token(&fx.owner, fx.owner.id(), parent).await.unwrap();
    let through = fx.board.authenticate(&parent.token).await.unwrap();
    let forever =
        fx.board.create_access_token(&through, fx.owner.id(), new("child", &[Scope::Read])).await.unwrap();
    assert_eq!(forever.access_token.expires_at, Some(at), "no expiry asked: the parent's");
    let later = NewAccessToken {
        expires_at: Some(at + jiff::SignedDuration::from_secs(3600)),
        ..new("later", &[Scope::Read])
    };
    let later = fx.board.create_access_token(&through, fx.owner.id(), later).await.unwrap();
    assert_eq!(later.access_token.expires_at, Some(at), "a later expiry is brought back to the parent's");
    let grandchild = {
        let child = fx.board.authenticate(&forever.token).await.unwrap();
        fx.board.create_access_token(&child, fx.owner.id(), new("grandchild", &[Scope::Read])).await.unwrap()
    };
    fx.board.authenticate(&grandchild.token).await.unwrap();
    // Revoking the parent revokes what was made with it, and what was
    // made with that.
    fx.board.revoke_access_token(&fx.owner, fx.owner.id(), parent.access_token.id).await.unwrap();
    for token in [&forever.token, &later.token, &grandchild.token] {
        refused(fx.board.authenticate(token).await, ErrorKind::Unauthorized, "access token");
    }
    let left = fx.board.list_access_tokens(&fx.owner, fx.owner.id()).await.unwrap();
    assert!(left.is_empty(), "{left:?}");
    // And a child outlives no expiry of its parent.
    let parent = NewAccessToken { expires_at: Some(at), ..new("parent", &[Scope::Read, Scope::Admin]) };
    let parent = fx.board.create_access_token(&fx.owner, fx.owner.id(), parent).await.unwrap();
    let through = fx.board.authenticate(&parent.token).await.unwrap();
    let child =
        fx.board.create_access_token(&through, fx.owner.id(), new("child", &[Scope::Read])).await.unwrap();
    clock.advance(Duration::from_secs(121));
    refused(fx.board.authenticate(&child.token).await, ErrorKind::Unauthorized, "expired");
}

#[tokio::test]
async fn revoking_an_agents_token_revokes_the_tokens_it_made() {
    let fx = board().await;
    let (bot, agent_token) = fx.agent_with("bot", AgentConfig::default()).await;
    let as_bot = fx.board.authenticate(&agent_token).await.unwrap();
    let made = fx.board.create_access_token(&as_bot, bot.id(), new("ci", &[Scope::Read])).await.unwrap();
    let by_owner =
        fx.board.create_access_token(&fx.owner, bot.id(), new("owner's", &[Scope::Read])).await.unwrap();
    fx.board.authenticate(&made.token).await.unwrap();
    fx.board.revoke_token(&fx.owner, bot.id()).await.unwrap();
    refused(fx.board.authenticate(&agent_token).await, ErrorKind::Unauthorized, "");
    refused(fx.board.authenticate(&made.token).await, ErrorKind::Unauthorized, "access token");
    // A token someone else made for the agent is not the agent's to lose.
    fx.board.authenticate(&by_owner.token).await.unwrap();

    // Regenerating the token ends them too.
    let fresh = fx.board.regenerate_token(&fx.owner, bot.id()).await.unwrap();
    let as_bot = fx.board.authenticate(&fresh).await.unwrap();
    let made = fx.board.create_access_token(&as_bot, bot.id(), new("ci", &[Scope::Read])).await.unwrap();
    fx.board.regenerate_token(&fx.owner, bot.id()).await.unwrap();
    refused(fx.board.authenticate(&made.token).await, ErrorKind::Unauthorized, "access token");
}

#[tokio::test]
async fn an_event_stream_ends_when_its_token_expires_or_is_revoked() {
    let fx = board().await;
    let p = fx.project("web").await;
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_millis(300);
    let short = NewAccessToken { expires_at: Some(at), ..new("short", &[Scope::Read]) };
    let short = fx.board.create_access_token(&fx.owner, fx.owner.id(), short).await.unwrap();
    let actor = fx.board.authenticate(&short.token).await.unwrap();
    let mut follower = fx.board.follow(&actor, None);
    // Waits far longer than the token lives: ends at its expiry, with
    // nothing after it.
    let batch = follower.next_batch(100, Duration::from_secs(60)).await;
    assert!(batch.ended, "the stream ends when its token expires");
    assert!(batch.events.is_empty());
    fx.task(&p, "after").await;
    let batch = follower.next_batch(100, Duration::from_secs(60)).await;
    assert!(batch.ended && batch.events.is_empty(), "nothing after the expiry: {:?}", batch.events.len());

    let kept =
        fx.board.create_access_token(&fx.owner, fx.owner.id(), new("kept", &[Scope::Read])).await.unwrap();
    let actor = fx.board.authenticate(&kept.token).await.unwrap();
    let mut follower = fx.board.follow(&actor, None);
    fx.board.revoke_access_token(&fx.owner, fx.owner.id(), kept.access_token.id).await.unwrap();
    let batch = follower.next_batch(100, Duration::from_secs(60)).await;
    assert!(batch.ended, "the stream ends with the revocation");
}

#[tokio::test]
async fn every_entry_kind_counts_toward_the_transcript_cap() {
    let fx = board_with(BoardOptions { transcript_cap: 4096, ..BoardOptions::default() }).await;
    let p = fx.project("web").await;
    let (bot, token) = fx.agent_with("bot", AgentConfig::default()).await;
    fx.join(p.id, &bot).await;
    let t = fx.task(&p, "work").await;
    let run = fx
        .board
        .start_run(&fx.owner, t.id, NewRun { agent_id: bot.id(), lease_seconds: Some(60), runner: None })
        .await
        .unwrap();
    let as_bot = fx.board.authenticate(&token).await.unwrap();
    let kinds = [EntryKind::State, EntryKind::Question, EntryKind::Answer];
    for i in 0..24 {
        let entry = NewEntry { kind: kinds[i % 3], text: "x".repeat(2000), data: None };
        fx.board.append_transcript(&as_bot, run.id, vec![entry]).await.unwrap();
    }
    let entries = fx.board.transcript(run.id, Default::default()).await.unwrap();
    let text: usize = entries.iter().map(|e| e.text.len()).sum();
    assert!(text < 4096 + 1000, "kept {text} bytes past a cap of 4096");
    let last = entries.last().unwrap();
    assert!(last.text.contains("dropped"), "{:?}", last.text);
}

#[tokio::test]
async fn a_run_appending_without_pause_is_told_to_wait() {
    let fx = board().await;
    let p = fx.project("web").await;
    let (bot, token) = fx.agent_with("bot", AgentConfig::default()).await;
    fx.join(p.id, &bot).await;
    let t = fx.task(&p, "work").await;
    let run = fx
        .board
        .start_run(&fx.owner, t.id, NewRun { agent_id: bot.id(), lease_seconds: Some(60), runner: None })
        .await
        .unwrap();
    let as_bot = fx.board.authenticate(&token).await.unwrap();
    let mut refusal = None;
    for _ in 0..300 {
        let entry = NewEntry { kind: EntryKind::Output, text: "line".into(), data: None };
        if let Err(e) = fx.board.append_transcript(&as_bot, run.id, vec![entry]).await {
            refusal = Some(e);
            break;
        }
    }
    let e = refusal.expect("300 appends at once are refused somewhere");
    assert_eq!(e.kind(), ErrorKind::TooManyRequests, "{e}");
    assert!(e.retry_after().is_some_and(|s| s >= 1), "Retry-After: {:?}", e.retry_after());
    assert!(e.detail().contains("batch"), "{}", e.detail());
}

#[tokio::test]
async fn only_admins_and_owners_choose_a_projects_repository() {
    let fx = board().await;
    let mallory = fx.human("mallory", Role::Member).await;
    let admin = fx.human("ada", Role::Admin).await;
    let p = fx.project("web").await;
    let to_repo =
        |url: &str| ProjectPatch { repo_urls: Patch::Value(vec![url.to_string()]), ..Default::default() };
    refused(
        fx.board.update_project(&mallory, p.id, to_repo("file:///tmp/evil")).await,
        ErrorKind::Forbidden,
        "repo_urls",
    );
    assert!(fx.board.get_project(p.id).await.unwrap().repo_urls.is_empty(), "nothing changed");
    let with_repo = NewProject { repo_urls: vec!["https://example.com/x.git".into()], ..new_project("mine") };
    refused(fx.board.create_project(&mallory, with_repo.clone()).await, ErrorKind::Forbidden, "repo_urls");
    // A member still edits the rest of a project, and creates projects.
    let renamed = ProjectPatch {
        description: Patch::Value(taskboard_core::validate::LongText::new("notes").unwrap()),
        ..Default::default()
    };
    fx.board.update_project(&mallory, p.id, renamed).await.unwrap();
    fx.board.create_project(&mallory, new_project("plain")).await.unwrap();
    // Admins and owners do.
    fx.board.update_project(&admin, p.id, to_repo("https://example.com/web.git")).await.unwrap();
    fx.board.create_project(&fx.owner, with_repo).await.unwrap();
    // Naming the repository it already has is no change.
    fx.board.update_project(&mallory, p.id, to_repo("https://example.com/web.git")).await.unwrap();
}

#[tokio::test]
async fn a_person_starts_runs_only_in_their_projects_of_the_projects_agents() {
    let fx = board().await;
    let p = fx.project("web").await;
    let mallory = fx.human("mallory", Role::Member).await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    let run = || NewRun { agent_id: bot.id(), lease_seconds: Some(60), runner: None };
    refused(
        fx.board.start_run(&mallory, t.id, run()).await,
        ErrorKind::Forbidden,
        "only members of project web",
    );
    refused(
        fx.board.start_run(&fx.owner, t.id, run()).await,
        ErrorKind::Forbidden,
        "agent bot is not a member of project web",
    );
    fx.join(p.id, &bot).await;
    refused(
        fx.board.start_run(&mallory, t.id, run()).await,
        ErrorKind::Forbidden,
        "only members of project web",
    );
    fx.board.add_project_member(&fx.owner, p.id, mallory.id()).await.unwrap();
    fx.board.start_run(&mallory, t.id, run()).await.unwrap();
}

#[tokio::test]
async fn a_project_limited_token_ties_no_task_of_another_project() {
    let fx = board().await;
    let web = fx.project("web").await;
    let ops = fx.project("ops").await;
    let mine = fx.task(&web, "mine").await;
    let theirs = fx.task(&ops, "theirs").await;
    let limited =
        NewAccessToken { project_ids: Some(vec![web.id]), ..new("web", &[Scope::Read, Scope::TasksWrite]) };
    let limited = fx.board.create_access_token(&fx.owner, fx.owner.id(), limited).await.unwrap();
    let caller = Caller::member(fx.board.authenticate(&limited.token).await.unwrap());
    let in_web = || ProjectIdQuery { project_id: web.id };
    let link = NewLink { target_id: theirs.id, link_type: LinkType::Blocks };
    refused(
        api::call::<CreateLink>(&fx.board, &caller, mine.id, (), link).await,
        ErrorKind::Forbidden,
        "ops",
    );
    let child = NewTask { parent_id: Some(theirs.id), ..new_task("child") };
    refused(
        api::call::<CreateTask>(&fx.board, &caller, (), in_web(), child).await,
        ErrorKind::Forbidden,
        "ops",
    );
    let depending = NewTask { depends_on: vec![theirs.id], ..new_task("after") };
    refused(
        api::call::<CreateTask>(&fx.board, &caller, (), in_web(), depending).await,
        ErrorKind::Forbidden,
        "ops",
    );
    let moved = TaskPatch { parent_id: Patch::Value(theirs.id), ..Default::default() };
    refused(
        api::call::<UpdateTask>(&fx.board, &caller, mine.id, (), moved).await,
        ErrorKind::Forbidden,
        "ops",
    );
    let theirs_now = fx.get(theirs.id).await;
    assert!(theirs_now.subtasks.is_empty(), "nothing was tied to {}", theirs_now.key);
    // Within its project it links as before.
    let sibling = fx.task(&web, "sibling").await;
    let link = NewLink { target_id: sibling.id, link_type: LinkType::Blocks };
    api::call::<CreateLink>(&fx.board, &caller, mine.id, (), link).await.unwrap();
}
