//! Webhooks and their deliveries (admins and owners).

use super::endpoint::Handle;
use super::endpoint::{Call, Caller};
use crate::board::Board;
use crate::error::Result;
use crate::model::Ok;
use crate::webhooks::{CreatedWebhook, Delivery, Webhook};
use crate::wire::api::{
    CreateWebhook, DeleteWebhook, GetWebhook, ListDeliveries, ListWebhooks, Redeliver, RotateWebhookSecret,
    UpdateWebhook,
};

impl Handle for ListWebhooks {
    async fn handle(board: &Board, caller: &Caller, _: Call<Self>) -> Result<Vec<Webhook>> {
        board.list_webhooks(caller.actor()?).await
    }
}

impl Handle for CreateWebhook {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<CreatedWebhook> {
        board.create_webhook(caller.actor()?, call.body).await
    }
}

impl Handle for GetWebhook {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Webhook> {
        board.get_webhook(caller.actor()?, call.path).await
    }
}

impl Handle for UpdateWebhook {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Webhook> {
        board.update_webhook(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for DeleteWebhook {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.delete_webhook(caller.actor()?, call.path).await?;
        Ok(Ok::OK)
    }
}

impl Handle for RotateWebhookSecret {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<CreatedWebhook> {
        board.rotate_webhook_secret(caller.actor()?, call.path).await
    }
}

impl Handle for ListDeliveries {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Vec<Delivery>> {
        board.list_deliveries(caller.actor()?, call.path, call.query).await
    }
}

impl Handle for Redeliver {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Delivery> {
        board.redeliver(caller.actor()?, call.path.0, call.path.1).await
    }
}
