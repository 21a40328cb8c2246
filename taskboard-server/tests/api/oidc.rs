//! Single sign-on with OpenID Connect against a real provider: the
//! certified `oidc-provider` package, pinned, started per test on port 0
//! (tests/oidc-provider). The board discovers it, sends the browser
//! there, and verifies what comes back. The harness's browser keeps the
//! cookies it is given, as a browser does: the one binding a sign-in to
//! it (docs/decisions.md 20.r) among them.

use std::time::Duration;

use serde_json::{Value, json};
use taskboard_core::wire::LoginResponse;
use taskboard_server::Config;
use taskboard_server::oidc::OidcConfig;

use crate::support::*;

#[path = "../../../tests/oidc-provider/harness.rs"]
pub mod harness;

use harness::{Browser, CLIENT_ID, CLIENT_SECRET, Provider, Step};

/// A board whose single sign-on is the test provider, after `configure`.
pub async fn with_provider(configure: impl FnOnce(&mut Config, &mut OidcConfig)) -> (TestApp, Provider) {
    let provider = Provider::start().await;
    let mut oidc = OidcConfig {
        issuer: provider.issuer.clone(),
        client_id: CLIENT_ID.into(),
        client_secret: Some(CLIENT_SECRET.into()),
        scopes: ["openid", "email", "profile", "groups"].map(String::from).to_vec(),
        ..OidcConfig::default()
    };
    let app = spawn_with(|c| {
        configure(c, &mut oidc);
        c.oidc = Some(oidc);
    })
    .await;
    (app, provider)
}

/// A board that creates members at their first sign-in.
async fn creating() -> (TestApp, Provider) {
    with_provider(|_, o| o.create_members = true).await
}

pub fn start_path(return_to: &str) -> String {
    let encoded: String = form_urlencoded::byte_serialize(return_to.as_bytes()).collect();
    format!("/api/v1/auth/oidc/start?return_to={encoded}")
}

/// Signs in as `login` at the provider, up to its redirect back to the
/// board, and visits that callback: the board's answer.
async fn callback(app: &TestApp, login: &str) -> Step {
    let browser = Browser::new();
    let back = browser.sign_in(&app.url(&start_path("/")), login).await;
    browser.send(back, None).await
}

async fn exchange(app: &TestApp, code: &str) -> Res {
    app.post("/api/v1/auth/oidc/exchange", None, json!({"login_code": code})).await
}

/// Signs in as `login` through the provider: the login the board answers.
pub async fn sign_in(app: &TestApp, login: &str) -> LoginResponse {
    let step = callback(app, login).await;
    assert_eq!(step.status, 302, "{}", step.body);
    exchange(app, &step.login_code()).await.expect(200)
}

#[track_caller]
fn refused(step: &Step, status: u16, detail_part: &str) {
    assert_eq!(step.status, status, "{}", step.body);
    let detail = step.error()["detail"].as_str().unwrap().to_string();
    assert!(detail.contains(detail_part), "{detail:?} does not contain {detail_part:?}");
}

#[tokio::test]
async fn a_person_signs_in_through_the_provider_and_the_login_works() {
    let (app, _provider) = creating().await;
    let methods: Value = app.get("/api/v1/auth/methods", None).await.expect(200);
    assert_eq!(methods["password"], "all");
    assert_eq!(methods["sso"]["name"], "127.0.0.1");
    assert_eq!(methods["sso"]["start"], "/api/v1/auth/oidc/start");

    let browser = Browser::new();
    let back = browser.sign_in(&app.url(&start_path("/")), "ana").await;
    assert!(back.as_str().starts_with(&app.base), "{back} is the board's");
    let step = browser.send(back, None).await;
    assert_eq!(step.status, 302, "{}", step.body);
    let location = step.location.clone().unwrap();
    assert_eq!((location.path(), location.host_str()), ("/", Some("127.0.0.1")), "back to return_to");
    let login: LoginResponse = exchange(&app, &step.login_code()).await.expect(200);
    assert_eq!((login.slug.as_str(), login.role.as_str()), ("ana", "member"));

    let me: Value = app.get("/api/v1/members/me", Some(&login.token)).await.expect(200);
    assert_eq!(me["id"], login.member_id.to_string());
    assert_eq!((me["type"].as_str(), me["email"].as_str()), (Some("human"), Some("ana@example.com")));
    assert_eq!(me["name"], "ana Example");

    // Linked by (issuer, subject): the next sign-in is the same member.
    let again = sign_in(&app, "ana").await;
    assert_eq!(again.member_id, login.member_id);
    let members: Vec<Value> = app.get("/api/v1/members", app.owner()).await.expect(200);
    assert_eq!(members.iter().filter(|m| m["slug"] == "ana").count(), 1);
}

#[tokio::test]
async fn a_first_sign_in_links_the_member_with_that_verified_email() {
    let (app, _provider) = with_provider(|_, _| {}).await;
    let bob = app.create_member("robert", "human", "member").await;
    let path = format!("/api/v1/members/{}", bob.id);
    app.patch(&path, app.owner(), json!({"email": "Bob@Example.com"})).await.expect::<Value>(200);
    let login = sign_in(&app, "bob").await;
    assert_eq!((login.member_id, login.slug.as_str()), (bob.id, "robert"));

    // An email is one member's.
    let other = app.create_member("other", "human", "member").await;
    app.patch(&format!("/api/v1/members/{}", other.id), app.owner(), json!({"email": "bob@example.com"}))
        .await
        .error(409, "conflict", "robert");
}

#[tokio::test]
async fn someone_no_member_matches_is_refused_unless_the_board_creates_members() {
    let (app, _provider) = with_provider(|_, _| {}).await;
    refused(&callback(&app, "zoe").await, 403, "no member has the email zoe@example.com");
    let members: Vec<Value> = app.get("/api/v1/members", app.owner()).await.expect(200);
    assert_eq!(members.len(), 1, "nobody was created: {members:?}");

    let (app, _provider) = creating().await;
    let zoe = sign_in(&app, "zoe").await;
    assert_eq!(zoe.slug, "zoe");
}

#[tokio::test]
async fn an_email_the_provider_does_not_call_verified_is_refused() {
    let (app, _provider) = creating().await;
    refused(&callback(&app, "unverified-cy").await, 403, "does not say the email cy@example.com is verified");
    refused(&callback(&app, "noemail-dee").await, 403, "no email");
}

#[tokio::test]
async fn the_admin_group_makes_admins_and_leaving_it_makes_members_again() {
    let (app, _provider) = with_provider(|_, o| {
        o.create_members = true;
        o.admin_group = Some("board-admins".into());
    })
    .await;
    let dan = sign_in(&app, "admin-dan").await;
    assert_eq!(dan.role.as_str(), "admin");
    let me: Value = app.get("/api/v1/members/me", Some(&dan.token)).await.expect(200);
    assert_eq!(me["role"], "admin");
    // The same account, now outside the group.
    let again = sign_in(&app, "dan").await;
    assert_eq!((again.member_id, again.role.as_str()), (dan.member_id, "member"));
}

#[tokio::test]
async fn return_to_is_a_path_of_the_board_or_a_loopback_url_and_nothing_else() {
    let (app, provider) = creating().await;
    for evil in ["https://evil.example/", "//evil.example/", "http://evil.example/", "/\\evil.example"] {
        let res = app.get(&start_path(evil), None).await;
        res.error(422, "validation_error", "return_to");
        assert!(res.header("location").is_none());
    }
    let browser = Browser::new();
    for fine in ["/", "/projects?x=1", "http://127.0.0.1:9/back"] {
        let step = browser.send(app.url(&start_path(fine)).parse().unwrap(), None).await;
        assert_eq!(step.status, 302, "{fine}: {}", step.body);
        let to = step.location.unwrap();
        assert!(to.as_str().starts_with(&provider.issuer), "{fine}: to {to}");
        let pairs: Vec<(String, String)> = to.query_pairs().into_owned().collect();
        let has = |k: &str| pairs.iter().any(|(n, _)| n == k);
        assert!(has("state") && has("nonce") && has("code_challenge"), "{to}");
        assert!(pairs.contains(&("code_challenge_method".into(), "S256".into())), "{to}");
    }
}

#[tokio::test]
async fn a_callback_works_once() {
    let (app, _provider) = creating().await;
    let browser = Browser::new();
    let back = browser.sign_in(&app.url(&start_path("/")), "ana").await;
    let first = browser.send(back.clone(), None).await;
    assert_eq!(first.status, 302, "{}", first.body);
    refused(&browser.send(back, None).await, 400, "already used state");
}

#[tokio::test]
async fn an_answer_naming_another_issuer_is_refused() {
    let (app, _provider) = creating().await;
    let browser = Browser::new();
    let mut back = browser.sign_in(&app.url(&start_path("/")), "ana").await;
    let pairs: Vec<(String, String)> = back.query_pairs().into_owned().collect();
    assert!(pairs.iter().any(|(k, _)| k == "iss"), "the provider names itself (RFC 9207): {back}");
    back.query_pairs_mut()
        .clear()
        .extend_pairs(pairs.iter().map(|(k, v)| (k, if k == "iss" { "https://other.example" } else { v })));
    refused(&browser.send(back, None).await, 401, "comes from issuer \"https://other.example\"");
}

#[tokio::test]
async fn a_login_code_works_once_and_for_sixty_seconds() {
    let clock = taskboard_core::board::Clock::manual();
    let (app, _provider) = with_provider(|c, o| {
        o.create_members = true;
        c.clock = clock.clone();
    })
    .await;
    let code = callback(&app, "ana").await.login_code();
    exchange(&app, &code).await.expect::<LoginResponse>(200);
    exchange(&app, &code).await.error(401, "unauthorized", "already used login code");

    let late = callback(&app, "ana").await.login_code();
    clock.advance(Duration::from_secs(61));
    exchange(&app, &late).await.error(401, "unauthorized", "expired");
}

#[tokio::test]
async fn an_id_token_signed_by_a_key_the_provider_does_not_publish_is_refused() {
    let (app, provider) = creating().await;
    provider.set_mode("stray-key").await;
    refused(&callback(&app, "ana").await, 401, "signature does not verify");
    provider.set_mode("unknown-key").await;
    refused(&callback(&app, "ana").await, 401, "a key the provider does not publish");
    provider.set_mode("normal").await;
    sign_in(&app, "ana").await;
}

#[tokio::test]
async fn id_tokens_for_another_client_from_another_issuer_or_expired_are_refused() {
    let (app, provider) = creating().await;
    for (mode, detail) in [
        ("wrong-audience", "meant for another client"),
        ("other-issuer", "another issuer"),
        ("expired", "has expired"),
    ] {
        provider.set_mode(mode).await;
        refused(&callback(&app, "ana").await, 401, detail);
    }
    let members: Vec<Value> = app.get("/api/v1/members", app.owner()).await.expect(200);
    assert_eq!(members.len(), 1, "no refused sign-in made a member");
}

#[tokio::test]
async fn a_new_signing_key_at_the_provider_is_followed_without_a_restart() {
    let (app, provider) = creating().await;
    sign_in(&app, "ana").await;
    let before = provider.jwks().await["keys"][0]["kid"].clone();
    provider.rotate_key().await;
    let after = provider.jwks().await["keys"][0]["kid"].clone();
    assert_ne!(before, after, "the provider signs with a new key");
    let login = sign_in(&app, "ana").await;
    assert_eq!(login.slug, "ana");
}

#[tokio::test]
async fn password_login_can_be_kept_for_owners() {
    let (app, _provider) = with_provider(|c, _| {
        c.password_login = taskboard_core::oidc::PasswordLogin::Owners;
    })
    .await;
    let methods: Value = app.get("/api/v1/auth/methods", None).await.expect(200);
    assert_eq!(methods["password"], "owners");
    let ana = app.create_member("ana", "human", "admin").await;
    let password = json!({"password": "ana-password-1"});
    app.put(&format!("/api/v1/members/{}/password", ana.id), app.owner(), password)
        .await
        .expect::<Value>(200);
    let login = |password: &'static str| {
        app.post("/api/v1/auth/login", None, json!({"login": "ana", "password": password}))
    };
    login("ana-password-1").await.error(403, "forbidden", "owners only");
    login("wrong-password").await.error(401, "unauthorized", "wrong login or password");
    let owner =
        app.post("/api/v1/auth/login", None, json!({"login": "owner", "password": OWNER_PASSWORD})).await;
    owner.expect::<LoginResponse>(200);
}

#[tokio::test]
async fn without_single_sign_on_its_endpoints_are_404() {
    let app = spawn().await;
    let methods: Value = app.get("/api/v1/auth/methods", None).await.expect(200);
    assert_eq!(methods, json!({"password": "all", "sso": null}));
    app.get(&start_path("/"), None).await.error(404, "not_found", "single sign-on is not configured");
    exchange(&app, "nothing").await.error(401, "unauthorized", "login code");
}

/// A client that follows no redirect, to read the start's own answer.
fn unfollowing() -> reqwest::Client {
    {
        taskboard_core::tls::install_provider();
        reqwest::Client::builder()
    }
    .no_proxy()
    .redirect(reqwest::redirect::Policy::none())
    .build()
    .unwrap()
}

#[tokio::test]
async fn a_callback_followed_in_another_browser_signs_nobody_in() {
    let (app, _provider) = creating().await;
    // Mallory goes through the provider as herself and stops before the
    // board: her callback address, which she has someone else open.
    let mallory = Browser::new();
    let hers = mallory.sign_in(&app.url(&start_path("/")), "mallory").await;
    let victim = Browser::new();
    let step = victim.send(hers.clone(), None).await;
    refused(&step, 400, "not started in this browser");
    assert!(step.location.is_none(), "no login code: {:?}", step.location);
    // Nor with a cookie of the victim's own sign-in.
    let victims_own = victim.send(app.url(&start_path("/")).parse().unwrap(), None).await;
    assert_eq!(victims_own.status, 302, "{}", victims_own.body);
    let again = Browser::new().sign_in(&app.url(&start_path("/")), "mallory").await;
    refused(&victim.send(again, None).await, 400, "not started in this browser");
    // The refused callback used its state up: not even Mallory's own
    // browser finishes it now.
    refused(&mallory.send(hers, None).await, 400, "already used state");
    let members: Vec<Value> = app.get("/api/v1/members", app.owner()).await.expect(200);
    assert!(members.iter().all(|m| m["slug"] != "mallory"), "nobody signed in: {members:?}");
}

#[tokio::test]
async fn the_start_sets_a_cookie_for_the_callback_only_which_the_callback_checks() {
    let (app, _provider) = creating().await;
    let res = unfollowing().get(app.url(&start_path("/"))).send().await.unwrap();
    assert_eq!(res.status(), 302);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_string();
    let parts: Vec<&str> = cookie.split("; ").collect();
    assert!(parts[0].starts_with("taskboard_sso=") && parts[0].len() > 40, "{cookie}");
    for part in ["HttpOnly", "SameSite=Lax", "Path=/api/v1/auth/oidc/callback", "Max-Age=600"] {
        assert!(parts.contains(&part), "{part} in {cookie}");
    }
    assert!(!parts.contains(&"Secure"), "the board is reached over http here: {cookie}");

    let browser = Browser::new();
    let back = browser.sign_in(&app.url(&start_path("/")), "ana").await;
    let res = unfollowing().get(back).header("cookie", "taskboard_sso=wrong").send().await.unwrap();
    assert_eq!(res.status(), 400);
}

#[tokio::test]
async fn starting_sign_ins_is_throttled_per_client_address() {
    let (app, _provider) = with_provider(|_, o| {
        o.limits = taskboard_core::oidc::SignInLimits { per_address: 3, pending: 10_000 };
    })
    .await;
    let client = unfollowing();
    for _ in 0..3 {
        let res = client.get(app.url(&start_path("/"))).send().await.unwrap();
        assert_eq!(res.status(), 302);
    }
    let res = client.get(app.url(&start_path("/"))).send().await.unwrap();
    assert_eq!(res.status(), 429);
    let wait: u64 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=15 * 60).contains(&wait), "{wait}");
    let body: Value = res.json().await.unwrap();
    assert!(body["detail"].as_str().unwrap().contains("too many sign-ins"), "{body}");
}

#[tokio::test]
async fn the_redirect_uri_is_under_the_public_url_whatever_the_host_header_says() {
    let (app, _provider) = with_provider(|c, _| {
        c.public_url = Some("https://board.example.com/".into());
    })
    .await;
    let res =
        unfollowing().get(app.url(&start_path("/"))).header("host", "evil.example").send().await.unwrap();
    assert_eq!(res.status(), 302);
    let to: reqwest::Url = res.headers()["location"].to_str().unwrap().parse().unwrap();
    let redirect_uri = to.query_pairs().find(|(k, _)| k == "redirect_uri").unwrap().1.into_owned();
    assert_eq!(redirect_uri, "https://board.example.com/api/v1/auth/oidc/callback");
    let cookie = res.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.split("; ").any(|p| p == "Secure"), "https public URL: {cookie}");
}

#[tokio::test]
async fn single_sign_on_without_a_public_url_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.oidc = Some(OidcConfig {
        issuer: "https://id.example.com".into(),
        client_id: CLIENT_ID.into(),
        ..OidcConfig::default()
    });
    let e = taskboard_server::Server::bind(config.clone()).await.unwrap_err().to_string();
    assert!(e.contains("--public-url") && e.contains("public-url` in the configuration file"), "{e}");
    assert!(e.contains("Host"), "{e}");
    config.public_url = Some("board.example.com".into());
    let e = taskboard_server::Server::bind(config).await.unwrap_err().to_string();
    assert!(e.contains("public-url"), "{e}");
}

#[tokio::test]
async fn an_issuer_must_be_https_except_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.oidc = Some(OidcConfig {
        issuer: "http://id.example.com".into(),
        client_id: CLIENT_ID.into(),
        ..OidcConfig::default()
    });
    let e = taskboard_server::Server::bind(config).await.unwrap_err();
    assert!(e.to_string().contains("must be https://"), "{e}");
}
