//! Chat messages, task comments, attachments and labels.

use crate::endpoint::{Endpoint, Info, ListEndpoint, Method};
use crate::model::{Label, Message, Ok, UploadedFile};
use crate::{Download, Upload};
use crate::{LabelPatch, MessageFilter, NewLabel, NewMessage, Page, Paged};
use uuid::Uuid;

/// `GET /messages`.
#[derive(Debug)]
pub struct ListMessages;

impl Endpoint for ListMessages {
    const INFO: Info = Info {
        name: "list_messages",
        method: Method::Get,
        path: "/api/v1/messages",
        auth: true,
        status: 200,
        summary: "The last messages of a chat, task or thread",
        description: "The last `limit` (1–200, default 50) messages in chronological order, skipping the \
            `offset` newest; of a chat (`chat_id`), a task's comments (`task_id`) or a thread \
            (`parent_id`), else of all. A full page comes with a `Link: <…>; rel=\"next\"` header \
            whose `cursor` gives the older messages before it.",
        errors: &[404],
    };
    type Path = ();
    type Query = MessageFilter;
    type Body = ();
    type Response = Paged<Message>;
}

/// `POST /messages`.
#[derive(Debug)]
pub struct PostMessage;

impl Endpoint for PostMessage {
    const SCOPE: crate::model::Scope = crate::model::Scope::MessagesWrite;
    const INFO: Info = Info {
        name: "post_message",
        method: Method::Post,
        path: "/api/v1/messages",
        auth: true,
        status: 201,
        summary: "Post a message or comment",
        description: "To a chat (`chat_id`) or a task (`task_id`), optionally as a reply (`parent_id`, in the \
            same place). `@slug` words naming active members are added to `mentions`. Attachments name \
            uploads not yet bound to a message. Content may be empty only with attachments.",
        errors: &[400, 404],
    };
    type Path = ();
    type Query = ();
    type Body = NewMessage;
    type Response = Message;
}

/// `GET /messages/{id}/replies`.
#[derive(Debug)]
pub struct ListReplies;

impl ListEndpoint for ListReplies {
    const INFO: Info = Info {
        name: "list_replies",
        method: Method::Get,
        path: "/api/v1/messages/{message_id}/replies",
        auth: true,
        status: 200,
        summary: "Replies to a message",
        description: "Oldest first.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = Page;
    type Item = Message;
}

/// `POST /upload` (multipart: `file`).
#[derive(Debug)]
pub struct UploadAttachment;

impl Endpoint for UploadAttachment {
    const SCOPE: crate::model::Scope = crate::model::Scope::FilesWrite;
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "upload",
        method: Method::Post,
        path: "/api/v1/upload",
        auth: true,
        status: 200,
        summary: "Upload a file to attach to a message",
        description: "Streams the `file` part to storage and answers its `file_id`, to name in a message's \
            `attachments`. Over the upload limit is 413 and nothing is kept; an upload never attached is \
            removed after a day.",
        errors: &[],
    };
    type Path = ();
    type Query = ();
    type Body = Upload;
    type Response = UploadedFile;
}

/// `GET /attachments/{id}/download`.
#[derive(Debug)]
pub struct DownloadAttachment;

impl Endpoint for DownloadAttachment {
    const INFO: Info = Info {
        name: "download_attachment",
        method: Method::Get,
        path: "/api/v1/attachments/{attachment_id}/download",
        auth: true,
        status: 200,
        summary: "Download an attachment",
        description: "As a project file download; credentials may be given as `?token=`.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Download;
}

/// `GET /labels`.
#[derive(Debug)]
pub struct ListLabels;

impl ListEndpoint for ListLabels {
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "list_labels",
        method: Method::Get,
        path: "/api/v1/labels",
        auth: true,
        status: 200,
        summary: "List labels",
        description: "Every label, by name.",
        errors: &[],
    };
    type Path = ();
    type Query = Page;
    type Item = Label;
}

/// `POST /labels`.
#[derive(Debug)]
pub struct CreateLabel;

impl Endpoint for CreateLabel {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "create_label",
        method: Method::Post,
        path: "/api/v1/labels",
        auth: true,
        status: 201,
        summary: "Create a label",
        description: "Names are unique in any case (`Bug` and `bug` are one label: 409).",
        errors: &[409],
    };
    type Path = ();
    type Query = ();
    type Body = NewLabel;
    type Response = Label;
}

/// `GET /labels/{id}`.
#[derive(Debug)]
pub struct GetLabel;

impl Endpoint for GetLabel {
    const INFO: Info = Info {
        name: "get_label",
        method: Method::Get,
        path: "/api/v1/labels/{label_id}",
        auth: true,
        status: 200,
        summary: "Get a label",
        description: "The label's id, name and color.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Label;
}

/// `PATCH /labels/{id}`.
#[derive(Debug)]
pub struct UpdateLabel;

impl Endpoint for UpdateLabel {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "update_label",
        method: Method::Patch,
        path: "/api/v1/labels/{label_id}",
        auth: true,
        status: 200,
        summary: "Update a label",
        description: "A new name is renamed on every task that carries the label.",
        errors: &[404, 409],
    };
    type Path = Uuid;
    type Query = ();
    type Body = LabelPatch;
    type Response = Label;
    const CONDITIONAL: bool = true;
}

/// `DELETE /labels/{id}`.
#[derive(Debug)]
pub struct DeleteLabel;

impl Endpoint for DeleteLabel {
    const SCOPE: crate::model::Scope = crate::model::Scope::TasksWrite;
    const BOARD_WIDE: bool = true;
    const INFO: Info = Info {
        name: "delete_label",
        method: Method::Delete,
        path: "/api/v1/labels/{label_id}",
        auth: true,
        status: 200,
        summary: "Delete a label",
        description: "The label leaves every task that carried it.",
        errors: &[404],
    };
    type Path = Uuid;
    type Query = ();
    type Body = ();
    type Response = Ok;
    const CONDITIONAL: bool = true;
}
