//! Claims pass over a task the claiming agent failed at lately: for a
//! while that doubles with each failed end in a row, for good after the
//! third, until the task changes.

use std::time::Duration;

use taskboard_core::api::{ClaimRequest, NewRun, Patch, RunPatch, TaskPatch};
use taskboard_core::board::Clock;
use taskboard_core::model::*;
use taskboard_core::runs::RunState;
use taskboard_core::validate::LongText;
use taskboard_core::{Actor, BoardOptions};
use uuid::Uuid;

use crate::support::*;

/// `agent` claims the next task it would take, and answers its id.
async fn claim(fx: &Fx, agent: &Actor) -> Option<Uuid> {
    let request = ClaimRequest { lease_seconds: Some(60), ..Default::default() };
    fx.board.claim(agent, request).await.unwrap().map(|t| t.id)
}

/// A run of the agent at the task it holds, ended in `state`.
async fn run_ending(fx: &Fx, agent: &Actor, task: Uuid, state: RunState) {
    let new = NewRun { agent_id: agent.id(), lease_seconds: Some(60), runner: Some("r".into()) };
    let run = fx.board.start_run(agent, task, new).await.unwrap();
    let end = RunPatch { state: Some(state), ..Default::default() };
    fx.board.update_run(agent, run.id, end).await.unwrap();
}

#[tokio::test]
async fn claims_pass_over_a_task_the_agent_failed_at_for_a_doubling_while_then_for_good() {
    let clock = Clock::manual();
    let fx = board_with(BoardOptions { clock: clock.clone(), ..Default::default() }).await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let other = fx.agent("other").await;
    for a in [&bot, &other] {
        fx.board.add_project_member(&fx.owner, p.id, a.id()).await.unwrap();
    }
    let hard = fx.task(&p, "hard").await;
    let minute = Duration::from_secs(60);

    assert_eq!(claim(&fx, &bot).await, Some(hard.id));
    run_ending(&fx, &bot, hard.id, RunState::Failed).await;
    let task = fx.get(hard.id).await;
    assert_eq!((task.status, task.assignee), (TaskStatus::Todo, None), "given back");
    assert_eq!(claim(&fx, &bot).await, None, "passed over for a minute");
    clock.advance(minute - Duration::from_secs(1));
    assert_eq!(claim(&fx, &bot).await, None);
    clock.advance(Duration::from_secs(1));
    assert_eq!(claim(&fx, &bot).await, Some(hard.id), "claimed again after the minute");

    // A timeout counts the same: two minutes now.
    run_ending(&fx, &bot, hard.id, RunState::TimedOut).await;
    clock.advance(minute + Duration::from_secs(59));
    assert_eq!(claim(&fx, &bot).await, None);
    let easy = fx.task(&p, "easy").await;
    assert_eq!(claim(&fx, &bot).await, Some(easy.id), "other work is claimed meanwhile");
    run_ending(&fx, &bot, easy.id, RunState::Succeeded).await;
    clock.advance(Duration::from_secs(1));
    assert_eq!(claim(&fx, &bot).await, Some(hard.id));

    // The third in a row: passed over for good.
    run_ending(&fx, &bot, hard.id, RunState::Failed).await;
    clock.advance(Duration::from_secs(30 * 24 * 3600));
    assert_eq!(claim(&fx, &bot).await, None);
    let ready = fx.board.ready_tasks(&bot, Default::default()).await.unwrap();
    assert_eq!(ready.iter().map(|t| t.id).collect::<Vec<_>>(), [hard.id], "still ready, and listed");

    // A person changes the task: the agent may try again.
    let patch = TaskPatch {
        description: Patch::Value(LongText::new("Start from the failing test.").unwrap()),
        ..Default::default()
    };
    fx.board.update_task(&fx.owner, hard.id, patch).await.unwrap();
    assert_eq!(claim(&fx, &bot).await, Some(hard.id));
    run_ending(&fx, &bot, hard.id, RunState::Failed).await;
    assert_eq!(claim(&fx, &bot).await, None, "counted anew from the change");

    // Another agent's claims are not held back by this one's failures.
    assert_eq!(claim(&fx, &other).await, Some(hard.id));
}

#[tokio::test]
async fn a_cancelled_run_does_not_hold_claims_back() {
    let fx = board().await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    fx.board.add_project_member(&fx.owner, p.id, bot.id()).await.unwrap();
    let t = fx.task(&p, "work").await;
    assert_eq!(claim(&fx, &bot).await, Some(t.id));
    let new = NewRun { agent_id: bot.id(), lease_seconds: Some(60), runner: None };
    let run = fx.board.start_run(&bot, t.id, new).await.unwrap();
    fx.board.cancel_run(&fx.owner, run.id).await.unwrap();
    assert_eq!(claim(&fx, &bot).await, Some(t.id), "a person cancelled it: no failure of the agent's");
}

/// An agent failed at a task twice; a person starts another agent's run of
/// it and cancels it, which gives the task back. That is no change of the
/// task: the agent that failed still waits (docs/decisions.md, 22.4).
#[tokio::test]
async fn cancelling_another_run_does_not_hand_the_task_to_an_agent_that_failed_at_it() {
    let clock = Clock::manual();
    let fx = board_with(BoardOptions { clock: clock.clone(), ..Default::default() }).await;
    let p = fx.project("web").await;
    let bot = fx.agent("bot").await;
    let other = fx.agent("other").await;
    for a in [&bot, &other] {
        fx.join(p.id, a).await;
    }
    let hard = fx.task(&p, "hard").await;
    assert_eq!(claim(&fx, &bot).await, Some(hard.id));
    run_ending(&fx, &bot, hard.id, RunState::Failed).await;
    clock.advance(Duration::from_secs(60));
    assert_eq!(claim(&fx, &bot).await, Some(hard.id));
    run_ending(&fx, &bot, hard.id, RunState::Failed).await;
    let new = NewRun { agent_id: other.id(), lease_seconds: Some(60), runner: None };
    let run = fx.board.start_run(&fx.owner, hard.id, new).await.unwrap();
    fx.board.cancel_run(&fx.owner, run.id).await.unwrap();
    assert_eq!(fx.get(hard.id).await.status, TaskStatus::Todo, "given back");
    assert_eq!(claim(&fx, &bot).await, None, "still waiting its two minutes");
    clock.advance(Duration::from_secs(120));
    assert_eq!(claim(&fx, &bot).await, Some(hard.id));
}
