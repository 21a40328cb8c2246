//! Events (REST-INTERFACE Events; DECISIONS 7.1–7.4; docs/decisions.md
//! 7.a, 7.j): every change yields events numbered by a board-wide seq, who
//! sees them, replay and resume, retention across restarts, memory bounded
//! by bytes with older events read from the store.

use std::sync::Arc;

use taskboard_core::api::{MemberPatch, NewMessage, NewTask, Patch, TaskPatch};
use taskboard_core::events::{EventKind, RETAINED_EVENTS};
use taskboard_core::model::*;
use taskboard_core::{BoardOptions, Event};

use crate::support::*;

fn seqs(events: &[Arc<Event>]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

#[track_caller]
fn assert_contiguous(events: &[Arc<Event>], from: u64, to: u64) {
    assert_eq!(seqs(events), (from..=to).collect::<Vec<_>>(), "no gap, no duplicate, in order");
}

#[tokio::test]
async fn every_change_yields_events_with_increasing_seq() {
    let fx = board().await;
    let start = fx.board.latest_seq();
    assert!(start >= 1, "the bootstrap owner's member.created");
    let mut sub = fx.board.subscribe(Some(start));
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task_with(&p, NewTask { labels: labels(&["new-label"]), ..new_task("a") }).await;
    fx.board.take(&bot, t.id).await.unwrap();
    fx.board.create_step(&fx.owner, t.id, title("s")).await.unwrap();
    fx.board
        .post_message(&bot, NewMessage { chat_id: p.chat_id, content: "hi".into(), ..Default::default() })
        .await
        .unwrap();
    fx.board.delete_task(&fx.owner, t.id).await.unwrap();
    let events = drain(&mut sub);
    assert_contiguous(&events, start + 1, fx.board.latest_seq());
    assert_eq!(
        kinds(&events),
        [
            "project.created",
            "member.created",
            "label.created",
            "task.created",
            "message.new",  // creation, to the task's comments
            "message.new",  // and to the project chat
            "task.updated", // take: the new state, then the system message
            "message.new",
            "step.created",
            "message.new",
            "task.deleted",
        ]
    );
    assert!(events.windows(2).all(|w| w[0].ts <= w[1].ts));
}

#[tokio::test]
async fn event_payloads_have_the_specified_shapes() {
    let fx = board().await;
    let mut sub = fx.board.subscribe(None);
    let p = fx.project("web").await;
    let (bot, _) = fx.agent_with("bot", AgentConfig::default()).await;
    let t = fx.task(&p, "a").await;
    let updated = fx
        .board
        .update_task(
            &fx.owner,
            t.id,
            TaskPatch { status: Patch::Value(TaskStatus::Todo), ..Default::default() },
        )
        .await
        .unwrap();
    fx.board.set_status(&bot, MemberStatus::Busy).await.unwrap();
    let config = AgentConfig { labels: vec!["x".into()], ..Default::default() };
    let patch = MemberPatch { agent_config: Patch::Value(config.clone()), ..Default::default() };
    fx.board.update_member(&fx.owner, bot.id(), patch).await.unwrap();
    fx.board.delete_task(&fx.owner, t.id).await.unwrap();
    let events = drain(&mut sub);
    let find =
        |kind: &str| events.iter().find(|e| e.kind.as_str() == kind).unwrap_or_else(|| panic!("no {kind}"));
    let project: Project = serde_json::from_value(find("project.created").data()).unwrap();
    assert_eq!(project, p);
    let created: Task = serde_json::from_value(find("task.created").data()).unwrap();
    assert_eq!(created, t);
    let task_updated: Task = serde_json::from_value(find("task.updated").data()).unwrap();
    assert_eq!(task_updated, updated);
    let message: Message = serde_json::from_value(find("message.new").data()).unwrap();
    assert_eq!(message.author_type, AuthorType::System);
    assert_eq!(find("agent.status").data(), serde_json::json!({"member_id": bot.id(), "status": "busy"}));
    assert_eq!(
        find("config.updated").data(),
        serde_json::json!({"member_id": bot.id(), "agent_config": serde_json::to_value(&config).unwrap()})
    );
    assert_eq!(
        find("task.deleted").data(),
        serde_json::json!({"id": t.id, "key": "WEB-1", "project_id": p.id})
    );
    // The frame: {"type", "seq", "ts", "data"}.
    let e = find("task.deleted");
    let frame: serde_json::Value = serde_json::from_str(&e.frame()).unwrap();
    assert_eq!(frame["type"], "task.deleted");
    assert_eq!(frame["seq"], e.seq);
    assert_eq!(frame["data"], e.data());
    assert!(frame["ts"].as_str().unwrap().ends_with('Z'));
    let mut keys: Vec<&str> = frame.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["data", "seq", "ts", "type"]);
}

/// DECISIONS 7.3, through `Event::visible_to`, the rule the server applies.
#[tokio::test]
async fn recipients_follow_the_recipient_rule() {
    let fx = board().await;
    let p = fx.project("web").await;
    let member = fx.human("member", Role::Member).await;
    let outsider = fx.human("outsider", Role::Member).await;
    let all = AgentConfig { chat_listen: Listen::All, task_listen: Listen::All, ..Default::default() };
    let (all_bot, _) = fx.agent_with("all-bot", all).await;
    // Mentions only: an agent's default (docs/decisions.md 22.h).
    let quiet = AgentConfig::default();
    let (quiet_bot, _) = fx.agent_with("quiet-bot", quiet).await;
    for m in [&member, &all_bot, &quiet_bot] {
        fx.board.add_project_member(&fx.owner, p.id, m.id()).await.unwrap();
    }
    let viewers = [&fx.owner, &member, &outsider, &all_bot, &quiet_bot].map(|a| fx.board.viewer(a));
    let mut sub = fx.board.subscribe(None);
    let mut seen_by = || {
        let events = drain(&mut sub);
        events
            .into_iter()
            .map(|e| (e.kind.as_str().to_string(), viewers.each_ref().map(|v| e.visible_to(v))))
            .collect::<Vec<_>>()
    };

    // A chat message: the project's members; a mentions-only agent only when mentioned.
    let chat = |content: &str, mentions: Vec<uuid::Uuid>| NewMessage {
        chat_id: p.chat_id,
        content: content.into(),
        mentions,
        ..Default::default()
    };
    fx.board.post_message(&member, chat("hello", vec![])).await.unwrap();
    assert_eq!(seen_by(), [("message.new".to_string(), [true, true, false, true, false])]);
    fx.board.post_message(&member, chat("@quiet-bot look", vec![])).await.unwrap();
    assert_eq!(seen_by(), [("message.new".to_string(), [true, true, false, true, true])]);
    fx.board.post_message(&member, chat("hey outsider", vec![outsider.id()])).await.unwrap();
    assert_eq!(
        seen_by(),
        [("message.new".to_string(), [true, true, false, true, false])],
        "a mention does not open a chat to a non-member"
    );

    // A task comment: watchers, assignee, reviewer and the mentioned.
    let t = fx
        .board
        .create_task(&member, p.id, NewTask { reviewer_id: Some(quiet_bot.id()), ..new_task("t") })
        .await
        .unwrap();
    let created = seen_by();
    let comment_on_task = &created.iter().filter(|(k, _)| k == "message.new").collect::<Vec<_>>()[0].1;
    assert_eq!(
        *comment_on_task,
        [false, true, false, false, false],
        "the creator watches; quiet-bot only on mention"
    );
    let comment = |content: &str, mentions: Vec<uuid::Uuid>| NewMessage {
        task_id: Some(t.id),
        content: content.into(),
        mentions,
        ..Default::default()
    };
    fx.board.assign(&fx.owner, t.id, all_bot.id()).await.unwrap();
    seen_by();
    fx.board.post_message(&member, comment("progress?", vec![outsider.id()])).await.unwrap();
    assert_eq!(seen_by(), [("message.new".to_string(), [false, true, true, true, false])]);
    fx.board.post_message(&member, comment("@quiet-bot please review", vec![])).await.unwrap();
    assert_eq!(seen_by(), [("message.new".to_string(), [false, true, false, true, true])]);

    // config.updated only to that agent; everything else to everyone.
    let louder = AgentConfig { chat_listen: Listen::All, ..Default::default() };
    let patch = MemberPatch { agent_config: Patch::Value(louder), ..Default::default() };
    fx.board.update_member(&fx.owner, quiet_bot.id(), patch).await.unwrap();
    let got = seen_by();
    assert_eq!(
        got.iter().find(|(k, _)| k == "config.updated").unwrap().1,
        [false, false, false, false, true]
    );
    assert_eq!(got.iter().find(|(k, _)| k == "member.updated").unwrap().1, [true; 5]);
}

#[tokio::test]
async fn a_viewer_applies_its_new_configuration_at_once() {
    let fx = board().await;
    let p = fx.project("web").await;
    let loud = AgentConfig { chat_listen: Listen::All, ..Default::default() };
    let (bot, _) = fx.agent_with("bot", loud).await;
    fx.board.add_project_member(&fx.owner, p.id, bot.id()).await.unwrap();
    let mut viewer = fx.board.viewer(&bot);
    let mut sub = fx.board.subscribe(None);
    let quiet = AgentConfig { chat_listen: Listen::Mentions, ..Default::default() };
    fx.board
        .update_member(
            &fx.owner,
            bot.id(),
            MemberPatch { agent_config: Patch::Value(quiet), ..Default::default() },
        )
        .await
        .unwrap();
    fx.board
        .post_message(&fx.owner, NewMessage { chat_id: p.chat_id, content: "x".into(), ..Default::default() })
        .await
        .unwrap();
    let mut visible = Vec::new();
    for e in drain(&mut sub) {
        viewer.observe(&e);
        if e.visible_to(&viewer) {
            visible.push(e.kind.as_str().to_string());
        }
    }
    assert_eq!(visible, ["member.updated", "config.updated"], "the chat message is filtered already");
}

/// Subscribing while writers run: the replay from `since` and the live
/// stream together hold every later event exactly once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_replays_from_since_then_continues_live_with_no_gap_and_no_duplicate() {
    let fx = board().await;
    let bot = fx.agent("bot").await;
    let since = fx.board.latest_seq();
    let writer = {
        let (board, bot) = (fx.board.clone(), bot.clone());
        tokio::spawn(async move {
            for i in 0..400 {
                let s = if i % 2 == 0 { MemberStatus::Busy } else { MemberStatus::Online };
                board.set_status(&bot, s).await.unwrap();
            }
        })
    };
    // Subscribe somewhere in the middle of the writes.
    while fx.board.latest_seq() < since + 100 {
        tokio::task::yield_now().await;
    }
    let mut sub = fx.board.subscribe(Some(since));
    assert!(!sub.resync_required);
    assert!(sub.latest >= since + 100);
    writer.await.unwrap();
    let last = fx.board.latest_seq();
    assert_eq!(last, since + 400);
    let mut events: Vec<Arc<Event>> = Vec::new();
    while events.last().is_none_or(|e| e.seq < last) {
        events.push(sub.next().await.unwrap());
    }
    assert_contiguous(&events, since + 1, last);
}

#[tokio::test]
async fn subscribing_without_since_gets_only_live_events_and_since_now_replays_nothing() {
    let fx = board().await;
    let latest = fx.board.latest_seq();
    let mut now = fx.board.subscribe(Some(latest));
    let mut live = fx.board.subscribe(None);
    assert!(!now.replaying() && !now.resync_required);
    assert_eq!(live.latest, latest);
    fx.project("web").await;
    assert_eq!(seqs(&drain(&mut now)), [latest + 1]);
    assert_eq!(seqs(&drain(&mut live)), [latest + 1]);
}

#[tokio::test]
async fn events_after_reopen_continue_the_seq() {
    let fx = board_on_disk().await;
    let p = fx.project("web").await;
    fx.task(&p, "a").await;
    let before = fx.board.latest_seq();
    let fx = fx.reopen().await;
    assert_eq!(fx.board.latest_seq(), before);
    let mut sub = fx.board.subscribe(Some(0));
    assert!(!sub.resync_required);
    let replayed = drain(&mut sub);
    assert_contiguous(&replayed, 1, before);
    fx.task(&p, "b").await;
    let after = drain(&mut sub);
    assert_eq!(after[0].seq, before + 1, "numbering continues where it stopped");
    assert_contiguous(&after, before + 1, fx.board.latest_seq());
    assert_eq!(fx.get(after[0].data()["id"].as_str().unwrap().parse().unwrap()).await.number, 2);
}

/// DECISIONS 7.4: at least the last 10,000 events are retained across
/// restarts; older ones call for a resync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_events_are_retained_across_a_restart() {
    let options = BoardOptions { event_buffer: 32, ..Default::default() };
    let fx = board_on_disk_with(options).await;
    let bot = fx.agent("bot").await;
    // One agent.status event per write; concurrent writers so that group
    // commit batches them.
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..32 {
        let (board, bot) = (fx.board.clone(), bot.clone());
        writers.spawn(async move {
            for i in 0..330 {
                let s = if (w + i) % 2 == 0 { MemberStatus::Busy } else { MemberStatus::Online };
                board.set_status(&bot, s).await.unwrap();
            }
        });
    }
    writers.join_all().await;
    let latest = fx.board.latest_seq();
    assert!(latest > 10_560, "{latest}");
    let fx = fx.reopen().await;
    assert_eq!(fx.board.latest_seq(), latest);
    let mut sub = fx.board.subscribe(Some(latest - 10_000));
    assert!(!sub.resync_required);
    assert_contiguous(&drain(&mut sub), latest - 9_999, latest);
    let mut old = fx.board.subscribe(Some(1));
    assert!(old.resync_required, "events after 1 are no longer retained");
    assert!(drain(&mut old).is_empty(), "no replay after a resync (7.a)");
    // The store keeps exactly the retention: read back after the restart,
    // the oldest stored event is the first one a resume may start after.
    let retained = RETAINED_EVENTS as u64;
    let mut all = fx.board.subscribe(Some(latest - retained));
    assert!(!all.resync_required);
    assert_eq!(drain(&mut all).len() as u64, retained);
    assert!(fx.board.subscribe(Some(latest - retained - 1)).resync_required, "older events are pruned");
}

/// Bytes an event stream may hold in the tests below: room for a handful
/// of the 8 kB messages they post.
const SMALL_MEMORY: usize = 64 * 1024;

fn small_memory() -> BoardOptions {
    BoardOptions { event_memory: SMALL_MEMORY, ..Default::default() }
}

/// Posts `n` chat messages of about 8 kB each, `tag` and their number
/// leading each; returns their contents.
async fn post_large(fx: &Fx, chat_id: Option<uuid::Uuid>, tag: &str, n: usize) -> Vec<String> {
    let mut contents = Vec::new();
    for i in 0..n {
        let content = format!("{tag} {i:04} {}", "x".repeat(8_000));
        let new = NewMessage { chat_id, content: content.clone(), ..Default::default() };
        fx.board.post_message(&fx.owner, new).await.unwrap();
        contents.push(content);
    }
    contents
}

/// Every event after the subscription's position up to `until`, waiting
/// for them as a live client does.
async fn take_until(sub: &mut taskboard_core::Subscription, until: u64) -> Vec<Arc<Event>> {
    let mut out = Vec::new();
    while sub.position() < until {
        out.push(sub.next().await.unwrap());
    }
    out
}

fn contents(events: &[Arc<Event>]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::MessageNew)
        .map(|e| e.data()["content"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_events_held_in_memory_never_exceed_their_bound() {
    let fx = board_with(small_memory()).await;
    let p = fx.project("web").await;
    let mut live = fx.board.subscribe(None);
    let start = fx.board.latest_seq();
    let posted = post_large(&fx, p.chat_id, "m", 60).await;
    let memory = fx.board.event_memory();
    assert_eq!(memory.bound, SMALL_MEMORY);
    assert!(memory.peak_bytes <= SMALL_MEMORY, "{memory:?}");
    assert!(memory.bytes <= SMALL_MEMORY && memory.bytes > 0, "{memory:?}");
    assert!(memory.events >= 4 && memory.events < 60, "only the newest are held: {memory:?}");
    // A subscriber that fell behind the memory window still gets every
    // event, the older ones from the store.
    let got = take_until(&mut live, fx.board.latest_seq()).await;
    assert_contiguous(&got, start + 1, fx.board.latest_seq());
    assert_eq!(contents(&got), posted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_from_an_event_no_longer_in_memory_replays_from_the_store_then_goes_live() {
    let fx = board_with(small_memory()).await;
    let p = fx.project("web").await;
    let since = fx.board.latest_seq();
    let mut posted = post_large(&fx, p.chat_id, "old", 40).await;
    let latest = fx.board.latest_seq();
    assert!(fx.board.event_memory().events < 40, "the first messages left memory");

    let mut sub = fx.board.subscribe(Some(since));
    assert!(!sub.resync_required && sub.replaying());
    // Writers go on while the replay is read.
    let writer = {
        let (board, owner, chat) = (fx.board.clone(), fx.owner.clone(), p.chat_id);
        tokio::spawn(async move {
            for i in 0..20 {
                let new = NewMessage { chat_id: chat, content: format!("new {i}"), ..Default::default() };
                board.post_message(&owner, new).await.unwrap();
            }
        })
    };
    let mut got = take_until(&mut sub, latest).await;
    assert!(!sub.replaying());
    writer.await.unwrap();
    let end = fx.board.latest_seq();
    got.extend(take_until(&mut sub, end).await);
    assert_contiguous(&got, since + 1, end);
    posted.extend((0..20).map(|i| format!("new {i}")));
    assert_eq!(contents(&got), posted, "each message once, in order, as posted");
    assert!(fx.board.event_memory().peak_bytes <= SMALL_MEMORY);
}

#[tokio::test]
async fn after_a_restart_nothing_is_loaded_and_resumes_read_the_store() {
    let fx = board_on_disk_with(small_memory()).await;
    let p = fx.project("web").await;
    let since = fx.board.latest_seq();
    let posted = post_large(&fx, p.chat_id, "before", 30).await;
    let fx = fx.reopen().await;
    assert_eq!(fx.board.event_memory().events, 0, "start-up reads no event");
    let latest = fx.board.latest_seq();
    let mut sub = fx.board.subscribe(Some(since));
    assert!(!sub.resync_required);
    let replayed = take_until(&mut sub, latest).await;
    assert_contiguous(&replayed, since + 1, latest);
    assert_eq!(contents(&replayed), posted);
    // Rendered from the stored message, the event is the message.
    let message: Message = serde_json::from_value(replayed.last().unwrap().data()).unwrap();
    assert_eq!(message.content, *posted.last().unwrap());
    assert_eq!(message.author.unwrap().id, fx.owner.id());
    post_large(&fx, p.chat_id, "after", 1).await;
    let live = take_until(&mut sub, fx.board.latest_seq()).await;
    assert_eq!(seqs(&live), [latest + 1]);
}

/// A retained `message.new` whose message was deleted since (with its
/// task or project) still replays the message as it was.
#[tokio::test]
async fn a_deleted_message_replays_as_it_was() {
    let options = BoardOptions { event_memory: 0, ..Default::default() };
    let fx = board_on_disk_with(options).await;
    let p = fx.project("web").await;
    let t = fx.task(&p, "a").await;
    let since = fx.board.latest_seq();
    let comment = NewMessage { task_id: Some(t.id), content: "a comment".into(), ..Default::default() };
    let posted = fx.board.post_message(&fx.owner, comment).await.unwrap();
    post_large(&fx, p.chat_id, "chat", 2).await;
    let before: Vec<Arc<Event>> = drain(&mut fx.board.subscribe(Some(since)));
    fx.board.delete_task(&fx.owner, t.id).await.unwrap();
    fx.board.delete_project(&fx.owner, p.id).await.unwrap();
    let fx = fx.reopen().await;
    let after = drain(&mut fx.board.subscribe(Some(since)));
    assert_eq!(after[..before.len()], before[..], "the same events, data included");
    let replayed: Message = serde_json::from_value(after[0].data()).unwrap();
    assert_eq!(replayed, posted);
    assert_eq!(kinds(&after[before.len()..]), ["task.deleted", "project.deleted"]);
}

/// The same board, reopened: a subscription from the start sees the
/// events a subscription from memory saw, rendered alike.
#[tokio::test]
async fn events_read_from_the_store_equal_those_held_in_memory() {
    let fx = board_on_disk().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    fx.board.add_project_member(&fx.owner, p.id, bot.id()).await.unwrap();
    let t = fx.task(&p, "a").await;
    fx.board.take(&bot, t.id).await.unwrap();
    let chat = NewMessage { chat_id: p.chat_id, content: "@bot hi".into(), ..Default::default() };
    fx.board.post_message(&fx.owner, chat).await.unwrap();
    let in_memory = drain(&mut fx.board.subscribe(Some(0)));
    assert!(fx.board.event_memory().events >= in_memory.len());
    let fx = fx.reopen().await;
    let stored = drain(&mut fx.board.subscribe(Some(0)));
    assert_eq!(stored, in_memory);
}

#[tokio::test]
async fn a_demoted_admins_open_stream_stops_receiving_admin_events_at_once() {
    let options = BoardOptions {
        webhooks: taskboard_core::webhooks::WebhookOptions { allow_private: true, ..Default::default() },
        ..Default::default()
    };
    let fx = board_with(options).await;
    let admin = fx.human("ada", Role::Admin).await;
    let mut stream = fx.board.follow(&admin, None);
    let webhook = |url: &str| taskboard_core::api::NewWebhook {
        url: url.into(),
        events: None,
        project_id: None,
        description: None,
    };
    fx.board.create_webhook(&fx.owner, webhook("http://127.0.0.1:9/one")).await.unwrap();
    let kinds = |batch: taskboard_core::board::EventBatch| -> Vec<String> {
        batch.events.iter().map(|e| e.kind.to_string()).collect()
    };
    let before = kinds(stream.next_batch(100, std::time::Duration::ZERO).await);
    assert!(before.iter().any(|k| k == "webhook.created"), "an admin sees admin events: {before:?}");
    let demote = MemberPatch { role: Patch::Value(Role::Member), ..Default::default() };
    fx.board.update_member(&fx.owner, admin.id(), demote).await.unwrap();
    fx.board.create_webhook(&fx.owner, webhook("http://127.0.0.1:9/two")).await.unwrap();
    fx.project("web").await;
    let after = kinds(stream.next_batch(100, std::time::Duration::ZERO).await);
    assert!(after.iter().any(|k| k == "member.updated"), "{after:?}");
    assert!(after.iter().any(|k| k == "project.created"), "{after:?}");
    assert!(
        !after.iter().any(|k| k == "webhook.created"),
        "a demoted admin's stream got an admin event: {after:?}"
    );
}
