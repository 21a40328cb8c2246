//! `GET /metrics`: scraped over HTTP and read as the Prometheus text
//! format, strictly (every line a comment or a sample of a declared
//! family), after requests that must have moved its counters.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;

use crate::support::*;

/// One sample: the metric's name, its labels, its value.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: HashMap<String, String>,
    value: f64,
}

/// Parses the text format; panics on any line that is not one.
fn parse(text: &str) -> (HashMap<String, String>, Vec<Sample>) {
    let mut types = HashMap::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "type {kind:?}");
            assert!(types.insert(name.to_string(), kind.to_string()).is_none(), "{name} declared twice");
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        assert!(!line.is_empty() && !line.starts_with('#'), "unexpected line {line:?}");
        let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value of {line:?}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, parse_labels(labels.strip_suffix('}').expect("closing brace"))),
            None => (series, HashMap::new()),
        };
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "metric name {name:?}"
        );
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| types.get(*f).is_some_and(|k| k == "histogram")))
            .unwrap_or(name);
        assert!(types.contains_key(family), "sample {name} before its # TYPE");
        samples.push(Sample { name: name.to_string(), labels, value });
    }
    (types, samples)
}

fn parse_labels(mut s: &str) -> HashMap<String, String> {
    let mut labels = HashMap::new();
    while !s.is_empty() {
        let (name, rest) = s.split_once("=\"").expect("label=\"value\"");
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next().expect("closing quote") {
                (i, '"') => break i,
                (_, '\\') => match chars.next().expect("escaped character").1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (_, c) => value.push(c),
            }
        };
        labels.insert(name.to_string(), value);
        s = rest[end + 1..].strip_prefix(',').unwrap_or(&rest[end + 1..]);
    }
    labels
}

/// The metrics token of the servers these tests scrape.
const TOKEN: &str = "scrape-secret";

/// A server whose metrics are open to [`TOKEN`].
async fn spawn_scraped(configure: impl FnOnce(&mut taskboard_server::Config)) -> TestApp {
    spawn_with(|c| {
        c.metrics_token = Some(TOKEN.to_string());
        configure(c);
    })
    .await
}

async fn scrape(app: &TestApp, token: Option<&str>) -> (u16, String) {
    let mut req = app.client.get(app.url("/metrics"));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    if status == 200 {
        assert_eq!(res.headers()["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    }
    (status, res.text().await.unwrap())
}

fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
}

#[tokio::test]
async fn metrics_count_requests_events_writes_and_the_backend() {
    let app = spawn_scraped(|_| {}).await;
    let (_, before) = scrape(&app, Some(TOKEN)).await;
    let (types, samples) = parse(&before);
    let me_before =
        value(&samples, "taskboard_http_requests_total", &[("endpoint", "get_me"), ("status", "200")])
            .unwrap_or(0.0);
    let seq_before = value(&samples, "taskboard_event_seq", &[]).unwrap();
    assert_eq!(types["taskboard_http_request_duration_seconds"], "histogram");

    for _ in 0..3 {
        app.get("/api/v1/members/me", app.owner()).await.expect::<Value>(200);
    }
    app.get("/api/v1/members/me", None).await.error(401, "unauthorized", "");
    let p = app.create_project(app.owner(), "web").await;
    app.create_task(app.owner(), p.id, "one").await;

    let (status, text) = scrape(&app, Some(TOKEN)).await;
    assert_eq!(status, 200);
    let (_, samples) = parse(&text);
    let count = |endpoint: &str, status: &str| {
        value(&samples, "taskboard_http_requests_total", &[("endpoint", endpoint), ("status", status)])
    };
    assert_eq!(count("get_me", "200"), Some(me_before + 3.0));
    assert_eq!(count("get_me", "401"), Some(1.0));
    assert_eq!(count("create_project", "201"), Some(1.0));
    let latency = |suffix: &str, le: Option<&str>| {
        let mut labels = vec![("endpoint", "get_me")];
        labels.extend(le.map(|le| ("le", le)));
        value(&samples, &format!("taskboard_http_request_duration_seconds{suffix}"), &labels)
    };
    assert_eq!(latency("_count", None), Some(me_before + 4.0));
    assert_eq!(latency("_bucket", Some("+Inf")), Some(me_before + 4.0));

    let seq = value(&samples, "taskboard_event_seq", &[]).unwrap();
    assert!(seq >= seq_before + 2.0, "a project and a task are two events at least: {seq_before} → {seq}");
    assert!(value(&samples, "taskboard_events_published_total", &[]).unwrap() >= 2.0);
    let backend = if on_postgres() { "postgres" } else { "redb" };
    assert_eq!(value(&samples, "taskboard_storage_info", &[("backend", backend)]), Some(1.0));
    let batches = value(&samples, "taskboard_write_batch_operations_count", &[]).unwrap();
    let operations = value(&samples, "taskboard_write_batch_operations_sum", &[]).unwrap();
    assert!(batches >= 1.0 && operations >= 2.0, "{batches} batches of {operations} operations");
    assert!(text.contains("# TYPE taskboard_webhook_backlog gauge"));
    // Every batch commits once. A write of the board's own (presence,
    // a token's last use) may be between its batch and its commit at a
    // scrape: look again until none is.
    let mut samples = samples;
    for _ in 0..100 {
        let batches = value(&samples, "taskboard_write_batch_operations_count", &[]);
        if value(&samples, "taskboard_write_commit_seconds_count", &[]) == batches {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        samples = parse(&scrape(&app, Some(TOKEN)).await.1).1;
    }
    panic!("batches and commits never agreed");
}

#[tokio::test]
async fn event_streams_are_counted_while_open() {
    let app = spawn_scraped(|_| {}).await;
    let gauge = |text: &str, name: &str| value(&parse(text).1, name, &[]).unwrap();
    let (_, text) = scrape(&app, Some(TOKEN)).await;
    assert_eq!(gauge(&text, "taskboard_websocket_connections"), 0.0);
    assert_eq!(gauge(&text, "taskboard_sse_connections"), 0.0);

    let ws_url = format!("{}/api/v1/ws?token={}", app.base.replacen("http://", "ws://", 1), app.owner_token);
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url.as_str()).await.expect("the upgrade");
    let sse = app
        .request(reqwest::Method::GET, "/api/v1/events", app.owner())
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);
    let (_, text) = scrape(&app, Some(TOKEN)).await;
    assert_eq!(gauge(&text, "taskboard_websocket_connections"), 1.0);
    assert_eq!(gauge(&text, "taskboard_sse_connections"), 1.0);

    // Closed by the client: the server learns of it on its own time, so
    // scrape until it has (bounded).
    ws.close(None).await.unwrap();
    while ws.next().await.is_some() {}
    drop(sse);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, text) = scrape(&app, Some(TOKEN)).await;
        let open =
            (gauge(&text, "taskboard_websocket_connections"), gauge(&text, "taskboard_sse_connections"));
        if open == (0.0, 0.0) {
            break;
        }
        assert!(Instant::now() < deadline, "streams still counted as open: {open:?}");
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_metrics_token_closes_the_metrics_to_everyone_else() {
    let app = spawn_with(|c| c.metrics_token = Some("scrape-secret".to_string())).await;
    let (status, body) = scrape(&app, None).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("metrics token"), "{body}");
    assert_eq!(scrape(&app, Some("wrong")).await.0, 401);
    assert_eq!(scrape(&app, Some(&app.owner_token)).await.0, 401, "a member's session is not the token");
    let (status, text) = scrape(&app, Some("scrape-secret")).await;
    assert_eq!(status, 200);
    let (_, samples) = parse(&text);
    assert_eq!(
        value(&samples, "taskboard_http_requests_total", &[("endpoint", "metrics"), ("status", "401")]),
        Some(3.0)
    );
    let res = app.client.post(app.url("/metrics")).bearer_auth("scrape-secret").send().await.unwrap();
    assert_eq!(res.status(), 405);
}

#[tokio::test]
async fn a_webhook_that_cannot_deliver_shows_its_backlog() {
    let app = spawn_scraped(|c| c.webhooks.allow_private = true).await;
    // Port 1 on loopback refuses connections: nothing is ever delivered.
    let body = serde_json::json!({"url": "http://127.0.0.1:1/hook"});
    let created: Value = app.post("/api/v1/webhooks", app.owner(), body).await.expect(201);
    let id = created["id"].as_str().unwrap().to_string();
    let (_, text) = scrape(&app, Some(TOKEN)).await;
    let before = value(&parse(&text).1, "taskboard_webhook_backlog", &[("webhook", &id)]);
    assert!(before.is_some(), "an active webhook has a backlog gauge:\n{text}");
    app.post("/api/v1/projects", app.owner(), serde_json::json!({"name": "Hooked", "slug": "hooked"}))
        .await
        .expect::<Value>(201);
    let (_, text) = scrape(&app, Some(TOKEN)).await;
    let after = value(&parse(&text).1, "taskboard_webhook_backlog", &[("webhook", &id)]).unwrap();
    assert!(after >= 1.0, "the project's event waits for the webhook: {after}");
}

#[tokio::test]
async fn without_a_token_the_metrics_are_served_only_on_their_own_listener() {
    let app = spawn().await;
    let (status, body) = scrape(&app, None).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(scrape(&app, Some(&app.owner_token)).await.0, 404, "not even to the owner");

    let app = spawn_with(|c| c.metrics_listen = Some("127.0.0.1:0".parse().unwrap())).await;
    assert_eq!(scrape(&app, None).await.0, 404, "the main listener does not serve them");
    let at = app.metrics_addr().expect("the metrics listener is bound");
    let res = app.client.get(format!("http://{at}/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("taskboard_event_seq"));
    // The metrics listener serves nothing else.
    let res = app.client.get(format!("http://{at}/api/v1/members/me")).send().await.unwrap();
    assert_eq!(res.status(), 404);
}
