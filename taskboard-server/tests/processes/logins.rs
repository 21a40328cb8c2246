//! Failed logins are counted in the store: three processes behind a
//! balancer allow the attempts one allows, for a member's login and for a
//! login that names no one.

use reqwest::Method;
use serde_json::json;

use crate::support::*;

/// Logs in on process `i`; the status.
async fn login(c: &Cluster, i: usize, login: &str, password: &str) -> u16 {
    let body = json!({"login": login, "password": password});
    c.call(i, Method::POST, "/api/v1/auth/login", "", Some(body)).await.0
}

#[tokio::test]
async fn ten_failures_spread_over_three_processes_lock_a_login_on_all_of_them() {
    let c = Cluster::start().await;
    for i in 0..10 {
        assert_eq!(login(&c, i, "owner", "wrong-password").await, 401, "failure {i}");
    }
    for i in 0..3 {
        assert_eq!(
            login(&c, i, "owner", OWNER_PASSWORD).await,
            429,
            "process {i} counts the others' failures"
        );
    }
    // A name that names no member is counted by its text, alike on every
    // process, whatever its case.
    for i in 0..10 {
        assert_eq!(login(&c, i, "Nobody", "wrong-password").await, 401, "failure {i}");
    }
    assert_eq!(login(&c, 1, "nobody ", "wrong-password").await, 429);
    assert_eq!(login(&c, 2, "somebody", "wrong-password").await, 401, "another login is not held back");
}
