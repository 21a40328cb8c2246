//! `taskboard task …`, `step …` and `label …`.

use clap::Subcommand;
use taskboard_core::model::{LinkType, Priority, TaskStatus, TaskType};

use super::{PageArgs, parse, parse_lease};

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
    /// Comment on a task (the same as `message post --task`).
    #[command(
        after_help = "Example:\n  taskboard task comment WEB-12 'Logs attached, @bot' --attach ./build.log"
    )]
    Comment {
        /// Task key (like WEB-12) or id.
        task: String,
        /// The comment; @slug mentions a member.
        content: String,
        /// A file to upload and attach (repeatable).
        #[arg(long = "attach", value_name = "FILE")]
        attach: Vec<std::path::PathBuf>,
        /// A member to mention (repeatable).
        #[arg(long = "mention")]
        mentions: Vec<String>,
        /// Reply to this comment.
        #[arg(long)]
        reply_to: Option<uuid::Uuid>,
    },
    /// Take a task: assign it to yourself and start it.
    #[command(after_help = "Example:\n  taskboard --as bot task take WEB-12 --lease 300s")]
    Take {
        /// Task key (like WEB-12) or id.
        task: String,
        /// Hold it under a lease (`300s`, `5m`, `1h`; 10 s to 24 h) that
        /// heartbeats renew.
        #[arg(long, value_parser = parse_lease)]
        lease: Option<u32>,
    },
    /// List the tasks ready to start, most urgent first.
    #[command(after_help = "Example:\n  taskboard task ready --project web --label rust")]
    Ready {
        /// Only this project (slug or id); default: the projects you are a member of.
        #[arg(long)]
        project: Option<String>,
        /// Only tasks carrying this label.
        #[arg(long)]
        label: Option<String>,
        /// How many at most (1-1000, default 50).
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Claim the first ready task: take it atomically (nothing when no task is ready).
    #[command(
        after_help = "Example:\n  taskboard --as bot task claim --project web --label rust --lease 300s"
    )]
    Claim {
        /// Only this project (slug or id).
        #[arg(long)]
        project: Option<String>,
        /// Label names of which the task must carry one (repeatable;
        /// default: the agent's labels).
        #[arg(long = "label")]
        labels: Vec<String>,
        /// Hold it under a lease (`300s`, `5m`, `1h`).
        #[arg(long, value_parser = parse_lease)]
        lease: Option<u32>,
    },
    /// Renew the lease on a task you hold.
    #[command(after_help = "Example:\n  taskboard --as bot task heartbeat WEB-12")]
    Heartbeat {
        /// Task key (like WEB-12) or id.
        task: String,
        /// The new lease length (default: the last one).
        #[arg(long, value_parser = parse_lease)]
        lease: Option<u32>,
    },
    /// Give a task back: unassigned, `todo`, lease ended.
    #[command(after_help = "Example:\n  taskboard --as bot task release WEB-12 --reason 'out of credits'")]
    Release {
        /// Task key (like WEB-12) or id.
        task: String,
        /// Why; posted in the task's comments.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Land a task's branch on the base: a runner with the repository merges, checks and pushes it.
    #[command(
        after_help = "Examples:\n  taskboard task merge WEB-12\n  taskboard task merge WEB-12 --method squash"
    )]
    Merge {
        /// Task key (like WEB-12) or id.
        task: String,
        /// merge (default), squash or rebase.
        #[arg(long, default_value = "merge", value_parser = parse::<taskboard_core::review::MergeMethod>)]
        method: taskboard_core::review::MergeMethod,
    },
    /// Discard a task's branch: the task goes back to todo and a runner deletes the branch.
    #[command(after_help = "Example:\n  taskboard task discard WEB-12")]
    Discard {
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
    #[command(after_help = "Examples:\n  taskboard step add WEB-12 --title 'Write the migration'\n  \
taskboard step add WEB-12 'Write the migration'")]
    Add {
        /// Task key (like WEB-12) or id.
        task: String,
        /// What is to be done (or give it with --title).
        #[arg(value_name = "TITLE", required_unless_present = "title_flag", conflicts_with = "title_flag")]
        title: Option<String>,
        /// What is to be done.
        #[arg(long = "title", value_name = "TITLE")]
        title_flag: Option<String>,
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
        /// Move the step to this place (1 = first).
        #[arg(long)]
        position: Option<i64>,
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
