//! The command line: every command with its options and an example.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod agents;
mod members;
mod messages;
mod projects;
mod reviews;
mod runs;
mod tasks;
mod tokens;
mod webhooks;

pub use agents::*;
pub use members::*;
pub use messages::*;
pub use projects::*;
pub use reviews::*;
pub use runs::*;
pub use tasks::*;
pub use tokens::*;
pub use webhooks::*;

#[derive(Debug, Parser)]
#[command(
    name = "taskboard",
    version,
    about = "Taskboard from the command line: every operation, on a local board or against a server",
    long_about = "Taskboard from the command line: every operation of the API, on a local board or \
against a server.\n\n\
Local mode (--data-dir / TASKBOARD_DATA_DIR, with --database / TASKBOARD_DATABASE for a board in \
PostgreSQL) opens the board in this process, acting as the member \
given by --as (slug or id), or as the first active owner. It cannot open a board that a running \
server holds: use --server then.\n\n\
Remote mode (--server / TASKBOARD_SERVER) talks to a server with --token / TASKBOARD_TOKEN, or \
with the token stored by `taskboard login`. Without --server and --data-dir, the stored login's \
server is used.",
    after_help = "Examples:\n  taskboard --data-dir ./board init\n  taskboard --data-dir ./board task list --status todo\n  \
taskboard --server http://127.0.0.1:8080 login --login owner\n  taskboard task show WEB-12 --json"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes; a command's help lists them after its own.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// Data directory of a local board (with --database: the directory of
    /// the board's file contents, the one its servers share).
    #[arg(long, global = true, env = "TASKBOARD_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Local mode on a board kept in PostgreSQL: a `postgres://` URL
    /// (`?host=/dir` for a Unix socket, `&schema=name`, `&sslmode=…`).
    /// --data-dir then names the directory of its file contents.
    #[arg(long, global = true, env = "TASKBOARD_DATABASE", value_name = "URL", hide_env_values = true)]
    pub database: Option<String>,
    /// Address of a Taskboard server (http://host:port); wins over --data-dir.
    #[arg(long, global = true, env = "TASKBOARD_SERVER", value_name = "URL")]
    pub server: Option<String>,
    /// Credentials for the server: an agent token or a JWT.
    #[arg(long, global = true, env = "TASKBOARD_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Local mode: act as this member (slug or id) instead of the first owner.
    #[arg(long = "as", global = true, value_name = "MEMBER")]
    pub acting_as: Option<String>,
    /// Print the exact API JSON.
    #[arg(long, global = true, conflicts_with = "quiet")]
    pub json: bool,
    /// Send this `Idempotency-Key` with the command's change, so running
    /// it again (after a lost answer) does not change the board twice.
    /// Without it every change gets a key of its own, which makes the
    /// client's own retries after a network failure safe.
    #[arg(long, global = true, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Present this lease (the `lease.id` of a task you claimed) with
    /// the command: if the lease is no longer current (it expired and
    /// another took the task) the change is refused rather than written
    /// over the new holder's work. The runner sets it for its agents.
    #[arg(long = "lease-id", global = true, env = "TASKBOARD_LEASE", value_name = "LEASE_ID")]
    pub lease_id: Option<uuid::Uuid>,
    /// Print only ids.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a new board in --data-dir with its first owner.
    #[command(after_help = "Example:\n  taskboard --data-dir ./board init --owner alice\n\n\
The generated password is printed once; give --password to choose it.")]
    Init {
        /// Slug of the owner.
        #[arg(long, default_value = "owner")]
        owner: String,
        /// Password of the owner (8-1024 characters); generated when absent.
        #[arg(long, env = "TASKBOARD_OWNER_PASSWORD", hide_env_values = true)]
        password: Option<String>,
    },
    /// Log in to --server and store the token in the config directory.
    #[command(after_help = "Examples:\n  taskboard --server http://127.0.0.1:8080 login --login alice\n  \
taskboard --server https://board.example.com login --sso\n\n\
The password is read from --password, TASKBOARD_PASSWORD, the terminal (not echoed) or the first \
line of standard input.\n\
--sso signs in through the board's identity provider: it prints an address to open in a browser \
(and opens it with $BROWSER when that is set) and waits on 127.0.0.1 for the browser to come back.\n\
The token is stored in $XDG_CONFIG_HOME/taskboard/credentials.json (mode 0600), or the file \
named by TASKBOARD_CREDENTIALS.")]
    Login {
        /// Slug or name of the member.
        #[arg(long, required_unless_present = "sso", conflicts_with = "sso")]
        login: Option<String>,
        /// Sign in with single sign-on (OpenID Connect) in a browser.
        #[arg(long, conflicts_with = "password")]
        sso: bool,
        /// Password; without it, typed on the terminal (not echoed) or the first
        /// line of standard input.
        #[arg(long, env = "TASKBOARD_PASSWORD", hide_env_values = true)]
        password: Option<String>,
    },
    /// Forget the stored login; with --everywhere, first end every login
    /// of yours on the server.
    #[command(after_help = "Examples:\n  taskboard logout\n  taskboard logout --everywhere\n\n\
--everywhere ends every login JWT of yours (other machines, the web board); access tokens stay \
until revoked (`taskboard token revoke`).")]
    Logout {
        /// End every login of yours on the server, not only this one.
        #[arg(long)]
        everywhere: bool,
    },
    /// Show the acting member.
    #[command(after_help = "Example:\n  taskboard whoami --json")]
    Whoami,
    /// Service status and version.
    #[command(after_help = "Example:\n  taskboard --server http://127.0.0.1:8080 health")]
    Health,
    /// Members: people, agents and bridges.
    #[command(subcommand)]
    Member(MemberCmd),
    /// Projects and their members.
    #[command(subcommand)]
    Project(ProjectCmd),
    /// Tasks.
    #[command(subcommand)]
    Task(TaskCmd),
    /// Checklist steps of a task.
    #[command(subcommand)]
    Step(StepCmd),
    /// Global labels.
    #[command(subcommand)]
    Label(LabelCmd),
    /// Access tokens with scopes: create (shown once), list, revoke.
    #[command(subcommand)]
    Token(TokenCmd),
    /// Webhooks and their deliveries (admins and owners).
    #[command(subcommand)]
    Webhook(WebhookCmd),
    /// Runs of agents at tasks: list, show, start, cancel, answer, logs.
    #[command(subcommand)]
    Run(RunCmd),
    /// An agent's changes and their reviews: show, approve, request-changes, comment.
    #[command(subcommand)]
    Review(ReviewCmd),
    /// Agents at work: `agent run` starts and supervises them.
    #[command(subcommand)]
    Agent(AgentCmd),
    /// Chat messages and task comments.
    #[command(subcommand)]
    Message(MessageCmd),
    /// Project files.
    #[command(subcommand)]
    File(FileCmd),
    /// Message attachments.
    #[command(subcommand)]
    Attachment(AttachmentCmd),
    /// Stream events as JSON lines.
    #[command(after_help = "Example:\n  taskboard --server http://127.0.0.1:8080 events --since 120\n\n\
Against a server the stream follows live events and, on disconnect, reconnects and resumes after \
the last seq. Locally it prints the retained events after --since and stops (no one else can \
write to a board this process holds).")]
    Events {
        /// Start after this seq (default: from now; locally: from the start of the retained window).
        #[arg(long)]
        since: Option<u64>,
        /// Follow over Server-Sent Events (plain HTTP) instead of a WebSocket.
        #[arg(long)]
        sse: bool,
    },
    /// Serve the Model Context Protocol over stdio, for language-model agents.
    #[command(after_help = "Examples:\n  taskboard --data-dir ./board --as agent-1 mcp\n  \
TASKBOARD_SERVER=http://127.0.0.1:8080 TASKBOARD_TOKEN=tbk-... taskboard mcp\n\n\
Reads JSON-RPC on standard input and answers on standard output; an MCP client starts it (see \
README, MCP). The tools act as the --as member locally, or as the token's member on a server. \
--profile worker offers only what an agent at work on a task needs (ready, claim, get, heartbeat, \
release, steps, comment, wait for events).")]
    Mcp {
        /// Which tools to offer: full (every tool) or worker.
        #[arg(long, default_value = "full")]
        profile: taskboard_mcp::Profile,
    },
    /// Export the whole local board to an archive directory (JSON lines plus file blobs).
    #[command(after_help = "Example:\n  taskboard --data-dir ./board export ./board-archive\n\n\
The directory must be absent or empty. While a server holds the board, use `backup` instead.")]
    Export {
        /// The archive directory: absent or empty.
        dir: PathBuf,
    },
    /// Create a new board in --data-dir from an archive; with --from, import
    /// another tracker's tasks into a project.
    #[command(after_help = "Examples:\n  taskboard --data-dir ./restored import ./board-archive\n  \
taskboard import --from beads .beads/issues.jsonl --project web --dry-run\n  \
taskboard --server http://127.0.0.1:8080 import --from github issues.json --project web --create-members\n\n\
With --from, PATH is read as that tracker writes it (docs/import.md): beads' issues.jsonl, \
Backlog.md's backlog/ folder, Task Master's tasks.json, the JSON of `gh issue list --state all \
--json number,title,body,state,labels,assignees,author,comments,createdAt,closedAt,milestone`, or a \
Jira or Linear CSV export. Importing again updates the tasks it made instead of adding new ones. \
A malformed record is named by file and line or row, and nothing is imported.")]
    Import {
        /// An archive directory written by `export` or `backup`; with --from,
        /// the tracker's file or folder.
        #[arg(value_name = "PATH")]
        dir: PathBuf,
        /// Read PATH as the files of this tracker, into --project.
        #[arg(long, value_enum, value_name = "FORMAT")]
        from: Option<crate::import::Format>,
        /// The project the tasks go to (slug or id); needed with --from.
        #[arg(long, requires = "from")]
        project: Option<String>,
        /// Print what the import would create, update, leave or skip, and change nothing.
        #[arg(long, requires = "from")]
        dry_run: bool,
        /// Create people of the source who match no member (by slug, email or
        /// name) as inactive human members.
        #[arg(long, requires = "from")]
        create_members: bool,
    },
    /// Create a new board from a backup: in --data-dir, or with --database in that database.
    #[command(
        after_help = "Examples:\n  taskboard restore /var/backups/taskboard/taskboard-20261125T221530.123Z --data-dir ./restored\n  \
taskboard restore ARCHIVE --database 'postgres://taskboard@localhost/taskboard' --data-dir ./files\n\n\
ARCHIVE is a scheduled backup of the server (--backup-dir), or an archive of `export` or `backup`. \
A data directory that is not empty, or a database that already holds a board, is refused."
    )]
    Restore {
        /// The archive directory of a backup.
        archive: PathBuf,
    },
    /// A consistent archive of the board, also while a server runs (owners only).
    #[command(
        after_help = "Example:\n  taskboard --server http://127.0.0.1:8080 backup /var/backups/taskboard/2024-05-01\n\n\
Against a server, DIR is a path on the server's machine (absolute)."
    )]
    Backup {
        /// Directory of the archive, absent or empty; against a server, an
        /// absolute path on the server's machine.
        dir: String,
    },
    /// Print a shell completion script.
    #[command(after_help = "Example:\n  taskboard completions bash > /etc/bash_completion.d/taskboard")]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Clone, Args)]
pub struct PageArgs {
    /// At most this many items (1-1000).
    #[arg(long)]
    pub limit: Option<u32>,
    /// Skip this many items.
    #[arg(long)]
    pub offset: Option<u32>,
    /// Start after the page this cursor came with (printed after a full
    /// page of `task list`).
    #[arg(long)]
    pub cursor: Option<String>,
}

/// Parses one of the core's wire enums, listing the accepted values on
/// error. Hyphens stand for underscores (`in-progress` is `in_progress`),
/// as is usual on command lines.
fn parse<T: std::str::FromStr>(s: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    s.parse::<T>().or_else(|e| s.replace('-', "_").parse::<T>().map_err(|_| e.to_string()))
}

/// A lease duration: seconds, or a number followed by `s`, `m` or `h`.
pub fn parse_lease(text: &str) -> std::result::Result<u32, String> {
    let t = text.trim();
    let (number, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, "s"),
    };
    let n: u32 = number.parse().map_err(|_| format!("{text:?} is not a duration such as 300s, 5m or 1h"))?;
    let scale = match unit.trim() {
        "s" | "sec" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        _ => return Err(format!("{text:?}: the unit must be s, m or h")),
    };
    n.checked_mul(scale).ok_or_else(|| format!("{text:?} is too long"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn lease_durations_take_a_unit() {
        assert_eq!(super::parse_lease("300"), Ok(300));
        assert_eq!(super::parse_lease("300s"), Ok(300));
        assert_eq!(super::parse_lease("5m"), Ok(300));
        assert_eq!(super::parse_lease("1h"), Ok(3600));
        assert!(super::parse_lease("5 days").is_err());
        assert!(super::parse_lease("s").is_err());
    }

    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }

    /// Every command shows an example in its help (a hidden one has no
    /// help to show it in).
    #[test]
    fn every_command_has_an_example() {
        fn walk(cmd: &clap::Command, path: &str) {
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                let path = format!("{path} {}", sub.get_name());
                if sub.has_subcommands() {
                    walk(sub, &path);
                } else if sub.get_name() != "help" {
                    let help = sub.get_after_help().map(|h| h.to_string()).unwrap_or_default();
                    assert!(help.contains("taskboard "), "no example for `{path}`");
                }
            }
        }
        walk(&super::Cli::command(), "taskboard");
    }

    /// Every option and argument of every command has a help line.
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && arg.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        let mut cmd = super::Cli::command();
        cmd.build();
        walk(&cmd, "taskboard", &mut missing);
        assert!(missing.is_empty(), "arguments without help:\n{}", missing.join("\n"));
    }

    /// Enum values take hyphens for underscores.
    #[test]
    fn enum_values_accept_hyphens() {
        use clap::Parser;
        let cli =
            super::Cli::try_parse_from(["taskboard", "task", "list", "--status", "in-progress"]).unwrap();
        let super::Command::Task(super::TaskCmd::List { status, .. }) = cli.command else { panic!() };
        assert_eq!(status, Some(taskboard_core::model::TaskStatus::InProgress));
        let cli = super::Cli::try_parse_from(["taskboard", "task", "link", "A", "B", "--type", "depends-on"])
            .unwrap();
        let super::Command::Task(super::TaskCmd::Link { link_type, .. }) = cli.command else { panic!() };
        assert_eq!(link_type, taskboard_core::model::LinkType::DependsOn);
        let error =
            super::Cli::try_parse_from(["taskboard", "task", "list", "--status", "in-limbo"]).unwrap_err();
        assert!(error.to_string().contains("in_progress"), "{error}");
    }
}
