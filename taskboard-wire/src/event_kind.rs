//! The kinds of event: one enum, named on the wire and in the stored log
//! by the dotted names of docs/events.md.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! event_kinds {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// What an event says happened.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $($(#[$doc])* $variant,)*
        }

        impl EventKind {
            /// Every kind, in the order of docs/events.md.
            pub const ALL: &[EventKind] = &[$(EventKind::$variant,)*];

            /// The name on the wire (`"task.updated"`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)*
                }
            }

            /// The kind named `name`, if there is one.
            pub fn from_name(name: &str) -> Option<EventKind> {
                match name {
                    $($name => Some(EventKind::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

event_kinds! {
    MemberCreated => "member.created",
    MemberUpdated => "member.updated",
    MemberDeleted => "member.deleted",
    /// An agent's token was revoked or replaced.
    MemberTokenRevoked => "member.token_revoked",
    /// Every login of a member was ended ("log out everywhere").
    MemberLoggedOut => "member.logged_out",
    /// An access token was created (never its secret).
    TokenCreated => "token.created",
    /// An access token was revoked.
    TokenRevoked => "token.revoked",
    AgentStatus => "agent.status",
    /// An agent's configuration, sent to that agent only.
    ConfigUpdated => "config.updated",
    ProjectCreated => "project.created",
    ProjectUpdated => "project.updated",
    ProjectDeleted => "project.deleted",
    ProjectMemberAdded => "project.member_added",
    ProjectMemberRemoved => "project.member_removed",
    TaskCreated => "task.created",
    TaskUpdated => "task.updated",
    /// The task's last open dependency is done: it is ready work now.
    TaskReady => "task.ready",
    /// A heartbeat renewed a task's lease: the task's id, key, project and
    /// lease only, in place of a whole `task.updated`.
    TaskLeaseRenewed => "task.lease_renewed",
    TaskDeleted => "task.deleted",
    LinkCreated => "link.created",
    LinkDeleted => "link.deleted",
    StepCreated => "step.created",
    StepUpdated => "step.updated",
    StepDeleted => "step.deleted",
    LabelCreated => "label.created",
    LabelUpdated => "label.updated",
    LabelDeleted => "label.deleted",
    MessageNew => "message.new",
    FileUploaded => "file.uploaded",
    FileReplaced => "file.replaced",
    FileUpdated => "file.updated",
    FileDeleted => "file.deleted",
    WebhookCreated => "webhook.created",
    WebhookUpdated => "webhook.updated",
    WebhookDeleted => "webhook.deleted",
    RunCreated => "run.created",
    RunUpdated => "run.updated",
    /// New transcript entries of a run, batched.
    RunOutput => "run.output",
    /// A review of a task's changes, by a person or an agent.
    ReviewCreated => "review.created",
}

impl EventKind {
    /// Whether the event may change a task as rendered (its project, its
    /// members, its labels, steps and links), so cached renderings are stale.
    pub fn changes_tasks(self) -> bool {
        use EventKind::*;
        match self {
            MemberCreated | MemberUpdated | MemberDeleted | MemberTokenRevoked | ProjectCreated
            | ProjectUpdated | ProjectDeleted | ProjectMemberAdded | ProjectMemberRemoved | TaskCreated
            | TaskUpdated | TaskReady | TaskDeleted | LinkCreated | LinkDeleted | StepCreated
            | StepUpdated | StepDeleted | LabelCreated | LabelUpdated | LabelDeleted => true,
            // A renewed lease changes one task: `board::cache` drops that
            // one rather than every rendering.
            TaskLeaseRenewed | MemberLoggedOut | TokenCreated | TokenRevoked | AgentStatus
            | ConfigUpdated | MessageNew | FileUploaded | FileReplaced | FileUpdated | FileDeleted
            | WebhookCreated | WebhookUpdated | WebhookDeleted | RunCreated | RunUpdated | RunOutput
            | ReviewCreated => false,
        }
    }

    /// Whether the event may change a member's credentials, role or
    /// settings, so resolved credentials are stale.
    pub fn changes_members(self) -> bool {
        use EventKind::*;
        match self {
            MemberCreated | MemberUpdated | MemberDeleted | MemberTokenRevoked | MemberLoggedOut
            | TokenRevoked | AgentStatus | ConfigUpdated => true,
            TokenCreated | ProjectCreated | ProjectUpdated | ProjectDeleted | ProjectMemberAdded
            | ProjectMemberRemoved | TaskCreated | TaskUpdated | TaskReady | TaskDeleted | LinkCreated
            | LinkDeleted | StepCreated | StepUpdated | StepDeleted | LabelCreated | LabelUpdated
            | LabelDeleted | MessageNew | FileUploaded | FileReplaced | FileUpdated | FileDeleted
            | WebhookCreated | WebhookUpdated | WebhookDeleted | TaskLeaseRenewed | RunCreated
            | RunUpdated | RunOutput | ReviewCreated => false,
        }
    }

    /// Whether the event is about a project itself (its data's `id` is the
    /// project's).
    pub fn about_project(self) -> bool {
        use EventKind::*;
        matches!(
            self,
            ProjectCreated | ProjectUpdated | ProjectDeleted | ProjectMemberAdded | ProjectMemberRemoved
        )
    }

    /// Whether the event ends the sessions of the member it names.
    pub fn ends_sessions(self) -> bool {
        matches!(self, EventKind::MemberDeleted | EventKind::MemberTokenRevoked | EventKind::MemberLoggedOut)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<EventKind, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(d)?;
        EventKind::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format_args!("unknown event kind `{name}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_name() {
        for &kind in EventKind::ALL {
            assert_eq!(EventKind::from_name(kind.as_str()), Some(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(serde_json::from_str::<EventKind>(&json).unwrap(), kind);
        }
        assert!(serde_json::from_str::<EventKind>("\"task.exploded\"").is_err());
    }
}
