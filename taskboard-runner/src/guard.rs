//! `taskboard agent guard`: the first process of an agent's process
//! group. The runner starts every agent through it; it starts the
//! agent's command in the same group and waits for it. When the runner
//! that started it is gone (even killed outright, which leaves a runner
//! no time to stop anything), the guard ends the whole group, so no
//! agent outlives its runner.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode};
use std::time::Duration;

use rustix::process::{Pid, Signal, getpid, getppid, kill_process, kill_process_group};

/// How often the guard looks whether its runner is still there.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Runs `argv` and answers its exit code (127 when it cannot start); a
/// command ended by a signal ends the guard by the same signal.
/// Ends the whole group, itself included, once `parent` is no longer its
/// parent.
pub fn run(parent: u32, argv: &[String]) -> ExitCode {
    let orphaned = || getppid().map(Pid::as_raw_nonzero).map(|p| p.get()) != i32::try_from(parent).ok();
    let end_group = || {
        let _ = kill_process_group(getpid(), Signal::KILL);
    };
    if orphaned() {
        end_group();
    }
    let Some((program, args)) = argv.split_first() else {
        eprintln!("taskboard agent guard: no command");
        return ExitCode::from(127);
    };
    let mut child = match Command::new(program).args(args).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot start {program}: {e}");
            return ExitCode::from(127);
        }
    };
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                if let Some(signal) = status.signal() {
                    // Ended the same way, so the runner sees a signal.
                    if let Some(s) = Signal::from_named_raw(signal) {
                        let _ = kill_process(getpid(), s);
                    }
                    return ExitCode::from(u8::try_from(128 + signal).unwrap_or(1));
                }
                return ExitCode::from(status.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1));
            }
            Ok(None) => {}
            Err(e) => {
                eprintln!("taskboard agent guard: cannot wait for {program}: {e}");
                end_group();
            }
        }
        if orphaned() {
            end_group();
        }
        std::thread::sleep(LOOK_EVERY);
    }
}
