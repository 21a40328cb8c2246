//! Times the reads and writes of `bench/scale.sh` against running
//! servers, one per board size, interleaved: every round of a scenario
//! makes one call on each board in turn, and creation alternates rounds
//! of concurrent creations between the boards, so a machine whose speed
//! drifts during the run slows every board alike and the ratios between
//! them hold. Prints one line per scenario and board, `name board p50_ms
//! p99_ms rss_mb` (the server's resident memory after the scenario), for
//! the script to tabulate.
//!
//! `scale_probe BOARD...` where each BOARD is
//! `BASE,TOKEN,PROJECT_ID,CHAT_ID,TASKS,SERVER_PID`.

use std::time::{Duration, Instant};

type Failure = Box<dyn std::error::Error>;

/// Calls of each read scenario, per board.
const REPEAT: usize = 100;
/// Concurrent connections creating tasks.
const CREATORS: usize = 64;
/// Tasks created per creation round, and rounds per board.
const ROUND: usize = 1_000;
const ROUNDS: usize = 8;

fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
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

/// One running server and the board it serves.
struct Board {
    base: String,
    token: String,
    project: String,
    chat: String,
    tasks: usize,
    pid: String,
    /// Ids of the project's first page, for `get_task`.
    ids: Vec<String>,
    /// The cursor after the task at the probed depth.
    cursor: String,
}

impl Board {
    fn parse(arg: &str) -> Result<Board, Failure> {
        let parts: Vec<&str> = arg.split(',').collect();
        let [base, token, project, chat, tasks, pid] = parts.as_slice() else {
            return Err(
                format!("a board is BASE,TOKEN,PROJECT_ID,CHAT_ID,TASKS,SERVER_PID, got {arg}").into()
            );
        };
        Ok(Board {
            base: base.to_string(),
            token: token.to_string(),
            project: project.to_string(),
            chat: chat.to_string(),
            tasks: tasks.parse()?,
            pid: pid.to_string(),
            ids: Vec::new(),
            cursor: String::new(),
        })
    }

    /// Depth 500,000, or half the project on a smaller board.
    fn depth(&self) -> usize {
        500_000.min(self.tasks / 2)
    }

    fn path(&self, scenario: &str, i: usize) -> String {
        let (project, depth) = (&self.project, self.depth());
        match scenario {
            "get_task" => format!("/api/v1/tasks/{}", self.ids[i % self.ids.len()]),
            "first_page" => format!("/api/v1/tasks?project_id={project}&limit=50"),
            "first_page_status" => format!("/api/v1/tasks?project_id={project}&status=review&limit=50"),
            "first_page_label" => format!("/api/v1/tasks?project_id={project}&label=hot&limit=50"),
            "depth_cursor" => format!("/api/v1/tasks?project_id={project}&limit=50&cursor={}", self.cursor),
            "depth_offset" => format!("/api/v1/tasks?project_id={project}&limit=50&offset={depth}"),
            "key" => format!("/api/v1/tasks?q=BIG-{}", self.tasks / 2 + i),
            "title_search" => format!("/api/v1/tasks?q=number%20{}", self.tasks / 2 + 777 + i),
            "chat_last_50" => format!("/api/v1/messages?chat_id={}&limit=50", self.chat),
            _ => unreachable!("unknown scenario {scenario}"),
        }
    }
}

async fn get(http: &reqwest::Client, board: &Board, path: &str) -> Result<reqwest::Response, Failure> {
    let res = http.get(format!("{}{path}", board.base)).bearer_auth(&board.token).send().await?;
    if !res.status().is_success() {
        return Err(format!("GET {path}: {}", res.status()).into());
    }
    Ok(res)
}

/// Creates `ROUND` tasks on `board` through `CREATORS` connections at
/// once; returns the latency of each creation and the round's rate.
async fn create_round(
    http: &reqwest::Client,
    board: &Board,
    round: usize,
) -> Result<(Vec<f64>, f64), Failure> {
    let started = Instant::now();
    let mut handles = Vec::new();
    for w in 0..CREATORS {
        let (http, base, token, project) =
            (http.clone(), board.base.clone(), board.token.clone(), board.project.clone());
        handles.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            for i in (w..ROUND).step_by(CREATORS) {
                let t = Instant::now();
                let res = http
                    .post(format!("{base}/api/v1/tasks?project_id={project}"))
                    .bearer_auth(&token)
                    .json(&serde_json::json!({"title": format!("Created under load {round} {i}")}))
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                if res.status().as_u16() != 201 {
                    return Err(format!("create: {}", res.status()));
                }
                res.bytes().await.map_err(|e| e.to_string())?;
                samples.push(ms(t.elapsed()));
            }
            Ok::<_, String>(samples)
        }));
    }
    let mut samples = Vec::new();
    for h in handles {
        samples.extend(h.await?.map_err(Failure::from)?);
    }
    Ok((samples, ROUND as f64 / started.elapsed().as_secs_f64()))
}

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let mut boards = std::env::args().skip(1).map(|a| Board::parse(&a)).collect::<Result<Vec<_>, _>>()?;
    if boards.is_empty() {
        return Err("usage: scale_probe BASE,TOKEN,PROJECT_ID,CHAT_ID,TASKS,SERVER_PID ...".into());
    }
    taskboard_core::tls::install_provider();
    let http = reqwest::Client::builder().pool_max_idle_per_host(CREATORS).build()?;
    for b in &mut boards {
        println!("start {} 0 0 {:.0}", b.tasks, rss_mb(&b.pid));
        let first: Vec<serde_json::Value> =
            get(&http, b, &format!("/api/v1/tasks?project_id={}&limit=50", b.project)).await?.json().await?;
        b.ids = first.iter().filter_map(|t| t["id"].as_str().map(String::from)).collect();
        // The cursor of the page after the task at the depth.
        let path = format!("/api/v1/tasks?project_id={}&limit=1&offset={}", b.project, b.depth());
        let res = get(&http, b, &path).await?;
        let link = res.headers().get("link").ok_or("no Link header")?.to_str()?.to_string();
        let cursor = link.split("cursor=").nth(1).and_then(|c| c.split('>').next()).ok_or("no cursor")?;
        b.cursor = cursor.to_string();
    }

    let scenarios = [
        "get_task",
        "first_page",
        "first_page_status",
        "first_page_label",
        "depth_cursor",
        "depth_offset",
        "key",
        "title_search",
        "chat_last_50",
    ];
    for scenario in scenarios {
        let mut samples = vec![Vec::with_capacity(REPEAT); boards.len()];
        for i in 0..REPEAT {
            for (b, s) in boards.iter().zip(&mut samples) {
                let started = Instant::now();
                get(&http, b, &b.path(scenario, i)).await?.bytes().await?;
                s.push(ms(started.elapsed()));
            }
        }
        for (b, s) in boards.iter().zip(&mut samples) {
            let (p50, p99) = (percentile(s, 0.5), percentile(s, 0.99));
            println!("{scenario} {} {p50:.2} {p99:.2} {:.0}", b.tasks, rss_mb(&b.pid));
        }
    }

    let mut latencies = vec![Vec::new(); boards.len()];
    let mut rates = vec![Vec::new(); boards.len()];
    for round in 0..ROUNDS {
        for (i, b) in boards.iter().enumerate() {
            let (samples, rate) = create_round(&http, b, round).await?;
            latencies[i].extend(samples);
            rates[i].push(rate);
        }
    }
    for (i, b) in boards.iter().enumerate() {
        let (p50, p99) = (percentile(&mut latencies[i], 0.5), percentile(&mut latencies[i], 0.99));
        println!("create_64 {} {p50:.2} {p99:.2} {:.0}", b.tasks, rss_mb(&b.pid));
        // The median round's rate.
        println!("create_rate {} {:.0} 0 {:.0}", b.tasks, percentile(&mut rates[i], 0.5), rss_mb(&b.pid));
    }
    Ok(())
}
