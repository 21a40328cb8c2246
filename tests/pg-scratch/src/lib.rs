//! A throwaway PostgreSQL for tests and benchmarks: `initdb` and `pg_ctl`
//! into a temporary directory, listening on a Unix socket in it only.
//!
//! The cluster lives as long as the process that started it: a small shell
//! script runs it and waits on a pipe from this process; when the process
//! ends, however it ends, the pipe closes and the script stops the cluster
//! and removes its directory. `initdb` refuses to run as root, so under
//! root the script runs as the `postgres` system user (`runuser`).
//!
//! The binaries are found in `TASKBOARD_PG_BIN`, else under
//! `/usr/lib/postgresql/<version>/bin` (the newest), else on `PATH`.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A running throwaway cluster.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
    /// The TCP port of a cluster that listens on 127.0.0.1 too.
    port: Option<u16>,
    /// The PostgreSQL binaries, and whether they run as `postgres`.
    bin: PathBuf,
    root: bool,
    /// The server options it was started with, for [`Scratch::resume`].
    options: String,
    /// Closing it (when the process ends) stops the cluster.
    _stdin: ChildStdin,
    _child: Child,
}

static SHARED: OnceLock<Result<Scratch, String>> = OnceLock::new();
static SCHEMAS: AtomicUsize = AtomicUsize::new(0);

const SCRIPT: &str = r#"
set -e
D="$1"; BIN="$2"; SYNC="$3"; LISTEN="$4"; PORT="$5"; TLS="$6"
SSL=""
if [ "$TLS" = on ]; then
  # A CA, a server certificate it signs (for the name localhost only),
  # and a second CA that signed nothing.
  ca() { openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" -keyout "$D/$1.key" -out "$D/$1.crt"; }
  ca ca; ca other-ca
  openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$D/server.key" -out "$D/server.csr"
  printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n' >"$D/server.ext"
  openssl x509 -req -in "$D/server.csr" -CA "$D/ca.crt" -CAkey "$D/ca.key" -CAcreateserial -days 2 \
    -extfile "$D/server.ext" -out "$D/server.crt"
  chmod 600 "$D"/*.key
  SSL="-c ssl=on -c ssl_cert_file=$D/server.crt -c ssl_key_file=$D/server.key"
fi >"$D/tls.log" 2>&1
"$BIN/initdb" -D "$D/data" -U postgres -A trust -E UTF8 --no-sync >"$D/initdb.log" 2>&1
"$BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w \
  -o "-k $D -p $PORT -c listen_addresses=$LISTEN -c fsync=$SYNC -c full_page_writes=$SYNC -c max_connections=300 $SSL" start >/dev/null
echo ready
cat >/dev/null || true
"$BIN/pg_ctl" -D "$D/data" -m immediate stop >/dev/null 2>&1 || true
rm -rf "$D"
"#;

fn bin_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("TASKBOARD_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    let on_path = Command::new("sh")
        .args(["-c", "command -v initdb"])
        .output()
        .map_err(|e| format!("cannot look for initdb: {e}"))?;
    let found = String::from_utf8_lossy(&on_path.stdout).trim().to_string();
    match Path::new(&found).parent() {
        Some(dir) if on_path.status.success() && !found.is_empty() => Ok(dir.to_path_buf()),
        _ => Err("PostgreSQL is not installed: no initdb under /usr/lib/postgresql/*/bin nor on PATH \
                  (install the postgresql package, or set TASKBOARD_PG_BIN)"
            .to_string()),
    }
}

/// The uid and gid of a system user.
fn ids_of(user: &str) -> Result<(u32, u32), String> {
    let id = |flag: &str| -> Result<u32, String> {
        let out = Command::new("id").args([flag, user]).output().map_err(|e| e.to_string())?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .map_err(|_| format!("no system user {user:?} to run PostgreSQL as (initdb refuses root)"))
    };
    Ok((id("-u")?, id("-g")?))
}

impl Scratch {
    /// Starts a new cluster and waits until it accepts connections. It
    /// does not sync to disk (tests need no durability across a machine
    /// crash, and syncs would only slow them).
    pub fn start() -> Result<Scratch, String> {
        Scratch::start_with(false)
    }

    /// [`Scratch::start`], with `fsync` on when `durable` (benchmarks
    /// that compare durable writes).
    pub fn start_with(durable: bool) -> Result<Scratch, String> {
        Scratch::launch(durable, false)
    }

    /// A cluster that also listens on 127.0.0.1 (a free port) with TLS
    /// on: a certificate for the name `localhost` (not for the address
    /// 127.0.0.1) signed by the CA
    /// of [`Scratch::ca_cert`], made with `openssl` as it starts.
    pub fn start_tls() -> Result<Scratch, String> {
        Scratch::launch(false, true)
    }

    fn launch(durable: bool, tls: bool) -> Result<Scratch, String> {
        let bin = bin_dir()?;
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "taskboard-pg-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // A port free now: PostgreSQL cannot be told to pick one itself.
        let port = match tls {
            true => Some(
                std::net::TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .map_err(|e| format!("no free port: {e}"))?
                    .port(),
            ),
            false => None,
        };
        let root = std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false);
        let mut command = if root {
            let (uid, gid) = ids_of("postgres")?;
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| format!("chown: {e}"))?;
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", "sh"]);
            c
        } else {
            Command::new("sh")
        };
        let mut child = command
            .arg("-c")
            .arg(SCRIPT)
            .arg("taskboard-pg")
            .arg(&dir)
            .arg(&bin)
            .arg(if durable { "on" } else { "off" })
            .arg(if tls { "127.0.0.1" } else { "" })
            .arg(port.unwrap_or(5432).to_string())
            .arg(if tls { "on" } else { "off" })
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start PostgreSQL: {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        BufReader::new(stdout).read_line(&mut line).map_err(|e| e.to_string())?;
        if line.trim() != "ready" {
            let log = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            return Err(format!(
                "PostgreSQL did not start in {}:\n{}\n{}\n{}",
                dir.display(),
                log("tls.log"),
                log("initdb.log"),
                log("server.log")
            ));
        }
        let sync = if durable { "on" } else { "off" };
        let mut options = format!(
            "-k {} -p {} -c listen_addresses={} -c fsync={sync} -c full_page_writes={sync} -c max_connections=300",
            dir.display(),
            port.unwrap_or(5432),
            if tls { "127.0.0.1" } else { "''" },
        );
        if tls {
            let d = dir.display();
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={d}/server.crt -c ssl_key_file={d}/server.key"
            ));
        }
        Ok(Scratch { dir, port, bin, root, options, _stdin: stdin, _child: child })
    }

    /// One cluster for the whole process, started on first use.
    pub fn shared() -> &'static Scratch {
        match SHARED.get_or_init(Scratch::start) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    /// The URL of the cluster's `postgres` database, with the board in
    /// `schema`.
    pub fn url(&self, schema: &str) -> String {
        let port = self.port.map_or(String::new(), |p| format!(":{p}"));
        format!("postgres://postgres@localhost{port}/postgres?host={}&schema={schema}", self.dir.display())
    }

    /// The URL of a board in a schema no one used before.
    pub fn fresh_url(&self) -> String {
        let n = SCHEMAS.fetch_add(1, Ordering::Relaxed);
        self.url(&format!("board_{}_{n}", std::process::id()))
    }

    /// The URL of the `postgres` database over TCP on 127.0.0.1 (a
    /// cluster of [`Scratch::start_tls`]), with `params` (`sslmode=…`).
    pub fn tcp_url(&self, host: &str, schema: &str, params: &str) -> String {
        let port = self.port.expect("a cluster listening on TCP");
        format!("postgres://postgres@{host}:{port}/postgres?schema={schema}&{params}")
    }

    /// The certificate of the CA that signed the server's (PEM).
    pub fn ca_cert(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// The certificate of a CA that signed nothing of this cluster.
    pub fn other_ca_cert(&self) -> PathBuf {
        self.dir.join("other-ca.crt")
    }

    /// Stops the cluster (fast shutdown: open connections are closed);
    /// [`Scratch::resume`] starts it again on the same directory.
    pub fn pause(&self) -> Result<(), String> {
        self.pg_ctl(&["-m", "fast", "stop"])
    }

    /// Starts a cluster stopped by [`Scratch::pause`] and waits until it
    /// accepts connections.
    pub fn resume(&self) -> Result<(), String> {
        let log = self.dir.join("server.log");
        let log = log.to_str().ok_or("the cluster's directory is not UTF-8")?;
        self.pg_ctl(&["-l", log, "-o", &self.options, "start"])
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        let pg_ctl = self.bin.join("pg_ctl");
        let mut command = if self.root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&pg_ctl);
            c
        } else {
            Command::new(&pg_ctl)
        };
        let out = command
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-w")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run pg_ctl: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("pg_ctl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// The directory holding the cluster and its socket.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}
