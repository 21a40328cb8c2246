//! Single sign-on's rules in the core, with the protocol side played by a
//! stand-in provider (the real one is tested in the server's tests): the
//! start and the exchange agree on verifier, nonce and redirect URI;
//! accounts link by subject, then by verified email; members are created
//! only when allowed; groups set the admin role but never an owner's; a
//! state and a login code work once; links are kept in an archive; a
//! sign-in finishes only in the browser that started it, and starts are
//! bounded per client address and on the board (docs/decisions.md 20.r, 20.s).

use std::sync::{Arc, Mutex};

use taskboard_core::api::{CallbackQuery, MemberPatch, Patch};
use taskboard_core::board::Clock;
use taskboard_core::model::Role;
use taskboard_core::oidc::{
    AuthorizationRequest, CodeExchange, Identity, IdentityProvider, OidcOptions, ProviderFuture, SignInLimits,
};
use taskboard_core::validate::Email;
use taskboard_core::wire::LoginResponse;
use taskboard_core::{BoardOptions, ErrorKind, Result};

use crate::support::*;

#[derive(Debug, Default)]
struct StandIn {
    identity: Mutex<Identity>,
    asked: Mutex<Vec<AuthorizationRequest>>,
    exchanged: Mutex<Vec<CodeExchange>>,
}

impl IdentityProvider for StandIn {
    fn authorization_url<'a>(&'a self, request: &'a AuthorizationRequest) -> ProviderFuture<'a, String> {
        self.asked.lock().unwrap().push(request.clone());
        Box::pin(async move { Ok(format!("https://id.example.com/auth?state={}", request.state)) })
    }

    fn sign_in<'a>(&'a self, exchange: &'a CodeExchange) -> ProviderFuture<'a, Identity> {
        self.exchanged.lock().unwrap().push(exchange.clone());
        let identity = self.identity.lock().unwrap().clone();
        Box::pin(async move { Ok(identity) })
    }
}

async fn sso_board(create_members: bool, admin_group: Option<&str>) -> (Fx, Arc<StandIn>) {
    sso_board_limited(create_members, admin_group, SignInLimits::default()).await
}

async fn sso_board_limited(
    create_members: bool,
    admin_group: Option<&str>,
    limits: SignInLimits,
) -> (Fx, Arc<StandIn>) {
    sso_board_at(create_members, admin_group, limits, Clock::system()).await
}

async fn sso_board_at(
    create_members: bool,
    admin_group: Option<&str>,
    limits: SignInLimits,
    clock: Clock,
) -> (Fx, Arc<StandIn>) {
    let provider = Arc::new(StandIn::default());
    let options = BoardOptions {
        clock,
        oidc: Some(OidcOptions {
            issuer: "https://id.example.com".into(),
            display_name: None,
            create_members,
            admin_group: admin_group.map(String::from),
            public_url: "https://board.example.com".into(),
            limits,
            provider: provider.clone(),
        }),
        ..BoardOptions::default()
    };
    (board_with(options).await, provider)
}

fn person(subject: &str, email: &str, verified: bool, groups: &[&str]) -> Identity {
    Identity {
        subject: subject.into(),
        email: Some(email.into()),
        email_verified: verified,
        name: Some(format!("{subject} Example")),
        preferred_username: Some(subject.into()),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

/// A started sign-in: its state, from the provider's address, and the
/// value of the cookie the browser got.
#[derive(Debug)]
struct Started {
    state: String,
    browser: String,
}

async fn start(fx: &Fx) -> Started {
    start_from(fx, None).await.unwrap()
}

async fn start_from(fx: &Fx, client: Option<std::net::IpAddr>) -> Result<Started> {
    let redirect = fx.board.oidc_start("/", client).await?;
    let state = redirect.location.split_once("state=").unwrap().1.to_string();
    let cookie = redirect.set_cookie.expect("a cookie binds the sign-in to the browser");
    let browser = cookie.strip_prefix("taskboard_sso=").unwrap().split(';').next().unwrap().to_string();
    Ok(Started { state, browser })
}

async fn back_in(fx: &Fx, state: &str, browser: Option<&str>) -> Result<String> {
    let answer = CallbackQuery { code: Some("code".into()), state: Some(state.into()), ..Default::default() };
    let redirect = fx.board.oidc_callback(answer, browser).await?;
    Ok(redirect.location.split_once("login_code=").unwrap().1.to_string())
}

async fn back(fx: &Fx, started: &Started) -> Result<String> {
    back_in(fx, &started.state, Some(&started.browser)).await
}

async fn sign_in(fx: &Fx, provider: &StandIn, identity: Identity) -> Result<LoginResponse> {
    *provider.identity.lock().unwrap() = identity;
    let started = start(fx).await;
    let code = back(fx, &started).await?;
    fx.board.oidc_exchange(&code).await
}

#[tokio::test]
async fn the_exchange_uses_the_verifier_nonce_and_redirect_uri_of_the_start() {
    let (fx, provider) = sso_board(true, None).await;
    sign_in(&fx, &provider, person("ana", "ana@example.com", true, &[])).await.unwrap();
    let asked = provider.asked.lock().unwrap()[0].clone();
    let exchanged = provider.exchanged.lock().unwrap()[0].clone();
    assert_eq!(asked.redirect_uri, "https://board.example.com/api/v1/auth/oidc/callback");
    assert_eq!(exchanged.redirect_uri, asked.redirect_uri);
    assert_eq!((&exchanged.pkce_verifier, &exchanged.nonce), (&asked.pkce_verifier, &asked.nonce));
    assert!(asked.pkce_verifier.len() >= 43 && asked.nonce != asked.pkce_verifier);
    // Another sign-in, other secrets.
    sign_in(&fx, &provider, person("ana", "ana@example.com", true, &[])).await.unwrap();
    let again = provider.asked.lock().unwrap()[1].clone();
    assert_ne!((again.state, again.nonce), (asked.state, asked.nonce));
}

#[tokio::test]
async fn accounts_link_by_subject_then_by_verified_email_and_are_created_only_when_allowed() {
    let (fx, provider) = sso_board(false, None).await;
    let bob = fx.human("robert", Role::Member).await;
    let patch =
        MemberPatch { email: Patch::Value(Email::new("BOB@example.com").unwrap()), ..Default::default() };
    fx.board.update_member(&fx.owner, bob.id(), patch).await.unwrap();

    let unverified = sign_in(&fx, &provider, person("b-1", "bob@example.com", false, &[])).await;
    assert_eq!(kind(unverified), ErrorKind::Forbidden);
    let login = sign_in(&fx, &provider, person("b-1", "bob@example.com", true, &[])).await.unwrap();
    assert_eq!(login.member_id, bob.id());
    // Linked now: the subject is enough, whatever the email says.
    let login = sign_in(&fx, &provider, person("b-1", "new@example.com", false, &[])).await.unwrap();
    assert_eq!(login.member_id, bob.id());

    let stranger = sign_in(&fx, &provider, person("z-1", "zoe@example.com", true, &[])).await;
    assert_eq!(kind(stranger), ErrorKind::Forbidden);

    let (fx, provider) = sso_board(true, None).await;
    fx.human("zoe", Role::Member).await;
    let zoe = sign_in(&fx, &provider, person("zoe", "zoe@example.com", true, &[])).await.unwrap();
    assert_eq!((zoe.slug.as_str(), zoe.role), ("zoe-2", Role::Member), "a slug of its own");
}

#[tokio::test]
async fn groups_set_the_admin_role_but_never_an_owners() {
    let (fx, provider) = sso_board(true, Some("board-admins")).await;
    let admin =
        sign_in(&fx, &provider, person("dan", "dan@example.com", true, &["board-admins"])).await.unwrap();
    assert_eq!(admin.role, Role::Admin);
    let member = sign_in(&fx, &provider, person("dan", "dan@example.com", true, &["staff"])).await.unwrap();
    assert_eq!(member.role, Role::Member);

    let patch =
        MemberPatch { email: Patch::Value(Email::new("owner@example.com").unwrap()), ..Default::default() };
    fx.board.update_member(&fx.owner, fx.owner.id(), patch).await.unwrap();
    let owner = sign_in(&fx, &provider, person("o-1", "owner@example.com", true, &[])).await.unwrap();
    assert_eq!((owner.member_id, owner.role), (fx.owner.id(), Role::Owner));
}

#[tokio::test]
async fn a_state_and_a_login_code_work_once() {
    let (fx, provider) = sso_board(true, None).await;
    *provider.identity.lock().unwrap() = person("ana", "ana@example.com", true, &[]);
    let started = start(&fx).await;
    let code = back(&fx, &started).await.unwrap();
    assert_eq!(kind(back(&fx, &started).await), ErrorKind::BadRequest);
    let made_up = Started { state: "made-up".into(), browser: started.browser.clone() };
    assert_eq!(kind(back(&fx, &made_up).await), ErrorKind::BadRequest);
    fx.board.oidc_exchange(&code).await.unwrap();
    assert_eq!(kind(fx.board.oidc_exchange(&code).await), ErrorKind::Unauthorized);
    assert_eq!(kind(fx.board.oidc_start("https://evil.example/", None).await), ErrorKind::Validation);
}

#[tokio::test]
async fn links_to_accounts_and_emails_are_kept_in_an_archive() {
    let (fx, provider) = sso_board(true, None).await;
    let ana = sign_in(&fx, &provider, person("ana", "ana@example.com", true, &[])).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("archive");
    fx.board.export_archive(archive.clone(), None).await.unwrap();
    let data = out.path().join("restored");
    taskboard_core::Board::import_archive_into(archive, None, data.clone(), None).await.unwrap();
    let board = taskboard_core::Board::open(&data, fx.board.options().clone()).await.unwrap();
    let owner = board.actor(fx.owner.id()).await.unwrap();
    let restored = Fx { board, owner, dir: None, _blobs: None };
    // The subject is linked still, whatever the email says now.
    let again =
        sign_in(&restored, &provider, person("ana", "ana@elsewhere.example", false, &[])).await.unwrap();
    assert_eq!(again.member_id, ana.member_id);
    // And the email is indexed again: another account of hers links to her.
    let other = sign_in(&restored, &provider, person("ana-2", "ANA@example.com", true, &[])).await.unwrap();
    assert_eq!(other.member_id, ana.member_id);
}

#[tokio::test]
async fn a_sign_in_finishes_only_in_the_browser_that_started_it() {
    let (fx, provider) = sso_board(true, None).await;
    *provider.identity.lock().unwrap() = person("mallory", "mallory@example.com", true, &[]);
    // Mallory started a sign-in and went through the provider; her
    // callback address is followed by another browser: without her
    // cookie, or with a cookie of its own sign-in.
    let theirs = start(&fx).await;
    for browser in [None, Some(theirs.browser.as_str()), Some("made-up")] {
        let hers = start(&fx).await;
        let refused = back_in(&fx, &hers.state, browser).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::BadRequest, "{browser:?}");
        assert!(refused.detail().contains("not started in this browser"), "{}", refused.detail());
        // A refused callback used the state up, and signed nobody in.
        let replayed = back_in(&fx, &hers.state, Some(&hers.browser)).await.unwrap_err();
        assert!(replayed.detail().contains("already used state"), "{}", replayed.detail());
    }
    assert!(provider.exchanged.lock().unwrap().is_empty(), "the provider was never asked");
    // The other browser's own sign-in still finishes, and clears its cookie.
    let answer =
        CallbackQuery { code: Some("code".into()), state: Some(theirs.state.clone()), ..Default::default() };
    let redirect = fx.board.oidc_callback(answer, Some(&theirs.browser)).await.unwrap();
    assert!(redirect.set_cookie.unwrap().contains("Max-Age=0"));
}

#[tokio::test]
async fn the_browser_cookie_is_http_only_lax_secure_and_limited_to_the_callback() {
    let (fx, _provider) = sso_board(true, None).await;
    let redirect = fx.board.oidc_start("/", None).await.unwrap();
    let cookie = redirect.set_cookie.unwrap();
    for part in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/api/v1/auth/oidc/callback", "Max-Age=600"] {
        assert!(cookie.split("; ").any(|p| p == part), "{part} in {cookie}");
    }
}

#[tokio::test]
async fn starts_are_counted_per_client_address_and_bounded_on_the_board() {
    let limits = SignInLimits { per_address: 3, pending: 5 };
    let (fx, _provider) = sso_board_limited(true, None, limits).await;
    let one: std::net::IpAddr = "203.0.113.7".parse().unwrap();
    for _ in 0..3 {
        start_from(&fx, Some(one)).await.unwrap();
    }
    let e = start_from(&fx, Some(one)).await.err().unwrap();
    assert_eq!(e.kind(), ErrorKind::TooManyRequests);
    assert!(e.retry_after().is_some_and(|s| s > 0) && e.detail().contains("sign-ins"), "{}", e.detail());
    // Another address has its own count; an IPv6 host is counted by its /64.
    let v6 = |s: &str| Some(s.parse::<std::net::IpAddr>().unwrap());
    start_from(&fx, v6("2001:db8:1:2::1")).await.unwrap();
    start_from(&fx, v6("2001:db8:1:2::2")).await.unwrap();
    // Five under way on the board: no further start, from anywhere.
    let e = start_from(&fx, v6("2001:db8:9::1")).await.err().unwrap();
    assert_eq!(e.kind(), ErrorKind::TooManyRequests);
    assert!(e.detail().contains("under way"), "{}", e.detail());
}

#[tokio::test]
async fn a_finished_or_expired_sign_in_makes_room_for_another() {
    let clock = Clock::manual();
    let limits = SignInLimits { per_address: 100, pending: 2 };
    let (fx, provider) = sso_board_at(true, None, limits, clock.clone()).await;
    *provider.identity.lock().unwrap() = person("ana", "ana@example.com", true, &[]);
    let first = start(&fx).await;
    start(&fx).await;
    assert_eq!(kind(start_from(&fx, None).await), ErrorKind::TooManyRequests);
    back(&fx, &first).await.unwrap();
    start(&fx).await;
    assert_eq!(kind(start_from(&fx, None).await), ErrorKind::TooManyRequests);
    // Both left at the provider expire after 10 minutes.
    clock.advance(std::time::Duration::from_secs(601));
    start(&fx).await;
    start(&fx).await;
}
