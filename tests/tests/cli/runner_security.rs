//! The runner as a trust boundary (docs/decisions.md, 20.k–20.o): what
//! an agent sees of the runner's environment, which repositories the
//! runner clones, and who may read its state directory. Real runner
//! processes against a real server, with shell-script agents.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use taskboard_tests::Env;

use super::runner::{Runner, ended, eventually, git, runner_command, runs, transcript};

fn project(env: &Env, slug: &str, repo: Option<&str>) {
    let name = format!("Project {slug}");
    let mut args = vec!["project", "create", "--name", &name, "--slug", slug];
    // With `=`, so that an address starting with '-' is the flag's value.
    let repo = repo.map(|r| format!("--repo={r}"));
    args.extend(repo.as_deref());
    env.run(&args).success();
}

/// A new agent member of `role` in `projects`, claiming only tasks
/// labelled `label` when given; answers its token.
fn agent(env: &Env, slug: &str, role: &str, projects: &[&str], label: Option<&str>) -> String {
    let mut args =
        vec!["member", "create", "--name", slug, "--slug", slug, "--type", "agent", "--role", role];
    if let Some(l) = label {
        env.run(&["label", "create", l]).success();
        args.extend(["--agent-label", l]);
    }
    let token = env.json(&args)["token"].as_str().expect("an agent's token").to_string();
    for p in projects {
        env.run(&["project", "add-member", p, slug]).success();
    }
    token
}

/// A ready task of `project`; answers its key.
fn task(env: &Env, project: &str, title: &str) -> String {
    let task = env.json(&["task", "create", "--project", project, "--title", title, "--status", "todo"]);
    task["key"].as_str().expect("the task's key").to_string()
}

/// A git repository holding `files`, one commit on `main`.
fn origin(env: &Env, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = env.dir.path().join(name);
    for (path, text) in files {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    git(&dir, &["init", "--quiet", "--initial-branch", "main"]);
    git(&dir, &["add", "--all"]);
    git(&dir, &["commit", "--quiet", "-m", "first"]);
    dir
}

/// A runner's file named `name`, with `top` lines before the `agents`;
/// answers it and the runner's state directory.
fn runner_file(env: &Env, name: &str, top: &str, agents: &str) -> (PathBuf, PathBuf) {
    let state = env.dir.path().join(format!("{name}-state"));
    let path = env.dir.path().join(format!("{name}.toml"));
    let server = env.remote_server().expect("a server").0;
    let text = format!(
        "server = {server:?}\nname = {name:?}\nstate_dir = {state:?}\nlease_seconds = 30\n{top}\n{agents}"
    );
    std::fs::write(&path, text).unwrap();
    (path, state)
}

/// `[[agent]] slug` with its token and a `sh -c script` command.
fn sh_agent(slug: &str, token: &str, script: &str, extra: &str) -> String {
    format!(
        "[[agent]]\nslug = {slug:?}\ntoken = {token:?}\ncommand = [\"sh\", \"-c\", {script:?}]\n{extra}\n"
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode()
        & 0o7777
}

/// `cmd` run under `umask`: a shell sets it and becomes the command, so
/// the child is still the runner itself.
fn under_umask(cmd: &Command, umask: &str) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        sh.current_dir(dir);
    }
    sh.stdout(std::process::Stdio::null());
    sh
}

/// What a shell's `env` printed into a transcript, by name.
fn printed_env(log: &str) -> BTreeMap<String, String> {
    log.lines()
        .filter_map(|l| l.split_once(" output: ")?.1.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn an_agent_sees_of_the_runners_environment_only_path_home_lang_tz_then_its_own_env_and_its_run() {
    let env = Env::remote();
    project(&env, "web", None);
    let coder = agent(&env, "coder", "member", &["web"], None);
    // An admin agent of the same runner, which claims nothing here.
    let boss = agent(&env, "boss", "admin", &[], Some("boss-only"));
    let key = task(&env, "web", "Print the environment");
    let agents = "[[agent]]\nslug = \"coder\"\ntoken_env = \"CODER_TOKEN\"\ncommand = [\"env\"]\n\
        env = { CODER_OWN = \"mine\" }\n\n\
        [[agent]]\nslug = \"boss\"\ntoken_env = \"BOSS_TOKEN\"\ncommand = [\"true\"]\n";
    let (path, _) = runner_file(&env, "two", "", agents);
    let mut cmd = runner_command(&env, &path);
    cmd.env("CODER_TOKEN", &coder)
        .env("BOSS_TOKEN", &boss)
        .env("IS_SANDBOX", "yes")
        .env("RUNNER_SECRET", "s3cret-of-the-runner")
        .env("LANG", "C.UTF-8")
        .env("TZ", "UTC")
        .env("PATH", format!("relative/bin::{}", std::env::var("PATH").unwrap()));
    let runner = Runner::spawn(cmd);
    let run = ended(&env, &key);
    drop(runner);
    assert_eq!(run["state"], "succeeded", "{run}");
    let id = run["id"].as_str().unwrap();
    let log = transcript(&env, id);
    assert!(!log.contains(&boss), "the admin agent's token is nowhere in coder's transcript: {log}");
    assert!(!log.contains("s3cret-of-the-runner"), "{log}");

    let vars = printed_env(&log);
    let shells = ["PWD", "OLDPWD", "SHLVL", "_"];
    let kept = ["PATH", "HOME", "LANG", "TZ", "CODER_OWN"];
    let others: Vec<&String> = vars
        .keys()
        .filter(|k| {
            !k.starts_with("TASKBOARD_") && !kept.contains(&k.as_str()) && !shells.contains(&k.as_str())
        })
        .collect();
    assert!(
        others.is_empty(),
        "nothing else of the runner's (BOSS_TOKEN, IS_SANDBOX …): {others:?} in {log}"
    );
    let path = &vars["PATH"];
    assert!(
        !path.is_empty() && path.split(':').all(|p| p.starts_with('/')),
        "PATH's absolute entries: {path}"
    );
    let absolute: Vec<String> = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .filter(|p| p.is_absolute())
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(vars["PATH"], absolute.join(":"));
    assert_eq!(vars["HOME"], std::env::var("HOME").unwrap());
    assert_eq!((vars["LANG"].as_str(), vars["TZ"].as_str()), ("C.UTF-8", "UTC"));
    assert_eq!(vars["CODER_OWN"], "mine");
    assert_eq!(vars["TASKBOARD_TOKEN"], coder, "its own token");
    assert_eq!(vars["TASKBOARD_RUN"], id);
    assert_eq!(vars["TASKBOARD_TASK"], key);
    assert_eq!(&vars["TASKBOARD_SERVER"], env.remote_server().unwrap().0);
    let board =
        ["TASKBOARD_SERVER", "TASKBOARD_TOKEN", "TASKBOARD_TASK", "TASKBOARD_TASK_ID", "TASKBOARD_RUN"];
    let theirs: Vec<&String> = vars
        .keys()
        .filter(|k| k.starts_with("TASKBOARD_"))
        .filter(|k| {
            !board.contains(&k.as_str()) && !["TASKBOARD_LEASE", "TASKBOARD_WORKSPACE"].contains(&k.as_str())
        })
        .collect();
    assert!(theirs.is_empty(), "no TASKBOARD_* of the runner's own (its credentials file): {theirs:?}");
}

#[test]
fn a_local_repository_is_cloned_only_when_the_runners_file_allows_it_and_else_nothing_of_it_runs() {
    let env = Env::remote();
    // A repository on the runner's machine: its script is what README's
    // old example (`sh -c ./scripts/agent.sh`) ran.
    let marker = env.dir.path().join("the-repository-ran");
    let script = format!("touch {marker:?}\n");
    let repo = origin(&env, "local", &[("scripts/agent.sh", &script)]);
    project(&env, "web", Some(&format!("file://{}", repo.display())));
    let token = agent(&env, "bot", "member", &["web"], None);
    let agents = sh_agent("bot", &token, "sh scripts/agent.sh && echo worked", "");

    let first = task(&env, "web", "Refused");
    let (refusing, refusing_state) = runner_file(&env, "refusing", "", &agents);
    let runner = Runner::start(&env, &refusing);
    let run = ended(&env, &first);
    drop(runner);
    assert_eq!(run["state"], "failed", "{run}");
    let why = run["stop_reason"].as_str().unwrap_or_default();
    assert!(why.contains("local repository") && why.contains("allow_local_repos = true"), "{run}");
    assert!(!marker.exists(), "nothing of the repository ran");
    assert!(!refusing_state.join("repos").exists(), "nothing was cloned");

    let second = task(&env, "web", "Allowed");
    let (allowing, _) = runner_file(&env, "allowing", "allow_local_repos = true", &agents);
    let _runner = Runner::start(&env, &allowing);
    let run = ended(&env, &second);
    assert_eq!(run["state"], "succeeded", "{run}");
    assert_eq!(run["branch"], format!("taskboard/{second}"));
    assert!(transcript(&env, run["id"].as_str().unwrap()).contains("output: worked"));
    assert!(marker.exists(), "the allowed clone is the workspace");
}

#[test]
fn a_cached_clone_of_another_address_under_the_same_name_is_never_a_workspace() {
    let env = Env::remote();
    // `a.b` and `a_b` make the same directory name under `repos`.
    let first = origin(&env, "a.b", &[("FROM", "a.b\n")]);
    let second = origin(&env, "a_b", &[("FROM", "a_b\n")]);
    project(&env, "one", Some(&first.display().to_string()));
    project(&env, "two", Some(&second.display().to_string()));
    let token = agent(&env, "bot", "member", &["one", "two"], None);
    let agents = sh_agent("bot", &token, "cat FROM", "");
    let (path, _) = runner_file(&env, "shared", "allow_local_repos = true", &agents);
    let _runner = Runner::start(&env, &path);
    let one = task(&env, "one", "First");
    let run = ended(&env, &one);
    assert_eq!(run["state"], "succeeded", "{run}");
    assert!(transcript(&env, run["id"].as_str().unwrap()).contains("output: a.b"));
    let two = task(&env, "two", "Second");
    let run = ended(&env, &two);
    assert_eq!(run["state"], "failed", "{run}");
    let why = run["stop_reason"].as_str().unwrap_or_default();
    assert!(why.contains("made for another repository address"), "{run}");
    assert!(!transcript(&env, run["id"].as_str().unwrap()).contains("output: a.b"));
}

#[test]
fn an_ext_transport_or_an_option_as_an_address_is_refused_and_runs_nothing_even_where_git_allows_ext() {
    let env = Env::remote();
    let by_ext = env.dir.path().join("ext-ran");
    let by_option = env.dir.path().join("option-ran");
    let by_agent = env.dir.path().join("agent-ran");
    // git's ext transport runs its command (`% ` is a space in it).
    project(&env, "ext", Some(&format!("ext::sh -c touch% {}", by_ext.display())));
    project(&env, "opt", Some(&format!("--upload-pack=touch {};", by_option.display())));
    let token = agent(&env, "bot", "member", &["ext", "opt"], None);
    let keys = [task(&env, "ext", "By ext"), task(&env, "opt", "By an option")];
    let agents = sh_agent("bot", &token, &format!("touch {by_agent:?}"), "");
    // The most trusting runner: local repositories allowed, and a git
    // configured to allow ext (as `protocol.ext.allow = always` would).
    let (path, state) = runner_file(&env, "trusting", "allow_local_repos = true", &agents);
    let mut cmd = runner_command(&env, &path);
    cmd.env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "protocol.ext.allow")
        .env("GIT_CONFIG_VALUE_0", "always");
    let _runner = Runner::spawn(cmd);
    let ended: Vec<_> = keys.iter().map(|key| ended(&env, key)).collect();
    for marker in [&by_ext, &by_option, &by_agent] {
        assert!(!marker.exists(), "{} ran", marker.display());
    }
    for run in ended {
        assert_eq!(run["state"], "failed", "{run}");
        let why = run["stop_reason"].as_str().unwrap_or_default();
        assert!(why.contains("repository address is refused") && why.contains("https://HOST/PATH"), "{run}");
    }
    let cloned = std::fs::read_dir(state.join("repos")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(cloned, 0, "nothing was cloned");
}

#[test]
fn the_state_directory_and_what_the_runner_makes_in_it_are_its_users_only_even_under_umask_022() {
    let env = Env::remote();
    let repo = origin(&env, "origin", &[("README", "hello\n")]);
    project(&env, "web", Some(&repo.display().to_string()));
    let token = agent(&env, "bot", "member", &["web"], None);
    let key = task(&env, "web", "Wait");
    let go = env.dir.path().join("go");
    let script = format!("echo \"umask $(umask)\"; while [ ! -f {go:?} ]; do sleep 0.05; done");
    let agents = sh_agent("bot", &token, &script, "prompt = \"file\"");
    let (path, state) = runner_file(&env, "modes", "allow_local_repos = true", &agents);
    let _runner = Runner::spawn(under_umask(&runner_command(&env, &path), "022"));

    let run = eventually("the run to be running", || {
        runs(&env, &key).into_iter().find(|r| r["state"] == "running")
    });
    let id = run["id"].as_str().unwrap().to_string();
    let only = |dir: &Path, dirs: bool| -> PathBuf {
        let found: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() == dirs)
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        found[0].clone()
    };
    let cache = only(&state.join("repos"), true);
    let workspace = only(&state.join("work"), true);
    let brief = workspace.with_extension("md");
    let pid_file = state.join("pids").join(&id);
    let made = [
        (&state, 0o700),
        (&state.join("pids"), 0o700),
        (&pid_file, 0o600),
        (&state.join("repos"), 0o700),
        (&cache, 0o700),
        (&state.join("work"), 0o700),
        (&workspace, 0o700),
        (&brief, 0o600),
    ];
    for (path, want) in made {
        assert_eq!(mode(path), want, "{} while the agent runs: {:o}", path.display(), mode(path));
    }

    std::fs::write(&go, "").unwrap();
    let run = ended(&env, &key);
    assert_eq!(run["state"], "succeeded", "{run}");
    assert!(transcript(&env, &id).contains("output: umask 0022"), "the runner ran under umask 022");
    for (path, want) in made.iter().filter(|(p, _)| **p != pid_file) {
        assert_eq!(mode(path), *want, "{} after the run", path.display());
    }
}

#[test]
fn an_open_state_directory_is_tightened_when_the_runner_starts_and_its_log_says_so_once() {
    let env = Env::remote();
    project(&env, "web", None);
    let token = agent(&env, "bot", "member", &["web"], None);
    let (path, state) = runner_file(&env, "old", "", &sh_agent("bot", &token, "true", ""));
    // As a runner before this rule left it, under umask 022.
    let workspace = state.join("work/WEB-1-0123456789ab");
    std::fs::create_dir_all(workspace.join("bin")).unwrap();
    std::fs::create_dir_all(state.join("repos")).unwrap();
    std::fs::write(workspace.with_extension("md"), "# WEB-1").unwrap();
    std::fs::write(workspace.join("bin/tool"), "#!/bin/sh\n").unwrap();
    let set = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    for dir in [&state, &state.join("work"), &state.join("repos"), &workspace] {
        set(dir, 0o755);
    }
    set(&workspace.with_extension("md"), 0o644);
    set(&workspace.join("bin/tool"), 0o755);

    let log = env.dir.path().join("runner.log");
    let _runner = Runner::start_logged(&env, &path, &log);
    let text = eventually("the runner to follow the board", || {
        std::fs::read_to_string(&log).ok().filter(|l| l.contains("follows the board's events"))
    });
    for dir in [&state, &state.join("work"), &state.join("repos"), &workspace] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }
    assert_eq!(mode(&workspace.with_extension("md")), 0o600);
    assert_eq!(mode(&workspace.join("bin/tool")), 0o755, "a workspace's own files keep their modes");
    let said: Vec<&str> = text.lines().filter(|l| l.contains("was open to other users")).collect();
    assert_eq!(said.len(), 1, "{text}");
    assert!(said[0].contains("5 of its entries"), "{}", said[0]);
}
