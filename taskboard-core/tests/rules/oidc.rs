//! Single sign-on's rules in the core, with the protocol side played by a
//! stand-in provider (the real one is tested in the server's tests): the
//! start and the exchange agree on verifier, nonce and redirect URI;
//! accounts link by subject, then by verified email; members are created
//! only when allowed; groups set the admin role but never an owner's; a
//! state and a login code work once; links are kept in an archive.

use std::sync::{Arc, Mutex};

use taskboard_core::api::{CallbackQuery, MemberPatch, Patch};
use taskboard_core::model::{LoginResponse, Role};
use taskboard_core::oidc::{
    AuthorizationRequest, CodeExchange, Identity, IdentityProvider, OidcOptions, ProviderFuture,
};
use taskboard_core::validate::Email;
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
    let provider = Arc::new(StandIn::default());
    let options = BoardOptions {
        oidc: Some(OidcOptions {
            issuer: "https://id.example.com".into(),
            display_name: None,
            create_members,
            admin_group: admin_group.map(String::from),
            public_url: Some("https://board.example.com/".into()),
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

/// The state of a started sign-in, from the provider's address.
async fn start(fx: &Fx) -> String {
    let url = fx.board.oidc_start("/", None).await.unwrap();
    url.split_once("state=").unwrap().1.to_string()
}

async fn back(fx: &Fx, state: &str) -> Result<String> {
    let answer = CallbackQuery { code: Some("code".into()), state: Some(state.into()), ..Default::default() };
    let location = fx.board.oidc_callback(answer).await?;
    Ok(location.split_once("login_code=").unwrap().1.to_string())
}

async fn sign_in(fx: &Fx, provider: &StandIn, identity: Identity) -> Result<LoginResponse> {
    *provider.identity.lock().unwrap() = identity;
    let state = start(fx).await;
    let code = back(fx, &state).await?;
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
    let state = start(&fx).await;
    let code = back(&fx, &state).await.unwrap();
    assert_eq!(kind(back(&fx, &state).await), ErrorKind::BadRequest);
    assert_eq!(kind(back(&fx, "made-up").await), ErrorKind::BadRequest);
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
