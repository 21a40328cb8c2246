//! `taskboard webhook …`.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum WebhookCmd {
    /// Create a webhook (admins and owners); its secret is shown once.
    #[command(
        after_help = "Example:\n  taskboard webhook create --url https://ci.example/hook --event 'task.*' --project web\n\n\
With --quiet only the secret is printed."
    )]
    Create {
        /// Where deliveries are POSTed (http or https, a public address
        /// unless the server allows private ones).
        #[arg(long)]
        url: String,
        /// Event type, or a prefix ending in `*` (repeatable; every event
        /// when absent).
        #[arg(long = "event")]
        events: Vec<String>,
        /// Only the events of this project (slug or id).
        #[arg(long)]
        project: Option<String>,
        /// What the webhook is for.
        #[arg(long)]
        description: Option<String>,
    },
    /// List webhooks.
    #[command(after_help = "Example:\n  taskboard webhook list")]
    List,
    /// Show a webhook.
    #[command(after_help = "Example:\n  taskboard webhook show 01a2…")]
    Show {
        /// Webhook id, whole or as `webhook list` shows it.
        webhook: String,
    },
    /// Change a webhook.
    #[command(after_help = "Example:\n  taskboard webhook update 01a2… --active false")]
    Update {
        /// Webhook id, whole or as `webhook list` shows it.
        webhook: String,
        /// New URL.
        #[arg(long)]
        url: Option<String>,
        /// Event types or prefixes (repeatable; replaces the list).
        #[arg(long = "event")]
        events: Vec<String>,
        /// Only the events of this project (slug or id).
        #[arg(long, conflicts_with = "all_projects")]
        project: Option<String>,
        /// The events of every project.
        #[arg(long)]
        all_projects: bool,
        /// New description.
        #[arg(long, conflicts_with = "clear_description")]
        description: Option<String>,
        /// Remove the description.
        #[arg(long)]
        clear_description: bool,
        /// true or false; an inactive webhook misses what happens meanwhile.
        #[arg(long)]
        active: Option<bool>,
    },
    /// Delete a webhook with its deliveries.
    #[command(after_help = "Example:\n  taskboard webhook delete 01a2…")]
    Delete {
        /// Webhook id, whole or as `webhook list` shows it.
        webhook: String,
    },
    /// Replace a webhook's secret; the new one is shown once.
    #[command(after_help = "Example:\n  taskboard webhook rotate-secret 01a2… --quiet")]
    RotateSecret {
        /// Webhook id, whole or as `webhook list` shows it.
        webhook: String,
    },
    /// The delivery log of a webhook, newest first.
    #[command(after_help = "Example:\n  taskboard webhook deliveries 01a2… --limit 20")]
    Deliveries {
        /// Webhook id, whole or as `webhook list` shows it.
        webhook: String,
        /// At most this many (1-1000, 50 when absent).
        #[arg(long)]
        limit: Option<u32>,
        /// Skip this many of the newest.
        #[arg(long)]
        offset: Option<u32>,
    },
    /// Queue a delivery again.
    #[command(after_help = "Example:\n  taskboard webhook redeliver 01a2… 01a3…")]
    Redeliver {
        /// Webhook id, whole or as `webhook list` shows it.
        webhook: String,
        /// Delivery id (the `webhook-id` header receivers saw).
        /// Whole or as `webhook deliveries` shows it.
        delivery: String,
    },
}
