//! The endpoints, one unit type each, grouped by resource: their
//! declarations ([`Endpoint`](crate::endpoint::Endpoint)). The core
//! performs them; the server, the clients, the MCP tools and the
//! reference are derived from them.

mod admin;
mod events;
mod imports;
mod members;
mod messages;
mod oidc;
mod projects;
mod reviews;
mod runs;
mod steps;
mod tasks;
mod tokens;
mod webhooks;
mod work;

pub use admin::{Backup, EventStream};
pub use events::PollEvents;
pub use imports::ImportTasks;
pub use members::{
    CreateMember, DeleteMember, GetHealth, GetMe, GetMember, GetReady, ListMembers, Login, RegenerateToken,
    RevokeToken, SetMyStatus, SetPassword, UpdateMember,
};
pub use messages::{
    CreateLabel, DeleteLabel, DownloadAttachment, GetLabel, ListLabels, ListMessages, ListReplies,
    PostMessage, UpdateLabel, UploadAttachment,
};
pub use oidc::{ExchangeLoginCode, GetAuthMethods, SignInCallback, StartSignIn};
pub use projects::{
    AddProjectMember, CreateProject, DeleteFile, DeleteProject, DownloadFile, GetFile, GetProject, ListFiles,
    ListProjectMembers, ListProjects, RemoveProjectMember, UpdateFile, UpdateProject, UploadFile,
};
pub use reviews::{
    CreateReview, DiscardTask, GetRunChanges, GetTaskChanges, ListReviews, MergeTask, RecordChanges,
};
pub use runs::{
    AnswerRun, AppendTranscript, CancelRun, GetRun, GetTranscript, ListRunners, ListRuns, StartMessageRun,
    StartRun, UpdateRun,
};
pub use steps::{CreateStep, DeleteStep, ListSteps, UpdateStep};
pub use tasks::{
    AddTaskLabel, AssignTask, CreateLink, CreateTask, DeleteLink, DeleteTask, GetTask, ListActions,
    ListLinks, ListTasks, RejectTask, RemoveTaskLabel, TakeTask, UnwatchTask, UpdateTask, WatchTask,
};
pub use tokens::{CreateAccessToken, ListAccessTokens, LogoutEverywhere, RevokeAccessToken};
pub use webhooks::{
    CreateWebhook, DeleteWebhook, GetWebhook, ListDeliveries, ListWebhooks, Redeliver, RotateWebhookSecret,
    UpdateWebhook,
};
pub use work::{ClaimTask, HeartbeatTask, ReadyTasks, ReleaseTask};

/// Calls `$callback!` with the path of every endpoint, in the order of
/// the reference: the one list of endpoints, from which the visits of the
/// wire and of the core and the bounds of
/// [`Perform`](crate::perform::Perform) are built.
#[macro_export]
macro_rules! every_endpoint {
    ($callback:ident) => {
        $callback! {
            $crate::api::GetHealth,
            $crate::api::GetReady,
            $crate::api::Login,
            $crate::api::GetAuthMethods,
            $crate::api::StartSignIn,
            $crate::api::SignInCallback,
            $crate::api::ExchangeLoginCode,
            // members
            $crate::api::ListMembers,
            $crate::api::CreateMember,
            $crate::api::GetMe,
            $crate::api::SetMyStatus,
            $crate::api::GetMember,
            $crate::api::UpdateMember,
            $crate::api::DeleteMember,
            $crate::api::RegenerateToken,
            $crate::api::RevokeToken,
            $crate::api::SetPassword,
            $crate::api::CreateAccessToken,
            $crate::api::ListAccessTokens,
            $crate::api::RevokeAccessToken,
            $crate::api::LogoutEverywhere,
            // projects
            $crate::api::ListProjects,
            $crate::api::CreateProject,
            $crate::api::GetProject,
            $crate::api::UpdateProject,
            $crate::api::DeleteProject,
            $crate::api::ListProjectMembers,
            $crate::api::AddProjectMember,
            $crate::api::RemoveProjectMember,
            $crate::api::ListFiles,
            $crate::api::UploadFile,
            $crate::api::GetFile,
            $crate::api::UpdateFile,
            $crate::api::DeleteFile,
            $crate::api::DownloadFile,
            // tasks
            $crate::api::ListTasks,
            $crate::api::CreateTask,
            $crate::api::GetTask,
            $crate::api::UpdateTask,
            $crate::api::DeleteTask,
            $crate::api::TakeTask,
            $crate::api::ReadyTasks,
            $crate::api::ClaimTask,
            $crate::api::HeartbeatTask,
            $crate::api::ReleaseTask,
            $crate::api::RejectTask,
            $crate::api::AssignTask,
            $crate::api::WatchTask,
            $crate::api::UnwatchTask,
            $crate::api::ListLinks,
            $crate::api::CreateLink,
            $crate::api::DeleteLink,
            $crate::api::AddTaskLabel,
            $crate::api::RemoveTaskLabel,
            $crate::api::ListActions,
            $crate::api::ListSteps,
            $crate::api::CreateStep,
            $crate::api::UpdateStep,
            $crate::api::DeleteStep,
            // messages and labels
            $crate::api::ListMessages,
            $crate::api::PostMessage,
            $crate::api::ListReplies,
            $crate::api::UploadAttachment,
            $crate::api::DownloadAttachment,
            $crate::api::ListLabels,
            $crate::api::CreateLabel,
            $crate::api::GetLabel,
            $crate::api::UpdateLabel,
            $crate::api::DeleteLabel,
            // administration and events
            $crate::api::Backup,
            $crate::api::ImportTasks,
            $crate::api::EventStream,
            $crate::api::PollEvents,
            // webhooks
            $crate::api::ListWebhooks,
            $crate::api::CreateWebhook,
            $crate::api::GetWebhook,
            $crate::api::UpdateWebhook,
            $crate::api::DeleteWebhook,
            $crate::api::RotateWebhookSecret,
            $crate::api::ListDeliveries,
            $crate::api::Redeliver,
            // runs
            $crate::api::ListRuns,
            $crate::api::ListRunners,
            $crate::api::GetRun,
            $crate::api::GetTranscript,
            $crate::api::StartRun,
            $crate::api::StartMessageRun,
            $crate::api::UpdateRun,
            $crate::api::AppendTranscript,
            $crate::api::CancelRun,
            $crate::api::RecordChanges,
            $crate::api::GetRunChanges,
            $crate::api::GetTaskChanges,
            $crate::api::ListReviews,
            $crate::api::CreateReview,
            $crate::api::MergeTask,
            $crate::api::DiscardTask,
            $crate::api::AnswerRun,
        }
    };
}
