//! Paging inside an index scan, for every list kept in key order: the
//! scan starts right after the cursor's key, skips `offset` matches and
//! stops once the page is full, so a page reads what it returns (plus
//! the entries a filter passes over), however deep it is.

use std::ops::Bound;

use crate::api::{CursorKind, Page, Paged, encode_cursor};
use crate::error::Result;
use crate::storage::{Direction, KeyRange, ReadTxn, Scan, Table};

/// Makes an index entry (key after the prefix, value) into a list item,
/// or `None` to pass over it.
pub(crate) type ItemOf<'a, T> = dyn FnMut(&[u8], &[u8]) -> Result<Option<T>> + 'a;

/// A page of the entries of `table` under `prefix`, in key order. `item`
/// makes an entry (key after the prefix, value) into an item, or `None`
/// to pass over it. The cursor holds the key (after the prefix) of the
/// page's last item.
pub(crate) fn index_page<T>(
    r: &dyn ReadTxn,
    kind: CursorKind,
    table: Table,
    prefix: &[u8],
    page: &Page,
    item: &mut ItemOf<'_, T>,
) -> Result<Paged<T>> {
    page.check()?;
    let mut range = KeyRange::prefix(prefix);
    if let Some(after) = page.after(kind)? {
        range.start = Bound::Excluded([prefix, &after].concat());
    }
    let mut skip = page.offset.unwrap_or(0) as usize;
    let limit = page.limit.map_or(usize::MAX, |l| l as usize);
    let mut items = Vec::new();
    let mut last = Vec::new();
    r.scan(table, range, Direction::Forward, &mut |k, v| {
        let suffix = &k[prefix.len()..];
        let Some(t) = item(suffix, v)? else { return Ok(Scan::Continue) };
        if skip > 0 {
            skip -= 1;
            return Ok(Scan::Continue);
        }
        items.push(t);
        if items.len() >= limit {
            last = suffix.to_vec();
            return Ok(Scan::Stop);
        }
        Ok(Scan::Continue)
    })?;
    let next = (items.len() == limit).then(|| encode_cursor(kind, &last));
    Ok(Paged { items, next })
}
