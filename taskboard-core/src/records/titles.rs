//! Title search: a trigram index kept in the store.
//!
//! Every distinct three-byte window of a task's lower-cased title (UTF-8)
//! without whitespace is a posting of the task under that trigram in
//! [`TITLE_TRIGRAMS`]. A title containing the query contains every
//! trigram of the query, so the tasks in the postings of every indexed
//! trigram of the query are the candidates; their titles are then
//! checked, so the answer is exact.
//!
//! A task's title is indexed in the task's own transaction, in steps.
//! It is first written whole to [`TITLE_RECENT`], which every search
//! reads through, tagged with the number of slices folded so far. The
//! trigram space is cut into [`SLICES`] slices (by a hash of the
//! trigram); every [`STEP`] new titles, one slice is folded: the trigrams
//! of that slice of every recent title go into the index at once. A title
//! has had every slice after [`SLICES`] folds and leaves the recent
//! titles then, so they hold at most [`RECENT_MAX`].
//!
//! A fold writes the postings of each distinct trigram of its slice as
//! posting lists, `trigram fold first_id` → the ids of the tasks it adds
//! under that trigram, in order, at most [`LIST_IDS`] to a list. Written
//! one entry per task and trigram, the fold of a slice was thousands of
//! B-tree inserts, a fifth of what the writer did
//! for a task's creation, and the stall of the writer it caused was the
//! creations' p99 (docs/storage.md, S.41). A task's postings are found
//! again from the fold count it was tagged with, which its record keeps
//! (`TaskRecord::title_fold`): the slice of trigram `g` of a title tagged
//! `t` is folded by the first fold `n >= t` with `n % SLICES` the slice
//! of `g`. Builds before the posting lists wrote one entry `trigram
//! task_id` → () per posting; those are read and deleted as they are.

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
/// (`new` is `None`) in this transaction. Returns the fold count the new
/// title is tagged with, when it indexed one, for the task's record.
pub(crate) fn index_title<W: WriteTxn + ?Sized>(
    w: &mut W,
    old: Option<&TaskRecord>,
    new: Option<&TaskRecord>,
) -> Result<Option<u64>> {
    let Some(id) = new.or(old).map(|t| t.id) else { return Ok(None) };
    if old.map(|t| &t.title) == new.map(|t| &t.title) {
        return Ok(None);
    }
    let mut state = w.record::<FoldState>(META, FOLD_KEY)?.unwrap_or_default();
    if let Some(old) = old {
        unindex(w, old, state.folded)?;
    }
    let Some(new) = new else { return Ok(None) };
    let tag = state.folded;
    w.put(TITLE_RECENT, id.as_bytes(), &recent_value(tag, &new.title.to_lowercase()))?;
    state.since += 1;
    if state.since >= STEP {
        fold_slice(w, &mut state)?;
    }
    w.put(META, FOLD_KEY, &encode(&state))?;
    Ok(Some(tag))
}

/// Removes every posting of `old`'s title: the recent title, and the
/// postings the folds before `folded` gave it.
fn unindex<W: WriteTxn + ?Sized>(w: &mut W, old: &TaskRecord, folded: u64) -> Result<()> {
    let id = old.id;
    let recent = w.get(TITLE_RECENT, id.as_bytes())?.map(|v| recent_entry(&v).0);
    if recent.is_some() {
        w.remove(TITLE_RECENT, id.as_bytes())?;
    }
    // The tag of a recent title is the one it was written with; the
    // record's may be older (a record read before a rename in the same
    // transaction).
    let tag = recent.or(old.title_fold);
    // Every trigram, not only those indexed today: a board written by an
    // older build indexed trigrams with whitespace too.
    for g in trigrams(&old.title.to_lowercase()) {
        if w.delete(TITLE_TRIGRAMS, &Key::new().bytes(&g).uuid(id).build())?
            || g.iter().any(u8::is_ascii_whitespace)
        {
            continue;
        }
        match tag {
            Some(tag) => {
                let n = fold_of(tag, &g);
                if n < folded {
                    remove_from_lists(w, &Key::new().bytes(&g).u64(n).build(), id)?;
                }
            }
            // A title folded without its record learning the tag (recent
            // when the posting lists came): look through every list.
            None => remove_from_lists(w, &g, id)?,
        }
    }
    Ok(())
}

/// The length of the key of a posting list: trigram, fold number, the
/// first id the list was written with.
const LIST_KEY_LEN: usize = 3 + 8 + 16;

/// The most ids one posting list holds: a fold's postings of a common
/// trigram are cut into lists of this many, so that every list fits in
/// a page of the store (4 KiB) rather than needing pages of its own.
const LIST_IDS: usize = 255;

/// The key of a posting list of trigram `g` written by fold `n`, starting
/// with task `first`.
fn list_key(g: &[u8; 3], n: u64, first: Uuid) -> Vec<u8> {
    Key::new().bytes(g).u64(n).uuid(first).build()
}

/// The fold that indexes trigram `g` of a title tagged `tag`.
fn fold_of(tag: u64, g: &[u8; 3]) -> u64 {
    tag + (slice_of(g) + SLICES - tag % SLICES) % SLICES
}

/// Where `id` is in the posting list `list`, or where it would go.
fn position(list: &[u8], id: Uuid) -> std::result::Result<usize, usize> {
    list.as_chunks::<16>().0.binary_search(id.as_bytes())
}

/// Takes `id` out of the posting lists whose keys start with `prefix`
/// (a trigram, or a trigram and a fold), deleting a list left empty.
fn remove_from_lists<W: WriteTxn + ?Sized>(w: &mut W, prefix: &[u8], id: Uuid) -> Result<()> {
    let mut found = Vec::new();
    w.scan(TITLE_TRIGRAMS, KeyRange::prefix(prefix), Direction::Forward, &mut |k, v| {
        if k.len() == LIST_KEY_LEN
            && let Ok(at) = position(v, id)
        {
            let mut list = v.to_vec();
            list.drain(at * 16..at * 16 + 16);
            found.push((k.to_vec(), list));
        }
        Ok(Scan::Continue)
    })?;
    for (key, list) in found {
        if list.is_empty() {
            w.remove(TITLE_TRIGRAMS, &key)?;
        } else {
            w.put(TITLE_TRIGRAMS, &key, &list)?;
        }
    }
    Ok(())
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
/// `fold` of every recent title, as posting lists of at most [`LIST_IDS`]
/// ids per trigram, and lets go of the titles that then have had every
/// slice. With `None` (a board brought to the index whole, whose records
/// hold no tag), every trigram of every recent title, one entry per
/// posting.
fn fold_titles<W: WriteTxn + ?Sized>(w: &mut W, fold: Option<u64>) -> Result<()> {
    let mut postings: Vec<([u8; 3], Uuid)> = Vec::new();
    let mut done = Vec::new();
    w.scan(TITLE_RECENT, KeyRange::all(), Direction::Forward, &mut |k, v| {
        let id = uuid_suffix(k)?;
        let (tag, title) = recent_entry(v);
        for g in indexed(&String::from_utf8_lossy(title)) {
            if fold.is_none_or(|n| slice_of(&g) == n % SLICES) {
                postings.push((g, id));
            }
        }
        if fold.is_none_or(|n| tag + SLICES <= n + 1) {
            done.push(id);
        }
        Ok(Scan::Continue)
    })?;
    postings.sort_unstable();
    match fold {
        Some(n) => {
            for list in postings.chunk_by(|a, b| a.0 == b.0).flat_map(|l| l.chunks(LIST_IDS)) {
                let key = list_key(&list[0].0, n, list[0].1);
                let mut ids: Vec<u8> = list.iter().flat_map(|(_, id)| *id.as_bytes()).collect();
                // A list already there (the fold count of a board started
                // again) is merged with, not replaced.
                if let Some(kept) = w.get(TITLE_TRIGRAMS, &key)? {
                    let mut all: Vec<&[u8]> = kept.chunks_exact(16).chain(ids.chunks_exact(16)).collect();
                    all.sort_unstable();
                    all.dedup();
                    ids = all.concat();
                }
                w.put(TITLE_TRIGRAMS, &key, &ids)?;
            }
        }
        None => {
            for (g, id) in &postings {
                w.put(TITLE_TRIGRAMS, &Key::new().bytes(g).uuid(*id).build(), &[])?;
            }
        }
    }
    for id in &done {
        w.remove(TITLE_RECENT, id.as_bytes())?;
    }
    w.remove(META, LEGACY_KEY)?;
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

/// The longest posting list worth reading; a trigram with more tasks
/// than this narrows nothing a scan in list order checking titles would
/// not find sooner.
const MAX_CANDIDATES: usize = 20_000;

/// Calls `f` with each id in the postings of trigram `g`, in no
/// particular order.
fn each_posting(r: &dyn ReadTxn, g: &[u8; 3], f: &mut dyn FnMut(Uuid)) -> Result<()> {
    r.scan(TITLE_TRIGRAMS, KeyRange::prefix(g), Direction::Forward, &mut |k, v| {
        if k.len() == LIST_KEY_LEN {
            v.as_chunks::<16>().0.iter().for_each(|b| f(Uuid::from_bytes(*b)));
        } else {
            f(uuid_suffix(k)?);
        }
        Ok(Scan::Continue)
    })
}

/// How many postings trigram `g` has, or `None` when there are more than
/// `limit`. It reads an entry per list (of up to 255 ids), copying none.
fn count(r: &dyn ReadTxn, g: &[u8; 3], limit: usize) -> Result<Option<usize>> {
    let mut n = 0;
    r.scan(TITLE_TRIGRAMS, KeyRange::prefix(g), Direction::Forward, &mut |k, v| {
        n += if k.len() == LIST_KEY_LEN { v.len() / 16 } else { 1 };
        Ok(if n > limit { Scan::Stop } else { Scan::Continue })
    })?;
    Ok((n <= limit).then_some(n))
}

/// How many times longer than the shortest list another list is still
/// read. Checking a candidate's title is a random read of its record;
/// reading an id of a list is a copy of 16 bytes from a page read in
/// order, so reading a list this much longer pays for itself as soon as
/// it rules out a few candidates.
const READ_AHEAD: usize = 32;

/// The candidates for a lower-cased query (a superset of the tasks whose
/// titles contain it): the recent titles that contain it, and the tasks
/// in every posting list of its trigrams that is read.
pub(crate) fn candidates(r: &dyn ReadTxn, q: &str) -> Result<Candidates> {
    let grams = indexed(q);
    if grams.is_empty() {
        return Ok(Candidates::Many);
    }
    // The lists are counted first, each up to `READ_AHEAD` times the
    // shortest counted so far: a longer one would narrow the candidates
    // little for what it costs to read.
    let mut counted: Vec<(usize, &[u8; 3])> = Vec::new();
    let mut limit = MAX_CANDIDATES;
    for g in &grams {
        if let Some(n) = count(r, g, limit)? {
            limit = limit.min(n.saturating_mul(READ_AHEAD));
            counted.push((n, g));
        }
    }
    counted.sort_unstable();
    counted.retain(|(n, _)| *n <= limit);
    let mut counted = counted.into_iter();
    let Some((n, shortest)) = counted.next() else { return Ok(Candidates::Many) };
    let mut found = Vec::with_capacity(n);
    each_posting(r, shortest, &mut |id| found.push(id))?;
    found.sort_unstable();
    for (_, g) in counted {
        if found.is_empty() {
            break;
        }
        let mut seen = vec![false; found.len()];
        each_posting(r, g, &mut |id| {
            if let Ok(i) = found.binary_search(&id) {
                seen[i] = true;
            }
        })?;
        let mut seen = seen.into_iter();
        found.retain(|_| seen.next().unwrap_or(false));
    }
    let mut out = recent_matches(r, q)?;
    out.extend(found);
    Ok(Candidates::Few(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    use crate::storage::overlay::Overlay;

    /// A store with nothing in it, under an overlay that holds the writes.
    struct Empty;

    impl ReadTxn for Empty {
        fn get(&self, _: crate::storage::tables::Table, _: &[u8]) -> Result<Option<Vec<u8>>> {
            Ok(None)
        }
        fn scan(
            &self,
            _: crate::storage::tables::Table,
            _: KeyRange,
            _: Direction,
            _: &mut crate::storage::Visitor<'_>,
        ) -> Result<()> {
            Ok(())
        }
    }

    fn task(title: &str) -> TaskRecord {
        serde_json::from_value(serde_json::json!({
            "id": Uuid::now_v7(), "project_id": Uuid::nil(), "number": 1, "title": title,
            "description": null, "kind": "task", "status": "todo", "priority": "medium",
            "label_ids": [], "assignee_id": null, "reviewer_id": null, "parent_id": null,
            "watcher_ids": [], "position": 1.0, "created_by": Uuid::nil(),
            "created_at": "2026-11-26T00:00:00Z", "updated_at": "2026-11-26T00:00:00Z",
        }))
        .unwrap()
    }

    /// Every posting the index holds, as (trigram, task), counting
    /// duplicates.
    fn stored(w: &Overlay<'_>) -> Vec<([u8; 3], Uuid)> {
        let mut out = Vec::new();
        w.scan(TITLE_TRIGRAMS, KeyRange::all(), Direction::Forward, &mut |k, v| {
            let g: [u8; 3] = k[..3].try_into().unwrap();
            if k.len() == LIST_KEY_LEN {
                assert!(!v.is_empty(), "an empty posting list is deleted");
                out.extend(v.chunks_exact(16).map(|b| (g, Uuid::from_slice(b).unwrap())));
            } else {
                out.push((g, uuid_suffix(k)?));
            }
            Ok(Scan::Continue)
        })
        .unwrap();
        out
    }

    /// Written, renamed and deleted at every stage of the folds, by
    /// records that know their tag and records that do not: the index
    /// holds exactly the postings of the live titles' folded slices,
    /// each once, and search finds exactly the titles with the query.
    #[test]
    fn the_index_holds_exactly_the_folded_postings_of_live_titles() {
        let base = Empty;
        let mut w = Overlay::new(&base);
        let mut live: BTreeMap<Uuid, TaskRecord> = BTreeMap::new();
        let put = |w: &mut Overlay<'_>,
                   live: &mut BTreeMap<Uuid, TaskRecord>,
                   old: Option<TaskRecord>,
                   mut t: TaskRecord| {
            if let Some(tag) = index_title(w, old.as_ref(), Some(&t)).unwrap() {
                t.title_fold = Some(tag);
            }
            live.insert(t.id, t);
        };
        let total = (RECENT_MAX + 3 * STEP) as usize;
        for i in 0..total {
            put(
                &mut w,
                &mut live,
                None,
                task(&format!("Polish quartz {i}{}", if i % 7 == 0 { " opal" } else { "" })),
            );
            if i % 97 == 50 {
                // Renamed: one knowing its tag, one whose record lost it.
                let ids: Vec<Uuid> = live.keys().copied().collect();
                let old = live[&ids[(i * 31) % ids.len()]].clone();
                let new = TaskRecord { title: format!("Cut zircon {i} renamed"), ..old.clone() };
                put(&mut w, &mut live, Some(old), new);
                let mut old = live[&ids[(i * 17) % ids.len()]].clone();
                old.title_fold = None;
                let new = TaskRecord { title: format!("Set opal {i}"), ..old.clone() };
                put(&mut w, &mut live, Some(old), new);
                // Deleted.
                let gone = live.remove(&ids[(i * 13) % ids.len()]).unwrap();
                index_title(&mut w, Some(&gone), None).unwrap();
            }
        }
        let folded = w.record::<FoldState>(META, FOLD_KEY).unwrap().unwrap_or_default().folded;
        assert!(folded > SLICES, "a whole round of folds and more ({folded})");
        let mut want = BTreeSet::new();
        for t in live.values() {
            let tag = t.title_fold.unwrap();
            for g in indexed(&t.title.to_lowercase()) {
                if fold_of(tag, &g) < folded {
                    want.insert((g, t.id));
                }
            }
        }
        let got = stored(&w);
        assert_eq!(got.len(), want.len(), "no posting twice, none left behind");
        assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
        for q in ["quartz 12", "opal", "zircon 50", "renamed", "z 1"] {
            let found: BTreeSet<Uuid> = match candidates(&w, q).unwrap() {
                Candidates::Few(ids) => ids
                    .into_iter()
                    .filter(|id| live.get(id).is_some_and(|t| t.title.to_lowercase().contains(q)))
                    .collect(),
                Candidates::Many => {
                    live.values().filter(|t| t.title.to_lowercase().contains(q)).map(|t| t.id).collect()
                }
            };
            let want: BTreeSet<Uuid> =
                live.values().filter(|t| t.title.to_lowercase().contains(q)).map(|t| t.id).collect();
            assert_eq!(found, want, "{q}");
        }
    }

    /// Search narrows by every list worth reading: a query whose
    /// trigrams each have hundreds of tasks, and together a few, gets
    /// exactly those few as candidates, the other trigram's list read
    /// though it is three times longer than the shortest.
    #[test]
    fn candidates_are_the_tasks_in_every_list_read() {
        let base = Empty;
        let mut w = Overlay::new(&base);
        let mut both = BTreeSet::new();
        let mut put = |title: String| {
            let t = task(&title);
            index_title(&mut w, None, Some(&t)).unwrap();
            t.id
        };
        for i in 0..300 {
            put(format!("Amber {i}"));
        }
        for i in 0..1000 {
            put(format!("Cobalt {i}"));
        }
        for i in 0..10 {
            both.insert(put(format!("Amber cobalt {i}")));
        }
        // Enough titles after them that theirs are folded whole.
        for i in 0..RECENT_MAX + STEP {
            put(format!("Plain {i}"));
        }
        match candidates(&w, "amber cobalt").unwrap() {
            Candidates::Few(ids) => assert_eq!(ids.into_iter().collect::<BTreeSet<_>>(), both),
            Candidates::Many => panic!("the index narrows a query of two words of a few hundred tasks each"),
        }
    }

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
