//! `taskboard run …`.

use taskboard_core::api::{
    AnswerRun, CancelRun, EventsQuery, GetRun, GetTranscript, ListRuns, NewRun, PollEvents, RunAnswer,
    RunListQuery, StartRun, TranscriptQuery,
};
use taskboard_core::runs::{Run, TranscriptEntry};
use taskboard_core::{Perform, Result};

use crate::cli::RunCmd;
use crate::output::{Out, Row, short_id, when};

use super::helpers::pick_id;

pub(super) async fn run<B: Perform>(b: &B, c: RunCmd, out: Out) -> Result<()> {
    match c {
        RunCmd::List { task, agent, state, limit, cursor } => {
            let task_id = match task {
                Some(t) => Some(b.find_task(&t).await?.id),
                None => None,
            };
            let agent_id = match agent {
                Some(a) => Some(b.find_member(&a).await?.id),
                None => None,
            };
            let runs = b
                .call::<ListRuns>(
                    (),
                    RunListQuery { task_id, agent_id, state, limit, cursor, message_id: None },
                    (),
                )
                .await?;
            out.list(&runs);
            out.next_page(runs.next.as_deref());
        }
        RunCmd::Show { run } => out.item(&b.call::<GetRun>(find_run(b, &run).await?, (), ()).await?),
        RunCmd::Start { task, agent, lease_seconds } => {
            let task = b.find_task(&task).await?;
            let agent = b.find_member(&agent).await?;
            let run = b
                .call::<StartRun>(task.id, (), NewRun { agent_id: agent.id, lease_seconds, runner: None })
                .await?;
            if out.quiet {
                out.line(&run.id.to_string());
            } else {
                out.item(&run);
            }
        }
        RunCmd::Cancel { run } => {
            let run = find_run(b, &run).await?;
            let r = b.call::<CancelRun>(run, (), ()).await?;
            out.done(&r, &format!("cancelled run {run}"));
        }
        RunCmd::Answer { run, option, text } => {
            let run = find_run(b, &run).await?;
            let r = b.call::<AnswerRun>(run, (), RunAnswer { option_id: option, text }).await?;
            out.done(&r, &format!("answered run {run}; it is {} again", r.state));
        }
        RunCmd::Logs { run, after, follow } => logs(b, find_run(b, &run).await?, after, follow, out).await?,
    }
    Ok(())
}

/// A run by its whole id or the part of it a list shows: the runs are
/// read page by page until the one it names is found among them all.
async fn find_run<B: Perform>(b: &B, reference: &str) -> Result<uuid::Uuid> {
    if let Ok(id) = reference.parse() {
        return Ok(id);
    }
    let mut ids = Vec::new();
    let mut cursor = None;
    loop {
        let query = RunListQuery { limit: Some(1000), cursor, ..Default::default() };
        let page = b.call::<ListRuns>((), query, ()).await?;
        ids.extend(page.iter().map(|r| r.id));
        match page.next.as_deref() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    pick_id("run", reference, ids)
}

/// Prints the transcript after `after`; with `follow`, waits on the event
/// stream (long-polled `GET /events`) for the run's next output or change
/// and prints again, until the run has ended and everything is printed.
async fn logs<B: Perform>(b: &B, run: uuid::Uuid, mut after: u64, follow: bool, out: Out) -> Result<()> {
    // Where the stream stands before the first read, so nothing written
    // after it is missed.
    let mut since =
        if follow { Some(b.call::<PollEvents>((), EventsQuery::default(), ()).await?.next) } else { None };
    loop {
        loop {
            let q = TranscriptQuery { after: Some(after), limit: Some(1000) };
            let entries = b.call::<GetTranscript>(run, q, ()).await?;
            for e in &entries {
                if !print_entry(e, out) {
                    return Ok(());
                }
                after = e.n;
            }
            if entries.len() < 1000 {
                break;
            }
        }
        let Some(mut seq) = since else { return Ok(()) };
        let r = b.call::<GetRun>(run, (), ()).await?;
        if r.state.is_final() && after >= r.transcript_count {
            return Ok(());
        }
        loop {
            let q = EventsQuery { since: Some(seq), limit: Some(1000), wait: Some(30), runner: None };
            let page = b.call::<PollEvents>((), q, ()).await?;
            seq = page.next;
            let about_run = page.events.iter().any(|e| {
                let d = &e["data"];
                let kind = e["type"].as_str().unwrap_or("");
                kind.starts_with("run.") && (d["run_id"] == run.to_string() || d["id"] == run.to_string())
            });
            if about_run || page.resync_required {
                break;
            }
        }
        since = Some(seq);
    }
}

/// One entry: a JSON line with --json, else `n kind: text`. False once
/// stdout is closed.
fn print_entry(e: &TranscriptEntry, out: Out) -> bool {
    if out.json {
        return out.json_line(&serde_json::to_value(e).unwrap_or_default());
    }
    let kind =
        serde_json::to_value(e.kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    out.line(&format!("{:>5} {kind}: {}", e.n, e.text));
    true
}

impl Row for Run {
    const HEADERS: &'static [&'static str] =
        &["id", "task", "agent", "purpose", "state", "changes", "created", "ended", "exit", "reason"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            if table { short_id(&self.id) } else { self.id.to_string() },
            self.task.as_ref().map(|t| t.key.clone()).unwrap_or_default(),
            self.agent.slug.clone(),
            match self.work.purpose.as_str() {
                "work" if self.work.round > 1 => format!("work r{}", self.work.round),
                purpose => purpose.to_string(),
            },
            self.state.to_string(),
            self.work.changes.as_ref().map(crate::output::counts).unwrap_or_default(),
            when(&self.created_at),
            self.ended_at.as_ref().map(when).unwrap_or_default(),
            self.exit_code.map(|c| c.to_string()).unwrap_or_default(),
            self.stop_reason.clone().unwrap_or_default(),
        ]
    }
    fn details(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(r) = &self.runner {
            lines.push(format!("runner: {r}"));
        }
        if let (Some(b), c) = (&self.branch, &self.commit) {
            lines.push(format!("branch: {b}{}", c.as_ref().map(|c| format!(" at {c}")).unwrap_or_default()));
        }
        if let Some(c) = &self.work.changes {
            lines.push(format!("changes: {} in {} files", crate::output::counts(c), c.files));
        }
        if let Some(m) = &self.work.merge_commit {
            lines.push(format!("merged as: {m}"));
        }
        if !self.work.conflicts.is_empty() {
            lines.push(format!("conflicts: {}", self.work.conflicts.join(", ")));
        }
        if let Some(u) = &self.usage {
            lines.push(format!("tokens: {} in, {} out", u.input_tokens, u.output_tokens));
        }
        if let Some(q) = &self.question {
            lines.push(format!("question {}: {}", q.id, q.text));
            for o in &q.options {
                lines.push(format!("  --option {}  {}", o.id, o.label));
            }
        }
        lines.push(format!("transcript: {} entries", self.transcript_count));
        lines
    }
}
