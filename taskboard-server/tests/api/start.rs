//! Start-up: the order of binding and bootstrapping, and the first owner's
//! generated password kept until it is used.

use serde_json::{Value, json};
use taskboard_core::board::INITIAL_PASSWORD_FILE;
use taskboard_server::{Config, Server};

fn config(data_dir: &std::path::Path) -> Config {
    let mut config = Config::new(data_dir);
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.jwt_secret = Some("test-secret".to_string());
    config
}

#[tokio::test]
async fn a_start_whose_address_is_taken_fails_before_touching_the_board() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut config = config(&data_dir);
    config.listen = taken.local_addr().unwrap();
    let error = Server::bind(config).await.expect_err("the address is taken").to_string();
    assert!(error.contains(&taken.local_addr().unwrap().to_string()), "{error}");
    assert!(!data_dir.join("board.redb").exists(), "no board was created");
    assert!(!data_dir.join(INITIAL_PASSWORD_FILE).exists());
}

#[tokio::test]
async fn a_generated_owner_password_is_kept_until_the_owner_has_used_it() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let path = data_dir.join(INITIAL_PASSWORD_FILE);

    let server = Server::bind(config(&data_dir)).await.unwrap();
    let generated = server.bootstrap().unwrap().generated_password.clone().expect("generated");
    let kept = server.initial_password().expect("kept on the first start");
    assert_eq!((&kept.password, &kept.path), (&generated, &path));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    server.spawn().shutdown().await;

    // A later start, the password still unused: found again.
    let server = Server::bind(config(&data_dir)).await.unwrap();
    assert!(server.bootstrap().is_none());
    assert_eq!(server.initial_password().map(|k| k.password.as_str()), Some(generated.as_str()));
    let base = format!("http://{}", server.local_addr());
    let handle = server.spawn();
    taskboard_core::tls::install_provider();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let login: Value = http
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"login": "owner", "password": generated}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = login["token"].as_str().expect("logged in with the generated password");
    let status = http
        .patch(format!("{base}/api/v1/members/me/status?status=online"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
    handle.shutdown().await;

    // Used: the next start removes it.
    let server = Server::bind(config(&data_dir)).await.unwrap();
    assert!(server.initial_password().is_none());
    assert!(!path.exists());
    server.spawn().shutdown().await;
}

#[tokio::test]
async fn a_chosen_owner_password_is_not_written_down() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let mut config = config(&data_dir);
    config.owner_password = Some("a chosen password".into());
    let server = Server::bind(config).await.unwrap();
    assert!(server.bootstrap().unwrap().generated_password.is_none());
    assert!(server.initial_password().is_none());
    assert!(!data_dir.join(INITIAL_PASSWORD_FILE).exists());
    server.spawn().shutdown().await;
}
