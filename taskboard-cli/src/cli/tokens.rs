//! `taskboard token …`.

use clap::Subcommand;
use taskboard_core::model::Scope;
use uuid::Uuid;

use super::parse;

#[derive(Debug, Subcommand)]
pub enum TokenCmd {
    /// Create an access token with scopes (shown once).
    #[command(
        after_help = "Examples:\n  taskboard token create ci --scope read --scope tasks:write --project web --expires 30d\n  \
taskboard token create dashboard --scope read --member alice\n\n\
Scopes: read, tasks:write, messages:write, files:write, runs:write, admin. With --quiet only the \
token is printed."
    )]
    Create {
        /// What the token is for (1-100 characters).
        name: String,
        /// A scope the token has (repeatable, at least one).
        #[arg(long = "scope", required = true, value_parser = parse::<Scope>)]
        scopes: Vec<Scope>,
        /// A project the token is for (slug or id, repeatable); every
        /// project when absent.
        #[arg(long = "project")]
        projects: Vec<String>,
        /// When it stops working: a time (2027-01-31T00:00:00Z) or a
        /// duration from now (90m, 12h, 30d, 2w); never when absent.
        #[arg(long)]
        expires: Option<String>,
        /// Whose token (slug or id); yourself when absent.
        #[arg(long)]
        member: Option<String>,
    },
    /// List access tokens (never their secrets).
    #[command(after_help = "Example:\n  taskboard token list --member alice")]
    List {
        /// Whose tokens (slug or id); yours when absent.
        #[arg(long)]
        member: Option<String>,
    },
    /// Revoke an access token: it stops working at once.
    #[command(after_help = "Example:\n  taskboard token revoke 0198c2d4-…")]
    Revoke {
        /// The token's id (from `token list`).
        #[arg(value_name = "TOKEN_ID")]
        id: Uuid,
        /// Whose token (slug or id); yours when absent.
        #[arg(long)]
        member: Option<String>,
    },
}
