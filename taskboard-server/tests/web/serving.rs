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
