//! The command line: every command with its options and an example.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use taskboard_core::model::*;

#[derive(Debug, Parser)]
#[command(
    name = "taskboard",
    version,
    about = "Taskboard from the command line: every operation, on a local board or against a server",
    long_about = "Taskboard from the command line: every operation of the API, on a local board or \
against a server.\n\n\
Local mode (--data-dir / TASKBOARD_DATA_DIR) opens the board in this process, acting as the member \
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

#[derive(Debug, Clone, Args)]
pub struct Global {
    /// Data directory of a local board.
    #[arg(long, global = true, env = "TASKBOARD_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
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
    #[command(after_help = "Example:\n  taskboard --server http://127.0.0.1:8080 login --login alice\n\n\
The password is read from --password, TASKBOARD_PASSWORD or the first line of standard input.\n\
The token is stored in $XDG_CONFIG_HOME/taskboard/credentials.json (mode 0600), or the file \
named by TASKBOARD_CREDENTIALS.")]
    Login {
        /// Slug or name of the member.
        #[arg(long)]
        login: String,
        #[arg(long, env = "TASKBOARD_PASSWORD", hide_env_values = true)]
        password: Option<String>,
    },
    /// Forget the stored login.
    #[command(after_help = "Example:\n  taskboard logout")]
    Logout,
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
    },
    /// Export the whole local board to an archive directory (JSON lines plus file blobs).
    #[command(after_help = "Example:\n  taskboard --data-dir ./board export ./board-archive\n\n\
The directory must be absent or empty. While a server holds the board, use `backup` instead.")]
    Export { dir: PathBuf },
    /// Create a new board in --data-dir from an archive.
    #[command(after_help = "Example:\n  taskboard --data-dir ./restored import ./board-archive")]
    Import { dir: PathBuf },
    /// A consistent archive of the board, also while a server runs (owners only).
    #[command(
        after_help = "Example:\n  taskboard --server http://127.0.0.1:8080 backup /var/backups/taskboard/2024-05-01\n\n\
Against a server, DIR is a path on the server's machine (absolute)."
    )]
    Backup { dir: String },
    /// Print a shell completion script.
    #[command(after_help = "Example:\n  taskboard completions bash > /etc/bash_completion.d/taskboard")]
    Completions { shell: clap_complete::Shell },
}

#[derive(Debug, Subcommand)]
pub enum MemberCmd {
    /// List members.
    #[command(after_help = "Example:\n  taskboard member list --all")]
    List {
        /// Include deactivated members.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Show a member.
    #[command(after_help = "Example:\n  taskboard member show alice")]
    Show { member: String },
    /// Create a member (agents get a token, shown once).
    #[command(
        after_help = "Example:\n  taskboard member create --name 'Build bot' --slug bot --type agent --agent-label ci"
    )]
    Create {
        #[arg(long)]
        name: String,
        #[arg(long)]
        slug: String,
        #[arg(long = "type", default_value = "agent", value_parser = parse::<MemberType>)]
        kind: MemberType,
        #[arg(long, default_value = "member", value_parser = parse::<Role>)]
        role: Role,
        #[command(flatten)]
        config: AgentConfigArgs,
    },
    /// Change a member.
    #[command(
        after_help = "Example:\n  taskboard member update bot --status busy --agent-config '{\"labels\":[\"ci\"]}'"
    )]
    Update {
        member: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        slug: Option<String>,
        #[arg(long, value_parser = parse::<Role>)]
        role: Option<Role>,
        #[arg(long, value_parser = parse::<MemberStatus>)]
        status: Option<MemberStatus>,
        #[arg(long, conflicts_with = "clear_avatar")]
        avatar_url: Option<String>,
        #[arg(long)]
        clear_avatar: bool,
        /// The whole agent configuration as JSON (replaces the old one).
        #[arg(long, value_name = "JSON")]
        agent_config: Option<String>,
    },
    /// Deactivate a member (owners only).
    #[command(after_help = "Example:\n  taskboard member delete bot")]
    Delete { member: String },
    /// Issue a new agent token (the old one stops working).
    #[command(after_help = "Example:\n  taskboard member regenerate-token bot")]
    RegenerateToken { member: String },
    /// Revoke an agent token.
    #[command(after_help = "Example:\n  taskboard member revoke-token bot")]
    RevokeToken { member: String },
    /// Set a human member's password.
    #[command(
        after_help = "Example:\n  taskboard member set-password alice --password 'correct horse battery'\n\n\
Without --password the first line of standard input is the password."
    )]
    SetPassword {
        member: String,
        #[arg(long, env = "TASKBOARD_NEW_PASSWORD", hide_env_values = true)]
        password: Option<String>,
    },
    /// Set your own status (online, offline, busy).
    #[command(after_help = "Example:\n  taskboard member status busy")]
    Status {
        #[arg(value_parser = parse::<MemberStatus>)]
        status: MemberStatus,
    },
}

#[derive(Debug, Clone, Args)]
pub struct AgentConfigArgs {
    /// Agent capability (repeatable).
    #[arg(long = "capability")]
    pub capabilities: Vec<String>,
    /// Label the agent is auto-assigned by (repeatable).
    #[arg(long = "agent-label")]
    pub labels: Vec<String>,
    #[arg(long, value_parser = parse::<Listen>)]
    pub chat_listen: Option<Listen>,
    #[arg(long, value_parser = parse::<Listen>)]
    pub task_listen: Option<Listen>,
    #[arg(long)]
    pub prompt: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    /// The whole agent configuration as JSON (instead of the flags above).
    #[arg(long, value_name = "JSON")]
    pub agent_config: Option<String>,
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

#[derive(Debug, Subcommand)]
pub enum ProjectCmd {
    /// List projects.
    #[command(after_help = "Example:\n  taskboard project list --all")]
    List {
        /// Include archived projects.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Show a project.
    #[command(after_help = "Example:\n  taskboard project show web")]
    Show { project: String },
    /// Create a project with its main chat.
    #[command(
        after_help = "Example:\n  taskboard project create --name 'Web app' --slug web --repo https://git.example/web.git"
    )]
    Create {
        #[arg(long)]
        name: String,
        #[arg(long)]
        slug: String,
        #[arg(long)]
        description: Option<String>,
        /// Repository URL (repeatable).
        #[arg(long = "repo")]
        repo_urls: Vec<String>,
        /// Assign new tasks to agents by label.
        #[arg(long)]
        auto_assign: bool,
    },
    /// Change a project.
    #[command(after_help = "Example:\n  taskboard project update web --status archived")]
    Update {
        project: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        slug: Option<String>,
        #[arg(long, conflicts_with = "clear_description")]
        description: Option<String>,
        #[arg(long)]
        clear_description: bool,
        /// Repository URLs (repeatable; replaces the list).
        #[arg(long = "repo")]
        repo_urls: Vec<String>,
        /// Remove every repository URL.
        #[arg(long, conflicts_with = "repo_urls")]
        clear_repos: bool,
        #[arg(long, value_parser = parse::<ProjectStatus>)]
        status: Option<ProjectStatus>,
        #[arg(long)]
        auto_assign: Option<bool>,
    },
    /// Delete a project and everything in it (owners only).
    #[command(after_help = "Example:\n  taskboard project delete old-site")]
    Delete { project: String },
    /// List the members of a project.
    #[command(after_help = "Example:\n  taskboard project members web")]
    Members { project: String },
    /// Add a member to a project.
    #[command(after_help = "Example:\n  taskboard project add-member web bot")]
    AddMember { project: String, member: String },
    /// Remove a member from a project.
    #[command(after_help = "Example:\n  taskboard project remove-member web bot")]
    RemoveMember { project: String, member: String },
}

#[derive(Debug, Subcommand)]
pub enum TaskCmd {
    /// List tasks (filters combine with AND).
    #[command(
        after_help = "Example:\n  taskboard task list --project web --status in_progress --assignee bot"
    )]
    List {
        #[arg(long)]
        project: Option<String>,
        #[arg(long, value_parser = parse::<TaskStatus>)]
        status: Option<TaskStatus>,
        #[arg(long)]
        assignee: Option<String>,
        #[arg(long)]
        reviewer: Option<String>,
        /// A label name.
        #[arg(long)]
        label: Option<String>,
        /// A task key or part of the title.
        #[arg(long, visible_alias = "query")]
        q: Option<String>,
        #[arg(long = "type", value_parser = parse::<TaskType>)]
        kind: Option<TaskType>,
        #[arg(long, value_parser = parse::<Priority>)]
        priority: Option<Priority>,
        #[arg(long)]
        parent: Option<String>,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Show a task (key like WEB-12, or id).
    #[command(after_help = "Example:\n  taskboard task show WEB-12")]
    Show { task: String },
    /// Create a task.
    #[command(
        after_help = "Example:\n  taskboard task create --project web --title 'Fix login' --type bug --priority high --label auth"
    )]
    Create {
        #[arg(long)]
        project: String,
        #[arg(long)]
        title: String,
        #[arg(long)]
        description: Option<String>,
        #[arg(long = "type", value_parser = parse::<TaskType>)]
        kind: Option<TaskType>,
        #[arg(long, value_parser = parse::<TaskStatus>)]
        status: Option<TaskStatus>,
        #[arg(long, value_parser = parse::<Priority>)]
        priority: Option<Priority>,
        /// Label name (repeatable).
        #[arg(long = "label")]
        labels: Vec<String>,
        #[arg(long)]
        parent: Option<String>,
        #[arg(long)]
        assignee: Option<String>,
        #[arg(long)]
        reviewer: Option<String>,
        /// A task this one depends on (repeatable).
        #[arg(long = "depends-on")]
        depends_on: Vec<String>,
    },
    /// Change a task.
    #[command(
        after_help = "Example:\n  taskboard task update WEB-12 --status review --reviewer alice --clear-description"
    )]
    Update {
        task: String,
        #[arg(long)]
        title: Option<String>,
        #[arg(long, conflicts_with = "clear_description")]
        description: Option<String>,
        #[arg(long)]
        clear_description: bool,
        #[arg(long = "type", value_parser = parse::<TaskType>)]
        kind: Option<TaskType>,
        #[arg(long, value_parser = parse::<TaskStatus>)]
        status: Option<TaskStatus>,
        #[arg(long, value_parser = parse::<Priority>)]
        priority: Option<Priority>,
        /// Label names (repeatable; replaces the list).
        #[arg(long = "label")]
        labels: Vec<String>,
        #[arg(long, conflicts_with = "labels")]
        clear_labels: bool,
        #[arg(long, conflicts_with = "clear_assignee")]
        assignee: Option<String>,
        #[arg(long)]
        clear_assignee: bool,
        #[arg(long, conflicts_with = "clear_reviewer")]
        reviewer: Option<String>,
        #[arg(long)]
        clear_reviewer: bool,
        #[arg(long, conflicts_with = "clear_parent")]
        parent: Option<String>,
        #[arg(long)]
        clear_parent: bool,
        #[arg(long, allow_negative_numbers = true)]
        position: Option<f64>,
    },
    /// Delete a task.
    #[command(after_help = "Example:\n  taskboard task delete WEB-12")]
    Delete { task: String },
    /// Take a task: assign it to yourself and start it.
    #[command(after_help = "Example:\n  taskboard --as bot task take WEB-12")]
    Take { task: String },
    /// Send a task back to the backlog with a reason.
    #[command(after_help = "Example:\n  taskboard task reject WEB-12 --reason 'needs a design first'")]
    Reject {
        task: String,
        #[arg(long)]
        reason: String,
    },
    /// Assign a task to a member.
    #[command(after_help = "Example:\n  taskboard task assign WEB-12 bot")]
    Assign { task: String, member: String },
    /// Watch a task.
    #[command(after_help = "Example:\n  taskboard task watch WEB-12")]
    Watch { task: String },
    /// Stop watching a task.
    #[command(after_help = "Example:\n  taskboard task unwatch WEB-12")]
    Unwatch { task: String },
    /// Put labels on a task or take them off.
    #[command(subcommand)]
    Label(TaskLabelCmd),
    /// Link a task to another (blocks, depends_on, relates_to).
    #[command(after_help = "Example:\n  taskboard task link WEB-12 WEB-7 --type depends_on")]
    Link {
        task: String,
        target: String,
        #[arg(long = "type", default_value = "relates_to", value_parser = parse::<LinkType>)]
        link_type: LinkType,
    },
    /// The links of a task, both directions.
    #[command(after_help = "Example:\n  taskboard task links WEB-12")]
    Links { task: String },
    /// Delete a link of a task.
    #[command(after_help = "Example:\n  taskboard task unlink WEB-12 0190d6a2-…")]
    Unlink { task: String, link: String },
    /// The audit log of a task.
    #[command(after_help = "Example:\n  taskboard task actions WEB-12")]
    Actions { task: String },
}

#[derive(Debug, Subcommand)]
pub enum TaskLabelCmd {
    /// Put a label on a task.
    #[command(after_help = "Example:\n  taskboard task label add WEB-12 bug")]
    Add { task: String, label: String },
    /// Take a label off a task.
    #[command(after_help = "Example:\n  taskboard task label remove WEB-12 bug")]
    Remove { task: String, label: String },
}

#[derive(Debug, Subcommand)]
pub enum StepCmd {
    /// List the steps of a task.
    #[command(after_help = "Example:\n  taskboard step list WEB-12")]
    List { task: String },
    /// Add a step to a task.
    #[command(after_help = "Example:\n  taskboard step add WEB-12 'Write the migration'")]
    Add { task: String, title: String },
    /// Change a step (by id or its number in `step list`).
    #[command(
        after_help = "Example:\n  taskboard step update WEB-12 2 --title 'Write both migrations' --done false"
    )]
    Update {
        task: String,
        step: String,
        #[arg(long)]
        title: Option<String>,
        #[arg(long)]
        done: Option<bool>,
    },
    /// Mark a step done.
    #[command(after_help = "Example:\n  taskboard step done WEB-12 1")]
    Done { task: String, step: String },
    /// Delete a step.
    #[command(after_help = "Example:\n  taskboard step delete WEB-12 1")]
    Delete { task: String, step: String },
}

#[derive(Debug, Subcommand)]
pub enum LabelCmd {
    /// List labels.
    #[command(after_help = "Example:\n  taskboard label list")]
    List {
        #[command(flatten)]
        page: PageArgs,
    },
    /// Create a label.
    #[command(after_help = "Example:\n  taskboard label create bug --color '#ef4444'")]
    Create {
        name: String,
        #[arg(long)]
        color: Option<String>,
    },
    /// Change a label (by name or id).
    #[command(after_help = "Example:\n  taskboard label update bug --name defect --color '#f00'")]
    Update {
        label: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        color: Option<String>,
    },
    /// Delete a label (it is taken off every task).
    #[command(after_help = "Example:\n  taskboard label delete defect")]
    Delete { label: String },
}

/// Where a message is posted or read: a project's main chat, a chat by id,
/// or a task's comments.
#[derive(Debug, Clone, Args)]
#[group(required = false, multiple = false)]
pub struct Place {
    /// The main chat of this project.
    #[arg(long)]
    pub project: Option<String>,
    /// A chat by id.
    #[arg(long)]
    pub chat: Option<uuid::Uuid>,
    /// The comments of this task.
    #[arg(long)]
    pub task: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum MessageCmd {
    /// Post a message, with files attached.
    #[command(
        after_help = "Example:\n  taskboard message post --task WEB-12 'Logs attached, @bot' --attach ./build.log"
    )]
    Post {
        #[command(flatten)]
        place: Place,
        content: String,
        /// Reply to this message.
        #[arg(long)]
        reply_to: Option<uuid::Uuid>,
        /// A file to upload and attach (repeatable).
        #[arg(long = "attach", value_name = "FILE")]
        attach: Vec<PathBuf>,
        /// A member to mention (repeatable).
        #[arg(long = "mention")]
        mentions: Vec<String>,
        #[arg(long)]
        thinking: Option<String>,
        #[arg(long)]
        voice_url: Option<String>,
    },
    /// The last messages of a chat, task or thread (of all without a place).
    #[command(after_help = "Example:\n  taskboard message list --project web --limit 20")]
    List {
        #[command(flatten)]
        place: Place,
        /// Only replies to this message.
        #[arg(long)]
        parent: Option<uuid::Uuid>,
        /// 1-200, default 50.
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long)]
        offset: Option<u32>,
    },
    /// Replies to a message.
    #[command(after_help = "Example:\n  taskboard message replies 0190d6a2-…")]
    Replies { message: uuid::Uuid },
}

#[derive(Debug, Subcommand)]
pub enum FileCmd {
    /// Upload a file to a project (an existing name is replaced).
    #[command(after_help = "Example:\n  taskboard file upload web ./design.pdf --description 'v2 mockups'")]
    Upload {
        project: String,
        path: PathBuf,
        /// Store under this name instead of the file's own.
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// List a project's files.
    #[command(after_help = "Example:\n  taskboard file list web --search design")]
    List {
        project: String,
        /// Part of the file name.
        #[arg(long)]
        search: Option<String>,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Show a project file (by name or id).
    #[command(after_help = "Example:\n  taskboard file show web design.pdf")]
    Show { project: String, file: String },
    /// Download a project file.
    #[command(after_help = "Example:\n  taskboard file download web design.pdf -o ./design.pdf\n\n\
Without -o the file is saved under its own name in the current directory; -o - writes to standard output.")]
    Download {
        project: String,
        file: String,
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Set or clear a project file's description.
    #[command(after_help = "Example:\n  taskboard file describe web design.pdf 'v3 mockups'")]
    Describe {
        project: String,
        file: String,
        #[arg(required_unless_present = "clear")]
        description: Option<String>,
        #[arg(long, conflicts_with = "description")]
        clear: bool,
    },
    /// Delete a project file.
    #[command(after_help = "Example:\n  taskboard file delete web design.pdf")]
    Delete { project: String, file: String },
}

#[derive(Debug, Subcommand)]
pub enum AttachmentCmd {
    /// Download a message attachment.
    #[command(after_help = "Example:\n  taskboard attachment download 0190d6a2-… -o build.log")]
    Download {
        attachment: uuid::Uuid,
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
}

/// Parses one of the core's wire enums, listing the accepted values on error.
fn parse<T: std::str::FromStr>(s: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    s.parse::<T>().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }

    /// Every command shows an example in its help.
    #[test]
    fn every_command_has_an_example() {
        fn walk(cmd: &clap::Command, path: &str) {
            for sub in cmd.get_subcommands() {
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
}
