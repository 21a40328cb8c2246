//! Durable task creation and single-task reads over HTTP at 64
//! connections, on real server processes: one on the embedded store, one
//! on PostgreSQL, and three on one PostgreSQL database (requests spread
//! over the three). `bench/postgres.sh` runs it after building the release
//! server.
//!
//! Every server runs at once and the work is interleaved round by round
//! (a round of creations on each in turn, then the next round), so the
//! ratios hold on a machine whose speed drifts; each figure is the median
//! round. Reads are measured after every process has read every task
//! once, so they show the path a busy board takes (its caches); the
//! store's own read cost is in `pg_compare`'s first-read column.
//! PostgreSQL is a throwaway cluster with fsync on (initdb into a
//! temporary directory, Unix socket only).
//!
//! While the creations run, one Server-Sent Events stream is open on each
//! of the three processes on one database; the lag of an event is how
//! long after the first stream delivered it another one did (the process
//! that committed it delivers it first, at its commit): the wake-up of
//! the others, their read of the events table below the mark, the send.
//!
//! Beside the creations, the machine's cores in use during them (from
//! `/proc/stat`, everything that runs: the servers, PostgreSQL, this
//! client): a configuration that already keeps every core busy cannot be
//! made faster by more processes on the same machine.
#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use serde_json::{Value, json};
use taskboard_pg_scratch::Scratch;

type Error = Box<dyn std::error::Error + Send + Sync>;

const PASSWORD: &str = "bench-owner-password";

#[derive(Debug, Parser)]
struct Args {
    /// The server binary (default: `taskboard-server` beside this example's
    /// directory, as cargo lays out a target directory).
    #[arg(long)]
    server: Option<PathBuf>,
    /// Creations per server and round.
    #[arg(long, default_value_t = 1000)]
    per_round: usize,
    /// Reads per server and round.
    #[arg(long, default_value_t = 5000)]
    reads_per_round: usize,
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
}

struct Process {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    base: String,
}

impl Process {
    fn start(server: &Path, data_dir: &Path, database: Option<&str>) -> Result<Process, Error> {
        let mut cmd = Command::new(server);
        cmd.args(["--listen", "127.0.0.1:0", "--log-level", "warn"]).arg("--data-dir").arg(data_dir);
        if let Some(url) = database {
            cmd.args(["--database", url]);
        }
        let mut child = cmd
            .env("TASKBOARD_OWNER_PASSWORD", PASSWORD)
            .env_remove("TASKBOARD_JWT_SECRET")
            .env_remove("TASKBOARD_DATABASE")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        let base = loop {
            line.clear();
            if stdout.read_line(&mut line)? == 0 {
                return Err("the server ended before listening".into());
            }
            if let Some(url) = line.trim().strip_prefix("listening on ") {
                break url.to_string();
            }
        };
        Ok(Process { child, _stdout: stdout, base })
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One configuration under test: its processes, the owner's token, the
/// project tasks go to and the tasks created so far.
struct Setup {
    name: &'static str,
    procs: Vec<Process>,
    token: String,
    project: String,
    ids: Vec<String>,
    creations: Vec<f64>,
    /// The machine's cores in use during each round of creations.
    cores: Vec<f64>,
    reads: Vec<f64>,
}

impl Setup {
    async fn new(http: &reqwest::Client, name: &'static str, procs: Vec<Process>) -> Result<Setup, Error> {
        let base = &procs[0].base;
        let login: Value = http
            .post(format!("{base}/api/v1/auth/login"))
            .json(&json!({"login": "owner", "password": PASSWORD}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let token = login["token"].as_str().ok_or("login without a token")?.to_string();
        let project: Value = http
            .post(format!("{base}/api/v1/projects"))
            .bearer_auth(&token)
            .json(&json!({"name": "Bench", "slug": "bench"}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let project = project["id"].as_str().ok_or("project without an id")?.to_string();
        Ok(Setup {
            name,
            procs,
            token,
            project,
            ids: Vec::new(),
            creations: Vec::new(),
            cores: Vec::new(),
            reads: Vec::new(),
        })
    }

    fn bases(&self) -> Arc<Vec<String>> {
        Arc::new(self.procs.iter().map(|p| p.base.clone()).collect())
    }
}

/// Runs `n` requests from `concurrency` connections, request `i` to
/// process `i % processes`; returns the rate and what each answered.
async fn spread<F, Fut>(n: usize, concurrency: usize, request: F) -> Result<(f64, Vec<Value>), Error>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Value, Error>> + Send,
{
    let request = Arc::new(request);
    let started = Instant::now();
    let mut workers = Vec::new();
    for w in 0..concurrency {
        let request = request.clone();
        workers.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for i in (w..n).step_by(concurrency) {
                out.push(request(i).await?);
            }
            Ok::<_, Error>(out)
        }));
    }
    let mut answers = Vec::with_capacity(n);
    for w in workers {
        answers.extend(w.await??);
    }
    Ok((n as f64 / started.elapsed().as_secs_f64(), answers))
}

async fn create_round(
    http: &reqwest::Client,
    s: &mut Setup,
    n: usize,
    concurrency: usize,
    round: usize,
) -> Result<(), Error> {
    let (bases, token, project, http) = (s.bases(), s.token.clone(), s.project.clone(), http.clone());
    let before = cpu_times();
    let (rate, answers) = spread(n, concurrency, move |i| {
        let (http, token) = (http.clone(), token.clone());
        let url = format!("{}/api/v1/tasks?project_id={project}", bases[i % bases.len()]);
        async move {
            let res = http
                .post(url)
                .bearer_auth(&token)
                .json(&json!({"title": format!("task {round}.{i}")}))
                .send()
                .await?;
            if res.status().as_u16() != 201 {
                return Err(format!("create: {}", res.status()).into());
            }
            Ok(res.json::<Value>().await?)
        }
    })
    .await?;
    for a in answers {
        s.ids.push(a["id"].as_str().ok_or("task without an id")?.to_string());
    }
    s.creations.push(rate);
    if let (Some(before), Some(after)) = (before, cpu_times()) {
        s.cores.push(after.cores_busy_since(before));
    }
    Ok(())
}

/// The machine's processor time so far (`/proc/stat`, all cores): busy
/// and in all, in clock ticks.
#[derive(Clone, Copy)]
struct CpuTimes {
    busy: u64,
    total: u64,
}

impl CpuTimes {
    /// How many cores were busy on average since `before`: the server
    /// processes, PostgreSQL, this client and whatever else runs.
    fn cores_busy_since(self, before: CpuTimes) -> f64 {
        let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        let total = self.total.saturating_sub(before.total).max(1) as f64;
        self.busy.saturating_sub(before.busy) as f64 / total * cores
    }
}

fn cpu_times() -> Option<CpuTimes> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest time is in user).
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
    Some(CpuTimes { busy: total - idle, total })
}

/// Reads `n` tasks spread over the processes: task `i * stride` of the
/// list; returns the rate.
async fn read_round(
    http: &reqwest::Client,
    s: &Setup,
    n: usize,
    concurrency: usize,
    stride: usize,
) -> Result<f64, Error> {
    let (bases, token, http) = (s.bases(), s.token.clone(), http.clone());
    let ids = Arc::new(s.ids.clone());
    let (rate, _) = spread(n, concurrency, move |i| {
        let (http, token) = (http.clone(), token.clone());
        let url = format!("{}/api/v1/tasks/{}", bases[i % bases.len()], ids[(i * stride) % ids.len()]);
        async move {
            let res = http.get(url).bearer_auth(&token).send().await?;
            if !res.status().is_success() {
                return Err(format!("read: {}", res.status()).into());
            }
            res.bytes().await?;
            Ok(Value::Null)
        }
    })
    .await?;
    Ok(rate)
}

/// Follows the event stream of `base` over SSE until `stop`, noting when
/// each seq arrives.
async fn follow(
    http: reqwest::Client,
    base: String,
    token: String,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<Vec<(u64, Instant)>, Error> {
    use futures_util::StreamExt;
    let res = http
        .get(format!("{base}/api/v1/events"))
        .bearer_auth(&token)
        .header("accept", "text/event-stream")
        .send()
        .await?
        .error_for_status()?;
    let mut stream = res.bytes_stream();
    let (mut buf, mut seen) = (Vec::<u8>::new(), Vec::new());
    loop {
        tokio::select! {
            chunk = stream.next() => {
                let Some(chunk) = chunk else { return Ok(seen) };
                let at = Instant::now();
                buf.extend_from_slice(&chunk?);
                while let Some(end) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=end).collect();
                    let seq = line.strip_prefix(b"id: ").and_then(|id| std::str::from_utf8(id).ok()?.trim().parse().ok());
                    if let Some(seq) = seq {
                        seen.push((seq, at));
                    }
                }
            }
            _ = stop.wait_for(|stopped| *stopped) => return Ok(seen),
        }
    }
}

/// The lag of each event on the streams that did not deliver it first, in
/// milliseconds: median and p99.
fn lag(arrivals: &[Vec<(u64, Instant)>]) -> (f64, f64, usize) {
    let mut first: std::collections::HashMap<u64, Instant> = Default::default();
    for (seq, at) in arrivals.iter().flatten() {
        first.entry(*seq).and_modify(|f| *f = (*f).min(*at)).or_insert(*at);
    }
    let mut lags: Vec<f64> = arrivals
        .iter()
        .flatten()
        .map(|(seq, at)| at.duration_since(first[seq]).as_secs_f64() * 1000.0)
        .filter(|ms| *ms > 0.0)
        .collect();
    lags.sort_by(f64::total_cmp);
    let at = |q: f64| lags.get(((lags.len() as f64 * q) as usize).min(lags.len().saturating_sub(1))).copied();
    (at(0.5).unwrap_or(0.0), at(0.99).unwrap_or(0.0), first.len())
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    let server = match args.server {
        Some(s) => s,
        None => std::env::current_exe()?
            .parent()
            .and_then(Path::parent)
            .ok_or("no target directory")?
            .join("taskboard-server"),
    };
    let cluster = Scratch::start_with(true)?;
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir()).collect::<Result<_, _>>()?;
    let one = cluster.url("one");
    let three = cluster.url("three");
    taskboard_core::tls::install_provider();
    let http = reqwest::Client::builder().no_proxy().pool_max_idle_per_host(args.concurrency).build()?;

    let mut setups = vec![
        Setup::new(&http, "embedded (redb file)", vec![Process::start(&server, dirs[0].path(), None)?])
            .await?,
        Setup::new(&http, "postgres, 1 process", vec![Process::start(&server, dirs[1].path(), Some(&one))?])
            .await?,
    ];
    // One after the other: the first creates the schema, the others find it.
    let mut procs = Vec::new();
    for _ in 0..3 {
        procs.push(Process::start(&server, dirs[2].path(), Some(&three))?);
    }
    setups.push(Setup::new(&http, "postgres, 3 processes", procs).await?);

    let (stop, stopped) = tokio::sync::watch::channel(false);
    let shared = &setups[2];
    let followers: Vec<_> = shared
        .procs
        .iter()
        .map(|p| tokio::spawn(follow(http.clone(), p.base.clone(), shared.token.clone(), stopped.clone())))
        .collect();
    for round in 0..args.rounds {
        for s in setups.iter_mut() {
            create_round(&http, s, args.per_round, args.concurrency, round).await?;
        }
    }
    // Every stream has the last creation's event, or a second has passed.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    stop.send_replace(true);
    let mut arrivals = Vec::new();
    for f in followers {
        arrivals.push(f.await??);
    }
    let (lag_p50, lag_p99, events) = lag(&arrivals);
    // Every process reads every task once (not measured), then the rounds.
    for s in &setups {
        read_round(&http, s, s.ids.len() * s.procs.len(), args.concurrency, 1).await?;
    }
    for round in 0..args.rounds {
        for s in setups.iter_mut() {
            let rate = read_round(&http, s, args.reads_per_round, args.concurrency, 7919 + round).await?;
            s.reads.push(rate);
        }
    }

    println!(
        "over HTTP: {} rounds of {} durable creations and {} task reads per server, {} connections; median round",
        args.rounds, args.per_round, args.reads_per_round, args.concurrency
    );
    println!(
        "{:<24} {:>12} {:>7} {:>11} {:>12} {:>7}",
        "servers", "creations/s", "ratio", "cores busy", "reads/s", "ratio"
    );
    let base = (median(&setups[0].creations), median(&setups[0].reads));
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    for s in &setups {
        let (c, r) = (median(&s.creations), median(&s.reads));
        let busy = if s.cores.is_empty() { f64::NAN } else { median(&s.cores) };
        println!(
            "{:<24} {:>12.0} {:>7.2} {:>7.2} of {cores} {:>12.0} {:>7.2}",
            s.name,
            c,
            c / base.0,
            busy,
            r,
            r / base.1
        );
    }
    println!(
        "event lag between the 3 processes during the creations ({events} events, one SSE stream on each): \
         median {lag_p50:.1} ms, p99 {lag_p99:.1} ms"
    );
    Ok(())
}
