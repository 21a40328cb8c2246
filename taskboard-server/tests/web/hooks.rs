//! The Webhooks page: a webhook created there (its secret shown once),
//! its secret rotated, turned off and on, a delivery sent again, and the
//! webhook deleted, each checked through the API and at a real receiver
//! on 127.0.0.1.

use std::time::Duration;

use serde_json::{Value, json};

use crate::driver::Browser;
use crate::harness::App;
use crate::receiver::{Received, Receiver};
use crate::scenarios::{log_in, screenshot};

const SECRET: &str =
    "const c = document.querySelector('.secret-box:not([hidden]) code.secret'); return c && c.textContent";

fn verifies(secret: &str, r: &Received) -> bool {
    standardwebhooks::Webhook::new(secret).unwrap().verify(&r.body, &r.headers).is_ok()
}

/// Polls the webhook's delivery log until `done` holds (no event tells
/// of an attempt's outcome); fails the test after a minute.
async fn wait_log(app: &App, hook: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let log =
            app.call("GET", &format!("/webhooks/{hook}/deliveries"), Some(&app.owner.clone()), None).await;
        let log = log.as_array().unwrap().clone();
        if done(&log) {
            return log;
        }
        assert!(tokio::time::Instant::now() < deadline, "the delivery log never got there: {log:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn an_admin_creates_rotates_redelivers_and_deletes_a_webhook() {
    let _turn = crate::driver::turn().await;
    let app = App::start_with(|c| c.webhooks.allow_private = true).await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    let tasks = format!("/tasks?project_id={pid}");
    let receiver = Receiver::start().await;
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.click_on("nav a[href='#/webhooks']").await;
    b.find("table.webhooks[data-loaded='1']").await;

    // Created on the page: the secret shown once signs the deliveries.
    let form = "form[aria-label='New webhook']";
    let url = b.find(&format!("{form} input[name=url]")).await;
    b.type_into(&url, &receiver.url).await;
    let events = b.find(&format!("{form} input[name=events]")).await;
    b.type_into(&events, "task.created").await;
    b.click_on(&format!("{form} button[type=submit]")).await;
    let first = b.wait_for("the signing secret", SECRET, vec![]).await.as_str().unwrap().to_string();
    assert!(first.starts_with("whsec_"), "{first}");
    let hooks = app.call("GET", "/webhooks", Some(&app.owner.clone()), None).await;
    assert_eq!(hooks.as_array().unwrap().len(), 1, "{hooks}");
    assert_eq!(
        (&hooks[0]["url"], &hooks[0]["events"], &hooks[0]["active"]),
        (&json!(receiver.url), &json!(["task.created"]), &json!(true))
    );
    let id = hooks[0]["id"].as_str().unwrap().to_string();
    let row = format!("table.webhooks tr[data-webhook-id='{id}']");
    b.find(&row).await;
    assert!(!hooks.to_string().contains(&first), "the list never shows the secret");
    b.click_on(".secret-box button.dismiss").await;
    b.wait_for(
        "the secret gone",
        "return !document.body.innerHTML.includes(arguments[0])",
        vec![json!(first)],
    )
    .await;
    app.as_owner("POST", &tasks, json!({"title": "one"})).await;
    let got = receiver.wait_delivered(1).await;
    assert!(verifies(&first, &got[0]), "the secret shown signs the delivery");

    // Rotated on the page: the new secret shown once signs what follows.
    b.click_on(&format!("{row} button.rotate")).await;
    let second = b
        .wait_for(
            "the new secret",
            &format!("const s = (() => {{ {SECRET} }})(); return s !== arguments[0] && s"),
            vec![json!(first)],
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    assert!(second.starts_with("whsec_") && second != first, "{second}");
    app.as_owner("POST", &tasks, json!({"title": "two"})).await;
    let got = receiver.wait_delivered(2).await;
    assert!(verifies(&second, &got[1]), "the rotated secret signs the next delivery");

    // Turned off and on again.
    b.click_on(&format!("{row} button.toggle")).await;
    b.find(&format!("{row}[data-active=false]")).await;
    assert_eq!(
        app.call("GET", &format!("/webhooks/{id}"), Some(&app.owner.clone()), None).await["active"],
        false
    );
    b.click_on(&format!("{row} button.toggle")).await;
    // On again, with its health: both deliveries got through.
    let shown = b
        .wait_for(
            "the webhook on again, delivering",
            "const c = document.querySelector(arguments[0]); return c && c.textContent",
            vec![json!(format!("{row}[data-active=true][data-health=ok] td.state"))],
        )
        .await;
    assert_eq!(shown, "on · delivering, last HTTP 200");
    assert_eq!(
        app.call("GET", &format!("/webhooks/{id}"), Some(&app.owner.clone()), None).await["active"],
        true
    );

    // The delivery log, and the first delivery sent again.
    wait_log(&app, &id, |log| log.len() == 2 && log.iter().all(|d| d["state"] == "delivered")).await;
    b.click_on(&format!("{row} button.show-deliveries")).await;
    b.wait_for(
        "both deliveries, delivered",
        "return document.querySelectorAll(\"table.deliveries[data-loaded='1'] tr[data-state=delivered]\").length === 2",
        vec![],
    )
    .await;
    let again = got[0].id().to_string();
    let delivery = format!("table.deliveries tr[data-delivery-id='{again}']");
    b.click_on(&format!("{delivery} button.redeliver")).await;
    let received = receiver
        .wait_until("the delivery again", |r| r.iter().filter(|x| x.id() == again).count() == 2)
        .await;
    let resent: Vec<&Received> = received.iter().filter(|x| x.id() == again).collect();
    assert_eq!(resent[0].body, resent[1].body, "the same event again");
    assert!(verifies(&second, resent[1]), "signed with the current secret");
    wait_log(&app, &id, |log| {
        log.iter().any(|d| d["id"] == again.as_str() && d["attempts"] == 2 && d["state"] == "delivered")
    })
    .await;
    b.click_on("button.refresh-deliveries").await;
    b.find(&format!("table.deliveries[data-loaded='1'] tr[data-delivery-id='{again}'][data-attempts='2'][data-state=delivered]"))
        .await;
    screenshot(&b, "web-webhooks.png").await;

    // Deleted on the page, after a confirmation.
    b.click_on(&format!("{row} button.delete")).await;
    b.click_on(&format!("{row} button.confirm-delete")).await;
    b.wait_for(
        "the webhook gone from the list",
        "return !document.querySelector(arguments[0])",
        vec![json!(row)],
    )
    .await;
    let gone = app
        .http
        .get(format!("{}/api/v1/webhooks/{id}", app.base))
        .bearer_auth(&app.owner)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    let csp: Value = b.js("return document.body.dataset.cspViolations || '0'", vec![]).await;
    assert_eq!(csp, "0");
}
