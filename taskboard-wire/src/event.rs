//! One event of the stream and who may see it: its frame (`{"type",
//! "seq", "ts", "data"}`, made once and shared by every connection), its
//! audience, the recipient rule, and the follower a stream answer carries
//! ([`super::feed::Feed`]). Numbering, storing and publishing events is
//! the core's `events` (docs/rules.md, events).

use std::sync::Arc;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::event_kind::EventKind;
use super::model::{AgentConfig, Listen, Role};

/// Who an event is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Audience {
    /// Every connection.
    All,
    /// One member only (`config.updated`, credential changes).
    Member { member_id: Uuid },
    /// Admins and owners (webhook changes).
    Admins,
    /// A project chat message: the project's members; agents listening
    /// for mentions only when mentioned.
    Chat { project_members: Vec<Uuid>, mentions: Vec<Uuid> },
    /// A task comment: watchers, assignee and reviewer (`involved`) and the
    /// mentioned; agents listening for mentions only when mentioned.
    TaskComment { involved: Vec<Uuid>, mentions: Vec<Uuid> },
}

/// One event, with the frame it is sent as: `{"type", "seq", "ts",
/// "data"}`, made once when the event is and shared by every connection
/// (its `data` is the frame's tail, so the event holds its data once).
#[derive(Clone)]
pub struct Event {
    pub seq: u64,
    pub ts: Timestamp,
    pub kind: EventKind,
    pub audience: Audience,
    frame: Arc<str>,
    /// Where `data` starts in `frame`; it ends before the closing brace.
    data_start: usize,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN: usize = 200;
        let data = self.raw_data();
        let mut end = data.len().min(SHOWN);
        while !data.is_char_boundary(end) {
            end -= 1;
        }
        let more = if end < data.len() { format!("… ({} bytes)", data.len()) } else { String::new() };
        f.debug_struct("Event")
            .field("seq", &self.seq)
            .field("ts", &self.ts)
            .field("kind", &self.kind)
            .field("audience", &self.audience)
            .field("data", &format_args!("{}{more}", &data[..end]))
            .finish()
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.seq == other.seq
            && self.ts == other.ts
            && self.kind == other.kind
            && self.raw_data() == other.raw_data()
            && self.audience == other.audience
    }
}

impl Event {
    pub fn new(
        seq: u64,
        ts: Timestamp,
        kind: EventKind,
        data: serde_json::Value,
        audience: Audience,
    ) -> Event {
        Event::serialized(seq, ts, kind, &data, audience).expect("a JSON value serialises")
    }

    /// An event whose data is `data` serialised straight into its frame.
    pub fn serialized(
        seq: u64,
        ts: Timestamp,
        kind: EventKind,
        data: &impl Serialize,
        audience: Audience,
    ) -> serde_json::Result<Event> {
        let mut frame = Event::frame_head(seq, ts, kind);
        let data_start = frame.len();
        serde_json::to_writer(&mut frame, data)?;
        Ok(Event::finish(seq, ts, kind, audience, frame, data_start))
    }

    /// An event whose data is already JSON text.
    pub fn with_raw_data(seq: u64, ts: Timestamp, kind: EventKind, data: &str, audience: Audience) -> Event {
        let mut frame = Event::frame_head(seq, ts, kind);
        let data_start = frame.len();
        frame.extend_from_slice(data.as_bytes());
        Event::finish(seq, ts, kind, audience, frame, data_start)
    }

    fn frame_head(seq: u64, ts: Timestamp, kind: EventKind) -> Vec<u8> {
        format!("{{\"type\":\"{kind}\",\"seq\":{seq},\"ts\":\"{ts}\",\"data\":").into_bytes()
    }

    fn finish(
        seq: u64,
        ts: Timestamp,
        kind: EventKind,
        audience: Audience,
        mut frame: Vec<u8>,
        data_start: usize,
    ) -> Event {
        frame.push(b'}');
        // Only JSON text and `format!` output went into the frame.
        let frame = String::from_utf8(frame).expect("a frame is UTF-8");
        Event { seq, ts, kind, audience, frame: frame.into(), data_start }
    }

    /// The event's `data`, parsed.
    pub fn data(&self) -> serde_json::Value {
        serde_json::from_str(self.raw_data()).unwrap_or(serde_json::Value::Null)
    }

    /// The event's `data` as the JSON text it is sent as.
    pub fn raw_data(&self) -> &str {
        &self.frame[self.data_start..self.frame.len() - 1]
    }

    /// The frame sent to clients: `{"type", "seq", "ts", "data"}`.
    pub fn frame(&self) -> String {
        self.frame.to_string()
    }

    /// The frame, shared between connections.
    pub fn shared_frame(&self) -> Arc<str> {
        self.frame.clone()
    }

    /// Bytes of memory this event holds (its frame, its audience and the
    /// fixed parts), as the hub counts them against its bound.
    pub fn memory_size(&self) -> usize {
        let ids = match &self.audience {
            Audience::All | Audience::Member { .. } | Audience::Admins => 0,
            Audience::Chat { project_members, mentions } => project_members.len() + mentions.len(),
            Audience::TaskComment { involved, mentions } => involved.len() + mentions.len(),
        };
        // The Arc's and the allocator's headers are guessed at 64 bytes.
        std::mem::size_of::<Event>() + 64 + self.frame.len() + ids * 16
    }

    /// The recipient rule (docs/rules.md, events).
    pub fn visible_to(&self, viewer: &Viewer) -> bool {
        let me = viewer.member_id;
        match &self.audience {
            Audience::All => true,
            Audience::Member { member_id } => *member_id == me,
            Audience::Admins => viewer.is_admin,
            Audience::Chat { project_members, mentions } => {
                project_members.contains(&me)
                    && (!viewer.is_agent || viewer.chat_listen == Listen::All || mentions.contains(&me))
            }
            Audience::TaskComment { involved, mentions } => {
                let mentioned = mentions.contains(&me);
                if viewer.is_agent && viewer.task_listen == Listen::Mentions {
                    mentioned
                } else {
                    mentioned || involved.contains(&me)
                }
            }
        }
    }

    /// Whether this event ends the sessions of `member`: the member was
    /// deleted or deactivated, or its agent token was revoked or replaced.
    pub fn ends_session_of(&self, member: Uuid) -> bool {
        let about_member = || {
            let data = self.data();
            data.get("member_id").or_else(|| data.get("id")).and_then(|v| v.as_str())
                == Some(member.to_string().as_str())
        };
        let deactivated =
            || self.kind == EventKind::MemberUpdated && self.data().get("is_active") == Some(&false.into());
        (self.kind.ends_sessions() || deactivated()) && about_member()
    }

    /// Whether this event ends a stream of `member` opened with the
    /// access token `token` (None: another credential): as
    /// [`Event::ends_session_of`], or that token was revoked.
    pub fn ends_stream_of(&self, member: Uuid, token: Option<Uuid>) -> bool {
        let this_token = || {
            token.is_some_and(|t| {
                self.data().get("id").and_then(|v| v.as_str()) == Some(t.to_string().as_str())
            })
        };
        self.ends_session_of(member) || (self.kind == EventKind::TokenRevoked && this_token())
    }
}

/// The member a stream is delivered to, with the settings the recipient
/// rule reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewer {
    pub member_id: Uuid,
    pub is_agent: bool,
    /// An admin or owner: as the member is now, since [`Viewer::observe`]
    /// follows role changes.
    pub is_admin: bool,
    pub chat_listen: Listen,
    pub task_listen: Listen,
}

impl Viewer {
    /// Keeps the viewer current: a `config.updated` for this member
    /// takes effect at once (docs/events.md), and so does a change of its
    /// role or active state (`member.updated`), so a demoted admin's open
    /// stream stops receiving admin events with the event that demoted it.
    pub fn observe(&mut self, event: &Event) {
        if event.kind == EventKind::MemberUpdated {
            let data = event.data();
            if data.get("id").and_then(|v| v.as_str()) == Some(self.member_id.to_string().as_str()) {
                let role = data.get("role").and_then(|r| serde_json::from_value::<Role>(r.clone()).ok());
                let active = data.get("is_active").and_then(|v| v.as_bool()).unwrap_or(true);
                self.is_admin = active && role.is_some_and(|r| r.is_admin());
            }
        } else if event.kind == EventKind::ConfigUpdated
            && event.audience == (Audience::Member { member_id: self.member_id })
            && let Some(config) = event.data().get("agent_config")
            && let Ok(config) = serde_json::from_value::<AgentConfig>(config.clone())
        {
            self.chat_listen = config.chat_listen;
            self.task_listen = config.task_listen;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn viewer(id: Uuid, agent: bool, chat: Listen, task: Listen) -> Viewer {
        Viewer { member_id: id, is_agent: agent, is_admin: false, chat_listen: chat, task_listen: task }
    }

    fn event(audience: Audience) -> Event {
        Event::new(1, Timestamp::now(), EventKind::MessageNew, serde_json::Value::Null, audience)
    }

    #[test]
    fn chat_messages_reach_project_members_and_listening_agents() {
        let (human, agent, outsider) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let e = event(Audience::Chat { project_members: vec![human, agent], mentions: vec![] });
        assert!(e.visible_to(&viewer(human, false, Listen::All, Listen::All)));
        assert!(e.visible_to(&viewer(agent, true, Listen::All, Listen::All)));
        assert!(!e.visible_to(&viewer(agent, true, Listen::Mentions, Listen::All)));
        assert!(!e.visible_to(&viewer(outsider, false, Listen::All, Listen::All)));
        let mentioned = event(Audience::Chat { project_members: vec![human, agent], mentions: vec![agent] });
        assert!(mentioned.visible_to(&viewer(agent, true, Listen::Mentions, Listen::All)));
    }

    #[test]
    fn task_comments_reach_the_involved_and_the_mentioned() {
        let (watcher, agent, other) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let e = event(Audience::TaskComment { involved: vec![watcher, agent], mentions: vec![other] });
        assert!(e.visible_to(&viewer(watcher, false, Listen::All, Listen::All)));
        assert!(e.visible_to(&viewer(other, false, Listen::All, Listen::All)));
        assert!(e.visible_to(&viewer(agent, true, Listen::All, Listen::All)));
        assert!(!e.visible_to(&viewer(agent, true, Listen::All, Listen::Mentions)));
    }

    #[test]
    fn the_frame_is_made_once_and_holds_the_data() {
        let e = Event::new(
            3,
            Timestamp::now(),
            EventKind::TaskUpdated,
            serde_json::json!({"id": 1}),
            Audience::All,
        );
        let fresh = e.clone();
        let frame = e.shared_frame();
        assert!(Arc::ptr_eq(&frame, &e.shared_frame()));
        assert_eq!(e, fresh);
        assert_eq!(e.raw_data(), r#"{"id":1}"#);
        assert!(e.memory_size() > frame.len());
        let v: serde_json::Value = serde_json::from_str(&frame).unwrap();
        assert_eq!(v["type"], "task.updated");
        assert_eq!(v["seq"], 3);
        assert_eq!(v["data"]["id"], 1);
        assert!(v.get("audience").is_none());
    }
}
