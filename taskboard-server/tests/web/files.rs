//! The project files page, and steps put in order in the task panel.

use serde_json::json;

use crate::driver::Browser;
use crate::harness::App;
use crate::scenarios::{card_in, log_in};

/// The names of the files listed on the page.
const LISTED: &str =
    "return [...document.querySelectorAll('table.files tr[data-file-id] td.name')].map(td => td.textContent)";

#[tokio::test]
async fn project_files_are_listed_uploaded_previewed_and_downloaded() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.goto(&format!("{}/#/p/web", app.base)).await;
    b.click_on("nav a[href='#/p/web/files']").await;
    b.find("table.files").await;

    // Uploaded from the page, with a description.
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    let text = "first line <b>not bold</b>\nsecond line";
    std::fs::write(&notes, text).unwrap();
    let input = b.find("form[aria-label='Upload a file'] input[type=file]").await;
    b.type_into(&input, notes.to_str().unwrap()).await;
    let description = b.find("form[aria-label='Upload a file'] input[name=description]").await;
    b.type_into(&description, "meeting notes").await;
    b.click_on("form[aria-label='Upload a file'] button[type=submit]").await;
    b.wait_for("the uploaded file", &format!("{LISTED}.includes('notes.txt')"), vec![]).await;
    let files = app.call("GET", &format!("/projects/{pid}/files"), Some(&app.owner), None).await;
    assert_eq!(files[0]["filename"], "notes.txt");
    assert_eq!(files[0]["description"], "meeting notes");
    assert_eq!(files[0]["size"], text.len());

    // One uploaded by someone else shows up live.
    let png = b.screenshot_png().await;
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(png).file_name("shot.png").mime_str("image/png").unwrap(),
    );
    let res = app
        .http
        .post(format!("{}/api/v1/projects/{pid}/files", app.base))
        .bearer_auth(&app.owner)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let listed = b
        .wait_for(
            "the file uploaded elsewhere",
            &format!("const l = (() => {{ {LISTED} }})(); return l.length === 2 && l"),
            vec![],
        )
        .await;
    assert_eq!(listed, json!(["notes.txt", "shot.png"]), "by name");

    // A text file previews as text, never as markup.
    b.click_on("button[aria-label='Preview notes.txt']").await;
    let shown = b
        .wait_for(
            "the text preview",
            "const p = document.querySelector('.file-preview pre'); return p && {text: p.textContent, bold: document.querySelectorAll('.file-preview b').length}",
            vec![],
        )
        .await;
    assert_eq!(shown, json!({"text": text, "bold": 0}));
    // An image previews as an image the page loaded.
    b.click_on("button[aria-label='Preview shot.png']").await;
    b.wait_for(
        "the image preview",
        "const i = document.querySelector('.file-preview img'); return i && i.complete && i.naturalWidth > 0",
        vec![],
    )
    .await;
    assert_eq!(b.js("return document.body.dataset.cspViolations || '0'", vec![]).await, "0");

    // Download: the content comes with the session's header, as a blob
    // saved under the file's name.
    b.js(
        "window.downloads = [];
         const made = new Map();
         const create = URL.createObjectURL;
         URL.createObjectURL = (blob) => { const url = create(blob); made.set(url, blob); return url; };
         window.blobOf = (url) => made.get(url);
         document.addEventListener('click', e => {
           const a = e.target.closest && e.target.closest('a[download]');
           if (a) { e.preventDefault(); window.downloads.push({name: a.download, href: a.href}); }
         }, true)",
        vec![],
    )
    .await;
    b.click_on("button[aria-label='Download notes.txt']").await;
    let saved =
        b.wait_for("the download", "return window.downloads.length && window.downloads[0]", vec![]).await;
    assert_eq!(saved["name"], "notes.txt");
    assert!(saved["href"].as_str().unwrap().starts_with("blob:"), "no token in a URL: {saved}");
    let content = b.post_async("window.blobOf(window.downloads[0].href).text().then(arguments[0])").await;
    assert_eq!(content, text);

    // Deleted from the page.
    b.click_on("button[aria-label='Delete shot.png']").await;
    b.wait_for(
        "the deletion",
        &format!("const l = (() => {{ {LISTED} }})(); return l.join() === 'notes.txt'"),
        vec![],
    )
    .await;
}

#[tokio::test]
async fn steps_are_put_in_order_with_the_move_buttons() {
    let _turn = crate::driver::turn().await;
    let app = App::start().await;
    let project = app.as_owner("POST", "/projects", json!({"name": "Web", "slug": "web"})).await;
    let pid = project["id"].as_str().unwrap().to_string();
    let task = app.as_owner("POST", &format!("/tasks?project_id={pid}"), json!({"title": "Ordered"})).await;
    let tid = task["id"].as_str().unwrap().to_string();
    for title in ["one", "two", "three"] {
        app.as_owner("POST", &format!("/tasks/{tid}/steps"), json!({"title": title})).await;
    }
    let b = Browser::start().await;
    log_in(&b, &app).await;
    b.goto(&format!("{}/#/p/web", app.base)).await;
    let card = card_in(&b, "backlog", "Ordered").await;
    b.js("arguments[0].click()", vec![card]).await;
    let order = |expected: &'static str| {
        let b = &b;
        async move {
            b.wait_for(
                &format!("the steps in the order {expected}"),
                "const s = [...document.querySelectorAll('.panel .steps-list li label')].map(l => l.textContent).join();
                 return s === arguments[0]",
                vec![json!(expected)],
            )
            .await;
        }
    };
    order("one,two,three").await;
    b.click_on(".panel button[aria-label='Move step three up']").await;
    order("one,three,two").await;
    b.click_on(".panel button[aria-label='Move step three up']").await;
    order("three,one,two").await;
    let first_up = b
        .js(
            "return document.querySelector(\".panel button[aria-label='Move step three up']\").disabled",
            vec![],
        )
        .await;
    assert_eq!(first_up, true, "the first step cannot go up");
    b.click_on(".panel button[aria-label='Move step one down']").await;
    order("three,two,one").await;
    let steps = app.call("GET", &format!("/tasks/{tid}/steps"), Some(&app.owner), None).await;
    let stored: Vec<(&str, i64)> = steps
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["title"].as_str().unwrap(), s["position"].as_i64().unwrap()))
        .collect();
    assert_eq!(stored, [("three", 1), ("two", 2), ("one", 3)], "the server keeps the order");
}
