//! `taskboard project …`.

use clap::Subcommand;
use taskboard_core::model::ProjectStatus;

use super::{PageArgs, parse};

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
        #[command(flatten)]
        landing: LandingArgs,
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

/// How a project's work is reviewed and landed (admins and owners).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LandingArgs {
    /// The branch work lands on ("" for the repository's default).
    #[arg(long)]
    pub base_branch: Option<String>,
    /// A command a landing runs in the merged tree before it pushes ("" for none).
    #[arg(long)]
    pub check_command: Option<String>,
    /// What a failed landing does: agent (a run brings the branch up to date) or person.
    #[arg(long, value_parser = parse::<taskboard_core::review::OnConflict>)]
    pub on_conflict: Option<taskboard_core::review::OnConflict>,
    /// Reviewer agents (slugs, repeatable; "" for none): each reviews every round.
    #[arg(long = "reviewers", value_delimiter = ',')]
    pub reviewers: Option<Vec<String>>,
    /// Approvals a merge needs (0-10).
    #[arg(long)]
    pub required_approvals: Option<u32>,
    /// Rounds reviewer agents may send back before the task goes to its creator (1-20).
    #[arg(long)]
    pub max_rounds: Option<u32>,
}
