//! `--log-format json`: one JSON object per line, each request's lines
//! carrying its id; `X-Request-Id` taken from the client or generated,
//! and echoed on every response.

use serde_json::Value;

use crate::support::{Process, http, server_command};

#[tokio::test]
async fn json_logs_are_one_object_per_line_and_carry_the_request_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = server_command();
    command
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .arg("--data-dir")
        .arg(dir.path().join("data"));
    let mut server = Process::start(command, &dir.path().join("server.log"));
    let client = http();

    // The client's id is kept and echoed, on an answer and on an error.
    let res = client
        .get(format!("{}/health", server.base))
        .header("x-request-id", "trace-1.a:b")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["x-request-id"], "trace-1.a:b");
    let res = client
        .get(format!("{}/nowhere", server.base))
        .header("x-request-id", "trace-2")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    assert_eq!(res.headers()["x-request-id"], "trace-2");

    // No id, or one that is not visible ASCII or too long: a generated one.
    let mut generated = Vec::new();
    for given in [None, Some("has space"), Some(&*"x".repeat(129))] {
        let mut req = client.get(format!("{}/ready", server.base));
        if let Some(id) = given {
            req = req.header("x-request-id", id);
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 200);
        let id = res.headers()["x-request-id"].to_str().unwrap().to_string();
        assert_eq!(id.len(), 32, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        generated.push(id);
    }
    generated.dedup();
    assert_eq!(generated.len(), 3, "each request its own id");

    assert!(server.stop().success());
    let log = server.log_text();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON object ({e}): {l}")))
        .collect();
    assert!(lines.iter().all(|l| l.is_object() && l["level"].is_string() && l["timestamp"].is_string()));

    let request_line = |id: &str| {
        lines
            .iter()
            .find(|l| {
                l["message"] == "request"
                    && l["spans"].as_array().is_some_and(|s| s.iter().any(|s| s["request_id"] == id))
            })
            .unwrap_or_else(|| panic!("no access log line with request id {id} in:\n{log}"))
    };
    let health = request_line("trace-1.a:b");
    assert_eq!((health["path"].as_str(), health["status"].as_u64()), (Some("/health"), Some(200)));
    assert_eq!(request_line("trace-2")["status"], 404);
    for id in &generated {
        assert_eq!(request_line(id)["path"], "/ready");
    }
    assert!(lines.iter().any(|l| l["message"] == "stopped"), "the shutdown is logged too");
}

#[tokio::test]
async fn credentials_in_a_query_or_a_path_never_reach_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = server_command();
    command
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .arg("--data-dir")
        .arg(dir.path().join("data"));
    let mut server = Process::start(command, &dir.path().join("server.log"));
    let client = http();
    let login: Value = client
        .post(format!("{}/api/v1/auth/login", server.base))
        .json(&serde_json::json!({"login": "owner", "password": crate::support::OWNER_PASSWORD}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let jwt = login["token"].as_str().unwrap().to_string();
    let owner = login["member_id"].as_str().unwrap();
    let minted: Value = client
        .post(format!("{}/api/v1/members/{owner}/tokens", server.base))
        .bearer_auth(&jwt)
        .json(&serde_json::json!({"name": "probe", "scopes": ["read"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let access = minted["token"].as_str().unwrap_or_else(|| panic!("a token: {minted}")).to_string();
    assert!(access.starts_with("tba-"), "{access}");
    let secret = &access["tba-".len()..];
    let encoded = format!("tba%2D{secret}");

    for path in [
        format!("/api/v1/tasks?access_token={access}"),
        format!("/api/v1/tasks?q={access}&limit=5"),
        format!("/api/v1/tasks?q={encoded}"),
        format!("/api/v1/tasks?token={jwt}"),
        format!("/api/v1/nowhere/{access}"),
    ] {
        let res = client.get(format!("{}{path}", server.base)).bearer_auth(&jwt).send().await.unwrap();
        assert!(res.status().as_u16() < 500, "{path}: {}", res.status());
    }

    assert!(server.stop().success());
    let log = server.log_text();
    let jwt_signature = jwt.rsplit('.').next().unwrap();
    for (what, secret) in [("the access token", secret), ("the login", jwt_signature)] {
        assert!(!log.contains(secret), "{what} is in the log:\n{log}");
    }
    let queries: Vec<String> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["message"] == "request" && l["path"] == "/api/v1/tasks")
        .map(|l| l["query"].as_str().unwrap_or_default().to_string())
        .collect();
    for wanted in ["access_token=REDACTED", "q=REDACTED&limit=5", "token=REDACTED"] {
        assert!(queries.iter().any(|q| q == wanted), "{wanted} among {queries:?}");
    }
    assert!(log.contains("/api/v1/nowhere/tba-REDACTED"), "the path is redacted too:\n{log}");
}
