//! Webhooks and their deliveries (admins and owners).

use crate::endpoint::{Endpoint, Info, Method};
use crate::model::Ok;
use crate::{CreatedWebhook, Delivery, Webhook};
use crate::{DeliveryQuery, NewWebhook, WebhookPatch};
use uuid::Uuid;

/// `GET /webhooks`.
#[derive(Debug)]
pub struct ListWebhooks;

impl Endpoint for ListWebhooks {
    const INFO: Info = Info {
        name: "list_webhooks",
        method: Method::Get,
        path: "/api/v1/webhooks",
        auth: true,
        status: 200,
        summary: "List webhooks (admins and owners)",
        description: "Every webhook in creation order, without secrets.",
        errors: &[403],
    };
    type Path = ();
    type Query = ();
    type Body = ();
    type Response = Vec<Webhook>;
}

/// `POST /webhooks`.
#[derive(Debug)]
pub struct CreateWebhook;

impl Endpoint for CreateWebhook {
    const INFO: Info = Info {
        name: "create_webhook",
        method: Method::Post,
        path: "/api/v1/webhooks",
        auth: true,
        status: 201,
        summary: "Create a webhook (admins and owners)",
        description: "Every later event that the creator may see, that one of `events` matches and, with \
            `project_id`, that belongs to that project, is POSTed to `url`, signed per Standard Webhooks. \
            The answer carries the signing `secret`; no other answer but rotation shows it. A URL on a \
            loopback, private, link-local or unspecified address, or a name resolving to one, is 422 \
            unless the server allows private targets.",
        errors: &[403, 404],
    };
    type Path = ();
    type Query = ();
    type Body = NewWebhook;
    type Response = CreatedWebhook;
}

/// `GET /webhooks/{id}`.
#[derive(Debug)]
pub struct GetWebhook;

impl Endpoint for GetWebhook {
    const INFO: Info = Info {
        name: "get_webhook",
        method: Method::Get,
        path: "/api/v1/webhooks/{webhook_id}",
        auth: true,
        status: 200,
        summary: "Get a webhook (admins and owners)",
        description: "Without its secret.",
        errors: &[403, 404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Webhook;
}

/// `PATCH /webhooks/{id}`.
#[derive(Debug)]
pub struct UpdateWebhook;

impl Endpoint for UpdateWebhook {
    const INFO: Info = Info {
        name: "update_webhook",
        method: Method::Patch,
        path: "/api/v1/webhooks/{webhook_id}",
        auth: true,
        status: 200,
        summary: "Update a webhook (admins and owners)",
        description: "URL, event patterns, project, description and `active`. An inactive webhook receives \
            nothing, and the events that happen meanwhile are not delivered once it is active again.",
        errors: &[403, 404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = WebhookPatch;
    type Response = Webhook;
}

/// `DELETE /webhooks/{id}`.
#[derive(Debug)]
pub struct DeleteWebhook;

impl Endpoint for DeleteWebhook {
    const INFO: Info = Info {
        name: "delete_webhook",
        method: Method::Delete,
        path: "/api/v1/webhooks/{webhook_id}",
        auth: true,
        status: 200,
        summary: "Delete a webhook (admins and owners)",
        description: "With its pending deliveries and its delivery log.",
        errors: &[403, 404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Ok;
}

/// `POST /webhooks/{id}/rotate-secret`.
#[derive(Debug)]
pub struct RotateWebhookSecret;

impl Endpoint for RotateWebhookSecret {
    const INFO: Info = Info {
        name: "rotate_webhook_secret",
        method: Method::Post,
        path: "/api/v1/webhooks/{webhook_id}/rotate-secret",
        auth: true,
        status: 200,
        summary: "Replace a webhook's secret (admins and owners)",
        description: "The answer carries the new secret, which signs every attempt from now on; for 24 \
            hours the previous one signs beside it (two signatures in `webhook-signature`), so a \
            receiver can switch without refusing a delivery.",
        errors: &[403, 404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = CreatedWebhook;
}

/// `GET /webhooks/{id}/deliveries`.
#[derive(Debug)]
pub struct ListDeliveries;

impl Endpoint for ListDeliveries {
    const INFO: Info = Info {
        name: "list_deliveries",
        method: Method::Get,
        path: "/api/v1/webhooks/{webhook_id}/deliveries",
        auth: true,
        status: 200,
        summary: "The delivery log of a webhook (admins and owners)",
        description: "Newest seq first: each delivery's event seq and type, state (`pending`, \
            `delivered`, `failed`), attempts, last status or error and the time of its next attempt. \
            Bounded: the deliveries waiting for a retry, the last 1,000 finished ones that failed, \
            needed retries or were redelivered, and the deliveries of the last 256 batches that got \
            through at once.",
        errors: &[403, 404],
    };
    type Path = Uuid;
    type Query = DeliveryQuery;
    type Body = ();
    type Response = Vec<Delivery>;
}

/// `POST /webhooks/{id}/deliveries/{delivery_id}/redeliver`.
#[derive(Debug)]
pub struct Redeliver;

impl Endpoint for Redeliver {
    const INFO: Info = Info {
        name: "redeliver",
        method: Method::Post,
        path: "/api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
        auth: true,
        status: 200,
        summary: "Queue a delivery again (admins and owners)",
        description: "Pending and due at once, with the same `webhook-id`, and retried for another day \
            if it fails; sent like a retry, out of the webhook's seq order, holding nothing back. 409 \
            when 1,000 deliveries of the webhook are already waiting for a retry.",
        errors: &[403, 404, 409],
    };
    type Path = (Uuid, Uuid);
    type Query = ();
    type Body = ();
    type Response = Delivery;
}
