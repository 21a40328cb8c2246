//! What the board keeps in memory to answer without a storage read: tasks
//! as last rendered and credentials already resolved. Both are cleared by
//! the events that may make them stale, and bounded by an estimate of
//! their bytes.

use std::collections::HashMap;
use std::sync::Arc;

use uuid::Uuid;

use super::{Board, Inner};
use crate::events::{Event, EventKind};
use crate::records::MemberRecord;
use crate::tokens::Grant;

/// Tasks as last rendered, so reading a task costs no storage read while
/// nothing that shows in it changed. Cleared when an event about tasks,
/// steps, links, labels, projects or members is published (a task shows
/// its subtasks, parent, labels, project and members); chat and comment
/// traffic leaves it alone. `generation` keeps a render that raced with
/// such a change out of the cache.
#[derive(Default)]
pub(crate) struct TaskCache {
    pub generation: u64,
    pub tasks: HashMap<Uuid, Arc<RenderedTask>>,
    /// The estimated memory of `tasks` (see [`RenderedTask::weight`]).
    pub bytes: usize,
}

/// A rendered task and, once asked for, its JSON and entity tag.
pub(crate) struct RenderedTask {
    pub task: crate::model::Task,
    json: std::sync::OnceLock<Arc<str>>,
    etag: std::sync::OnceLock<Arc<str>>,
}

impl RenderedTask {
    pub fn new(task: crate::model::Task) -> Arc<RenderedTask> {
        Arc::new(RenderedTask { task, json: std::sync::OnceLock::new(), etag: std::sync::OnceLock::new() })
    }

    /// An estimate of the memory a cached task holds: its text, its
    /// lists, the JSON it may keep, and a fixed part for the rest.
    pub fn weight(&self) -> usize {
        let t = &self.task;
        let text = t.title.len() + t.description.as_ref().map_or(0, |d| d.len());
        let lists = 64 * (t.labels.len() + t.watcher_ids.len() + t.subtasks.len() + t.depends_on.len())
            + 256 * t.steps.len();
        2 * text + lists + 1024
    }

    pub fn json(&self) -> Arc<str> {
        self.json.get_or_init(|| serde_json::to_string(&self.task).expect("a task serialises").into()).clone()
    }

    /// The tag of [`RenderedTask::json`]: a SHA-256 per read was a tenth
    /// of what a read of one task cost the server (docs/storage.md S.40).
    pub fn etag(&self) -> Arc<str> {
        self.etag.get_or_init(|| crate::wire::etag(self.json().as_bytes()).into()).clone()
    }
}

impl TaskCache {
    /// The memory the cache may hold, estimated: about 5,000 typical
    /// tasks, whatever their descriptions.
    pub(crate) const MAX_BYTES: usize = 8 << 20;

    fn invalidated_by(kind: EventKind) -> bool {
        kind.changes_tasks()
    }
}

/// Credentials already resolved, so most requests authenticate without a
/// storage read. Cleared whenever an event about members is published
/// (their role, activity, configuration, token or password changed);
/// `generation` lets a lookup that raced with such a change refrain from
/// caching what it read.
#[derive(Default)]
pub(crate) struct AuthCache {
    pub generation: u64,
    /// Agent tokens as presented (memory only; the store keeps hashes).
    pub tokens: HashMap<String, Uuid>,
    /// Access tokens as presented, with their member and grant.
    pub access: HashMap<String, (Uuid, Arc<Grant>)>,
    /// Members with their credential version, which login JWTs must carry.
    pub members: HashMap<Uuid, (Arc<MemberRecord>, u64)>,
    /// The estimated memory of the entries (see [`AuthCache::weight`]).
    pub bytes: usize,
}

impl AuthCache {
    /// The memory the cache may hold, estimated per member and token.
    pub(crate) const MAX_BYTES: usize = 4 << 20;
    /// The estimated memory of one cached member (its record and a token).
    pub(crate) fn weight(m: &MemberRecord) -> usize {
        512 + m.name.len() + m.slug.len() + m.avatar_url.as_ref().map_or(0, |a| a.len())
    }

    /// Keeps a member read from the store when the cache was at
    /// `generation`, emptying the cache first if it would grow past
    /// [`AuthCache::MAX_BYTES`]; nothing when an event changed the cache
    /// since the read (the record may be stale). Whether it was kept: the
    /// caller then keeps the credentials that led to it.
    pub(crate) fn keep(&mut self, generation: u64, member: &Arc<MemberRecord>, version: u64) -> bool {
        if self.generation != generation {
            return false;
        }
        let weight = AuthCache::weight(member);
        if self.bytes + weight > AuthCache::MAX_BYTES {
            self.members.clear();
            self.tokens.clear();
            self.access.clear();
            self.bytes = 0;
        }
        self.bytes += weight;
        self.members.insert(member.id, (member.clone(), version));
        true
    }

    fn invalidated_by(kind: EventKind) -> bool {
        kind.changes_members()
    }
}

/// Clears the caches that `events`, just published, may have made stale.
pub(super) fn invalidate(inner: &Inner, events: &[Event]) {
    if events.iter().any(|e| AuthCache::invalidated_by(e.kind)) {
        let mut cache = inner.credentials.cache.write().unwrap();
        cache.generation += 1;
        cache.tokens.clear();
        cache.access.clear();
        cache.members.clear();
        cache.bytes = 0;
    }
    if events.iter().any(|e| TaskCache::invalidated_by(e.kind)) {
        let mut cache = inner.task_cache.write().unwrap();
        cache.generation += 1;
        cache.tasks.clear();
        cache.bytes = 0;
    } else if events.iter().any(|e| e.kind == EventKind::TaskLeaseRenewed) {
        // A heartbeat changes its task's lease only: that task goes.
        let mut cache = inner.task_cache.write().unwrap();
        cache.generation += 1;
        for e in events.iter().filter(|e| e.kind == EventKind::TaskLeaseRenewed) {
            let id = e.data().get("id").and_then(|v| v.as_str()).and_then(|s| s.parse::<Uuid>().ok());
            if let Some(old) = id.and_then(|id| cache.tasks.remove(&id)) {
                cache.bytes -= old.weight();
            }
        }
    }
}

impl Board {
    /// A task from the cache of rendered tasks.
    pub(crate) fn cached_task(&self, id: Uuid) -> Option<Arc<RenderedTask>> {
        self.inner.task_cache.read().unwrap().tasks.get(&id).cloned()
    }

    pub(crate) fn task_cache_generation(&self) -> u64 {
        self.inner.task_cache.read().unwrap().generation
    }

    /// Caches rendered tasks, unless the cache was cleared since
    /// `generation` was read (they may then be stale).
    pub(crate) fn cache_tasks(&self, generation: u64, tasks: impl IntoIterator<Item = Arc<RenderedTask>>) {
        let mut cache = self.inner.task_cache.write().unwrap();
        if cache.generation != generation {
            return;
        }
        for task in tasks {
            let weight = task.weight();
            if cache.bytes + weight > TaskCache::MAX_BYTES {
                cache.tasks.clear();
                cache.bytes = 0;
            }
            cache.bytes += weight;
            if let Some(old) = cache.tasks.insert(task.task.id, task) {
                cache.bytes -= old.weight();
            }
        }
    }
}
