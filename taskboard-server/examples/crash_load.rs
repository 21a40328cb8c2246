//! Load client of the crash benchmark (`bench/crash.sh` runs it against a
//! release server that it kills with SIGKILL).
//!
//! `write`: concurrent writers create tasks in the project `crash` (made
//! on the first run) until the server goes away or `--max-seconds` pass.
//! Every creation the server acknowledged with 201 is appended to the
//! acknowledgement file as `number id` the moment its answer arrives.
//! With several `--url` (processes on one database) writer `w` writes to
//! the `w mod n`th; with `--failover` a writer whose process fails a
//! request goes on with the next process until the time is up.
//!
//! `check`: after a restart, reads every task of the project and compares
//! with the acknowledgement file: acknowledged tasks missing (lost), task
//! numbers missing below the highest one (gaps), numbers present twice,
//! and acknowledged tasks whose number changed. With `--from LINE`, only
//! the acknowledgements from that line on are checked, each by its own
//! `GET /tasks/{id}` (cheap enough for every round; gaps need the whole
//! list). Prints one line of `name=value` figures.
//!
//! `follow`: follows the event stream by long-poll (`GET /events?since=`)
//! on one process, and when a request to it fails resumes with the same
//! `since` on the next process. Checks that every seq it receives is the
//! one after the last (none skipped or repeated) and that it is never told
//! to resync. Starts after the seq in `--since-file` (else from now),
//! writes the last seq it received back there, and ends once
//! `--stop-file` exists and it has caught up with the newest seq.
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
    /// Base URL of the server, e.g. http://127.0.0.1:8080; once per
    /// process when several serve one database.
    #[arg(long, required = true)]
    url: Vec<String>,
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
        /// A writer whose request fails goes on with the next `--url`
        /// instead of ending.
        #[arg(long)]
        failover: bool,
    },
    /// Compare the project's tasks with the acknowledgement file.
    Check {
        /// Check only the acknowledgements from this line on (1 = first),
        /// each by id, without the gap count.
        #[arg(long)]
        from: Option<usize>,
    },
    /// Follow the events by long-poll, resuming on the next process when
    /// one fails.
    Follow {
        /// The `--url` (counting from 0) to follow first.
        #[arg(long, default_value_t = 0)]
        start: usize,
        /// The seq to start after, and where the last one received is left.
        #[arg(long)]
        since_file: PathBuf,
        /// Ends once this file exists and no event is left to read.
        #[arg(long)]
        stop_file: PathBuf,
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
    /// The first process's URL: where the project is looked up and checked.
    base: String,
    /// Every process's URL.
    bases: Vec<String>,
    token: String,
}

impl Api {
    async fn login(bases: &[String], login: &str, password: &str) -> Result<Api, Error> {
        taskboard_core::tls::install_provider();
        let http = reqwest::Client::builder().pool_max_idle_per_host(64).build()?;
        let bases: Vec<String> = bases.iter().map(|b| b.trim_end_matches('/').to_string()).collect();
        let base = bases[0].clone();
        let r: Value = http
            .post(format!("{base}/api/v1/auth/login"))
            .json(&json!({"login": login, "password": password}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let token = r["token"].as_str().ok_or("login answered no token")?.to_string();
        Ok(Api { http, base, bases, token })
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

async fn write(
    api: Api,
    acks: PathBuf,
    writers: usize,
    max_seconds: u64,
    failover: bool,
) -> Result<(), Error> {
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
            let mut process = w % api.bases.len();
            let mut n = 0u64;
            // What failed, by reason: a request whose answer did not come
            // may or may not have been committed.
            let mut failed: BTreeMap<String, usize> = BTreeMap::new();
            // Without failover a writer ends at its first failure: once the
            // server is killed, every request fails.
            let ended: String = loop {
                if Instant::now() >= deadline {
                    break "time is up".into();
                }
                n += 1;
                let url = format!("{}/api/v1/tasks?project_id={project}", api.bases[process]);
                let outcome = async {
                    let response = api
                        .http
                        .post(&url)
                        .bearer_auth(&api.token)
                        .json(&json!({"title": format!("writer {w}, task {n}")}))
                        .send()
                        .await
                        .map_err(|e| e.to_string())?;
                    if response.status() != reqwest::StatusCode::CREATED {
                        return Err(format!("answered {}", response.status()));
                    }
                    response.json::<Created>().await.map_err(|e| e.to_string())
                }
                .await;
                let created = match outcome {
                    Ok(c) => c,
                    Err(e) if failover => {
                        *failed.entry(e).or_default() += 1;
                        process = (process + 1) % api.bases.len();
                        continue;
                    }
                    Err(e) => break e,
                };
                if let Err(e) = acks.record(&created) {
                    break format!("recording an acknowledgement: {e}");
                }
                acknowledged.fetch_add(1, Ordering::Relaxed);
            };
            (ended, failed)
        }));
    }
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    for h in handles {
        let (ended, failed) = h.await?;
        *reasons.entry(ended).or_default() += 1;
        for (reason, n) in failed {
            *failures.entry(reason).or_default() += n;
        }
    }
    let join =
        |m: BTreeMap<String, usize>| m.into_iter().map(|(r, n)| format!("{n}x {r}")).collect::<Vec<_>>();
    let failed: usize = failures.values().sum();
    let mut line = format!(
        "acknowledged={} failed={failed} (writers ended: {})",
        acknowledged.load(Ordering::Relaxed),
        join(reasons).join("; ")
    );
    if failed > 0 {
        line.push_str(&format!(
            " (requests failed, then sent to the next process: {})",
            join(failures).join("; ")
        ));
    }
    println!("{line}");
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

/// What a follower saw.
#[derive(Default)]
struct Followed {
    received: u64,
    /// Seqs missing between two received (or between the last received
    /// and a page's `next`).
    skipped: u64,
    /// Seqs received at or below one received before.
    repeated: u64,
    resyncs: u64,
    /// Requests that failed, after which it went on with the next process.
    resumes: u64,
}

/// One long-poll: the events after `since`, waiting up to a second.
async fn poll(api: &Api, base: &str, since: Option<u64>) -> Result<Value, Error> {
    let since = since.map_or(String::new(), |s| format!("&since={s}"));
    let request = api
        .http
        .get(format!("{base}/api/v1/events?limit=1000&wait=1{since}"))
        .bearer_auth(&api.token)
        .timeout(Duration::from_secs(10));
    Ok(request.send().await?.error_for_status()?.json().await?)
}

async fn follow(api: Api, start: usize, since_file: PathBuf, stop_file: PathBuf) -> Result<(), Error> {
    let mut process = start % api.bases.len();
    let mut since: Option<u64> = match std::fs::read_to_string(&since_file) {
        Ok(text) => Some(text.trim().parse()?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    let mut seen = Followed::default();
    let mut failures_in_a_row = 0;
    loop {
        let stopping = stop_file.exists();
        let page = match poll(&api, &api.bases[process], since).await {
            Ok(page) => page,
            Err(_) => {
                seen.resumes += 1;
                failures_in_a_row += 1;
                if failures_in_a_row > 100 {
                    return Err("no process answered 100 long-polls in a row".into());
                }
                process = (process + 1) % api.bases.len();
                if failures_in_a_row % api.bases.len() == 0 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                continue;
            }
        };
        failures_in_a_row = 0;
        let next = page["next"].as_u64().ok_or("an event page without next")?;
        if page["resync_required"].as_bool() == Some(true) {
            seen.resyncs += 1;
            since = Some(next);
            continue;
        }
        let events = page["events"].as_array().ok_or("an event page without events")?;
        for event in events {
            let seq = event["seq"].as_u64().ok_or("an event without seq")?;
            seen.received += 1;
            match since {
                Some(last) if seq <= last => seen.repeated += 1,
                Some(last) => {
                    seen.skipped += seq - last - 1;
                    since = Some(seq);
                }
                None => since = Some(seq),
            }
        }
        match since {
            Some(last) if next > last => {
                seen.skipped += next - last;
                since = Some(next);
            }
            None => since = Some(next),
            Some(_) => {}
        }
        // The stop file was there before this poll, which waited a second
        // and found nothing new: the writers are done and it is caught up.
        if stopping && events.is_empty() {
            break;
        }
    }
    let last = since.unwrap_or(0);
    std::fs::write(&since_file, format!("{last}\n"))?;
    println!(
        "received={} skipped={} repeated={} resyncs={} resumes={} last={last}",
        seen.received, seen.skipped, seen.repeated, seen.resyncs, seen.resumes
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    let api = Api::login(&args.url, &args.login, &args.password).await?;
    match args.step {
        Step::Write { writers, max_seconds, failover } => {
            write(api, args.acks, writers, max_seconds, failover).await
        }
        Step::Check { from: None } => check(api, args.acks).await,
        Step::Check { from: Some(from) } => check_by_id(api, args.acks, from).await,
        Step::Follow { start, since_file, stop_file } => follow(api, start, since_file, stop_file).await,
    }
}
