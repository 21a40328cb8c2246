//! Runs: an agent's attempt at a task, holding its lease; written by the
//! agent only; final states never change; the transcript capped; output
//! events paced.

use std::time::Duration;

use serde_json::json;
use taskboard_core::api::{
    MessageFilter, NewEntry, NewRun, Patch, RunAnswer, RunListQuery, RunPatch, TaskPatch, TranscriptQuery,
};
use taskboard_core::board::Clock;
use taskboard_core::events::EventKind;
use taskboard_core::model::*;
use taskboard_core::runs::*;
use taskboard_core::{Actor, BoardOptions, ErrorKind};
use uuid::Uuid;

use crate::support::*;

fn manual() -> (BoardOptions, Clock) {
    let clock = Clock::manual();
    (BoardOptions { clock: clock.clone(), ..Default::default() }, clock)
}

fn output(text: &str) -> NewEntry {
    NewEntry { kind: EntryKind::Output, text: text.into(), data: None }
}

fn to(state: RunState) -> RunPatch {
    RunPatch { state: Some(state), ..Default::default() }
}

async fn start(fx: &Fx, by: &Actor, task: Uuid, agent: &Actor) -> Run {
    fx.join(fx.get(task).await.project.id, agent).await;
    fx.board
        .start_run(by, task, NewRun { agent_id: agent.id(), lease_seconds: Some(60), runner: None })
        .await
        .unwrap()
}

async fn comments(fx: &Fx, task: Uuid) -> Vec<Message> {
    let f = MessageFilter { task_id: Some(task), ..Default::default() };
    fx.board.list_messages(f).await.unwrap().into_items()
}

#[tokio::test]
async fn a_person_starts_a_run_and_the_task_goes_to_the_agent_under_a_lease() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let other = fx.agent("other").await;
    let t = fx.task(&p, "work").await;
    let mut sub = fx.board.subscribe(None);
    let run = start(&fx, &fx.owner, t.id, &bot).await;
    assert_eq!(run.state, RunState::Starting);
    assert_eq!(run.agent.id, bot.id());
    assert_eq!(run.task.as_ref().map(|t| t.key.as_str()), Some("WEB-1"));
    assert_eq!(run.project_id, Some(p.id));
    let task = fx.get(t.id).await;
    assert_eq!(task.status, TaskStatus::InProgress);
    assert_eq!(task.assignee.map(|a| a.id), Some(bot.id()));
    assert_eq!(task.lease.map(|l| l.holder.id), Some(bot.id()));
    let events = drain(&mut sub);
    assert!(kinds(&events).contains(&"run.created"), "{:?}", kinds(&events));
    // One run at a time; an agent starts only itself; only agents run.
    let again = fx
        .board
        .start_run(&fx.owner, t.id, NewRun { agent_id: bot.id(), lease_seconds: None, runner: None })
        .await;
    assert_eq!(kind(again), ErrorKind::Conflict);
    let u = fx.task(&p, "more").await;
    let foreign = fx
        .board
        .start_run(&other, u.id, NewRun { agent_id: bot.id(), lease_seconds: None, runner: None })
        .await;
    assert_eq!(kind(foreign), ErrorKind::Forbidden);
    let human = fx.human("ann", Role::Member).await;
    let not_agent = fx
        .board
        .start_run(&fx.owner, u.id, NewRun { agent_id: human.id(), lease_seconds: None, runner: None })
        .await;
    assert_eq!(kind(not_agent), ErrorKind::Validation);
    // An agent's runner starts a run of work it claimed; the claim's lease stays.
    let claimed = fx.board.take_leased(&other, u.id, Some(30)).await.unwrap();
    let own = start(&fx, &other, u.id, &other).await;
    assert_eq!(own.agent.id, other.id());
    assert_eq!(fx.get(u.id).await.lease.unwrap().expires_at, claimed.lease.unwrap().expires_at);
    // A task held under someone else's lease cannot be run.
    let v = fx.task(&p, "held").await;
    fx.board.take_leased(&other, v.id, Some(30)).await.unwrap();
    let held = fx
        .board
        .start_run(&fx.owner, v.id, NewRun { agent_id: bot.id(), lease_seconds: None, runner: None })
        .await;
    assert_eq!(kind(held), ErrorKind::Conflict);
}

#[tokio::test]
async fn only_the_agent_writes_its_run_and_success_moves_the_task_to_review() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    let run = start(&fx, &fx.owner, t.id, &bot).await;
    assert_eq!(
        kind(fx.board.update_run(&fx.owner, run.id, to(RunState::Running)).await),
        ErrorKind::Forbidden
    );
    assert_eq!(
        kind(fx.board.append_transcript(&fx.owner, run.id, vec![output("x")]).await),
        ErrorKind::Forbidden
    );
    let patch = RunPatch { runner: Some("host:1".into()), ..to(RunState::Running) };
    let running = fx.board.update_run(&bot, run.id, patch).await.unwrap();
    assert_eq!(running.state, RunState::Running);
    assert!(running.started_at.is_some());
    assert_eq!(running.runner.as_deref(), Some("host:1"));
    fx.board.append_transcript(&bot, run.id, vec![output("one"), output("two")]).await.unwrap();
    let all = fx.board.transcript(run.id, TranscriptQuery::default()).await.unwrap();
    let texts: Vec<_> = all.iter().map(|e| (e.n, e.kind, e.text.as_str())).collect();
    assert_eq!(
        texts,
        [(1, EntryKind::State, "running"), (2, EntryKind::Output, "one"), (3, EntryKind::Output, "two")]
    );
    let after = TranscriptQuery { after: Some(2), ..Default::default() };
    assert_eq!(fx.board.transcript(run.id, after).await.unwrap().len(), 1);
    let done = RunPatch {
        exit_code: Some(0),
        branch: Some("taskboard/WEB-1".into()),
        commit: Some("abc123".into()),
        usage: Some(Usage { input_tokens: 10, output_tokens: 5 }),
        ..to(RunState::Succeeded)
    };
    let ended = fx.board.update_run(&bot, run.id, done).await.unwrap();
    assert_eq!(ended.state, RunState::Succeeded);
    assert!(ended.ended_at.is_some());
    assert_eq!(ended.usage, Some(Usage { input_tokens: 10, output_tokens: 5 }));
    let task = fx.get(t.id).await;
    assert_eq!((task.status, task.lease), (TaskStatus::Review, None));
    assert_eq!(task.assignee.map(|a| a.id), Some(bot.id()));
    // A final state never changes.
    assert_eq!(kind(fx.board.update_run(&bot, run.id, to(RunState::Failed)).await), ErrorKind::Conflict);
    assert_eq!(
        kind(fx.board.append_transcript(&bot, run.id, vec![output("late")]).await),
        ErrorKind::Conflict
    );
    assert_eq!(kind(fx.board.cancel_run(&fx.owner, run.id).await), ErrorKind::Conflict);
    assert_eq!(fx.board.get_run(run.id).await.unwrap().state, RunState::Succeeded);
    // Only lease expiry ends a run lost.
    let u = fx.task(&p, "more").await;
    let r2 = start(&fx, &fx.owner, u.id, &bot).await;
    assert_eq!(kind(fx.board.update_run(&bot, r2.id, to(RunState::Lost)).await), ErrorKind::Validation);
}

#[tokio::test]
async fn a_failed_run_gives_the_task_back_with_the_tail_of_its_output() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    let run = start(&fx, &fx.owner, t.id, &bot).await;
    fx.board.update_run(&bot, run.id, to(RunState::Running)).await.unwrap();
    let long = "x".repeat(3000);
    fx.board
        .append_transcript(&bot, run.id, vec![output(&long), output("error: the last line")])
        .await
        .unwrap();
    let failed = RunPatch { exit_code: Some(2), ..to(RunState::Failed) };
    assert_eq!(fx.board.update_run(&bot, run.id, failed).await.unwrap().exit_code, Some(2));
    let task = fx.get(t.id).await;
    assert_eq!((task.status, task.assignee, task.lease), (TaskStatus::Todo, None, None));
    let mine: Vec<_> = comments(&fx, t.id)
        .await
        .into_iter()
        .filter(|m| m.author.as_ref().map(|a| a.id) == Some(bot.id()))
        .collect();
    assert_eq!(mine.len(), 1, "one comment by the agent");
    let c = &mine[0].content;
    assert!(c.contains("error: the last line") && c.contains("exit code 2"), "{c}");
    assert!(c.len() < 2300, "only the tail: {} bytes", c.len());
    let ready = fx.board.ready_tasks(&fx.owner, Default::default()).await.unwrap();
    assert!(ready.iter().any(|r| r.id == t.id), "ready again");
}

#[tokio::test]
async fn an_expired_lease_ends_the_run_lost_and_heartbeats_keep_it() {
    let (options, clock) = manual();
    let fx = board_with(options).await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    let run = start(&fx, &fx.owner, t.id, &bot).await;
    fx.board.update_run(&bot, run.id, to(RunState::Running)).await.unwrap();
    let mut sub = fx.board.subscribe(None);
    for _ in 0..5 {
        clock.advance(Duration::from_secs(40));
        fx.board.heartbeat(&bot, t.id, None).await.unwrap();
        assert_eq!(fx.board.expire_leases().await.unwrap(), 0);
    }
    let beats = drain(&mut sub);
    assert_eq!(kinds(&beats), ["task.lease_renewed"; 5], "a heartbeat sends a light event only");
    let data = beats[4].data();
    assert_eq!(data["id"], json!(t.id));
    let task = fx.get(t.id).await;
    assert_eq!(
        data["lease"]["expires_at"],
        json!(task.lease.as_ref().unwrap().expires_at),
        "the task read shows it too"
    );
    assert!(beats[4].frame().len() < 600, "light: {} bytes", beats[4].frame().len());
    clock.advance(Duration::from_secs(61));
    assert_eq!(fx.board.expire_leases().await.unwrap(), 1);
    let lost = fx.board.get_run(run.id).await.unwrap();
    assert_eq!(lost.state, RunState::Lost);
    assert_eq!(lost.stop_reason.as_deref(), Some("lease expired"));
    let task = fx.get(t.id).await;
    assert_eq!((task.status, task.assignee), (TaskStatus::Todo, None));
    assert_eq!(kind(fx.board.update_run(&bot, run.id, to(RunState::Succeeded)).await), ErrorKind::Conflict);
    // The task can be run again.
    assert_eq!(start(&fx, &fx.owner, t.id, &bot).await.state, RunState::Starting);
}

#[tokio::test]
async fn cancel_moving_reassigning_and_deleting_the_task_end_the_run_cancelled() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let ann = fx.human("ann", Role::Member).await;
    let t = fx.task(&p, "cancelled").await;
    let run = start(&fx, &fx.owner, t.id, &bot).await;
    let other = fx.agent("other").await;
    assert_eq!(kind(fx.board.cancel_run(&other, run.id).await), ErrorKind::Forbidden);
    let c = fx.board.cancel_run(&ann, run.id).await.unwrap();
    assert_eq!((c.state, c.stop_reason.as_deref()), (RunState::Cancelled, Some("cancelled by @ann")));
    let task = fx.get(t.id).await;
    assert_eq!((task.status, task.assignee, task.lease), (TaskStatus::Todo, None, None));

    let moved = fx.task(&p, "moved").await;
    let r = start(&fx, &fx.owner, moved.id, &bot).await;
    let patch = TaskPatch { status: Patch::Value(TaskStatus::Backlog), ..Default::default() };
    fx.board.update_task(&fx.owner, moved.id, patch).await.unwrap();
    assert_eq!(fx.board.get_run(r.id).await.unwrap().state, RunState::Cancelled);

    let reassigned = fx.task(&p, "reassigned").await;
    let r = start(&fx, &fx.owner, reassigned.id, &bot).await;
    fx.board.assign(&fx.owner, reassigned.id, ann.id()).await.unwrap();
    assert_eq!(fx.board.get_run(r.id).await.unwrap().state, RunState::Cancelled);

    let deleted = fx.task(&p, "deleted").await;
    let r = start(&fx, &fx.owner, deleted.id, &bot).await;
    fx.board.delete_task(&fx.owner, deleted.id).await.unwrap();
    let gone = fx.board.get_run(r.id).await.unwrap();
    assert_eq!(gone.state, RunState::Cancelled);
    assert_eq!(gone.task.map(|t| t.key), Some("WEB-4".to_string()), "the task as it was");

    let released = fx.task(&p, "released").await;
    let r = start(&fx, &fx.owner, released.id, &bot).await;
    fx.board.release(&bot, released.id, None).await.unwrap();
    assert_eq!(fx.board.get_run(r.id).await.unwrap().state, RunState::Cancelled);
}

#[tokio::test]
async fn a_question_waits_for_a_person_to_answer() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    let run = start(&fx, &fx.owner, t.id, &bot).await;
    fx.board.update_run(&bot, run.id, to(RunState::Running)).await.unwrap();
    let no_question = fx.board.update_run(&bot, run.id, to(RunState::AwaitingInput)).await;
    assert_eq!(kind(no_question), ErrorKind::Validation);
    let q = Question {
        id: "perm-1".into(),
        text: "May I write src/main.rs?".into(),
        options: vec![
            QuestionOption { id: "allow".into(), label: "Allow".into() },
            QuestionOption { id: "deny".into(), label: "Deny".into() },
        ],
    };
    let asked = RunPatch { question: Patch::Value(q.clone()), ..Default::default() };
    let waiting = fx.board.update_run(&bot, run.id, asked).await.unwrap();
    assert_eq!((waiting.state, waiting.question), (RunState::AwaitingInput, Some(q)));
    let pick = |o: &str| RunAnswer { option_id: Some(o.into()), text: None };
    assert_eq!(kind(fx.board.answer_run(&bot, run.id, pick("allow")).await), ErrorKind::Forbidden);
    assert_eq!(kind(fx.board.answer_run(&fx.owner, run.id, pick("maybe")).await), ErrorKind::Validation);
    let both = RunAnswer { option_id: Some("allow".into()), text: Some("yes".into()) };
    assert_eq!(kind(fx.board.answer_run(&fx.owner, run.id, both).await), ErrorKind::Validation);
    let answered = fx.board.answer_run(&fx.owner, run.id, pick("allow")).await.unwrap();
    assert_eq!((answered.state, answered.question), (RunState::Running, None));
    let last = fx.board.transcript(run.id, TranscriptQuery::default()).await.unwrap().pop().unwrap();
    assert_eq!((last.kind, last.text.as_str()), (EntryKind::Answer, "Allow"));
    assert_eq!(last.data.unwrap()["option_id"], json!("allow"));
    assert_eq!(
        kind(fx.board.answer_run(&fx.owner, run.id, pick("allow")).await),
        ErrorKind::Conflict,
        "answered once"
    );
}

#[tokio::test]
async fn a_transcript_past_its_cap_keeps_one_entry_counting_what_was_dropped() {
    let fx = board_with(BoardOptions { transcript_cap: 1000, ..Default::default() }).await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    let run = start(&fx, &fx.owner, t.id, &bot).await;
    let line = "y".repeat(100);
    for _ in 0..5 {
        let batch = (0..10).map(|_| output(&line)).collect();
        fx.board.append_transcript(&bot, run.id, batch).await.unwrap();
    }
    let all = fx
        .board
        .transcript(run.id, TranscriptQuery { limit: Some(1000), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(all.len(), 11, "ten entries of 100 bytes and the note");
    let kept: u64 = all[..10].iter().map(|e| e.text.len() as u64).sum();
    assert_eq!(kept, 1000);
    assert_eq!(all[10].data.as_ref().unwrap()["dropped_bytes"], json!(4000));
    assert!(all[10].text.contains("4000 bytes"), "{}", all[10].text);
    // The end of the run is still recorded.
    let ended = fx.board.update_run(&bot, run.id, to(RunState::Succeeded)).await.unwrap();
    assert_eq!(ended.transcript_count, 12);
}

#[tokio::test]
async fn output_events_are_paced_and_carry_every_entry_once_in_order() {
    let (options, clock) = manual();
    let fx = board_with(options).await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    let run = start(&fx, &fx.owner, t.id, &bot).await;
    let mut sub = fx.board.subscribe(None);
    for i in 0..20 {
        fx.board.append_transcript(&bot, run.id, vec![output(&format!("line {i}"))]).await.unwrap();
    }
    let frames = |events: &[std::sync::Arc<taskboard_core::Event>]| {
        events.iter().filter(|e| e.kind == EventKind::RunOutput).map(|e| e.data()).collect::<Vec<_>>()
    };
    let first = frames(&drain(&mut sub));
    assert_eq!(first.len(), 1, "twenty appends within the interval make one frame");
    assert_eq!(fx.board.flush_run_output().await.unwrap(), 0, "the interval has not passed");
    clock.advance(Duration::from_millis(taskboard_core::board::OUTPUT_INTERVAL_MS as u64));
    assert_eq!(fx.board.flush_run_output().await.unwrap(), 1);
    assert_eq!(fx.board.flush_run_output().await.unwrap(), 0, "nothing left");
    let second = frames(&drain(&mut sub));
    let texts: Vec<String> = first
        .iter()
        .chain(&second)
        .flat_map(|f| f["entries"].as_array().unwrap().clone())
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = (0..20).map(|i| format!("line {i}")).collect();
    assert_eq!(texts, expected);
    assert_eq!(second[0]["run_id"], json!(run.id));
    assert_eq!(second[0]["task_id"], json!(t.id));
}

#[tokio::test]
async fn runs_are_listed_newest_first_by_task_agent_and_state() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let two = fx.agent("two").await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let t = fx.task(&p, &format!("t{i}")).await;
        let agent = if i % 2 == 0 { &bot } else { &two };
        let r = start(&fx, &fx.owner, t.id, agent).await;
        if i == 0 {
            fx.board.cancel_run(&fx.owner, r.id).await.unwrap();
        }
        ids.push((r.id, t.id));
    }
    let list = |q: RunListQuery| fx.board.list_runs(q);
    let all: Vec<_> =
        list(RunListQuery::default()).await.unwrap().into_items().into_iter().map(|r| r.id).collect();
    let newest_first: Vec<_> = ids.iter().rev().map(|(r, _)| *r).collect();
    assert_eq!(all, newest_first);
    let of_bot = list(RunListQuery { agent_id: Some(bot.id()), ..Default::default() }).await.unwrap();
    assert_eq!(of_bot.len(), 3);
    let of_task = list(RunListQuery { task_id: Some(ids[1].1), ..Default::default() }).await.unwrap();
    assert_eq!(of_task.iter().map(|r| r.id).collect::<Vec<_>>(), [ids[1].0]);
    let cancelled =
        list(RunListQuery { state: Some(RunState::Cancelled), ..Default::default() }).await.unwrap();
    assert_eq!(cancelled.iter().map(|r| r.id).collect::<Vec<_>>(), [ids[0].0]);
    let page = list(RunListQuery { limit: Some(2), ..Default::default() }).await.unwrap();
    assert_eq!(page.len(), 2);
    let rest = list(RunListQuery { cursor: page.next.clone(), ..Default::default() }).await.unwrap();
    let paged: Vec<_> = page.iter().chain(rest.iter()).map(|r| r.id).collect();
    assert_eq!(paged, newest_first);
    let bad = RunListQuery { cursor: Some("nonsense".into()), ..Default::default() };
    assert_eq!(kind(list(bad).await), ErrorKind::Validation);
}

#[tokio::test]
async fn the_first_runner_to_name_itself_has_the_run() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let t = fx.task(&p, "work").await;
    let run = start(&fx, &fx.owner, t.id, &bot).await;
    assert_eq!(run.runner, None);
    let named = |r: &str| RunPatch { runner: Some(r.into()), ..Default::default() };
    let first = fx.board.update_run(&bot, run.id, named("host-a:1")).await.unwrap();
    assert_eq!(first.runner.as_deref(), Some("host-a:1"));
    // The same runner again is fine; another is refused.
    fx.board.update_run(&bot, run.id, named("host-a:1")).await.unwrap();
    let second = fx.board.update_run(&bot, run.id, named("host-b:2")).await.unwrap_err();
    assert_eq!(second.kind(), ErrorKind::Conflict, "{second:?}");
    assert_eq!(fx.board.get_run(run.id).await.unwrap().runner.as_deref(), Some("host-a:1"));

    // An agent's own runner names itself when it starts the run; a
    // person cannot.
    let u = fx.task(&p, "more").await;
    let own = NewRun { agent_id: bot.id(), lease_seconds: None, runner: Some("host-a:1".into()) };
    let run = fx.board.start_run(&bot, u.id, own.clone()).await.unwrap();
    assert_eq!(run.runner.as_deref(), Some("host-a:1"));
    let v = fx.task(&p, "other").await;
    let by_person = fx.board.start_run(&fx.owner, v.id, own).await.unwrap_err();
    assert_eq!(by_person.kind(), ErrorKind::Validation, "{by_person:?}");
}
