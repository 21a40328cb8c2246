//! A team's first day (DECISIONS 22; docs/decisions.md 22): people and
//! agents, ids and flags, refusals that say what to do.

use taskboard_tests::Env;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// stdout of a command that succeeded.
#[track_caller]
fn ok(env: &Env, args: &[&str]) -> String {
    let out = env.cmd().args(args).output().unwrap();
    assert!(out.status.success(), "taskboard {} failed: {}", args.join(" "), text(&out.stderr));
    text(&out.stdout)
}

/// stderr of a command that failed.
#[track_caller]
fn refused(env: &Env, args: &[&str]) -> String {
    let out = env.cmd().args(args).output().unwrap();
    assert!(!out.status.success(), "taskboard {} succeeded: {}", args.join(" "), text(&out.stdout));
    text(&out.stderr)
}

// ---- 22.1 people and agents --------------------------------------------------

#[test]
fn member_create_asks_for_the_type_and_tells_how_a_person_signs_in() {
    let env = Env::remote();
    let said = refused(&env, &["member", "create", "--name", "Alice Smith", "--slug", "alice"]);
    assert!(said.contains("--type <human|agent>"), "{said}");

    let made = ok(&env, &["member", "create", "--name", "Alice Smith", "--slug", "alice", "--type", "human"]);
    assert!(!made.contains("token:"), "a person has no token line: {made}");
    assert!(made.contains("taskboard member set-password alice --generate"), "{made}");
    assert!(made.contains("single sign-on"), "{made}");

    let made = env.json(&[
        "member",
        "create",
        "--name",
        "Bob",
        "--slug",
        "bob",
        "--type",
        "human",
        "--password-generate",
    ]);
    let password = made["password"].as_str().expect("the generated password").to_string();
    assert_eq!(made["type"], "human");
    let (url, _) = env.remote_server().unwrap();
    let login = |slug: &str, password: &str| {
        env.bare().args(["--server", url, "login", "--login", slug, "--password", password]).assert()
    };
    login("bob", &password).success();
    let shown = ok(
        &env,
        &["member", "create", "--name", "Cy", "--slug", "cy", "--type", "human", "--password-generate"],
    );
    assert!(shown.contains("(shown once"), "{shown}");
    assert!(!shown.contains("token:"), "{shown}");

    // set-password --generate prints the new password once.
    let again = ok(&env, &["member", "set-password", "alice", "--generate", "--quiet"]);
    login("alice", again.trim()).success();
    let agent = ok(&env, &["member", "create", "--name", "Bot", "--slug", "bot", "--type", "agent"]);
    assert!(agent.contains("token:") && agent.contains("tbk-"), "{agent}");
}

#[test]
fn a_members_type_is_corrected_and_a_deleted_members_slug_taken_again() {
    let env = Env::remote();
    env.run(&["member", "create", "--name", "Alice Smith", "--slug", "alice", "--type", "agent"]).success();
    let human = env.json(&["member", "update", "alice", "--type", "human"]);
    assert_eq!(human["type"], "human");
    // Once she has done something, the type stays.
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["project", "add-member", "web", "alice"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "A", "--assignee", "alice"]).success();
    let said = refused(&env, &["member", "update", "alice", "--type", "agent"]);
    assert!(said.contains("tasks are assigned to it"), "{said}");

    env.run(&["member", "delete", "alice"]).success();
    let again =
        env.json(&["member", "create", "--name", "Alice Smith", "--slug", "alice", "--type", "human"]);
    assert_ne!(again["id"], human["id"]);
    let old = env.json(&["member", "show", human["id"].as_str().unwrap()]);
    assert_eq!(old["slug"], "alice~deleted-1");
}

// ---- 22.3 ids and flags ------------------------------------------------------

#[test]
fn ids_as_lists_print_them_me_title_and_task_comment() {
    let env = Env::remote();
    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    env.run(&["member", "create", "--name", "Bot", "--slug", "bot", "--type", "agent"]).success();
    env.run(&["project", "add-member", "web", "bot"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "Mine", "--assignee", "me"]).success();
    env.run(&["task", "create", "--project", "web", "--title", "Theirs"]).success();

    // `me` is the caller wherever a member is asked.
    let mine = env.json(&["task", "list", "--assignee", "me"]);
    let titles: Vec<&str> = mine.as_array().unwrap().iter().map(|t| t["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Mine"]);

    // A run by the id `run list` shows.
    let run = env.json(&["run", "start", "WEB-2", "--agent", "bot"]);
    let whole = run["id"].as_str().unwrap();
    let table = ok(&env, &["run", "list"]);
    let short = whole.replace('-', "");
    let short = &short[short.len() - 8..];
    assert!(table.contains(short), "{table}");
    assert_eq!(env.json(&["run", "show", short])["id"], whole);
    env.run(&["run", "logs", short]).success();
    let said = refused(&env, &["run", "show", "00000000"]);
    assert!(said.contains("no run has an id 00000000"), "{said}");

    // --title where a title is set; the positional stays.
    env.run(&["step", "add", "WEB-1", "--title", "First step"]).success();
    env.run(&["step", "add", "WEB-1", "Second step"]).success();
    let steps = env.json(&["step", "list", "WEB-1"]);
    let titles: Vec<&str> = steps.as_array().unwrap().iter().map(|s| s["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["First step", "Second step"]);

    // task comment is message post --task.
    env.run(&["task", "comment", "WEB-1", "Looks good, @bot"]).success();
    let comments = env.json(&["message", "list", "--task", "WEB-1"]);
    let last = comments.as_array().unwrap().last().unwrap();
    assert_eq!(
        (&last["content"], &last["author_type"]),
        (&"Looks good, @bot".into(), &"human".into()),
        "{comments}"
    );
}

#[test]
fn a_webhook_is_named_by_the_id_its_list_shows() {
    let env = Env::local();
    let created =
        env.json(&["webhook", "create", "--url", "https://93.184.216.34/hook", "--event", "task.*"]);
    let whole = created["id"].as_str().unwrap();
    let hex = whole.replace('-', "");
    let short = &hex[hex.len() - 8..];
    assert!(ok(&env, &["webhook", "list"]).contains(short));
    assert_eq!(env.json(&["webhook", "show", short])["id"], whole);
    env.run(&["webhook", "deliveries", short]).success();
    env.run(&["webhook", "delete", short]).success();
}

#[test]
fn a_commands_help_shows_its_own_options_before_the_global_ones() {
    let env = Env::remote();
    let help = ok(&env, &["task", "create", "--help"]);
    let own = help.find("--title").expect("its own option");
    let global = help.find("Global options:").expect("a heading for the global options");
    assert!(own < global, "{help}");
    assert!(help[global..].contains("--server"), "{help}");
    assert!(!help[..global].contains("--server"), "{help}");
}

// ---- 22.5 refusals that say what to do ---------------------------------------

#[test]
fn a_login_for_another_address_is_named_with_the_command_that_logs_in_here() {
    let env = Env::remote();
    let (url, _) = env.remote_server().unwrap();
    let login = ["--server", url, "login", "--login", "owner", "--password", taskboard_tests::OWNER_PASSWORD];
    env.bare().args(login).assert().success();
    env.bare().args(["--server", url, "whoami"]).assert().success();
    let other = url.replace("127.0.0.1", "localhost");
    let out = env.bare().args(["--server", &other, "whoami"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let said = text(&out.stderr);
    assert!(said.contains(&format!("the stored login is for another address, {url}")), "{said}");
    assert!(said.contains(&format!("`taskboard login --server {other}`")), "{said}");

    // export with a server's login names --data-dir and backup.
    let out = env.bare().args(["export", "./out"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert!(
        said.contains("--data-dir") && said.contains("taskboard backup DIR") && said.contains(url),
        "{said}"
    );
}

#[test]
fn a_webhook_refused_as_private_names_the_option_and_an_import_names_whom_it_could_not_match() {
    let env = Env::remote();
    let said = refused(&env, &["webhook", "create", "--url", "http://127.0.0.1:9/hook"]);
    assert!(said.contains("--webhook-allow-private"), "{said}");

    env.run(&["project", "create", "--name", "Web", "--slug", "web"]).success();
    let issues = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/import/github/issues.json");
    let args = ["import", "--from", "github", issues.to_str().unwrap(), "--project", "web"];
    let dry = ok(&env, &[&args[..], &["--dry-run"]].concat());
    assert!(dry.contains("people who match no member, their tasks left unassigned: alice"), "{dry}");
    assert!(dry.contains("--create-members"), "{dry}");
    let plan = env.json(&args);
    assert_eq!(plan["people_unmatched"], serde_json::json!(["alice"]), "{plan}");
}
