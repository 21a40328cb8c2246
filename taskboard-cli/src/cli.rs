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
The password is read from --password, TASKBOARD_PASSWORD, the terminal (not echoed) or the first \
line of standard input.\n\
The token is stored in $XDG_CONFIG_HOME/taskboard/credentials.json (mode 0600), or the file \
named by TASKBOARD_CREDENTIALS.")]
    Login {
        /// Slug or name of the member.
        #[arg(long)]
        login: String,
        /// Password; without it, typed on the terminal (not echoed) or the first
        /// line of standard input.
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
    Export {
        /// The archive directory: absent or empty.
        dir: PathBuf,
    },
    /// Create a new board in --data-dir from an archive.
    #[command(after_help = "Example:\n  taskboard --data-dir ./restored import ./board-archive")]
    Import {
        /// An archive directory written by `export` or `backup`.
        dir: PathBuf,
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
    Show {
        /// Member slug or id.
        member: String,
    },
    /// Create a member (agents get a token, shown once).
    #[command(
        after_help = "Example:\n  taskboard member create --name 'Build bot' --slug bot --type agent --agent-label ci"
    )]
    Create {
        /// Display name.
        #[arg(long)]
        name: String,
        /// Slug: lowercase letters, digits and hyphens; unique.
        #[arg(long)]
        slug: String,
        /// human or agent.
        #[arg(long = "type", default_value = "agent", value_parser = parse::<MemberType>)]
        kind: MemberType,
        /// owner, admin or member.
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
        /// Member slug or id.
        member: String,
        /// New display name.
        #[arg(long)]
        name: Option<String>,
        /// New slug.
        #[arg(long)]
        slug: Option<String>,
        /// New role: owner, admin or member.
        #[arg(long, value_parser = parse::<Role>)]
        role: Option<Role>,
        /// New status: online, offline or busy.
        #[arg(long, value_parser = parse::<MemberStatus>)]
        status: Option<MemberStatus>,
        /// URL of an avatar picture.
        #[arg(long, conflicts_with = "clear_avatar")]
        avatar_url: Option<String>,
        /// Remove the avatar.
        #[arg(long)]
        clear_avatar: bool,
        /// The whole agent configuration as JSON (replaces the old one).
        #[arg(long, value_name = "JSON")]
        agent_config: Option<String>,
    },
    /// Deactivate a member (owners only).
    #[command(after_help = "Example:\n  taskboard member delete bot")]
    Delete {
        /// Member slug or id.
        member: String,
    },
    /// Issue a new agent token (the old one stops working).
    #[command(after_help = "Example:\n  taskboard member regenerate-token bot")]
    RegenerateToken {
        /// Member slug or id.
        member: String,
    },
    /// Revoke an agent token.
    #[command(after_help = "Example:\n  taskboard member revoke-token bot")]
    RevokeToken {
        /// Member slug or id.
        member: String,
    },
    /// Set a human member's password.
    #[command(
        after_help = "Example:\n  taskboard member set-password alice --password 'correct horse battery'\n\n\
Without --password the password is typed on the terminal (not echoed), or read from the first \
line of standard input."
    )]
    SetPassword {
        /// Member slug or id.
        member: String,
        /// The new password (8-1024 characters); without it, typed on the
        /// terminal (not echoed) or the first line of standard input.
        #[arg(long, env = "TASKBOARD_NEW_PASSWORD", hide_env_values = true)]
        password: Option<String>,
    },
    /// Set your own status (online, offline, busy).
    #[command(after_help = "Example:\n  taskboard member status busy")]
    Status {
        /// online, offline or busy.
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
    /// Chat messages the agent is told about: all or mentions.
    #[arg(long, value_parser = parse::<Listen>)]
    pub chat_listen: Option<Listen>,
    /// Task comments the agent is told about: all or mentions.
    #[arg(long, value_parser = parse::<Listen>)]
    pub task_listen: Option<Listen>,
    /// The agent's instructions.
    #[arg(long)]
    pub prompt: Option<String>,
    /// The model the agent runs.
    #[arg(long)]
    pub model: Option<String>,
    /// The whole agent configuration as JSON (instead of the flags above).
    #[arg(long, value_name = "JSON")]
    pub agent_config: Option<String>,
}

#[derive(Debug, Clone, Copy, Args)]
pub struct PageArgs {
    /// At most this many items (1-1000).
    #[arg(long)]
    pub limit: Option<u32>,
    /// Skip this many items.
    #[arg(long)]
    pub offset: Option<u32>,
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
    Show {
        /// Project slug or id.
        project: String,
    },
    /// Create a project with its main chat.
    #[command(
        after_help = "Example:\n  taskboard project create --name 'Web app' --slug web --repo https://git.example/web.git"
    )]
    Create {
        /// Display name.
        #[arg(long)]
        name: String,
        /// Slug; upper-cased, it is the prefix of task keys (WEB-12).
        #[arg(long)]
        slug: String,
        /// What the project is about.
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
        /// Project slug or id.
        project: String,
        /// New display name.
        #[arg(long)]
        name: Option<String>,
        /// New slug.
        #[arg(long)]
        slug: Option<String>,
        /// New description.
        #[arg(long, conflicts_with = "clear_description")]
        description: Option<String>,
        /// Remove the description.
        #[arg(long)]
        clear_description: bool,
        /// Repository URLs (repeatable; replaces the list).
        #[arg(long = "repo")]
        repo_urls: Vec<String>,
        /// Remove every repository URL.
        #[arg(long, conflicts_with = "repo_urls")]
        clear_repos: bool,
        /// active or archived.
        #[arg(long, value_parser = parse::<ProjectStatus>)]
        status: Option<ProjectStatus>,
        /// Assign new tasks to agents by label: true or false.
        #[arg(long)]
        auto_assign: Option<bool>,
    },
    /// Delete a project and everything in it (owners only).
    #[command(after_help = "Example:\n  taskboard project delete old-site")]
    Delete {
        /// Project slug or id.
        project: String,
    },
    /// List the members of a project.
    #[command(after_help = "Example:\n  taskboard project members web")]
    Members {
        /// Project slug or id.
        project: String,
    },
    /// Add a member to a project.
    #[command(after_help = "Example:\n  taskboard project add-member web bot")]
    AddMember {
        /// Project slug or id.
        project: String,
        /// Member slug or id.
        member: String,
    },
    /// Remove a member from a project.
    #[command(after_help = "Example:\n  taskboard project remove-member web bot")]
    RemoveMember {
        /// Project slug or id.
        project: String,
        /// Member slug or id.
        member: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TaskCmd {
    /// List tasks (filters combine with AND).
    #[command(
        after_help = "Example:\n  taskboard task list --project web --status in_progress --assignee bot"
    )]
    List {
        /// Only tasks of this project (slug or id).
        #[arg(long)]
        project: Option<String>,
        /// Only this status: backlog, todo, in_progress, review or done (hyphens work for underscores).
        #[arg(long, value_parser = parse::<TaskStatus>)]
        status: Option<TaskStatus>,
        /// Only tasks assigned to this member (slug or id).
        #[arg(long)]
        assignee: Option<String>,
        /// Only tasks this member reviews (slug or id).
        #[arg(long)]
        reviewer: Option<String>,
        /// A label name.
        #[arg(long)]
        label: Option<String>,
        /// A task key or part of the title.
        #[arg(long, visible_alias = "query")]
        q: Option<String>,
        /// Only this type: task, bug or epic.
        #[arg(long = "type", value_parser = parse::<TaskType>)]
        kind: Option<TaskType>,
        /// Only this priority: low, medium, high or urgent.
        #[arg(long, value_parser = parse::<Priority>)]
        priority: Option<Priority>,
        /// Only subtasks of this task (key or id).
        #[arg(long)]
        parent: Option<String>,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Show a task (key like WEB-12, or id).
    #[command(after_help = "Example:\n  taskboard task show WEB-12")]
    Show {
        /// Task key (like WEB-12) or id.
        task: String,
    },
    /// Create a task.
    #[command(
        after_help = "Example:\n  taskboard task create --project web --title 'Fix login' --type bug --priority high --label auth"
    )]
    Create {
        /// Project slug or id.
        #[arg(long)]
        project: String,
        /// Title.
        #[arg(long)]
        title: String,
        /// Description.
        #[arg(long)]
        description: Option<String>,
        /// task, bug or epic (default task).
        #[arg(long = "type", value_parser = parse::<TaskType>)]
        kind: Option<TaskType>,
        /// backlog, todo, in_progress, review or done (default backlog).
        #[arg(long, value_parser = parse::<TaskStatus>)]
        status: Option<TaskStatus>,
        /// low, medium, high or urgent (default medium).
        #[arg(long, value_parser = parse::<Priority>)]
        priority: Option<Priority>,
        /// Label name (repeatable).
        #[arg(long = "label")]
        labels: Vec<String>,
        /// Parent task (key or id), in the same project.
        #[arg(long)]
        parent: Option<String>,
        /// Assignee (slug or id).
        #[arg(long)]
        assignee: Option<String>,
        /// Reviewer (slug or id).
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
        /// Task key (like WEB-12) or id.
        task: String,
        /// New title.
        #[arg(long)]
        title: Option<String>,
        /// New description.
        #[arg(long, conflicts_with = "clear_description")]
        description: Option<String>,
        /// Remove the description.
        #[arg(long)]
        clear_description: bool,
        /// New type: task, bug or epic.
        #[arg(long = "type", value_parser = parse::<TaskType>)]
        kind: Option<TaskType>,
        /// New status: backlog, todo, in_progress, review or done.
        #[arg(long, value_parser = parse::<TaskStatus>)]
        status: Option<TaskStatus>,
        /// New priority: low, medium, high or urgent.
        #[arg(long, value_parser = parse::<Priority>)]
        priority: Option<Priority>,
        /// Label names (repeatable; replaces the list).
        #[arg(long = "label")]
        labels: Vec<String>,
        /// Remove every label.
        #[arg(long, conflicts_with = "labels")]
        clear_labels: bool,
        /// New assignee (slug or id).
        #[arg(long, conflicts_with = "clear_assignee")]
        assignee: Option<String>,
        /// Unassign the task.
        #[arg(long)]
        clear_assignee: bool,
        /// New reviewer (slug or id).
        #[arg(long, conflicts_with = "clear_reviewer")]
        reviewer: Option<String>,
        /// Remove the reviewer.
        #[arg(long)]
        clear_reviewer: bool,
        /// New parent task (key or id).
        #[arg(long, conflicts_with = "clear_parent")]
        parent: Option<String>,
        /// Make it a top-level task.
        #[arg(long)]
        clear_parent: bool,
        /// New position among its column's tasks (lower comes first).
        #[arg(long, allow_negative_numbers = true)]
        position: Option<f64>,
    },
    /// Delete a task.
    #[command(after_help = "Example:\n  taskboard task delete WEB-12")]
    Delete {
        /// Task key (like WEB-12) or id.
        task: String,
    },
    /// Take a task: assign it to yourself and start it.
    #[command(after_help = "Example:\n  taskboard --as bot task take WEB-12")]
    Take {
        /// Task key (like WEB-12) or id.
        task: String,
    },
    /// Send a task back to the backlog with a reason.
    #[command(after_help = "Example:\n  taskboard task reject WEB-12 --reason 'needs a design first'")]
    Reject {
        /// Task key (like WEB-12) or id.
        task: String,
        /// Why it goes back; posted in the task's comments.
        #[arg(long)]
        reason: String,
    },
    /// Assign a task to a member.
    #[command(after_help = "Example:\n  taskboard task assign WEB-12 bot")]
    Assign {
        /// Task key (like WEB-12) or id.
        task: String,
        /// The new assignee (slug or id).
        member: String,
    },
    /// Watch a task.
    #[command(after_help = "Example:\n  taskboard task watch WEB-12")]
    Watch {
        /// Task key (like WEB-12) or id.
        task: String,
    },
    /// Stop watching a task.
    #[command(after_help = "Example:\n  taskboard task unwatch WEB-12")]
    Unwatch {
        /// Task key (like WEB-12) or id.
        task: String,
    },
    /// Put labels on a task or take them off.
    #[command(subcommand)]
    Label(TaskLabelCmd),
    /// Link a task to another (blocks, depends_on, relates_to).
    #[command(after_help = "Example:\n  taskboard task link WEB-12 WEB-7 --type depends_on")]
    Link {
        /// The task the link goes from (key or id).
        task: String,
        /// The task the link goes to (key or id).
        target: String,
        /// blocks, depends_on or relates_to (hyphens work for underscores).
        #[arg(long = "type", default_value = "relates_to", value_parser = parse::<LinkType>)]
        link_type: LinkType,
    },
    /// The links of a task, both directions.
    #[command(after_help = "Example:\n  taskboard task links WEB-12")]
    Links {
        /// Task key (like WEB-12) or id.
        task: String,
    },
    /// Delete a link of a task.
    #[command(after_help = "Example:\n  taskboard task unlink WEB-12 0190d6a2-…")]
    Unlink {
        /// Task key (like WEB-12) or id.
        task: String,
        /// The link's id, or its short id shown by `task links`.
        link: String,
    },
    /// The audit log of a task.
    #[command(after_help = "Example:\n  taskboard task actions WEB-12")]
    Actions {
        /// Task key (like WEB-12) or id.
        task: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TaskLabelCmd {
    /// Put a label on a task.
    #[command(after_help = "Example:\n  taskboard task label add WEB-12 bug")]
    Add {
        /// Task key (like WEB-12) or id.
        task: String,
        /// Label name (any case) or id.
        label: String,
    },
    /// Take a label off a task.
    #[command(after_help = "Example:\n  taskboard task label remove WEB-12 bug")]
    Remove {
        /// Task key (like WEB-12) or id.
        task: String,
        /// Label name (any case) or id.
        label: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum StepCmd {
    /// List the steps of a task.
    #[command(after_help = "Example:\n  taskboard step list WEB-12")]
    List {
        /// Task key (like WEB-12) or id.
        task: String,
    },
    /// Add a step to a task.
    #[command(after_help = "Example:\n  taskboard step add WEB-12 'Write the migration'")]
    Add {
        /// Task key (like WEB-12) or id.
        task: String,
        /// What is to be done.
        title: String,
    },
    /// Change a step (by id or its number in `step list`).
    #[command(
        after_help = "Example:\n  taskboard step update WEB-12 2 --title 'Write both migrations' --done false"
    )]
    Update {
        /// Task key (like WEB-12) or id.
        task: String,
        /// The step's number in `step list` (1 = first) or its id.
        step: String,
        /// New title.
        #[arg(long)]
        title: Option<String>,
        /// true or false.
        #[arg(long)]
        done: Option<bool>,
    },
    /// Mark a step done.
    #[command(after_help = "Example:\n  taskboard step done WEB-12 1")]
    Done {
        /// Task key (like WEB-12) or id.
        task: String,
        /// The step's number in `step list` (1 = first) or its id.
        step: String,
    },
    /// Delete a step.
    #[command(after_help = "Example:\n  taskboard step delete WEB-12 1")]
    Delete {
        /// Task key (like WEB-12) or id.
        task: String,
        /// The step's number in `step list` (1 = first) or its id.
        step: String,
    },
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
        /// Label name, unique regardless of case.
        name: String,
        /// Colour as #RGB or #RRGGBB.
        #[arg(long)]
        color: Option<String>,
    },
    /// Change a label (by name or id).
    #[command(after_help = "Example:\n  taskboard label update bug --name defect --color '#f00'")]
    Update {
        /// Label name (any case) or id.
        label: String,
        /// New name.
        #[arg(long)]
        name: Option<String>,
        /// New colour as #RGB or #RRGGBB.
        #[arg(long)]
        color: Option<String>,
    },
    /// Delete a label (it is taken off every task).
    #[command(after_help = "Example:\n  taskboard label delete defect")]
    Delete {
        /// Label name (any case) or id.
        label: String,
    },
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
        /// The message; @slug mentions a member.
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
        /// The author's reasoning, kept beside the message (agents).
        #[arg(long)]
        thinking: Option<String>,
        /// URL of a voice recording of the message.
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
        /// Skip this many of the newest messages.
        #[arg(long)]
        offset: Option<u32>,
    },
    /// Replies to a message.
    #[command(after_help = "Example:\n  taskboard message replies 0190d6a2-…")]
    Replies {
        /// Id of the message (in `message list --quiet` or `--json`).
        message: uuid::Uuid,
    },
}

#[derive(Debug, Subcommand)]
pub enum FileCmd {
    /// Upload a file to a project (an existing name is replaced).
    #[command(after_help = "Example:\n  taskboard file upload web ./design.pdf --description 'v2 mockups'")]
    Upload {
        /// Project slug or id.
        project: String,
        /// The local file to upload.
        path: PathBuf,
        /// Store under this name instead of the file's own.
        #[arg(long)]
        name: Option<String>,
        /// What the file is.
        #[arg(long)]
        description: Option<String>,
    },
    /// List a project's files.
    #[command(after_help = "Example:\n  taskboard file list web --search design")]
    List {
        /// Project slug or id.
        project: String,
        /// Part of the file name.
        #[arg(long)]
        search: Option<String>,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Show a project file (by name or id).
    #[command(after_help = "Example:\n  taskboard file show web design.pdf")]
    Show {
        /// Project slug or id.
        project: String,
        /// File name (exact) or id.
        file: String,
    },
    /// Download a project file.
    #[command(after_help = "Example:\n  taskboard file download web design.pdf -o ./design.pdf\n\n\
Without -o the file is saved under its own name in the current directory; -o - writes to standard output.")]
    Download {
        /// Project slug or id.
        project: String,
        /// File name (exact) or id.
        file: String,
        /// Where to save: a file, a directory, or - for standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Set or clear a project file's description.
    #[command(after_help = "Example:\n  taskboard file describe web design.pdf 'v3 mockups'")]
    Describe {
        /// Project slug or id.
        project: String,
        /// File name (exact) or id.
        file: String,
        /// The new description.
        #[arg(required_unless_present = "clear")]
        description: Option<String>,
        /// Remove the description.
        #[arg(long, conflicts_with = "description")]
        clear: bool,
    },
    /// Delete a project file.
    #[command(after_help = "Example:\n  taskboard file delete web design.pdf")]
    Delete {
        /// Project slug or id.
        project: String,
        /// File name (exact) or id.
        file: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AttachmentCmd {
    /// Download a message attachment.
    #[command(after_help = "Example:\n  taskboard attachment download 0190d6a2-… -o build.log")]
    Download {
        /// Id of the attachment (in `message list --json`, or `message post` output).
        attachment: uuid::Uuid,
        /// Where to save: a file, a directory, or - for standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
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
