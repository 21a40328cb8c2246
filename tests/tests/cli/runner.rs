//! `taskboard agent run` against a real server: shell-script agents in
//! real processes, real git repositories in temporary directories.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;
use taskboard_tests::Env;

/// How long a test waits for what must happen before failing.
const DEADLINE: Duration = Duration::from_secs(60);

/// Asks `probe` again until it answers, or fails after [`DEADLINE`].
#[track_caller]
pub(super) fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < until, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A board with project `web` (on `repo` when given) and agent `bot`, a
/// member of it; answers the agent's token.
pub(super) fn board(env: &Env, repo: Option<&Path>) -> String {
    let mut create = vec!["project", "create", "--name", "Web", "--slug", "web"];
    let repo = repo.map(|r| r.to_string_lossy().into_owned());
    if let Some(r) = &repo {
        create.extend(["--repo", r]);
    }
    env.run(&create).success();
    let bot = env.json(&["member", "create", "--name", "Bot", "--slug", "bot", "--type", "agent"]);
    env.run(&["project", "add-member", "web", "bot"]).success();
    bot["token"].as_str().expect("an agent's token").to_string()
}

pub(super) fn task(env: &Env, title: &str) {
    env.run(&["task", "create", "--project", "web", "--title", title, "--status", "todo"]).success();
}

/// A runner's configuration file with one agent running `script` under
/// `sh -c`; the tests' repositories are local ones, which it allows.
pub(super) fn config(
    env: &Env,
    name: &str,
    token: &str,
    script: &str,
    agent_extra: &str,
) -> (PathBuf, PathBuf) {
    let state = env.dir.path().join(format!("{name}-state"));
    let path = env.dir.path().join(format!("{name}.toml"));
    let server = env.remote_server().expect("a server").0;
    let text = format!(
        "server = {server:?}\nname = {name:?}\nstate_dir = {state:?}\nlease_seconds = 30\n\
         allow_local_repos = true\n\n\
         [[agent]]\nslug = \"bot\"\ntoken = {token:?}\ncommand = [\"sh\", \"-c\", {script:?}]\n{agent_extra}\n"
    );
    std::fs::write(&path, text).unwrap();
    (path, state)
}

/// A running `taskboard agent run`, stopped with SIGTERM when dropped.
pub(super) struct Runner(Child);

/// `taskboard agent run --config CONFIG` on the test's board, its stdout
/// dropped, for a test to add to before [`Runner::spawn`].
pub(super) fn runner_command(env: &Env, config: &Path) -> Command {
    let mut cmd = env.std_cmd();
    cmd.args(["agent", "run", "--config"]).arg(config).stdout(std::process::Stdio::null());
    cmd
}

impl Runner {
    pub(super) fn start(env: &Env, config: &Path) -> Runner {
        Runner::spawn(runner_command(env, config))
    }

    /// [`Runner::start`] with the runner's stderr written to `log`.
    pub(super) fn start_logged(env: &Env, config: &Path, log: &Path) -> Runner {
        let mut cmd = runner_command(env, config);
        cmd.stderr(std::fs::File::create(log).unwrap());
        Runner::spawn(cmd)
    }

    /// Starts `cmd`, a runner (its process, not a parent of it).
    pub(super) fn spawn(mut cmd: Command) -> Runner {
        Runner(cmd.spawn().expect("the runner starts"))
    }

    /// The peak resident memory of the runner's process so far, in bytes.
    pub(super) fn peak_rss(&self) -> u64 {
        taskboard_tests::peak_rss(self.0.id())
    }

    pub(super) fn signal(&self, signal: &str) {
        let pid = self.0.id().to_string();
        assert!(Command::new("kill").args([signal, &pid]).status().unwrap().success());
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            self.signal("-TERM");
        }
        let _ = self.0.wait();
    }
}

/// The runs of a task, newest first.
pub(super) fn runs(env: &Env, key: &str) -> Vec<Value> {
    env.json(&["run", "list", "--task", key]).as_array().unwrap().clone()
}

/// The task's run once it is in a final state.
#[track_caller]
pub(super) fn ended(env: &Env, key: &str) -> Value {
    eventually(&format!("the run of {key} to end"), || {
        runs(env, key)
            .into_iter()
            .find(|r| !matches!(r["state"].as_str(), Some("starting" | "running" | "awaiting_input")))
    })
}

/// A person answers run `run`'s question with `option`, through the
/// HTTP API; answers the run.
pub(super) fn answer(env: &Env, run: &str, option: &str) -> Value {
    let server = env.server.as_ref().unwrap();
    let url = format!("{}/api/v1/runs/{run}/answer", server.url);
    server.runtime.block_on(async {
        taskboard_core::tls::install_provider();
        let response = reqwest::Client::new()
            .post(url)
            .bearer_auth(&server.token)
            .json(&serde_json::json!({"option_id": option}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json::<Value>().await.unwrap()
    })
}

pub(super) fn transcript(env: &Env, run: &str) -> String {
    let out = env.cmd().args(["run", "logs", run]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// True once no process of that pid runs (gone, or a zombie nobody has
/// reaped yet).
pub(super) fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// The pids a never-ending agent wrote: its own and its child's.
fn pids(dir: &Path) -> Vec<String> {
    eventually("the agent to write its pids", || {
        let leader = std::fs::read_to_string(dir.join("leader")).ok()?;
        let child = std::fs::read_to_string(dir.join("child")).ok()?;
        Some(vec![leader.trim().to_string(), child.trim().to_string()])
            .filter(|p| p.iter().all(|p| !p.is_empty()))
    })
}

/// An agent that never ends: it starts a child and waits for it.
const FOREVER: &str = "echo $$ > \"$PIDS/leader.tmp\"; mv \"$PIDS/leader.tmp\" \"$PIDS/leader\"; \
    sleep 100000 & echo $! > \"$PIDS/child.tmp\"; mv \"$PIDS/child.tmp\" \"$PIDS/child\"; wait";

#[test]
fn a_succeeding_agent_commits_in_its_worktree_and_the_task_goes_to_review() {
    let env = Env::remote();
    let origin = env.dir.path().join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    git(&origin, &["init", "--quiet", "--initial-branch", "main"]);
    std::fs::write(origin.join("README"), "hello\n").unwrap();
    git(&origin, &["add", "README"]);
    git(&origin, &["commit", "--quiet", "-m", "first"]);
    let token = board(&env, Some(&origin));
    task(&env, "Write done.txt");
    // Reads its task, commits a file, and leaves another uncommitted for
    // the runner to commit.
    let script = "cat > task.md; test -f README || exit 9; echo done > done.txt; git add done.txt; \
        git -c user.name=bot -c user.email=bot@example.invalid commit --quiet -m 'agent: done'; \
        echo left > left.txt; \
        echo \"finished $TASKBOARD_TASK run=$TASKBOARD_RUN token=${TASKBOARD_TOKEN%%-*} server=$TASKBOARD_SERVER\"";
    let (path, state) = config(&env, "one", &token, script, "");
    let runner = Runner::start(&env, &path);
    let run = ended(&env, "WEB-1");
    drop(runner);
    assert_eq!(run["state"], "succeeded", "{run}");
    assert_eq!(run["exit_code"], 0);
    assert_eq!(run["runner"], "one");
    assert_eq!(run["branch"], "taskboard/WEB-1");
    let commit = run["commit"].as_str().expect("the final commit").to_string();
    assert_eq!(env.json(&["task", "show", "WEB-1"])["status"], "review");
    let id = run["id"].as_str().unwrap();
    let log = transcript(&env, id);
    let server = &env.server.as_ref().unwrap().url;
    assert!(log.contains(&format!("finished WEB-1 run={id} token=tbk server={server}")), "{log}");

    let caches: Vec<_> = std::fs::read_dir(state.join("repos")).unwrap().flatten().collect();
    assert_eq!(caches.len(), 1, "one cached clone");
    let cache = caches[0].path();
    assert_eq!(git(&cache, &["rev-parse", "refs/heads/taskboard/WEB-1"]), commit);
    assert_eq!(git(&cache, &["show", &format!("{commit}:done.txt")]), "done");
    assert_eq!(
        git(&cache, &["show", &format!("{commit}:left.txt")]),
        "left",
        "uncommitted work is committed"
    );
    let brief = git(&cache, &["show", &format!("{commit}:task.md")]);
    assert!(brief.contains("# WEB-1: Write done.txt"), "{brief}");
    assert!(brief.contains("- Branch: taskboard/WEB-1"), "{brief}");
    // The agent's commit, then the runner's, on top of the origin's.
    let subjects = git(&cache, &["log", "--format=%s", &commit]);
    let subjects: Vec<&str> = subjects.lines().collect();
    assert_eq!(subjects.len(), 3, "{subjects:?}");
    assert_eq!(subjects[1], "agent: done");
    assert_eq!(subjects[2], "first");
}

#[test]
fn a_failing_agent_fails_its_run_and_gives_the_task_back_with_its_output() {
    let env = Env::remote();
    let token = board(&env, None);
    task(&env, "Break");
    let script = "echo \"in $(basename \"$PWD\")\"; ls -A | wc -l; echo 'it went wrong' >&2; exit 3";
    let (path, _) = config(&env, "one", &token, script, "");
    let runner = Runner::start(&env, &path);
    let run = ended(&env, "WEB-1");
    drop(runner);
    assert_eq!(run["state"], "failed", "{run}");
    assert_eq!(run["exit_code"], 3);
    assert!(run["branch"].is_null() && run["commit"].is_null(), "{run}");
    let task = env.json(&["task", "show", "WEB-1"]);
    assert_eq!(task["status"], "todo");
    assert!(task["assignee"].is_null(), "{task}");
    let log = transcript(&env, run["id"].as_str().unwrap());
    assert!(log.contains("in WEB-1-"), "a scratch directory of the task: {log}");
    assert!(log.contains("output: 0"), "the scratch directory starts empty: {log}");
    let comments = env.json(&["message", "list", "--task", "WEB-1"]);
    let quoted = comments.as_array().unwrap().iter().any(|m| {
        m["content"].as_str().is_some_and(|c| c.contains("it went wrong") && c.contains("exit code 3"))
    });
    assert!(quoted, "a comment quotes the end of the output: {comments}");
}

#[test]
fn an_agent_that_never_ends_times_out_with_its_whole_process_group() {
    let env = Env::remote();
    let token = board(&env, None);
    task(&env, "Forever");
    let dir = env.dir.path().join("pids");
    std::fs::create_dir_all(&dir).unwrap();
    let extra = format!("timeout_seconds = 1\nenv = {{ PIDS = {dir:?} }}");
    let (path, _) = config(&env, "one", &token, FOREVER, &extra);
    let _runner = Runner::start(&env, &path);
    let pids = pids(&dir);
    let run = ended(&env, "WEB-1");
    assert_eq!(run["state"], "timed_out", "{run}");
    assert!(run["stop_reason"].as_str().is_some_and(|r| r.contains("no end after 1 seconds")), "{run}");
    for pid in &pids {
        eventually(&format!("process {pid} to end"), || gone(pid).then_some(()));
    }
}

#[test]
fn cancelling_a_run_on_the_board_kills_the_agent_and_its_children() {
    let env = Env::remote();
    let token = board(&env, None);
    task(&env, "Forever");
    let dir = env.dir.path().join("pids");
    std::fs::create_dir_all(&dir).unwrap();
    let extra = format!("env = {{ PIDS = {dir:?} }}");
    let (path, _) = config(&env, "one", &token, FOREVER, &extra);
    let _runner = Runner::start(&env, &path);
    let pids = pids(&dir);
    let run = eventually("the run to be running", || {
        runs(&env, "WEB-1").into_iter().find(|r| r["state"] == "running")
    });
    assert!(pids.iter().all(|p| !gone(p)));
    env.run(&["run", "cancel", run["id"].as_str().unwrap()]).success();
    for pid in &pids {
        eventually(&format!("process {pid} to end"), || gone(pid).then_some(()));
    }
    assert_eq!(ended(&env, "WEB-1")["state"], "cancelled");
}

#[test]
fn a_runner_killed_outright_leaves_no_agent_its_run_ends_lost_and_a_new_runner_claims_the_task_once() {
    let env = Env::remote();
    let token = board(&env, None);
    task(&env, "Forever");
    let dir = env.dir.path().join("pids");
    std::fs::create_dir_all(&dir).unwrap();
    let extra = format!("env = {{ PIDS = {dir:?} }}");
    let (path, _) = config(&env, "one", &token, FOREVER, &extra);
    // The shortest lease, so that its end comes soon.
    let text = std::fs::read_to_string(&path).unwrap().replace("lease_seconds = 30", "lease_seconds = 10");
    std::fs::write(&path, text).unwrap();
    let first = Runner::start(&env, &path);
    let first_pids = pids(&dir);
    let run = eventually("the run to be running", || {
        runs(&env, "WEB-1").into_iter().find(|r| r["state"] == "running")
    });
    // Killed outright, it stops nothing itself: the agent's guard ends
    // the agent's whole group.
    first.signal("-KILL");
    drop(first);
    for pid in &first_pids {
        eventually(&format!("process {pid} to end"), || gone(pid).then_some(()));
    }
    let lost = ended(&env, "WEB-1");
    assert_eq!(lost["id"], run["id"]);
    assert_eq!(lost["state"], "lost", "{lost}");
    let task = env.json(&["task", "show", "WEB-1"]);
    assert_eq!(task["status"], "todo", "{task}");
    assert!(task["assignee"].is_null() && task["lease"].is_null(), "{task}");

    for f in ["leader", "child"] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    let _second = Runner::start(&env, &path);
    let again = pids(&dir);
    let second = eventually("a new run to be running", || {
        runs(&env, "WEB-1").into_iter().find(|r| r["state"] == "running")
    });
    assert_ne!(second["id"], run["id"]);
    assert_ne!(again, first_pids);
    assert_eq!(runs(&env, "WEB-1").len(), 2, "the task is claimed once more");
}

#[test]
fn two_runners_of_one_agent_never_run_a_task_twice() {
    let env = Env::remote();
    let token = board(&env, None);
    // The agent claims tasks labelled `auto`; the last task is not, so
    // only a person starts it.
    env.run(&["label", "create", "auto"]).success();
    env.run(&["member", "update", "bot", "--agent-config", r#"{"labels":["auto"]}"#]).success();
    for i in 1..=8 {
        let title = format!("T{i}");
        env.run(&["task", "create", "--project", "web", "--title", &title, "--label", "auto"]).success();
    }
    let log = env.dir.path().join("log");
    let script = format!("echo \"$TASKBOARD_TASK $TASKBOARD_RUN\" >> {log:?}");
    let extra = "max_runs = 2";
    let (a, _) = config(&env, "a", &token, &script, extra);
    let (b, _) = config(&env, "b", &token, &script, extra);
    let _ra = Runner::start(&env, &a);
    let _rb = Runner::start(&env, &b);
    let keys: Vec<String> = (1..=8).map(|i| format!("WEB-{i}")).collect();
    for key in &keys {
        assert_eq!(ended(&env, key)["state"], "succeeded");
    }
    // A run a person starts goes to one runner only.
    task(&env, "Asked for");
    let asked = env.json(&["run", "start", "WEB-9", "--agent", "bot"]);
    let ended9 = ended(&env, "WEB-9");
    assert_eq!(ended9["id"], asked["id"]);
    assert_eq!(ended9["state"], "succeeded", "{ended9}");

    let text = std::fs::read_to_string(&log).unwrap();
    let mut started: Vec<&str> = text.lines().map(|l| l.split(' ').next().unwrap()).collect();
    started.sort_by_key(|k| k[4..].parse::<u32>().unwrap());
    let mut all = keys.clone();
    all.push("WEB-9".into());
    assert_eq!(started, all, "each task started once: {text}");
    for key in &all {
        assert_eq!(runs(&env, key).len(), 1, "{key} has one run");
        assert_eq!(env.json(&["task", "show", key])["status"], "review");
    }
}
