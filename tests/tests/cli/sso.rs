//! `taskboard login --sso` against a real OpenID Connect provider (the
//! pinned `oidc-provider` package, tests/oidc-provider): the command
//! prints the board's address that starts the sign-in, the test plays the
//! browser there and on the provider's login page, and the login comes
//! back to the command's loopback listener.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::Value;
use taskboard_server::oidc::OidcConfig;
use taskboard_tests::Env;

#[path = "../../oidc-provider/harness.rs"]
mod harness;

use harness::{Browser, CLIENT_ID, CLIENT_SECRET, Provider};

#[test]
fn login_sso_signs_in_through_the_browser_and_stores_the_login_like_a_password_login() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let provider = runtime.block_on(Provider::start());
    let issuer = provider.issuer.clone();
    let env = Env::remote_with(|c| {
        c.oidc = Some(OidcConfig {
            issuer,
            client_id: CLIENT_ID.into(),
            client_secret: Some(CLIENT_SECRET.into()),
            create_members: true,
            ..OidcConfig::default()
        });
    });
    let server = env.server.as_ref().unwrap().url.clone();

    // A browser that cannot be started leaves the address to open by hand.
    let mut child = env
        .std_cmd()
        .env_remove("TASKBOARD_TOKEN")
        .env("BROWSER", env.dir.path().join("no-such-browser"))
        .args(["--server", &server, "login", "--sso"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut printed = String::new();
    let url = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the command ended first: {printed}");
        printed.push_str(&line);
        if let Some(url) = line.trim().strip_prefix("http") {
            break format!("http{url}");
        }
    };
    assert!(printed.contains("Open this address in a browser"), "{printed}");
    // The board's own start, so the browser gets the cookie that binds
    // the sign-in to it (docs/decisions.md 20.r).
    assert!(url.starts_with(&format!("{server}/api/v1/auth/oidc/start?return_to=")), "{url} is the board's");

    runtime.block_on(async {
        let browser = Browser::new();
        let back = browser.sign_in(&url, "ana").await;
        let landed = browser.walk(back.as_str(), &|_| false).await;
        assert_eq!(landed.status, 200, "{}", landed.body);
        assert!(landed.url.as_str().starts_with("http://127.0.0.1:"), "{}", landed.url);
        assert!(landed.body.contains("Signed in"), "{}", landed.body);
    });
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(out.status.success(), "{printed}{rest}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("logged in as ana"));
    assert!(rest.contains("could not start"), "the missing browser is said: {rest}");

    // Stored like a password login: the next commands use it.
    let stored: Value = serde_json::from_slice(&std::fs::read(&env.credentials).unwrap()).unwrap();
    assert_eq!(stored["slug"], "ana");
    assert_eq!(stored["server"], server);
    let out = env.bare().args(["--server", &server, "whoami", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let me: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((me["slug"].as_str(), me["email"].as_str()), (Some("ana"), Some("ana@example.com")));
}
