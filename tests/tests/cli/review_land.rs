//! Review and land with a real runner (docs/decisions.md, 19.m–): the
//! runner pushes a run's branch to a real bare repository and records its
//! changes; a review sends it back with a comment on a line; a landing
//! squashes or merges it onto the base, runs the project's check and
//! hands conflicts back to the agent; a discard deletes the branch.
//! Scripted command agents (shell scripts in the test's directory, named
//! by their absolute paths) against a real server.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(unused_imports)]
use serde_json::{Value, json};
use taskboard_tests::Env;

#[allow(unused_imports)]
use super::runner::{Runner, board, eventually, git, runs, transcript};

/// The agent's script: it keeps what it was given in `$LOG` (its stdin
/// and review file, numbered by run), then does its round's work.
/// - a round sent back with a review (`$TASKBOARD_REVIEW_FILE`): line 2
///   of notes.txt becomes a digit;
/// - a branch to bring up to date (its prompt says so): it merges the
///   base and resolves a conflict by keeping both sides;
/// - else the first round: notes.txt with three lines.
const AGENT: &str = r#"#!/bin/sh
n=$(cat "$LOG/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$LOG/count"
cat > "$LOG/stdin-$n.md"
env | grep '^TASKBOARD_' | sort > "$LOG/env-$n"
if [ -n "$TASKBOARD_REVIEW_FILE" ]; then
  cp "$TASKBOARD_REVIEW_FILE" "$LOG/review-$n.md"
  sed -i 's/^two$/2/' notes.txt
  echo "Made line 2 a digit, as asked."
elif grep -q '^## Bring the branch up to date' "$LOG/stdin-$n.md"; then
  base=$(sed -n 's/^- Base: //p' "$LOG/stdin-$n.md")
  if ! git -c user.name=bot -c user.email=bot@example.invalid merge --quiet "$base" >/dev/null 2>&1; then
    { echo one; echo two; echo three; echo base; } > notes.txt
    git add notes.txt
    git -c user.name=bot -c user.email=bot@example.invalid commit --quiet --no-edit
  fi
  echo "Merged $base."
else
  printf 'one\ntwo\nthree\n' > notes.txt
  echo "Wrote notes.txt with three lines."
fi
"#;

/// A bare repository `origin.git` whose `main` holds README, and a
/// clone of it (`seed`) to move `main` with.
struct Repo {
    bare: PathBuf,
    seed: PathBuf,
}

impl Repo {
    fn new(env: &Env) -> Repo {
        let bare = env.dir.path().join("origin.git");
        let seed = env.dir.path().join("seed");
        let made = Command::new("git")
            .args(["init", "--quiet", "--bare", "--initial-branch", "main"])
            .arg(&bare)
            .status()
            .unwrap();
        assert!(made.success());
        std::fs::create_dir_all(&seed).unwrap();
        git(&seed, &["init", "--quiet", "--initial-branch", "main"]);
        std::fs::write(seed.join("README"), "hello\n").unwrap();
        git(&seed, &["add", "README"]);
        git(&seed, &["commit", "--quiet", "-m", "first"]);
        git(&seed, &["remote", "add", "origin", &bare.to_string_lossy()]);
        git(&seed, &["push", "--quiet", "origin", "main"]);
        Repo { bare, seed }
    }

    /// The commit `rev` names in the bare repository, if any.
    fn commit(&self, rev: &str) -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.bare)
            .args(["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])
            .output()
            .unwrap();
        out.status.success().then(|| String::from_utf8(out.stdout).unwrap().trim().to_string())
    }

    /// Commits `text` as `path` on `main` of the bare repository.
    fn commit_on_main(&self, path: &str, text: &str) {
        git(&self.seed, &["pull", "--quiet", "--ff-only", "origin", "main"]);
        std::fs::write(self.seed.join(path), text).unwrap();
        git(&self.seed, &["add", path]);
        git(&self.seed, &["commit", "--quiet", "-m", &format!("base: {path}")]);
        git(&self.seed, &["push", "--quiet", "origin", "main"]);
    }
}

/// A board with project `web` on the bare repository, agent `bot` and a
/// runner for it running [`AGENT`].
struct Fixture {
    env: Env,
    repo: Repo,
    /// Where the agent keeps what it was given.
    log: PathBuf,
    state: PathBuf,
    _runner: Runner,
}

/// Writes an executable script into the test's directory; answers its
/// absolute path.
fn script(env: &Env, name: &str, text: &str) -> PathBuf {
    let path = env.dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A runner's file with one agent, `slug`, running `program`.
fn runner_file(
    env: &Env,
    name: &str,
    slug: &str,
    token: &str,
    program: &Path,
    log: &Path,
) -> (PathBuf, PathBuf) {
    let state = env.dir.path().join(format!("{name}-state"));
    let path = env.dir.path().join(format!("{name}.toml"));
    let server = env.remote_server().expect("a server").0;
    let text = format!(
        "server = {server:?}\nname = {name:?}\nstate_dir = {state:?}\nlease_seconds = 30\n\
         allow_local_repos = true\n\n\
         [[agent]]\nslug = {slug:?}\ntoken = {token:?}\ncommand = [{program:?}]\nenv = {{ LOG = {log:?} }}\n"
    );
    std::fs::write(&path, text).unwrap();
    (path, state)
}

impl Fixture {
    /// The fixture with a task `WEB-1` "Write notes", claimed by the
    /// agent once the runner starts.
    fn new() -> Fixture {
        Fixture::with_repo(|_| {})
    }

    /// [`Fixture::new`], with `prepare` changing the bare repository first.
    fn with_repo(prepare: impl FnOnce(&Repo)) -> Fixture {
        let env = Env::remote();
        let repo = Repo::new(&env);
        prepare(&repo);
        let token = board(&env, Some(&repo.bare));
        env.run(&["task", "create", "--project", "web", "--title", "Write notes", "--status", "todo"])
            .success();
        let log = env.dir.path().join("agent-log");
        std::fs::create_dir_all(&log).unwrap();
        let program = script(&env, "agent.sh", AGENT);
        let (path, state) = runner_file(&env, "one", "bot", &token, &program, &log);
        let runner = Runner::start_logged(&env, &path, &env.dir.path().join("runner.log"));
        Fixture { env, repo, log, state, _runner: runner }
    }

    fn task(&self) -> Value {
        self.env.json(&["task", "show", "WEB-1"])
    }

    fn task_id(&self) -> String {
        self.task()["id"].as_str().unwrap().to_string()
    }

    /// Calls the API as the owner; answers the status and the body.
    fn api(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let server = self.env.server.as_ref().unwrap();
        let url = format!("{}/api/v1{path}", server.url);
        server.runtime.block_on(async {
            let client = reqwest::Client::new();
            let request = match method {
                "GET" => client.get(url),
                "POST" => client.post(url),
                "PATCH" => client.patch(url),
                other => panic!("{other}"),
            };
            let request = match body {
                Some(b) => request.json(&b),
                None => request,
            };
            let response = request.bearer_auth(&server.token).send().await.unwrap();
            let status = response.status().as_u16();
            let text = response.text().await.unwrap();
            (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
        })
    }

    #[track_caller]
    fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, body) = self.api(method, path, body);
        assert!((200..300).contains(&status), "{method} {path}: {status} {body}");
        body
    }

    /// The run `id` once it is in a final state.
    #[track_caller]
    fn ended(&self, id: &str) -> Value {
        eventually(&format!("run {id} to end"), || {
            let run = self.ok("GET", &format!("/runs/{id}"), None);
            (!matches!(run["state"].as_str(), Some("starting" | "running" | "awaiting_input"))).then_some(run)
        })
    }

    /// The newest run of WEB-1 of `purpose` other than those in `seen`,
    /// once it has ended.
    #[track_caller]
    fn next_run(&self, purpose: &str, seen: &[&Value]) -> Value {
        let run = eventually(&format!("a {purpose} run of WEB-1"), || {
            runs(&self.env, "WEB-1")
                .into_iter()
                .find(|r| r["purpose"] == purpose && !seen.iter().any(|s| s["id"] == r["id"]))
        });
        self.ended(run["id"].as_str().unwrap())
    }

    /// The first round: the agent's run, ended.
    #[track_caller]
    fn first_round(&self) -> Value {
        let run = self.next_run("work", &[]);
        assert_eq!(run["state"], "succeeded", "{run}");
        run
    }

    fn logged(&self, name: &str) -> String {
        std::fs::read_to_string(self.log.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

fn paths(changes: &Value) -> Vec<(String, String, u64, u64)> {
    changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["status"].as_str().unwrap().to_string(),
                f["additions"].as_u64().unwrap(),
                f["deletions"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_run_pushes_its_branch_to_the_repository_and_records_its_changes_for_review() {
    let fx = Fixture::new();
    let base = fx.repo.commit("main").unwrap();
    let run = fx.first_round();
    // The branch is in the repository, its commit named for the task
    // and saying what the agent said.
    let head = fx.repo.commit("taskboard/WEB-1").expect("the branch in the repository");
    assert_eq!(run["commit"], head.as_str(), "{run}");
    let message = git(&fx.repo.bare, &["log", "-1", "--format=%s%n%n%b", &head]);
    assert!(message.starts_with("WEB-1: Write notes\n\n"), "{message}");
    assert!(message.contains("Wrote notes.txt with three lines."), "{message}");
    assert!(message.contains(&format!("Taskboard-Run: {}", run["id"].as_str().unwrap())), "{message}");
    assert_eq!(git(&fx.repo.bare, &["rev-parse", &format!("{head}^")]), base, "one commit on the base");

    // The changes, as the board serves them without the repository.
    let id = fx.task_id();
    let changes = fx.ok("GET", &format!("/tasks/{id}/changes"), None);
    assert_eq!(paths(&changes), vec![("notes.txt".to_string(), "added".to_string(), 3, 0)]);
    assert_eq!(
        (changes["base_commit"].as_str(), changes["head_commit"].as_str()),
        (Some(&*base), Some(&*head))
    );
    assert_eq!(changes["branch"], "taskboard/WEB-1");
    let diff = changes["diff"].as_str().unwrap();
    assert!(diff.contains("+++ b/notes.txt\n@@ -0,0 +1,3 @@\n+one\n+two\n+three\n"), "{diff}");
    assert_eq!(changes["truncated"], false);
    let own = fx.ok("GET", &format!("/runs/{}/changes", run["id"].as_str().unwrap()), None);
    assert_eq!(own["diff"], changes["diff"], "the first round's change is the task's");

    let task = fx.task();
    assert_eq!(task["status"], "review", "{task}");
    assert_eq!(task["review"]["state"], "pending", "{task}");
    assert_eq!(task["review"]["round"], 1, "{task}");
    assert_eq!(task["changes"]["additions"], 3, "{task}");
}

#[test]
fn a_push_the_repository_refuses_fails_the_run_with_gits_message_and_where_the_work_is() {
    let fx = Fixture::with_repo(|repo| {
        let hook = repo.bare.join("hooks/pre-receive");
        std::fs::write(&hook, "#!/bin/sh\necho 'pushes are closed today' >&2\nexit 1\n").unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    });
    let run = fx.next_run("work", &[]);
    assert_eq!(run["state"], "failed", "{run}");
    let reason = run["stop_reason"].as_str().unwrap();
    assert!(reason.contains("the repository refused the branch taskboard/WEB-1"), "{reason}");
    assert!(reason.contains("pushes are closed today"), "git's message: {reason}");
    let cache = std::fs::read_dir(fx.state.join("repos")).unwrap().flatten().next().unwrap().path();
    assert!(reason.contains(&format!("runner one's clone {}", cache.display())), "{reason}");
    let commit = run["commit"].as_str().expect("the commit the work is at");
    assert!(reason.contains(commit), "{reason}");
    assert_eq!(git(&cache, &["rev-parse", "refs/heads/taskboard/WEB-1"]), commit, "the work is there");
    assert_eq!(git(&cache, &["show", &format!("{commit}:notes.txt")]), "one\ntwo\nthree");
    assert_eq!(fx.repo.commit("taskboard/WEB-1"), None);
    let task = fx.task();
    assert_eq!(task["status"], "todo", "{task}");
    assert!(task["changes"].is_null(), "{task}");
}
