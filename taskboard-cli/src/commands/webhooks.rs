//! `taskboard webhook …`.

use taskboard_core::api::{
    CreateWebhook, DeleteWebhook, DeliveryQuery, GetWebhook, ListDeliveries, ListWebhooks, NewWebhook,
    Redeliver, RotateWebhookSecret, UpdateWebhook, WebhookPatch,
};
use taskboard_core::webhooks::{CreatedWebhook, Delivery, DeliveryState, Webhook};
use taskboard_core::{Perform, Result};

use crate::cli::WebhookCmd;
use crate::output::{Out, Row, short_id, when};

use super::helpers::{patch, pick_id};

/// A webhook by its whole id or the part `webhook list` shows.
async fn find_webhook<B: Perform>(b: &B, reference: &str) -> Result<uuid::Uuid> {
    match reference.parse() {
        Ok(id) => Ok(id),
        Err(_) => {
            pick_id("webhook", reference, b.call::<ListWebhooks>((), (), ()).await?.iter().map(|w| w.id))
        }
    }
}

pub(super) async fn webhook<B: Perform>(b: &B, c: WebhookCmd, out: Out) -> Result<()> {
    match c {
        WebhookCmd::Create { url, events, project, description } => {
            let project_id = match project {
                Some(p) => Some(b.find_project(&p).await?.id),
                None => None,
            };
            let events = if events.is_empty() { None } else { Some(events) };
            let new = NewWebhook { url, events, project_id, description };
            show_secret(b.call::<CreateWebhook>((), (), new).await?, out);
        }
        WebhookCmd::List => out.list(&b.call::<ListWebhooks>((), (), ()).await?),
        WebhookCmd::Show { webhook } => {
            out.item(&b.call::<GetWebhook>(find_webhook(b, &webhook).await?, (), ()).await?)
        }
        WebhookCmd::Update {
            webhook,
            url,
            events,
            project,
            all_projects,
            description,
            clear_description,
            active,
        } => {
            let webhook = find_webhook(b, &webhook).await?;
            let project_id = match project {
                Some(p) => Some(b.find_project(&p).await?.id),
                None => None,
            };
            let events = if events.is_empty() { None } else { Some(events) };
            let change = WebhookPatch {
                url: patch(url, false),
                events: patch(events, false),
                project_id: patch(project_id, all_projects),
                description: patch(description, clear_description),
                active: patch(active, false),
            };
            out.item(&b.call::<UpdateWebhook>(webhook, (), change).await?)
        }
        WebhookCmd::Delete { webhook } => {
            let webhook = find_webhook(b, &webhook).await?;
            let done = b.call::<DeleteWebhook>(webhook, (), ()).await?;
            out.done(&done, &format!("deleted webhook {webhook}"))
        }
        WebhookCmd::RotateSecret { webhook } => {
            let webhook = find_webhook(b, &webhook).await?;
            show_secret(b.call::<RotateWebhookSecret>(webhook, (), ()).await?, out);
        }
        WebhookCmd::Deliveries { webhook, limit, offset } => {
            let webhook = find_webhook(b, &webhook).await?;
            out.list(&b.call::<ListDeliveries>(webhook, DeliveryQuery { limit, offset }, ()).await?)
        }
        WebhookCmd::Redeliver { webhook, delivery } => {
            let webhook = find_webhook(b, &webhook).await?;
            let delivery = match delivery.parse() {
                Ok(id) => id,
                Err(_) => {
                    let query = DeliveryQuery { limit: Some(1000), offset: None };
                    let logged = b.call::<ListDeliveries>(webhook, query, ()).await?;
                    pick_id("delivery", &delivery, logged.iter().map(|d| d.id))?
                }
            };
            let d = b.call::<Redeliver>((webhook, delivery), (), ()).await?;
            out.done(&d, &format!("queued delivery {} (seq {}) again", d.id, d.seq))
        }
    }
    Ok(())
}

/// The secret is shown once: with --quiet it is what a script needs.
fn show_secret(created: CreatedWebhook, out: Out) {
    if out.quiet {
        out.line(&created.secret);
    } else {
        out.item(&created);
    }
}

impl Row for Webhook {
    const HEADERS: &'static [&'static str] =
        &["id", "url", "events", "project", "active", "backlog", "description"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        vec![
            if table { short_id(&self.id) } else { self.id.to_string() },
            self.url.clone(),
            self.events.join(","),
            self.project_id.map(|p| if table { short_id(&p) } else { p.to_string() }).unwrap_or_default(),
            self.active.to_string(),
            self.backlog.map(|b| b.to_string()).unwrap_or_default(),
            self.description.clone().unwrap_or_default(),
        ]
    }
}

impl Row for CreatedWebhook {
    const HEADERS: &'static [&'static str] =
        &["id", "url", "events", "project", "active", "backlog", "secret"];
    fn id(&self) -> String {
        self.webhook.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        let mut cells = self.webhook.cells(table);
        cells.pop();
        cells.push(format!("{}  (shown once)", self.secret));
        cells
    }
}

impl Row for Delivery {
    const HEADERS: &'static [&'static str] =
        &["id", "seq", "type", "state", "attempts", "last", "next_attempt", "created"];
    fn id(&self) -> String {
        self.id.to_string()
    }
    fn cells(&self, table: bool) -> Vec<String> {
        let state = match self.state {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
        };
        let last = match (&self.last_status, &self.last_error) {
            (Some(s), _) => s.to_string(),
            (None, Some(e)) => e.clone(),
            (None, None) => String::new(),
        };
        vec![
            if table { short_id(&self.id) } else { self.id.to_string() },
            self.seq.to_string(),
            self.kind.clone(),
            state.to_string(),
            self.attempts.to_string(),
            last,
            self.next_attempt_at.as_ref().map(when).unwrap_or_default(),
            when(&self.created_at),
        ]
    }
}
