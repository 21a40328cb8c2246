//! `taskboard message …`, `file …` and `attachment …`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::PageArgs;

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
        /// Only messages older than this position (printed after a full
        /// page as `more: --cursor …`).
        #[arg(long)]
        cursor: Option<String>,
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
