//! Browser scenarios: what a person does on the board, and what agents
//! do through the API while the page is open.

use std::time::Instant;

use serde_json::{Value, json};

use crate::driver::Browser;
use crate::harness::{App, OWNER_PASSWORD};

pub const ENTER: &str = "\u{E007}";

pub async fn log_in(b: &Browser, app: &App) {
    log_in_as(b, app, "owner", OWNER_PASSWORD).await;
}

pub async fn log_in_as(b: &Browser, app: &App, who: &str, secret: &str) {
    b.goto(&format!("{}/", app.base)).await;
    let login = b.find("input[name=login]").await;
    b.type_into(&login, who).await;
    let password = b.find("input[name=password]").await;
    b.type_into(&password, &format!("{secret}{ENTER}")).await;
    b.find("#conn[data-conn=live]").await;
}

pub async fn card_in(b: &Browser, status: &str, text: &str) -> Value {
    b.wait_for(
        &format!("a card {text:?} in {status}"),
        "return [...document.querySelectorAll(`.column[data-status=${arguments[0]}] .card`)]
            .find(c => c.querySelector('.title').textContent === arguments[1] || c.textContent.includes(arguments[1]))",
        vec![json!(status), json!(text)],
    )
    .await
}

fn screenshots_wanted() -> bool {
    std::env::var("TASKBOARD_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1")
}

pub async fn screenshot(b: &Browser, name: &str) {
    let png = b.screenshot_png().await;
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    if screenshots_wanted() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs").join(name);
        std::fs::write(&path, png).unwrap();
        println!("wrote {}", path.display());
    }
}

/// A valid PNG of about 2 MB: noise stored without compression.
fn big_png() -> Vec<u8> {
    use std::io::Write;
    let (w, h) = (1000u32, 700u32);
    let mut raw = Vec::with_capacity(((w * 3 + 1) * h) as usize);
    let mut x: u32 = 12345;
    for _ in 0..h {
        // Each row starts with its filter type, 0: none.
        raw.extend([0u8]);
        for _ in 0..w * 3 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            raw.push((x >> 16) as u8);
        }
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::none());
    z.write_all(&raw).unwrap();
    let idat = z.finish().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        png.extend((data.len() as u32).to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        png.extend(kind);
        png.extend(data);
        png.extend(crc.sum().to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend(w.to_be_bytes());
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &idat);
    chunk(b"IEND", &[]);
    png
}

#[tokio::test]
async fn a_person_steers_the_board_while_an_agent_works() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let (agent_id, agent_token) = app.agent("bot").await;
    let b = Browser::start().await;
    log_in(&b, &app).await;

    // A project, from the projects page.
    let name = b.find("form[aria-label='New project'] input[name=name]").await;
    b.type_into(&name, &format!("Web{ENTER}")).await;
    b.click_on("a[href='#/p/web']").await;

    // A task, inline in the backlog column.
    let input = b.find(".column[data-status=backlog] .new-task input").await;
    b.type_into(&input, &format!("First task{ENTER}")).await;
    card_in(&b, "backlog", "First task").await;

    // Dragged to in progress: the server has it there, and so has the page.
    let card = b.find(".column[data-status=backlog] .card").await;
    let target = b.find(".column[data-status=in_progress] .cards").await;
    b.drag(&card, &target).await;
    card_in(&b, "in_progress", "First task").await;
    let project = app.call("GET", "/projects", Some(&app.owner), None).await[0].clone();
    let pid = project["id"].as_str().unwrap().to_string();
    let tasks = app.call("GET", &format!("/tasks?project_id={pid}"), Some(&app.owner), None).await;
    assert_eq!(tasks[0]["status"], "in_progress");

    // A title that looks like markup is shown as text.
    let evil = "<img src=x onerror=alert(1)>";
    app.call("POST", &format!("/tasks?project_id={pid}"), Some(&app.owner), Some(json!({"title": evil})))
        .await;
    card_in(&b, "backlog", evil).await;
    let images = b.js("return document.querySelectorAll('.board img').length", vec![]).await;
    assert_eq!(images, json!(0));

    // An agent takes a task and comments; the open page follows.
    app.as_owner("POST", &format!("/projects/{pid}/members"), json!({"member_id": agent_id})).await;
    let second = app
        .call(
            "POST",
            &format!("/tasks?project_id={pid}"),
            Some(&app.owner),
            Some(json!({"title": "Second task", "status": "todo"})),
        )
        .await;
    let card = card_in(&b, "todo", "Second task").await;
    b.js("arguments[0].click()", vec![card]).await;
    b.find(".panel[role=dialog]").await;
    let sid = second["id"].as_str().unwrap();
    app.call("POST", &format!("/tasks/{sid}/take"), Some(&agent_token), None).await;
    app.call(
        "POST",
        "/messages",
        Some(&agent_token),
        Some(json!({"task_id": sid, "content": "On it, @owner. **Tests** first.", "thinking": "Plan: read the code."})),
    )
    .await;
    card_in(&b, "in_progress", "@bot").await;
    // Presence, steps and labels follow their own events.
    app.call("PATCH", "/members/me/status?status=online", Some(&agent_token), None).await;
    b.find(".column[data-status=in_progress] .card .dot.online").await;
    for (title, done) in [("Read the code", true), ("Write the tests", false)] {
        let step = app
            .call("POST", &format!("/tasks/{sid}/steps"), Some(&agent_token), Some(json!({"title": title})))
            .await;
        if done {
            let step_id = step["id"].as_str().unwrap();
            app.call(
                "PATCH",
                &format!("/tasks/{sid}/steps/{step_id}"),
                Some(&agent_token),
                Some(json!({"done": true})),
            )
            .await;
        }
    }
    app.call(
        "PATCH",
        &format!("/tasks/{sid}"),
        Some(&agent_token),
        Some(json!({"labels": ["web", "tests"]})),
    )
    .await;
    card_in(&b, "in_progress", "steps done: 1/2").await;
    b.wait_for(
        "the panel's steps",
        "return document.querySelectorAll('.panel .steps-list li').length === 2",
        vec![],
    )
    .await;
    b.wait_for(
        "the agent's comment in the panel",
        "const m = [...document.querySelectorAll('.panel .message')].find(m => m.textContent.includes('On it'));
         return m && m.querySelector('strong') && m.querySelector('details.thinking:not([open])')",
        vec![],
    )
    .await;

    // A reply, in the agent's thread.
    let reply = b
        .wait_for(
            "the reply button",
            "return [...document.querySelectorAll('.panel .message')].find(m => m.textContent.includes('On it')).querySelector('button.reply')",
            vec![],
        )
        .await;
    b.js("arguments[0].click()", vec![reply]).await;
    let text = b.find(".panel .thread form[aria-label^='Reply'] textarea").await;
    b.type_into(&text, "Thanks!").await;
    b.click_on(".panel .thread form[aria-label^='Reply'] button[type=submit]").await;
    b.wait_for(
        "the reply under the comment",
        "return [...document.querySelectorAll('.panel .thread .replies .message')].some(m => m.textContent.includes('Thanks!'))",
        vec![],
    )
    .await;
    let comments = app.call("GET", &format!("/messages?task_id={sid}"), Some(&app.owner), None).await;
    let replied =
        comments.as_array().unwrap().iter().find(|m| m["content"] == "Thanks!").expect("the reply is stored");
    assert!(replied["parent_id"].is_string());

    // A 2 MB image attached from the page previews in the comments.
    let png = big_png();
    assert!(png.len() > 2_000_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("screen.png");
    std::fs::write(&path, &png).unwrap();
    let file_input = b.find(".panel form[aria-label='New comment'] input[type=file]").await;
    b.type_into(&file_input, &path.display().to_string()).await;
    b.wait_for(
        "the upload",
        "return document.querySelector(\".panel form[aria-label='New comment'] .pending li\")",
        vec![],
    )
    .await;
    b.click_on(".panel form[aria-label='New comment'] button[type=submit]").await;
    b.wait_for(
        "the image preview",
        "const i = document.querySelector('.panel .attachment img'); return i && i.complete && i.naturalWidth === 1000",
        vec![],
    )
    .await;
    let refused = b.js("return document.body.dataset.cspViolations || '0'", vec![]).await;
    assert_eq!(refused, "0", "the page did something its security policy refuses");
    b.js("document.querySelector('.panel').scrollTop = 0", vec![]).await;
    screenshot(&b, "web-task.png").await;

    // Closing the panel leaves the board.
    b.click_on(".panel button.close").await;
    b.wait_for("the panel to close", "return !document.querySelector('.panel')", vec![]).await;
    b.wait_for("the focus back on the card", "return document.activeElement.dataset.key === 'WEB-3'", vec![])
        .await;
    screenshot(&b, "web-board.png").await;
}

#[tokio::test]
async fn the_page_reconnects_after_the_server_restarts() {
    let _turn = crate::driver::turn().await;
    let mut app = App::start().await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Ops", "slug": "ops"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    app.as_owner("POST", &format!("/tasks?project_id={pid}"), json!({"title": "Before"})).await;
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.goto(&format!("{}/#/p/ops", app.base)).await;
    card_in(&b, "backlog", "Before").await;

    app.stop().await;
    b.find("#conn[data-conn=reconnecting]").await;
    app.start_again().await;
    app.as_owner("POST", &format!("/tasks?project_id={pid}"), json!({"title": "After the restart"})).await;
    card_in(&b, "backlog", "After the restart").await;
    b.find("#conn[data-conn=live]").await;
}

#[tokio::test]
async fn first_load_budget_and_a_500_task_board() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Big", "slug": "big"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    let statuses = ["backlog", "todo", "in_progress", "review", "done"];
    let path = format!("/tasks?project_id={pid}");
    for chunk in (0..500).collect::<Vec<_>>().chunks(25) {
        let calls = chunk.iter().map(|i| {
            let body = json!({"title": format!("Task number {i}"), "status": statuses[i % 5], "labels": [format!("area-{}", i % 7)]});
            app.as_owner("POST", &path, body)
        });
        futures_util::future::join_all(calls).await;
    }
    let b = Browser::start().await;
    log_in(&b, &app).await;
    // Everything the first load fetched: the page, its modules, its style.
    let bytes = b
        .js(
            "const nav = performance.getEntriesByType('navigation')[0];
             const res = performance.getEntriesByType('resource').filter(e => e.name.includes('/assets/'));
             return {transferred: nav.transferSize + res.reduce((s, e) => s + e.transferSize, 0),
                     decoded: nav.decodedBodySize + res.reduce((s, e) => s + e.decodedBodySize, 0), files: res.length + 1}",
            vec![],
        )
        .await;
    println!("first load: {bytes}");
    let transferred = bytes["transferred"].as_u64().unwrap();
    assert!(transferred > 0 && transferred < 300_000, "first load {transferred} bytes");

    let started = Instant::now();
    let timing = b
        .post_async(
            "const done = arguments[arguments.length - 1];
             const t0 = performance.now();
             location.hash = '#/p/big';
             const tick = () => {
               const main = document.getElementById('main');
               if (main && main.dataset.cards === '500') done({ms: performance.now() - t0, render_ms: Number(main.dataset.renderMs)});
               else requestAnimationFrame(tick);
             };
             tick();",
        )
        .await;
    println!("500-task board: {timing} (test wall clock {:?})", started.elapsed());
    // Still responsive: a filter narrows the board.
    let filter = b.find("input[aria-label='Filter by text']").await;
    b.type_into(&filter, "number 421").await;
    b.wait_for("the filtered board", "return document.getElementById('main').dataset.cards === '1'", vec![])
        .await;
    b.js("const f = document.querySelector(\"input[aria-label='Filter by text']\"); f.value = ''; f.dispatchEvent(new Event('input'))", vec![])
        .await;
    b.wait_for(
        "the whole board again",
        "return document.getElementById('main').dataset.cards === '500'",
        vec![],
    )
    .await;
    // One event on the full board: only its card is rebuilt.
    let tasks = app.call("GET", &format!("/tasks?project_id={pid}&limit=1"), Some(&app.owner), None).await;
    let first = tasks[0]["id"].as_str().unwrap();
    app.as_owner("PATCH", &format!("/tasks/{first}"), json!({"title": "Renamed while 500 are shown"})).await;
    let update = b
        .wait_for(
            "the renamed card",
            "const c = [...document.querySelectorAll('.card .title')].find(t => t.textContent === 'Renamed while 500 are shown');
             return c && {render_ms: Number(document.getElementById('main').dataset.renderMs)}",
            vec![],
        )
        .await;
    println!("500-task board, one task.updated: {update}");
}
