//! Load client of the WebSocket benchmark (`bench/ws.sh` runs it against
//! a release server).
//!
//! `fanout`: N connected clients, then task updates one at a time; the
//! latency of each update is measured from the moment its PATCH is sent
//! to the moment each client has its `task.updated` frame.
//!
//! `sustained`: N connected clients, events produced over HTTP at a fixed
//! rate; every client must see every event, with contiguous `seq`s.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{Semaphore, mpsc};
use tokio_tungstenite::connect_async_with_config;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

#[derive(Debug, Parser)]
struct Args {
    /// Base URL of the server, e.g. http://127.0.0.1:8080.
    #[arg(long)]
    url: String,
    #[arg(long, default_value = "owner")]
    login: String,
    #[arg(long, env = "TASKBOARD_OWNER_PASSWORD", hide_env_values = true)]
    password: String,
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Debug, Subcommand)]
enum Scenario {
    /// One task update at a time, fanned out to every client.
    Fanout {
        #[arg(long, default_value_t = 1000)]
        clients: usize,
        /// Updates measured (each one waits until every client has it).
        #[arg(long, default_value_t = 30)]
        rounds: usize,
    },
    /// A steady rate of events to every client.
    Sustained {
        #[arg(long, default_value_t = 100)]
        clients: usize,
        /// Events per second.
        #[arg(long, default_value_t = 10_000)]
        rate: u64,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Which change produces the events.
        #[arg(long, value_enum, default_value_t = EventKind::Status)]
        event: EventKind,
        /// Requests in flight at most.
        #[arg(long, default_value_t = 128)]
        in_flight: usize,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum EventKind {
    /// `PATCH /members/me/status`: `agent.status`, about 100 bytes a frame.
    Status,
    /// `PATCH /tasks/{id}`: `task.updated`, a whole Task per frame.
    Task,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The part of a frame the clients read; `data` is skipped unparsed.
#[derive(Deserialize)]
struct Frame {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    seq: u64,
}

struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    async fn login(base: &str, login: &str, password: &str) -> Result<Api, Error> {
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder().pool_max_idle_per_host(512).build()?;
        let base = base.trim_end_matches('/').to_string();
        let r: Value = http
            .post(format!("{base}/api/v1/auth/login"))
            .json(&json!({"login": login, "password": password}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let token = r["token"].as_str().ok_or("login answered no token")?.to_string();
        Ok(Api { http, base, token })
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, Error> {
        let mut req = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        Ok(req.send().await?.error_for_status()?.json().await?)
    }

    /// A fresh project with one task; returns the task's id.
    async fn task(&self) -> Result<String, Error> {
        let slug = format!("bench-{}", std::process::id());
        let project = self
            .call(reqwest::Method::POST, "/api/v1/projects", Some(json!({"name": slug, "slug": slug})))
            .await?;
        let project_id = project["id"].as_str().ok_or("no project id")?;
        let task = self
            .call(
                reqwest::Method::POST,
                &format!("/api/v1/tasks?project_id={project_id}"),
                Some(json!({"title": "benchmark", "description": "A task whose updates are fanned out."})),
            )
            .await?;
        Ok(task["id"].as_str().ok_or("no task id")?.to_string())
    }

    fn ws_url(&self) -> String {
        format!("{}/api/v1/ws?token={}", self.base.replacen("http", "ws", 1), self.token)
    }
}

/// What a client saw: the arrival time of each interesting frame.
struct Seen {
    arrivals: Vec<(u64, Instant)>,
    /// Frames whose seq did not follow the previous one.
    gaps: u64,
    close: Option<String>,
}

/// `seq` and `type` of a frame without parsing `data`: the core renders
/// `type` and `seq` first. The load client shares the machine's two cores
/// with the server; it must stay cheap.
fn scan(text: &str) -> Option<(u64, &str)> {
    let j = text.find("\"type\":\"")? + 8;
    let kind = &text[j..j + text[j..].find('"')?];
    let i = text.find("\"seq\":")? + 6;
    let digits = text[i..].bytes().take_while(u8::is_ascii_digit).count();
    let seq = text[i..i + digits].parse().ok()?;
    Some((seq, kind))
}

fn client_config() -> WebSocketConfig {
    // 1,000 clients with the default 128 KiB read buffers would be
    // 128 MB of memory touched for nothing, and tungstenite zeroes the
    // buffer before every read: 4 KiB holds a few frames of the benchmark.
    WebSocketConfig::default().read_buffer_size(4 * 1024)
}

/// Opens `n` connections, each waiting for its `hello`, and returns the
/// tasks reading them. A client stops at the first frame whose seq is at
/// least `stop` (the caller sets it, then makes one more event).
async fn connect_all(
    api: &Api,
    n: usize,
    stop: Arc<AtomicU64>,
    interesting: fn(&str) -> bool,
) -> Result<Vec<tokio::task::JoinHandle<Seen>>, Error> {
    let url = api.ws_url();
    let mut clients = Vec::with_capacity(n);
    // Connecting a few at a time keeps the accept backlog from
    // overflowing on 1,000 simultaneous handshakes.
    let opening = Arc::new(Semaphore::new(64));
    let (ready_tx, mut ready_rx) = mpsc::channel::<Result<(), String>>(n.max(1));
    for _ in 0..n {
        let url = url.clone();
        let opening = opening.clone();
        let ready = ready_tx.clone();
        let stop = stop.clone();
        clients.push(tokio::spawn(async move {
            let mut seen = Seen { arrivals: Vec::with_capacity(1024), gaps: 0, close: None };
            let permit = opening.acquire_owned().await;
            let mut ws = match connect_async_with_config(&url, Some(client_config()), true).await {
                Ok((ws, _)) => ws,
                Err(e) => {
                    let _ = ready.send(Err(e.to_string())).await;
                    return seen;
                }
            };
            // The hello frame: the session is subscribed from its seq on.
            let mut last = match ws.next().await {
                Some(Ok(Message::Text(t))) => scan(&t).map_or(0, |(seq, _)| seq),
                _ => 0,
            };
            drop(permit);
            let _ = ready.send(Ok(())).await;
            loop {
                match ws.next().await {
                    Some(Ok(Message::Text(text))) => {
                        let now = Instant::now();
                        let Some((seq, kind)) = scan(&text) else { continue };
                        // Every event of the benchmark is for every
                        // client, so seqs must follow each other.
                        if seq != last + 1 {
                            seen.gaps += 1;
                        }
                        last = seq;
                        if interesting(kind) {
                            seen.arrivals.push((seq, now));
                        }
                        if seq >= stop.load(Ordering::Acquire) {
                            break;
                        }
                    }
                    Some(Ok(Message::Close(c))) => {
                        seen.close = Some(format!("{c:?}"));
                        break;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => {
                        seen.close = Some(e.to_string());
                        break;
                    }
                    None => break,
                }
            }
            seen
        }));
    }
    drop(ready_tx);
    let mut open = 0;
    while let Some(r) = ready_rx.recv().await {
        r.map_err(|e| format!("a client could not connect: {e}"))?;
        open += 1;
        if open == n {
            break;
        }
    }
    Ok(clients)
}

/// The newest seq, from the `hello` of a fresh connection.
async fn newest_seq(api: &Api) -> Result<u64, Error> {
    let (mut probe, _) = tokio_tungstenite::connect_async(api.ws_url()).await?;
    match probe.next().await {
        Some(Ok(Message::Text(t))) => Ok(scan(&t).ok_or("a hello without seq")?.0),
        other => Err(format!("no hello: {other:?}").into()),
    }
}

async fn update(api: &Api, task: &str, n: usize) -> Result<Value, Error> {
    api.call(
        reqwest::Method::PATCH,
        &format!("/api/v1/tasks/{task}"),
        Some(json!({"title": format!("update {n}")})),
    )
    .await
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// p50, p99 and the maximum of some latencies.
fn spread(mut latencies: Vec<Duration>) -> String {
    latencies.sort();
    format!(
        "p50 {}, p99 {}, max {}",
        ms(percentile(&latencies, 50.0)),
        ms(percentile(&latencies, 99.0)),
        ms(latencies.last().copied().unwrap_or_default()),
    )
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

async fn fanout(api: Api, clients: usize, rounds: usize) -> Result<(), Error> {
    let task = api.task().await?;
    let stop = Arc::new(AtomicU64::new(u64::MAX));
    let started = Instant::now();
    let handles = connect_all(&api, clients, stop.clone(), |kind| kind == "task.updated").await?;
    println!("fanout: {clients} clients connected in {}", ms(started.elapsed()));
    // Each round's arrivals are gathered from the clients' own records;
    // rounds are spaced by waiting on a dedicated probe connection.
    let (mut probe, _) = tokio_tungstenite::connect_async(api.ws_url()).await?;
    let _ = probe.next().await;
    let mut sent: HashMap<u64, Instant> = HashMap::new();
    let mut frame_bytes = 0;
    for round in 0..rounds {
        let at = Instant::now();
        update(&api, &task, round).await?;
        let seq = loop {
            match probe.next().await {
                Some(Ok(Message::Text(t))) => {
                    let f: Frame = serde_json::from_str(&t)?;
                    if f.kind == "task.updated" {
                        frame_bytes = frame_bytes.max(t.len());
                        break f.seq;
                    }
                }
                Some(Ok(_)) => {}
                other => return Err(format!("probe connection ended: {other:?}").into()),
            }
        };
        sent.insert(seq, at);
        // Let the other clients drain this round before the next: the
        // figure is the latency of one update, not of a queue.
        tokio::time::sleep(Duration::from_millis(100)).await;
        if round + 1 == rounds {
            // One more update, past the measured ones, ends the clients.
            stop.store(seq + 1, Ordering::Release);
            update(&api, &task, rounds).await?;
        }
    }
    let mut latencies = Vec::with_capacity(clients * rounds);
    // Per update, when its last client had it.
    let mut last: HashMap<u64, Duration> = HashMap::new();
    let mut missing = 0usize;
    let mut gaps = 0;
    for h in handles {
        let seen = h.await?;
        gaps += seen.gaps;
        let mut got = 0;
        for (seq, at) in seen.arrivals {
            if let Some(t0) = sent.get(&seq) {
                let latency = at.duration_since(*t0);
                latencies.push(latency);
                let slowest = last.entry(seq).or_default();
                *slowest = (*slowest).max(latency);
                got += 1;
            }
        }
        missing += rounds - got;
    }
    if gaps > 0 {
        return Err(format!("{gaps} gaps in the clients' streams").into());
    }
    println!(
        "fanout: {clients} clients x {rounds} updates, {} deliveries, {missing} missing: {}",
        latencies.len(),
        spread(latencies),
    );
    let last: Vec<Duration> = last.into_values().collect();
    println!("fanout: from an update to its last client, over {} updates: {}", last.len(), spread(last));
    // With the frame's size, `bench/ws.sh` measures the floor (`ws_floor`).
    println!("fanout: task.updated frames of {frame_bytes} bytes");
    Ok(())
}

async fn sustained(
    api: Api,
    clients: usize,
    rate: u64,
    seconds: u64,
    event: EventKind,
    in_flight: usize,
) -> Result<(), Error> {
    let task = api.task().await?;
    let stop = Arc::new(AtomicU64::new(u64::MAX));
    let kind: fn(&str) -> bool = match event {
        EventKind::Status => |k| k == "agent.status",
        EventKind::Task => |k| k == "task.updated",
    };
    let handles = connect_all(&api, clients, stop.clone(), kind).await?;
    // Events before this seq (the clients' own presence) are not counted.
    let first = newest_seq(&api).await? + 1;
    println!("sustained: {clients} clients connected");
    let api = Arc::new(api);
    let total = rate * seconds;
    let slots = Arc::new(Semaphore::new(in_flight));
    let started = Instant::now();
    let mut requests = Vec::with_capacity(total as usize);
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut issued = 0u64;
    while issued < total {
        tick.tick().await;
        // Issue what the schedule says should have been issued by now.
        let due = ((started.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
        while issued < due {
            let permit = slots.clone().acquire_owned().await?;
            let api = api.clone();
            let task = task.clone();
            let n = issued;
            requests.push(tokio::spawn(async move {
                let r = match event {
                    EventKind::Status => {
                        let status = ["busy", "online"][(n % 2) as usize];
                        api.call(
                            reqwest::Method::PATCH,
                            &format!("/api/v1/members/me/status?status={status}"),
                            None,
                        )
                        .await
                    }
                    EventKind::Task => {
                        api.call(
                            reqwest::Method::PATCH,
                            &format!("/api/v1/tasks/{task}"),
                            Some(json!({"title": format!("event {n}")})),
                        )
                        .await
                    }
                };
                drop(permit);
                r.map(|_| ())
            }));
            issued += 1;
        }
    }
    let mut failed = 0;
    for r in requests {
        if !matches!(r.await, Ok(Ok(()))) {
            failed += 1;
        }
    }
    let produced_in = started.elapsed();
    // Every request's event is published before its response, so the
    // newest seq now bounds them all.
    let newest = newest_seq(&api).await?;
    // One more event ends the clients.
    stop.store(newest + 1, Ordering::Release);
    update(&api, &task, 0).await?;
    let produced = total - failed;
    let mut delivered = 0u64;
    let mut lost = 0u64;
    let mut gaps = 0u64;
    let mut closed = 0u64;
    let mut last_arrival = started;
    for h in handles {
        let seen = h.await?;
        let got = seen.arrivals.iter().filter(|(seq, _)| (first..=newest).contains(seq)).count() as u64;
        delivered += got;
        lost += produced.saturating_sub(got);
        gaps += seen.gaps;
        closed += u64::from(seen.close.is_some());
        if let Some((_, at)) = seen.arrivals.last() {
            last_arrival = last_arrival.max(*at);
        }
    }
    let delivery_time = last_arrival.duration_since(started);
    println!(
        "sustained: {produced} events produced in {:.2} s ({:.0}/s, {failed} failed requests); \
         {delivered} frames to {clients} clients in {:.2} s ({:.0} frames/s, {:.0} events/s per client); \
         lost {lost}, gaps {gaps}, closed early {closed}",
        produced_in.as_secs_f64(),
        produced as f64 / produced_in.as_secs_f64(),
        delivery_time.as_secs_f64(),
        delivered as f64 / delivery_time.as_secs_f64(),
        delivered as f64 / clients as f64 / delivery_time.as_secs_f64(),
    );
    if lost > 0 || gaps > 0 || closed > 0 {
        return Err("events were lost".into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    let api = Api::login(&args.url, &args.login, &args.password).await?;
    match args.scenario {
        Scenario::Fanout { clients, rounds } => fanout(api, clients, rounds).await,
        Scenario::Sustained { clients, rate, seconds, event, in_flight } => {
            sustained(api, clients, rate, seconds, event, in_flight).await
        }
    }
}
