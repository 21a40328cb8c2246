//! `taskboard review …`: an agent's changes and their reviews.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ReviewCmd {
    /// Show a task's changes (files with counts, the diff, coloured on a terminal) and its reviews.
    #[command(
        after_help = "Examples:\n  taskboard review show WEB-12\n  taskboard review show WEB-12 --files"
    )]
    Show {
        /// Task key (like WEB-12) or id.
        task: String,
        /// Only the files and the reviews, not the diff.
        #[arg(long)]
        files: bool,
    },
    /// Approve a task's changes.
    #[command(after_help = "Example:\n  taskboard review approve WEB-12 --body 'looks right'")]
    Approve {
        /// Task key (like WEB-12) or id.
        task: String,
        /// What you say of the whole change.
        #[arg(long, default_value = "")]
        body: String,
        /// A comment on a line: PATH:LINE=TEXT (PATH:LINE:old=TEXT for a removed line). Repeatable.
        #[arg(long = "comment", value_name = "PATH:LINE=TEXT")]
        comments: Vec<String>,
    },
    /// Ask for changes: the task's agent gets another round with your body and comments.
    #[command(
        after_help = "Example:\n  taskboard review request-changes WEB-12 --body 'handle the empty list' \\\n    --comment 'src/list.rs:41=this panics on []'"
    )]
    RequestChanges {
        /// Task key (like WEB-12) or id.
        task: String,
        /// What to change (this or a --comment is needed).
        #[arg(long, default_value = "")]
        body: String,
        /// A comment on a line: PATH:LINE=TEXT (PATH:LINE:old=TEXT for a removed line). Repeatable.
        #[arg(long = "comment", value_name = "PATH:LINE=TEXT")]
        comments: Vec<String>,
    },
    /// Comment on a task's changes without a verdict.
    #[command(after_help = "Example:\n  taskboard review comment WEB-12 --comment 'src/lib.rs:12=why this?'")]
    Comment {
        /// Task key (like WEB-12) or id.
        task: String,
        /// What you say of the whole change (this or a --comment is needed).
        #[arg(long, default_value = "")]
        body: String,
        /// A comment on a line: PATH:LINE=TEXT (PATH:LINE:old=TEXT for a removed line). Repeatable.
        #[arg(long = "comment", value_name = "PATH:LINE=TEXT")]
        comments: Vec<String>,
    },
}
