//! Claims pass over a task its agent failed at lately (docs/rules.md,
//! "Claiming"). After a run of an agent at a task fails or times out,
//! that agent's claims skip the task for a while that doubles with
//! each such end in a row (one minute, then two), and for good after
//! [`ATTEMPTS`] of them, until a person changes the task after the last
//! one (edits it or moves it: `TaskWork::edited_at`). The end of another
//! run, a release or a cancel is no such change, so cancelling a run does
//! not hand the task at once to an agent that failed at it. Taking the
//! task by its id, or a person starting a run of it, is not held back.

use jiff::{SignedDuration, Timestamp};
use uuid::Uuid;

use crate::error::Result;
use crate::records::{Records, TaskRecord};
use crate::runs::{RunRecord, RunState};
use crate::storage::codec::uuid_suffix;
use crate::storage::tables::{RUNS, TASK_RUNS};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan};

/// Ends in a row after which an agent claims the task no more.
pub const ATTEMPTS: u32 = 3;

/// The wait after the first failed end; it doubles with each more.
pub const FIRST_WAIT: SignedDuration = SignedDuration::from_secs(60);

/// The task's newest runs looked at, at most.
const LOOKED_AT: usize = 20;

/// Whether `agent`'s claims pass over `task` at `now`.
pub(super) fn passed_over(r: &dyn ReadTxn, agent: Uuid, task: &TaskRecord, now: Timestamp) -> Result<bool> {
    let mut ids = Vec::new();
    r.scan(TASK_RUNS, KeyRange::prefix(task.id.as_bytes()), Direction::Reverse, &mut |k, _| {
        ids.push(uuid_suffix(k)?);
        Ok(if ids.len() >= LOOKED_AT { Scan::Stop } else { Scan::Continue })
    })?;
    let (mut failed, mut last) = (0u32, None::<Timestamp>);
    for id in ids {
        let Some(run) = r.record::<RunRecord>(RUNS, id.as_bytes())? else { continue };
        if run.agent_id != agent {
            continue;
        }
        // Ends before a person's change are forgiven: counted anew.
        if let (Some(edited), Some(ended)) = (task.work.edited_at, run.ended_at)
            && ended < edited
        {
            break;
        }
        match run.state {
            RunState::Failed | RunState::TimedOut => {}
            // The runner's end, or a person's, rather than the agent's:
            // not counted, and no reason to try again either.
            RunState::Lost | RunState::Cancelled => continue,
            _ => break,
        }
        failed += 1;
        last = last.or(run.ended_at);
    }
    let Some(last) = last else { return Ok(false) };
    if failed >= ATTEMPTS {
        return Ok(true);
    }
    let wait = FIRST_WAIT * (1i32 << (failed - 1).min(16));
    Ok(last.checked_add(wait).is_ok_and(|until| now < until))
}
