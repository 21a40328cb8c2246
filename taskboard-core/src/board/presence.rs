//! Presence (docs/rules.md, presence) with any number of server processes:
//! a member is connected while some process lists it.
//!
//! Each process counts its own open event streams per member in memory,
//! and lists the members it has at least one for in the store
//! (`memberid_processid_until`), each entry good until a time it renews
//! every [`PRESENCE_RENEWAL`]. The first stream of a member sets it
//! `online`; the last stream on one process sets it `offline` only when no
//! other process lists it. A process that ends without closing its streams
//! (a crash, a kill) leaves entries that expire: any process's renewal
//! removes them, and sets `offline` the members no one lists anymore.
//! Every decision is one write operation, so across processes each change
//! of status happens, and is told as `agent.status`, once.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde_json::json;
use uuid::Uuid;

use super::{Actor, Board, Tx};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::model::MemberStatus;
use crate::records::{RecordWrites, Records};
use crate::storage::codec::{Key, decode};
use crate::storage::tables::PRESENCE;
use crate::storage::{Direction, KeyRange, Scan};
use crate::wire::RunnerSeen;

/// How often a process renews its entries (and removes expired ones).
pub const PRESENCE_RENEWAL: Duration = Duration::from_secs(5);
/// How long an entry lasts without renewal: several renewals, so a busy
/// process is not taken for a dead one.
pub const PRESENCE_TTL: Duration = Duration::from_secs(30);

/// Where polls of the event stream list their members, in place of a
/// process: a runner polls (`GET /events?wait=…`) rather than holding a
/// stream open, and is present while its polls come. An entry lasts the
/// poll's wait and [`PRESENCE_TTL`] more; any process's renewal removes
/// it once expired, as it does a dead process's.
const POLLS: Uuid = Uuid::from_u128(0x706f_6c6c);

/// The longest name of a runner the board keeps.
const RUNNER_NAME_CHARS: usize = 100;

type Connections = Arc<Mutex<HashMap<Uuid, usize>>>;

/// What this process knows of presence, kept here and nowhere else: its
/// open event streams per member, its own id among the processes serving
/// the board, when each member's polls last renewed its presence, and the
/// runners polling it.
pub(super) struct Presence {
    connections: Connections,
    process: Uuid,
    polled: Mutex<HashMap<Uuid, Instant>>,
    /// By agent and runner name: when each was seen, and until when it
    /// counts.
    runners: Mutex<HashMap<(Uuid, String), (Timestamp, Instant)>>,
}

impl Default for Presence {
    fn default() -> Presence {
        Presence {
            connections: Connections::default(),
            process: Uuid::now_v7(),
            polled: Mutex::default(),
            runners: Mutex::default(),
        }
    }
}

fn key(member: Uuid, process: Uuid) -> Vec<u8> {
    Key::new().uuid(member).uuid(process).build()
}

fn ids(key: &[u8]) -> Result<(Uuid, Uuid)> {
    let id = |r: std::ops::Range<usize>| {
        key.get(r).and_then(|b| Uuid::from_slice(b).ok()).ok_or_else(|| Error::internal("malformed key"))
    };
    Ok((id(0..16)?, id(16..32)?))
}

fn until(now: Timestamp) -> Result<Timestamp> {
    until_after(now, PRESENCE_TTL)
}

fn until_after(now: Timestamp, lasting: Duration) -> Result<Timestamp> {
    now.checked_add(jiff::SignedDuration::try_from(lasting).map_err(Error::internal)?)
        .map_err(Error::internal)
}

/// Whether a process other than `process` lists `member`, unexpired.
fn listed_elsewhere(tx: &Tx<'_>, member: Uuid, process: Uuid) -> Result<bool> {
    let mut listed = false;
    tx.w.scan(PRESENCE, KeyRange::prefix(member.as_bytes()), Direction::Forward, &mut |k, v| {
        let (_, other) = ids(k)?;
        if other != process && decode::<Timestamp>(v)? > tx.now {
            listed = true;
            return Ok(Scan::Stop);
        }
        Ok(Scan::Continue)
    })?;
    Ok(listed)
}

/// Sets the status of `member` to `status`, unless it is `busy` (set by
/// the member itself) or already so; tells everyone.
fn set_status(tx: &mut Tx<'_>, member: Uuid, status: Option<MemberStatus>) -> Result<()> {
    let Some(mut m) = tx.w.member(member)? else { return Ok(()) };
    m.last_seen_at = tx.now;
    let change = status.filter(|s| m.status != MemberStatus::Busy && m.status != *s);
    if let Some(s) = change {
        m.status = s;
    }
    tx.w.put_member_record(&m)?;
    if let Some(s) = change {
        tx.emit_all(EventKind::AgentStatus, json!({"member_id": member, "status": s}))?;
    }
    Ok(())
}

impl Board {
    /// Marks an event stream of `actor` opened: the first one sets
    /// `online` (unless busy) and refreshes `last_seen_at`.
    pub async fn connected(&self, actor: &Actor) -> Result<()> {
        let first = {
            let mut conns = self.inner.presence.connections.lock().unwrap();
            let n = conns.entry(actor.id()).or_insert(0);
            *n += 1;
            *n == 1
        };
        self.presence(actor.id(), first).await
    }

    /// Marks a stream closed: the last one of this process sets `offline`
    /// unless another process lists the member, or the member set `busy`
    /// itself.
    pub async fn disconnected(&self, actor: &Actor) -> Result<()> {
        let last = {
            let mut conns = self.inner.presence.connections.lock().unwrap();
            match conns.get_mut(&actor.id()) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                Some(_) => {
                    conns.remove(&actor.id());
                    true
                }
                None => false,
            }
        };
        self.presence(actor.id(), last).await
    }

    /// Brings this process's entry for `member` in line with its streams
    /// as they are when the operation runs (so operations of one member
    /// that overtake each other still leave the right entry); `changed`
    /// when its first stream opened or its last closed.
    async fn presence(&self, member: Uuid, changed: bool) -> Result<()> {
        let (process, conns): (Uuid, Connections) =
            (self.inner.presence.process, self.inner.presence.connections.clone());
        self.write(move |tx| {
            let here = conns.lock().unwrap().contains_key(&member);
            let k = key(member, process);
            if here {
                tx.w.put_record(PRESENCE, &k, &until(tx.now)?)?;
            } else {
                tx.w.delete(PRESENCE, &k)?;
            }
            let status = match (changed, here) {
                (false, _) => None,
                (true, true) => Some(MemberStatus::Online),
                (true, false) if listed_elsewhere(tx, member, process)? => None,
                (true, false) => Some(MemberStatus::Offline),
            };
            set_status(tx, member, status)
        })
        .await
    }

    /// A poll of the event stream by `actor`, waiting up to `wait`: the
    /// member is present until the wait and [`PRESENCE_TTL`] have passed
    /// without another (set `online` if it was `offline`). The store is
    /// written at most every [`PRESENCE_RENEWAL`] per member. `runner`,
    /// the name a runner polls under, is listed by [`Board::runners`].
    pub async fn polled(&self, actor: &Actor, wait: Duration, runner: Option<&str>) -> Result<()> {
        let member = actor.id();
        let now = Instant::now();
        let lasting = wait + PRESENCE_TTL;
        if let Some(name) = runner {
            let name: String = name.trim().chars().take(RUNNER_NAME_CHARS).collect();
            if !name.is_empty() {
                let mut runners = self.inner.presence.runners.lock().unwrap();
                runners.retain(|_, (_, until)| *until > now);
                runners.insert((member, name), (Timestamp::now(), now + lasting));
            }
        }
        {
            let mut polled = self.inner.presence.polled.lock().unwrap();
            if polled.get(&member).is_some_and(|at| now.duration_since(*at) < PRESENCE_RENEWAL) {
                return Ok(());
            }
            polled.insert(member, now);
        }
        self.write(move |tx| {
            tx.w.put_record(PRESENCE, &key(member, POLLS), &until_after(tx.now, lasting)?)?;
            set_online_if_offline(tx, member)
        })
        .await
    }

    /// `GET /runners`: the runners polling this process for agents now,
    /// by name, with the agents each serves.
    pub async fn runners(&self) -> Result<Vec<RunnerSeen>> {
        let now = Instant::now();
        let mut by_name: std::collections::BTreeMap<String, (Timestamp, Vec<Uuid>)> = Default::default();
        {
            let mut runners = self.inner.presence.runners.lock().unwrap();
            runners.retain(|_, (_, until)| *until > now);
            for ((member, name), (seen, _)) in runners.iter() {
                let entry = by_name.entry(name.clone()).or_insert((*seen, Vec::new()));
                entry.0 = entry.0.max(*seen);
                entry.1.push(*member);
            }
        }
        self.read(move |r| {
            by_name
                .into_iter()
                .map(|(name, (last_seen_at, members))| {
                    let mut agents =
                        members.into_iter().map(|m| r.member_ref(m)).collect::<Result<Vec<_>>>()?;
                    agents.sort_by(|a, b| a.slug.cmp(&b.slug));
                    Ok(RunnerSeen { name, agents, last_seen_at })
                })
                .collect()
        })
        .await
    }

    /// Renews this process's entries, and removes the expired entries of
    /// any process: a member no process lists anymore is set `offline`
    /// (unless busy). Run every [`PRESENCE_RENEWAL`] by the maintenance
    /// task; returns how many members were set offline.
    pub async fn renew_presence(&self) -> Result<usize> {
        let (process, conns): (Uuid, Connections) =
            (self.inner.presence.process, self.inner.presence.connections.clone());
        self.write(move |tx| {
            let here: HashSet<Uuid> = conns.lock().unwrap().keys().copied().collect();
            let mut listed: HashSet<Uuid> = HashSet::new();
            let mut expired: Vec<(Uuid, Uuid)> = Vec::new();
            let mut own: HashSet<Uuid> = HashSet::new();
            tx.w.scan(PRESENCE, KeyRange::all(), Direction::Forward, &mut |k, v| {
                let (member, by) = ids(k)?;
                if by == process {
                    own.insert(member);
                    if !here.contains(&member) {
                        expired.push((member, by));
                    }
                } else if decode::<Timestamp>(v)? <= tx.now {
                    expired.push((member, by));
                } else {
                    listed.insert(member);
                }
                Ok(Scan::Continue)
            })?;
            let until = until(tx.now)?;
            for member in &here {
                tx.w.put_record(PRESENCE, &key(*member, process), &until)?;
                if !own.contains(member) && !listed.contains(member) {
                    // Taken for gone by another process (this one was too
                    // slow to renew): online again.
                    set_online_if_offline(tx, *member)?;
                }
            }
            let mut gone = 0;
            let mut seen = HashSet::new();
            for (member, by) in expired {
                tx.w.delete(PRESENCE, &key(member, by))?;
                if !here.contains(&member) && !listed.contains(&member) && seen.insert(member) {
                    if tx.w.member(member)?.is_some_and(|m| m.status == MemberStatus::Online) {
                        gone += 1;
                    }
                    set_status(tx, member, Some(MemberStatus::Offline))?;
                }
            }
            Ok(gone)
        })
        .await
    }
}

fn set_online_if_offline(tx: &mut Tx<'_>, member: Uuid) -> Result<()> {
    if tx.w.member(member)?.is_some_and(|m| m.status == MemberStatus::Offline) {
        set_status(tx, member, Some(MemberStatus::Online))?;
    }
    Ok(())
}
