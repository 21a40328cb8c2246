//! `taskboard member …`.

use clap::{Args, Subcommand};
use taskboard_core::model::{Listen, MemberStatus, MemberType, Role};

use super::{PageArgs, parse};

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
    /// Create a person or an agent (an agent gets a token, a person a
    /// password with --password-generate; each shown once).
    #[command(
        after_help = "Examples:\n  taskboard member create --name 'Alice Smith' --slug alice --type human --password-generate\n  \
taskboard member create --name 'Build bot' --slug bot --type agent --agent-label ci"
    )]
    Create {
        /// Display name.
        #[arg(long)]
        name: String,
        /// Slug: lowercase letters, digits and hyphens; unique.
        #[arg(long)]
        slug: String,
        /// human (a person, who signs in) or agent (a program with a token).
        #[arg(long = "type", value_name = "human|agent", required = true, value_parser = parse::<MemberType>)]
        kind: MemberType,
        /// owner, admin or member.
        #[arg(long, default_value = "member", value_parser = parse::<Role>)]
        role: Role,
        /// Give a person a generated password, shown once.
        #[arg(long)]
        password_generate: bool,
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
        /// Correct the type (human or agent), while the member has done
        /// nothing yet.
        #[arg(long = "type", value_name = "human|agent", value_parser = parse::<MemberType>)]
        kind: Option<MemberType>,
        /// URL of an avatar picture.
        #[arg(long, conflicts_with = "clear_avatar")]
        avatar_url: Option<String>,
        /// Remove the avatar.
        #[arg(long)]
        clear_avatar: bool,
        /// The email single sign-on matches at the member's first sign-in
        /// (admins and owners only).
        #[arg(long, conflicts_with = "clear_email")]
        email: Option<String>,
        /// Remove the email.
        #[arg(long)]
        clear_email: bool,
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
    #[command(after_help = "Examples:\n  taskboard member set-password alice --generate\n  \
taskboard member set-password alice --password 'correct horse battery'\n\n\
Without --password or --generate the password is typed on the terminal (not echoed), or read \
from the first line of standard input.")]
    SetPassword {
        /// Member slug or id.
        member: String,
        /// The new password (8-1024 characters); without it, typed on the
        /// terminal (not echoed) or the first line of standard input.
        #[arg(long, env = "TASKBOARD_NEW_PASSWORD", hide_env_values = true, conflicts_with = "generate")]
        password: Option<String>,
        /// Generate the password and print it once.
        #[arg(long)]
        generate: bool,
    },
    /// End every login of a member (yourself, or anyone as an owner);
    /// its access tokens stay until revoked.
    #[command(after_help = "Example:\n  taskboard member logout-everywhere alice")]
    LogoutEverywhere {
        /// Member slug or id.
        member: String,
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
    /// Chat messages the agent is told about: mentions (the default) or all.
    #[arg(long, value_parser = parse::<Listen>)]
    pub chat_listen: Option<Listen>,
    /// Task comments the agent is told about: mentions (the default) or all.
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
