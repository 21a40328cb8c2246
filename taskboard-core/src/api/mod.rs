//! The API: one declaration per endpoint.
//!
//! Each endpoint is a type implementing [`Endpoint`]: its route, its typed
//! path, query and body, its answer and the core function that performs
//! it. The server's routes and dispatch, the typed HTTP client, the
//! command line's local and remote modes and the OpenAPI document are
//! derived from these declarations, so an embedding program calling
//! [`call`], the command line and a server user get the same answers:
//!
//! ```
//! use taskboard_core::api::{self, Caller, CreateLabel, ListLabels, NewLabel, Page};
//! use taskboard_core::validate::{LabelName, Slug};
//! use taskboard_core::{Board, BoardOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let board = Board::open_in_memory(BoardOptions::default()).await?;
//! let boot = board.bootstrap_owner(Slug::new("owner")?, None).await?.expect("a new board");
//! let caller = Caller::member(board.actor(boot.owner.id).await?);
//! let new = NewLabel { name: LabelName::new("bug")?, color: Default::default() };
//! api::call::<CreateLabel>(&board, &caller, (), (), new).await?;
//! let page = Page { limit: Some(10), ..Page::default() };
//! assert_eq!(api::call::<ListLabels>(&board, &caller, (), page, ()).await?.len(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! An endpoint without its core function does not compile:
//!
//! ```compile_fail
//! use taskboard_core::api::{Endpoint, Info, Method};
//! struct Nothing;
//! impl Endpoint for Nothing {
//!     const INFO: Info = Info {
//!         name: "nothing", method: Method::Get, path: "/api/v1/nothing", auth: true,
//!         status: 200, summary: "", description: "", errors: &[],
//!     };
//!     type Path = ();
//!     type Query = ();
//!     type Body = ();
//!     type Response = taskboard_core::model::Ok;
//! }
//! ```

mod admin;
mod calls;
pub mod endpoint;
mod events;
mod imports;
mod members;
mod messages;
mod oidc;
mod projects;
mod reviews;
mod runs;
mod scopes;
mod steps;
mod tasks;
mod tokens;
mod webhooks;
mod work;

pub use admin::*;
pub use calls::{call, call_idempotent, perform};
pub use endpoint::{
    BodyKind, Call, Caller, Endpoint, Info, ListEndpoint, Method, Optional, PathParams, QueryParams, RawBody,
    RequestBody, Visitor, decode_body,
};
pub use events::*;
pub use imports::*;
pub use members::*;
pub use messages::*;
pub use oidc::*;
pub use projects::*;
pub use reviews::*;
pub use runs::*;
pub use scopes::permit;
pub use steps::*;
pub use tasks::*;
pub use tokens::*;
pub use webhooks::*;
pub use work::*;

pub use crate::wire::*;
pub use crate::wire::{fields, json, paged};

/// Visits every endpoint, in the order of the reference.
pub fn visit_all(v: &mut impl Visitor) {
    v.visit::<GetHealth>();
    v.visit::<GetReady>();
    v.visit::<Login>();
    v.visit::<GetAuthMethods>();
    v.visit::<StartSignIn>();
    v.visit::<SignInCallback>();
    v.visit::<ExchangeLoginCode>();
    // members
    v.visit::<ListMembers>();
    v.visit::<CreateMember>();
    v.visit::<GetMe>();
    v.visit::<SetMyStatus>();
    v.visit::<GetMember>();
    v.visit::<UpdateMember>();
    v.visit::<DeleteMember>();
    v.visit::<RegenerateToken>();
    v.visit::<RevokeToken>();
    v.visit::<SetPassword>();
    v.visit::<CreateAccessToken>();
    v.visit::<ListAccessTokens>();
    v.visit::<RevokeAccessToken>();
    v.visit::<LogoutEverywhere>();
    // projects
    v.visit::<ListProjects>();
    v.visit::<CreateProject>();
    v.visit::<GetProject>();
    v.visit::<UpdateProject>();
    v.visit::<DeleteProject>();
    v.visit::<ListProjectMembers>();
    v.visit::<AddProjectMember>();
    v.visit::<RemoveProjectMember>();
    v.visit::<ListFiles>();
    v.visit::<UploadFile>();
    v.visit::<GetFile>();
    v.visit::<UpdateFile>();
    v.visit::<DeleteFile>();
    v.visit::<DownloadFile>();
    // tasks
    v.visit::<ListTasks>();
    v.visit::<CreateTask>();
    v.visit::<GetTask>();
    v.visit::<UpdateTask>();
    v.visit::<DeleteTask>();
    v.visit::<TakeTask>();
    v.visit::<ReadyTasks>();
    v.visit::<ClaimTask>();
    v.visit::<HeartbeatTask>();
    v.visit::<ReleaseTask>();
    v.visit::<RejectTask>();
    v.visit::<AssignTask>();
    v.visit::<WatchTask>();
    v.visit::<UnwatchTask>();
    v.visit::<ListLinks>();
    v.visit::<CreateLink>();
    v.visit::<DeleteLink>();
    v.visit::<AddTaskLabel>();
    v.visit::<RemoveTaskLabel>();
    v.visit::<ListActions>();
    v.visit::<ListSteps>();
    v.visit::<CreateStep>();
    v.visit::<UpdateStep>();
    v.visit::<DeleteStep>();
    // messages and labels
    v.visit::<ListMessages>();
    v.visit::<PostMessage>();
    v.visit::<ListReplies>();
    v.visit::<UploadAttachment>();
    v.visit::<DownloadAttachment>();
    v.visit::<ListLabels>();
    v.visit::<CreateLabel>();
    v.visit::<GetLabel>();
    v.visit::<UpdateLabel>();
    v.visit::<DeleteLabel>();
    // administration and events
    v.visit::<Backup>();
    v.visit::<ImportTasks>();
    v.visit::<EventStream>();
    v.visit::<PollEvents>();
    // webhooks
    v.visit::<ListWebhooks>();
    v.visit::<CreateWebhook>();
    v.visit::<GetWebhook>();
    v.visit::<UpdateWebhook>();
    v.visit::<DeleteWebhook>();
    v.visit::<RotateWebhookSecret>();
    v.visit::<ListDeliveries>();
    v.visit::<Redeliver>();
    // runs
    v.visit::<ListRuns>();
    v.visit::<ListRunners>();
    v.visit::<GetRun>();
    v.visit::<GetTranscript>();
    v.visit::<StartRun>();
    v.visit::<StartMessageRun>();
    v.visit::<UpdateRun>();
    v.visit::<AppendTranscript>();
    v.visit::<CancelRun>();
    v.visit::<RecordChanges>();
    v.visit::<GetRunChanges>();
    v.visit::<GetTaskChanges>();
    v.visit::<ListReviews>();
    v.visit::<CreateReview>();
    v.visit::<MergeTask>();
    v.visit::<DiscardTask>();
    v.visit::<AnswerRun>();
}

/// The route and documentation of every endpoint.
pub fn infos() -> Vec<&'static Info> {
    struct Collect(Vec<&'static Info>);
    impl Visitor for Collect {
        fn visit<E: Endpoint>(&mut self) {
            self.0.push(&E::INFO);
        }
    }
    let mut c = Collect(Vec::new());
    visit_all(&mut c);
    c.0
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    #[test]
    fn names_and_routes_are_unique() {
        let infos = super::infos();
        let names: HashSet<_> = infos.iter().map(|i| i.name).collect();
        assert_eq!(names.len(), infos.len());
        let routes: HashSet<_> = infos.iter().map(|i| (i.method, i.path)).collect();
        assert_eq!(routes.len(), infos.len());
    }

    /// A declaration left out of `visit_all` would have no route, no client
    /// call and no documentation: every `impl Endpoint` and `impl
    /// ListEndpoint` of this directory is visited.
    #[test]
    fn every_declared_endpoint_is_visited() {
        struct Names(HashSet<String>);
        impl super::Visitor for Names {
            fn visit<E: super::Endpoint>(&mut self) {
                let full = std::any::type_name::<E>();
                self.0.insert(full.rsplit("::").next().unwrap_or(full).to_string());
            }
        }
        let mut visited = Names(HashSet::new());
        super::visit_all(&mut visited);
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api");
        let mut declared = HashSet::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for line in text.lines() {
                let rest =
                    line.strip_prefix("impl Endpoint for ").or(line.strip_prefix("impl ListEndpoint for "));
                if let Some(rest) = rest {
                    declared.insert(rest.trim_end_matches(" {").trim().to_string());
                }
            }
        }
        assert!(declared.len() > 80, "the declarations were not found: {declared:?}");
        let missing: Vec<_> = declared.difference(&visited.0).collect();
        assert!(missing.is_empty(), "declared but not in visit_all: {missing:?}");
        assert_eq!(declared, visited.0);
    }
}
