//! Title search: a trigram index kept in the store.
//!
//! Every distinct three-byte window of a task's lower-cased title (UTF-8)
//! is an entry `trigram task_id` of [`TITLE_TRIGRAMS`], written in the
//! task's own transaction. A title containing the query contains every
//! trigram of the query, so the tasks of the query's rarest trigram that
//! also hold all its other trigrams are the candidates; their titles are
//! then checked, so the answer is exact.

use uuid::Uuid;

use crate::error::Result;
use crate::storage::codec::{Key, uuid_suffix};
use crate::storage::tables::TITLE_TRIGRAMS;
use crate::storage::{Direction, KeyRange, ReadTxn, Scan};

/// The distinct trigrams of a title, lower-cased.
pub(crate) fn trigrams(title: &str) -> Vec<[u8; 3]> {
    let lower = title.to_lowercase();
    let mut out: Vec<[u8; 3]> = lower.as_bytes().windows(3).map(|w| [w[0], w[1], w[2]]).collect();
    out.sort_unstable();
    out.dedup();
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
    let grams = trigrams(q);
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
    let mut out = Vec::with_capacity(ids.len());
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
    }
}
