//! Chat messages, task comments, attachments and labels.

use super::endpoint::{Call, Caller, Download};
use super::endpoint::{Handle, ListHandler};
use crate::board::{Board, List, Resource};
use crate::error::Result;
use crate::model::{Label, Message, Ok, UploadedFile};
use crate::wire::Paged;
use crate::wire::api::{
    CreateLabel, DeleteLabel, DownloadAttachment, GetLabel, ListLabels, ListMessages, ListReplies,
    PostMessage, UpdateLabel, UploadAttachment,
};

impl Handle for ListMessages {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Paged<Message>> {
        board.list_messages(call.query).await
    }
}

impl Handle for PostMessage {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Message> {
        board.post_message(caller.actor()?, call.body).await
    }
}

impl ListHandler for ListReplies {
    fn list(board: &Board, _: &Caller, id: Self::Path, query: Self::Query) -> Result<List<Message>> {
        Ok(board.replies(id, query))
    }
}

impl Handle for UploadAttachment {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<UploadedFile> {
        let upload = call.body;
        board.upload(caller.actor()?, &upload.filename, upload.mime_type.as_deref(), upload.content).await
    }
}

impl Handle for DownloadAttachment {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Download> {
        board.open_attachment(call.path).await
    }
}

impl ListHandler for ListLabels {
    fn list(board: &Board, _: &Caller, _: Self::Path, query: Self::Query) -> Result<List<Label>> {
        Ok(board.list_labels(query))
    }
}

impl Handle for CreateLabel {
    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Label> {
        board.create_label(caller.actor()?, call.body).await
    }
}

impl Handle for GetLabel {
    async fn handle(board: &Board, _: &Caller, call: Call<Self>) -> Result<Label> {
        board.get_label(call.path).await
    }
}

impl Handle for UpdateLabel {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Label(path))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Label> {
        board.update_label(caller.actor()?, call.path, call.body).await
    }
}

impl Handle for DeleteLabel {
    fn resource(path: Self::Path) -> Option<Resource> {
        Some(Resource::Label(path))
    }

    async fn handle(board: &Board, caller: &Caller, call: Call<Self>) -> Result<Ok> {
        board.delete_label(caller.actor()?, call.path).await?;
        Ok(Ok::OK)
    }
}
