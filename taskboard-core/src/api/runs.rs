//! Runs: an agent's attempts at tasks, started by a person or by the
//! agent's runner, written by the runner, followed and answered by people.

use super::endpoint::Handle;
use super::endpoint::{Call, Caller};
use crate::board::Board;
use crate::error::Result;
use crate::runs::{Run, TranscriptEntry};
use crate::wire::api::{
    AnswerRun, AppendTranscript, CancelRun, GetRun, GetTranscript, ListRunners, ListRuns, StartMessageRun,
    StartRun, UpdateRun,
};
use crate::wire::{Paged, RunnerSeen};

impl Handle for ListRuns {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Paged<Run>> {
        board.list_runs(call.query).await
    }
}

impl Handle for ListRunners {
    async fn handle(board: &Board, _: &Caller, _: Call<Self>) -> Result<Vec<RunnerSeen>> {
        board.runners().await
    }
}

impl Handle for GetRun {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Run> {
        board.get_run(call.path).await
    }
}

impl Handle for GetTranscript {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Vec<TranscriptEntry>> {
        board.transcript(call.path, call.query).await
    }
}

impl Handle for StartRun {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Run> {
        board.start_run(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for StartMessageRun {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Run> {
        board.start_message_run(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for UpdateRun {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Run> {
        board.update_run(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for AppendTranscript {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Run> {
        board.append_transcript(caller.actor()?, call.path, call.body.entries).await
    }
}

impl Handle for CancelRun {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Run> {
        board.cancel_run(caller.actor()?, call.path).await
    }
}

impl Handle for AnswerRun {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Run> {
        board.answer_run(caller.actor()?, call.path, call.body).await
    }
}
