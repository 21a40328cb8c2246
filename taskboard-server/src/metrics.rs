//! `GET /metrics`: the server's counters in the Prometheus text format.
//!
//! It shows counts and timings, never a record, but also webhook ids,
//! failed login counts and the event sequence, so it is not open: on the
//! main listener it answers only with `--metrics-token` (`Authorization:
//! Bearer <that token>`; a scraper should not hold a member's
//! credentials) and is 404 without one; `--metrics-listen ADDR` serves it
//! alone, without a token, on an address of its own.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use sha2::{Digest, Sha256};
use taskboard_core::metrics::{CONTENT_TYPE, Histogram, SECONDS_BUCKETS, Text};
use taskboard_core::{Board, Error, ErrorKind};

use crate::response::ResBody;

/// The path of the endpoint.
pub(crate) const PATH: &str = "/metrics";

/// What the server counts itself; the board and its store count the rest.
pub(crate) struct Metrics {
    /// SHA-256 of `--metrics-token`, compared with the digest of what a
    /// scraper sends, so the comparison takes the same time however much
    /// of the token is right.
    token: Option<[u8; 32]>,
    requests: RwLock<HashMap<(&'static str, u16), AtomicU64>>,
    latency: RwLock<HashMap<&'static str, Histogram>>,
    pub websockets: Arc<Gauge>,
    pub sse: Arc<Gauge>,
}

/// An endpoint's own counters, kept with its route: counting a request of
/// it takes no lock and no lookup (docs/storage.md, S.46).
pub(crate) struct Counters {
    /// Answers by status, one count per entry of [`STATUSES`]; any other
    /// status is counted in [`Metrics`]' shared map.
    statuses: [AtomicU64; STATUSES.len()],
    latency: Histogram,
}

/// The statuses an endpoint's counters hold, in order.
const STATUSES: [u16; 30] = [
    200, 201, 202, 204, 206, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 406, 408, 409, 410, 412,
    413, 415, 416, 422, 428, 429, 500, 502, 503,
];

impl Counters {
    pub fn new() -> Counters {
        Counters {
            statuses: std::array::from_fn(|_| AtomicU64::new(0)),
            latency: Histogram::new(SECONDS_BUCKETS),
        }
    }
}

/// A number of things open now.
#[derive(Default)]
pub(crate) struct Gauge(AtomicI64);

impl Gauge {
    /// Counts one until the guard is dropped.
    pub fn hold(self: &Arc<Self>) -> GaugeGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        GaugeGuard(self.clone())
    }

    fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

pub(crate) struct GaugeGuard(Arc<Gauge>);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The backlog of each active webhook, by webhook id
/// (`Board::webhook_backlogs`); nothing when the store cannot be read.
async fn webhook_backlog(board: &Board) -> Vec<(String, u64)> {
    match board.webhook_backlogs().await {
        Ok(backlogs) => backlogs.into_iter().map(|(id, n)| (id.to_string(), n)).collect(),
        Err(e) => {
            tracing::warn!(%e, "webhook backlog for the metrics");
            Vec::new()
        }
    }
}

impl Metrics {
    pub fn new(token: Option<&str>) -> Metrics {
        Metrics {
            token: token.map(|t| Sha256::digest(t.as_bytes()).into()),
            requests: Default::default(),
            latency: Default::default(),
            websockets: Default::default(),
            sse: Default::default(),
        }
    }

    /// Counts an answered request of `endpoint` (the endpoint's name, or
    /// `web`, `mcp`, `metrics`, `preflight`, `unmatched`).
    pub fn record(&self, endpoint: &'static str, status: StatusCode, started: Instant) {
        self.count(endpoint, status.as_u16());
        let elapsed = started.elapsed();
        let observed = self.latency.read().unwrap().get(endpoint).map(|h| h.observe_duration(elapsed));
        if observed.is_none() {
            self.latency
                .write()
                .unwrap()
                .entry(endpoint)
                .or_insert_with(|| Histogram::new(SECONDS_BUCKETS))
                .observe_duration(elapsed);
        }
    }

    /// Counts an answered request of the endpoint `endpoint` in its own
    /// `counters` (its route's).
    pub fn record_in(
        &self,
        endpoint: &'static str,
        counters: &Counters,
        status: StatusCode,
        started: Instant,
    ) {
        let elapsed = started.elapsed();
        match STATUSES.binary_search(&status.as_u16()) {
            Ok(i) => {
                counters.statuses[i].fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => self.count(endpoint, status.as_u16()),
        }
        counters.latency.observe_duration(elapsed);
    }

    /// Counts an answer in the shared map.
    fn count(&self, endpoint: &'static str, status: u16) {
        let key = (endpoint, status);
        let counted = self.requests.read().unwrap().get(&key).map(|c| c.fetch_add(1, Ordering::Relaxed));
        if counted.is_none() {
            self.requests.write().unwrap().entry(key).or_default().fetch_add(1, Ordering::Relaxed);
        }
    }

    fn allows<B>(&self, req: &Request<B>) -> bool {
        let Some(expected) = &self.token else { return false };
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|t| <[u8; 32]>::from(Sha256::digest(t.trim().as_bytes())));
        given.is_some_and(|g| g == *expected)
    }
}

/// Answers `GET /metrics`.
pub(crate) async fn serve<B>(
    state: &crate::State,
    req: &Request<B>,
    listened: crate::Listened,
) -> Response<ResBody> {
    let own_listener = listened == crate::Listened::Metrics;
    if req.uri().path() != PATH || (!own_listener && state.metrics.token.is_none()) {
        // Without a token the metrics are not served on the main listener
        // at all: they name webhooks and count failed logins.
        return crate::response::error(&Error::not_found(format!("no route for {}", req.uri().path())));
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut res = crate::response::error(&Error::new(
            ErrorKind::MethodNotAllowed,
            format!("{} is not allowed here; allowed: GET, HEAD", req.method()),
        ));
        res.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return res;
    }
    if !own_listener && !state.metrics.allows(req) {
        let mut res = crate::response::error(&Error::new(
            ErrorKind::Unauthorized,
            "metrics need the metrics token: send Authorization: Bearer <token>",
        ));
        res.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return res;
    }
    let text = render(state).await;
    crate::response::full(StatusCode::OK, HeaderValue::from_static(CONTENT_TYPE), text)
}

async fn render(state: &crate::State) -> String {
    let m = &state.metrics;
    let board = &state.board;
    let mut t = Text::new();
    t.family("taskboard_http_requests_total", "counter", "Requests answered, by endpoint and status.");
    let mut requests: Vec<_> =
        m.requests.read().unwrap().iter().map(|(k, v)| (*k, v.load(Ordering::Relaxed))).collect();
    for route in state.router.routes() {
        for (status, count) in STATUSES.iter().zip(&route.counters.statuses) {
            let count = count.load(Ordering::Relaxed);
            if count > 0 {
                requests.push(((route.info.name, *status), count));
            }
        }
    }
    requests.sort();
    for ((endpoint, status), count) in requests {
        let status = status.to_string();
        t.sample(
            "taskboard_http_requests_total",
            &[("endpoint", endpoint), ("status", &status)],
            count as f64,
        );
    }
    t.family(
        "taskboard_http_request_duration_seconds",
        "histogram",
        "Time from a request's arrival until its answer's head, by endpoint (streamed bodies go on after).",
    );
    {
        let latency = m.latency.read().unwrap();
        let mut endpoints: Vec<(&str, &Histogram)> = latency.iter().map(|(k, h)| (*k, h)).collect();
        for route in state.router.routes() {
            if route.counters.latency.count() > 0 {
                endpoints.push((route.info.name, &route.counters.latency));
            }
        }
        endpoints.sort_by_key(|(name, _)| *name);
        for (endpoint, histogram) in endpoints {
            t.histogram("taskboard_http_request_duration_seconds", &[("endpoint", endpoint)], histogram);
        }
    }
    t.family("taskboard_websocket_connections", "gauge", "WebSocket event streams open now.").sample(
        "taskboard_websocket_connections",
        &[],
        m.websockets.get() as f64,
    );
    t.family("taskboard_sse_connections", "gauge", "Server-Sent Events streams open now.").sample(
        "taskboard_sse_connections",
        &[],
        m.sse.get() as f64,
    );
    t.family("taskboard_event_seq", "gauge", "The seq of the newest event.").sample(
        "taskboard_event_seq",
        &[],
        board.latest_seq() as f64,
    );
    t.family(
        "taskboard_events_published_total",
        "counter",
        "Events published to this process's subscribers since it started.",
    )
    .sample("taskboard_events_published_total", &[], board.events_published() as f64);
    t.family("taskboard_storage_info", "gauge", "The storage backend of the board (always 1).").sample(
        "taskboard_storage_info",
        &[("backend", board.storage_backend())],
        1.0,
    );
    if let Some(w) = board.writer_metrics() {
        t.family(
            "taskboard_write_batch_operations",
            "histogram",
            "Write operations committed together in one transaction.",
        )
        .histogram("taskboard_write_batch_operations", &[], &w.batch_operations);
        t.family(
            "taskboard_write_batch_seconds",
            "histogram",
            "Time of a write batch, from the start of its transaction until it is durable.",
        )
        .histogram("taskboard_write_batch_seconds", &[], &w.batch_seconds);
        t.family(
            "taskboard_write_commit_seconds",
            "histogram",
            "Time of a batch's commit, its sync included.",
        )
        .histogram("taskboard_write_commit_seconds", &[], &w.commit_seconds);
        t.family(
            "taskboard_write_failed_batches_total",
            "counter",
            "Write batches of which nothing committed.",
        )
        .sample(
            "taskboard_write_failed_batches_total",
            &[],
            w.failed_batches.load(Ordering::Relaxed) as f64,
        );
    }
    let backlog = webhook_backlog(board).await;
    t.family("taskboard_webhook_backlog", "gauge", "Events not yet delivered, by webhook.");
    for (webhook, events) in &backlog {
        t.sample("taskboard_webhook_backlog", &[("webhook", webhook)], *events as f64);
    }
    t.finish()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Instant;

    use hyper::StatusCode;

    use super::{Counters, Metrics, STATUSES};

    #[test]
    fn the_counted_statuses_are_in_order() {
        // `record_in` finds a status by binary search.
        assert!(STATUSES.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_route_counts_its_statuses_and_the_shared_map_the_others() {
        let counters = Counters::new();
        let metrics = Metrics::new(None);
        let started = Instant::now();
        for status in [StatusCode::OK, StatusCode::OK, StatusCode::IM_A_TEAPOT] {
            metrics.record_in("health", &counters, status, started);
        }
        let ok = STATUSES.binary_search(&200).unwrap();
        assert_eq!(counters.statuses[ok].load(Ordering::Relaxed), 2);
        let shared = metrics.requests.read().unwrap();
        assert_eq!(shared.get(&("health", 418)).map(|c| c.load(Ordering::Relaxed)), Some(1));
        assert_eq!(shared.len(), 1, "a listed status is not counted twice");
        assert_eq!(counters.latency.count(), 3);
    }
}
