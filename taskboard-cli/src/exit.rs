//! How a run ends: its exit code, and the error printed on stderr (one
//! JSON object with `--json`).

use std::io::Write;
use std::process::ExitCode;

use taskboard_core::{Error, ErrorKind};

/// Exit codes (README, "The command line").
pub mod code {
    /// Success.
    pub const OK: u8 = 0;
    /// An error not listed below: a value the board refuses, a permission
    /// refused, a server that cannot be reached or fails, a local file.
    pub const ERROR: u8 = 1;
    /// The command line is wrong (unknown option, bad value, no board chosen).
    pub const USAGE: u8 = 2;
    /// What the command names does not exist (HTTP 404).
    pub const NOT_FOUND: u8 = 3;
    /// No valid credentials: missing, wrong or expired (HTTP 401), as `gh`.
    pub const NOT_AUTHENTICATED: u8 = 4;
    /// The change conflicts with the board's state (HTTP 409): a taken slug,
    /// a board held by a running server …
    pub const CONFLICT: u8 = 5;
}

/// The `code` of a usage error in a JSON error.
pub const USAGE_CODE: &str = "usage";

/// Why a run failed.
#[derive(Debug)]
pub enum Failure {
    Usage(String),
    Api(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Api(e)
    }
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) => code::USAGE,
            Failure::Api(e) => match e.kind() {
                ErrorKind::NotFound => code::NOT_FOUND,
                ErrorKind::Unauthorized => code::NOT_AUTHENTICATED,
                ErrorKind::Conflict => code::CONFLICT,
                _ => code::ERROR,
            },
        }
    }

    fn detail_and_code(&self) -> (&str, &str) {
        match self {
            Failure::Usage(text) => (text, USAGE_CODE),
            Failure::Api(e) => (e.detail(), e.kind().code()),
        }
    }

    /// Prints the error on stderr (`error: DETAIL`, or `{"detail", "code"}`
    /// with `--json`) and gives the exit code. Standard output stays
    /// reserved for results, so a script reading it never takes an error
    /// for an answer.
    pub fn report(&self, json: bool) -> ExitCode {
        let (detail, code) = self.detail_and_code();
        print_error(detail, code, json);
        ExitCode::from(self.exit_code())
    }
}

/// Writes an error to stderr; a closed stderr is ignored (the exit code
/// still tells).
pub fn print_error(detail: &str, code: &str, json: bool) {
    let mut stderr = std::io::stderr().lock();
    let _ = if json {
        writeln!(stderr, "{}", serde_json::json!({"detail": detail, "code": code}))
    } else {
        writeln!(stderr, "error: {detail}")
    };
}

/// A usage error found by clap. Help and version (clap's "errors" that
/// go to stdout) are printed as clap prints them; real ones as any usage
/// error, as JSON when `--json` is among the arguments.
pub fn clap_failure(e: clap::Error, json: bool) -> ExitCode {
    if json && e.use_stderr() {
        let rendered = e.render().to_string();
        let first = rendered.lines().next().unwrap_or_default();
        print_error(first.strip_prefix("error: ").unwrap_or(first).trim(), USAGE_CODE, true);
    } else {
        // Printing fails only on a closed stream: nothing left to tell.
        let _ = e.print();
    }
    ExitCode::from(if e.use_stderr() { code::USAGE } else { code::OK })
}
