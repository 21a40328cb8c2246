//! The hub: the newest events in memory, and subscriptions to the stream.
//!
//! Memory holds the newest events up to a number of bytes
//! (`BoardOptions::event_memory`), never the whole retained window: that
//! window is in the store, and start-up reads nothing of it but where it
//! begins. A subscription is a cursor over seqs. It takes events from
//! memory while they are there and from the store when they are not (a
//! resume from an older seq, or a reader that fell behind the memory
//! window), and waits on a watch channel for new ones. Each event is handed
//! out once, in seq order, so replay and live have neither gap nor overlap.
//!
//! A subscriber is too slow once more than `event_buffer` events were
//! published after it subscribed and it has not taken them (docs/rules.md,
//! events): it gets [`StreamError::TooSlow`] and resumes with `since`. What
//! it is behind by is read from the store, so a slow subscriber costs no
//! memory.
//!
//! A board whose store other processes write too (PostgreSQL) publishes
//! both its own commits and events read from the store, committed by the
//! others (`board::processes`). Seqs are assigned in commit order across
//! processes, so this process's next commit may skip seqs that another
//! one committed just before: those events are held back (`pending`)
//! until the missing ones are read from the store, and no event is ever
//! published before every lower seq.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, RwLock, Weak};

use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use super::Event;
use crate::records::event_log::{self as log, RETAINED_EVENTS};
use crate::storage::Storage;

/// Most events taken into a subscription at once.
const BATCH: usize = 256;
/// Most bytes of stored records read at once by a subscription.
const LOAD_BYTES: usize = 1 << 20;

/// Live fan-out of committed events, with the newest in memory.
pub(crate) struct Hub {
    shared: Arc<Shared>,
}

struct Shared {
    window: RwLock<Window>,
    /// The newest published seq, for waking subscribers.
    changes: watch::Sender<u64>,
    /// Weak, so a subscription left behind never keeps the database open.
    store: Weak<dyn Storage>,
    buffer: u64,
    memory: usize,
    /// Events published since the hub started, for monitoring.
    published: std::sync::atomic::AtomicU64,
    /// Other processes write the store too: seqs may arrive with gaps.
    shared: bool,
    /// Told when this process's own events wait for lower seqs that
    /// another process committed.
    gap: Arc<Notify>,
}

/// The newest events, contiguous in seq, ending at `latest`.
struct Window {
    events: VecDeque<Arc<Event>>,
    bytes: usize,
    peak: usize,
    latest: u64,
    /// The oldest seq the store still holds (`latest + 1` when none).
    oldest_stored: u64,
    /// Own events above `latest + 1`, waiting for the lower seqs (shared
    /// stores only).
    pending: BTreeMap<u64, Event>,
}

/// What the hub holds in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventMemory {
    /// Events held.
    pub events: usize,
    /// Their bytes, as [`Event::memory_size`] counts them.
    pub bytes: usize,
    /// The most bytes ever held at once.
    pub peak_bytes: usize,
    /// The bound (`BoardOptions::event_memory`).
    pub bound: usize,
}

/// Why a subscription ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// More than the event buffer was published after subscribing and not
    /// taken, or the events to take next were pruned meanwhile.
    #[error("fell too far behind the event stream; resume with since")]
    TooSlow,
    /// The board is closed, or its store failed.
    #[error("the event stream ended")]
    Closed,
}

impl Hub {
    pub(crate) fn new(
        store: Weak<dyn Storage>,
        latest: u64,
        oldest_stored: Option<u64>,
        buffer: usize,
        memory: usize,
        shared: bool,
    ) -> Hub {
        let window = Window {
            events: VecDeque::new(),
            bytes: 0,
            peak: 0,
            latest,
            // The store may hold a few more than the retention between
            // two prunes (`log::PRUNE_STEP`); resumes are served for the
            // retention alone, as before a restart.
            oldest_stored: oldest_stored
                .unwrap_or(latest + 1)
                .max((latest + 1).saturating_sub(RETAINED_EVENTS as u64)),
            pending: BTreeMap::new(),
        };
        let shared = Shared {
            window: RwLock::new(window),
            changes: watch::Sender::new(latest),
            store,
            buffer: buffer.max(16) as u64,
            memory,
            published: Default::default(),
            shared,
            gap: Arc::new(Notify::new()),
        };
        Hub { shared: Arc::new(shared) }
    }

    pub(crate) fn latest(&self) -> u64 {
        self.shared.window.read().unwrap().latest
    }

    /// The seq of the newest published event, changing with every publish.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    pub(crate) fn memory(&self) -> EventMemory {
        let w = self.shared.window.read().unwrap();
        EventMemory { events: w.events.len(), bytes: w.bytes, peak_bytes: w.peak, bound: self.shared.memory }
    }

    /// The published events from `from` on, at most `max`, when memory
    /// still holds `from`: shared, without a read of the store.
    pub(crate) fn held(&self, from: u64, max: usize) -> Option<Vec<Arc<Event>>> {
        let w = self.shared.window.read().unwrap();
        let first = w.events.front()?.seq;
        if from < first || from > w.latest {
            return None;
        }
        Some(w.events.range((from - first) as usize..).take(max).cloned().collect())
    }

    /// Events published since the hub started.
    pub(crate) fn published(&self) -> u64 {
        self.shared.published.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Told when own events wait for lower seqs committed elsewhere, and
    /// when a subscriber asks for a seq not published here yet: the
    /// follower of the other processes reads the store then.
    pub(crate) fn gap(&self) -> Arc<Notify> {
        self.shared.gap.clone()
    }

    /// Publishes this process's committed events, in seq order. With a
    /// shared store they wait for any lower seq not yet published.
    pub(crate) fn publish(&self, events: Vec<Event>) {
        let mut w = self.shared.window.write().unwrap();
        if !self.shared.shared {
            for event in events {
                self.push(&mut w, event);
            }
        } else {
            for event in events {
                if event.seq > w.latest {
                    w.pending.insert(event.seq, event);
                }
            }
            self.drain(&mut w);
        }
        let waiting = !w.pending.is_empty();
        let latest = w.latest;
        drop(w);
        self.shared.changes.send_replace(latest);
        if waiting {
            self.shared.gap.notify_one();
        }
    }

    /// Publishes events read from the store, in seq order: those not
    /// published yet, then the own events they were holding back.
    pub(crate) fn publish_stored(&self, events: Vec<Event>) {
        let mut w = self.shared.window.write().unwrap();
        for event in events {
            if event.seq > w.latest {
                w.pending.remove(&event.seq);
                self.push(&mut w, event);
            }
        }
        self.drain(&mut w);
        let latest = w.latest;
        drop(w);
        self.shared.changes.send_replace(latest);
    }

    /// Publishes the held-back events that now follow `latest`.
    fn drain(&self, w: &mut Window) {
        while let Some(entry) = w.pending.first_entry() {
            if *entry.key() <= w.latest {
                entry.remove();
            } else if *entry.key() == w.latest + 1 {
                let event = entry.remove();
                self.push(w, event);
            } else {
                break;
            }
        }
    }

    fn push(&self, w: &mut Window, event: Event) {
        self.shared.published.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if event.seq != w.latest + 1 {
            // Numbering has no gap; should it ever (events pruned before
            // this process read them), memory no longer mirrors the
            // store's tail, and the store is the truth.
            w.events.clear();
            w.bytes = 0;
        }
        w.latest = event.seq;
        // The store keeps the last RETAINED_EVENTS (`log::append`).
        w.oldest_stored = w.oldest_stored.max((event.seq + 1).saturating_sub(RETAINED_EVENTS as u64));
        w.bytes += event.memory_size();
        w.events.push_back(Arc::new(event));
        while w.bytes > self.shared.memory {
            let Some(old) = w.events.pop_front() else { break };
            w.bytes -= old.memory_size();
        }
        w.peak = w.peak.max(w.bytes);
    }

    /// Subscribes from `since` (or from now).
    pub(crate) fn subscribe(&self, since: Option<u64>) -> Subscription {
        let w = self.shared.window.read().unwrap();
        let latest = w.latest;
        let changes = self.shared.changes.subscribe();
        // Events since+1 .. oldest-1 are gone when since + 1 < oldest. A
        // `since` beyond the newest event comes from a state this board
        // never had (a restored backup, another board): the client's view
        // cannot be trusted either (docs/decisions.md 7.c).
        let (resync_required, from) = match since {
            None => (false, latest),
            Some(s) if s > latest && self.shared.shared => {
                // Another process may have committed it already: the
                // store tells, and the stream starts there once this
                // process has caught up.
                drop(w);
                self.shared.gap.notify_one();
                match self.shared.newest_stored() {
                    Some(newest) if s <= newest => (false, s),
                    _ => (true, latest),
                }
            }
            Some(s) if s > latest || (s < latest && s + 1 < w.oldest_stored) => (true, latest),
            Some(s) => (false, s),
        };
        Subscription {
            resync_required,
            latest: latest.max(from),
            handed: from,
            next: from + 1,
            ready: VecDeque::new(),
            loading: None,
            changes,
            shared: self.shared.clone(),
        }
    }
}

impl Shared {
    /// The newest stored seq (blocking), `None` when it cannot be read.
    fn newest_stored(&self) -> Option<u64> {
        let store = self.store.upgrade()?;
        let newest = store.read().and_then(|r| log::newest(&*r));
        newest.inspect_err(|e| tracing::warn!(%e, "reading the newest event failed")).ok().flatten()
    }

    /// Stored events from `from` to `to`, at most a batch. Blocking.
    fn load(&self, from: u64, to: u64) -> Result<Vec<Arc<Event>>, StreamError> {
        let store = self.store.upgrade().ok_or(StreamError::Closed)?;
        // `to` is below the newest event published: read past the mark.
        let loaded = store.read_published().and_then(|r| log::load(&*r, from, to, BATCH, LOAD_BYTES));
        match loaded {
            Ok(events) => Ok(events.into_iter().map(Arc::new).collect()),
            Err(e) => {
                tracing::warn!(%e, from, "reading stored events failed");
                Err(StreamError::Closed)
            }
        }
    }
}

/// A subscription to the event stream: first the retained events after
/// `since`, then live events, each once and in order.
pub struct Subscription {
    /// True when the requested `since` is older than the retained window
    /// (or newer than the newest event): events were lost to the caller,
    /// who must reload its state. The stream then starts at `latest`.
    pub resync_required: bool,
    /// The seq of the newest event at the moment of subscribing.
    pub latest: u64,
    /// The seq of the last event handed out, or where the stream starts.
    handed: u64,
    /// The seq of the next event to take into `ready`.
    next: u64,
    ready: VecDeque<Arc<Event>>,
    /// A read of the store in flight, kept across cancelled `next` calls.
    loading: Option<JoinHandle<Result<Vec<Arc<Event>>, StreamError>>>,
    changes: watch::Receiver<u64>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("resync_required", &self.resync_required)
            .field("latest", &self.latest)
            .field("position", &self.handed)
            .finish()
    }
}

/// Where the next events come from.
enum Fill {
    /// Taken from memory into `ready`.
    Ready,
    /// From the store, up to this seq.
    Stored { to: u64 },
    /// Not published yet.
    Wait,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(loading) = self.loading.take() {
            loading.abort();
        }
    }
}

impl Subscription {
    /// The seq of the last event handed out (where the stream started,
    /// before the first).
    pub fn position(&self) -> u64 {
        self.handed
    }

    /// Whether events up to [`Subscription::latest`], the replay, remain
    /// to be handed out.
    pub fn replaying(&self) -> bool {
        self.handed < self.latest
    }

    /// The next event, waiting for it if need be. Cancel-safe: a call
    /// dropped while waiting loses nothing.
    pub async fn next(&mut self) -> Result<Arc<Event>, StreamError> {
        loop {
            if let Some(event) = self.pop() {
                return Ok(event);
            }
            if let Some(loading) = self.loading.as_mut() {
                let loaded = loading.await;
                self.loading = None;
                self.accept(loaded.map_err(|_| StreamError::Closed)??)?;
                continue;
            }
            // Marked seen before looking, so a publish after the look
            // wakes the wait below.
            self.changes.borrow_and_update();
            match self.fill()? {
                Fill::Ready => {}
                Fill::Stored { to } => {
                    let (shared, from) = (self.shared.clone(), self.next);
                    self.loading = Some(tokio::task::spawn_blocking(move || shared.load(from, to)));
                }
                Fill::Wait => {
                    if self.changes.changed().await.is_err() {
                        return Err(StreamError::Closed);
                    }
                }
            }
        }
    }

    /// The next event if it is at hand: taken already, or published and
    /// still in memory. Never waits and never reads the store (`next`
    /// does); `None` says to call `next`.
    pub fn try_next(&mut self) -> Result<Option<Arc<Event>>, StreamError> {
        if let Some(event) = self.pop() {
            return Ok(Some(event));
        }
        if self.loading.is_some() {
            return Ok(None);
        }
        match self.fill()? {
            Fill::Ready => Ok(self.pop()),
            Fill::Stored { .. } | Fill::Wait => Ok(None),
        }
    }

    /// The next event published so far, reading the store when it is no
    /// longer in memory; `None` once caught up. It blocks on the store:
    /// for synchronous callers (tools, tests), not for async tasks.
    pub fn try_next_blocking(&mut self) -> Result<Option<Arc<Event>>, StreamError> {
        if let Some(event) = self.pop() {
            return Ok(Some(event));
        }
        if let Some(loading) = self.loading.take() {
            loading.abort();
        }
        match self.fill()? {
            Fill::Ready => Ok(self.pop()),
            Fill::Stored { to } => {
                let loaded = self.shared.load(self.next, to)?;
                self.accept(loaded)?;
                Ok(self.pop())
            }
            Fill::Wait => Ok(None),
        }
    }

    fn pop(&mut self) -> Option<Arc<Event>> {
        let event = self.ready.pop_front()?;
        self.handed = event.seq;
        Some(event)
    }

    /// Takes events read from the store. They must start at `next`:
    /// anything else means the store pruned them meanwhile.
    fn accept(&mut self, loaded: Vec<Arc<Event>>) -> Result<(), StreamError> {
        if loaded.is_empty() {
            return Err(StreamError::TooSlow);
        }
        for event in loaded {
            if event.seq != self.next {
                return Err(StreamError::TooSlow);
            }
            self.next += 1;
            self.ready.push_back(event);
        }
        Ok(())
    }

    /// Takes the next events from memory, or says where they are.
    fn fill(&mut self) -> Result<Fill, StreamError> {
        let w = self.shared.window.read().unwrap();
        if self.next > w.latest {
            return Ok(Fill::Wait);
        }
        // Events published after subscribing and not yet taken.
        let behind = w.latest - (self.next - 1).max(self.latest);
        if behind > self.shared.buffer {
            return Err(StreamError::TooSlow);
        }
        let front = w.events.front().map_or(w.latest + 1, |e| e.seq);
        if self.next < front {
            return Ok(Fill::Stored { to: front - 1 });
        }
        for event in w.events.range((self.next - front) as usize..).take(BATCH) {
            self.ready.push_back(event.clone());
            self.next = event.seq + 1;
        }
        Ok(Fill::Ready)
    }
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::*;
    use crate::events::{Audience, EventKind};
    use crate::storage::redb::RedbStore;

    fn mk(seq: u64) -> Event {
        // A fixed time: the frame's length must not depend on the clock.
        let ts = Timestamp::from_second(1_700_000_000).unwrap();
        Event::new(seq, ts, EventKind::TaskUpdated, serde_json::json!("0123456789"), Audience::All)
    }

    fn hub(store: &Arc<dyn Storage>, memory: usize) -> Hub {
        Hub::new(Arc::downgrade(store), 0, None, 64, memory, false)
    }

    #[test]
    fn memory_keeps_the_newest_events_within_its_bound() {
        let store: Arc<dyn Storage> = Arc::new(RedbStore::in_memory().unwrap());
        let size = mk(10).memory_size();
        let hub = hub(&store, size * 3 + size / 2);
        hub.publish((1..=10).map(mk).collect());
        let m = hub.memory();
        assert_eq!(m.events, 3);
        assert_eq!(m.bytes, [8, 9, 10].map(|s| mk(s).memory_size()).iter().sum::<usize>());
        assert!(m.peak_bytes <= m.bound);
        let mut sub = hub.subscribe(Some(7));
        let seqs: Vec<u64> = std::iter::from_fn(|| sub.try_next().unwrap()).map(|e| e.seq).collect();
        assert_eq!(seqs, [8, 9, 10]);
        assert!(!sub.replaying());
    }

    #[test]
    fn resync_when_since_is_older_than_the_store_or_newer_than_the_newest() {
        let store: Arc<dyn Storage> = Arc::new(RedbStore::in_memory().unwrap());
        let hub = Hub::new(Arc::downgrade(&store), 9, Some(5), 64, 1 << 20, false);
        assert!(hub.subscribe(Some(2)).resync_required);
        assert!(!hub.subscribe(Some(4)).resync_required);
        assert!(!hub.subscribe(Some(9)).resync_required);
        assert!(hub.subscribe(Some(11)).resync_required);
        let sub = hub.subscribe(Some(4));
        assert!(sub.replaying());
        assert_eq!(sub.position(), 4);
    }

    #[test]
    fn own_events_wait_for_the_lower_seqs_of_other_processes() {
        let store: Arc<dyn Storage> = Arc::new(RedbStore::in_memory().unwrap());
        let hub = Hub::new(Arc::downgrade(&store), 1, None, 64, 1 << 20, true);
        let mut sub = hub.subscribe(None);
        // 2 and 3 were committed elsewhere, before this process's 4 and 5.
        hub.publish(vec![mk(4), mk(5)]);
        assert_eq!(hub.latest(), 1, "held back");
        assert_eq!(sub.try_next().unwrap(), None);
        hub.publish_stored(vec![mk(2)]);
        assert_eq!(hub.latest(), 2);
        // Read back from the store with the next one: not published twice.
        hub.publish_stored(vec![mk(3), mk(4)]);
        assert_eq!(hub.latest(), 5);
        hub.publish(vec![mk(6)]);
        let seqs: Vec<u64> = std::iter::from_fn(|| sub.try_next().unwrap()).map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3, 4, 5, 6]);
    }

    #[test]
    fn a_subscriber_that_falls_a_buffer_behind_is_too_slow() {
        let store: Arc<dyn Storage> = Arc::new(RedbStore::in_memory().unwrap());
        let hub = hub(&store, 1 << 20);
        let mut sub = hub.subscribe(None);
        hub.publish((1..=64).map(mk).collect());
        assert_eq!(sub.try_next().unwrap().unwrap().seq, 1);
        let mut slow = hub.subscribe(None);
        hub.publish((65..=129).map(mk).collect());
        assert_eq!(slow.try_next(), Err(StreamError::TooSlow));
        // What was taken in time is still handed out, in order.
        assert_eq!(sub.try_next().unwrap().unwrap().seq, 2);
    }
}
