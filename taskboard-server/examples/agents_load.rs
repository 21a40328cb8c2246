//! Load client of the agent work protocol benchmark (`bench/agents.sh`
//! runs it against a release server).
//!
//! - baseline: `GET /health` from 64 connections, the ceiling of the
//!   machine and the HTTP stack in this run;
//! - claims: 64 agents claim over 1,000 ready tasks until each gets 204;
//!   every task must be claimed once;
//! - replays: 64 connections repeat one idempotent POST (every answer a
//!   replay);
//! - wake-ups: a long-poll waiting on `/events`, then a write; the time
//!   from sending the write to the waiter's answer.
#![forbid(unsafe_code)]

use std::collections::HashSet;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{Value, json};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Parser)]
struct Args {
    #[arg(long)]
    url: String,
    #[arg(long, env = "TASKBOARD_OWNER_PASSWORD", hide_env_values = true)]
    password: String,
    #[arg(long, default_value_t = 64)]
    claimers: usize,
    #[arg(long, default_value_t = 1000)]
    tasks: usize,
    /// Seconds of the baseline and replay phases.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    #[arg(long, default_value_t = 200)]
    wakeups: usize,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn json_of(res: reqwest::Response, want: u16) -> Result<Value, Error> {
    let status = res.status().as_u16();
    let body = res.text().await?;
    if status != want {
        return Err(format!("status {status}: {body}").into());
    }
    Ok(serde_json::from_str(&body)?)
}

/// `connections` loops of `request` for `seconds`: requests per second.
async fn hammer<F, Fut>(connections: usize, seconds: u64, request: F) -> Result<f64, Error>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<(), Error>> + Send,
{
    let end = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let handles: Vec<_> = (0..connections)
        .map(|_| {
            let request = request.clone();
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < end {
                    request().await?;
                    n += 1;
                }
                Ok::<u64, Error>(n)
            })
        })
        .collect();
    let mut total = 0;
    for h in handles {
        total += h.await??;
    }
    Ok(total as f64 / start.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    taskboard_core::tls::install_provider();
    let http = reqwest::Client::builder().no_proxy().pool_max_idle_per_host(256).build()?;
    let base = args.url.trim_end_matches('/').to_string();
    let login = http
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"login": "owner", "password": args.password}))
        .send()
        .await?;
    let owner = json_of(login, 200).await?["token"].as_str().unwrap().to_string();
    let project = http
        .post(format!("{base}/api/v1/projects"))
        .bearer_auth(&owner)
        .json(&json!({"name": "Bench", "slug": "bench"}))
        .send()
        .await?;
    let project = json_of(project, 201).await?["id"].as_str().unwrap().to_string();

    // Agents, members of the project.
    let mut tokens = Vec::new();
    for i in 0..args.claimers {
        let m = http
            .post(format!("{base}/api/v1/members"))
            .bearer_auth(&owner)
            .json(&json!({"name": format!("agent {i}"), "slug": format!("agent-{i}"), "type": "agent"}))
            .send()
            .await?;
        let m = json_of(m, 201).await?;
        let add = http
            .post(format!("{base}/api/v1/projects/{project}/members"))
            .bearer_auth(&owner)
            .json(&json!({"member_id": m["id"]}))
            .send()
            .await?;
        json_of(add, 200).await?;
        tokens.push(m["token"].as_str().unwrap().to_string());
    }
    // Ready tasks, created by 16 writers.
    let per = args.tasks.div_ceil(16);
    let mut writers = Vec::new();
    for w in 0..16 {
        let (http, base, owner, project) = (http.clone(), base.clone(), owner.clone(), project.clone());
        let n = per.min(args.tasks.saturating_sub(w * per));
        writers.push(tokio::spawn(async move {
            for i in 0..n {
                let res = http
                    .post(format!("{base}/api/v1/tasks?project_id={project}"))
                    .bearer_auth(&owner)
                    .json(&json!({"title": format!("task {w}-{i}"), "status": "todo"}))
                    .send()
                    .await?;
                json_of(res, 201).await?;
            }
            Ok::<(), Error>(())
        }));
    }
    for w in writers {
        w.await??;
    }

    let health = {
        let (http, base) = (http.clone(), base.clone());
        hammer(args.claimers, args.seconds, move || {
            let (http, base) = (http.clone(), base.clone());
            async move {
                http.get(format!("{base}/health")).send().await?.bytes().await?;
                Ok(())
            }
        })
        .await?
    };
    println!("baseline GET /health: {health:.0} req/s ({} connections)", args.claimers);

    // Claims.
    let start = Instant::now();
    let handles: Vec<_> = tokens
        .iter()
        .cloned()
        .map(|token| {
            let (http, base) = (http.clone(), base.clone());
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut latencies = Vec::new();
                loop {
                    let t0 = Instant::now();
                    let res =
                        http.post(format!("{base}/api/v1/tasks/claim")).bearer_auth(&token).send().await?;
                    let status = res.status().as_u16();
                    let body = res.bytes().await?;
                    latencies.push(t0.elapsed());
                    match status {
                        200 => got.push(
                            serde_json::from_slice::<Value>(&body)?["id"].as_str().unwrap().to_string(),
                        ),
                        204 => return Ok::<_, Error>((got, latencies)),
                        s => return Err(format!("claim answered {s}").into()),
                    }
                }
            })
        })
        .collect();
    let mut claimed = Vec::new();
    let mut latencies = Vec::new();
    for h in handles {
        let (got, l) = h.await??;
        claimed.extend(got);
        latencies.extend(l);
    }
    let elapsed = start.elapsed();
    let distinct: HashSet<_> = claimed.iter().collect();
    latencies.sort();
    println!(
        "claims: {} tasks claimed by {} agents ({} distinct, {} answers in all) in {:.2} s: {:.0} claims/s, p50 {:.1} ms, p99 {:.1} ms",
        claimed.len(),
        args.claimers,
        distinct.len(),
        latencies.len(),
        elapsed.as_secs_f64(),
        claimed.len() as f64 / elapsed.as_secs_f64(),
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
    );
    if claimed.len() != args.tasks || distinct.len() != args.tasks {
        return Err("claims were lost or duplicated".into());
    }

    // Replayed idempotent POSTs.
    let url = format!("{base}/api/v1/tasks?project_id={project}");
    let first = http
        .post(&url)
        .bearer_auth(&owner)
        .header("idempotency-key", "bench-replay")
        .json(&json!({"title": "replayed"}))
        .send()
        .await?;
    json_of(first, 201).await?;
    let replays = {
        let (http, owner) = (http.clone(), owner.clone());
        hammer(args.claimers, args.seconds, move || {
            let (http, owner, url) = (http.clone(), owner.clone(), url.clone());
            async move {
                let res = http
                    .post(&url)
                    .bearer_auth(&owner)
                    .header("idempotency-key", "bench-replay")
                    .json(&json!({"title": "replayed"}))
                    .send()
                    .await?;
                if res.headers().get("idempotent-replayed").is_none() {
                    return Err("not a replay".into());
                }
                res.bytes().await?;
                Ok(())
            }
        })
        .await?
    };
    println!("replayed idempotent POST: {replays:.0} req/s ({:.2} of baseline)", replays / health);

    // Long-poll wake-ups.
    let task = claimed[0].clone();
    let mut wake = Vec::new();
    for i in 0..args.wakeups {
        let newest = http.get(format!("{base}/api/v1/events")).bearer_auth(&owner).send().await?;
        let since = json_of(newest, 200).await?["next"].as_u64().unwrap();
        let waiter = {
            let (http, base, owner) = (http.clone(), base.clone(), owner.clone());
            tokio::spawn(async move {
                let res = http
                    .get(format!("{base}/api/v1/events?since={since}&wait=30"))
                    .bearer_auth(&owner)
                    .send()
                    .await?;
                let page = json_of(res, 200).await?;
                Ok::<_, Error>((Instant::now(), page))
            })
        };
        // Give the waiter time to be waiting (a benchmark may wait; what
        // is measured starts at the write).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let t0 = Instant::now();
        let res = http
            .patch(format!("{base}/api/v1/tasks/{task}"))
            .bearer_auth(&owner)
            .json(&json!({"title": format!("renamed {i}")}))
            .send()
            .await?;
        json_of(res, 200).await?;
        let (t1, page) = waiter.await??;
        if page["events"].as_array().is_none_or(|e| e.is_empty()) {
            return Err("the waiter got no event".into());
        }
        wake.push(t1.saturating_duration_since(t0));
    }
    wake.sort();
    println!(
        "long-poll wake-up (write sent -> waiter answered), {} rounds: p50 {:.2} ms, p99 {:.2} ms",
        wake.len(),
        ms(percentile(&wake, 0.5)),
        ms(percentile(&wake, 0.99)),
    );
    Ok(())
}
