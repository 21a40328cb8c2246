//! Load client of the crash benchmark (`bench/crash.sh` runs it against a
//! release server that it kills with SIGKILL).
//!
//! `write`: concurrent writers create tasks in the project `crash` (made
//! on the first run) until the server goes away or `--max-seconds` pass.
//! Every creation the server acknowledged with 201 is appended to the
//! acknowledgement file as `number id` the moment its answer arrives.
//!
//! `check`: after a restart, reads every task of the project and compares
//! with the acknowledgement file: acknowledged tasks missing (lost), task
//! numbers missing below the highest one (gaps), numbers present twice,
//! and acknowledged tasks whose number changed. With `--from LINE`, only
//! the acknowledgements from that line on are checked, each by its own
//! `GET /tasks/{id}` (cheap enough for every round; gaps need the whole
//! list). Prints one line of `name=value` figures.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

#[derive(Debug, Parser)]
struct Args {
    /// Base URL of the server, e.g. http://127.0.0.1:8080.
    #[arg(long)]
    url: String,
    /// Login of the owner.
    #[arg(long, default_value = "owner")]
    login: String,
    /// Password of the owner.
    #[arg(long, env = "TASKBOARD_OWNER_PASSWORD", hide_env_values = true)]
    password: String,
    /// The acknowledgement file: one `number id` line per acknowledged creation.
    #[arg(long)]
    acks: PathBuf,
    #[command(subcommand)]
    step: Step,
}

#[derive(Debug, Subcommand)]
enum Step {
    /// Create tasks with concurrent writers until the server is gone.
    Write {
        /// Concurrent writers, each with one request in flight.
        #[arg(long, default_value_t = 32)]
        writers: usize,
        /// Stop after this long even if the server is still up.
        #[arg(long, default_value_t = 30)]
        max_seconds: u64,
    },
    /// Compare the project's tasks with the acknowledgement file.
    Check {
        /// Check only the acknowledgements from this line on (1 = first),
        /// each by id, without the gap count.
        #[arg(long)]
        from: Option<usize>,
    },
}

type Error = Box<dyn std::error::Error + Send + Sync>;

const PROJECT: &str = "crash";
/// The largest page `GET /tasks` serves.
const PAGE: usize = 1000;

#[derive(Deserialize)]
struct Created {
    id: Uuid,
    number: u64,
}

struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    async fn login(base: &str, login: &str, password: &str) -> Result<Api, Error> {
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder().pool_max_idle_per_host(64).build()?;
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

    async fn get(&self, path: &str) -> Result<Value, Error> {
        let req = self.http.get(format!("{}{path}", self.base)).bearer_auth(&self.token);
        Ok(req.send().await?.error_for_status()?.json().await?)
    }

    /// The id of the benchmark's project, created on the first run.
    async fn project(&self, create: bool) -> Result<Uuid, Error> {
        let projects = self.get("/api/v1/projects?include_archived=true").await?;
        let found = projects.as_array().into_iter().flatten().find(|p| p["slug"] == PROJECT);
        if let Some(p) = found {
            return Ok(p["id"].as_str().ok_or("a project without id")?.parse()?);
        }
        if !create {
            return Err(format!("no project {PROJECT:?} on this board").into());
        }
        let p: Value = self
            .http
            .post(format!("{}/api/v1/projects", self.base))
            .bearer_auth(&self.token)
            .json(&json!({"name": "Crash test", "slug": PROJECT}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok(p["id"].as_str().ok_or("a project without id")?.parse()?)
    }
}

/// The acknowledgement file, appended to by every writer.
struct Acks {
    file: std::sync::Mutex<std::fs::File>,
}

impl Acks {
    fn open(path: &PathBuf) -> Result<Acks, Error> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Acks { file: std::sync::Mutex::new(file) })
    }

    /// One unbuffered write per acknowledgement: once `record` returns the
    /// line is in the file, whatever happens to the server afterwards.
    fn record(&self, created: &Created) -> std::io::Result<()> {
        let line = format!("{} {}\n", created.number, created.id);
        self.file.lock().unwrap().write_all(line.as_bytes())
    }
}

async fn write(api: Api, acks: PathBuf, writers: usize, max_seconds: u64) -> Result<(), Error> {
    let project = api.project(true).await?;
    let acks = Arc::new(Acks::open(&acks)?);
    let api = Arc::new(api);
    let acknowledged = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(max_seconds);
    // The script times its kill from this line.
    println!("writing with {writers} writers");
    std::io::stdout().flush()?;
    let mut handles = Vec::with_capacity(writers);
    for w in 0..writers {
        let (api, acks, acknowledged) = (api.clone(), acks.clone(), acknowledged.clone());
        handles.push(tokio::spawn(async move {
            let url = format!("{}/api/v1/tasks?project_id={project}", api.base);
            let mut n = 0u64;
            // Ends at the first failure: once the server is killed, every
            // request fails.
            let ended: String = loop {
                if Instant::now() >= deadline {
                    break "time is up".into();
                }
                n += 1;
                let sent = api
                    .http
                    .post(&url)
                    .bearer_auth(&api.token)
                    .json(&json!({"title": format!("writer {w}, task {n}")}))
                    .send()
                    .await;
                let response = match sent {
                    Ok(r) => r,
                    Err(e) => break e.to_string(),
                };
                if response.status() != reqwest::StatusCode::CREATED {
                    break format!("answered {}", response.status());
                }
                let created: Created = match response.json().await {
                    Ok(c) => c,
                    Err(e) => break e.to_string(),
                };
                if let Err(e) = acks.record(&created) {
                    break format!("recording an acknowledgement: {e}");
                }
                acknowledged.fetch_add(1, Ordering::Relaxed);
            };
            ended
        }));
    }
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for h in handles {
        *reasons.entry(h.await?).or_default() += 1;
    }
    let reasons: Vec<String> = reasons.into_iter().map(|(r, n)| format!("{n}x {r}")).collect();
    println!("acknowledged={} (writers ended: {})", acknowledged.load(Ordering::Relaxed), reasons.join("; "));
    Ok(())
}

/// The acknowledged creations: `(number, id)` per line.
fn read_acks(path: &PathBuf) -> Result<Vec<(u64, Uuid)>, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e.into()),
    };
    let mut acks = Vec::new();
    for line in text.lines() {
        let (number, id) = line.split_once(' ').ok_or_else(|| format!("bad line {line:?}"))?;
        acks.push((number.parse()?, id.parse()?));
    }
    Ok(acks)
}

/// Each acknowledgement from line `from` on, by its own GET, 32 at a time.
async fn check_by_id(api: Api, acks: PathBuf, from: usize) -> Result<(), Error> {
    let acks: Vec<(u64, Uuid)> = read_acks(&acks)?.into_iter().skip(from.saturating_sub(1)).collect();
    let api = Arc::new(api);
    let next = Arc::new(AtomicU64::new(0));
    let acks = Arc::new(acks);
    let mut workers = Vec::new();
    for _ in 0..32 {
        let (api, next, acks) = (api.clone(), next.clone(), acks.clone());
        workers.push(tokio::spawn(async move {
            let (mut lost, mut renumbered) = (0u64, 0u64);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some((number, id)) = acks.get(i) else { break };
                let url = format!("{}/api/v1/tasks/{id}", api.base);
                let response = api.http.get(url).bearer_auth(&api.token).send().await?;
                match response.status() {
                    reqwest::StatusCode::NOT_FOUND => lost += 1,
                    reqwest::StatusCode::OK => {
                        let task: Created = response.json().await?;
                        if task.number != *number {
                            renumbered += 1;
                        }
                    }
                    other => return Err(Error::from(format!("GET /tasks/{id} answered {other}"))),
                }
            }
            Ok((lost, renumbered))
        }));
    }
    let (mut lost, mut renumbered) = (0, 0);
    for w in workers {
        let (l, r) = w.await??;
        lost += l;
        renumbered += r;
    }
    println!("acknowledged={} lost={lost} renumbered={renumbered}", acks.len());
    Ok(())
}

async fn check(api: Api, acks: PathBuf) -> Result<(), Error> {
    let project = api.project(false).await?;
    let mut present: HashMap<Uuid, u64> = HashMap::new();
    let mut numbers: BTreeMap<u64, usize> = BTreeMap::new();
    for page in 0.. {
        let offset = page * PAGE;
        let tasks =
            api.get(&format!("/api/v1/tasks?project_id={project}&limit={PAGE}&offset={offset}")).await?;
        let tasks = tasks.as_array().ok_or("the task list is not an array")?;
        for t in tasks {
            let id: Uuid = t["id"].as_str().ok_or("a task without id")?.parse()?;
            let number = t["number"].as_u64().ok_or("a task without number")?;
            present.insert(id, number);
            *numbers.entry(number).or_default() += 1;
        }
        if tasks.len() < PAGE {
            break;
        }
    }
    let (mut acknowledged, mut lost, mut renumbered) = (0u64, 0u64, 0u64);
    for (number, id) in read_acks(&acks)? {
        acknowledged += 1;
        match present.get(&id) {
            None => lost += 1,
            Some(n) if *n != number => renumbered += 1,
            Some(_) => {}
        }
    }
    let highest = numbers.keys().next_back().copied().unwrap_or(0);
    let gaps = (1..=highest).filter(|n| !numbers.contains_key(n)).count();
    let duplicates: usize = numbers.values().map(|n| n - 1).sum();
    println!(
        "acknowledged={acknowledged} present={} highest={highest} lost={lost} gaps={gaps} \
         duplicates={duplicates} renumbered={renumbered}",
        present.len()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    let api = Api::login(&args.url, &args.login, &args.password).await?;
    match args.step {
        Step::Write { writers, max_seconds } => write(api, args.acks, writers, max_seconds).await,
        Step::Check { from: None } => check(api, args.acks).await,
        Step::Check { from: Some(from) } => check_by_id(api, args.acks, from).await,
    }
}
