//! Times the reads and writes of `bench/scale.sh` against a running
//! server: each read repeated sequentially, creation by 64 concurrent
//! connections. Prints one line per scenario, `name p50_ms p99_ms
//! rss_mb` (the server's resident memory after the scenario), for the
//! script to tabulate.
//!
//! `scale_probe BASE TOKEN PROJECT_ID CHAT_ID TASKS SERVER_PID`

use std::time::{Duration, Instant};

const REPEAT: usize = 60;
const CREATORS: usize = 64;
const CREATIONS: usize = 3_000;

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i].as_secs_f64() * 1000.0
}

fn rss_mb(pid: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

struct Probe {
    http: reqwest::Client,
    base: String,
    token: String,
    pid: String,
}

impl Probe {
    async fn get(&self, path: &str) -> Result<reqwest::Response, Box<dyn std::error::Error>> {
        let res = self.http.get(format!("{}{path}", self.base)).bearer_auth(&self.token).send().await?;
        if !res.status().is_success() {
            return Err(format!("GET {path}: {}", res.status()).into());
        }
        Ok(res)
    }

    /// Times `REPEAT` sequential calls of `path(i)`, reading each body.
    async fn reads(
        &self,
        name: &str,
        path: impl Fn(usize) -> String,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let mut samples = Vec::with_capacity(REPEAT);
        for i in 0..REPEAT {
            let started = Instant::now();
            self.get(&path(i)).await?.bytes().await?;
            samples.push(started.elapsed());
        }
        self.line(name, &mut samples);
        Ok(())
    }

    fn line(&self, name: &str, samples: &mut [Duration]) {
        let (p50, p99) = (percentile(samples, 0.5), percentile(samples, 0.99));
        println!("{name} {p50:.2} {p99:.2} {:.0}", rss_mb(&self.pid));
    }

    /// The cursor of the page after the task at `offset`.
    async fn cursor_at(&self, project: &str, offset: usize) -> Result<String, Box<dyn std::error::Error>> {
        let res = self.get(&format!("/api/v1/tasks?project_id={project}&limit=1&offset={offset}")).await?;
        let link = res.headers().get("link").ok_or("no Link header")?.to_str()?.to_string();
        let cursor = link.split("cursor=").nth(1).ok_or("no cursor")?.split('>').next().ok_or("no cursor")?;
        Ok(cursor.to_string())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, token, project, chat, tasks, pid] = args.as_slice() else {
        return Err("usage: scale_probe BASE TOKEN PROJECT_ID CHAT_ID TASKS SERVER_PID".into());
    };
    let tasks: usize = tasks.parse()?;
    let http = reqwest::Client::builder().pool_max_idle_per_host(CREATORS).build()?;
    let p = Probe { http, base: base.clone(), token: token.clone(), pid: pid.clone() };
    println!("start 0 0 {:.0}", rss_mb(pid));

    let first: Vec<serde_json::Value> =
        p.get(&format!("/api/v1/tasks?project_id={project}&limit=50")).await?.json().await?;
    let ids: Vec<String> = first.iter().filter_map(|t| t["id"].as_str().map(String::from)).collect();
    p.reads("get_task", |i| format!("/api/v1/tasks/{}", ids[i % ids.len()])).await?;
    p.reads("first_page", |_| format!("/api/v1/tasks?project_id={project}&limit=50")).await?;
    p.reads("first_page_status", |_| format!("/api/v1/tasks?project_id={project}&status=review&limit=50"))
        .await?;
    p.reads("first_page_label", |_| format!("/api/v1/tasks?project_id={project}&label=hot&limit=50")).await?;
    // Depth 500,000, or half the project on a smaller board.
    let depth = 500_000.min(tasks / 2);
    let cursor = p.cursor_at(project, depth).await?;
    p.reads("depth_cursor", |_| format!("/api/v1/tasks?project_id={project}&limit=50&cursor={cursor}"))
        .await?;
    p.reads("depth_offset", |_| format!("/api/v1/tasks?project_id={project}&limit=50&offset={depth}"))
        .await?;
    p.reads("key", |i| format!("/api/v1/tasks?q=BIG-{}", tasks / 2 + i)).await?;
    p.reads("title_search", |i| format!("/api/v1/tasks?q=number%20{}", tasks / 2 + 777 + i)).await?;
    p.reads("chat_last_50", |_| format!("/api/v1/messages?chat_id={chat}&limit=50")).await?;

    // Durable creation, 64 connections at once.
    let started = Instant::now();
    let mut handles = Vec::new();
    for w in 0..CREATORS {
        let (http, base, token, project) = (p.http.clone(), base.clone(), token.clone(), project.clone());
        handles.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            for i in (w..CREATIONS).step_by(CREATORS) {
                let t = Instant::now();
                let res = http
                    .post(format!("{base}/api/v1/tasks?project_id={project}"))
                    .bearer_auth(&token)
                    .json(&serde_json::json!({"title": format!("Created under load {i}")}))
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                if res.status().as_u16() != 201 {
                    return Err(format!("create: {}", res.status()));
                }
                res.bytes().await.map_err(|e| e.to_string())?;
                samples.push(t.elapsed());
            }
            Ok::<_, String>(samples)
        }));
    }
    let mut samples = Vec::new();
    for h in handles {
        samples.extend(h.await?.map_err(|e| -> Box<dyn std::error::Error> { e.into() })?);
    }
    let rate = CREATIONS as f64 / started.elapsed().as_secs_f64();
    p.line("create_64", &mut samples);
    println!("create_rate {rate:.0} 0 {:.0}", rss_mb(pid));
    Ok(())
}
