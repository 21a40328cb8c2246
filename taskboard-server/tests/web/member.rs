//! A member's page: access tokens made, shown once and revoked there, and
//! "Log out everywhere", each checked through the API.

use serde_json::{Value, json};

use crate::driver::Browser;
use crate::harness::App;
use crate::scenarios::{log_in, screenshot};

const ROWS: &str =
    "[...document.querySelectorAll('table.tokens tr[data-token-id]')].map(r => r.dataset.name)";

#[tokio::test]
async fn the_member_page_makes_lists_and_revokes_access_tokens_and_logs_out_everywhere() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let web = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let me = app.call("GET", "/members/me", Some(&app.owner.clone()), None).await;
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.click_on("nav a[href='#/members']").await;
    b.click_on("table.members a[href='#/members/owner']").await;
    b.find("table.tokens[data-loaded='1']").await;

    let form = "form[aria-label='New access token']";
    let name = b.find(&format!("{form} input[name=name]")).await;
    b.type_into(&name, "dashboard").await;
    b.js(
        &format!(
            "document.querySelector(\"{form} input[name=project][value='{}']\").checked = true;
             document.querySelector(\"{form} input[name=scope][value='tasks:write']\").checked = true",
            web["id"].as_str().unwrap()
        ),
        vec![],
    )
    .await;
    b.click_on(&format!("{form} button[type=submit]")).await;
    let token = b
        .wait_for(
            "the new token",
            "const c = document.querySelector('.token-box code.token'); return c && c.textContent",
            vec![],
        )
        .await;
    let token = token.as_str().unwrap().to_string();
    assert!(token.starts_with("tba-"), "{token}");
    let shown = app.call("GET", "/members/me", Some(&token), None).await;
    assert_eq!(shown["slug"], "owner");
    let listed =
        app.call("GET", &format!("/members/{}/tokens", me["id"].as_str().unwrap()), Some(&token), None).await;
    assert_eq!(listed[0]["scopes"], json!(["read", "tasks:write"]), "{listed}");
    assert_eq!(listed[0]["project_ids"], json!([web["id"]]), "{listed}");
    b.wait_for("the token in the list", &format!("return {ROWS}.includes('dashboard')"), vec![]).await;
    let projects = b
        .js(
            "return document.querySelector('table.tokens tr[data-name=dashboard] .token-projects').textContent",
            vec![],
        )
        .await;
    assert_eq!(projects, "web");
    screenshot(&b, "web-member-tokens.png").await;
    b.click_on(".token-box button.dismiss").await;
    b.wait_for(
        "the token gone from the page",
        "return !document.body.innerHTML.includes(arguments[0])",
        vec![json!(token)],
    )
    .await;

    // Revoked on the page: the token stops working.
    b.click_on("table.tokens tr[data-name=dashboard] button.revoke").await;
    b.click_on("table.tokens tr[data-name=dashboard] button.confirm-revoke").await;
    b.wait_for("the token gone from the list", &format!("return !{ROWS}.includes('dashboard')"), vec![])
        .await;
    let old =
        app.http.get(format!("{}/api/v1/members/me", app.base)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(old.status(), 401);

    // Logging out everywhere ends the page's own login too.
    b.click_on("button.logout-everywhere").await;
    b.find("input[name=login]").await;
    let owner =
        app.http.get(format!("{}/api/v1/members/me", app.base)).bearer_auth(&app.owner).send().await.unwrap();
    assert_eq!(owner.status(), 401, "every login of the owner ended");
    let refused: Value = b.js("return document.body.dataset.cspViolations || '0'", vec![]).await;
    assert_eq!(refused, "0");
}
