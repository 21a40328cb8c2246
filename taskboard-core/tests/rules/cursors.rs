//! Every list pages by cursor (docs/rules.md, lists): walking a list page
//! by page with the cursor of each full page gives the whole list, in
//! order, once; messages page from the newest back.

use std::fmt::Debug;

use taskboard_core::api::{
    self, Caller, Handle, ListActions, ListLinks, ListMessages, ListProjectMembers, ListReplies, ListSteps,
    MessageFilter, NewLink, NewMessage, Page, Paged, Patch, TaskPatch,
};
use taskboard_core::model::*;
use uuid::Uuid;

use crate::support::*;

/// Walks `E`'s list at `path` in pages of `limit`, following cursors.
async fn walk<E, T>(fx: &Fx, path: Uuid, limit: u32) -> Vec<T>
where
    E: Handle<Path = Uuid, Query = Page, Body = (), Response = Paged<T>>,
{
    let caller = Caller::member(fx.owner.clone());
    let (mut out, mut cursor) = (Vec::new(), None);
    loop {
        let page = Page { limit: Some(limit), cursor: cursor.take(), ..Page::default() };
        let got = api::call::<E>(&fx.board, &caller, path, page, ()).await.unwrap();
        assert!(got.len() <= limit as usize);
        let full = got.len() == limit as usize;
        assert_eq!(got.next.is_some(), full, "a cursor comes with every full page, and only then");
        out.extend(got.items);
        match got.next {
            Some(next) => cursor = Some(next),
            None => return out,
        }
    }
}

async fn whole<E, T>(fx: &Fx, path: Uuid) -> Vec<T>
where
    E: Handle<Path = Uuid, Query = Page, Body = (), Response = Paged<T>>,
{
    let caller = Caller::member(fx.owner.clone());
    let got = api::call::<E>(&fx.board, &caller, path, Page::default(), ()).await.unwrap();
    assert!(got.next.is_none(), "a whole list has no next page");
    got.items
}

async fn same_walk<E, T: PartialEq + Debug>(fx: &Fx, path: Uuid, expected_len: usize)
where
    E: Handle<Path = Uuid, Query = Page, Body = (), Response = Paged<T>>,
{
    let all = whole::<E, T>(fx, path).await;
    assert_eq!(all.len(), expected_len, "{}", E::INFO.name);
    for limit in [1, 3, 4] {
        assert_eq!(walk::<E, T>(fx, path, limit).await, all, "{} by {limit}", E::INFO.name);
    }
}

#[tokio::test]
async fn the_lists_of_a_task_a_thread_and_a_project_walk_by_cursor() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "Main").await;
    for i in 0..7 {
        fx.board.create_step(&fx.owner, t.id, title(&format!("step {i}"))).await.unwrap();
        let other = fx.task(&p, &format!("Other {i}")).await;
        let link = NewLink { target_id: other.id, link_type: LinkType::RelatesTo };
        fx.board.create_link(&fx.owner, t.id, link).await.unwrap();
        let priority = if i % 2 == 0 { Priority::High } else { Priority::Low };
        let patch = TaskPatch { priority: Patch::Value(priority), ..Default::default() };
        fx.board.update_task(&fx.owner, t.id, patch).await.unwrap();
        fx.agent(&format!("agent-{i}")).await;
    }
    let root = post(&fx, NewMessage { chat_id: p.chat_id, ..message("root") }).await;
    for i in 0..6 {
        post(&fx, NewMessage { chat_id: p.chat_id, parent_id: Some(root), ..message(&format!("reply {i}")) })
            .await;
    }
    for m in fx.board.list_members(false, Page::default()).await.unwrap() {
        let _ = fx.board.add_project_member(&fx.owner, p.id, m.id).await;
    }

    same_walk::<ListSteps, Step>(&fx, t.id, 7).await;
    same_walk::<ListLinks, TaskLink>(&fx, t.id, 7).await;
    same_walk::<ListActions, TaskAction>(&fx, t.id, 8).await;
    same_walk::<ListReplies, Message>(&fx, root, 6).await;
    same_walk::<ListProjectMembers, ProjectMember>(&fx, p.id, 8).await;
    let members: Vec<_> = whole::<ListProjectMembers, ProjectMember>(&fx, p.id).await;
    assert_eq!(members[0].slug, "owner", "members in the order they were created");
    assert_eq!(members[7].slug, "agent-6");
}

#[tokio::test]
async fn messages_page_back_from_the_newest_by_cursor() {
    let fx = board().await;
    let p = fx.project("web").await;
    for i in 0..11 {
        post(&fx, NewMessage { chat_id: p.chat_id, ..message(&format!("m{i}")) }).await;
    }
    let caller = Caller::member(fx.owner.clone());
    let list = |limit, offset, cursor| {
        let filter =
            MessageFilter { chat_id: p.chat_id, limit: Some(limit), offset, cursor, ..Default::default() };
        api::call::<ListMessages>(&fx.board, &caller, (), filter, ())
    };
    let contents = |page: &Paged<Message>| page.iter().map(|m| m.content.clone()).collect::<Vec<_>>();

    let newest = list(4, None, None).await.unwrap();
    assert_eq!(contents(&newest), ["m7", "m8", "m9", "m10"], "the newest page, in chronological order");
    let older = list(4, None, newest.next.clone()).await.unwrap();
    assert_eq!(contents(&older), ["m3", "m4", "m5", "m6"]);
    let oldest = list(4, None, older.next.clone()).await.unwrap();
    assert_eq!(contents(&oldest), ["m0", "m1", "m2"]);
    assert!(oldest.next.is_none(), "no page before the first message");
    // An offset counts from the cursor.
    let skipped = list(2, Some(1), newest.next.clone()).await.unwrap();
    assert_eq!(contents(&skipped), ["m4", "m5"]);

    let tasks = api::call::<ListSteps>(&fx.board, &caller, Uuid::nil(), Page::default(), ()).await;
    assert_eq!(kind(tasks), taskboard_core::ErrorKind::NotFound);
    let foreign = Some(newest.next.clone().unwrap());
    let steps_cursor = api::call::<ListActions>(
        &fx.board,
        &caller,
        fx.task(&p, "T").await.id,
        Page { cursor: foreign, ..Page::default() },
        (),
    )
    .await;
    assert_eq!(kind(steps_cursor), taskboard_core::ErrorKind::Validation, "a cursor of another list");
}

fn message(content: &str) -> NewMessage {
    NewMessage { content: content.to_string(), ..Default::default() }
}

async fn post(fx: &Fx, new: NewMessage) -> Uuid {
    fx.board.post_message(&fx.owner, new).await.unwrap().id
}
