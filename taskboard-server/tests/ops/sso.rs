//! Single sign-on as an operator sets it up: its settings in the
//! configuration file (the client secret masked by `config print`), an
//! issuer refused at start, and the log of sign-ins and refusals of the
//! real binary signing people in through the test provider.

use serde_json::Value;

use crate::support::{Process, http, server_command};

#[path = "../../../tests/oidc-provider/harness.rs"]
mod harness;

use harness::{Browser, CLIENT_ID, CLIENT_SECRET, Provider};

fn run(args: &[&str]) -> (i32, String, String) {
    let out = server_command().args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn single_sign_on_is_set_in_the_configuration_file_with_its_secret_masked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.toml");
    std::fs::write(
        &file,
        "oidc-issuer = \"https://id.example.com/realms/acme\"\noidc-client-id = \"taskboard\"\n\
         oidc-client-secret = \"very-secret-value\"\noidc-admin-group = \"board-admins\"\n\
         oidc-create-members = true\npassword-login = \"owners\"\npublic-url = \"https://board.example.com\"\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let (code, printed, err) = run(&["--config", file, "config", "print"]);
    assert_eq!(code, 0, "{err}");
    assert!(!printed.contains("very-secret-value"), "the secret is masked:\n{printed}");
    for wanted in [
        "oidc-issuer = \"https://id.example.com/realms/acme\"  # file",
        "oidc-admin-group = \"board-admins\"  # file",
        "oidc-create-members = true  # file",
        "password-login = \"owners\"  # file",
        "# oidc-client-secret = \"********\" (secret, from the file)",
    ] {
        assert!(printed.lines().any(|l| l == wanted), "{wanted:?} in:\n{printed}");
    }
    let (code, out, err) = run(&["config", "check", file]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("valid"), "{out}");

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "password-login = \"nobody\"\n").unwrap();
    let (code, _, err) = run(&["config", "check", bad.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("password-login") && err.contains("owners"), "{err}");
}

#[test]
fn an_issuer_that_is_not_https_off_loopback_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (code, _, err) = run(&[
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--oidc-issuer",
        "http://id.example.com",
        "--oidc-client-id",
        "taskboard",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("must be https://"), "{err}");
}

#[test]
fn single_sign_on_without_a_public_url_stops_the_start_naming_the_flag() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut child = server_command()
        .args(["--listen", "127.0.0.1:0", "--data-dir", data.to_str().unwrap()])
        .args(["--oidc-issuer", "https://id.example.com", "--oidc-client-id", "taskboard"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A server that starts says where it listens; one that refuses ends.
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.contains("listening on") {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server started with single sign-on and no --public-url: {line}");
        }
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("--public-url") && err.contains("`public-url`"), "the flag and the key: {err}");
    assert!(!data.join("board.redb").exists(), "nothing was started");
}

/// The provider's redirect to the public URL, sent to the server itself,
/// as a reverse proxy at the public URL would (the test cannot know the
/// server's port before it starts).
fn through_the_proxy(back: &reqwest::Url, server: &str) -> reqwest::Url {
    format!("{server}{}?{}", back.path(), back.query().unwrap()).parse().unwrap()
}

#[tokio::test]
async fn each_sign_in_and_each_refusal_is_logged_without_a_token() {
    let provider = Provider::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = server_command();
    command
        .args(["--listen", "127.0.0.1:0", "--log-format", "json", "--oidc-create-members"])
        .args(["--oidc-issuer", &provider.issuer, "--oidc-client-id", CLIENT_ID])
        .args(["--public-url", "http://127.0.0.1:1"])
        .env("TASKBOARD_OIDC_CLIENT_SECRET", CLIENT_SECRET)
        .arg("--data-dir")
        .arg(dir.path().join("data"));
    let mut server = Process::start(command, &dir.path().join("server.log"));
    let start = format!("{}/api/v1/auth/oidc/start?return_to=%2F", server.base);

    let browser = Browser::new();
    let back = browser.sign_in(&start, "ana").await;
    assert!(back.as_str().starts_with("http://127.0.0.1:1/"), "under the public URL: {back}");
    let back = through_the_proxy(&back, &server.base);
    let step = browser.send(back.clone(), None).await;
    let code = step.login_code();
    let login: Value = http()
        .post(format!("{}/api/v1/auth/oidc/exchange", server.base))
        .json(&serde_json::json!({"login_code": code}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = login["token"].as_str().unwrap().to_string();
    // The page the browser lands on is asked for with the code.
    browser.send(step.location.clone().unwrap(), None).await;
    let replayed = browser.send(back.clone(), None).await;
    assert_eq!(replayed.status, 400);
    let unverified = Browser::new();
    let back_cy = through_the_proxy(&unverified.sign_in(&start, "unverified-cy").await, &server.base);
    let refused = unverified.send(back_cy, None).await;
    assert_eq!(refused.status, 403);

    assert!(server.stop().success());
    let log = server.log_text();
    let lines: Vec<Value> = log.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let signed_in = lines.iter().find(|l| l["message"] == "single sign-on").expect("a sign-in line");
    assert_eq!(signed_in["member"], "ana", "{signed_in}");
    assert_eq!(signed_in["how"], "created", "{signed_in}");
    let reasons: Vec<&str> = lines
        .iter()
        .filter(|l| l["message"] == "single sign-on refused")
        .filter_map(|l| l["reason"].as_str())
        .collect();
    assert!(reasons.iter().any(|r| r.contains("already used state")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("is verified")), "{reasons:?}");
    let state = back.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    let auth_code = back.query_pairs().find(|(k, _)| k == "code").unwrap().1.into_owned();
    for secret in [&token, &code, &state, &auth_code, &CLIENT_SECRET.to_string()] {
        assert!(!log.contains(secret.as_str()), "{secret} is in the log:\n{log}");
    }
}

/// `--oidc-admin-group` with a provider that lists a `groups` scope not
/// asked for: the start warns, naming the flag; asked for, it does not
/// (docs/decisions.md 22.j).
#[tokio::test]
async fn an_admin_group_without_the_providers_groups_scope_is_warned_of_at_start() {
    let provider = Provider::start().await;
    let dir = tempfile::tempdir().unwrap();
    let start = |name: &str, scopes: &str| {
        let mut command = server_command();
        command
            .args(["--listen", "127.0.0.1:0", "--oidc-admin-group", "board-admins"])
            .args(["--oidc-issuer", &provider.issuer, "--oidc-client-id", CLIENT_ID])
            .args(["--oidc-scopes", scopes, "--public-url", "http://127.0.0.1:1"])
            .env("TASKBOARD_OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .arg("--data-dir")
            .arg(dir.path().join(name));
        Process::start(command, &dir.path().join(format!("{name}.log")))
    };
    let mut without = start("without", "openid,email,profile");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !without.log_text().contains("--oidc-scopes") && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let stopped = without.stop();
    let log = without.log_text();
    assert!(stopped.success(), "{stopped}:\n{log}");
    assert!(
        log.contains("WARN") && log.contains("--oidc-scopes openid,email,profile,groups"),
        "the warning names the scope and the flag:\n{log}"
    );

    let mut with = start("with", "openid,email,profile,groups");
    // A request answered after start: the provider has been read by then
    // or is being read; the stop waits for nothing of it.
    http().get(format!("{}/health", with.base)).send().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let stopped = with.stop();
    let log = with.log_text();
    assert!(stopped.success(), "{stopped}:\n{log}");
    assert!(!log.contains("--oidc-scopes"), "no warning when groups is asked:\n{log}");
}
