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
    let edit = b.find(".panel .description button").await;
    b.click(&edit).await;
    let area = b.find(".panel .description textarea").await;
    b.type_into(
        &area,
        "**Bold** <script>window.ran = 1</script> [x](javascript:alert(1)) [ok](https://example.org)",
    )
    .await;
    let save = b.find(".panel .description button").await;
    b.click(&save).await;
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
    let send = b.find(".chat button[type=submit]").await;
    b.click(&send).await;
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
    let ready_link = b.js(r#"return !!document.querySelector('header nav a[href$="/ready"]')"#, vec![]).await;
    b.goto(&format!("{}/#/p/web", app.base)).await;
    let ready_link_on_board = b
        .wait_for(
            "the board's navigation",
            r##"return document.querySelector('header nav a[href="#/p/web/chat"]')
                && { ready: !!document.querySelector('header nav a[href="#/p/web/ready"]') }"##,
            vec![],
        )
        .await;
    assert_eq!(ready_link, json!(false), "no project is open on the members page");
    assert_eq!(ready_link_on_board["ready"], json!(has_ready.status().is_success()));
}

/// Leases and the ready queue belong to the agent protocol: the board
/// shows them where the server has them and does without otherwise.
#[tokio::test]
async fn leases_and_the_ready_queue_where_the_server_has_them() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let (bot_id, bot_token) = app.agent("bot").await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    app.as_owner("POST", &format!("/projects/{pid}/members"), json!({"member_id": bot_id})).await;
    let leased = app
        .as_owner("POST", &format!("/tasks?project_id={pid}"), json!({"title": "Leased", "status": "todo"}))
        .await;
    app.as_owner("POST", &format!("/tasks?project_id={pid}"), json!({"title": "Waiting", "status": "todo"}))
        .await;
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.goto(&format!("{}/#/p/web", app.base)).await;
    card_in(&b, "todo", "Waiting").await;

    let lid = leased["id"].as_str().unwrap();
    let take = app
        .http
        .post(format!("{}/api/v1/tasks/{lid}/take", app.base))
        .bearer_auth(&bot_token)
        .json(&json!({"lease_seconds": 600}))
        .send()
        .await
        .unwrap();
    let status = take.status();
    let task: serde_json::Value = take.json().await.unwrap_or_default();
    if status.is_success() && task["lease"].is_object() {
        let lease = b
            .wait_for(
                "the lease countdown",
                "const c = [...document.querySelectorAll('.column[data-status=in_progress] .card')].find(c => c.textContent.includes('Leased'));
                 const l = c && c.querySelector('.lease'); return l && l.textContent",
                vec![],
            )
            .await;
        assert!(
            lease.as_str().unwrap().starts_with("⏱ 9:") || lease.as_str().unwrap().starts_with("⏱ 10:"),
            "{lease}"
        );
    } else {
        println!("this server shows no leases (take answered {status}); the board shows none");
        let any = b.js("return document.querySelectorAll('.card .lease').length", vec![]).await;
        assert_eq!(any, json!(0));
    }

    let ready = app
        .http
        .get(format!("{}/api/v1/tasks/ready?project_id={pid}", app.base))
        .bearer_auth(&app.owner)
        .send()
        .await
        .unwrap();
    if ready.status().is_success() {
        b.goto(&format!("{}/#/p/web/ready", app.base)).await;
        b.wait_for(
            "the ready queue",
            "return [...document.querySelectorAll('ol.ready li')].some(li => li.textContent.includes('Waiting'))",
            vec![],
        )
        .await;
    } else {
        println!("this server has no ready queue ({}); the board hides it", ready.status());
    }
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
