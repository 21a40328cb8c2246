//! One scenario touching every resource, run locally and against a server;
//! both must print the same JSON up to ids and timestamps.

use serde_json::Value;
use taskboard_tests::{Env, Normalizer};

/// Runs the scenario and returns each step's JSON output, labelled.
pub fn scenario(env: &Env) -> Vec<(String, Value)> {
    let mut steps: Vec<(String, Value)> = Vec::new();
    let mut step = |args: &[&str]| {
        let v = env.json(args);
        steps.push((args.join(" "), v.clone()));
        v
    };
    let notes = env.dir.path().join("notes.txt");
    std::fs::write(&notes, "first notes\n").unwrap();
    let log = env.dir.path().join("build.log");
    std::fs::write(&log, vec![b'x'; 200_000]).unwrap();
    let notes = notes.to_str().unwrap();
    let log = log.to_str().unwrap();

    step(&["whoami"]);
    step(&["project", "create", "--name", "Web app", "--slug", "web", "--description", "The site"]);
    step(&[
        "member",
        "create",
        "--name",
        "Build bot",
        "--slug",
        "bot",
        "--type",
        "agent",
        "--agent-label",
        "backend",
    ]);
    step(&["member", "create", "--name", "Alice", "--slug", "alice", "--type", "human", "--role", "admin"]);
    step(&["member", "set-password", "alice", "--password", "alice-password"]);
    step(&["member", "update", "bot", "--name", "Build robot"]);
    step(&["project", "add-member", "web", "bot"]);
    step(&["project", "members", "web"]);
    step(&["label", "create", "bug", "--color", "#ef4444"]);
    step(&["label", "update", "bug", "--color", "#f00"]);
    step(&[
        "task",
        "create",
        "--project",
        "web",
        "--title",
        "Fix login",
        "--type",
        "bug",
        "--label",
        "bug",
        "--priority",
        "high",
    ]);
    step(&[
        "task",
        "create",
        "--project",
        "web",
        "--title",
        "Write docs",
        "--depends-on",
        "WEB-1",
        "--description",
        "all of it",
    ]);
    step(&["task", "create", "--project", "web", "--title", "Docs part", "--parent", "web-2"]);
    step(&["step", "add", "WEB-1", "Reproduce"]);
    step(&["step", "add", "WEB-1", "Patch"]);
    step(&["step", "done", "WEB-1", "1"]);
    step(&["step", "update", "WEB-1", "2", "--title", "Patch it"]);
    step(&["step", "list", "WEB-1"]);
    step(&["task", "assign", "WEB-1", "bot"]);
    step(&["task", "update", "WEB-1", "--status", "review", "--reviewer", "alice"]);
    step(&["task", "watch", "WEB-2"]);
    step(&["task", "unwatch", "WEB-2"]);
    step(&["task", "link", "WEB-2", "WEB-1", "--type", "relates_to"]);
    let links = step(&["task", "links", "WEB-2"]);
    step(&["task", "label", "add", "WEB-2", "bug"]);
    step(&["task", "label", "remove", "WEB-2", "BUG"]);
    step(&["task", "show", "WEB-2"]);
    step(&["message", "post", "--project", "web", "hello @bot", "--attach", log, "--mention", "alice"]);
    let comment = step(&["message", "post", "--task", "WEB-1", "looking into it"]);
    let comment_id = comment["id"].as_str().unwrap().to_string();
    step(&["message", "post", "--task", "WEB-1", "--reply-to", &comment_id, "a reply"]);
    step(&["message", "replies", &comment_id]);
    let chat = step(&["message", "list", "--project", "web"]);
    step(&["message", "list", "--task", "WEB-1", "--limit", "2"]);
    step(&["file", "upload", "web", notes, "--description", "notes"]);
    step(&["file", "upload", "web", notes, "--name", "copy.txt"]);
    step(&["file", "list", "web", "--search", "NOTES"]);
    step(&["file", "describe", "web", "notes.txt", "meeting notes"]);
    step(&["file", "show", "web", "notes.txt"]);
    step(&["file", "delete", "web", "copy.txt"]);
    step(&["file", "download", "web", "notes.txt", "-o", "fetched.txt"]);
    let fetched = std::fs::read_to_string(env.dir.path().join("fetched.txt")).unwrap();
    assert_eq!(fetched, "first notes\n");
    let attachment =
        chat.as_array().unwrap().last().unwrap()["attachments"][0]["id"].as_str().unwrap().to_string();
    step(&["attachment", "download", &attachment]);
    assert_eq!(std::fs::read(env.dir.path().join("build.log")).unwrap().len(), 200_000);
    step(&["task", "take", "WEB-3"]);
    step(&["task", "reject", "WEB-1", "--reason", "needs a design first"]);
    step(&["task", "actions", "WEB-1"]);
    step(&["task", "list"]);
    step(&["task", "list", "--project", "web", "--status", "backlog", "--label", "bug"]);
    step(&["task", "list", "--q", "docs", "--limit", "1", "--offset", "1"]);
    step(&["task", "list", "--assignee", "owner"]);
    let link_id = links[0]["id"].as_str().unwrap().to_string();
    step(&["task", "unlink", "WEB-2", &link_id]);
    step(&["task", "delete", "WEB-3"]);
    step(&["step", "delete", "WEB-1", "1"]);
    step(&["member", "regenerate-token", "bot"]);
    step(&["member", "revoke-token", "bot"]);
    step(&["member", "status", "busy"]);
    step(&["member", "delete", "alice"]);
    step(&["member", "list", "--all"]);
    step(&["member", "show", "bot"]);
    step(&["project", "update", "web", "--clear-description", "--repo", "https://example.org/web.git"]);
    step(&["project", "create", "--name", "Old", "--slug", "old"]);
    step(&["project", "update", "old", "--status", "archived"]);
    step(&["project", "list"]);
    step(&["project", "list", "--all"]);
    step(&["project", "remove-member", "web", "bot"]);
    step(&["project", "delete", "old"]);
    step(&["label", "delete", "bug"]);
    step(&["label", "list"]);
    step(&["task", "show", "WEB-1"]);
    steps
}

fn normalized(steps: &[(String, Value)]) -> Vec<(String, Value)> {
    let mut n = Normalizer::default();
    steps.iter().map(|(label, v)| (label.clone(), n.apply(v))).collect()
}

#[test]
fn the_same_scenario_prints_the_same_json_locally_and_remotely() {
    let local = Env::local();
    let remote = Env::remote();
    let (l, r) = std::thread::scope(|s| {
        let l = s.spawn(|| normalized(&scenario(&local)));
        let r = s.spawn(|| normalized(&scenario(&remote)));
        (l.join().unwrap(), r.join().unwrap())
    });
    assert_eq!(l.len(), r.len());
    for ((label, lv), (_, rv)) in l.iter().zip(&r) {
        assert_eq!(lv, rv, "`taskboard {label}` differs:\nlocal:  {lv}\nremote: {rv}");
    }
}
