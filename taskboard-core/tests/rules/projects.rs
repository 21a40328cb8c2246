//! Projects and project membership (REST-INTERFACE Projects; DECISIONS 2.3,
//! 4).

use taskboard_core::ErrorKind;
use taskboard_core::api::{MessageFilter, NewLink, NewMessage, Page, Patch, ProjectPatch};
use taskboard_core::events::EventKind;
use taskboard_core::model::*;
use uuid::Uuid;

use taskboard_core::Perform;

use crate::support::*;

#[tokio::test]
async fn creating_a_project_creates_its_main_chat() {
    let fx = board().await;
    let mut sub = fx.board.subscribe(None);
    let p = fx.project("web").await;
    assert_eq!(p.status, ProjectStatus::Active);
    assert_eq!(p.task_counter, 0);
    assert!(!p.auto_assign);
    let chat = p.chat_id.expect("every project has a main chat");
    let m = fx
        .board
        .post_message(
            &fx.owner,
            NewMessage { chat_id: Some(chat), content: "hi".into(), ..Default::default() },
        )
        .await
        .unwrap();
    assert_eq!(m.chat_id, Some(chat));
    let events = drain(&mut sub);
    assert_eq!(events[0].kind, EventKind::ProjectCreated);
    let data: Project = serde_json::from_value(events[0].data()).unwrap();
    assert_eq!(data, p);
}

#[tokio::test]
async fn the_creator_becomes_project_owner_and_later_members_are_members() {
    let fx = board().await;
    let ana = fx.human("ana", Role::Member).await;
    let bot = fx.agent("bot").await;
    let p = fx.project_by(&ana, "web").await;
    fx.board.add_project_member(&fx.owner, p.id, bot.id()).await.unwrap();
    let members = fx.board.project_members(p.id, Page::default()).await.unwrap();
    let roles: Vec<(&str, ProjectRole, MemberType)> =
        members.iter().map(|m| (m.slug.as_str(), m.role, m.kind)).collect();
    assert_eq!(
        roles,
        [("ana", ProjectRole::Owner, MemberType::Human), ("bot", ProjectRole::Member, MemberType::Agent)]
    );
}

#[tokio::test]
async fn a_taken_project_slug_is_conflict() {
    let fx = board().await;
    let web = fx.project("web").await;
    assert_eq!(kind(fx.board.create_project(&fx.owner, new_project("web")).await), ErrorKind::Conflict);
    let api = fx.project("api").await;
    let patch = ProjectPatch { slug: Patch::Value(slug("web")), ..Default::default() };
    assert_eq!(kind(fx.board.update_project(&fx.owner, api.id, patch).await), ErrorKind::Conflict);
    // Renaming frees the old slug.
    let patch = ProjectPatch { slug: Patch::Value(slug("www")), ..Default::default() };
    fx.board.update_project(&fx.owner, web.id, patch).await.unwrap();
    fx.project("web").await;
    assert_eq!(fx.performer().find_project("www").await.unwrap().id, web.id);
}

#[tokio::test]
async fn the_list_holds_active_projects_and_archived_ones_on_request() {
    let fx = board().await;
    let a = fx.project("a").await;
    let b = fx.project("b").await;
    let c = fx.project("c").await;
    let archive = ProjectPatch { status: Patch::Value(ProjectStatus::Archived), ..Default::default() };
    fx.board.update_project(&fx.owner, b.id, archive).await.unwrap();
    let active = fx.board.list_projects(false, Page::default()).await.unwrap();
    assert_eq!(active.iter().map(|p| p.id).collect::<Vec<_>>(), [a.id, c.id]);
    let all = fx.board.list_projects(true, Page::default()).await.unwrap();
    assert_eq!(all.iter().map(|p| p.id).collect::<Vec<_>>(), [a.id, b.id, c.id], "by creation time");
    assert_eq!(fx.board.get_project(b.id).await.unwrap().status, ProjectStatus::Archived);
    let page = fx
        .board
        .list_projects(true, Page { limit: Some(1), offset: Some(2), ..Page::default() })
        .await
        .unwrap();
    assert_eq!(page.iter().map(|p| p.id).collect::<Vec<_>>(), [c.id]);
}

#[tokio::test]
async fn a_project_patch_changes_only_what_it_names() {
    let fx = board().await;
    let p = fx.project("web").await;
    let patch: ProjectPatch = serde_json::from_value(serde_json::json!({
        "description": "the site", "repo_urls": ["https://git.example/web"], "auto_assign": true
    }))
    .unwrap();
    let q = fx.board.update_project(&fx.owner, p.id, patch).await.unwrap();
    assert_eq!(q.description.as_deref(), Some("the site"));
    assert_eq!(q.repo_urls, ["https://git.example/web"]);
    assert!(q.auto_assign);
    assert_eq!(q.name, p.name);
    let patch: ProjectPatch =
        serde_json::from_value(serde_json::json!({"description": null, "name": null})).unwrap();
    let q = fx.board.update_project(&fx.owner, p.id, patch).await.unwrap();
    assert_eq!(q.description, None, "null clears a nullable field");
    assert_eq!(q.name, p.name, "and leaves a non-nullable one");
    assert_eq!(kind(fx.board.get_project(Uuid::now_v7()).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn only_owners_delete_projects() {
    let fx = board().await;
    let admin = fx.human("admin", Role::Admin).await;
    let p = fx.project_by(&admin, "web").await;
    assert_eq!(kind(fx.board.delete_project(&admin, p.id).await), ErrorKind::Forbidden);
    fx.board.delete_project(&fx.owner, p.id).await.unwrap();
    assert_eq!(kind(fx.board.delete_project(&fx.owner, p.id).await), ErrorKind::NotFound);
}

/// DECISIONS 4.3: tasks, steps, links, messages, chat and files, blobs
/// included, go in one transaction.
#[tokio::test]
async fn deleting_a_project_deletes_everything_in_it_blobs_included() {
    let fx = board_on_disk().await;
    let doomed = fx.project("doomed").await;
    let kept = fx.project("kept").await;
    let t1 = fx.task(&doomed, "one").await;
    let t2 = fx.task(&doomed, "two").await;
    let outside = fx.task(&kept, "outside").await;
    fx.board.create_step(&fx.owner, t1.id, title("step")).await.unwrap();
    fx.board
        .create_link(&fx.owner, t2.id, NewLink { target_id: t1.id, link_type: LinkType::Blocks })
        .await
        .unwrap();
    fx.board
        .create_link(&fx.owner, outside.id, NewLink { target_id: t1.id, link_type: LinkType::DependsOn })
        .await
        .unwrap();
    let up1 = fx.board.upload(&fx.owner, "a.txt", None, &b"attached to a comment"[..]).await.unwrap();
    let up2 = fx.board.upload(&fx.owner, "b.txt", None, &b"attached to a chat message"[..]).await.unwrap();
    let comment = fx
        .board
        .post_message(
            &fx.owner,
            NewMessage {
                task_id: Some(t1.id),
                content: "see".into(),
                attachments: vec![up1.clone()],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let chat = fx
        .board
        .post_message(
            &fx.owner,
            NewMessage {
                chat_id: doomed.chat_id,
                content: "see".into(),
                attachments: vec![up2.clone()],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let file =
        fx.board.upload_file(&fx.owner, doomed.id, "spec.md", None, None, &b"# spec"[..]).await.unwrap();
    let kept_file =
        fx.board.upload_file(&fx.owner, kept.id, "keep.md", None, None, &b"keep"[..]).await.unwrap();
    assert_eq!(files_under(fx.board.blob_dir()).len(), 4);
    assert_eq!(fx.get(outside.id).await.depends_on, [t1.id]);

    let mut sub = fx.board.subscribe(None);
    fx.board.delete_project(&fx.owner, doomed.id).await.unwrap();
    let events = drain(&mut sub);
    assert_eq!(events.last().unwrap().kind, EventKind::ProjectDeleted);
    assert_eq!(events.iter().filter(|e| e.kind == EventKind::TaskDeleted).count(), 2);

    let b = &fx.board;
    let o = &fx.owner;
    assert_eq!(kind(b.get_project(doomed.id).await), ErrorKind::NotFound);
    for t in [t1.id, t2.id] {
        assert_eq!(kind(b.get_task(o, t).await), ErrorKind::NotFound);
        assert_eq!(kind(b.list_steps(t).await), ErrorKind::NotFound);
    }
    assert!(fx.get(outside.id).await.depends_on.is_empty(), "links into the project are gone");
    assert!(b.list_links(outside.id).await.unwrap().is_empty());
    for m in [comment.id, chat.id] {
        assert_eq!(kind(b.replies(m, Page::default()).await), ErrorKind::NotFound);
    }
    let in_chat = MessageFilter { chat_id: doomed.chat_id, ..Default::default() };
    assert!(b.list_messages(in_chat).await.unwrap().is_empty());
    let everywhere = b.list_messages(MessageFilter { limit: Some(200), ..Default::default() }).await.unwrap();
    assert!(everywhere.iter().all(|m| m.chat_id != doomed.chat_id && m.task_id != Some(t1.id)));
    assert_eq!(
        kind(
            b.post_message(
                o,
                NewMessage { chat_id: doomed.chat_id, content: "x".into(), ..Default::default() }
            )
            .await
        ),
        ErrorKind::NotFound,
        "the chat is gone"
    );
    for up in [&up1, &up2] {
        assert_eq!(kind(b.open_attachment(up.file_id).await), ErrorKind::NotFound);
    }
    assert_eq!(kind(b.get_file(doomed.id, file.id).await), ErrorKind::NotFound);
    assert_eq!(kind(b.project_members(doomed.id, Page::default()).await), ErrorKind::NotFound);
    // Only the other project's blob is left.
    let left = files_under(b.blob_dir());
    assert_eq!(left.len(), 1, "{left:?}");
    b.open_file(kept.id, kept_file.id).await.unwrap();
    // The slug is free again, and numbering starts over.
    let again = fx.project("doomed").await;
    assert_eq!(fx.task(&again, "fresh").await.key, "DOOMED-1");
}

#[tokio::test]
async fn adding_an_unknown_or_inactive_member_is_not_found() {
    let fx = board().await;
    let p = fx.project("web").await;
    let gone = fx.human("gone", Role::Member).await;
    fx.board.delete_member(&fx.owner, gone.id()).await.unwrap();
    assert_eq!(kind(fx.board.add_project_member(&fx.owner, p.id, Uuid::now_v7()).await), ErrorKind::NotFound);
    assert_eq!(kind(fx.board.add_project_member(&fx.owner, p.id, gone.id()).await), ErrorKind::NotFound);
    let ana = fx.human("ana", Role::Member).await;
    assert_eq!(
        kind(fx.board.add_project_member(&fx.owner, Uuid::now_v7(), ana.id()).await),
        ErrorKind::NotFound
    );
}

#[tokio::test]
async fn adding_a_member_already_in_the_project_is_conflict() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    fx.board.add_project_member(&fx.owner, p.id, ana.id()).await.unwrap();
    assert_eq!(kind(fx.board.add_project_member(&fx.owner, p.id, ana.id()).await), ErrorKind::Conflict);
    assert_eq!(kind(fx.board.add_project_member(&fx.owner, p.id, fx.owner.id()).await), ErrorKind::Conflict);
}

#[tokio::test]
async fn removing_the_project_owner_is_bad_request() {
    let fx = board().await;
    let p = fx.project("web").await;
    assert_eq!(
        kind(fx.board.remove_project_member(&fx.owner, p.id, fx.owner.id()).await),
        ErrorKind::BadRequest
    );
}

#[tokio::test]
async fn removing_a_member_not_in_the_project_is_not_found() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    assert_eq!(kind(fx.board.remove_project_member(&fx.owner, p.id, ana.id()).await), ErrorKind::NotFound);
    fx.board.add_project_member(&fx.owner, p.id, ana.id()).await.unwrap();
    fx.board.remove_project_member(&fx.owner, p.id, ana.id()).await.unwrap();
    let members = fx.board.project_members(p.id, Page::default()).await.unwrap();
    assert_eq!(members.iter().map(|m| m.id).collect::<Vec<_>>(), [fx.owner.id()]);
    assert_eq!(kind(fx.board.remove_project_member(&fx.owner, p.id, ana.id()).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn project_membership_changes_need_admin_or_owner() {
    let fx = board().await;
    let plain = fx.human("plain", Role::Member).await;
    let other = fx.human("other", Role::Member).await;
    // Any member may create a project…
    let p = fx.project_by(&plain, "mine").await;
    // …but adding or removing its members needs admin.
    assert_eq!(kind(fx.board.add_project_member(&plain, p.id, other.id()).await), ErrorKind::Forbidden);
    let admin = fx.human("admin", Role::Admin).await;
    fx.board.add_project_member(&admin, p.id, other.id()).await.unwrap();
    assert_eq!(kind(fx.board.remove_project_member(&plain, p.id, other.id()).await), ErrorKind::Forbidden);
    fx.board.remove_project_member(&admin, p.id, other.id()).await.unwrap();
}

#[tokio::test]
async fn any_active_member_may_create_and_change_projects() {
    let fx = board().await;
    let bot = fx.agent("bot").await;
    let p = fx.project_by(&bot, "bots").await;
    let patch = ProjectPatch { name: Patch::Value(name("Bot works")), ..Default::default() };
    assert_eq!(fx.board.update_project(&bot, p.id, patch).await.unwrap().name, "Bot works");
}
