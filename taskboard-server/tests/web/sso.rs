//! Single sign-on on the web board: "Sign in with …" on the sign-in page
//! goes through a real OpenID Connect provider (the pinned
//! `oidc-provider` package, tests/oidc-provider) and back, signed in.

use serde_json::json;
use taskboard_server::oidc::OidcConfig;

use crate::driver::Browser;
use crate::harness::App;

#[path = "../../../tests/oidc-provider/harness.rs"]
mod provider;

use provider::{CLIENT_ID, CLIENT_SECRET, Provider};

#[tokio::test]
async fn the_sign_in_page_signs_in_through_the_identity_provider() {
    let _turn = crate::driver::turn().await;
    let provider = Provider::start().await;
    let issuer = provider.issuer.clone();
    let app = App::start_with(|c| {
        c.oidc = Some(OidcConfig {
            issuer,
            client_id: CLIENT_ID.into(),
            client_secret: Some(CLIENT_SECRET.into()),
            name: Some("Example ID".into()),
            create_members: true,
            ..OidcConfig::default()
        });
    })
    .await;
    let b = Browser::start().await;
    b.goto(&format!("{}/", app.base)).await;
    b.find("form.login a.sso").await;
    let text = b.js("return document.querySelector('form.login a.sso').textContent", vec![]).await;
    assert_eq!(text, "Sign in with Example ID");
    b.click_on("form.login a.sso").await;

    // The provider's own login page.
    b.wait_for(
        "the provider's login page",
        "return location.href.startsWith(arguments[0]) && document.querySelector('input[name=password]')",
        vec![json!(provider.issuer)],
    )
    .await;
    let login = b.find("input[name=login]").await;
    b.type_into(&login, "ana").await;
    let password = b.find("input[name=password]").await;
    b.type_into(&password, "any password").await;
    b.click_on("button[type=submit]").await;

    // Back on the board, signed in, the code gone from the address.
    b.wait_for(
        "the board, signed in",
        "return location.href.startsWith(arguments[0])",
        vec![json!(app.base)],
    )
    .await;
    b.find("#conn[data-conn=live]").await;
    assert_eq!(b.js("return location.search", vec![]).await, "");
    let session = b.js("return JSON.parse(localStorage.getItem('taskboard.session'))", vec![]).await;
    assert_eq!(session["slug"], "ana");
    let me = app.call("GET", "/members/me", session["token"].as_str(), None).await;
    assert_eq!((me["slug"].as_str(), me["email"].as_str()), (Some("ana"), Some("ana@example.com")));
}
