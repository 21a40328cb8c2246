//! The event stream (docs/rules.md, events).
//!
//! Each committed operation yields events, numbered by a board-wide `seq`
//! inside the operation's transaction and stored with it, so numbering has
//! no gap and survives restarts. Events are published to subscribers only
//! after their transaction is durable, in commit order.
//!
//! Who may see an event is decided by [`Event::visible_to`], the recipient
//! rule (docs/rules.md, events); the audience is computed when the event is made,
//! from the state inside the same transaction.
//!
//! [`hub`] keeps the newest events in memory, bounded by bytes, and hands
//! out subscriptions; `records::event_log` is their stored form, which holds the whole
//! retained window.

pub mod hub;

use crate::model::MemberType;
use crate::records::MemberRecord;

pub use crate::records::event_log::RETAINED_EVENTS;
pub use crate::wire::event::{Audience, Event, Viewer};
pub use crate::wire::event_kind::EventKind;
pub use crate::wire::feed::{EventBatch, Feed};
pub use hub::{EventMemory, StreamError, Subscription};

/// The viewer a member's streams are delivered to, as the member is now.
pub fn viewer_of(member: &MemberRecord) -> Viewer {
    Viewer {
        member_id: member.id,
        is_agent: member.kind == MemberType::Agent,
        is_admin: member.role.is_admin(),
        chat_listen: member.agent_config.chat_listen,
        task_listen: member.agent_config.task_listen,
    }
}
