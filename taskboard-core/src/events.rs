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

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::broadcast;
use uuid::Uuid;

use crate::model::{AgentConfig, Listen, MemberType};
use crate::records::MemberRecord;

/// Who an event is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Audience {
    /// Every connection.
    All,
    /// One member only (`config.updated`, credential changes).
    Member { member_id: Uuid },
    /// A project chat message: the project's members; agents listening
    /// for mentions only when mentioned.
    Chat { project_members: Vec<Uuid>, mentions: Vec<Uuid> },
    /// A task comment: watchers, assignee and reviewer (`involved`) and the
    /// mentioned; agents listening for mentions only when mentioned.
    TaskComment { involved: Vec<Uuid>, mentions: Vec<Uuid> },
}

/// One event. Its `data` is kept as serialized JSON: made once when the
/// event is, stored and sent as it is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event {
    pub seq: u64,
    pub ts: Timestamp,
    #[serde(rename = "type")]
    pub kind: String,
    data: Box<RawValue>,
    pub audience: Audience,
    /// The frame, rendered on first use and then shared: a thousand
    /// connections receiving one event serialize it once.
    #[serde(skip)]
    pub rendered: RenderedFrame,
}

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.seq == other.seq
            && self.ts == other.ts
            && self.kind == other.kind
            && self.data.get() == other.data.get()
            && self.audience == other.audience
    }
}

/// The lazily rendered frame of an [`Event`]. It is a cache, so it takes
/// no part in comparing events.
#[derive(Clone, Default)]
pub struct RenderedFrame(OnceLock<Arc<str>>);

impl std::fmt::Debug for RenderedFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "RenderedFrame(cached)" } else { "RenderedFrame(empty)" })
    }
}

impl Event {
    pub fn new(
        seq: u64,
        ts: Timestamp,
        kind: impl Into<String>,
        data: serde_json::Value,
        audience: Audience,
    ) -> Event {
        let data = serde_json::value::to_raw_value(&data).expect("a JSON value serialises");
        Event::with_raw_data(seq, ts, kind, data, audience)
    }

    pub(crate) fn with_raw_data(
        seq: u64,
        ts: Timestamp,
        kind: impl Into<String>,
        data: Box<RawValue>,
        audience: Audience,
    ) -> Event {
        Event { seq, ts, kind: kind.into(), data, audience, rendered: RenderedFrame::default() }
    }

    /// The event's `data`, parsed.
    pub fn data(&self) -> serde_json::Value {
        serde_json::from_str(self.data.get()).unwrap_or(serde_json::Value::Null)
    }

    /// The event's `data` as the JSON text it is sent as.
    pub fn raw_data(&self) -> &str {
        self.data.get()
    }

    /// The frame sent to clients: `{"type", "seq", "ts", "data"}`.
    pub fn frame(&self) -> String {
        self.shared_frame().to_string()
    }

    /// The frame, rendered once per event and shared between connections.
    pub fn shared_frame(&self) -> Arc<str> {
        self.rendered
            .0
            .get_or_init(|| {
                let kind = serde_json::to_string(&self.kind).expect("a string serialises");
                format!(
                    "{{\"type\":{kind},\"seq\":{},\"ts\":\"{}\",\"data\":{}}}",
                    self.seq,
                    self.ts,
                    self.data.get()
                )
                .into()
            })
            .clone()
    }

    /// The recipient rule (docs/rules.md, events).
    pub fn visible_to(&self, viewer: &Viewer) -> bool {
        let me = viewer.member_id;
        match &self.audience {
            Audience::All => true,
            Audience::Member { member_id } => *member_id == me,
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
    /// deleted, or its agent token was revoked or replaced.
    pub fn ends_session_of(&self, member: Uuid) -> bool {
        let about_member = || {
            let data = self.data();
            data.get("member_id").or_else(|| data.get("id")).and_then(|v| v.as_str())
                == Some(member.to_string().as_str())
        };
        matches!(self.kind.as_str(), "member.deleted" | "member.token_revoked") && about_member()
    }
}

/// The member a stream is delivered to, with the settings the recipient
/// rule reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewer {
    pub member_id: Uuid,
    pub is_agent: bool,
    pub chat_listen: Listen,
    pub task_listen: Listen,
}

impl Viewer {
    pub fn of(member: &MemberRecord) -> Viewer {
        Viewer {
            member_id: member.id,
            is_agent: member.kind == MemberType::Agent,
            chat_listen: member.agent_config.chat_listen,
            task_listen: member.agent_config.task_listen,
        }
    }

    /// Keeps the viewer's settings current: a `config.updated` for this
    /// member takes effect at once (docs/events.md).
    pub fn observe(&mut self, event: &Event) {
        if event.kind == "config.updated"
            && event.audience == (Audience::Member { member_id: self.member_id })
            && let Some(config) = event.data().get("agent_config")
            && let Ok(config) = serde_json::from_value::<AgentConfig>(config.clone())
        {
            self.chat_listen = config.chat_listen;
            self.task_listen = config.task_listen;
        }
    }
}

/// How many events are kept, in memory and on disk (docs/rules.md, events,
/// promises at least 10,000).
pub const RETAINED_EVENTS: usize = 10_240;

/// Live fan-out of committed events with a replay window.
pub(crate) struct Hub {
    inner: Mutex<HubInner>,
}

struct HubInner {
    recent: VecDeque<Arc<Event>>,
    latest: u64,
    sender: broadcast::Sender<Arc<Event>>,
}

/// A subscription to the event stream.
pub struct Subscription {
    /// True when the requested `since` is older than the retained window:
    /// events were lost to the caller, who must reload its state.
    pub resync_required: bool,
    /// The seq of the newest event at the moment of subscribing.
    pub latest: u64,
    /// Retained events after `since`, in order.
    pub replay: Vec<Arc<Event>>,
    /// Live events after `replay`; a receiver that falls more than the
    /// hub's capacity behind gets `Lagged` and must reconnect.
    pub live: broadcast::Receiver<Arc<Event>>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("resync_required", &self.resync_required)
            .field("latest", &self.latest)
            .field("replay", &self.replay.len())
            .finish()
    }
}

impl Hub {
    pub(crate) fn new(recent: Vec<Event>, latest: u64, capacity: usize) -> Hub {
        let (sender, _) = broadcast::channel(capacity.max(16));
        Hub {
            inner: Mutex::new(HubInner {
                recent: recent.into_iter().map(Arc::new).collect(),
                latest,
                sender,
            }),
        }
    }

    pub(crate) fn latest(&self) -> u64 {
        self.inner.lock().unwrap().latest
    }

    /// Publishes committed events, in seq order.
    pub(crate) fn publish(&self, events: Vec<Event>) {
        let mut inner = self.inner.lock().unwrap();
        for event in events {
            let event = Arc::new(event);
            inner.latest = event.seq;
            inner.recent.push_back(event.clone());
            if inner.recent.len() > RETAINED_EVENTS {
                inner.recent.pop_front();
            }
            let _ = inner.sender.send(event);
        }
    }

    /// Subscribes from `since` (or from now). Replay and live stream are
    /// taken under one lock, so together they hold every event after
    /// `since` exactly once.
    pub(crate) fn subscribe(&self, since: Option<u64>) -> Subscription {
        let inner = self.inner.lock().unwrap();
        let live = inner.sender.subscribe();
        let latest = inner.latest;
        let Some(since) = since else {
            return Subscription { resync_required: false, latest, replay: Vec::new(), live };
        };
        let oldest = inner.recent.front().map_or(latest + 1, |e| e.seq);
        // Events since+1 .. oldest-1 are gone when since + 1 < oldest. A
        // `since` beyond the newest event comes from a state this board
        // never had (a restored backup, another board): the client's view
        // cannot be trusted either (docs/decisions.md 7.c).
        let resync_required = (since < latest && since + 1 < oldest) || since > latest;
        let replay = if resync_required {
            Vec::new()
        } else {
            inner.recent.iter().filter(|e| e.seq > since).cloned().collect()
        };
        Subscription { resync_required, latest, replay, live }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn viewer(id: Uuid, agent: bool, chat: Listen, task: Listen) -> Viewer {
        Viewer { member_id: id, is_agent: agent, chat_listen: chat, task_listen: task }
    }

    fn event(audience: Audience) -> Event {
        Event::new(1, Timestamp::now(), "message.new", serde_json::Value::Null, audience)
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
    fn subscription_replays_after_since_then_goes_live() {
        let mk = |seq| Event::new(seq, Timestamp::now(), "x", serde_json::Value::Null, Audience::All);
        let hub = Hub::new((5..=9).map(mk).collect(), 9, 64);
        let sub = hub.subscribe(Some(6));
        assert!(!sub.resync_required);
        assert_eq!(sub.replay.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![7, 8, 9]);
        let mut live = sub.live;
        hub.publish(vec![mk(10)]);
        assert_eq!(live.try_recv().unwrap().seq, 10);
        assert!(hub.subscribe(Some(2)).resync_required);
        assert!(!hub.subscribe(Some(4)).resync_required);
        assert!(!hub.subscribe(Some(9)).resync_required);
        assert!(hub.subscribe(Some(11)).resync_required);
    }

    #[test]
    fn the_frame_is_rendered_once_and_compares_as_no_data() {
        let e = Event::new(3, Timestamp::now(), "task.updated", serde_json::json!({"id": 1}), Audience::All);
        let fresh = e.clone();
        let frame = e.shared_frame();
        assert!(Arc::ptr_eq(&frame, &e.shared_frame()));
        assert_eq!(e, fresh);
        let v: serde_json::Value = serde_json::from_str(&frame).unwrap();
        assert_eq!(v["type"], "task.updated");
        assert_eq!(v["seq"], 3);
        assert_eq!(v["data"]["id"], 1);
        assert!(v.get("audience").is_none());
    }
}
