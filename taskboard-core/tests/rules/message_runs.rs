//! Runs answering a message: who may ask, which agents see the message,
//! one open run per message and agent, no lease and no move of a
//! commented task, events of a chat run to the chat's audience.

use taskboard_core::api::{NewMessage, NewMessageRun, RunListQuery, RunPatch};
use taskboard_core::events::{Audience, EventKind};
use taskboard_core::model::*;
use taskboard_core::runs::*;
use taskboard_core::{Actor, ErrorKind};
use uuid::Uuid;

use crate::support::*;

fn ask(agent: &Actor) -> NewMessageRun {
    NewMessageRun { agent_id: agent.id(), runner: None }
}

async fn say(fx: &Fx, by: &Actor, chat: Option<Uuid>, task: Option<Uuid>, text: &str) -> Message {
    let new = NewMessage { chat_id: chat, task_id: task, content: text.into(), ..Default::default() };
    fx.board.post_message(by, new).await.unwrap()
}

#[tokio::test]
async fn a_chat_message_run_goes_to_the_chats_audience_and_one_is_open_at_a_time() {
    let fx = board().await;
    let p = fx.project("web").await;
    let chat = p.chat_id.unwrap();
    let bot = fx.agent("bot").await;
    let other = fx.agent("other").await;
    fx.board.add_project_member(&fx.owner, p.id, bot.id()).await.unwrap();
    fx.board.add_project_member(&fx.owner, p.id, other.id()).await.unwrap();
    let m = say(&fx, &fx.owner, Some(chat), None, "@bot what is up?").await;
    let mut sub = fx.board.subscribe(None);
    let run = fx.board.start_message_run(&fx.owner, m.id, ask(&bot)).await.unwrap();
    assert_eq!((run.message_id, run.state, run.task.clone()), (Some(m.id), RunState::Starting, None));
    assert_eq!(run.project_id, Some(p.id));
    let events = drain(&mut sub);
    let created = events.iter().find(|e| e.kind == EventKind::RunCreated).expect("run.created");
    match &created.audience {
        Audience::Chat { project_members, mentions } => {
            assert!(project_members.contains(&bot.id()));
            assert_eq!(mentions, &vec![bot.id()]);
        }
        a => panic!("a chat run's event goes to the chat's audience, not {a:?}"),
    }
    // A second run of the same agent for the same message waits for the first to end.
    let twice = fx.board.start_message_run(&bot, m.id, ask(&bot)).await;
    assert_eq!(kind(twice), ErrorKind::Conflict);
    // Another agent may answer it too.
    fx.board.start_message_run(&fx.owner, m.id, ask(&other)).await.unwrap();
    let end = RunPatch { state: Some(RunState::Succeeded), ..Default::default() };
    fx.board.update_run(&bot, run.id, end).await.unwrap();
    // The agent's runner asks once; a person may ask again once the run ended.
    assert_eq!(kind(fx.board.start_message_run(&bot, m.id, ask(&bot)).await), ErrorKind::Conflict);
    let again = fx.board.start_message_run(&fx.owner, m.id, ask(&bot)).await.unwrap();
    assert_ne!(again.id, run.id);
    let q = RunListQuery { message_id: Some(m.id), agent_id: Some(bot.id()), ..Default::default() };
    let listed: Vec<Uuid> = fx.board.list_runs(q).await.unwrap().into_items().iter().map(|r| r.id).collect();
    assert_eq!(listed, vec![again.id, run.id]);
}

#[tokio::test]
async fn who_may_ask_and_which_messages_an_agent_answers() {
    let fx = board().await;
    let p = fx.project("web").await;
    let chat = p.chat_id.unwrap();
    let bot = fx.agent("bot").await;
    let other = fx.agent("other").await;
    fx.board.add_project_member(&fx.owner, p.id, other.id()).await.unwrap();
    let m = say(&fx, &fx.owner, Some(chat), None, "hello").await;
    // Not a member of the chat's project: the agent does not see the message.
    let unseen = fx.board.start_message_run(&fx.owner, m.id, ask(&bot)).await;
    assert_eq!(kind(unseen), ErrorKind::Forbidden);
    // An agent starts runs of itself only.
    let foreign = fx.board.start_message_run(&other, m.id, ask(&bot)).await;
    assert_eq!(kind(foreign), ErrorKind::Forbidden);
    // Unknown message; a person naming a runner; a person who is not an agent.
    let missing = fx.board.start_message_run(&fx.owner, Uuid::now_v7(), ask(&other)).await;
    assert_eq!(kind(missing), ErrorKind::NotFound);
    let named = NewMessageRun { agent_id: other.id(), runner: Some("r".into()) };
    assert_eq!(kind(fx.board.start_message_run(&fx.owner, m.id, named).await), ErrorKind::Validation);
    let ann = fx.human("ann", Role::Member).await;
    assert_eq!(kind(fx.board.start_message_run(&fx.owner, m.id, ask(&ann)).await), ErrorKind::Validation);
    // The agent's own message never starts a run of it.
    let own = say(&fx, &other, Some(chat), None, "my own words").await;
    assert_eq!(kind(fx.board.start_message_run(&other, own.id, ask(&other)).await), ErrorKind::Conflict);
    // An agent starts its own run, naming its runner.
    let mine = NewMessageRun { agent_id: other.id(), runner: Some("host:1".into()) };
    let run = fx.board.start_message_run(&other, m.id, mine).await.unwrap();
    assert_eq!(run.runner.as_deref(), Some("host:1"));
}

#[tokio::test]
async fn a_comment_run_names_its_task_but_holds_no_lease_and_never_moves_it() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    let before = fx.get(t.id).await;
    // Not a project member, but mentioned in the comment: it sees it.
    let c = say(&fx, &fx.owner, None, Some(t.id), "@bot can you look?").await;
    let run = fx.board.start_message_run(&fx.owner, c.id, ask(&bot)).await.unwrap();
    assert_eq!(run.task.as_ref().map(|t| t.key.as_str()), Some("WEB-1"));
    assert_eq!(run.message_id, Some(c.id));
    let end = RunPatch { state: Some(RunState::Failed), ..Default::default() };
    fx.board.update_run(&bot, run.id, end).await.unwrap();
    let after = fx.get(t.id).await;
    assert_eq!((after.status, after.assignee, after.lease), (before.status, before.assignee, before.lease));
    // A comment neither mentioning nor involving it, in a project it is not in: unseen.
    let plain = say(&fx, &fx.owner, None, Some(t.id), "a note").await;
    assert_eq!(kind(fx.board.start_message_run(&fx.owner, plain.id, ask(&bot)).await), ErrorKind::Forbidden);
    // The task's runs are its own work, not the answers to its comments.
    let q = RunListQuery { task_id: Some(t.id), ..Default::default() };
    assert!(fx.board.list_runs(q).await.unwrap().into_items().is_empty());
}
