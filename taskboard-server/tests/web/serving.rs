//! The page and its assets over plain HTTP.

use crate::harness::App;

fn asset_paths(page: &str) -> Vec<String> {
    page.split('"').filter(|s| s.starts_with("/assets/")).map(str::to_string).collect()
}

#[tokio::test]
async fn the_page_is_served_with_a_strict_policy_and_versioned_assets() {
    let app = App::start().await;
    let res = app.http.get(format!("{}/", app.base)).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let h = res.headers().clone();
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'")
            && csp.contains("connect-src 'self'")
            && csp.contains("default-src 'none'")
    );
    assert!(!csp.contains("unsafe-inline") && !csp.contains("http"), "{csp}");
    assert_eq!(h["cache-control"], "no-cache");
    assert!(h["content-type"].to_str().unwrap().starts_with("text/html"));
    let page = res.text().await.unwrap();
    let assets = asset_paths(&page);
    assert!(assets.iter().any(|a| a.ends_with("/app.js")), "{page}");
    for path in assets {
        let res = app
            .http
            .get(format!("{}{path}", app.base))
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(res.headers()["content-encoding"], "gzip", "{path}");
        assert!(res.headers()["cache-control"].to_str().unwrap().contains("immutable"), "{path}");
        // Without gzip accepted, the plain file.
        let plain = app.http.get(format!("{}{path}", app.base)).send().await.unwrap();
        assert!(plain.headers().get("content-encoding").is_none());
        let stale = path.replacen("/assets/", "/assets/0000", 1);
        assert_eq!(app.http.get(format!("{}{stale}", app.base)).send().await.unwrap().status(), 404);
    }
}

#[tokio::test]
async fn only_get_reaches_the_page_and_the_api_is_untouched() {
    let app = App::start().await;
    let res = app.http.post(format!("{}/", app.base)).send().await.unwrap();
    assert_eq!(res.status(), 405);
    assert_eq!(res.headers()["allow"], "GET, HEAD");
    let res = app.http.head(format!("{}/", app.base)).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers().contains_key("content-security-policy"));
    assert!(res.bytes().await.unwrap().is_empty());
    let res = app.http.get(format!("{}/assets/nothing", app.base)).send().await.unwrap();
    assert_eq!(res.status(), 404);
    let body: serde_json::Value = res.json().await.unwrap();
    assert!(body["detail"].as_str().unwrap().contains("no such asset"));
    let res = app.http.get(format!("{}/health", app.base)).send().await.unwrap();
    assert_eq!(res.status(), 200);
}

/// Characters that render as emoji (or as an empty box where no emoji
/// font is installed): the emoji blocks, and the symbols and arrows with
/// an emoji presentation.
fn is_emoji(c: char) -> bool {
    matches!(c as u32,
        0x203C | 0x2049 | 0x2122 | 0x2139 | 0x2194..=0x2199 | 0x21A9..=0x21AA | 0x231A..=0x23FF
        | 0x24C2 | 0x25AA..=0x25AB | 0x25B6 | 0x25C0 | 0x25FB..=0x25FE | 0x2600..=0x27BF
        | 0x2934..=0x2935 | 0x2B05..=0x2B07 | 0x2B1B..=0x2B1C | 0x2B50 | 0x2B55 | 0x3030 | 0x303D
        | 0x3297 | 0x3299 | 0xFE0F | 0x1F000..=0x1FAFF)
}

#[tokio::test]
async fn no_served_file_holds_an_emoji() {
    assert!(['\u{23F1}', '\u{1F4CE}', '\u{2715}', '\u{26D4}', '\u{2611}'].into_iter().all(is_emoji));
    assert!(!['\u{2026}', '\u{00B7}', '\u{2192}', 'a'].into_iter().any(is_emoji));
    let app = App::start().await;
    let page = app.http.get(format!("{}/", app.base)).send().await.unwrap().text().await.unwrap();
    let version = asset_paths(&page)[0].split('/').nth(2).unwrap().to_string();
    // The page's assets, and every module the modules import.
    let mut todo = asset_paths(&page);
    let mut seen = std::collections::BTreeMap::new();
    seen.insert("/".to_string(), page);
    while let Some(path) = todo.pop() {
        if seen.contains_key(&path) {
            continue;
        }
        let res = app.http.get(format!("{}{path}", app.base)).send().await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
        let text = res.text().await.unwrap();
        for module in text.split('"').filter(|s| s.starts_with("./") && s.ends_with(".js")) {
            todo.push(format!("/assets/{version}/{}", &module[2..]));
        }
        seen.insert(path, text);
    }
    for file in [
        "app.js",
        "board.js",
        "task.js",
        "runs.js",
        "agents.js",
        "icons.js",
        "messages.js",
        "members.js",
        "webhooks.js",
        "secret.js",
        "style.css",
    ] {
        assert!(
            seen.keys().any(|p| p.ends_with(&format!("/{file}"))),
            "{file} was not reached: {:?}",
            seen.keys()
        );
    }
    for (path, text) in &seen {
        for (n, line) in text.lines().enumerate() {
            if let Some(c) = line.chars().find(|c| is_emoji(*c)) {
                panic!("{path}:{}: {c:?} (U+{:04X}) in {line:?}", n + 1, c as u32);
            }
        }
    }
}
