//! The Members page for admins and owners: members created there (an
//! agent's token or a person's password shown once), passwords set, roles
//! changed and members deactivated, the API's refusals shown; each checked
//! through the API. A member who is not an admin sees the page read-only.

use serde_json::{Value, json};

use crate::driver::Browser;
use crate::harness::App;
use crate::scenarios::{log_in, log_in_as, screenshot};

const SECRET: &str =
    "const c = document.querySelector('.secret-box:not([hidden]) code.secret'); return c && c.textContent";
const ERROR: &str = "const e = document.querySelector('main p.error[role=alert]'); return e && e.textContent";

/// A person with a password, made through the API; its id.
async fn person(app: &App, slug: &str, role: &str, password: &str) -> String {
    let m = app
        .as_owner("POST", "/members", json!({"name": slug, "slug": slug, "type": "human", "role": role}))
        .await;
    let id = m["id"].as_str().unwrap().to_string();
    app.as_owner("PUT", &format!("/members/{id}/password"), json!({"password": password})).await;
    id
}

/// The status of a login, and its token when it succeeded.
async fn login(app: &App, slug: &str, password: &str) -> (u16, Value) {
    let res = app
        .http
        .post(format!("{}/api/v1/auth/login", app.base))
        .json(&json!({"login": slug, "password": password}))
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
}

async fn dismiss_secret(b: &Browser, secret: &str) {
    b.click_on(".secret-box button.dismiss").await;
    b.wait_for(
        "the secret gone from the page",
        "return !document.body.innerHTML.includes(arguments[0])",
        vec![json!(secret)],
    )
    .await;
}

/// Chooses `value` in the `select` named `name` of the member row `slug`,
/// as a person does, in one step (a live render cannot come between).
async fn choose_role(b: &Browser, slug: &str, role: &str) {
    b.find(&format!("table.members tr[data-slug='{slug}'] select[name=role]")).await;
    b.js(
        "const s = document.querySelector(`table.members tr[data-slug='${arguments[0]}'] select[name=role]`);
         s.value = arguments[1]; s.dispatchEvent(new Event('change'));",
        vec![json!(slug), json!(role)],
    )
    .await;
}

#[tokio::test]
async fn an_admin_creates_members_sets_passwords_and_roles_and_sees_the_apis_refusals() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    person(&app, "ada", "admin", "ada-password-1").await;
    let ada = login(&app, "ada", "ada-password-1").await.1["token"].as_str().unwrap().to_string();
    let b = Browser::start().await;
    log_in_as(&b, &app, "ada", "ada-password-1").await;
    b.click_on("nav a[href='#/members']").await;
    let form = "form[aria-label='New member']";
    b.find(form).await;
    let deactivate: Value =
        b.js("return document.querySelectorAll('button.deactivate').length", vec![]).await;
    assert_eq!(deactivate, 0, "deactivating is for owners");

    // An agent: its token shown once, and it works.
    let name = b.find(&format!("{form} input[name=name]")).await;
    b.type_into(&name, "Build Bot").await;
    b.js(&format!("document.querySelector(\"{form} select[name=type]\").value = 'agent'"), vec![]).await;
    b.click_on(&format!("{form} button[type=submit]")).await;
    let token = b.wait_for("the agent's token", SECRET, vec![]).await.as_str().unwrap().to_string();
    assert!(token.starts_with("tbk-"), "{token}");
    let bot = app.call("GET", "/members/me", Some(&token), None).await;
    assert_eq!(
        (bot["slug"].as_str(), bot["type"].as_str(), bot["role"].as_str()),
        (Some("build-bot"), Some("agent"), Some("member"))
    );
    b.find("table.members tr[data-slug='build-bot']").await;
    dismiss_secret(&b, &token).await;

    // A person: a generated password shown once, and it logs in.
    b.type_into(&name, "Hugo").await;
    b.click_on(&format!("{form} button[type=submit]")).await;
    let generated = b.wait_for("the person's password", SECRET, vec![]).await.as_str().unwrap().to_string();
    assert!(generated.len() >= 16, "{generated}");
    let (status, hugo) = login(&app, "hugo", &generated).await;
    assert_eq!(status, 200, "{hugo}");
    let hugo_id = hugo["member_id"].as_str().unwrap().to_string();
    dismiss_secret(&b, &generated).await;

    // A password set on the page: the old one stops working.
    let pw = "form[aria-label='Set a password']";
    b.find(&format!("{pw} select[name=member] option[value='{hugo_id}']")).await;
    b.js(
        &format!("document.querySelector(\"{pw} select[name=member]\").value = arguments[0]"),
        vec![json!(hugo_id)],
    )
    .await;
    let input = b.find(&format!("{pw} input[name=password]")).await;
    b.type_into(&input, "hugo-new-password").await;
    b.click_on(&format!("{pw} button[type=submit]")).await;
    let shown = b.wait_for("the new password", SECRET, vec![]).await;
    assert_eq!(shown, "hugo-new-password");
    assert_eq!(login(&app, "hugo", &generated).await.0, 401);
    assert_eq!(login(&app, "hugo", "hugo-new-password").await.0, 200);
    dismiss_secret(&b, "hugo-new-password").await;

    // A role changed on the page.
    choose_role(&b, "hugo", "admin").await;
    b.find("table.members tr[data-slug=hugo][data-role=admin]").await;
    let changed = app.call("GET", &format!("/members/{hugo_id}"), Some(&ada), None).await;
    assert_eq!(changed["role"], "admin");

    // An admin cannot touch an owner: the page shows the API's own refusal.
    let owner = app.call("GET", "/members/me", Some(&app.owner.clone()), None).await;
    let refused = app
        .http
        .patch(format!("{}/api/v1/members/{}", app.base, owner["id"].as_str().unwrap()))
        .bearer_auth(&ada)
        .json(&json!({"role": "member"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let detail = refused.json::<Value>().await.unwrap()["detail"].as_str().unwrap().to_string();
    choose_role(&b, "owner", "member").await;
    let error = b.wait_for("the refusal", ERROR, vec![]).await;
    assert_eq!(error, detail.as_str());
    let kept = b
        .js(
            "return document.querySelector(\"table.members tr[data-slug=owner] select[name=role]\").value",
            vec![],
        )
        .await;
    assert_eq!(kept, "owner", "the page shows the role the owner kept");
    assert_eq!(app.call("GET", "/members/me", Some(&app.owner.clone()), None).await["role"], "owner");

    // So does a password an admin may not set (an admin's).
    let refused = app
        .http
        .put(format!("{}/api/v1/members/{hugo_id}/password", app.base))
        .bearer_auth(&ada)
        .json(&json!({"password": "taken-over-1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let detail = refused.json::<Value>().await.unwrap()["detail"].as_str().unwrap().to_string();
    b.js(
        &format!("document.querySelector(\"{pw} select[name=member]\").value = arguments[0]"),
        vec![json!(hugo_id)],
    )
    .await;
    b.type_into(&input, "taken-over-1").await;
    b.click_on(&format!("{pw} button[type=submit]")).await;
    // The page clears its error as it sends, so this is the new answer.
    let error = b.wait_for("the password refusal", ERROR, vec![]).await;
    assert_eq!(error, detail.as_str());
    assert_eq!(login(&app, "hugo", "hugo-new-password").await.0, 200, "hugo's password stayed");
    screenshot(&b, "web-members-admin.png").await;
    let csp: Value = b.js("return document.body.dataset.cspViolations || '0'", vec![]).await;
    assert_eq!(csp, "0");
}

#[tokio::test]
async fn a_member_sees_the_page_read_only_and_an_owner_deactivates() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    person(&app, "mia", "member", "mia-password-1").await;
    let b = Browser::start().await;
    log_in_as(&b, &app, "mia", "mia-password-1").await;
    b.click_on("nav a[href='#/members']").await;
    b.find("table.members tr[data-slug=mia]").await;
    let controls: Value = b
        .js(
            "return ['form[aria-label=\"New member\"]', 'form[aria-label=\"Set a password\"]', 'table.members select',
                     'button.deactivate', 'nav a[href=\"#/webhooks\"]']
                .filter(s => document.querySelector(s))",
            vec![],
        )
        .await;
    assert_eq!(controls, json!([]), "a member sees no management controls");
    // The webhooks' address typed in: the API's refusal, nothing else.
    b.goto(&format!("{}/#/webhooks", app.base)).await;
    let error = b.wait_for("the refusal", ERROR, vec![]).await;
    assert!(!error.as_str().unwrap().is_empty());
    let rows: Value =
        b.js("return document.querySelectorAll('table.webhooks tr[data-webhook-id]').length", vec![]).await;
    assert_eq!(rows, 0);
    let (_, mia) = login(&app, "mia", "mia-password-1").await;
    let mia = mia["token"].as_str().unwrap().to_string();

    // An owner deactivates mia: her credentials stop at once.
    b.click_on("header.top button.link").await;
    b.find("input[name=login]").await;
    log_in(&b, &app).await;
    b.click_on("nav a[href='#/members']").await;
    b.click_on("table.members tr[data-slug=mia] button.deactivate").await;
    b.click_on("table.members tr[data-slug=mia] button.confirm-deactivate").await;
    b.wait_for(
        "mia gone from the list",
        "return !document.querySelector('table.members tr[data-slug=mia]')",
        vec![],
    )
    .await;
    let res = app.http.get(format!("{}/api/v1/members/me", app.base)).bearer_auth(&mia).send().await.unwrap();
    assert_eq!(res.status(), 401);
    assert_eq!(login(&app, "mia", "mia-password-1").await.0, 401);
    let csp: Value = b.js("return document.body.dataset.cspViolations || '0'", vec![]).await;
    assert_eq!(csp, "0");
}
