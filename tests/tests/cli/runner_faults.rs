//! The runner under faults: the server restarting under a running
//! agent, or away while its output waits to be sent, and an agent
//! flooding its output.

use std::time::{Duration, Instant};

use taskboard_core::runs::DEFAULT_TRANSCRIPT_CAP;
use taskboard_tests::{Env, RunningServer};

use super::runner::{Runner, board, config, ended, eventually, gone, runs, task, transcript};

/// A run whose agent said `started`, then, once the server had gone
/// away, ran `then` and ended: the server is still away, and the runner
/// has found it so.
struct Away {
    env: Env,
    addr: std::net::SocketAddr,
    run: String,
    _runner: Runner,
}

impl Away {
    fn start(title: &str, then: &str) -> Away {
        let mut env = Env::remote();
        let token = board(&env, None);
        task(&env, title);
        let go = env.dir.path().join("go");
        let pid = env.dir.path().join("pid");
        // Says it started, waits for the go, goes on and ends.
        let script = format!(
            "echo $$ > {pid:?}; echo started; while [ ! -f {go:?} ]; do sleep 0.05; done; {then}; exit 0"
        );
        let (path, _) = config(&env, "one", &token, &script, "");
        let log = env.dir.path().join("runner.log");
        let runner = Runner::start_logged(&env, &path, &log);
        let run = eventually("the run to be running", || {
            runs(&env, "WEB-1").into_iter().find(|r| r["state"] == "running")
        });
        let id = run["id"].as_str().unwrap().to_string();
        eventually("the agent's first line in the transcript", || {
            transcript(&env, &id).contains("started").then_some(())
        });
        let agent = eventually("the agent's pid", || std::fs::read_to_string(&pid).ok()).trim().to_string();

        let addr = env.server.as_ref().unwrap().addr;
        env.server.as_mut().unwrap().stop();
        // The agent writes and ends while the server is away: the runner
        // can neither send its output nor report its end yet.
        std::fs::write(&go, "").unwrap();
        eventually("the agent to end", || gone(&agent).then_some(()));
        eventually("the runner to find the server away", || {
            std::fs::read_to_string(&log).ok().filter(|l| l.contains("trying again")).map(|_| ())
        });
        Away { env, addr, run: id, _runner: runner }
    }

    /// The server back; the run, once it ended, and its transcript.
    fn back(&mut self) -> (serde_json::Value, String) {
        self.env.server = Some(RunningServer::start(&self.env.data_dir, self.addr));
        let run = ended(&self.env, "WEB-1");
        assert_eq!(run["id"], self.run.as_str());
        (run, transcript(&self.env, &self.run))
    }
}

#[test]
fn a_server_restarting_under_a_running_agent_loses_nothing_of_its_run() {
    let mut away = Away::start("Through a restart", "echo 'after the restart'");
    let (run, log) = away.back();
    assert_eq!(run["state"], "succeeded", "{run}");
    assert!(log.contains("output: started") && log.contains("output: after the restart"), "{log}");
    assert_eq!(away.env.json(&["task", "show", "WEB-1"])["status"], "review");
    assert_eq!(runs(&away.env, "WEB-1").len(), 1);
}

/// Output that takes long to send is all sent before the run ends: the
/// server is away for longer than the runner's quiet bound (and than the
/// two waits of 5 s it once had, which cut the tail of every run whose
/// output took over 10 s to send) while an agent that wrote three
/// batches' worth of lines has ended.
#[test]
fn output_that_takes_long_to_send_is_all_in_the_transcript_before_the_run_ends() {
    let mut away = Away::start("Slow to send", "seq 1 1500 | sed 's/^/line /'");
    // Away for longer than the bounds that once cut the output: the
    // first batch is on its way all along, the rest waits behind it.
    std::thread::sleep(Duration::from_secs(12));
    let (run, log) = away.back();
    assert_eq!(run["state"], "succeeded", "{run}");
    let lines: Vec<&str> = log.lines().filter_map(|l| l.split("output: line ").nth(1)).collect();
    let expected: Vec<String> = (1..=1500).map(|n| n.to_string()).collect();
    assert_eq!(lines, expected, "every line once and in order");
}

/// The flood: 100 MB of output in lines of 1,000 bytes.
const FLOOD: &str = "head -c 100000000 /dev/zero | tr '\\0' x | fold -w 999; echo done";
const MB: u64 = 1024 * 1024;

#[test]
fn an_agent_flooding_100_mb_of_output_leaves_the_runner_and_the_server_bounded_and_its_transcript_capped() {
    let env = Env::remote_process();
    let token = board(&env, None);
    task(&env, "Flood");
    let server_before = env.process.as_ref().unwrap().peak_rss();
    let (path, _) = config(&env, "one", &token, FLOOD, "");
    let runner = Runner::start(&env, &path);
    // A debug build takes its time over 100 MB: a longer wait than
    // `ended`'s.
    let until = Instant::now() + Duration::from_secs(600);
    let run = loop {
        let done =
            runs(&env, "WEB-1").into_iter().find(|r| r["state"] == "succeeded" || r["state"] == "failed");
        if let Some(run) = done {
            break run;
        }
        assert!(Instant::now() < until, "gave up waiting for the flood to end");
        std::thread::sleep(Duration::from_millis(200));
    };
    let runner_peak = runner.peak_rss();
    let server_peak = env.process.as_ref().unwrap().peak_rss();
    drop(runner);
    assert_eq!(run["state"], "succeeded", "{run}");

    let log = transcript(&env, run["id"].as_str().unwrap());
    assert!(log.len() < 11_000_000, "the transcript is capped: {} bytes", log.len());
    let cap = format!("[the transcript reached its cap of {DEFAULT_TRANSCRIPT_CAP} bytes: ");
    let marker = log.lines().find(|l| l.contains(&cap)).unwrap_or_else(|| {
        let last: Vec<String> = log.lines().rev().take(4).map(|l| l.chars().take(120).collect()).collect();
        panic!("a marker of the cap among the last lines: {last:#?}")
    });
    let dropped: u64 = marker
        .split("bytes: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the dropped bytes in {marker}"));
    assert!(dropped > 85_000_000, "the rest of the flood is counted as dropped: {dropped}");
    // Neither holds the flood: the runner stays well under its size, and
    // the server grows by what a few batches and the store's page cache
    // take (about 35 MB in a debug build, for 20 MB of output as for
    // 100 MB), not by the flood.
    assert!(runner_peak < 80 * MB, "the runner's peak memory: {} MB", runner_peak / MB);
    let grown = server_peak.saturating_sub(server_before);
    assert!(grown < 64 * MB, "the server grew by {} MB", grown / MB);
}

/// The runner's log tells a claim, a run's start and end, and a server
/// that went away once, then that it answers again (docs/decisions.md
/// 22.i).
#[test]
fn the_runner_logs_claims_runs_and_a_lost_server_once() {
    let mut env = Env::remote();
    let token = board(&env, None);
    task(&env, "Logged");
    let (path, _) = config(&env, "one", &token, "cat > /dev/null; echo done", "");
    let log = env.dir.path().join("runner.log");
    let _runner = Runner::start_logged(&env, &path, &log);
    let run = ended(&env, "WEB-1");
    assert_eq!(run["state"], "succeeded", "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    let text = eventually("the run's end in the log", || {
        std::fs::read_to_string(&log).ok().filter(|l| l.contains(&format!("run {id} (work WEB-1) ended")))
    });
    assert!(text.contains("one: bot claimed WEB-1 (Logged)"), "{text}");
    assert!(text.contains(&format!("one: bot starts run {id} (work WEB-1)")), "{text}");
    assert!(text.contains(&format!("run {id} (work WEB-1) ended succeeded")), "{text}");

    let addr = env.server.as_ref().unwrap().addr;
    env.server.as_mut().unwrap().stop();
    eventually("the runner to find the server away", || {
        std::fs::read_to_string(&log).ok().filter(|l| l.contains("cannot reach the server")).map(|_| ())
    });
    // Long enough for several attempts (100 ms, doubling).
    std::thread::sleep(Duration::from_secs(3));
    env.server = Some(RunningServer::start(&env.data_dir, addr));
    let text = eventually("the runner to say it reached the server again", || {
        std::fs::read_to_string(&log).ok().filter(|l| l.contains("reached the server again"))
    });
    assert_eq!(text.matches("cannot reach the server").count(), 1, "said once:\n{text}");
    assert_eq!(text.matches("reached the server again").count(), 1, "{text}");
    let away = text.lines().skip_while(|l| !l.contains("cannot reach")).count();
    assert_eq!(away, 2, "no line a failed attempt:\n{text}");
}
