//! Chat messages and task comments (REST-INTERFACE Messages; DECISIONS
//! 2.1, 6.1–6.3; docs/decisions.md 1.a, 1.b, 6.a).

use taskboard_core::ErrorKind;
use taskboard_core::api::{MessageFilter, NewMessage, Page};
use taskboard_core::model::*;
use uuid::Uuid;

use crate::support::*;

fn in_chat(p: &Project, content: &str) -> NewMessage {
    NewMessage { chat_id: p.chat_id, content: content.into(), ..Default::default() }
}

fn on_task(t: &Task, content: &str) -> NewMessage {
    NewMessage { task_id: Some(t.id), content: content.into(), ..Default::default() }
}

#[tokio::test]
async fn a_message_needs_a_chat_or_a_task() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "a").await;
    let neither = NewMessage { content: "x".into(), ..Default::default() };
    assert_eq!(kind(fx.board.post_message(&fx.owner, neither).await), ErrorKind::BadRequest);
    let both = NewMessage { task_id: Some(t.id), ..in_chat(&p, "x") };
    assert_eq!(kind(fx.board.post_message(&fx.owner, both).await), ErrorKind::Validation);
}

#[tokio::test]
async fn unknown_chat_task_or_parent_is_not_found() {
    let fx = board().await;
    let p = fx.project("web").await;
    let nobody = Uuid::now_v7();
    let b = &fx.board;
    let o = &fx.owner;
    let msg = |m: NewMessage| b.post_message(o, m);
    assert_eq!(
        kind(msg(NewMessage { chat_id: Some(nobody), content: "x".into(), ..Default::default() }).await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(msg(NewMessage { task_id: Some(nobody), content: "x".into(), ..Default::default() }).await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(msg(NewMessage { parent_id: Some(nobody), ..in_chat(&p, "x") }).await),
        ErrorKind::NotFound
    );
    assert_eq!(kind(b.replies(nobody, Page::default()).await), ErrorKind::NotFound);
}

#[tokio::test]
async fn a_replys_parent_must_be_in_the_same_chat_or_task() {
    let fx = board().await;
    let web = fx.project("web").await;
    let api = fx.project("api").await;
    let t = fx.task(&web, "a").await;
    let root = fx.board.post_message(&fx.owner, in_chat(&web, "root")).await.unwrap();
    for elsewhere in [in_chat(&api, "reply"), on_task(&t, "reply")] {
        let m = NewMessage { parent_id: Some(root.id), ..elsewhere };
        assert_eq!(kind(fx.board.post_message(&fx.owner, m).await), ErrorKind::Validation);
    }
    let ok = NewMessage { parent_id: Some(root.id), ..in_chat(&web, "reply") };
    assert_eq!(fx.board.post_message(&fx.owner, ok).await.unwrap().parent_id, Some(root.id));
}

#[tokio::test]
async fn mentions_are_member_ids_and_unknown_ones_are_422() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    let m = NewMessage { mentions: vec![ana.id(), ana.id()], ..in_chat(&p, "hello") };
    let m = fx.board.post_message(&fx.owner, m).await.unwrap();
    assert_eq!(m.mentions, [MemberRef { id: ana.id(), slug: "ana".into(), name: "ana name".into() }]);
    let bad = NewMessage { mentions: vec![Uuid::now_v7()], ..in_chat(&p, "hello") };
    assert_eq!(kind(fx.board.post_message(&fx.owner, bad).await), ErrorKind::Validation);
}

#[tokio::test]
async fn at_slug_words_naming_an_active_member_are_mentions() {
    let fx = board().await;
    let p = fx.project("web").await;
    let ana = fx.human("ana", Role::Member).await;
    let bot = fx.agent("bot-1").await;
    let gone = fx.human("gone", Role::Member).await;
    fx.board.delete_member(&fx.owner, gone.id()).await.unwrap();
    let m = NewMessage {
        mentions: vec![bot.id()],
        ..in_chat(&p, "@ana and @bot-1, also @gone, @nobody and mail@ana.example")
    };
    let m = fx.board.post_message(&fx.owner, m).await.unwrap();
    let ids: Vec<Uuid> = m.mentions.iter().map(|r| r.id).collect();
    assert_eq!(ids, [bot.id(), ana.id()]);
}

#[tokio::test]
async fn the_author_comes_from_the_credentials_and_agents_post_as_agents() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let m = fx.board.post_message(&bot, in_chat(&p, "beep")).await.unwrap();
    assert_eq!(m.author_type, AuthorType::Agent);
    assert_eq!(m.author_id, Some(bot.id()));
    assert_eq!(m.author.unwrap().slug, "bot");
    assert_eq!(m.actor, None);
    let m = fx.board.post_message(&fx.owner, in_chat(&p, "hi")).await.unwrap();
    assert_eq!(m.author_type, AuthorType::Human);
    assert_eq!(m.author_id, Some(fx.owner.id()));
}

#[tokio::test]
async fn content_may_be_empty_only_with_attachments() {
    let fx = board().await;
    let p = fx.project("web").await;
    assert_eq!(kind(fx.board.post_message(&fx.owner, in_chat(&p, "  ")).await), ErrorKind::Validation);
    let up = fx.board.upload(&fx.owner, "a.png", None, &b"png"[..]).await.unwrap();
    let m = NewMessage { attachments: vec![up], ..in_chat(&p, "") };
    fx.board.post_message(&fx.owner, m).await.unwrap();
    let long = "x".repeat(100_001);
    assert_eq!(kind(fx.board.post_message(&fx.owner, in_chat(&p, &long)).await), ErrorKind::Validation);
    fx.board.post_message(&fx.owner, in_chat(&p, &long[1..])).await.unwrap();
}

#[tokio::test]
async fn the_list_holds_the_last_n_in_chronological_order_with_offset() {
    let fx = board().await;
    let p = fx.project("web").await;
    for i in 0..12 {
        fx.board.post_message(&fx.owner, in_chat(&p, &format!("m{i}"))).await.unwrap();
    }
    let page = |limit, offset| {
        let f = MessageFilter { chat_id: p.chat_id, limit, offset, ..Default::default() };
        let (board, _owner) = (fx.board.clone(), fx.owner.clone());
        async move { board.list_messages(f).await.unwrap().into_iter().map(|m| m.content).collect::<Vec<_>>() }
    };
    assert_eq!(page(Some(3), None).await, ["m9", "m10", "m11"]);
    assert_eq!(page(Some(3), Some(2)).await, ["m7", "m8", "m9"], "offset skips the newest");
    assert_eq!(page(None, None).await.len(), 12, "default limit 50");
    assert_eq!(page(Some(5), Some(10)).await, ["m0", "m1"]);
    assert!(page(Some(5), Some(12)).await.is_empty());
    for bad in [0, 201] {
        let f = MessageFilter { chat_id: p.chat_id, limit: Some(bad), ..Default::default() };
        assert_eq!(kind(fx.board.list_messages(f).await), ErrorKind::Validation);
    }
}

#[tokio::test]
async fn the_default_page_is_fifty_and_the_maximum_two_hundred() {
    let fx = board().await;
    let p = fx.project("web").await;
    for i in 0..210 {
        fx.board.post_message(&fx.owner, in_chat(&p, &format!("m{i}"))).await.unwrap();
    }
    let f = MessageFilter { chat_id: p.chat_id, ..Default::default() };
    let page = fx.board.list_messages(f).await.unwrap();
    assert_eq!(page.len(), 50);
    assert_eq!(page.last().unwrap().content, "m209");
    let f = MessageFilter { chat_id: p.chat_id, limit: Some(200), ..Default::default() };
    let page = fx.board.list_messages(f).await.unwrap();
    assert_eq!(page.len(), 200);
    assert_eq!(page[0].content, "m10");
}

#[tokio::test]
async fn lists_by_chat_task_and_thread_and_of_everything_without_filters() {
    let fx = board().await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "a").await; // one system message to the task, one to the chat
    let root = fx.board.post_message(&fx.owner, in_chat(&p, "root")).await.unwrap();
    let reply = NewMessage { parent_id: Some(root.id), ..in_chat(&p, "reply") };
    fx.board.post_message(&fx.owner, reply).await.unwrap();
    fx.board.post_message(&fx.owner, on_task(&t, "comment")).await.unwrap();
    let list = |f: MessageFilter| {
        let (board, _owner) = (fx.board.clone(), fx.owner.clone());
        async move { board.list_messages(f).await.unwrap().into_iter().map(|m| m.content).collect::<Vec<_>>() }
    };
    let chat = list(MessageFilter { chat_id: p.chat_id, ..Default::default() }).await;
    assert_eq!(chat[1..], ["root", "reply"]);
    let task = list(MessageFilter { task_id: Some(t.id), ..Default::default() }).await;
    assert_eq!(task.len(), 2);
    assert_eq!(task[1], "comment");
    let thread = list(MessageFilter { parent_id: Some(root.id), ..Default::default() }).await;
    assert_eq!(thread, ["reply"]);
    let all = list(MessageFilter::default()).await;
    assert_eq!(all.len(), 5);
    assert_eq!(all[2..], ["root", "reply", "comment"]);
}

#[tokio::test]
async fn replies_are_sorted_by_creation_time() {
    let fx = board().await;
    let p = fx.project("web").await;
    let root = fx.board.post_message(&fx.owner, in_chat(&p, "root")).await.unwrap();
    for i in 0..5 {
        let m = NewMessage { parent_id: Some(root.id), ..in_chat(&p, &format!("r{i}")) };
        fx.board.post_message(&fx.owner, m).await.unwrap();
    }
    let replies = fx.board.replies(root.id, Page::default()).await.unwrap();
    assert_eq!(
        replies.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(),
        ["r0", "r1", "r2", "r3", "r4"]
    );
    assert!(replies.windows(2).all(|w| w[0].created_at <= w[1].created_at));
    assert!(fx.board.replies(replies[0].id, Page::default()).await.unwrap().is_empty());
}

#[tokio::test]
async fn attachments_bind_unbound_uploads_once() {
    let fx = board().await;
    let p = fx.project("web").await;
    let up = fx.board.upload(&fx.owner, "notes.txt", Some("text/plain"), &b"hello"[..]).await.unwrap();
    assert_eq!((up.filename.as_str(), up.mime_type.as_str(), up.size), ("notes.txt", "text/plain", 5));
    let m = NewMessage { attachments: vec![up.clone()], ..in_chat(&p, "see") };
    let m = fx.board.post_message(&fx.owner, m).await.unwrap();
    assert_eq!(
        m.attachments,
        [Attachment {
            id: up.file_id,
            filename: "notes.txt".into(),
            mime_type: "text/plain".into(),
            size: 5
        }]
    );
    let again = NewMessage { attachments: vec![up.clone()], ..in_chat(&p, "again") };
    assert_eq!(kind(fx.board.post_message(&fx.owner, again).await), ErrorKind::Validation);
    let unknown = UploadedFile { file_id: Uuid::now_v7(), ..up };
    let bad = NewMessage { attachments: vec![unknown], ..in_chat(&p, "x") };
    assert_eq!(kind(fx.board.post_message(&fx.owner, bad).await), ErrorKind::Validation);
    // A refused message binds nothing.
    let up2 = fx.board.upload(&fx.owner, "b.txt", None, &b"b"[..]).await.unwrap();
    let refused =
        NewMessage { attachments: vec![up2.clone()], mentions: vec![Uuid::now_v7()], ..in_chat(&p, "x") };
    assert_eq!(kind(fx.board.post_message(&fx.owner, refused).await), ErrorKind::Validation);
    let ok = NewMessage { attachments: vec![up2], ..in_chat(&p, "x") };
    fx.board.post_message(&fx.owner, ok).await.unwrap();
}
