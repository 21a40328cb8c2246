//! Agents and their runs on the board: the Agents page, and a task's runs
//! in its panel. The agent's side is played over the HTTP API with the
//! agent's token, as its runner would.

use serde_json::{Value, json};

use crate::driver::Browser;
use crate::harness::App;
use crate::scenarios::{ENTER, log_in, screenshot};

struct Setup {
    project: String,
    agent_id: String,
    agent_token: String,
}

/// A project `web`, an agent `coder` in it, and `titles` as tasks in todo.
async fn setup(app: &App, titles: &[&str]) -> (Setup, Vec<Value>) {
    let agent = app
        .as_owner(
            "POST",
            "/members",
            json!({"name": "Coder", "slug": "coder", "type": "agent",
                   "agent_config": {"labels": ["rust"], "model": "test-model"}}),
        )
        .await;
    let agent_id = agent["id"].as_str().unwrap().to_string();
    let agent_token = agent["token"].as_str().unwrap().to_string();
    let project = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    app.as_owner("POST", &format!("/projects/{pid}/members"), json!({"member_id": agent_id})).await;
    let mut tasks = Vec::new();
    for title in titles {
        tasks.push(
            app.as_owner(
                "POST",
                &format!("/tasks?project_id={pid}"),
                json!({"title": title, "status": "todo"}),
            )
            .await,
        );
    }
    (Setup { project: pid, agent_id, agent_token }, tasks)
}

impl Setup {
    /// A run of the agent on `task`, started by the owner and taken up by
    /// the agent's runner: `running`, with some output.
    async fn running(&self, app: &App, task: &Value, output: &str) -> String {
        let tid = task["id"].as_str().unwrap();
        let run =
            app.as_owner("POST", &format!("/tasks/{tid}/runs"), json!({"agent_id": self.agent_id})).await;
        let rid = run["id"].as_str().unwrap().to_string();
        self.patch(app, &rid, json!({"state": "running", "runner": "host-1/4242"})).await;
        self.output(app, &rid, &[output]).await;
        rid
    }

    async fn patch(&self, app: &App, rid: &str, body: Value) -> Value {
        app.call("PATCH", &format!("/runs/{rid}"), Some(&self.agent_token), Some(body)).await
    }

    async fn output(&self, app: &App, rid: &str, lines: &[&str]) {
        let entries: Vec<Value> = lines.iter().map(|l| json!({"kind": "output", "text": l})).collect();
        app.call(
            "POST",
            &format!("/runs/{rid}/transcript"),
            Some(&self.agent_token),
            Some(json!({"entries": entries})),
        )
        .await;
    }
}

const CODER_RUN: &str = "const s = document.querySelector('section.agent[data-slug=coder]');
    const r = s && s.querySelector('tr.run');
    return r && r.querySelector('.lease .countdown') && {
        state: r.dataset.state, shown_state: r.querySelector('.run-state').textContent,
        task: r.querySelector('td.task').textContent, line: r.querySelector('.last-line').textContent,
        elapsed: r.querySelector('.elapsed').textContent,
        runners: [...s.querySelectorAll('.runner')].map(e => e.textContent), config: s.querySelector('.agent-config').textContent}";

#[tokio::test]
async fn the_agents_page_shows_runs_live_and_makes_agents() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let (setup, tasks) = setup(&app, &["Parse the config"]).await;
    let rid = setup.running(&app, &tasks[0], "compiling\nrunning 3 tests\n").await;
    // The runner polls the event stream for its agent, naming itself: the
    // agent is online while it does, and the runner is listed
    // (docs/decisions.md 22.i).
    let polled = app.call("GET", "/events?wait=0&runner=host-1/4242", Some(&setup.agent_token), None).await;
    assert!(polled["next"].is_u64(), "{polled}");
    let coder = app.call("GET", &format!("/members/{}", setup.agent_id), Some(&app.owner), None).await;
    assert_eq!(coder["status"], "online", "{coder}");
    let runners = app.call("GET", "/runners", Some(&app.owner), None).await;
    assert_eq!(runners[0]["name"], "host-1/4242", "{runners}");
    assert_eq!(runners[0]["agents"][0]["slug"], "coder", "{runners}");
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.click_on("nav a[href='#/agents']").await;
    let listed = b
        .wait_for(
            "the runner among those connected, and the agent online",
            "const li = document.querySelector('.runner-list li[data-runner=\"host-1/4242\"]');
             const dot = document.querySelector('section.agent[data-slug=coder] .dot');
             return li && dot && dot.classList.contains('online') && li.textContent",
            vec![],
        )
        .await;
    assert!(listed.as_str().unwrap().contains("serves @coder"), "{listed}");

    // The agent, its runner, and its run with task, state, elapsed time,
    // last line of output and lease countdown.
    // Its last line of output is read after the run: waited for too.
    let run_with_its_line =
        format!("const v = (() => {{ {CODER_RUN} }})(); return v && v.line !== 'no output yet' && v");
    let shown = b.wait_for("the coder's running run", &run_with_its_line, vec![]).await;
    assert_eq!(shown["state"], "running", "{shown}");
    assert_eq!(shown["shown_state"], "running", "{shown}");
    assert_eq!(shown["task"], "WEB-1 Parse the config", "{shown}");
    assert_eq!(shown["line"], "running 3 tests", "{shown}");
    assert!(shown["elapsed"].as_str().unwrap().contains(':'), "{shown}");
    assert_eq!(shown["runners"], json!(["host-1/4242"]), "{shown}");
    let config = shown["config"].as_str().unwrap();
    assert!(config.contains("rust") && config.contains("test-model"), "{config}");
    screenshot(&b, "web-agents.png").await;

    // The page follows the run: new output, a question, the end.
    setup.output(&app, &rid, &["test result: ok"]).await;
    b.wait_for(
        "the new last line",
        "const r = document.querySelector('section.agent[data-slug=coder] tr.run');
         return r && r.querySelector('.last-line').textContent === 'test result: ok'",
        vec![],
    )
    .await;
    setup
        .patch(
            &app,
            &rid,
            json!({"question": {"id": "q", "text": "Push?", "options": [{"id": "y", "label": "Yes"}]}}),
        )
        .await;
    b.find("section.agent[data-slug=coder] tr.run[data-state=awaiting_input]").await;
    setup.patch(&app, &rid, json!({"state": "succeeded", "exit_code": 0})).await;
    b.wait_for(
        "the run among the ended ones",
        "const s = document.querySelector('section.agent[data-slug=coder]');
         return s && !s.querySelector('tr.run') && s.querySelector('.recent-runs li[data-state=succeeded]')",
        vec![],
    )
    .await;

    // A new agent, made on the page: its token is shown once.
    let form = "form[aria-label='New agent']";
    let name = b.find(&format!("{form} input[name=name]")).await;
    b.type_into(&name, "Reviewer").await;
    let labels = b.find(&format!("{form} input[name=labels]")).await;
    b.type_into(&labels, "review, docs").await;
    let model = b.find(&format!("{form} input[name=model]")).await;
    b.type_into(&model, "big-model").await;
    let prompt = b.find(&format!("{form} textarea[name=prompt]")).await;
    b.type_into(&prompt, "Review carefully.").await;
    // Mentions only is the form's default (docs/decisions.md 22.h); chats are widened here.
    b.js(&format!("document.querySelector(\"{form} select[name=chat_listen]\").value = 'all'"), vec![]).await;
    b.click_on(&format!("{form} button[type=submit]")).await;
    let token = b
        .wait_for(
            "the new token",
            "const c = document.querySelector('.token-box code.token'); return c && c.textContent",
            vec![],
        )
        .await;
    let token = token.as_str().unwrap().to_string();
    let me = app.call("GET", "/members/me", Some(&token), None).await;
    assert_eq!(me["slug"], "reviewer");
    assert_eq!(me["type"], "agent");
    let config = &me["agent_config"];
    assert_eq!(config["labels"], json!(["review", "docs"]), "{me}");
    assert_eq!(config["model"], "big-model", "{me}");
    assert_eq!(config["prompt"], "Review carefully.", "{me}");
    assert_eq!(config["task_listen"], "mentions", "{me}");
    assert_eq!(config["chat_listen"], "all", "{me}");
    b.find("section.agent[data-slug=reviewer]").await;
    // Once dismissed, the token is nowhere on the page.
    b.click_on(".token-box button.dismiss").await;
    b.wait_for(
        "the token gone from the page",
        "return !document.body.innerHTML.includes(arguments[0]) && document.querySelector('.token-box').hidden",
        vec![json!(token)],
    )
    .await;

    // Configured on the page.
    b.click_on("section.agent[data-slug=reviewer] button.configure").await;
    let edit = "form[aria-label='Configure @reviewer']";
    b.find(&format!("{edit} input[name=model]")).await;
    b.js(&format!("document.querySelector(\"{edit} input[name=model]\").value = 'other-model'"), vec![])
        .await;
    b.click_on(&format!("{edit} button[type=submit]")).await;
    b.wait_for(
        "the new configuration on the page",
        "const s = document.querySelector('section.agent[data-slug=reviewer] .agent-config');
         return s && s.textContent.includes('other-model') && !document.querySelector(arguments[0])",
        vec![json!(edit)],
    )
    .await;
    let me = app.call("GET", "/members/me", Some(&token), None).await;
    assert_eq!(me["agent_config"]["model"], "other-model");
    assert_eq!(me["agent_config"]["labels"], json!(["review", "docs"]), "the rest is kept: {me}");

    // A new token: shown once, and the old one stops working.
    b.click_on("section.agent[data-slug=reviewer] button.new-token").await;
    b.click_on("section.agent[data-slug=reviewer] button.danger").await;
    let renewed = b
        .wait_for(
            "the renewed token",
            "const c = document.querySelector('.token-box code.token'); return c && c.textContent !== arguments[0] && c.textContent",
            vec![json!(token)],
        )
        .await;
    let old =
        app.http.get(format!("{}/api/v1/members/me", app.base)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(old.status(), 401);
    let me = app.call("GET", "/members/me", Some(renewed.as_str().unwrap()), None).await;
    assert_eq!(me["slug"], "reviewer");
    let refused = b.js("return document.body.dataset.cspViolations || '0'", vec![]).await;
    assert_eq!(refused, "0");
    let _ = setup.project;
}

/// The run's state on the task panel.
const PANEL_RUN: &str =
    "const li = document.querySelector(`.panel .runs-list li[data-run-id='${arguments[0]}']`);
    return li && li.dataset.state";

#[tokio::test]
async fn a_question_is_answered_and_a_run_cancelled_retried_and_started_from_the_task_panel() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let (setup, tasks) = setup(&app, &["Write the parser"]).await;
    let tid = tasks[0]["id"].as_str().unwrap().to_string();
    let rid = setup.running(&app, &tasks[0], "reading the code").await;
    setup
        .patch(
            &app,
            &rid,
            json!({"question": {"id": "perm-1", "text": "Allow writing src/parse.rs?",
                "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]}}),
        )
        .await;
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.goto(&format!("{}/#/p/web/t/WEB-1", app.base)).await;

    // The open question, its options as buttons, and the transcript so far.
    let shown = b
        .wait_for(
            "the question with its options",
            "const q = document.querySelector('.panel .runs .run-question');
             const t = [...document.querySelectorAll('.panel .transcript .entry')].map(e => e.textContent);
             return q && t.length >= 3 && {
               text: q.querySelector('.question-text').textContent,
               options: [...q.querySelectorAll('button.option')].map(b => [b.dataset.optionId, b.textContent]),
               transcript: t}",
            vec![],
        )
        .await;
    assert!(shown["text"].as_str().unwrap().contains("Allow writing src/parse.rs?"), "{shown}");
    assert_eq!(shown["options"], json!([["allow", "Allow"], ["deny", "Deny"]]));
    assert!(shown["transcript"].as_array().unwrap().iter().any(|t| t == "reading the code"), "{shown}");
    b.js(
        "const p = document.querySelector('.panel'); p.scrollTop = p.querySelector('.runs').offsetTop - 80",
        vec![],
    )
    .await;
    screenshot(&b, "web-runs.png").await;
    b.click_on(".panel .runs .run-question button.option[data-option-id=allow]").await;
    b.wait_for(
        "the answer in the live transcript, the run running again",
        "return !document.querySelector('.panel .runs .run-question')
            && document.querySelector(`.panel .runs-list li[data-run-id='${arguments[0]}']`).dataset.state === 'running'
            && [...document.querySelectorAll('.panel .transcript .entry.answer')].some(e => e.textContent.includes('Allow'))",
        vec![json!(rid)],
    )
    .await;
    let run = app.call("GET", &format!("/runs/{rid}"), Some(&app.owner), None).await;
    assert_eq!(run["state"], "running");
    assert!(run["question"].is_null());
    let transcript = app.call("GET", &format!("/runs/{rid}/transcript"), Some(&app.owner), None).await;
    let answer = transcript.as_array().unwrap().iter().find(|e| e["kind"] == "answer").expect("an answer");
    assert_eq!(answer["text"], "Allow");
    assert_eq!(answer["data"]["option_id"], "allow");

    // The transcript follows the output live, and keeps a bounded number
    // of entries on the page.
    let lines: Vec<String> = (0..700).map(|i| format!("line {i}")).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    setup.output(&app, &rid, &lines).await;
    let bounded = b
        .wait_for(
            "the last line in the panel",
            "const t = document.querySelectorAll('.panel .transcript .entry');
             return t.length && t[t.length - 1].textContent === 'line 699' && {
               shown: t.length, note: document.querySelector('.panel .transcript-note').textContent}",
            vec![],
        )
        .await;
    assert!(bounded["shown"].as_u64().unwrap() <= 500, "{bounded}");
    assert!(bounded["note"].as_str().unwrap().contains("earlier entries are not shown"), "{bounded}");

    // Cancel ends the run and gives the task back.
    b.click_on(&format!(".panel .runs-list li[data-run-id='{rid}'] button.cancel-run")).await;
    b.wait_for("the run cancelled", &format!("{PANEL_RUN} === 'cancelled'"), vec![json!(rid)]).await;
    let run = app.call("GET", &format!("/runs/{rid}"), Some(&app.owner), None).await;
    assert_eq!(run["state"], "cancelled");
    assert!(run["stop_reason"].as_str().unwrap().contains("owner"), "{run}");
    let task = app.call("GET", &format!("/tasks/{tid}"), Some(&app.owner), None).await;
    assert_eq!(task["status"], "todo");
    assert!(task["lease"].is_null(), "{task}");

    // Retry starts a new run of the same agent on the task.
    b.click_on(".panel .runs-list button.retry-run").await;
    let runs_path = format!("/runs?task_id={tid}");
    let runs_of_task = || app.call("GET", &runs_path, Some(&app.owner), None);
    let retried = b
        .wait_for(
            "the new run",
            "const li = document.querySelector('.panel .runs-list li[data-state=starting]'); return li && li.dataset.runId",
            vec![],
        )
        .await;
    let runs = runs_of_task().await;
    assert_eq!(runs.as_array().unwrap().len(), 2, "{runs}");
    assert_eq!(runs[0]["id"], retried);
    assert_eq!(runs[0]["agent"]["id"], setup.agent_id.as_str());
    assert_eq!(runs[0]["state"], "starting");

    // A question without options is answered in words.
    let retried = retried.as_str().unwrap();
    setup.patch(&app, retried, json!({"state": "running"})).await;
    setup.patch(&app, retried, json!({"question": {"id": "q2", "text": "Which branch?"}})).await;
    let answer = b.find(".panel .runs .run-question input[aria-label=Answer]").await;
    b.type_into(&answer, &format!("release-2{ENTER}")).await;
    b.wait_for(
        "the written answer in the transcript",
        "return !document.querySelector('.panel .runs .run-question')
            && [...document.querySelectorAll('.panel .transcript .entry.answer')].some(e => e.textContent.includes('release-2'))",
        vec![],
    )
    .await;
    let run = app.call("GET", &format!("/runs/{retried}"), Some(&app.owner), None).await;
    assert_eq!(run["state"], "running");
    let transcript = app.call("GET", &format!("/runs/{retried}/transcript"), Some(&app.owner), None).await;
    let answer = transcript.as_array().unwrap().iter().find(|e| e["kind"] == "answer").expect("an answer");
    assert_eq!(answer["text"], "release-2");
    assert!(answer["data"]["option_id"].is_null(), "{answer}");

    // "Run agent…" starts one from the task.
    app.as_owner("POST", &format!("/runs/{retried}/cancel"), json!({})).await;
    b.wait_for("the retried run cancelled", &format!("{PANEL_RUN} === 'cancelled'"), vec![json!(retried)])
        .await;
    b.click_on(".panel .runs button.run-agent").await;
    b.click_on(".panel .runs form.run-start button[type=submit]").await;
    b.find(".panel .runs-list li[data-state=starting]").await;
    let runs = runs_of_task().await;
    assert_eq!(runs.as_array().unwrap().len(), 3, "{runs}");
    assert_eq!(runs[0]["state"], "starting");
    assert_eq!(runs[0]["agent"]["slug"], "coder");
    let refused = b.js("return document.body.dataset.cspViolations || '0'", vec![]).await;
    assert_eq!(refused, "0");
    let _ = setup.project;
}

/// An agent's reply in a project's chat: under the question it answers,
/// its Markdown rendered (a list, emphasis, code), as the agent's runner
/// posts it (docs/decisions.md 22.h).
#[tokio::test]
async fn an_agents_chat_reply_is_shown_under_its_question_as_markdown() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let (setup, _) = setup(&app, &[]).await;
    let project = app.call("GET", &format!("/projects/{}", setup.project), Some(&app.owner), None).await;
    let chat = project["chat_id"].as_str().unwrap().to_string();
    let asked = app
        .as_owner(
            "POST",
            "/messages",
            json!({"chat_id": chat, "content": "@coder what is left before the release?",
                   "mentions": [setup.agent_id]}),
        )
        .await;
    let reply = "Two things are left:\n\n- **WEB-3**, the changelog\n- `cargo test` green on CI\n\n\
                 The last run says:\n\n```\ntest result: ok. 42 passed; 0 failed\n```";
    app.call(
        "POST",
        "/messages",
        Some(&setup.agent_token),
        Some(json!({"chat_id": chat, "parent_id": asked["id"], "content": reply})),
    )
    .await;
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.goto(&format!("{}/#/p/web/chat", app.base)).await;
    let shown = b
        .wait_for(
            "the reply under the question, as Markdown",
            "const r = document.querySelector('.thread .replies article.message');
             const md = r && r.querySelector('.md');
             return md && md.querySelector('pre code') && {
                 author: r.querySelector('header strong').textContent,
                 items: [...md.querySelectorAll('ul li')].map(li => li.textContent),
                 strong: md.querySelector('li strong').textContent,
                 code: md.querySelector('pre code').textContent,
                 paragraphs: md.querySelectorAll('p').length }",
            vec![],
        )
        .await;
    assert_eq!(shown["author"], "Coder", "{shown}");
    assert_eq!(shown["items"], json!(["WEB-3, the changelog", "cargo test green on CI"]), "{shown}");
    assert_eq!(shown["strong"], "WEB-3", "{shown}");
    assert_eq!(shown["code"], "test result: ok. 42 passed; 0 failed", "{shown}");
    assert_eq!(shown["paragraphs"], 2, "{shown}");
    screenshot(&b, "web-chat-reply.png").await;
}
