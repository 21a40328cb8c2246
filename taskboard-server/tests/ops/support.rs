//! A `taskboard-server` process: started on port 0 with a fresh data
//! directory, its log written to a file the test reads once it stopped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

pub const OWNER_PASSWORD: &str = "owner-password-1";

pub fn server_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_taskboard-server"));
    command.env("TASKBOARD_OWNER_PASSWORD", OWNER_PASSWORD);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|n| n.starts_with("TASKBOARD_") && n != "TASKBOARD_OWNER_PASSWORD")
            || name == "RUST_LOG"
        {
            command.env_remove(name);
        }
    }
    command
}

/// A running server process.
pub struct Process {
    child: Child,
    /// Kept open so the server never writes to a closed pipe.
    _stdout: BufReader<ChildStdout>,
    pub base: String,
    pub log: PathBuf,
}

impl Process {
    /// Starts `command` with stderr into `log` and waits for the line
    /// naming its address, printed once it accepts connections.
    pub fn start(mut command: Command, log: &Path) -> Process {
        let file = std::fs::File::create(log).unwrap();
        let mut child =
            command.stdout(Stdio::piped()).stderr(file).spawn().expect("the server binary starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let base = loop {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 {
                let _ = child.wait();
                panic!("the server ended before listening: {}", std::fs::read_to_string(log).unwrap());
            }
            if let Some(at) = line.trim().find("listening on ") {
                break line.trim()[at + "listening on ".len()..].to_string();
            }
        };
        Process { child, _stdout: stdout, base, log: log.to_path_buf() }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal by name (`TERM`, `HUP`).
    pub fn signal(&self, name: &str) {
        let status =
            Command::new("kill").args([&format!("-{name}"), &self.pid().to_string()]).status().unwrap();
        assert!(status.success(), "kill -{name}");
    }

    /// SIGTERM, then waits for the exit; the log is complete after it.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        self.signal("TERM");
        self.child.wait().unwrap()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn http() -> reqwest::Client {
    {
        taskboard_core::tls::install_provider();
        reqwest::Client::builder()
    }
    .no_proxy()
    .build()
    .unwrap()
}
