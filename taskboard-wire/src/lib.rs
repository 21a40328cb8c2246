//! The words on the wire: the bodies, queries and answers of Taskboard's
//! API, how answers travel (JSON, pages, streams, files), the records
//! they show, the events, and the one error type every layer answers
//! with.
//!
//! This crate is the bottom floor of the board: it knows nothing of
//! storage, credentials or HTTP, so a client (the typed HTTP client, an
//! agent, a script in Rust) can depend on it alone. `taskboard-core`
//! re-exports it as `taskboard_core::wire`, and its `api` module
//! re-exports the types again beside the endpoint declarations that
//! name them, so `taskboard_core::api::NewTask` and
//! `taskboard_wire::NewTask` are the same type.

#![forbid(unsafe_code)]

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub mod access_tokens;
pub mod api;
mod backups;
pub mod body;
pub mod endpoint;
pub mod error;
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
pub mod perform;
mod reply;
mod requests;
pub mod review;
pub mod run;
mod runs;
mod sign_in;
mod upload;
pub mod validate;
mod webhooks;
mod work;

pub use api::*;
pub use backups::{ArchiveSummary, BackupRequest};
pub use body::{BodyKind, Optional, QueryParams, RawBody, RequestBody};
pub use endpoint::{Call, Endpoint, Info, ListEndpoint, Method, PathParams};
pub use error::{Error, ErrorKind, Result};
pub use etag::{etag, etag_listed, etag_of_wire};
pub use events::*;
pub use imports::*;
pub use paged::{
    CursorKind, JsonSink, JsonStream, Paged, StreamGauge, decode_cursor, encode_cursor, json_stream,
};
pub use perform::{Perform, Serve, ServeAll};
pub use reply::{Answer, Download, Encoded, Redirect, Reply, ReplyKind, Upgrade};
pub use requests::*;
pub use runs::*;
pub use sign_in::{
    AuthMethods, BROWSER_COOKIE, CallbackQuery, LoginCodeRequest, LoginRequest, LoginResponse, PasswordLogin,
    SignInQuery, SsoMethod,
};
pub use upload::{LateFields, Upload};
pub use webhooks::*;
pub use work::*;

use model::{
    CreatedMember, Health, Label, Member, Message, Ok, Project, ProjectFile, ProjectMember, Rejected,
    StatusResponse, Step, Task, TaskAction, TaskLink, TokenResponse, UploadedFile, Watchers,
};

/// A type carried as JSON in bodies, queries and answers. A marker, so the
/// other body and answer kinds ([`Upload`], [`Download`], `()`) can have
/// their own implementations.
pub trait Wire: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static {}

impl<T: Wire> Wire for Vec<T> {}

/// Declares types as [`Wire`]; the core declares its own words with it
/// too (`taskboard_wire::wire!(Webhook, Delivery)`).
#[macro_export]
macro_rules! wire {
    ($($t:ty),+ $(,)?) => { $(impl $crate::Wire for $t {})+ };
}

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
