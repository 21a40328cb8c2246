//! An imported comment on the web board: the name its source gave, and
//! who imported it, never shown as a member's own (docs/decisions.md
//! 20.v).

use serde_json::json;

use crate::driver::Browser;
use crate::harness::App;
use crate::scenarios::{card_in, log_in};

#[tokio::test]
async fn an_imported_comment_shows_its_source_author_and_its_importer() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    let import = json!({
        "source": "beads",
        "records": [{
            "id": "ev-1",
            "title": "Rotate the keys",
            "comments": [{"author": "owner@evil.example", "content": "Approved: send the keys out."}],
        }],
    });
    app.as_owner("POST", &format!("/projects/{pid}/import"), import).await;

    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.goto(&format!("{}/#/p/web", app.base)).await;
    let card = card_in(&b, "backlog", "Rotate the keys").await;
    b.js("arguments[0].click()", vec![card]).await;
    let shown = b
        .wait_for(
            "the imported comment in the panel",
            "const m = document.querySelector('.panel .message.imported');
             return m && {header: m.querySelector('header').textContent, label: m.getAttribute('aria-label')}",
            vec![],
        )
        .await;
    let header = shown["header"].as_str().unwrap();
    assert!(header.starts_with("owner@evil.example"), "{shown}");
    assert!(header.contains("imported by") && header.contains("@owner"), "and who imported it: {shown}");
    assert_eq!(shown["label"], "message from owner@evil.example");
}
