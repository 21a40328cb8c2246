//! Task details, the keyboard, the chat, and two people on one board.

use serde_json::json;

use crate::driver::Browser;
use crate::harness::App;
use crate::scenarios::{ENTER, card_in, log_in, log_in_as};

const ALT: &str = "\u{E00A}";
const RIGHT: &str = "\u{E014}";

#[tokio::test]
async fn details_keyboard_dependencies_markdown_and_chat() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let (bot_id, _) = app.agent("bot").await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    app.as_owner("POST", &format!("/projects/{pid}/members"), json!({"member_id": bot_id})).await;
    let build = app.as_owner("POST", &format!("/tasks?project_id={pid}"), json!({"title": "Build"})).await;
    let design = app.as_owner("POST", &format!("/tasks?project_id={pid}"), json!({"title": "Design"})).await;
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.goto(&format!("{}/#/p/web", app.base)).await;

    // Alt+Right on a focused card moves it to the next column.
    let card = card_in(&b, "backlog", "Build").await;
    b.js("arguments[0].focus()", vec![card]).await;
    b.press(&[ALT, RIGHT]).await;
    card_in(&b, "todo", "Build").await;

    // A dependency added in the panel marks the card blocked until the
    // other task is done.
    let card = card_in(&b, "todo", "Build").await;
    b.js("arguments[0].click()", vec![card]).await;
    let key = b.find(".panel input[aria-label='Task key']").await;
    b.type_into(&key, &format!("{}{ENTER}", design["key"].as_str().unwrap())).await;
    b.wait_for("the link in the panel", "return document.querySelector('.panel .links a')", vec![]).await;
    b.find(".column[data-status=todo] .card .blocked").await;
    let did = design["id"].as_str().unwrap();
    app.as_owner("PATCH", &format!("/tasks/{did}"), json!({"status": "done"})).await;
    b.wait_for(
        "the card to be unblocked",
        "const c = document.querySelector('.column[data-status=todo] .card'); return c && !c.querySelector('.blocked')",
        vec![],
    )
    .await;

    // The description is Markdown, shown safely.
    b.click_on(".panel .description button").await;
    let area = b.find(".panel .description textarea").await;
    b.type_into(
        &area,
        "**Bold** <script>window.ran = 1</script> [x](javascript:alert(1)) [ok](https://example.org)",
    )
    .await;
    b.click_on(".panel .description button").await;
    let shown = b
        .wait_for(
            "the rendered description",
            "const d = document.querySelector('.panel .description .md');
             return d && d.querySelector('strong') && {
               strong: d.querySelector('strong').textContent, scripts: d.querySelectorAll('script').length,
               links: [...d.querySelectorAll('a')].map(a => a.getAttribute('href')), text: d.textContent, ran: window.ran || 0}",
            vec![],
        )
        .await;
    assert_eq!(shown["strong"], "Bold");
    assert_eq!(shown["scripts"], 0);
    assert_eq!(shown["ran"], 0);
    assert_eq!(shown["links"], json!(["https://example.org"]));
    assert!(shown["text"].as_str().unwrap().contains("<script>"), "{shown}");
    let bid = build["id"].as_str().unwrap();
    let stored = app.call("GET", &format!("/tasks/{bid}"), Some(&app.owner), None).await;
    assert!(stored["description"].as_str().unwrap().starts_with("**Bold**"));

    // The chat: @ proposes members, Enter picks one.
    b.goto(&format!("{}/#/p/web/chat", app.base)).await;
    let text = b.find(".chat textarea").await;
    b.type_into(&text, "Hello @bo").await;
    b.find(".mention-list li[aria-selected=true]").await;
    b.type_into(&text, ENTER).await;
    let value = b.js("return document.querySelector('.chat textarea').value", vec![]).await;
    assert_eq!(value, "Hello @bot ");
    b.click_on(".chat button[type=submit]").await;
    b.wait_for(
        "the chat message with its mention",
        "return [...document.querySelectorAll('.chat .message .mention')].some(m => m.textContent === '@bot')",
        vec![],
    )
    .await;
    let chat = project["chat_id"].as_str().unwrap();
    let messages = app.call("GET", &format!("/messages?chat_id={chat}"), Some(&app.owner), None).await;
    let last = messages.as_array().unwrap().last().unwrap();
    assert_eq!(last["content"], "Hello @bot ");
    assert_eq!(last["mentions"][0]["slug"], "bot");

    // Members with their presence; the ready queue only where the server has one.
    b.goto(&format!("{}/#/members", app.base)).await;
    b.wait_for(
        "the members table",
        "return [...document.querySelectorAll('table.members tbody tr')].some(r => r.textContent.includes('@bot') && r.textContent.includes('agent'))",
        vec![],
    )
    .await;
    let has_ready = app
        .http
        .get(format!("{}/api/v1/tasks/ready", app.base))
        .bearer_auth(&app.owner)
        .send()
        .await
        .unwrap();
    // The header follows the route after the page's content: wait for it
    // (a ready link that stays times the wait out).
    let ready_link = b
        .wait_for(
            "the members page's navigation, without a project",
            r#"return !document.querySelector('header nav a[href$="/ready"]') && 'none'"#,
            vec![],
        )
        .await;
    b.goto(&format!("{}/#/p/web", app.base)).await;
    let ready_link_on_board = b
        .wait_for(
            "the board's navigation",
            r##"return document.querySelector('header nav a[href="#/p/web/chat"]')
                && { ready: !!document.querySelector('header nav a[href="#/p/web/ready"]') }"##,
            vec![],
        )
        .await;
    assert_eq!(ready_link, json!("none"), "no project is open on the members page");
    assert_eq!(ready_link_on_board["ready"], json!(has_ready.status().is_success()));
}

/// Leases and the ready queue belong to the agent protocol: the board
/// shows them where the server has them and does without otherwise.
/// The titles of the ready queue view, in its order.
const READY_TITLES: &str = "const l = document.querySelector('ol.ready');
    return l && l.dataset.loaded && [...l.querySelectorAll('li a')].map(a => a.parentElement.dataset.title)";

#[tokio::test]
async fn leases_and_the_ready_queue_follow_the_server() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let (bot_id, bot_token) = app.agent("bot").await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    app.as_owner("POST", &format!("/projects/{pid}/members"), json!({"member_id": bot_id})).await;
    let tasks_path = format!("/tasks?project_id={pid}");
    let task = |title: &str, priority: &str| {
        app.as_owner("POST", &tasks_path, json!({"title": title, "status": "todo", "priority": priority}))
    };
    let leased = task("Leased", "medium").await;
    task("Waiting", "low").await;
    task("Urgent", "urgent").await;
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.goto(&format!("{}/#/p/web", app.base)).await;
    card_in(&b, "todo", "Waiting").await;

    // An agent takes a task with a lease: its card shows the countdown to
    // the lease's end, and follows a heartbeat.
    let lid = leased["id"].as_str().unwrap();
    let bot = Some(bot_token.as_str());
    let taken =
        app.call("POST", &format!("/tasks/{lid}/take"), bot, Some(json!({"lease_seconds": 600}))).await;
    let lease_of = "const c = [...document.querySelectorAll('.column[data-status=in_progress] .card')]
            .find(c => c.textContent.includes('Leased'));
        const l = c && c.querySelector('.lease');
        return l && l.dataset.expires === arguments[0] && {text: l.querySelector('.countdown').textContent,
            title: l.title, label: l.textContent, icon: !!l.querySelector('svg.icon[aria-hidden=true]')}";
    let shown = b.wait_for("the lease countdown", lease_of, vec![taken["lease"]["expires_at"].clone()]).await;
    let text = shown["text"].as_str().unwrap();
    let (minutes, seconds) = text.split_once(':').expect(text);
    assert!(minutes.parse::<u32>().unwrap() <= 10 && seconds.len() == 2, "{text}");
    // An SVG icon, and words for a screen reader.
    assert_eq!(shown["icon"], true, "{shown}");
    assert!(shown["label"].as_str().unwrap().starts_with("lease ends in "), "{shown}");
    assert!(shown["title"].as_str().unwrap().contains("@bot"), "{shown}");
    let beat =
        app.call("POST", &format!("/tasks/{lid}/heartbeat"), bot, Some(json!({"lease_seconds": 3600}))).await;
    let shown = b.wait_for("the renewed lease", lease_of, vec![beat["lease"]["expires_at"].clone()]).await;
    assert!(shown["text"].as_str().unwrap().starts_with("59:") || shown["text"] == "1h00", "{shown}");
    // Given back: the card returns to todo without a countdown.
    app.call("POST", &format!("/tasks/{lid}/release"), bot, Some(json!({"reason": "later"}))).await;
    b.wait_for(
        "the released card",
        "const c = [...document.querySelectorAll('.column[data-status=todo] .card')].find(c => c.textContent.includes('Leased'));
         return c && !c.querySelector('.lease')",
        vec![],
    )
    .await;

    // The ready queue shows what `GET /tasks/ready` answers, in its order,
    // and follows claims live.
    let order = |tasks: serde_json::Value| -> Vec<String> {
        tasks.as_array().unwrap().iter().map(|t| t["title"].as_str().unwrap().to_string()).collect()
    };
    let ready =
        order(app.call("GET", &format!("/tasks/ready?project_id={pid}"), Some(&app.owner), None).await);
    assert_eq!(ready, ["Urgent", "Leased", "Waiting"]);
    b.click_on("nav a[href='#/p/web/ready']").await;
    let shown = b.wait_for("the ready queue", READY_TITLES, vec![]).await;
    assert_eq!(shown, json!(ready));
    let claimed = app.call("POST", "/tasks/claim", bot, Some(json!({"project_id": pid}))).await;
    assert_eq!(claimed["title"], "Urgent");
    b.wait_for(
        "the claimed task to leave the queue",
        &format!("const t = (() => {{ {READY_TITLES} }})(); return t && t.join() === 'Leased,Waiting'"),
        vec![],
    )
    .await;
}

#[tokio::test]
async fn two_people_see_each_others_changes() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    let ann = app.as_owner("POST", "/members", json!({"name": "Ann", "slug": "ann", "type": "human"})).await;
    let ann_id = ann["id"].as_str().unwrap();
    app.as_owner("PUT", &format!("/members/{ann_id}/password"), json!({"password": "ann-password-1"})).await;
    app.as_owner("POST", &format!("/projects/{pid}/members"), json!({"member_id": ann_id})).await;

    let (owner, other) = (Browser::start().await, Browser::start().await);
    log_in(&owner, &app).await;
    log_in_as(&other, &app, "Ann", "ann-password-1").await;
    for b in [&owner, &other] {
        b.goto(&format!("{}/#/p/web", app.base)).await;
        b.find(".column[data-status=todo] .new-task input").await;
    }
    let input = owner.find(".column[data-status=todo] .new-task input").await;
    owner.type_into(&input, &format!("From the owner{ENTER}")).await;
    let card = card_in(&other, "todo", "From the owner").await;
    // Ann moves it on; the owner's page follows.
    other.js("arguments[0].focus()", vec![card]).await;
    other.press(&[ALT, RIGHT]).await;
    card_in(&owner, "in_progress", "From the owner").await;
}

/// At 1400 × 900, the tests' window, an open task panel leaves every
/// column of the board in view, the last one included (docs/decisions.md
/// 22.j).
#[tokio::test]
async fn at_1400_pixels_the_task_panel_leaves_the_last_column_in_view() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    app.as_owner("POST", &format!("/tasks?project_id={pid}"), json!({"title": "Build", "status": "done"}))
        .await;
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.goto(&format!("{}/#/p/web/t/WEB-1", app.base)).await;
    let seen = b
        .wait_for(
            "the panel beside the board",
            "const p = document.querySelector('.panel .panel-head');
             const board = document.querySelector('.board');
             const cols = board ? [...board.querySelectorAll('.column')] : [];
             // Once the board's cards are drawn, not only its columns.
             if (!p || cols.length !== 5 || !cols[4].querySelector('.card')) return null;
             const last = cols[4].getBoundingClientRect();
             return { width: innerWidth, height: innerHeight, board_right: board.getBoundingClientRect().right,
                      last_right: last.right, last_width: last.width, hidden: board.scrollWidth - board.clientWidth,
                      panel_left: p.closest('.panel').getBoundingClientRect().left,
                      done: cols[4].textContent.includes('Build') }",
            vec![],
        )
        .await;
    let n = |k: &str| seen[k].as_f64().unwrap();
    assert!((1380.0..=1400.0).contains(&n("width")), "a window of 1400 px: {seen}");
    assert_eq!(seen["done"], true, "the last column holds its card: {seen}");
    assert!(n("hidden") <= 0.0, "nothing of the board scrolled out of view: {seen}");
    assert!(n("last_right") <= n("board_right") + 0.5, "{seen}");
    assert!(n("last_right") <= n("panel_left"), "the panel covers no column: {seen}");
    assert!(n("last_width") >= 140.0, "a column still readable: {seen}");
}
