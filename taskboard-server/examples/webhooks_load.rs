//! Load of the webhook benchmark (`bench/webhooks.sh`), in one process:
//! the server's board and webhook sender, the writers and the receivers
//! (small hyper servers on 127.0.0.1).
//!
//! - saturated write rate: 32 writers post chat messages (one event each)
//!   as fast as they can for `--seconds`, on a board without webhooks and
//!   on one with 10 (8 live receivers, one refusing connections, one that
//!   accepts and never answers). Every core is busy writing, so this
//!   ratio is the share of the machine that sending (and, here, also
//!   receiving) 8 deliveries per event takes from the writers;
//! - at the offered load of `--rate` events/s for `--seconds`: the rate
//!   the writes were done at (events over the time until the last write
//!   returned) without webhooks, with 10 live receivers, with 8, and with
//!   the same 8 beside the dead and the black hole (whose lag must be that
//!   of the 8 alone), and its ratio to the rate without
//!   webhooks (the cost of webhooks to a board under that load); and the
//!   lag of a delivery, when it was received less the event's `ts`, p50
//!   and p99 over the live receivers.
#![forbid(unsafe_code)]

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use jiff::Timestamp;
use taskboard_core::api::{NewMessage, NewProject, NewWebhook};
use taskboard_core::validate::{Name, Slug};
use taskboard_core::{Actor, Board};
use taskboard_server::{Config, Server, ServerHandle};
use tokio::net::TcpListener;
use uuid::Uuid;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Parser)]
struct Args {
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    #[arg(long, default_value_t = 5000)]
    rate: u64,
    #[arg(long, default_value_t = 32)]
    writers: usize,
}

#[derive(Default)]
struct Received {
    lags_ms: Mutex<Vec<f64>>,
    count: AtomicU64,
}

async fn receiver() -> Result<(String, Arc<Received>), Error> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    let got = Arc::new(Received::default());
    let shared = got.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let got = shared.clone();
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let got = got.clone();
                        async move {
                            let body =
                                req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                            let now = Timestamp::now();
                            if let Ok(frame) = serde_json::from_slice::<serde_json::Value>(&body)
                                && let Some(ts) =
                                    frame["ts"].as_str().and_then(|t| t.parse::<Timestamp>().ok())
                            {
                                let lag = now.duration_since(ts).as_secs_f64() * 1000.0;
                                got.lags_ms.lock().unwrap().push(lag);
                            }
                            got.count.fetch_add(1, Ordering::Relaxed);
                            Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::new())))
                        }
                    });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    Ok((url, got))
}

/// A port nobody listens on.
async fn dead() -> Result<String, Error> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    Ok(format!("http://{}/hook", listener.local_addr()?))
}

/// Accepts connections and never reads or answers.
async fn black_hole() -> Result<String, Error> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    Ok(url)
}

struct Setup {
    _dir: tempfile::TempDir,
    handle: ServerHandle,
    owner: Actor,
    chat: Uuid,
    live: Vec<Arc<Received>>,
}

/// A fresh server with `live` receiving webhooks and, when `bad`, a dead
/// one and a black hole.
async fn setup(live: usize, bad: bool) -> Result<Setup, Error> {
    let dir = tempfile::tempdir()?;
    let mut config = Config::new(dir.path().join("data"));
    config.listen = "127.0.0.1:0".parse()?;
    config.owner_password = Some("bench-password-1".into());
    config.webhooks.allow_private = true;
    let handle = Server::bind(config).await?.spawn();
    let board: &Board = handle.board();
    let owner_id = board.login("owner", "bench-password-1", None).await?.member_id;
    let owner = board.actor(owner_id).await?;
    let project = NewProject {
        name: Name::new("Bench")?,
        slug: Slug::new("bench")?,
        description: None,
        repo_urls: vec![],
        auto_assign: false,
    };
    let chat = board.create_project(&owner, project).await?.chat_id.ok_or("a chat")?;
    let mut urls = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..live {
        let (url, got) = receiver().await?;
        urls.push(url);
        receivers.push(got);
    }
    if bad {
        urls.push(dead().await?);
        urls.push(black_hole().await?);
    }
    for url in urls {
        let new =
            NewWebhook { url, events: Some(vec!["message.new".into()]), project_id: None, description: None };
        board.create_webhook(&owner, new).await?;
    }
    Ok(Setup { _dir: dir, handle, owner, chat, live: receivers })
}

fn message(chat: Uuid, i: u64) -> NewMessage {
    NewMessage {
        chat_id: Some(chat),
        task_id: None,
        parent_id: None,
        content: format!("message {i}"),
        thinking: None,
        mentions: vec![],
        voice_url: None,
        attachments: vec![],
    }
}

/// Events per second that `writers` writers reach.
async fn write_rate(s: &Setup, writers: usize, seconds: u64) -> Result<f64, Error> {
    let board = s.handle.board().clone();
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for w in 0..writers as u64 {
        let (board, owner, chat) = (board.clone(), s.owner.clone(), s.chat);
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < end {
                board.post_message(&owner, message(chat, w * 1_000_000 + n)).await?;
                n += 1;
            }
            Ok::<u64, taskboard_core::Error>(n)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await??;
    }
    Ok(total as f64 / start.elapsed().as_secs_f64())
}

/// Posts at `rate` events/s for `seconds`, waits (at most a minute) for
/// the live receivers to have everything, and returns the lags in ms,
/// the deliveries received and expected, and the rate the writes were
/// done at.
async fn lags(s: &Setup, rate: u64, seconds: u64) -> Result<(Vec<f64>, u64, u64, f64), Error> {
    let board = s.handle.board().clone();
    let total = rate * seconds;
    let permits = Arc::new(tokio::sync::Semaphore::new(256));
    let start = Instant::now();
    let mut sent = 0u64;
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    while sent < total {
        tick.tick().await;
        let due = ((start.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
        while sent < due {
            let permit = permits.clone().acquire_owned().await?;
            let (board, owner, chat, i) = (board.clone(), s.owner.clone(), s.chat, sent);
            tokio::spawn(async move {
                let _ = board.post_message(&owner, message(chat, i)).await;
                drop(permit);
            });
            sent += 1;
        }
    }
    let _ = permits.acquire_many(256).await?;
    let written = total as f64 / start.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.live.iter().any(|r| r.count.load(Ordering::Relaxed) < total) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let received: u64 = s.live.iter().map(|r| r.count.load(Ordering::Relaxed)).sum();
    let mut all: Vec<f64> = s.live.iter().flat_map(|r| r.lags_ms.lock().unwrap().clone()).collect();
    all.sort_by(f64::total_cmp);
    Ok((all, received, total * s.live.len() as u64, written))
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();

    let plain = setup(0, false).await?;
    let base = write_rate(&plain, args.writers, args.seconds).await?;
    plain.handle.shutdown().await;
    let hooked = setup(8, true).await?;
    let with = write_rate(&hooked, args.writers, args.seconds).await?;
    hooked.handle.shutdown().await;
    println!(
        "saturated write rate, {} writers: {base:.0} events/s without webhooks, {with:.0} with 10 webhooks: ratio {:.3}",
        args.writers,
        with / base
    );

    let mut unhooked = f64::NAN;
    for (live, bad, label) in [
        (0, false, "no webhooks"),
        (10, false, "10 live receivers"),
        (8, false, "8 live receivers"),
        (8, true, "8 live + 1 dead + 1 black hole"),
    ] {
        let s = setup(live, bad).await?;
        let (sorted, received, expected, written) = lags(&s, args.rate, args.seconds).await?;
        s.handle.shutdown().await;
        if live == 0 {
            unhooked = written;
            println!(
                "at {} events/s for {} s, {label}: written at {written:.0} events/s",
                args.rate, args.seconds
            );
            continue;
        }
        println!(
            "at {} events/s for {} s, {label}: written at {written:.0} events/s (ratio {:.3}); lag p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({received} of {expected} deliveries to the live receivers)",
            args.rate,
            args.seconds,
            written / unhooked,
            pct(&sorted, 0.5),
            pct(&sorted, 0.99),
            sorted.last().copied().unwrap_or(f64::NAN)
        );
    }
    Ok(())
}
