//! The assignees an import names: found among the board's members, or
//! created as inactive members when the import asks for it. (The authors
//! of imported comments are never members: see `add_comments`.)

use std::collections::HashMap;

use uuid::Uuid;

use super::super::Tx;
use crate::error::Result;
use crate::events::EventKind;
use crate::model::{AgentConfig, MemberStatus, MemberType, Role};
use crate::records::{MemberRecord, RecordWrites, Records, Secret};
use crate::validate::Slug;

/// Members of the board by what a source calls people, created when
/// asked to and missing.
pub(super) struct People {
    create: bool,
    found: HashMap<String, Option<Uuid>>,
    pub created: Vec<String>,
    /// The people who match no member and were not created, as the
    /// source names them, each once.
    pub unmatched: Vec<String>,
}

impl People {
    /// No one found yet; `create` makes the missing ones members.
    pub fn new(create: bool) -> People {
        People { create, found: HashMap::new(), created: Vec::new(), unmatched: Vec::new() }
    }

    pub fn resolve(&mut self, tx: &mut Tx<'_>, who: &str) -> Result<Option<Uuid>> {
        let who = who.trim().trim_start_matches('@').trim();
        if who.is_empty() {
            return Ok(None);
        }
        if let Some(found) = self.found.get(who) {
            return Ok(*found);
        }
        let found = match find_member(tx.w, who)? {
            Some(id) => Some(id),
            None if self.create => {
                let m = create_inactive(tx, who)?;
                self.created.push(m.slug.clone());
                Some(m.id)
            }
            None => {
                self.unmatched.push(who.to_string());
                None
            }
        };
        self.found.insert(who.to_string(), found);
        Ok(found)
    }
}

/// By slug, by an email's local part as a slug, then by a name only one
/// member has (any case).
fn find_member(r: &(impl Records + ?Sized), who: &str) -> Result<Option<Uuid>> {
    let lower = who.to_lowercase();
    if let Some(m) = r.member_by_slug(&lower)? {
        return Ok(Some(m.id));
    }
    if let Some((local, _)) = lower.split_once('@')
        && let Some(m) = r.member_by_slug(local)?
    {
        return Ok(Some(m.id));
    }
    let named = r.members_by_name(who)?;
    Ok(if named.len() == 1 { Some(named[0].id) } else { None })
}

fn create_inactive(tx: &mut Tx<'_>, who: &str) -> Result<MemberRecord> {
    let slug = super::super::members::free_slug_of(tx.w, who, "imported")?;
    let slug = Slug::new(slug).map_err(|e| e.at("assignee"))?;
    let name: String = who.chars().take(200).collect();
    let m = MemberRecord {
        id: Uuid::now_v7(),
        name,
        slug: slug.to_string(),
        kind: MemberType::Human,
        role: Role::Member,
        status: MemberStatus::Offline,
        is_active: false,
        avatar_url: None,
        last_seen_at: tx.now,
        agent_config: AgentConfig::default(),
        created_at: tx.now,
        email: None,
    };
    tx.w.put_member(None, &m)?;
    tx.w.put_secret(m.id, &Secret::default())?;
    tx.emit_all(EventKind::MemberCreated, m.to_wire())?;
    Ok(m)
}
