//! Review and land with a real runner (docs/decisions.md, 19.m–): the
//! runner pushes a run's branch to a real bare repository and records its
//! changes; a review sends it back with a comment on a line; a landing
//! squashes or merges it onto the base, runs the project's check and
//! hands conflicts back to the agent; a discard deletes the branch.
//! Scripted command agents (shell scripts in the test's directory, named
//! by their absolute paths) against a real server.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use taskboard_tests::Env;

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
        Fixture::with(AGENT, prepare)
    }

    /// [`Fixture::with_repo`] with `agent` as the agent's script.
    fn with(agent: &str, prepare: impl FnOnce(&Repo)) -> Fixture {
        let env = Env::remote();
        let repo = Repo::new(&env);
        prepare(&repo);
        let token = board(&env, Some(&repo.bare));
        env.run(&["task", "create", "--project", "web", "--title", "Write notes", "--status", "todo"])
            .success();
        let log = env.dir.path().join("agent-log");
        std::fs::create_dir_all(&log).unwrap();
        let program = script(&env, "agent.sh", agent);
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
            taskboard_core::tls::install_provider();
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

#[test]
fn a_review_asking_for_changes_on_a_line_sends_the_work_back_with_the_comment_and_the_lines_around_it() {
    let fx = Fixture::new();
    let first = fx.first_round();
    let id = fx.task_id();
    let asked = json!({
        "verdict": "request_changes",
        "body": "Numbers, please.",
        "comments": [{"path": "notes.txt", "line": 2, "side": "new", "body": "Make this a digit."}],
    });
    let review = fx.ok("POST", &format!("/tasks/{id}/reviews"), Some(asked));
    let round2 = fx.next_run("work", &[&first]);
    assert_eq!(round2["state"], "succeeded", "{round2}");
    assert_eq!((round2["round"].as_u64(), &round2["review_id"]), (Some(2), &review["id"]), "{round2}");

    // The agent read the review on stdin and in $TASKBOARD_REVIEW_FILE:
    // the body, the comment with its path and line, the diff around it.
    let file = fx.logged("review-2.md");
    let stdin = fx.logged("stdin-2.md");
    for text in [&file, &stdin] {
        assert!(text.contains("## Changes asked for (round 2)"), "{text}");
        assert!(text.contains("> Numbers, please."), "{text}");
        assert!(text.contains("### notes.txt, line 2 (new side)\n\n> Make this a digit."), "{text}");
        assert!(text.contains("```diff\n+one\n+two  <- this line\n+three\n```"), "{text}");
    }
    assert!(stdin.starts_with("# WEB-1: Write notes"), "the task comes first: {stdin}");
    let env = fx.logged("env-2");
    let path = env.lines().find_map(|l| l.strip_prefix("TASKBOARD_REVIEW_FILE=")).expect("the review file");
    assert!(path.starts_with(&fx.state.to_string_lossy().into_owned()), "in the state directory: {path}");
    assert!(!fx.logged("env-1").contains("TASKBOARD_REVIEW_FILE"), "the first round answers no review");

    // Round 2's own change is its edit alone; the task's is the whole.
    let own = fx.ok("GET", &format!("/runs/{}/changes", round2["id"].as_str().unwrap()), None);
    assert_eq!(paths(&own), vec![("notes.txt".to_string(), "modified".to_string(), 1, 1)]);
    let diff = own["diff"].as_str().unwrap();
    assert!(diff.contains(" one\n-two\n+2\n three\n"), "{diff}");
    assert_eq!(own["base_commit"], first["commit"]);
    let task_changes = fx.ok("GET", &format!("/tasks/{id}/changes"), None);
    assert_eq!(paths(&task_changes), vec![("notes.txt".to_string(), "added".to_string(), 3, 0)]);
    assert!(task_changes["diff"].as_str().unwrap().contains("+one\n+2\n+three\n"));
    assert_eq!(fx.repo.commit("taskboard/WEB-1").as_deref(), round2["commit"].as_str(), "pushed again");
    let task = fx.task();
    assert_eq!(
        (&task["status"], &task["review"]["state"], &task["review"]["round"]),
        (&json!("review"), &json!("pending"), &json!(2))
    );
    let reviews = fx.ok("GET", &format!("/tasks/{id}/reviews"), None);
    assert_eq!(reviews[0]["comments"][0]["outdated"], true, "line 2 changed: {reviews}");
}

#[test]
fn a_squash_landing_puts_one_commit_on_the_base_and_the_task_is_done_with_it() {
    let fx = Fixture::new();
    let before = fx.repo.commit("main").unwrap();
    let work = fx.first_round();
    let id = fx.task_id();
    let land = fx.ok("POST", &format!("/tasks/{id}/merge"), Some(json!({"method": "squash"})));
    assert_eq!(land["purpose"], "land");
    let land = fx.ended(land["id"].as_str().unwrap());
    assert_eq!(land["state"], "succeeded", "{land}");
    let main = fx.repo.commit("main").unwrap();
    assert_eq!(land["merge_commit"], main.as_str(), "{land}");
    assert_eq!(
        git(&fx.repo.bare, &["rev-list", "--count", &format!("{before}..{main}")]),
        "1",
        "one new commit"
    );
    assert_eq!(git(&fx.repo.bare, &["rev-parse", &format!("{main}^")]), before);
    assert_eq!(git(&fx.repo.bare, &["log", "-1", "--format=%s", &main]), "WEB-1: Write notes");
    assert_eq!(git(&fx.repo.bare, &["show", &format!("{main}:notes.txt")]), "one\ntwo\nthree");
    assert_eq!(
        git(&fx.repo.bare, &["diff", work["commit"].as_str().unwrap(), &main]),
        "",
        "the branch's whole change"
    );
    assert_eq!(fx.repo.commit("taskboard/WEB-1"), None, "the branch is deleted");
    let task = fx.task();
    assert_eq!((&task["status"], &task["merge_commit"]), (&json!("done"), &json!(main)), "{task}");
    let log = transcript(&fx.env, land["id"].as_str().unwrap());
    assert!(log.contains(&format!("squashed taskboard/WEB-1 onto main: {main}")), "{log}");
}

#[test]
fn a_base_that_moved_under_the_branch_fails_the_landing_naming_the_file_and_the_agent_repairs_it() {
    let fx = Fixture::new();
    let work = fx.first_round();
    // Meanwhile the base gets its own notes.txt.
    fx.repo.commit_on_main("notes.txt", "from the base\n");
    let moved = fx.repo.commit("main").unwrap();
    let id = fx.task_id();
    let land = fx.ok("POST", &format!("/tasks/{id}/merge"), Some(json!({"method": "merge"})));
    let land = fx.ended(land["id"].as_str().unwrap());
    assert_eq!(land["state"], "failed", "{land}");
    assert_eq!(land["conflicts"], json!(["notes.txt"]), "{land}");
    let reason = land["stop_reason"].as_str().unwrap();
    assert!(reason.contains("main moved under taskboard/WEB-1: they conflict in notes.txt"), "{reason}");
    assert_eq!(fx.repo.commit("main").unwrap(), moved, "the base is unmoved");

    // The board hands it to the agent, told what conflicts.
    let repair = fx.next_run("work", &[&work]);
    assert_eq!((&repair["repairs_run_id"], &repair["state"]), (&land["id"], &json!("succeeded")), "{repair}");
    let prompt = fx.logged("stdin-2.md");
    assert!(prompt.contains("## Bring the branch up to date"), "{prompt}");
    assert!(prompt.contains("- Base: origin/main\n- Conflicting files: notes.txt"), "{prompt}");
    let head = fx.repo.commit("taskboard/WEB-1").unwrap();
    assert_eq!(git(&fx.repo.bare, &["merge-base", "--is-ancestor", &moved, &head]), "", "the base merged in");
    assert_eq!(fx.task()["status"], "review");

    let again = fx.ok("POST", &format!("/tasks/{id}/merge"), Some(json!({"method": "merge"})));
    let again = fx.ended(again["id"].as_str().unwrap());
    assert_eq!(again["state"], "succeeded", "{again}");
    let main = fx.repo.commit("main").unwrap();
    assert_eq!(git(&fx.repo.bare, &["show", &format!("{main}:notes.txt")]), "one\ntwo\nthree\nbase");
    assert_eq!(
        git(&fx.repo.bare, &["rev-list", "--parents", "-n", "1", &main]).split(' ').count(),
        3,
        "a merge"
    );
    assert_eq!(fx.task()["status"], "done");
}

#[test]
fn a_failing_check_blocks_the_landing_with_its_output_and_leaves_the_base_unmoved() {
    let fx = Fixture::new();
    let before = fx.repo.commit("main").unwrap();
    fx.first_round();
    let project = fx.env.json(&["project", "show", "web"]);
    let settings = json!({"check_command": "echo \"checking $TASKBOARD_BRANCH\"; test -f notes.txt && echo broken; exit 1", "on_conflict": "person"});
    fx.ok("PATCH", &format!("/projects/{}", project["id"].as_str().unwrap()), Some(settings));
    let id = fx.task_id();
    let land = fx.ok("POST", &format!("/tasks/{id}/merge"), Some(json!({"method": "squash"})));
    let land = fx.ended(land["id"].as_str().unwrap());
    assert_eq!(land["state"], "failed", "{land}");
    let reason = land["stop_reason"].as_str().unwrap();
    assert!(
        reason.contains("exited with code 1; the end of its output:\nchecking taskboard/WEB-1\nbroken"),
        "{reason}"
    );
    let log = transcript(&fx.env, land["id"].as_str().unwrap());
    assert!(log.contains("output: checking taskboard/WEB-1\n") && log.contains("output: broken\n"), "{log}");
    assert_eq!(fx.repo.commit("main").unwrap(), before, "nothing landed");
    assert!(fx.repo.commit("taskboard/WEB-1").is_some(), "the branch stays");
    assert_eq!(fx.task()["status"], "review");
}

#[test]
fn a_discard_deletes_the_branch_from_the_repository() {
    let fx = Fixture::new();
    fx.first_round();
    assert!(fx.repo.commit("taskboard/WEB-1").is_some());
    // Discarded, the task is ready again: the agent is kept to other
    // work, so that no new run of it pushes a new branch meanwhile.
    fx.env.run(&["label", "create", "elsewhere"]).success();
    fx.env.run(&["member", "update", "bot", "--agent-config", r#"{"labels":["elsewhere"]}"#]).success();
    // Work a push was refused for, kept in the runner's clone when the
    // repository's branch had moved another way.
    let cache = std::fs::read_dir(fx.state.join("repos")).unwrap().flatten().next().unwrap().path();
    let head = git(&cache, &["rev-parse", "refs/heads/taskboard/WEB-1"]);
    git(&cache, &["update-ref", "refs/taskboard/kept/WEB-1/0123456789ab", &head]);
    let id = fx.task_id();
    let discard = fx.ok("POST", &format!("/tasks/{id}/discard"), None);
    assert_eq!(discard["purpose"], "discard");
    let discard = fx.ended(discard["id"].as_str().unwrap());
    assert_eq!(discard["state"], "succeeded", "{discard}");
    assert_eq!(fx.repo.commit("taskboard/WEB-1"), None);
    let local = Command::new("git")
        .arg("-C")
        .arg(&cache)
        .args(["rev-parse", "--verify", "--quiet", "refs/heads/taskboard/WEB-1"])
        .output()
        .unwrap();
    assert!(!local.status.success(), "the clone forgot it too");
    assert_eq!(git(&cache, &["for-each-ref", "refs/taskboard/kept/"]), "", "and the work kept beside it");
    assert_eq!(fx.task()["status"], "todo");
    assert_eq!(runs(&fx.env, "WEB-1").len(), 2, "no new run");
}

/// A reviewer agent's script: it keeps its prompt and its diff file,
/// then asks for changes on line 2 through the REST API.
const REVIEWER: &str = r#"#!/bin/sh
cat > "$LOG/reviewer-stdin.md"
cp CHANGES.diff "$LOG/reviewer-changes.diff"
curl -sS -f -X POST "$TASKBOARD_SERVER/api/v1/tasks/$TASKBOARD_TASK_ID/reviews" \
  -H "Authorization: Bearer $TASKBOARD_TOKEN" -H 'Content-Type: application/json' \
  -d '{"verdict": "request_changes", "body": "Use digits.", "comments": [{"path": "notes.txt", "line": 2, "side": "new", "body": "2, not two"}]}'
"#;

#[test]
fn a_reviewer_agent_reviews_the_changes_it_is_given_and_its_review_sends_the_work_back() {
    let fx = Fixture::new();
    let rev = fx.env.json(&["member", "create", "--name", "Rev", "--slug", "rev", "--type", "agent"]);
    fx.env.run(&["project", "add-member", "web", "rev"]).success();
    let project = fx.env.json(&["project", "show", "web"]);
    fx.ok(
        "PATCH",
        &format!("/projects/{}", project["id"].as_str().unwrap()),
        Some(json!({"reviewers": ["rev"]})),
    );
    let program = script(&fx.env, "reviewer.sh", REVIEWER);
    let token = rev["token"].as_str().unwrap();
    let (path, _) = runner_file(&fx.env, "two", "rev", token, &program, &fx.log);
    let _reviewer = Runner::start(&fx.env, &path);
    let first = fx.first_round();
    let review_run = fx.next_run("review", &[]);
    assert_eq!(
        (&review_run["state"], &review_run["agent"]["slug"]),
        (&json!("succeeded"), &json!("rev")),
        "{review_run}"
    );
    let prompt = fx.logged("reviewer-stdin.md");
    assert!(prompt.contains("# WEB-1: Write notes"), "{prompt}");
    assert!(
        prompt.contains("## Changes to review") && prompt.contains("- notes.txt: added +3 -0"),
        "{prompt}"
    );
    assert!(prompt.contains("+one\n+two\n+three\n"), "the diff: {prompt}");
    assert!(prompt.contains("review_submit") && prompt.contains("/reviews"), "how to file it: {prompt}");
    let id = fx.task_id();
    let changes = fx.ok("GET", &format!("/tasks/{id}/changes"), None);
    assert_eq!(fx.logged("reviewer-changes.diff"), changes["diff"].as_str().unwrap());
    let reviews = fx.ok("GET", &format!("/tasks/{id}/reviews"), None);
    assert_eq!(
        (&reviews[0]["author"]["slug"], &reviews[0]["verdict"]),
        (&json!("rev"), &json!("request_changes"))
    );
    // Its review sends the work back to the coder, with its comment.
    let round2 = fx.next_run("work", &[&first]);
    assert_eq!(round2["review_id"], reviews[0]["id"], "{round2}");
    assert!(fx.logged("review-2.md").contains("> 2, not two"));
}

#[test]
fn a_rebase_landing_replays_the_branch_onto_a_base_that_moved() {
    let fx = Fixture::new();
    let work = fx.first_round();
    fx.repo.commit_on_main("other.txt", "elsewhere\n");
    let moved = fx.repo.commit("main").unwrap();
    let id = fx.task_id();
    let land = fx.ok("POST", &format!("/tasks/{id}/merge"), Some(json!({"method": "rebase"})));
    let land = fx.ended(land["id"].as_str().unwrap());
    assert_eq!(land["state"], "succeeded", "{land}");
    let main = fx.repo.commit("main").unwrap();
    assert_eq!(land["merge_commit"], main.as_str());
    assert_eq!(
        git(&fx.repo.bare, &["rev-parse", &format!("{main}^")]),
        moved,
        "on top of the base, no merge"
    );
    assert_ne!(main, work["commit"].as_str().unwrap(), "replayed");
    assert_eq!(git(&fx.repo.bare, &["log", "-1", "--format=%s", &main]), "WEB-1: Write notes");
    assert_eq!(git(&fx.repo.bare, &["show", &format!("{main}:notes.txt")]), "one\ntwo\nthree");
    assert_eq!(git(&fx.repo.bare, &["show", &format!("{main}:other.txt")]), "elsewhere");
    assert_eq!(fx.task()["status"], "done");
}

#[test]
fn an_agent_that_pushes_its_branch_itself_still_has_what_it_left_pushed_on_top() {
    let agent = "#!/bin/sh\ncat > /dev/null\nprintf 'one\\n' > notes.txt\ngit add notes.txt\n\
        git -c user.name=bot -c user.email=bot@example.invalid commit --quiet -m 'bot: notes'\n\
        git push --quiet origin HEAD:refs/heads/taskboard/WEB-1\necho later > later.txt\necho Done.\n";
    let fx = Fixture::with(agent, |_| {});
    let run = fx.first_round();
    let head = fx.repo.commit("taskboard/WEB-1").unwrap();
    assert_eq!(run["commit"], head.as_str(), "{run}");
    assert_eq!(git(&fx.repo.bare, &["log", "--format=%s", "-2", &head]), "WEB-1: Write notes\nbot: notes");
    assert_eq!(git(&fx.repo.bare, &["show", &format!("{head}:later.txt")]), "later");
}
