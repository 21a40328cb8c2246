//! Title search: a trigram index kept in the store.
//!
//! Every distinct three-byte window of a task's lower-cased title (UTF-8)
//! without whitespace is an entry `trigram task_id` of
//! [`TITLE_TRIGRAMS`]. A title containing the query contains every
//! trigram of the query, so the tasks of the query's rarest indexed
//! trigram that also hold all its other indexed trigrams are the
//! candidates; their titles are then checked, so the answer is exact.
//!
//! A task's title is indexed in the task's own transaction, in steps.
//! It is first written whole to [`TITLE_RECENT`], which every search
//! reads through, tagged with the number of slices folded so far. The
//! trigram space is cut into [`SLICES`] slices (by a hash of the
//! trigram); every [`STEP`] new titles, one slice is folded: the trigrams
//! of that slice of every recent title go into the index at once, in key
//! order. A title has had every slice after [`SLICES`] folds and leaves
//! the recent titles then, so they hold at most [`RECENT_MAX`].
//!
//! Written task by task, the twenty-odd trigrams of a title each touch
//! their own page of a large index, and on a board of a million tasks
//! that was most of what a creation wrote. A fold writes the new entries
//! of a trigram next to each other, so the pages a fold touches are about
//! the distinct trigrams of the titles it folds, which grow much slower
//! than the titles; folding a slice at a time over four thousand titles
//! keeps each fold as small as folding a thousand titles whole.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Records, TaskRecord};
use crate::error::Result;
use crate::storage::codec::{Key, encode, uuid_suffix};
use crate::storage::tables::{META, TITLE_RECENT, TITLE_TRIGRAMS};
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, WriteTxn};

/// The slices of the trigram space, folded one at a time (a power of
/// two: a slice is the top bits of a hash).
pub const SLICES: u64 = 8;
const _: () = assert!(SLICES.is_power_of_two());
/// New titles between two folds.
pub const STEP: u64 = 512;
/// The most titles [`TITLE_RECENT`] holds.
pub const RECENT_MAX: u64 = SLICES * STEP;
/// The key in META of the fold's [`FoldState`].
pub(crate) const FOLD_KEY: &[u8] = b"title_fold";
/// The key in META of the count of recent titles kept by builds that
/// folded every title whole; removed by the first fold.
pub(crate) const LEGACY_KEY: &[u8] = b"title_recent";
/// The first byte of a tagged recent title (never the first byte of
/// UTF-8 text); an entry without it, written by an older build, has tag 0.
const TAGGED: u8 = 0xFF;

/// Where the fold stands.
#[derive(Debug, Default, Serialize, Deserialize)]
struct FoldState {
    /// Slices folded since the board began (the next is `folded % SLICES`).
    folded: u64,
    /// New titles since the last fold.
    since: u64,
}

/// The slice a trigram belongs to.
fn slice_of(g: &[u8; 3]) -> u64 {
    let word = u32::from_le_bytes([g[0], g[1], g[2], 0]).wrapping_mul(0x9E37_79B1);
    u64::from(word >> (32 - SLICES.trailing_zeros()))
}

/// A recent title as stored: the tag, then the lower-cased title.
fn recent_value(tag: u64, lower: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(9 + lower.len());
    v.push(TAGGED);
    v.extend_from_slice(&tag.to_be_bytes());
    v.extend_from_slice(lower.as_bytes());
    v
}

/// The tag and lower-cased title of a stored recent title.
fn recent_entry(v: &[u8]) -> (u64, &[u8]) {
    match v {
        [TAGGED, rest @ ..] if rest.len() >= 8 => {
            let (tag, title) = rest.split_at(8);
            (u64::from_be_bytes(tag.try_into().expect("eight bytes")), title)
        }
        _ => (0, v),
    }
}

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
    if let Some(old) = old {
        w.delete(TITLE_RECENT, id.as_bytes())?;
        // Every trigram, not only those indexed today: a recent title may
        // have some of its slices folded already, and a board written by
        // an older build indexed trigrams with whitespace too.
        for g in trigrams(&old.title.to_lowercase()) {
            w.delete(TITLE_TRIGRAMS, &Key::new().bytes(&g).uuid(id).build())?;
        }
    }
    let Some(new) = new else { return Ok(()) };
    let mut state = w.record::<FoldState>(META, FOLD_KEY)?.unwrap_or_default();
    w.put(TITLE_RECENT, id.as_bytes(), &recent_value(state.folded, &new.title.to_lowercase()))?;
    state.since += 1;
    if state.since >= STEP {
        fold_slice(w, &mut state)?;
    }
    w.put(META, FOLD_KEY, &encode(&state))
}

/// Folds the next slice of every recent title into the trigram index.
fn fold_slice<W: WriteTxn + ?Sized>(w: &mut W, state: &mut FoldState) -> Result<()> {
    fold_titles(w, Some(state.folded))?;
    state.folded += 1;
    state.since = 0;
    Ok(())
}

/// Folds every recent title whole into the trigram index.
pub(crate) fn fold<W: WriteTxn + ?Sized>(w: &mut W) -> Result<()> {
    fold_titles(w, None)?;
    let mut state = w.record::<FoldState>(META, FOLD_KEY)?.unwrap_or_default();
    state.since = 0;
    w.put(META, FOLD_KEY, &encode(&state))
}

/// Writes to the trigram index the trigrams of the slice of fold number
/// `fold` (of every slice if `None`) of every recent title, in key order,
/// and lets go of the titles that then have had every slice.
fn fold_titles<W: WriteTxn + ?Sized>(w: &mut W, fold: Option<u64>) -> Result<()> {
    let mut keys = Vec::new();
    let mut done = Vec::new();
    w.scan(TITLE_RECENT, KeyRange::all(), Direction::Forward, &mut |k, v| {
        let id = uuid_suffix(k)?;
        let (tag, title) = recent_entry(v);
        for g in indexed(&String::from_utf8_lossy(title)) {
            if fold.is_none_or(|n| slice_of(&g) == n % SLICES) {
                keys.push(Key::new().bytes(&g).uuid(id).build());
            }
        }
        if fold.is_none_or(|n| tag + SLICES <= n + 1) {
            done.push(id);
        }
        Ok(Scan::Continue)
    })?;
    keys.sort_unstable();
    for k in &keys {
        w.put(TITLE_TRIGRAMS, k, &[])?;
    }
    for id in &done {
        w.delete(TITLE_RECENT, id.as_bytes())?;
    }
    w.delete(META, LEGACY_KEY)?;
    Ok(())
}

/// The recent tasks whose title contains the lower-cased query.
fn recent_matches(r: &dyn ReadTxn, q: &str) -> Result<Vec<Uuid>> {
    let mut out = Vec::new();
    r.scan(TITLE_RECENT, KeyRange::all(), Direction::Forward, &mut |k, v| {
        if std::str::from_utf8(recent_entry(v).1).is_ok_and(|title| title.contains(q)) {
            out.push(uuid_suffix(k)?);
        }
        Ok(Scan::Continue)
    })?;
    Ok(out)
}

/// The distinct trigrams of a lower-cased title.
fn trigrams(lower: &str) -> Vec<[u8; 3]> {
    let mut out: Vec<[u8; 3]> = lower.as_bytes().windows(3).map(|w| [w[0], w[1], w[2]]).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The trigrams the index holds: those without whitespace. The trigrams
/// within a query's words narrow a search about as well, the titles of
/// the candidates are checked anyway, and a title has a third to a half
/// fewer entries without those that straddle its word boundaries.
fn indexed(lower: &str) -> Vec<[u8; 3]> {
    let mut out = trigrams(lower);
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
        assert_eq!(trigrams("ababa"), vec![*b"aba", *b"bab"]);
        assert!(trigrams("ab").is_empty());
        assert!(indexed("ab cd").is_empty());
        assert_eq!(indexed("abc de"), vec![*b"abc"]);
    }

    #[test]
    fn every_slice_holds_a_share_of_the_trigrams() {
        let mut counts = [0usize; SLICES as usize];
        for i in 0..1000 {
            let g = format!("{i:03}");
            counts[slice_of(g.as_bytes().try_into().unwrap()) as usize] += 1;
        }
        for c in counts {
            assert!((60..=190).contains(&c), "{counts:?}");
        }
    }
}
