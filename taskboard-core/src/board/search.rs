//! Title search: a trigram index kept in the store.
//!
//! Every distinct three-byte window of a task's lower-cased title (UTF-8)
//! without whitespace is an entry `trigram task_id` of
//! [`TITLE_TRIGRAMS`]. A title containing the query contains every
//! trigram of the query, so the tasks of the query's rarest indexed
//! trigram that also hold all its other indexed trigrams are the
//! candidates; their titles are then checked, so the answer is exact.
//!
//! A task's title is indexed in the task's own transaction, in two
//! steps. It is first written whole to [`TITLE_RECENT`], which every
//! search reads through (it holds at most [`FOLD_AT`] titles); the
//! transaction that brings it to [`FOLD_AT`] folds all of them into the
//! trigram index at once. Written task by task, the twenty-odd trigrams
//! of a title each touch their own page of a large index, and on a board
//! of a million tasks that was most of what a creation wrote; folded a
//! thousand titles at a time, titles that share trigrams share pages.

use uuid::Uuid;

use crate::error::Result;
use crate::records::{Records, TaskRecord};
use crate::storage::codec::{Key, encode, uuid_suffix};
use crate::storage::tables::{META, TITLE_RECENT, TITLE_TRIGRAMS};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, WriteTxn};

/// The titles [`TITLE_RECENT`] holds before they are folded into the
/// trigram index.
pub const FOLD_AT: u64 = 1024;
/// The key in META of the number of entries in [`TITLE_RECENT`].
pub(crate) const RECENT_KEY: &[u8] = b"title_recent";

/// Keeps the search index in step with a task written (`new`) or deleted
/// (`new` is `None`) in this transaction.
pub(crate) fn index_title<W: WriteTxn + ?Sized>(
    w: &mut W,
    old: Option<&TaskRecord>,
    new: Option<&TaskRecord>,
) -> Result<()> {
    let Some(id) = new.or(old).map(|t| t.id) else { return Ok(()) };
    if old.map(|t| &t.title) == new.map(|t| &t.title) {
        return Ok(());
    }
    let mut recent = w.record::<u64>(META, RECENT_KEY)?.unwrap_or(0);
    if let Some(old) = old {
        if w.get(TITLE_RECENT, id.as_bytes())?.is_some() {
            w.delete(TITLE_RECENT, id.as_bytes())?;
            recent = recent.saturating_sub(1);
        } else {
            // Every trigram, not only those indexed today: a board written
            // by an older build indexed those with whitespace too.
            for g in trigrams(&old.title) {
                w.delete(TITLE_TRIGRAMS, &Key::new().bytes(&g).uuid(id).build())?;
            }
        }
    }
    if let Some(new) = new {
        w.put(TITLE_RECENT, id.as_bytes(), new.title.to_lowercase().as_bytes())?;
        recent += 1;
    }
    if recent >= FOLD_AT {
        fold(w)?;
        recent = 0;
    }
    w.put(META, RECENT_KEY, &encode(&recent))
}

/// Moves every title of [`TITLE_RECENT`] into the trigram index, in key
/// order.
pub(crate) fn fold<W: WriteTxn + ?Sized>(w: &mut W) -> Result<()> {
    let mut titles = Vec::new();
    w.scan(TITLE_RECENT, KeyRange::all(), Direction::Forward, &mut |k, v| {
        titles.push((uuid_suffix(k)?, String::from_utf8_lossy(v).into_owned()));
        Ok(Scan::Continue)
    })?;
    let mut keys: Vec<Vec<u8>> = titles
        .iter()
        .flat_map(|(id, title)| {
            indexed(title).into_iter().map(move |g| Key::new().bytes(&g).uuid(*id).build())
        })
        .collect();
    keys.sort_unstable();
    for k in &keys {
        w.put(TITLE_TRIGRAMS, k, &[])?;
    }
    for (id, _) in &titles {
        w.delete(TITLE_RECENT, id.as_bytes())?;
    }
    w.put(META, RECENT_KEY, &encode(&0u64))
}

/// The recent tasks whose title contains the lower-cased query.
fn recent_matches(r: &dyn ReadTxn, q: &str) -> Result<Vec<Uuid>> {
    let mut out = Vec::new();
    r.scan(TITLE_RECENT, KeyRange::all(), Direction::Forward, &mut |k, v| {
        if std::str::from_utf8(v).is_ok_and(|title| title.contains(q)) {
            out.push(uuid_suffix(k)?);
        }
        Ok(Scan::Continue)
    })?;
    Ok(out)
}

/// The distinct trigrams of a title, lower-cased.
fn trigrams(title: &str) -> Vec<[u8; 3]> {
    let lower = title.to_lowercase();
    let mut out: Vec<[u8; 3]> = lower.as_bytes().windows(3).map(|w| [w[0], w[1], w[2]]).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The trigrams the index holds: those without whitespace. The trigrams
/// within a query's words narrow a search about as well, the titles of
/// the candidates are checked anyway, and a title has a third to a half
/// fewer entries without those that straddle its word boundaries.
fn indexed(title: &str) -> Vec<[u8; 3]> {
    let mut out = trigrams(title);
    out.retain(|g| !g.iter().any(u8::is_ascii_whitespace));
    out
}

/// What the index says about a query.
pub(crate) enum Candidates {
    /// The tasks whose titles may contain the query (a superset), by id.
    Few(Vec<Uuid>),
    /// The query is too short or too common for the index to narrow it.
    Many,
}

/// The largest posting list worth reading and probing; beyond it, a scan
/// in list order checking titles finds a page sooner.
const MAX_CANDIDATES: usize = 20_000;

/// The candidates for a lower-cased query.
pub(crate) fn candidates(r: &dyn ReadTxn, q: &str) -> Result<Candidates> {
    let grams = indexed(q);
    if grams.is_empty() {
        return Ok(Candidates::Many);
    }
    // The rarest trigram, reading at most MAX_CANDIDATES entries of each.
    let mut best: Option<(usize, Vec<Uuid>)> = None;
    for (i, g) in grams.iter().enumerate() {
        let limit = best.as_ref().map_or(MAX_CANDIDATES, |(_, ids)| ids.len());
        let mut ids = Vec::new();
        let mut complete = true;
        r.scan(TITLE_TRIGRAMS, KeyRange::prefix(g), Direction::Forward, &mut |k, _| {
            if ids.len() >= limit {
                complete = false;
                return Ok(Scan::Stop);
            }
            ids.push(uuid_suffix(k)?);
            Ok(Scan::Continue)
        })?;
        if complete {
            best = Some((i, ids));
            if best.as_ref().is_some_and(|(_, ids)| ids.is_empty()) {
                break;
            }
        }
    }
    let Some((rarest, ids)) = best else { return Ok(Candidates::Many) };
    let mut out = recent_matches(r, q)?;
    'ids: for id in ids {
        for (i, g) in grams.iter().enumerate() {
            if i != rarest && r.get(TITLE_TRIGRAMS, &Key::new().bytes(g).uuid(id))?.is_none() {
                continue 'ids;
            }
        }
        out.push(id);
    }
    Ok(Candidates::Few(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigrams_are_distinct_and_lower_case() {
        assert_eq!(trigrams("AbAbA"), vec![*b"aba", *b"bab"]);
        assert!(trigrams("ab").is_empty());
        assert!(indexed("ab cd").is_empty());
        assert_eq!(indexed("abc de"), vec![*b"abc"]);
    }
}
