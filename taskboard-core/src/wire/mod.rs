//! The words on the wire: the bodies, queries and answers of the API, how
//! answers travel (JSON, pages, streams, files) and the records they show.
//!
//! This module is the bottom floor of the crate: it imports nothing of
//! [`crate::board`] or [`crate::api`]. The board's operations take and
//! return these types; the endpoint declarations of [`crate::api`] name
//! them, and `crate::api` re-exports them, so `taskboard_core::api::NewTask`
//! and `taskboard_core::wire::NewTask` are the same type.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;

mod etag;
pub mod event;
pub mod event_kind;
mod events;
pub mod feed;
pub mod fields;
mod imports;
pub mod json;
pub mod landing;
pub mod model;
pub mod paged;
mod reply;
mod requests;
pub mod run;
mod runs;
mod upload;
mod webhooks;
mod work;

pub use etag::{etag, etag_listed, etag_of_wire};
pub use events::*;
pub use imports::*;
pub use paged::{
    CursorKind, JsonSink, JsonStream, Paged, StreamGauge, decode_cursor, encode_cursor, json_stream,
};
pub use reply::{Download, Encoded, Redirect, Reply, ReplyKind, Upgrade};
pub use requests::*;
pub use runs::*;
pub use upload::{LateFields, Upload};
pub use webhooks::*;
pub use work::*;

use model::*;

/// A type carried as JSON in bodies, queries and answers. A marker, so the
/// other body and answer kinds ([`Upload`], [`Download`], `()`) can have
/// their own implementations.
pub trait Wire: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static {}

impl<T: Wire> Wire for Vec<T> {}

/// Declares types as [`Wire`].
macro_rules! wire {
    ($($t:ty),+ $(,)?) => { $(impl $crate::wire::Wire for $t {})+ };
}
pub(crate) use wire;

pub fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

wire!(
    // bodies and queries
    LoginRequest,
    SignInQuery,
    CallbackQuery,
    LoginCodeRequest,
    NewMember,
    MemberPatch,
    NewPassword,
    NewProject,
    ProjectPatch,
    NewProjectMember,
    TaskFilter,
    Page,
    NewTask,
    TaskPatch,
    RejectRequest,
    AssignRequest,
    NewLink,
    NewStep,
    StepPatch,
    NewLabel,
    LabelPatch,
    MessageFilter,
    NewMessage,
    FilePatch,
    MemberListQuery,
    ProjectListQuery,
    FileListQuery,
    ProjectIdQuery,
    StatusQuery,
    StreamQuery,
    ReadyQuery,
    ClaimRequest,
    LeaseRequest,
    ReleaseRequest,
    EventsQuery,
    EventPage,
    NewWebhook,
    WebhookPatch,
    DeliveryQuery,
    ImportRequest,
    RunListQuery,
    RunnerSeen,
    NewRun,
    NewMessageRun,
    RunPatch,
    NewEntries,
    RunAnswer,
    TranscriptQuery,
    // answers
    Health,
    LoginResponse,
    AuthMethods,
    Member,
    CreatedMember,
    Project,
    ProjectMember,
    Task,
    Step,
    TaskLink,
    TaskAction,
    Message,
    UploadedFile,
    ProjectFile,
    Label,
    Ok,
    Rejected,
    Watchers,
    TokenResponse,
    StatusResponse,
    ImportPlan,
);
